#!/usr/bin/env bash
# batch-compare.sh - batch throughput of imgconv against libvips (`vips conv`)
# and ImageMagick (`mogrify`) on the same machine (issue 6): a folder of N
# generated 1920x1080 RGB images, half PNG and half JPEG, filtered with the
# same 3x3 Gaussian (1 2 1; 2 4 2; 1 2 1 / 16), outputs in the input's format
# (JPEG quality 92 everywhere). vips has no batch mode, so it runs one process
# per file, as many at a time as there are cores (xargs -P); mogrify gets the
# whole list in one process; imgconv its batch mode (-o OUTDIR). Images/s and
# MB/s (decoded RGB megabytes) from wall time; imgconv's --json gives where
# its busy time went (decode, filter, encode) and which backend ran.
#
# usage: bench/batch-compare.sh [PATH/TO/imgconv] [BACKEND]
#   BACKEND defaults to auto; the result names the backend auto picked.
#   N=200 images by default (env N); results go to
#   bench/results/batch-compare-<date>[-SUFFIX].md (env SUFFIX; env RESULT
#   overrides the whole path).
#   CPU_ROW=1 adds a second imgconv row with --backend cpu (the GPU's share);
#   by default it is added when BACKEND ran on a CUDA backend (CPU_ROW=0: never).
#   IMGCONV_ARGS: extra imgconv options for a second row of BACKEND, e.g.
#   "--devices all" (the first row runs without them; the cpu row never gets them).
#   Peers: vips and mogrify from PEERS=DIR (the bin/ of a bundle made by
#   scripts/pack-peers.sh, put first on PATH), else ./peers-bundle/bin when it
#   exists (the GPU machine, where it is carried), else the system's.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
IMGCONV=${1:-}
BACKEND=${2:-auto}
if [ -z "$IMGCONV" ]; then
    for c in "$HERE"/../build*/imgconv; do [ -x "$c" ] && IMGCONV=$c && break; done
fi
[ -x "${IMGCONV:-}" ] || { echo "usage: $0 PATH/TO/imgconv [BACKEND]" >&2; exit 2; }
PEERS=${PEERS:-}
if [ -z "$PEERS" ] && [ -x "$HERE/../peers-bundle/bin/vips" ]; then
    PEERS=$HERE/../peers-bundle/bin
fi
PEERS_FROM="the system's PATH"
if [ -n "$PEERS" ]; then
    PEERS=$(cd "$PEERS" && pwd)
    export PATH="$PEERS:$PATH"
    PEERS_FROM="PEERS=$PEERS"
    if [ -f "$PEERS/../MANIFEST" ]; then
        PEERS_FROM="$PEERS (made by scripts/pack-peers.sh on $(sed -n 2p "$PEERS/../MANIFEST" |
            sed 's/^host: //'); no vips modules loaded, so each vips process starts faster
than a stock install's)"
    fi
fi
read -r -a XARGS <<<"${IMGCONV_ARGS:-}"
N=${N:-200}
W=1920
H=1080
DATE=$(date +%Y-%m-%d)
RESULT=${RESULT:-$HERE/results/batch-compare-$DATE${SUFFIX:+-$SUFFIX}.md}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/batch-compare.XXXXXX")
trap 'rm -rf "$WORK"' EXIT
CORES=$(nproc)

echo "generating $N ${W}x${H} images in $WORK ..." >&2
mkdir -p "$WORK/in"
distinct=10
for i in $(seq 1 $distinct); do
    "$IMGCONV" --chart ${W}x${H} --seed "$i" "$WORK/seed$i.png"
    "$IMGCONV" --quality 92 "$WORK/seed$i.png" "$WORK/seed$i.jpg" --kernel 1
done
for i in $(seq 1 "$N"); do
    s=$(((i - 1) % distinct + 1))
    if [ $((i % 2)) -eq 0 ]; then cp "$WORK/seed$s.png" "$WORK/in/im$i.png"; else cp "$WORK/seed$s.jpg" "$WORK/in/im$i.jpg"; fi
done
MB=$(python3 -c "print($N * $W * $H * 3 / 1e6)")

now() { date +%s.%N; }
rate() { python3 -c "t=$1; print(f'{t:.2f} | {$N/t:.1f} | {$MB/t:.1f}')"; }

# libvips: a 3x3 matrix file, one process per image.
printf '3 3 16 0\n1 2 1\n2 4 2\n1 2 1\n' >"$WORK/g3.mat"
cat >"$WORK/vips_one.sh" <<'EOF'
#!/bin/sh
# vips_one.sh IN OUTDIR MAT: one image through vips conv, JPEG at quality 92.
b=$(basename "$1")
case "$b" in
*.jpg) exec vips conv "$1" "$2/${b}[Q=92]" "$3" ;;
*) exec vips conv "$1" "$2/$b" "$3" ;;
esac
EOF
chmod +x "$WORK/vips_one.sh"

