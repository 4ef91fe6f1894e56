# serve.sh - imgconv serve under a whole-request load (send, wait for the
# whole reply, check it against the CLI's output), one client and CLIENTS
# concurrent ones, on three inputs:
#   an HD (1920x1080) JPEG photograph, gaussian:5, JPEG out;
#   a 6000x4000 JPEG photograph, gaussian:5, JPEG out;
#   a 64x64 PNG, gaussian:5, PNG out;
# with the cpu backend and, where a GPU is usable, cuda: its server sends the
# JPEGs to the GPU lane (nvJPEG batches; replies checked against the batch
# CLI's nvJPEG route, IC_BATCH_DECODE=gpu) and the PNG to its CPU workers
# (checked against the cpu backend's). The lane column says which served
# the rows' requests. Beside it: the
# one-shot CLI and libvips (`vips gaussblur`, sigma 1.1 as gaussian:5's) as
# whole processes on the same files, which is what a caller without a
# resident server pays per image.
#
# usage: bench/run.sh serve [PATH/TO/imgconv]
#   env COUNT (requests per run, default 400; --quick 40), LOAD_SECONDS (cap per
#   run, default 20), CLIENTS (default 64), RUNS (whole-process medians, 5),
#   COUNT_MANY (requests per many-client run, default 2000; --quick 80: 400
#   were 6 per client, over in a third of a second), LOAD_PROCS (load-client
#   processes for the many-client rows, default 4, so that one Python
#   interpreter's lock does not bound the load), LOAD_CLIENT (c, the default,
#   or py).
#
# The load client is bench/probe/serve_load.c, compiled here with
# ${CC:-cc} -O2 -pthread (threads and sockets, no interpreter lock: the
# client must not be what bounds the rate); where it does not compile, or
# with LOAD_CLIENT=py, bench/serve-load.py (same arguments, same line). The
# summary's header names the one that ran.
set -euo pipefail
find_imgconv "${1:-}"
"$IMGCONV" --version | grep -q '^serve: built in' ||
    { echo "bench/run.sh serve: this imgconv has no server (libevent)" >&2; exit 2; }
COUNT=${COUNT:-400} SECONDS_CAP=${LOAD_SECONDS:-20} CLIENTS=${CLIENTS:-64} RUNS=${RUNS:-5}
LOAD_PROCS=${LOAD_PROCS:-4} COUNT_MANY=${COUNT_MANY:-2000} LOAD_CLIENT=${LOAD_CLIENT:-c}
quick && COUNT_MANY=80
quick && COUNT=40 RUNS=1
use_peers
VIPS=$(command -v vips || true)
pick_py
make_work serve
cd "$WORK"

photo() { # photo W H OUT.ppm: a photograph, or the chart with noise
    if "$PY" "$BENCH/make_photos.py" . 1 "$1" "$2" 7 >/dev/null 2>&1; then
        mv photo000.ppm "$3"
    else
        "$IMGCONV" --chart "$1x$2x3" --seed 7 "$3" >/dev/null
    fi
}
photo 1920 1080 hd.ppm
photo 6000 4000 big.ppm
"$IMGCONV" -k identity --backend cpu hd.ppm hd.jpg >/dev/null
"$IMGCONV" -k identity --backend cpu big.ppm big.jpg >/dev/null
"$IMGCONV" --chart 64x64 small.png >/dev/null

LOADER=("$PY" "$BENCH/serve-load.py") LOADER_NAME="bench/serve-load.py, Python"
PROCS_NOTE=", from $LOAD_PROCS load processes" # the C client's threads share no lock
if [ "$LOAD_CLIENT" = py ]; then
    LOADER_NOTE="LOAD_CLIENT=py"
elif ${CC:-cc} -O2 -pthread "$BENCH/probe/serve_load.c" -o serve_load 2>serve_load.err; then
    LOADER=("$WORK/serve_load") LOADER_NAME="bench/probe/serve_load.c, C threads" LOADER_NOTE="" PROCS_NOTE=""
else
    LOADER_NOTE="bench/probe/serve_load.c did not compile with ${CC:-cc}"
    echo "serve: $LOADER_NOTE ($(head -1 serve_load.err)); using bench/serve-load.py" >&2
fi

