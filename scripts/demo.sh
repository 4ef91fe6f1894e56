#!/usr/bin/env bash
# demo.sh - the main job of imgconv on its own test chart (`make demo`).
#
#   bash scripts/demo.sh BUILD_DIR            the demo, results in demo-out/
#   bash scripts/demo.sh BUILD_DIR --docs     also the README pictures, docs/img/
#
# Generates the deterministic 1024x768 RGB test chart (gradients, edges, fine
# lines, zone plate, noise), then runs seed 004's filters on it: Gaussian blur
# (9x9), sharpen, Sobel edge detection, unsharp mask and emboss. Each step is
# run 3 times with --time, so it prints which backend ran and the mean and
# median of each stage (load, upload, kernel, download, save).
set -euo pipefail

usage() {
    echo "usage: bash scripts/demo.sh BUILD_DIR [--docs]" >&2
    exit 2
}
[ $# -ge 1 ] || usage
BUILD=$1
DOCS=0
case "${2:-}" in
"") ;;
--docs) DOCS=1 ;;
*) usage ;;
esac

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="$BUILD/imgconv"
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
if [ ! -x "$BIN" ]; then
    echo "demo: $BIN not found; build first (make build)" >&2
    exit 1
fi
OUTDIR="$ROOT/demo-out"
REPEAT=3

# PNG when built in, else binary PPM (always built in).
if "$BIN" --formats | grep -Eq '^ *png +yes'; then EXT=png; else EXT=ppm; fi

echo "== imgconv demo"
"$BIN" --version | grep -v '^backends:'
"$BIN" --list-backends
echo

mkdir -p "$OUTDIR"
CHART="$OUTDIR/chart.$EXT"
t0=$(date +%s%N)
"$BIN" --chart 1024x768x3 --seed 1 "$CHART"
t1=$(date +%s%N)
echo "== test chart 1024x768 RGB -> ${CHART#"$ROOT"/} ($(((t1 - t0) / 1000000)) ms)"
echo

# name | kernel | extra options | what it shows
STEPS=(
    "blur|gaussian:9||Gaussian blur, 9x9 (separable, rank 1)"
    "sharpen|sharpen||3x3 sharpen (0 -1 0 / -1 5 -1 / 0 -1 0)"
    "edges|sobel-x|--border replicate|Sobel x-derivative: vertical edges (negative side clamps to 0)"
    "unsharp|unsharp:size=9,amount=1.5||unsharp mask: image + 1.5 x (image - Gaussian 9x9)"
    "emboss|emboss|--border replicate|3x3 emboss"
)

SUMMARY=()
for step in "${STEPS[@]}"; do
    IFS='|' read -r name kernel extra what <<<"$step"
    read -r -a opts <<<"$extra"
    out="$OUTDIR/$name.$EXT"
    echo "== $name: $what"
    log=$("$BIN" --kernel "$kernel" "${opts[@]}" --repeat "$REPEAT" --time "$CHART" "$out")
    echo "$log" | sed 's/^/   /'
    backend=$(echo "$log" | sed -n 's/^imgconv: backend \([^:]*\):.*/\1/p')
    kernel_ms=$(echo "$log" | awk '$1 == "kernel" { print $3 }')
    filter_ms=$(echo "$log" | awk '$1 == "filter" { print $3 }')
    total_ms=$(echo "$log" | awk '$1 == "total" { print $3 }')
    SUMMARY+=("$(printf '%-8s %-28s %-14s %10s %10s %10s' "$name" "$kernel" "$backend" \
        "$kernel_ms" "$filter_ms" "$total_ms")")
    echo "   -> ${out#"$ROOT"/}"
    echo
done

echo "== summary (median of $REPEAT runs, ms; 'filter' is the whole ic_convolve call)"
printf '%-8s %-28s %-14s %10s %10s %10s\n' step kernel backend kernel filter total
printf '%s\n' "${SUMMARY[@]}"
echo "results in ${OUTDIR#"$ROOT"/}/"

[ "$DOCS" -eq 1 ] || exit 0

# ---- README pictures -----------------------------------------------------------
if [ "$EXT" != png ]; then
    echo "demo: --docs needs PNG support (see --formats)" >&2
    exit 1
fi
IMG="$ROOT/docs/img"
mkdir -p "$IMG"
W=384
H=256
"$BIN" --chart ${W}x${H}x3 --seed 1 "$IMG/chart.png"
for step in "${STEPS[@]}"; do
    IFS='|' read -r name kernel extra what <<<"$step"
    read -r -a opts <<<"$extra"
    "$BIN" --kernel "$kernel" "${opts[@]}" "$IMG/chart.png" "$IMG/$name.png"
done

# Border modes: shift the chart 48 px right and 32 px down with one-hot kernels,
# so the band that comes into view on the left and top is exactly what each
# mode puts outside the image (seed 004's padding tables, at picture size).
# Two 1D passes (97x1, then 1x65) give the same result as one 97x65 one-hot
# kernel, because every mode maps x and y independently.
onehot_row() { # N: "0 0 ... 0 1" (N values), a horizontal kernel
    local n=$1
    printf '0 %.0s' $(seq 1 $((n - 1)))
    printf '1'
}
onehot_col() { # N: the same as a column
    onehot_row "$1" | sed 's/ /; /g'
}
ROW=$(onehot_row 97)
COL=$(onehot_col 65)
TMPD=$(mktemp -d)
trap 'rm -rf "$TMPD"' EXIT
for mode in constant replicate mirror reflect wrap; do
    "$BIN" --kernel "$ROW" --border "$mode" "$IMG/chart.png" "$TMPD/h.png"
    "$BIN" --kernel "$COL" --border "$mode" "$TMPD/h.png" "$IMG/border-$mode.png"
done
echo "README pictures (${W}x${H}) in ${IMG#"$ROOT"/}/:"
(cd "$IMG" && ls -1 ./*.png | sed 's|^\./|   |')
