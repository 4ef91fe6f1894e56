# png.sh - PNG file size, encode and decode speed: imgconv's
# default and every --compression level against libvips (`vips copy`,
# pngsave's defaults) and ImageMagick (`mogrify -format png`, its defaults:
# zlib level 7, adaptive filters) on the same images, whole processes.
# bench/run.sh png [PATH/TO/imgconv]: one table per image, the machine, the
# versions. --quick: the smooth image only, 1 run, levels 1 and 9.
#
# Images (IMAGES="smooth noisy1 noisy2 rgba deep" by default, any subset):
#   smooth  scikit-image's astronaut upscaled 4x (vips resize, Lanczos), 2048x2048 RGB
#   noisy1  bench/make_photos.py 3 2048 2048 7, photo 0 (camera-like: crop,
#   noisy2  exposure, sensor noise), and photo 2: 2048x2048 RGB
#   rgba    noisy1 with a radial alpha ramp (opaque centre, transparent corners)
#   deep    noisy2 at 16 bits (its 8-bit samples x 257 plus Gaussian noise, sigma 40)
# Every tool reads the same input, a stored (uncompressed) PNG, so that
# ImageMagick needs only its PNG coder (the peers-bundle has PNG and JPEG):
#   encode s = time(stored.png -> PNG) - time(stored.png -> cheapest output)
#   decode s = time(X.png -> cheapest output) - time(stored.png -> cheapest output)
# where the cheapest output is PPM on stdout (imgconv), .v (vips) and a stored
# PNG (ImageMagick, png:compression-level=0, filter 0), and X.png is imgconv's
# default file for every tool (the same bytes decoded by all three).
# MB = decoded bytes (width x height x channels x bytes per sample). RUNS runs
# (default 5), interleaved (run 1 of every command, then run 2, ...), so
# that a shared machine's load changes hit every tool alike; each figure is
# the median, of wall time and of CPU time (user + sys of the process and
# its threads, bash's `time`): the CPU figure is the steadier on a loaded
# machine. Peers: vips and mogrify from PEERS=DIR, else ./peers-bundle/bin
# when carried (scripts/pack-peers.sh), else the system's.
set -euo pipefail
find_imgconv "${1:-}"
BIN=$IMGCONV
use_peers
command -v vips >/dev/null && command -v mogrify >/dev/null ||
    { echo "png: needs vips and mogrify (bash scripts/install-bench-deps.sh)" >&2; exit 1; }
quick && RUNS=${RUNS:-1} IMAGES=${IMAGES:-smooth} LEVELS=${LEVELS:-1 9}
RUNS=${RUNS:-5}
IMAGES=${IMAGES:-smooth noisy1 noisy2 rgba deep}
LEVELS=${LEVELS:-1 2 3 4 5 6 7 8 9}
py=python3 # Debian's interpreter has numpy and scikit-image (install-deps.sh)
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
"$py" -c 'import numpy' 2>/dev/null ||
    { echo "png: needs numpy for $py (bash scripts/install-bench-deps.sh)" >&2; exit 1; }
make_work png
W=$WORK

# stored.py IN.ppm OUT.png KIND: writes a stored PNG (zlib level 0, filter
# NONE) of IN as KIND (rgb, rgba, deep); prints "WxHxC bytes".
cat >"$W/stored.py" <<'EOF'
import re, struct, sys, zlib
import numpy as np
src, dst, kind = sys.argv[1:4]
with open(src, "rb") as f:
    data = f.read()
m = re.match(rb"P6\s+(\d+)\s+(\d+)\s+255\s", data)  # no comments: our writers
w, h = int(m.group(1)), int(m.group(2))
px = np.frombuffer(data[m.end():m.end() + w * h * 3], np.uint8).reshape(h, w, 3)
depth, colour = 8, 2
if kind == "rgba":
    yy, xx = np.mgrid[0:h, 0:w]
    r = np.hypot(yy - h / 2, xx - w / 2) / (0.45 * min(w, h))
    alpha = np.clip(255 * (1.6 - r), 0, 255).astype(np.uint8)
    px, colour = np.dstack([px, alpha]), 6
