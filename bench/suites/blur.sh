# blur.sh - gaussian blurs of large sigma on the cpu backend, in constant time
# per pixel (docs/design/blur.md), on a 1920x1080 and a 12 MP (4000x3000)
# photograph (bench/make_photos.py; without scikit-image the test chart):
#   the whole ic_convolve call (`--time`'s filter stage, median of --repeat
#     RUNS in one process) at sigma 10, 120 and 500, every core, with the
#     ratio of the last sigma to the first (500 to 10) for each image;
#   whole processes on the 12 MP photograph at sigma 120 (median wall time
#     of RUNS), against `vips gaussblur` with the same sigma when libvips is
#     here (skipped with a note otherwise; it takes about a minute).
#
# usage: bench/run.sh blur [PATH/TO/imgconv]
#   env RUNS (default 5; --quick: 1), SIGMAS (default "10 120 500").
set -euo pipefail
find_imgconv "${1:-}"
quick && RUNS=${RUNS:-1}
RUNS=${RUNS:-5}
SIGMAS=${SIGMAS:-10 120 500}
use_peers
VIPS=$(command -v vips || true)
pick_py
make_work blur
cd "$WORK"
N=$(nproc)

photo() { # photo W H FILE: a photograph, or the chart when scikit-image is missing
    if "$PY" "$BENCH/make_photos.py" . 1 "$1" "$2" 11 >/dev/null 2>&1; then
        mv photo000.ppm "$3"
        echo "photograph"
    else
        "$IMGCONV" --chart "$1x$2x3" --seed 11 "$3" >/dev/null
        echo "test chart (no scikit-image)"
    fi
}
kind_hd=$(photo 1920 1080 hd.ppm)
if quick; then kind_12=$(photo 1000 750 p12.ppm); else kind_12=$(photo 4000 3000 p12.ppm); fi

filter_ms() { # filter_ms FILE SIGMA: median ms of the whole ic_convolve call
    "$IMGCONV" --time --repeat "$RUNS" --overwrite --backend cpu --max-work 0 \
        -k "gaussian:sigma=$2" "$1" out.ppm 2>&1 | awk '$1 == "filter" { print $4 }'
}
wall() { # wall ARGS...: median wall seconds of RUNS whole processes
    local t=()
    for _ in $(seq "$RUNS"); do
        local a b
        a=$(date +%s.%N)
        "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
        b=$(date +%s.%N)
        t+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b - a }')")
    done
    printf '%s\n' "${t[@]}" | median
}

{
    echo "# Gaussian blur of any sigma, cpu backend"
    echo
    echo "$(machine); medians of $RUNS; $(uptime | sed 's/.*load/load/')"
    echo
    echo "| image | sigma | whole call ms |"
    echo "|---|---:|---:|"
} >"$RESULT"
for f in hd p12; do
    first="" last="" s0="" s1=""
    for s in $SIGMAS; do
        ms=$(filter_ms "$f.ppm" "$s")
        [ -z "$first" ] && first=$ms s0=$s
        last=$ms s1=$s
        kind=$kind_hd
        [ "$f" = p12 ] && kind=$kind_12
        echo "| $f.ppm ($kind) | $s | $ms |" >>"$RESULT"
    done
    echo "| $f.ppm: sigma $s1 / sigma $s0 | | $(awk -v a="$last" -v b="$first" 'BEGIN { printf "%.2fx", a / b }') |" >>"$RESULT"
done
{
    echo
    echo "## Whole processes, p12.ppm, sigma 120"
    echo
} >>"$RESULT"
i=$(wall "$IMGCONV" -k gaussian:sigma=120 --max-work 0 --overwrite --backend cpu p12.ppm job.ppm)
if [ -n "$VIPS" ]; then
    v=$(wall "$VIPS" gaussblur p12.ppm vjob.ppm 120)
    echo "imgconv $i s, vips gaussblur $v s: $(awk -v a="$v" -v b="$i" 'BEGIN { printf "%.1fx", a / b }')" >>"$RESULT"
else
    echo "imgconv $i s; vips is not installed here, so no comparison" >>"$RESULT"
fi
echo "($N cores)" >>"$RESULT"
cat "$RESULT"
