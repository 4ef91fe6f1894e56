#!/usr/bin/env bash
# pack-codecs.sh - packs this Debian machine's libdeflate, libtiff, libwebp and
# KissFFT (headers, shared libraries and the libraries they load) into a
# relocatable prefix, codecs-bundle/, so that the GPU machine, which has none
# of their headers and no network, builds imgconv with the same coders and
# the same CPU FFT as a user's install. CMake finds it through CMAKE_PREFIX_PATH; the build tree's RUNPATH
# points at its lib/.
#
# usage: scripts/pack-codecs.sh [OUTDIR]     (default: ./codecs-bundle, git-ignored)
# there:  cmake -DCMAKE_PREFIX_PATH=$PWD/codecs-bundle ...   (scripts/gpu-check.sh
#         does this by itself when the folder is present)
# Requires on the target: x86-64 Linux with glibc >= Debian 12's (2.36).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${1:-$HERE/../codecs-bundle}
ARCH=x86_64-linux-gnu
GLIBC_RE='^(libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|ld-linux|libresolv\.so|libstdc\+\+\.so|libgcc_s\.so)'
die() { echo "pack-codecs: $*" >&2; exit 1; }

pkgs="libdeflate-dev libtiff-dev libwebp-dev libkissfft-dev"
for p in $pkgs; do dpkg -s "$p" >/dev/null 2>&1 || die "$p is not installed (scripts/install-deps.sh installs it)"; done

rm -rf "$OUT"
mkdir -p "$OUT/include" "$OUT/lib/pkgconfig"
# Headers, the development symlinks and pkg-config files of the -dev packages.
for f in $(dpkg -L $pkgs); do
  case "$f" in
    /usr/include/*.h)
      rel=${f#/usr/include/}; rel=${rel#$ARCH/}
      mkdir -p "$OUT/include/$(dirname "$rel")"; cp "$f" "$OUT/include/$rel" ;;
    /usr/lib/$ARCH/pkgconfig/*.pc)
      # Relocatable: the prefix is wherever the bundle lies.
      sed -e 's|^prefix=.*|prefix=${pcfiledir}/../..|' \
          -e 's|^libdir=.*|libdir=${prefix}/lib|' \
          -e 's|^includedir=.*|includedir=${prefix}/include|' "$f" > "$OUT/lib/pkgconfig/$(basename "$f")" ;;
    /usr/lib/$ARCH/*.so)
      ln -sf "$(basename "$(readlink -f "$f")")" "$OUT/lib/$(basename "$f")" ;;
  esac
done
# The shared objects, with every library they load except the glibc family.
todo="libdeflate.so.0 libtiff.so.6 libwebp.so.7 libwebpmux.so.3 libwebpdemux.so.2 libkissfft-float.so.131"
seen=""
while [ -n "$todo" ]; do
  set -- $todo; so=$1; shift; todo="$*"
  case " $seen " in *" $so "*) continue ;; esac
  seen="$seen $so"
  src=$(readlink -f "/usr/lib/$ARCH/$so" 2>/dev/null || readlink -f "/lib/$ARCH/$so")
  [ -f "$src" ] || die "cannot find $so"
  cp "$src" "$OUT/lib/"
  [ "$(basename "$src")" = "$so" ] || ln -sf "$(basename "$src")" "$OUT/lib/$so"
  for dep in $(readelf -d "$src" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'); do
    echo "$dep" | grep -Eq "$GLIBC_RE" || todo="$todo $dep"
  done
done
strip --strip-unneeded "$OUT"/lib/*.so.* 2>/dev/null || true
{
  echo "codecs-bundle from $(. /etc/os-release; echo "$PRETTY_NAME") on $(date -u +%Y-%m-%dT%H:%MZ)"
  dpkg-query -W -f '${Package} ${Version}\n' $pkgs libdeflate0 libtiff6 libwebp7 libkissfft-float131
  echo "libraries:$seen"
  du -sh "$OUT" | cut -f1
} > "$OUT/MANIFEST"
cat "$OUT/MANIFEST"
