# codecs.sh - the codecs on every core, on one noisy 6000x4000 photograph
# (bench/make_photos.py's photo 0; without scikit-image the test chart with
# seeded noise), CPU backend:
#   PNG encode and decode: `--time`'s save and load stages (median of --repeat
#     RUNS in one process) at --threads 1 and at every core, the default level
#     and the fast mode (--compression 1), with each file's size; the decode
#     of the same photograph written by Pillow (libpng); libvips
#     (`vips copy`, whole process) beside it for speed and size;
#   JPEG decode: the load stage of a file with restart markers (imgconv's own
#     writer puts one between strips), decoded in parts between its markers
#     on every core (src/io/jpeg_restart.c), and of a file without markers,
#     at 1 thread and every core, with the speedup over 1 thread;
#   whole jobs: PNG -> PNG and JPEG -> JPEG with gaussian:9 on every core,
#     wall time of whole processes (median of RUNS), against `vips gaussblur`
#     with the same sigma (1.7) on the same file.
# Prints which coders this build has (imgconv --version).
#
# usage: bench/run.sh codecs [PATH/TO/imgconv]
#   env RUNS (default 5; --quick: 1), W and H (default 6000x4000).
set -euo pipefail
find_imgconv "${1:-}"
quick && RUNS=${RUNS:-1}
RUNS=${RUNS:-5}
W=${W:-6000} H=${H:-4000}
quick && W=1500 H=1000
use_peers
VIPS=$(command -v vips || true)
pick_py
make_work codecs
cd "$WORK"
N=$(nproc)

if ! "$PY" "$BENCH/make_photos.py" . 1 "$W" "$H" 7 >/dev/null 2>&1; then
    "$IMGCONV" --chart "${W}x${H}x3" --seed 7 chart.ppm >/dev/null
    "$PY" - chart.ppm photo000.ppm <<'EOF'
import sys
import numpy as np
src, dst = sys.argv[1], sys.argv[2]
raw = open(src, "rb").read()
head, body = raw.split(b"\n255\n", 1)
a = np.frombuffer(body, np.uint8).astype(np.float64)
a += np.random.default_rng(7).normal(0, 4, a.shape)
open(dst, "wb").write(head + b"\n255\n" + np.clip(a, 0, 255).astype(np.uint8).tobytes())
EOF
    photo="test chart + noise (no scikit-image)"
else
    photo="scikit-image photograph + sensor noise"
fi
IN=photo000.ppm

# stage NAME FILE...: the median ms of a --time stage
stage() { awk -v s="$1" '$1 == s { print $4 }' "$2"; }
timed() { # timed LOG ARGS...: one imgconv process with --time --repeat RUNS
    local log=$1
    shift
    "$IMGCONV" --time --repeat "$RUNS" --overwrite --backend cpu "$@" >"$log" 2>&1 ||
        { cat "$log"; return 1; }
}
wall() { # wall ARGS...: median wall seconds of RUNS whole processes (after one warm-up)
    local t=()
    "$@" >/dev/null 2>&1 || { echo "failed: $*" >&2; return 1; }
    for _ in $(seq "$RUNS"); do
        local a b
        a=$(date +%s.%N)
        "$@" >/dev/null 2>&1
        b=$(date +%s.%N)
        t+=("$(awk -v a="$a" -v b="$b" 'BEGIN { printf "%.3f", b - a }')")
    done
    printf '%s\n' "${t[@]}" | median
}
size() { stat -c %s "$1"; }
mps() { echo "$W $H $1" | awk '{ printf "%.1f", $1 * $2 / 1e6 / ($3 / 1000) }'; }

{
    echo "# Codecs on every core"
    echo
    echo "$(machine); $N cores; $photo, ${W}x${H} RGB; medians of $RUNS"
    echo
    echo "Build: $("$IMGCONV" --version | tr '\n' ';' | sed 's/;$//')"
    echo
    echo "## PNG"
    echo
    echo "| level | threads | encode ms | MP/s | decode ms | bytes |"
    echo "|---|---:|---:|---:|---:|---:|"
} >"$RESULT"
for level in default 1; do
    lv=()
    [ "$level" = 1 ] && lv=(--compression 1)
    for t in 1 "$N"; do
        timed enc.log -k identity --threads "$t" "${lv[@]}" "$IN" "out-$level.png"
        timed dec.log -k identity --threads "$t" "out-$level.png" dec.ppm
        e=$(stage save enc.log) d=$(stage load dec.log)
        echo "| $level | $t | $e | $(mps "$e") | $d | $(size "out-$level.png") |" >>"$RESULT"
    done
done
# A file written by libpng (Pillow: zlib level 6, adaptive filters, mostly
# Paeth on photographs), as other programs write them: its decode.
if "$PY" -c 'import sys; from PIL import Image; Image.open(sys.argv[1]).save(sys.argv[2])' \
    "$IN" pillow.png 2>/dev/null; then
    timed dec.log -k identity --threads 1 pillow.png dec.ppm
    echo "| Pillow's file (libpng) | 1 | | | $(stage load dec.log) | $(size pillow.png) |" >>"$RESULT"
fi
if [ -n "${VIPS:-}" ]; then
    v=$(wall "$VIPS" copy "$IN" vips.png)
    echo "| libvips \`vips copy\` (whole process) | | $(awk -v v="$v" 'BEGIN { printf "%.0f", v * 1000 }') | | | $(size vips.png) |" >>"$RESULT"
fi

{
    echo
    echo "## JPEG decode"
    echo
    echo "| file | threads | decode ms | speedup |"
    echo "|---|---:|---:|---:|"
} >>"$RESULT"
"$IMGCONV" -k identity --threads "$N" --overwrite --backend cpu "$IN" strips.jpg >/dev/null
"$IMGCONV" -k identity --threads 1 --overwrite --backend cpu "$IN" plain.jpg >/dev/null
for f in strips plain; do
    one=
    for t in 1 "$N"; do
        timed dec.log -k identity --threads "$t" "$f.jpg" "dec-$t.ppm"
        d=$(stage load dec.log)
        [ -n "$one" ] || one=$d
        x=$(awk -v a="$one" -v b="$d" 'BEGIN { printf "%.2fx", a / b }')
        echo "| $f.jpg ($(size "$f.jpg") bytes) | $t | $d | $x |" >>"$RESULT"
    done
    # Decoded in parts or not, the pixels are those of one thread.
    cmp -s dec-1.ppm "dec-$N.ppm" || { echo "codecs: $f.jpg decodes differently on $N threads" >&2; exit 1; }
done

{
    echo
    echo "## Whole jobs, gaussian:9, every core"
    echo
    echo "| job | imgconv s | bytes | libvips s | bytes |"
    echo "|---|---:|---:|---:|---:|"
} >>"$RESULT"
cp out-default.png in.png
for f in png jpg; do
    src=in.png
    [ "$f" = jpg ] && src=strips.jpg
    i=$(wall "$IMGCONV" -k gaussian:9 --overwrite --backend cpu "$src" "job.$f")
    row="| $f -> $f | $i | $(size "job.$f")"
    if [ -n "${VIPS:-}" ]; then
        v=$(wall "$VIPS" gaussblur "$src" "vjob.$f" 1.7)
        row="$row | $v | $(size "vjob.$f") |"
    else
        row="$row | - | - |"
    fi
    echo "$row" >>"$RESULT"
done
cat "$RESULT"
