# stream.sh - raw frame stream throughput of imgconv at 1080p and 8K: N raw interleaved RGB frames are
# piped through `imgconv --stream WxHx3 --kernel KERNEL` and its output read
# back through a pipe, as in `ffmpeg -f rawvideo - | imgconv --stream ... | ffmpeg`.
# Frames: 4 distinct test charts (`imgconv --chart WxH --seed 1..4`, PPM header
# cut off) cycled, written once to a temporary folder and fed by one `cat`.
# Three rows per size, so the pipe's own cost is visible:
#   pipe only       cat frames | wc -c                     (no imgconv)
#   pass-through    cat frames | imgconv --kernel 1 | wc -c (identity 1x1)
#   KERNEL          cat frames | imgconv --kernel KERNEL | wc -c
# frames/s and MB/s (frame bytes, one direction) from the pipeline's wall time;
# imgconv's own figure (--time: first read to last write) is shown beside it.
#
# usage: bench/run.sh stream [PATH/TO/imgconv] [BACKEND]
#   BACKEND defaults to auto (the result names what ran). env: N1080=300 frames
#   of 1920x1080, N8K=30 frames of 7680x4320 (--quick: 10 and 2),
#   KERNEL=gaussian:3, IMGCONV_ARGS (extra options).
set -euo pipefail
find_imgconv "${1:-}"
BACKEND=${2:-auto}
if quick; then N1080=${N1080:-10} N8K=${N8K:-2}; fi
N1080=${N1080:-300}
N8K=${N8K:-30}
KERNEL=${KERNEL:-gaussian:3}
read -r -a XARGS <<<"${IMGCONV_ARGS:-}"
DATE=$(date +%Y-%m-%d)
make_work stream
DISTINCT=4

make_frames() { # W H: $WORK/WxH-<i>.raw, i = 0..DISTINCT-1
    local w=$1 h=$2 bytes=$(($1 * $2 * 3))
    for i in $(seq 0 $((DISTINCT - 1))); do
        "$IMGCONV" --chart "${w}x${h}" --seed $((i + 1)) "$WORK/c.ppm" >/dev/null
        tail -c "$bytes" "$WORK/c.ppm" >"$WORK/${w}x${h}-$i.raw"
        [ "$(stat -c %s "$WORK/${w}x${h}-$i.raw")" = "$bytes" ] || {
            echo "stream: chart is not ${w}x${h} 8-bit RGB" >&2
            exit 1
        }
    done
    rm -f "$WORK/c.ppm"
}

feed() { # W H N: N frames on stdout, from one cat (a process per frame costs more than a 1080p frame)
    local i files=()
    for ((i = 0; i < $3; i++)); do files+=("$WORK/$1x$2-$((i % DISTINCT)).raw"); done
    cat "${files[@]}"
}

ROWS=()
measure() { # NAME W H N [imgconv options...]: one pipeline, one table row
    local name=$1 w=$2 h=$3 n=$4
    shift 4
    local bytes=$((w * h * 3)) t0 t1 got own=""
    t0=$(date +%s.%N)
    if [ $# -eq 0 ]; then
        got=$(feed "$w" "$h" "$n" | wc -c)
    else
        got=$(feed "$w" "$h" "$n" | "$IMGCONV" --stream "${w}x${h}x3" --backend "$BACKEND" --time \
            ${XARGS[@]+"${XARGS[@]}"} "$@" 2>"$WORK/err" | wc -c)
        # "imgconv: N frames of WxHx3 in S s: F frames/s (backend B)"
        own=$(grep -oE '[0-9.]+ frames/s \(backend [^)]*\)' "$WORK/err" || true)
        [ -n "$own" ] || { echo "stream: $name failed:" >&2; cat "$WORK/err" >&2; exit 1; }
    fi
    t1=$(date +%s.%N)
    [ "$got" = $((bytes * n)) ] || {
        echo "stream: $name ${w}x${h}: $got bytes out, expected $((bytes * n))" >&2
        exit 1
    }
    ROWS+=("$(python3 -c "
t = $t1 - $t0
print(f'| ${w}x${h} | $name | $n | {t:.2f} | {$n / t:.1f} | {$bytes * $n / t / 1e6:.0f} | ${own:-} |')")")
    echo "${ROWS[-1]}" >&2
}

for size in "1920 1080 $N1080" "7680 4320 $N8K"; do
    read -r w h n <<<"$size"
    echo "frames ${w}x${h} ..." >&2
    make_frames "$w" "$h"
    feed "$w" "$h" "$DISTINCT" >/dev/null # page cache warm
    measure "pipe only (cat, no imgconv)" "$w" "$h" "$n"
    measure "imgconv --kernel 1 (pass-through)" "$w" "$h" "$n" --kernel 1
    measure "imgconv --kernel $KERNEL" "$w" "$h" "$n" --kernel "$KERNEL"
    rm -f "$WORK/${w}x${h}"-*.raw
done

mkdir -p "$(dirname "$RESULT")"
{
    echo "# Stream throughput: imgconv --stream ($DATE)"
    echo
    echo "Machine: $(machine)."
    echo "Raw interleaved RGB frames (8-bit, 3 channels; $DISTINCT distinct test charts cycled) piped"
    echo "through \`imgconv --stream WxHx3 --backend $BACKEND${IMGCONV_ARGS:+ $IMGCONV_ARGS}\` and read back"
    echo "through a pipe (\`cat frames | imgconv ... | wc -c\`). Wall time of the pipeline, one run each;"
    echo "MB/s = frame megabytes per second in one direction. The last column is imgconv's own"
    echo "figure (--time: first read to last write). Produced by bench/run.sh stream."
    echo
    echo "| frame | run | frames | seconds | frames/s | MB/s | imgconv --time |"
    echo "|---|---|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Version: $("$IMGCONV" --version | head -1)."
} >"$RESULT"
cat "$RESULT"