ROWS=()
run_tool() { # NAME COMMAND...
    local name=$1
    shift
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
    local t0 t1
    t0=$(now)
    "$@" >"$WORK/log" 2>&1 || { echo "$name failed:" >&2; tail -3 "$WORK/log" >&2; return 1; }
    t1=$(now)
    local n
    n=$(find "$WORK/out" -type f | wc -l)
    ROWS+=("| $name | $n | $(rate "$(python3 -c "print($t1 - $t0)")") |")
    echo "$name: $n files in $(python3 -c "print(round($t1 - $t0, 2))") s" >&2
}

K="1 2 1; 2 4 2; 1 2 1 / 16"
json_backend() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['backend'])" "$1"; }
run_imgconv() { # BACKEND JSONFILE [EXTRA...]: one imgconv batch row, named after the backend that ran
    local be=$1 js=$2
    shift 2
    local label="imgconv --backend $be${*:+ $*}"
    # shellcheck disable=SC2016 # expanded by the inner shell
    run_tool "$label" sh -c 'j=$1; shift; "$@" >"$j"' sh "$js" "$IMGCONV" --backend "$be" \
        --kernel "$K" --quality 92 -q --json "$@" -o "$WORK/out" "$WORK/in"
    local used last=$((${#ROWS[@]} - 1))
    used=$(json_backend "$js")
    [ "$used" = "$be" ] || ROWS[last]=${ROWS[last]/"$label |"/"$label (picked $used) |"}
}
IC_JSON="$WORK/imgconv.json"
run_imgconv "$BACKEND" "$IC_JSON"
USED=$(json_backend "$IC_JSON")
XARGS_JSON=
if [ ${#XARGS[@]} -gt 0 ]; then # e.g. --devices all: a second row with the extra options
    XARGS_JSON="$WORK/imgconv-xargs.json"
    run_imgconv "$BACKEND" "$XARGS_JSON" "${XARGS[@]}"
fi
CPU_JSON=
case "${CPU_ROW:-auto}:$USED" in
1:* | auto:cuda*)
    CPU_JSON="$WORK/imgconv-cpu.json"
    run_imgconv cpu "$CPU_JSON"
    ;;
esac
VIPS_VER="not installed"
if command -v vips >/dev/null; then
    VIPS_VER=$(vips --version | head -1)
    run_tool "vips conv (xargs -P $CORES)" sh -c "ls '$WORK'/in/* | xargs -P $CORES -I{} '$WORK/vips_one.sh' {} '$WORK/out' '$WORK/g3.mat'"
fi
IM_VER="not installed"
if command -v mogrify >/dev/null; then
    IM_VER=$(mogrify -version | head -1)
    run_tool "ImageMagick mogrify" mogrify -path "$WORK/out" -quality 92 -morphology Convolve \
        '3x3: 0.0625,0.125,0.0625 0.125,0.25,0.125 0.0625,0.125,0.0625' "$WORK"/in/*
fi

stages() { # JSONFILE: where imgconv's busy time went
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stage_ms"]
busy = sum(s.values()) or 1
print(f"backend {d['backend']}; busy time summed over threads: decode {s['decode']/1e3:.2f} s "
      f"({100*s['decode']/busy:.0f}%), filter {s['filter']/1e3:.2f} s ({100*s['filter']/busy:.0f}%), "
      f"encode {s['encode']/1e3:.2f} s ({100*s['encode']/busy:.0f}%); {d['written']} written, "
      f"{d['failed']} failed")
EOF
}

mkdir -p "$(dirname "$RESULT")"
{
    echo "# Batch throughput: imgconv vs libvips vs ImageMagick ($DATE)"
    echo
    echo "Machine: $CORES cores, $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'),"
    nvidia-smi -L 2>/dev/null || true
    echo "$N images of ${W}x${H} RGB (half PNG, half JPEG), 3x3 Gaussian, outputs in the"
    echo "input's format, JPEG quality 92. MB = decoded RGB megabytes ($MB MB in all)."
    echo "Wall time of the whole run, one run each; produced by bench/batch-compare.sh."
    echo
    echo "| tool | files written | seconds | images/s | MB/s |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "imgconv --backend $BACKEND: $(stages "$IC_JSON")."
    if [ -n "$XARGS_JSON" ]; then echo "imgconv --backend $BACKEND $IMGCONV_ARGS: $(stages "$XARGS_JSON")."; fi
    if [ -n "$CPU_JSON" ]; then
        echo
        echo "imgconv --backend cpu: $(stages "$CPU_JSON")."
    fi
    echo
    echo "Versions: imgconv $("$IMGCONV" --version | head -1); $VIPS_VER; $IM_VER."
    echo "Peers from $PEERS_FROM."
} >"$RESULT"
cat "$RESULT"
