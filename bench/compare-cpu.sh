#!/usr/bin/env bash
# compare-cpu.sh - measures imgconv's `cpu` backend against OpenCV filter2D (in
# memory, same thread count), `vips conv` and ImageMagick `convert -morphology
# Convolve` (whole process on a PPM), and its own 1-vs-N-thread scaling, in one
# run on this machine (issue 5). Writes bench/results/cpu-compare-DATE.md.
#
#   bench/compare-cpu.sh [BUILD_DIR]      (default: build)
#
# Installs nothing: the peers come from scripts/install-bench-deps.sh
# (python3-opencv, libvips-tools, imagemagick). Builds imgconv in BUILD_DIR
# (Release) when its binaries are missing.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=${1:-$root/build}

missing=()
command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
command -v convert >/dev/null 2>&1 || missing+=(imagemagick)
py=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import cv2, numpy' >/dev/null 2>&1; then
    py=$cand
    break
  fi
done
[ -n "$py" ] || missing+=(python3-opencv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "compare-cpu: missing ${missing[*]}; run scripts/install-bench-deps.sh (as root)" >&2
  exit 1
fi

if [ ! -x "$build/imgconv" ] || [ ! -x "$build/imgconv-bench" ]; then
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build "$build" -j "$(nproc)" >/dev/null
fi

exec "$py" "$here/compare_cpu.py" "$build/imgconv" "$build/imgconv-bench" "$root/bench/results"
