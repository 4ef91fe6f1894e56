#!/usr/bin/env bash
# png-threads.sh [IMGCONV [BASE]] - PNG encode on 1..N threads, the fast
# mode (--compression 1) and decode, on a noisy photograph-like image:
# bench/make_photos.py's photo 0 at W x H (default 4000x3000, RGB), or, without
# scikit-image, smooth gradients with Gaussian noise made with numpy.
# Each figure is the least of RUNS (default 5) runs of imgconv's own stage
# times (--time): "save" (encode + write, to a file in /tmp) and "load"
# (read + decode) with the identity kernel, so that nothing else is
# measured. BASE, another imgconv (e.g. the build of an older commit),
# runs the same commands beside it. Prints a markdown table: ms, MP/s, MP/s
# per thread, bytes and bytes against BASE's default.
# Env: W, H, RUNS, THREADS (default "1 2"), LEVELS (default "default 1").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/imgconv}
BASE=${2:-}
W=${W:-4000} H=${H:-3000} RUNS=${RUNS:-5}
THREADS=${THREADS:-1 2} LEVELS=${LEVELS:-default 1}
[ -x "$BIN" ] || { echo "usage: $0 [PATH/TO/imgconv [BASE/imgconv]]" >&2; exit 2; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/png-threads.XXXXXX")
trap 'rm -rf "$T"' EXIT
if ! "$py" "$ROOT/bench/make_photos.py" "$T" 1 "$W" "$H" 7 >/dev/null 2>&1; then
    "$py" - "$T/photo000.ppm" "$W" "$H" <<'EOF'
import sys
import numpy as np
out, w, h = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(7)
y, x = np.mgrid[0:h, 0:w].astype(np.float64)
base = [128 + 90 * np.sin(x / 310 + c) * np.cos(y / 170 - c) for c in range(3)]
px = np.dstack(base) + rng.normal(0, 6, (h, w, 3))
px = np.clip(px + 0.5, 0, 255).astype(np.uint8)
with open(out, "wb") as f:
    f.write(b"P6 %d %d 255\n" % (w, h) + px.tobytes())
EOF
fi
IN=$T/photo000.ppm
MP=$(awk -v w="$W" -v h="$H" 'BEGIN { printf "%.3f", w * h / 1e6 }')

# stage BIN STAGE ARGS...: the least ms of STAGE over RUNS processes (on a
# shared machine the least is the figure other loads disturb least).
stage() {
    local bin=$1 name=$2
    shift 2
    for _ in $(seq "$RUNS"); do
        rm -f "${@: -1}" # the output: newer CLIs refuse to overwrite one
        "$bin" --kernel identity --backend cpu --time "$@" 2>&1 |
            awk -v s="$name" '$1 == s { print $2 }'
    done | sort -g | sed -n 1p
}

row() { # LABEL BIN LEVEL THREADS
    local label=$1 bin=$2 level=$3 t=$4 opt=()
    [ "$level" = default ] || opt=(--compression "$level")
    local out=$T/out-$label-$level-$t.png
    local ms
    ms=$(stage "$bin" save --threads "$t" "${opt[@]}" "$IN" "$out")
    local dec
    dec=$(stage "$bin" load --threads "$t" "$out" "$T/back.ppm")
    local bytes
    bytes=$(stat -c %s "$out")
    awk -v l="$label" -v lv="$level" -v t="$t" -v ms="$ms" -v mp="$MP" -v b="$bytes" \
        -v ref="${REF:-$bytes}" -v dec="$dec" 'BEGIN {
        printf "| %s | %s | %d | %.1f | %.1f | %.1f | %d | %.4f | %.1f |\n",
            l, lv, t, ms, mp / (ms / 1000), mp / (ms / 1000) / t, b, b / ref, dec }'
}

echo "PNG encode of a ${W}x${H} RGB photograph-like image, least of $RUNS runs ($(nproc) cores)"
echo
echo "| build | level | threads | save ms | MP/s | MP/s per thread | bytes | x base default | decode ms |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|"
REF=""
if [ -n "$BASE" ]; then
    "$BASE" --kernel identity --backend cpu "$IN" "$T/ref.png" >/dev/null
    REF=$(stat -c %s "$T/ref.png")
fi
for level in $LEVELS; do
    for t in $THREADS; do
        [ -n "$BASE" ] && row base "$BASE" "$level" "$t"
        row new "$BIN" "$level" "$t"
    done
done
