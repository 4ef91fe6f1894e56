#!/usr/bin/env bash
# install-bench-deps.sh - the Debian packages of the CPU comparisons
# (bench/run.sh cpu, batch and png): OpenCV,
# numpy and scikit-image for Python, libvips' command-line tools (`vips`) and
# ImageMagick 6 (`mogrify`). As root it runs apt-get; otherwise it prints the line to run.
set -euo pipefail

missing=()
command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
command -v mogrify >/dev/null 2>&1 || missing+=(imagemagick) # not `convert`: some images ship a stand-in
/usr/bin/python3 -c 'import cv2, numpy' >/dev/null 2>&1 || missing+=(python3-opencv python3-numpy)
# bench/make_photos.py (bench/run.sh batch with photo sets): scikit-image's photographs
/usr/bin/python3 -c 'import skimage' >/dev/null 2>&1 || missing+=(python3-skimage)

. "$(dirname "$0")/apt-install.sh"
apt_install install-bench-deps 1 ${missing[@]+"${missing[@]}"}