elif kind == "deep":
    rng = np.random.default_rng(16)
    v = px.astype(np.float64) * 257 + rng.normal(0, 40, px.shape)
    px, depth = np.clip(v + 0.5, 0, 65535).astype(">u2"), 16
rows = px.reshape(h, -1).view(np.uint8)
raw = np.hstack([np.zeros((h, 1), np.uint8), rows]).tobytes()
def chunk(t, b):
    return struct.pack(">I", len(b)) + t + b + struct.pack(">I", zlib.crc32(t + b))
with open(dst, "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n")
    f.write(chunk(b"IHDR", struct.pack(">IIBBBBB", w, h, depth, colour, 0, 0, 0)))
    f.write(chunk(b"IDAT", zlib.compress(raw, 0)))
    f.write(chunk(b"IEND", b""))
print(f"{w}x{h}x{px.shape[2]} {w * h * px.shape[2] * depth // 8}")
EOF

# The source photographs.
have_photos=0
"$py" "$ROOT/bench/make_photos.py" "$W" 3 2048 2048 7 2>/dev/null && have_photos=1
astro=$("$py" -c 'import skimage, os; print(os.path.join(os.path.dirname(skimage.__file__), "data", "astronaut.png"))' 2>/dev/null || true)

# time_cmd KEY CMD...: runs CMD once (stdout to /dev/null), appends its wall
# and CPU seconds to $W/t/KEY.
mkdir -p "$W/t"
time_cmd() {
    local key=$1 TIMEFORMAT='%R %U %S' line
    shift
    line=$({ time "$@" >/dev/null 2>"$W/err"; } 2>&1) || { cat "$W/err" >&2; return 1; }
    echo "$line" >>"$W/t/$key"
}
# col_median KEY COL: the median of column COL (wall or cpu) of KEY's runs, in s.
col_median() {
    awk -v c="$2" '{ print (c == "wall" ? $1 : $2 + $3) }' "$W/t/$1" | median | xargs printf '%.4f'
}
# mbs BYTES A B: BYTES / (A - B) in MB/s; "-" when A - B is not positive.
mbs() { awk -v n="$1" -v a="$2" -v b="$3" 'BEGIN { d = a - b; if (d <= 0) print "-"; else printf "%.0f", n / 1e6 / d }'; }

writer="libpng and zlib, or unknown (no libdeflate in $(dirname "$BIN")/CMakeCache.txt)"
grep -q '^IC_HAVE_LIBDEFLATE\|^IC_LIBDEFLATE_LIBRARY:FILEPATH=/' "$(dirname "$BIN")/CMakeCache.txt" 2>/dev/null &&
    writer="libdeflate and zlib's Z_RLE (src/io/png_deflate.c)"
{
    echo "# PNG size and speed: imgconv vs libvips vs ImageMagick"
    echo
    echo "Machine: $(machine), $(uname -m),"
    echo "$(. /etc/os-release && echo "$PRETTY_NAME"); load average $(cut -d' ' -f1-3 /proc/loadavg) at the start."
    echo "imgconv: $("$BIN" --version 2>/dev/null | head -1) ($BIN); $(vips --version); $(mogrify -version | head -1 | cut -d' ' -f2-3);"
    echo "PNG writer: $writer; peers from $PEERS_FROM. Median of $RUNS interleaved runs of whole processes; encode and decode"
    echo "times net of each tool's stored-PNG-to-cheapest-output time (see bench/suites/png.sh)."
    echo "MB = decoded bytes. Sizes are exact; times on a shared machine are noisy (CPU time is the steadier)."
    echo
} >"$RESULT.tmp"

