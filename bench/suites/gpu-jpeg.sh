# gpu-jpeg.sh - one large JPEG through the whole process: a
# 6000x4000 photograph-like JPEG (bench/make_photos.py, else a chart) filtered
# with gaussian:9 into a JPEG by `imgconv --backend cuda` (nvJPEG decode and
# encode on the GPU), `--backend cuda --codec cpu` (libjpeg-turbo on the host,
# the filter on the GPU) and `--backend cpu`; wall time of the whole process,
# median of RUNS (default 5), and one `--time` breakdown of each; then the
# per-case decode differences of the build's tests/test_gpu_jpeg (GPU codec
# against libjpeg-turbo), when the build has it.
#
# usage: bench/run.sh gpu-jpeg [PATH/TO/imgconv]   (--quick: 1 run, 1200x800)
set -euo pipefail
find_imgconv "${1:-}"
quick && RUNS=${RUNS:-1} W=${W:-1200} H=${H:-800}
RUNS=${RUNS:-5}
W=${W:-6000}
H=${H:-4000}
make_work gpu-jpeg
pick_py
SOURCE="a photograph from skimage.data (bench/make_photos.py)"
if "$PY" "$HERE/make_photos.py" "$WORK" 1 "$W" "$H" 2>/dev/null; then
    "$IMGCONV" --codec cpu --quality 92 --kernel 1 "$WORK/photo000.ppm" "$WORK/in.jpg"
else
    SOURCE="a generated chart (scikit-image missing)"
    "$IMGCONV" --chart "${W}x${H}" "$WORK/in.jpg"
fi

ROWS=()
for cfg in "cuda" "cuda --codec cpu" "cpu"; do
    read -r -a args <<<"--backend $cfg"
    times=()
    for _ in $(seq 1 "$RUNS"); do
        t0=$(date +%s.%N)
        "$IMGCONV" "${args[@]}" --overwrite -k gaussian:9 "$WORK/in.jpg" "$WORK/out.jpg" 2>"$WORK/err" || break
        t1=$(date +%s.%N)
        times+=("$(python3 -c "print($t1 - $t0)")")
    done
    if [ ${#times[@]} -lt "$RUNS" ]; then
        ROWS+=("| \`imgconv --backend $cfg\` | failed: $(head -1 "$WORK/err") | |")
        continue
    fi
    med=$(printf '%s\n' "${times[@]}" | median)
    ROWS+=("| \`imgconv --backend $cfg\` | $(printf '%.3f' "$med") | $(printf '%s ' "${times[@]}" | xargs printf '%.3f ') |")
    "$IMGCONV" "${args[@]}" --overwrite -k gaussian:9 --time "$WORK/in.jpg" "$WORK/out.jpg" >"$WORK/time-${cfg// /_}.txt"
done

{
    echo "# One ${W}x${H} JPEG -> JPEG, gaussian:9, whole process ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(machine)."
    echo "Input: $SOURCE, quality 92, $(wc -c <"$WORK/in.jpg") bytes. Median of $RUNS runs;"
    echo "produced by bench/run.sh gpu-jpeg."
    echo
    echo "| command | median s | runs (s) |"
    echo "|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    for f in "$WORK"/time-*.txt; do
        echo
        echo "\`--time\` of $(basename "$f" .txt | sed 's/^time-//; s/_/ /g'):"
        echo
        echo '```'
        cat "$f"
        echo '```'
    done
    tests=$(dirname "$IMGCONV")/tests/test_gpu_jpeg
    if [ -x "$tests" ]; then
        echo
        echo "## tests/gpu/test_gpu_jpeg: decode differences against libjpeg-turbo"
        echo
        echo '```'
        "$tests" 2>&1 || echo "(exit $?)"
        echo '```'
    fi
} >"$RESULT"
cat "$RESULT"