wall() { # median wall seconds of RUNS whole processes (after one warm-up)
    local t=()
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    for _ in $(seq "$RUNS"); do
        local a b
        a=$(date +%s.%N)
        "$@" >/dev/null 2>&1
        b=$(date +%s.%N)
        t+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.1f", (b - a) * 1000 }')")
    done
    printf '%s\n' "${t[@]}" | median
}
field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2"; }

backends=(cpu)
"$IMGCONV" --list-backends 2>/dev/null | grep -q '^  cuda  *yes' && backends+=(cuda)
{
    echo "# imgconv serve under load"
    echo
    echo "$(machine); whole requests over loopback HTTP, keep-alive; load client"
    echo "$LOADER_NAME${LOADER_NOTE:+ ($LOADER_NOTE)};"
    echo "each reply checked against the CLI's output; up to $COUNT requests (one client) or $COUNT_MANY"
    echo "($CLIENTS clients$PROCS_NOTE) or ${SECONDS_CAP} s per row;"
    echo "one-shot CLI and libvips: whole processes, medians of $RUNS (libvips from $PEERS_FROM)."
    echo
    echo "Server-side means (Server-Timing): queue, decode, filter, encode ms; the rest of"
    echo "p50 is the network, HTTP and the client."
    echo
    echo "| backend | lane | input | clients | requests/s | p50 ms | p99 ms | queue | decode | filter | encode | one-shot CLI ms | libvips ms |"
    echo "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
} >"$RESULT"
for be in "${backends[@]}"; do
    "$IMGCONV" serve --listen 127.0.0.1:0 --backend "$be" --queue 4096 >"srv-$be.log" 2>&1 &
    pid=$!
    for _ in $(seq 300); do grep -q 'serving on' "srv-$be.log" && break; sleep 0.1; done
    port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "srv-$be.log")
    [ -n "$port" ] || { cat "srv-$be.log"; kill "$pid"; exit 1; }
    for case in "hd.jpg jpg" "big.jpg jpg" "small.png png"; do
        set -- $case
        in=$1 fmt=$2
        if [ "$be" = cuda ] && [ "$fmt" = jpg ]; then # the GPU lane: the nvJPEG route's bytes
            rm -rf ref-in ref-out && mkdir ref-in && cp "$in" ref-in/
            IC_BATCH_DECODE=gpu "$IMGCONV" -k gaussian:5 --backend cuda -q -o ref-out ref-in >/dev/null 2>&1
            cp "ref-out/$in" "ref.$fmt"
        elif [ "$be" = cuda ]; then # the CPU workers beside the lane
            "$IMGCONV" -k gaussian:5 --backend cpu --overwrite "$in" "ref.$fmt" >/dev/null 2>&1
        else
            "$IMGCONV" -k gaussian:5 --backend "$be" --overwrite "$in" "ref.$fmt" >/dev/null 2>&1
        fi
        cli=$(wall "$IMGCONV" -k gaussian:5 --backend "$be" --overwrite "$in" "one.$fmt")
        vips="-"
        [ -n "$VIPS" ] && vips=$(wall "$VIPS" gaussblur "$in" "v.$fmt" 1.1)
        for n in 1 "$CLIENTS"; do
            "${LOADER[@]}" "http://127.0.0.1:$port" "$in" \
                "kernel=gaussian:5&format=$fmt" --clients "$n" \
                --count "$([ "$n" -gt 1 ] && echo "$COUNT_MANY" || echo "$COUNT")" \
                --procs "$([ "$n" -ge "$LOAD_PROCS" ] && echo "$LOAD_PROCS" || echo 1)" \
                --seconds "$SECONDS_CAP" --expect "ref.$fmt" >load.txt || { cat load.txt; }
            cat load.txt >&2
            echo "| $be | $(field lanes load.txt) | $in | $n | $(field rps load.txt) | $(field p50_ms load.txt) |" \
                "$(field p99_ms load.txt) | $(field queue_ms load.txt) |" \
                "$(field decode_ms load.txt) | $(field filter_ms load.txt) |" \
                "$(field encode_ms load.txt) | $cli | $vips |" >>"$RESULT"
        done
    done
    kill -TERM "$pid"
    wait "$pid" || echo "server $be exited $?" >&2
done
cat "$RESULT"
