#!/usr/bin/env bash
# png-speed.sh [BUILD] [IMAGE] - PNG encode and decode speed and size: imgconv
# at every --compression level against libvips (`vips`, default settings) and
# ImageMagick (`convert`, default settings) on the same image, whole processes
# to and from pipes or tmpfs-free scratch files. Writes
# bench/results/png-speed-DATE.md (a table, the commands, the machine).
#
#   decode MB/s = raw bytes / (time of PNG -> PPM/.v  - time of PPM/.v -> PPM/.v)
#   encode MB/s = raw bytes / (time of PPM/.v -> PNG  - time of PPM/.v -> PPM/.v)
# i.e. the process start and the raw read/write are measured apart and taken
# out; each figure is the median of RUNS runs. IMAGE defaults to a 2048x2048
# photograph made from scikit-image's astronaut (4x, Lanczos) when present,
# else the 2048x2048 test chart; IMAGE=noisy makes a camera-like 2048x2048
# one with bench/make_photos.py (crop, exposure, sensor noise).
# CLOCK=cpu measures the CPU time (user+sys, /usr/bin/time) of each process
# instead of its wall time: on a shared, loaded machine the steadier figure
# (every tool here encodes PNG on one thread).
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build}
BIN=$BUILD/imgconv
case "$BIN" in /*) ;; *) BIN="$PWD/$BIN" ;; esac
RUNS=${RUNS:-5}
command -v vips >/dev/null && command -v convert >/dev/null ||
    { echo "png-speed: needs vips and convert (bash scripts/install-bench-deps.sh)" >&2; exit 1; }
W=$(mktemp -d "${TMPDIR:-/tmp}/png-speed.XXXXXX")
trap 'rm -rf "$W"' EXIT

SRC=${2:-}
if [ -z "$SRC" ]; then
    astro=/usr/lib/python3/dist-packages/skimage/data/astronaut.png
    if [ -f "$astro" ]; then
        vips resize "$astro" "$W/photo.png" 4 && SRC=$W/photo.png && what="scikit-image astronaut x4 (Lanczos)"
    else
        "$BIN" --chart 2048x2048x3 "$W/photo.png" && SRC=$W/photo.png && what="test chart"
    fi
elif [ "$SRC" = noisy ]; then
    py=python3 # Debian's interpreter has numpy and scikit-image (install-deps.sh)
    [ -x /usr/bin/python3 ] && py=/usr/bin/python3
    "$py" "$ROOT/bench/make_photos.py" "$W" 1 2048 2048 7 >/dev/null
    SRC=$W/photo000.ppm && what="camera-like photograph (bench/make_photos.py 1 2048 2048 7)"
else
    what=$(basename "$SRC")
fi
"$BIN" -k 1 "$SRC" "$W/raw.ppm"
vips copy "$W/raw.ppm" "$W/raw.v"
dims=$(head -c 20 "$W/raw.ppm" | sed -n 2p)
bytes=$(($(stat -c %s "$W/raw.ppm") - $(head -n 3 "$W/raw.ppm" | wc -c)))

# median_ms CMD...: median wall time of RUNS runs, in ms.
CLOCK=${CLOCK:-wall}
median_ms() {
    local t=()
    for _ in $(seq "$RUNS"); do
        local a b
        if [ "$CLOCK" = cpu ]; then
            /usr/bin/time -f '%U %S' -o "$W/time" "$@" >/dev/null
            t+=($(awk '{ printf "%d", ($1 + $2) * 1e6 }' "$W/time"))
            continue
        fi
        a=$(date +%s%N)
        "$@" >/dev/null
        b=$(date +%s%N)
        t+=($(((b - a) / 1000)))
    done
    printf '%s\n' "${t[@]}" | sort -n | awk '{v[NR]=$1} END {printf "%.1f", v[int((NR+1)/2)]/1000}'
}
mbs() { awk -v b="$bytes" -v ms="$1" 'BEGIN { if (ms <= 0) print "-"; else printf "%.0f", b / 1e6 / (ms / 1e3) }'; }
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", a - b }'; }

out="$ROOT/bench/results/png-speed-$(date -u +%Y%m%dT%H%M%SZ).md"
{
    echo "# PNG encode/decode: imgconv vs libvips vs ImageMagick"
    echo
    echo "Image: $what, $dims, RGB, $((bytes / 1048576)) MiB raw. Median of $RUNS runs, $CLOCK time of whole"
    echo "processes; raw-to-raw time subtracted (see bench/png-speed.sh). Machine: $(nproc) cores,"
    echo "$(uname -m), $(. /etc/os-release && echo "$PRETTY_NAME"), load average $(cut -d' ' -f1-3 /proc/loadavg)"
    echo "at the start (a shared machine: times are noisy, sizes are exact); $(vips --version);"
    echo "$(convert -version | head -1 | cut -d' ' -f2-3)."
    echo
    # imgconv: decode from its default-level PNG.
    "$BIN" -k 1 "$W/raw.ppm" "$W/ic.png"
    base=$(median_ms "$BIN" -k 1 --format ppm "$W/raw.ppm" -)
    dec=$(median_ms "$BIN" -k 1 --format ppm "$W/ic.png" -)
    echo "| tool | setting | encode ms | encode MB/s | file bytes | vs ImageMagick size | decode MB/s |"
    echo "|---|---|---|---|---|---|---|"
    for lvl in 1 2 3 4 5 6 7 8 9; do
        enc=$(median_ms "$BIN" -k 1 --compression "$lvl" --format png "$W/raw.ppm" -)
        "$BIN" -k 1 --compression "$lvl" --format png "$W/raw.ppm" - >"$W/l$lvl.png"
        size=$(stat -c %s "$W/l$lvl.png")
        e=$(sub "$enc" "$base")
        echo "| imgconv | --compression $lvl$([ "$lvl" = 5 ] && echo ' (default)') | $e | $(mbs "$e") | $size | IMSIZE$size | $([ "$lvl" = 5 ] && mbs "$(sub "$dec" "$base")" || echo) |"
    done
    vbase=$(median_ms vips copy "$W/raw.v" "$W/o.v")
    venc=$(median_ms vips copy "$W/raw.v" "$W/v.png")
    vips copy "$W/raw.v" "$W/v.png"
    vdec=$(median_ms vips copy "$W/v.png" "$W/o.v")
    e=$(sub "$venc" "$vbase")
    echo "| libvips | pngsave defaults (compression 6) | $e | $(mbs "$e") | $(stat -c %s "$W/v.png") | IMSIZE$(stat -c %s "$W/v.png") | $(mbs "$(sub "$vdec" "$vbase")") |"
    mbase=$(median_ms convert "$W/raw.ppm" "$W/o.ppm")
    menc=$(median_ms convert "$W/raw.ppm" "$W/m.png")
    convert "$W/raw.ppm" "$W/m.png"
    mdec=$(median_ms convert "$W/m.png" "$W/o.ppm")
    msize=$(stat -c %s "$W/m.png")
    e=$(sub "$menc" "$mbase")
    echo "| ImageMagick | convert defaults (quality 75: zlib 7, adaptive filter) | $e | $(mbs "$e") | $msize | 1.000 | $(mbs "$(sub "$mdec" "$mbase")") |"
} >"$out.tmp"
# Sizes relative to ImageMagick's, now that it is known.
awk -v m="$msize" '{ while (match($0, /IMSIZE[0-9]+/)) { s = substr($0, RSTART + 6, RLENGTH - 6); $0 = substr($0, 1, RSTART - 1) sprintf("%.3f", s / m) substr($0, RSTART + RLENGTH) } print }' "$out.tmp" >"$out"
rm -f "$out.tmp"
cat "$out"
echo "written: ${out#"$ROOT"/}"
