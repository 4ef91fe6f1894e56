# jpeg-check.sh - what the GPU decode path's entropy check costs:
# photograph-like JPEGs (bench/make_photos.py: COUNT_HD 1920x1080 and
# COUNT_BIG 6000x4000, quality 92, 4:2:0 as the CPU writer stores them)
# through ic_jpeg_check (src/io/jpeg.c) against a full libjpeg-turbo decode
# (ic_image_decode) and against jpeg_read_coefficients, wall and thread CPU
# time, best of 7 runs each, then the whole set through the threaded batch
# (src/io/jpeg_check.c). The measuring program is test_jpeg_check's
# IC_JPEG_CHECK_BENCH mode (the check is internal: tests may call it, the
# bench program may not).
#
# usage: bench/run.sh jpeg-check [BUILD_DIR]   (--quick: 1 HD and 1 big photo)
set -euo pipefail
find_imgconv "${1:+$1/imgconv}"
BUILD=$(dirname "$IMGCONV")
quick && COUNT_HD=${COUNT_HD:-1} COUNT_BIG=${COUNT_BIG:-1}
COUNT_HD=${COUNT_HD:-6}
COUNT_BIG=${COUNT_BIG:-3}
make_work jpeg-check
pick_py
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
    echo "$(date -u +%Y-%m-%dT%H:%M:%SZ), $(uname -n), $(machine)," \
        "load average $(cut -d' ' -f1-3 /proc/loadavg), libjpeg-turbo" \
        "$(dpkg-query -W -f='${Version}' libjpeg62-turbo 2>/dev/null || echo '?')," \
        "commit $COMMIT."
    echo "Inputs: bench/make_photos.py photographs, $COUNT_HD at 1920x1080 and $COUNT_BIG at" \
        "6000x4000, JPEG quality 92, 4:2:0. Columns: best of 7 runs, wall and this thread's"
    echo "CPU time (ms); ratios: check/decode wall, check/decode CPU, read_coefficients/decode CPU."
    echo
    echo '```'
    IC_JPEG_CHECK_BENCH="$WORK/jpg" "$BUILD/tests/test_jpeg_check"
    echo '```'
} >"$RESULT"
cat "$RESULT"
