#!/usr/bin/env bash
# install.sh BUILD_DIR SOURCE_DIR [SANITIZE] - installs a build into a temporary
# prefix with `cmake --install` and checks what a user gets there:
#  - the files (programs, libimgconv.so.N with its soname, libimgconv.a, headers,
#    imgconv.pc, the CMake package, man page, bash completion);
#  - the shared library exports exactly the functions of the public headers;
#  - consumer.c builds and runs with pkg-config (shared, and static through
#    Libs.private), with find_package(imgconv) (imgconv::imgconv and
#    imgconv::imgconv_static), and libimgconv.a links into a shared library;
#  - the man page lists every option of --help and renders without warnings;
#  - the completion completes options, kernels and backends;
#  - the uninstall script removes every installed file.
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
sanitize=${3:-OFF}
here=$src/tests/install
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
fail() { echo "install.sh: FAIL: $*" >&2; exit 1; }

flags=()
if [ "$sanitize" = ON ]; then
    flags=(-fsanitize=address,undefined)
    export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
fi

# A private copy of the build's manifest: `make install` by hand must not race us.
cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
cp "$build/install_manifest.txt" "$tmp/manifest.txt"

libdir=$(dirname "$(find "$prefix" -name libimgconv.a)")
for f in bin/imgconv bin/imgconv-bench include/imgconv.h include/imgconv_course.h \
         include/imgconv_gpu_codec.h share/man/man1/imgconv.1 \
         share/bash-completion/completions/imgconv; do
    [ -e "$prefix/$f" ] || fail "$f not installed"
done
for f in libimgconv.a libimgconv.so pkgconfig/imgconv.pc cmake/imgconv/imgconv-config.cmake \
         cmake/imgconv/imgconv-config-version.cmake; do
    [ -e "$libdir/$f" ] || fail "lib/$f not installed"
done
soname=$(readelf -d "$libdir/libimgconv.so" | sed -n 's/.*SONAME.*\[\(.*\)\]/\1/p')
[[ $soname =~ ^libimgconv\.so\.[0-9]+$ ]] || fail "soname '$soname'"
[ -e "$libdir/$soname" ] || fail "$soname missing"
"$prefix/bin/imgconv" --version >/dev/null || fail "installed imgconv does not run"

# Exports: exactly the non-inline functions declared in the public headers.
cat "$prefix"/include/imgconv.h "$prefix"/include/imgconv_course.h \
    "$prefix"/include/imgconv_gpu_codec.h | grep -E '^[a-z].*[ *]ic_[a-z0-9_]+\(' | grep -v '^static' |
    grep -oE 'ic_[a-z0-9_]+\(' | tr -d '(' | sort -u >"$tmp/api.txt"
nm -D --defined-only "$libdir/libimgconv.so" | awk '$2 ~ /^[TDBRVW]$/ {print $3}' |
    sed 's/@.*//' | sort -u >"$tmp/exported.txt"
if ! diff "$tmp/api.txt" "$tmp/exported.txt" >"$tmp/sym.diff"; then
    cat "$tmp/sym.diff" >&2
    fail "exported symbols differ from the headers (< header only, > exported only)"
fi
[ "$(wc -l <"$tmp/api.txt")" -gt 40 ] || fail "header parsing found too few functions"

# pkg-config: shared, then the static archive with Libs.private.
export PKG_CONFIG_PATH=$libdir/pkgconfig
pc_cflags=$(pkg-config --cflags imgconv)
pc_libs=$(pkg-config --libs imgconv)
pc_static=$(pkg-config --static --libs-only-other --libs-only-L imgconv)
pc_private=$(pkg-config --static --libs imgconv | tr ' ' '\n' | grep -v '^-limgconv$' | tr '\n' ' ')
cc ${flags[@]+"${flags[@]}"} $pc_cflags "$here/consumer.c" -o "$tmp/pc_shared" $pc_libs || fail "pkg-config shared link"
LD_LIBRARY_PATH=$libdir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} "$tmp/pc_shared" | grep -q '^ok ' || fail "pkg-config shared run"
readelf -d "$tmp/pc_shared" | grep "NEEDED.*$soname" >/dev/null || fail "pc_shared does not need $soname"
# shellcheck disable=SC2086
cc ${flags[@]+"${flags[@]}"} $pc_cflags "$here/consumer.c" -o "$tmp/pc_static" \
    "$libdir/libimgconv.a" $pc_static $pc_private || fail "pkg-config static link (Libs.private: $pc_private)"
"$tmp/pc_static" | grep -q '^ok ' || fail "pkg-config static run"
if readelf -d "$tmp/pc_static" | grep -q 'NEEDED.*libimgconv'; then fail "pc_static linked the shared library"; fi

# libimgconv.a inside a user's shared library (needs PIC objects).
cc ${flags[@]+"${flags[@]}"} -shared -o "$tmp/libwrap.so" -Wl,--whole-archive "$libdir/libimgconv.a" \
    -Wl,--no-whole-archive $pc_private || fail "libimgconv.a does not link into a shared library"

# find_package(imgconv).
cmake -S "$here" -B "$tmp/cm" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS="${flags[*]:-}" >"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package configure"; }
cmake --build "$tmp/cm" >>"$tmp/cm.log" 2>&1 || { cat "$tmp/cm.log"; fail "find_package build"; }
"$tmp/cm/consumer_shared" | grep -q '^ok ' || fail "imgconv::imgconv run"
"$tmp/cm/consumer_static" | grep -q '^ok ' || fail "imgconv::imgconv_static run"

# The man page: every long option of --help appears, and groff has no warning.
man1=$prefix/share/man/man1/imgconv.1
"$prefix/bin/imgconv" --help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u >"$tmp/help-opts.txt"
sed 's/\\-/-/g' "$man1" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u >"$tmp/man-opts.txt"
missing=$(comm -23 "$tmp/help-opts.txt" "$tmp/man-opts.txt")
[ -z "$missing" ] || fail "man page lacks: $missing"
[ "$(wc -l <"$tmp/help-opts.txt")" -gt 30 ] || fail "too few options in --help"
if command -v groff >/dev/null; then
    warn=$(groff -man -Tutf8 -ww -z "$man1" 2>&1)
    [ -z "$warn" ] || fail "groff: $warn"
fi

# Bash completion, driven as bash would.
complete_line() {
    PATH=$prefix/bin:$PATH bash -c '
        source "$1"; shift
        COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); _imgconv
        printf "%s\n" "${COMPREPLY[@]}"' _ "$prefix/share/bash-completion/completions/imgconv" "$@"
}
complete_line imgconv --kern | grep -x -- --kernel >/dev/null || fail "completion of --kern"
complete_line imgconv -k gau | grep -x -- gaussian >/dev/null || fail "completion of kernel names"
complete_line imgconv --backend s | grep -x -- seq >/dev/null || fail "completion of backends"
complete_line imgconv --border mir | grep -x -- mirror >/dev/null || fail "completion of border modes"

# Uninstall removes every file it installed.
cmake -DMANIFEST="$tmp/manifest.txt" -P "$src/cmake/uninstall.cmake" >/dev/null || fail "uninstall"
left=$(find "$prefix" -type f -o -type l)
[ -z "$left" ] || fail "left after uninstall: $left"
echo "install.sh: ok ($(wc -l <"$tmp/api.txt") exported functions, soname $soname)"
