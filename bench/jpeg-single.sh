#!/usr/bin/env bash
# jpeg-single.sh - one large JPEG through the whole process (issue 11): a
# 6000x4000 photograph-like JPEG (bench/make_photos.py, else a chart) filtered
# with gaussian:9 into a JPEG by `imgconv --backend cuda` (nvJPEG decode and
# encode on the GPU), `--backend cuda --codec cpu` (libjpeg-turbo on the host,
# the filter on the GPU) and `--backend cpu`; wall time of the whole process,
# median of RUNS (default 5), and one `--time` breakdown of each.
#
# usage: bench/jpeg-single.sh PATH/TO/imgconv [RESULT.md]
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
IMGCONV=${1:?usage: $0 PATH/TO/imgconv [RESULT.md]}
RESULT=${2:-$HERE/results/jpeg-single-$(date +%Y-%m-%d).md}
RUNS=${RUNS:-5}
W=${W:-6000}
H=${H:-4000}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/jpeg-single.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

PY=python3
python3 -c 'import skimage' 2>/dev/null || { [ -x /usr/bin/python3 ] && PY=/usr/bin/python3; }
SOURCE="a photograph from skimage.data (bench/make_photos.py)"
if "$PY" "$HERE/make_photos.py" "$WORK" 1 "$W" "$H" 2>/dev/null; then
    "$IMGCONV" --codec cpu --quality 92 --kernel 1 "$WORK/photo000.ppm" "$WORK/in.jpg"
else
    SOURCE="a generated chart (scikit-image missing)"
    "$IMGCONV" --chart "${W}x${H}" "$WORK/in.jpg"
fi

median() { sort -n | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
ROWS=()
for cfg in "cuda" "cuda --codec cpu" "cpu"; do
    read -r -a args <<<"--backend $cfg"
    times=()
    for _ in $(seq 1 "$RUNS"); do
        t0=$(date +%s.%N)
        "$IMGCONV" "${args[@]}" -k gaussian:9 "$WORK/in.jpg" "$WORK/out.jpg" 2>"$WORK/err" || break
        t1=$(date +%s.%N)
        times+=("$(python3 -c "print($t1 - $t0)")")
    done
    if [ ${#times[@]} -lt "$RUNS" ]; then
        ROWS+=("| \`imgconv --backend $cfg\` | failed: $(head -1 "$WORK/err") | |")
        continue
    fi
    med=$(printf '%s\n' "${times[@]}" | median)
    ROWS+=("| \`imgconv --backend $cfg\` | $(printf '%.3f' "$med") | $(printf '%s ' "${times[@]}" | xargs printf '%.3f ') |")
    "$IMGCONV" "${args[@]}" -k gaussian:9 --time "$WORK/in.jpg" "$WORK/out.jpg" >"$WORK/time-${cfg// /_}.txt"
done

mkdir -p "$(dirname "$RESULT")"
{
    echo "# One ${W}x${H} JPEG -> JPEG, gaussian:9, whole process ($(date -u '+%Y-%m-%d %H:%M UTC'))"
    echo
    echo "Machine: $(nproc) cores; $(nvidia-smi -L 2>/dev/null | head -1 || echo 'no GPU')."
    echo "Input: $SOURCE, quality 92, $(wc -c <"$WORK/in.jpg") bytes. Median of $RUNS runs;"
    echo "produced by bench/jpeg-single.sh."
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
} >"$RESULT"
cat "$RESULT"