for img in $IMAGES; do
    rm -f "$W"/t/* "$W"/*.png
    case "$img" in
    smooth)
        if [ -n "$astro" ] && [ -f "$astro" ]; then
            vips resize "$astro" "$W/s.png" 4
            "$BIN" -k 1 "$W/s.png" "$W/src.ppm" # vips' PPM has a comment line
            what="scikit-image astronaut x4 (vips resize, Lanczos)"
        else
            "$BIN" --chart 2048x2048x3 "$W/src.ppm"
            what="test chart (no scikit-image here)"
        fi
        kind=rgb ;;
    noisy1 | noisy2 | rgba | deep)
        [ "$have_photos" = 1 ] || { echo "png: $img needs bench/make_photos.py (numpy, scikit-image)" >&2; continue; }
        case "$img" in noisy1 | rgba) n=000 ;; *) n=002 ;; esac
        cp "$W/photo$n.ppm" "$W/src.ppm"
        what="bench/make_photos.py 3 2048 2048 7, photo$n (camera-like)"
        case "$img" in rgba) kind=rgba; what="$what, radial alpha" ;; deep) kind=deep; what="$what, 16-bit" ;; *) kind=rgb ;; esac ;;
    *) echo "png: unknown image '$img'" >&2; exit 2 ;;
    esac
    read -r geom bytes < <("$py" "$W/stored.py" "$W/src.ppm" "$W/stored.png" "$kind")
    vips copy "$W/stored.png" "$W/stored.v"
    "$BIN" -k 1 "$W/stored.png" "$W/ic.png" # the file every tool decodes
    IM0=(-define png:compression-level=0 -define png:compression-filter=0 -define png:compression-strategy=0)
    mkdir -p "$W/m0" "$W/m" "$W/md"
    cp "$W/ic.png" "$W/md/dec.png"
    for r in $(seq "$RUNS"); do
        time_cmd ic.base "$BIN" -k 1 --format ppm "$W/stored.png" -
        time_cmd ic.enc "$BIN" -k 1 --format png "$W/stored.png" -
        for l in $LEVELS; do
            time_cmd "ic.l$l" "$BIN" -k 1 --compression "$l" --format png "$W/stored.png" -
        done
        time_cmd ic.dec "$BIN" -k 1 --format ppm "$W/ic.png" -
        time_cmd vips.base vips copy "$W/stored.png" "$W/o.v"
        time_cmd vips.enc vips copy "$W/stored.png" "$W/v.png"
        time_cmd vips.dec vips copy "$W/ic.png" "$W/o.v"
        time_cmd im.base mogrify -path "$W/m0" "${IM0[@]}" -format png "$W/stored.png"
        time_cmd im.enc mogrify -path "$W/m" -format png "$W/stored.png"
        time_cmd im.dec mogrify -path "$W/m0" "${IM0[@]}" -format png "$W/md/dec.png"
    done
    for l in $LEVELS; do "$BIN" -k 1 --compression "$l" "$W/stored.png" "$W/l$l.png"; done
    im_size=$(stat -c %s "$W/m/stored.png")
    # row LABEL SETTING FILE ENC_KEY BASE_KEY [DEC_KEY]
    row() {
        local size ew ec dw="" dc=""
        size=$(stat -c %s "$3")
        ew=$(mbs "$bytes" "$(col_median "$4" wall)" "$(col_median "$5" wall)")
        ec=$(mbs "$bytes" "$(col_median "$4" cpu)" "$(col_median "$5" cpu)")
        if [ -n "${6:-}" ]; then
            dw=$(mbs "$bytes" "$(col_median "$6" wall)" "$(col_median "$5" wall)")
            dc=$(mbs "$bytes" "$(col_median "$6" cpu)" "$(col_median "$5" cpu)")
        fi
        printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$1" "$2" "$size" \
            "$(awk -v a="$size" -v b="$im_size" 'BEGIN { printf "%.4f", a / b }')" "$ec" "$ew" "$dc" "$dw"
    }
    {
        echo "## $img: $what, ${geom}, $((bytes / 1000000)) MB decoded"
        echo
        echo "| tool | setting | file bytes | vs ImageMagick | encode MB/s (CPU) | encode MB/s (wall) | decode MB/s (CPU) | decode MB/s (wall) |"
        echo "|---|---|---|---|---|---|---|---|"
        row imgconv "default" "$W/ic.png" ic.enc ic.base ic.dec
        for l in $LEVELS; do row imgconv "--compression $l" "$W/l$l.png" "ic.l$l" ic.base; done
        row libvips "vips copy (pngsave defaults)" "$W/v.png" vips.enc vips.base vips.dec
        row ImageMagick "mogrify -format png (defaults)" "$W/m/stored.png" im.enc im.base im.dec
        echo
    } >>"$RESULT.tmp"
done
mv "$RESULT.tmp" "$RESULT"
cat "$RESULT"
