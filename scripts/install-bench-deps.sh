#!/usr/bin/env bash
# install-bench-deps.sh - the Debian packages of the CPU comparison
# (bench/compare-cpu.sh): OpenCV for Python, libvips' command-line tools and
# ImageMagick. As root it runs apt-get; otherwise it prints the line to run.
set -euo pipefail

missing=()
command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
command -v convert >/dev/null 2>&1 || missing+=(imagemagick)
/usr/bin/python3 -c 'import cv2, numpy' >/dev/null 2>&1 || missing+=(python3-opencv python3-numpy)

if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "install-bench-deps: missing ${missing[*]} and no apt-get here" >&2
  exit 1
fi
if [ "$(id -u)" -ne 0 ]; then
  echo "install-bench-deps: run as root: apt-get install -y ${missing[*]}" >&2
  exit 1
fi
echo "install-bench-deps: apt-get install -y ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq || true
apt-get install -y -qq --no-install-recommends "${missing[@]}"
