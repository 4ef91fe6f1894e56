# blur.sh - gaussian blurs of large sigma on the cpu backend and, where a GPU
# is usable, the cuda backend's blur method, in constant time per pixel
# (docs/design/blur.md), on a 1920x1080 and a 12 MP (4000x3000) photograph
# (bench/make_photos.py; without scikit-image the test chart):
#   the whole ic_convolve call (`--time`'s filter stage, median of --repeat
#     RUNS in one process) at sigma 10, 120 and 500, every core, with the
#     ratio of sigma 500 to sigma 10 (the last SIGMAS to the first; the
#     target is at most 1.3); next to it, in the same run, cuda's kernel time
#     (`--time`'s kernel stage: CUDA events around the launches, image
#     already on the device) and its whole call (with both copies), each
#     with the same ratio;
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

stage_ms() { # stage_ms FILE SIGMA BACKEND STAGE: median ms of a --time stage
    "$IMGCONV" --time --repeat "$RUNS" --overwrite --backend "$3" --max-work 0 \
        -k "gaussian:sigma=$2" "$1" out.ppm 2>&1 | awk -v s="$4" '$1 == s { print $4 }'
}
filter_ms() { # filter_ms FILE SIGMA: median ms of the whole ic_convolve call on cpu
    stage_ms "$1" "$2" cpu filter
}
# the cuda rows only where the backend is usable (--list-backends says "yes")
CUDA=""
"$IMGCONV" --list-backends 2>/dev/null | awk '$1 == "cuda" && $2 == "yes" { f = 1 } END { exit !f }' &&
    CUDA=1
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
    echo "# Gaussian blur of any sigma, cpu and cuda backends"
    echo
    echo "$(machine); medians of $RUNS; $(uptime | sed 's/.*load/load/')"
    echo
    echo "| image | sigma | cpu whole call ms | cuda kernel ms | cuda whole call ms |"
    echo "|---|---:|---:|---:|---:|"
} >"$RESULT"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (a > 0 && b > 0) printf "%.2fx", a / b; else print "-" }'; }
s_first=${SIGMAS%% *}
s_last=${SIGMAS##* }
for f in hd p12; do
    first="" last="" gfirst="" glast="" wfirst="" wlast=""
    for s in $SIGMAS; do
        ms=$(filter_ms "$f.ppm" "$s")
        gk="-" gw="-"
        if [ -n "$CUDA" ]; then
            gk=$(stage_ms "$f.ppm" "$s" cuda kernel)
            gw=$(stage_ms "$f.ppm" "$s" cuda filter)
            [ -z "$gfirst" ] && gfirst=$gk
            glast=$gk
            [ -z "$wfirst" ] && wfirst=$gw
            wlast=$gw
        fi
        [ -z "$first" ] && first=$ms
        last=$ms
        kind=$kind_hd
        [ "$f" = p12 ] && kind=$kind_12
        echo "| $f.ppm ($kind) | $s | $ms | $gk | $gw |" >>"$RESULT"
    done
    echo "| $f.ppm: sigma $s_last / sigma $s_first | | $(ratio "$last" "$first") | $(ratio "$glast" "$gfirst") | $(ratio "$wlast" "$wfirst") |" >>"$RESULT"
done
if [ -n "$CUDA" ]; then
    echo >>"$RESULT"
    echo "cuda's plan for hd.ppm at sigma 120 (--explain):" >>"$RESULT"
    echo >>"$RESULT"
    "$IMGCONV" --explain --overwrite --backend cuda -k gaussian:sigma=120 hd.ppm out.ppm 2>&1 |
        grep -E "^cuda: method|^  " | sed 's/^/    /' >>"$RESULT" || true
else
    echo >>"$RESULT"
    echo "no usable cuda backend here: the cuda columns are empty" >>"$RESULT"
fi
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
