#!/usr/bin/env bash
# install-bench-deps.sh - the Debian packages of the CPU comparison
# (bench/compare-cpu.sh): OpenCV for Python, libvips' command-line tools and
# ImageMagick. As root it runs apt-get; otherwise it prints the line to run.
set -euo pipefail

missing=()
command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
command -v mogrify >/dev/null 2>&1 || missing+=(imagemagick) # not `convert`: some images ship a stand-in
/usr/bin/python3 -c 'import cv2, numpy' >/dev/null 2>&1 || missing+=(python3-opencv python3-numpy)

. "$(dirname "$0")/apt-install.sh"
apt_install install-bench-deps 1 ${missing[@]+"${missing[@]}"}
