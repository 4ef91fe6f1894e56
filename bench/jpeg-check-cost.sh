#!/usr/bin/env bash
# jpeg-check-cost.sh - what the GPU decode path's entropy check costs (issue
# 11): photograph-like JPEGs (bench/make_photos.py: COUNT_HD 1920x1080 and
# COUNT_BIG 6000x4000, quality 92, 4:2:0 as the CPU writer stores them)
# through ic_jpeg_check (src/io/jpeg.c) against a full libjpeg-turbo decode
# (ic_image_decode) and against jpeg_read_coefficients, wall and thread CPU
# time, best of 7 runs each, then the whole set through the threaded batch
# (src/io/jpeg_check.c). The measuring program is test_jpeg_check's
# IC_JPEG_CHECK_BENCH mode (the check is internal: tests may call it, the
# bench program may not).
#
# usage: bench/jpeg-check-cost.sh BUILD_DIR [RESULT.md]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
BUILD=${1:?usage: $0 BUILD_DIR [RESULT.md]}
RESULT=${2:-$HERE/results/jpeg-check-cost-$(date -u +%Y%m%dT%H%M%SZ).md}
COUNT_HD=${COUNT_HD:-6}
COUNT_BIG=${COUNT_BIG:-3}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/jpeg-check-cost.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

PY=python3
python3 -c 'import skimage' 2>/dev/null || { [ -x /usr/bin/python3 ] && PY=/usr/bin/python3; }
mkdir -p "$WORK/jpg"
"$PY" "$HERE/make_photos.py" "$WORK/hd" "$COUNT_HD" 1920 1080 7 2>/dev/null
"$PY" "$HERE/make_photos.py" "$WORK/big" "$COUNT_BIG" 6000 4000 8 2>/dev/null
for f in "$WORK"/hd/*.ppm "$WORK"/big/*.ppm; do
    b=$(basename "$(dirname "$f")")_$(basename "$f" .ppm)
    "$BUILD/imgconv" --codec cpu --quality 92 --kernel 1 "$f" "$WORK/jpg/$b.jpg"
done
{
    echo "# Entropy check of the GPU decode path against a full decode"
    echo
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(nproc) cores," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg), libjpeg-turbo" \
        "$(dpkg-query -W -f='${Version}' libjpeg62-turbo 2>/dev/null || echo '?')," \
        "commit $(git -C "$HERE" rev-parse --short HEAD 2>/dev/null || echo '?')."
    echo "Inputs: bench/make_photos.py photographs, $COUNT_HD at 1920x1080 and $COUNT_BIG at" \
        "6000x4000, JPEG quality 92, 4:2:0. Columns: best of 7 runs, wall and this thread's"
    echo "CPU time (ms); ratios: check/decode wall, check/decode CPU, read_coefficients/decode CPU."
    echo
    echo '```'
    IC_JPEG_CHECK_BENCH="$WORK/jpg" "$BUILD/tests/test_jpeg_check"
    echo '```'
} >"$RESULT"
cat "$RESULT"
