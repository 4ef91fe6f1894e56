# bench/lib.sh - helpers every suite of bench/run.sh shares; sourced, not run.
# Sets HERE (bench/), ROOT (the repository), COMMIT, STAMP, and defines the
# functions below. A suite writes its summary to $RESULT and raw files under
# $LOGDIR; run.sh puts the summary in bench/results/SUITE.md.

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(dirname "$HERE")
COMMIT=${IC_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
STAMP=${STAMP:-$(date -u +%Y%m%dT%H%M%SZ)}

# find_imgconv [PATH]: sets IMGCONV to PATH (made absolute), else to the first
# imgconv of build-gpu/ or build*/; fails with a usage line when none runs.
find_imgconv() {
    IMGCONV=${1:-}
    if [ -z "$IMGCONV" ]; then
        for c in "$ROOT"/build-gpu/imgconv "$ROOT"/build*/imgconv; do
            [ -x "$c" ] && IMGCONV=$c && break
        done
    fi
    [ -x "${IMGCONV:-}" ] || { echo "bench/run.sh $SUITE: no imgconv (give PATH/TO/imgconv)" >&2; exit 2; }
    IMGCONV=$(cd "$(dirname "$IMGCONV")" && pwd)/$(basename "$IMGCONV")
}

# use_peers: vips and mogrify from PEERS=DIR (the bin/ of a bundle made by
# scripts/pack-peers.sh), else ./peers-bundle/bin when carried, else the
# system's; puts them first on PATH and says where from in PEERS_FROM.
use_peers() {
    PEERS=${PEERS:-}
    [ -z "$PEERS" ] && [ -x "$ROOT/peers-bundle/bin/vips" ] && PEERS=$ROOT/peers-bundle/bin
    PEERS_FROM="the system's PATH"
    if [ -n "$PEERS" ]; then
        PEERS=$(cd "$PEERS" && pwd)
        export PATH="$PEERS:$PATH"
        PEERS_FROM="$PEERS (scripts/pack-peers.sh)"
        if [ -f "$PEERS/../MANIFEST" ]; then
            PEERS_FROM="$PEERS (made by scripts/pack-peers.sh on $(sed -n 2p "$PEERS/../MANIFEST" |
                sed 's/^host: //'); no vips modules loaded, so each vips process starts faster
than a stock install's)"
        fi
    fi
}

# pick_py: PY is the first python3 with scikit-image (Debian's python3-skimage
# is /usr/bin's), else python3.
pick_py() {
    PY=python3
    python3 -c 'import skimage' 2>/dev/null || { [ -x /usr/bin/python3 ] && PY=/usr/bin/python3; }
}

# make_work NAME: WORK is a fresh temporary folder, removed at exit unless KEEP=1.
make_work() {
    WORK=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
    [ "${KEEP:-0}" = 1 ] || trap 'rm -rf "$WORK"' EXIT
}

# median: the median of the numbers on stdin, one a line.
median() { sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# machine: "N cores, CPU model" and the GPU, if any, for a summary's header.
machine() {
    local gpu
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1) || true
    echo "$(nproc) cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), ${gpu:-no GPU}"
}

# quick: true under bench/run.sh --quick (fewer runs, smaller inputs: a check
# that a suite works, not a measurement).
quick() { [ "${IC_BENCH_QUICK:-0}" = 1 ]; }

# publish SRC DEST WHAT: DEST becomes SRC under a first line naming WHAT (the
# command), the device, the date and the commit; replaced whole, in place.
publish() {
    local gpu
    gpu=$(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null | head -1) || true
    mkdir -p "$(dirname "$2")"
    {
        echo "<!-- $3: device ${gpu:-none} ($(nproc) cores), $(date -u '+%Y-%m-%d %H:%M UTC'), commit $COMMIT -->"
        cat "$1"
    } >"$2.tmp"
    mv "$2.tmp" "$2"
}
