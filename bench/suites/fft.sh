# fft.sh - the cpu backend's FFT path (KissFFT overlap-save, src/cpu/cpu_fft.c)
# against its direct and separable paths, whole processes on a 4000x3000 (12 MP)
# JPEG photograph (bench/make_photos.py's photo 0; without scikit-image the
# test chart): random kernels from 31x31 to 255x255 (positive weights over
# their sum, a random blur) and a 255x255 Gaussian, each with the planner's
# choice (`--backend cpu`) and with the other path forced (`--tune method=`).
# Wall seconds and user + system CPU seconds, medians of RUNS; the load
# average beside them, since a shared machine stretches wall time.
#
# usage: bench/run.sh fft [PATH/TO/imgconv]
#   env RUNS (default 3; --quick: 1), W and H (default 4000x3000),
#   DIRECT=1 also times the 255x255 direct sum (about a minute a run).
set -euo pipefail
find_imgconv "${1:-}"
RUNS=${RUNS:-3}
quick && RUNS=1
W=${W:-4000} H=${H:-3000}
quick && W=1500 H=1000
pick_py
make_work fft
cd "$WORK"

if "$PY" "$HERE/make_photos.py" . 1 "$W" "$H" 7 >/dev/null 2>&1; then
    photo="scikit-image photograph + sensor noise"
else
    "$IMGCONV" --chart "${W}x${H}x3" --seed 7 photo000.ppm >/dev/null
    photo="test chart (no scikit-image)"
fi
"$IMGCONV" -k identity --overwrite --backend cpu photo000.ppm photo.jpg >/dev/null

# randk N: an N x N kernel file of random integers 1..99 over their sum
randk() {
    "$PY" - "$1" >"k$1.txt" <<'EOF'
import random, sys
n = int(sys.argv[1])
random.seed(n)
rows = [[random.randint(1, 99) for _ in range(n)] for _ in range(n)]
for r in rows:
    print(" ".join(map(str, r)))
print("/ %d" % sum(map(sum, rows)))
EOF
}

# timed ARGS...: "wall cpu" medians of RUNS whole processes
timed() {
    local walls=() cpus=()
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S" -o t.txt "$IMGCONV" --overwrite --backend cpu --max-work 0 \
            "$@" photo.jpg out.jpg >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
        read -r e u s <t.txt
        walls+=("$e")
        cpus+=("$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')")
    done
    echo "$(printf '%s\n' "${walls[@]}" | median) $(printf '%s\n' "${cpus[@]}" | median)"
}
method() { # the path the planner takes, from --explain
    "$IMGCONV" --overwrite --backend cpu --max-work 0 --explain "$@" photo.jpg out.jpg 2>&1 |
        sed -n 's/.*cpu: \(fft\|[a-z0-9]* loops, \(direct\|separable\)\).*/\1/p' | head -1 |
        sed 's/.* loops, //'
}

{
    echo "# The cpu backend's FFT path"
    echo
    echo "$(machine); $(nproc) cores; $photo, ${W}x${H} RGB JPEG in and out; medians of $RUNS"
    echo "whole processes; load average at the start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "Build: $("$IMGCONV" --version | tr '\n' ';' | sed 's/;$//')"
    echo
    echo "| kernel | path | wall s | CPU s (user + sys) |"
    echo "|---|---|---:|---:|"
} >"$RESULT"
row() { # row LABEL PATH ARGS...
    local label=$1 path=$2
    shift 2
    read -r wl cp < <(timed "$@")
    echo "| $label | $path | $wl | $cp |" >>"$RESULT"
}
for n in 255 101 63 31; do randk "$n"; done
"$IMGCONV" --overwrite --backend cpu --max-work 0 --explain -k @k255.txt photo.jpg out.jpg 2>&1 |
    grep 'cpu:' | sed 's/^ *//' >explain.txt || true
for n in 255 101 63 31; do
    auto=$(method -k @"k$n.txt")
    row "random ${n}x${n}" "$auto (planner)" -k @"k$n.txt"
    if [ "$auto" = fft ]; then
        [ "$n" != 255 ] || [ "${DIRECT:-0}" = 1 ] && row "random ${n}x${n}" "direct (forced)" \
            --tune method=direct -k @"k$n.txt"
    else
        row "random ${n}x${n}" "fft (forced)" --tune method=fft -k @"k$n.txt"
    fi
done
g=gaussian:size=255,sigma=40
row "$g" "$(method -k "$g") (planner)" -k "$g"
row "$g" "fft (forced)" --tune method=fft -k "$g"
{
    echo
    echo "The plan of the 255x255 random kernel (\`--explain\`):"
    echo
    echo '```'
    cat explain.txt
    echo '```'
} >>"$RESULT"
cat "$RESULT"
