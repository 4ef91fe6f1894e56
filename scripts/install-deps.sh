#!/usr/bin/env bash
# Installs the Debian packages imgconv needs to build and test, when missing
# (with the argument `fuzz`, also clang and libFuzzer for tests/fuzz).
# As root it runs apt-get; otherwise it prints the apt-get line to run.
# On a machine without apt (the GPU machine) it checks the tools and carries on.
set -euo pipefail

need_cmds=(cmake make cc)
pkgs_for() {
  case "$1" in
    cmake) echo cmake ;;
    make) echo make ;;
    cc) echo gcc libc6-dev ;;
  esac
}
missing=()
for c in "${need_cmds[@]}"; do
  command -v "$c" >/dev/null 2>&1 || missing+=($(pkgs_for "$c"))
done
# Headers: optional formats, but the full build wants them.
[ -e /usr/include/png.h ] || missing+=(libpng-dev)
# libdeflate writes PNG files (src/io/png_deflate.c); without it libpng's zlib does, slower.
[ -e /usr/include/libdeflate.h ] || missing+=(libdeflate-dev)
[ -e /usr/include/jpeglib.h ] || ls /usr/include/*/jpeglib.h >/dev/null 2>&1 || missing+=(libjpeg62-turbo-dev)
[ -e /usr/include/tiffio.h ] || ls /usr/include/*/tiffio.h >/dev/null 2>&1 || missing+=(libtiff-dev)
[ -e /usr/include/webp/encode.h ] || missing+=(libwebp-dev)
command -v pkg-config >/dev/null 2>&1 || missing+=(pkg-config)
# `imgconv serve` is built over libevent's evhttp; its tests drive it with curl.
[ -e /usr/include/event2/http.h ] || missing+=(libevent-dev)
command -v curl >/dev/null 2>&1 || missing+=(curl)
# Large full-rank kernels on the CPU go through KissFFT (BSD-3-Clause).
[ -e /usr/include/kissfft/kiss_fft.h ] || [ -e /usr/include/kiss_fft.h ] || missing+=(libkissfft-dev)
# tests/cli/jpeg_threads.sh checks restart markers with libjpeg-turbo's djpeg (PIL else).
command -v djpeg >/dev/null 2>&1 || missing+=(libjpeg-turbo-progs)
# tests/style/format.sh checks the sources against .clang-format with version 14.
command -v clang-format-14 >/dev/null 2>&1 || missing+=(clang-format-14)
# `install-deps.sh fuzz` (make fuzz): clang and its libFuzzer runtime too.
if [ "${1:-}" = fuzz ]; then
  command -v clang >/dev/null 2>&1 || missing+=(clang)
  ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1 ||
    missing+=(libclang-rt-14-dev)
fi
# The Python package (python/) and its tests: the Debian interpreter's modules.
# tests/python/run.sh uses the first python3 that has them (IC_PYTHON overrides).
py_mod_pkgs=("numpy python3-numpy" "scipy python3-scipy" "pytest python3-pytest"
             "setuptools python3-setuptools" "distributed python3-distributed"
             "skimage python3-skimage" "ensurepip python3-venv" "pip python3-pip"
             "PIL python3-pil" "build python3-build")
if [ -x /usr/bin/python3 ] || command -v apt-get >/dev/null 2>&1; then
  ls /usr/include/python3*/Python.h >/dev/null 2>&1 || missing+=(python3-dev)
  for mp in "${py_mod_pkgs[@]}"; do
    read -r mod pkg <<<"$mp"
    /usr/bin/python3 -c "import $mod" >/dev/null 2>&1 || missing+=("$pkg")
  done
fi

. "$(dirname "$0")/apt-install.sh"
# Missing build packages are not fatal without apt or root: the build says what lacks.
apt_install install-deps 0 ${missing[@]+"${missing[@]}"}
