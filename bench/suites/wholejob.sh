# wholejob.sh - whole processes, as a user runs them: the wall time
# of `imgconv` from exec to exit, start-up, decode, filter, encode and write
# included, median of RUNS runs (default 7, at least 5) after one warm-up run
# (page cache, calibration cache):
#   big:   a 6000x4000 photograph, JPEG -> JPEG, gaussian:9 (quality 92),
#          --backend cuda and --backend cpu;
#   small: a 64x64 PPM -> PPM, gaussian:3, --backend cpu and --backend cuda;
#   plus one run of the small cuda case with --recalibrate (what a process
#   pays when the GPU's copy/FMA calibration is not cached yet);
#   auto: the cases --backend auto must get within 1.1x of the better backend
#   (64x64, HD JPEG, 6000x4000 JPEG and PNG, 8K RGBA PNG, batches of 500 and
#   2000 HD JPEGs, a 31x31 kernel and gaussian:sigma=40 on 6000x4000), each
#   on cpu, cuda and auto; the table gives auto / best.
# The photograph is one of scikit-image's bundled photographs (astronaut,
# else coffee/chelsea) upscaled to 6000x4000 with seeded sensor-like noise
# (sigma 4 levels, per channel) so that it compresses like camera output;
# without scikit-image, the test chart with the same noise (numpy), else the
# bare chart (the table says which). Then `--time` of the big case on both
# backends, for where the time goes.
#
# usage: bench/run.sh wholejob [PATH/TO/imgconv]
#   env RUNS (>= 5; --quick: 1), AUTO_RUNS (the auto cases' runs, default
#   RUNS; --quick: 1, with batches of 16 and 64), KEEP=1 keeps the work folder.
set -euo pipefail
find_imgconv "${1:-}"
quick && RUNS=${RUNS:-1}
RUNS=${RUNS:-7}
quick || [ "$RUNS" -ge 5 ] 2>/dev/null || { echo "RUNS must be >= 5" >&2; exit 2; }
make_work wholejob
cd "$WORK"

# ---- inputs ------------------------------------------------------------------
W=6000 H=4000
SOURCE=$(python3 - "$W" "$H" <<'EOF' 2>/dev/null || true
import sys
import numpy as np
w, h = int(sys.argv[1]), int(sys.argv[2])
src = None
try:
    import skimage.data
    from skimage.transform import resize
    for name in ("astronaut", "coffee", "chelsea"):
        try:
            src = getattr(skimage.data, name)()
            break
        except Exception:
            continue
    if src is not None:
        img = resize(src, (h, w), order=1, anti_aliasing=False, preserve_range=True)
        label = f"scikit-image data.{name} {src.shape[1]}x{src.shape[0]} upscaled"
except Exception:
    src = None
if src is None:
    sys.exit(1)
rng = np.random.default_rng(2026)
img = img + rng.normal(0.0, 4.0, img.shape)
img = np.clip(np.rint(img), 0, 255).astype(np.uint8)
with open("photo.ppm", "wb") as f:
    f.write(b"P6\n%d %d\n255\n" % (w, h))
    f.write(img.tobytes())
print(label + ", noise sigma 4")
EOF
)
if [ -z "$SOURCE" ]; then
    "$IMGCONV" --chart ${W}x${H} chart.ppm
    SOURCE=$(python3 - <<'EOF' 2>/dev/null || true
import numpy as np
with open("chart.ppm", "rb") as f:
    data = f.read()
# header: P6\nW H\n255\n
parts = data.split(b"\n", 3)
w, h = map(int, parts[1].split())
img = np.frombuffer(parts[3], dtype=np.uint8).reshape(h, w, 3).astype(np.float64)
rng = np.random.default_rng(2026)
img = np.clip(np.rint(img + rng.normal(0.0, 4.0, img.shape)), 0, 255).astype(np.uint8)
with open("photo.ppm", "wb") as f:
    f.write(b"P6\n%d %d\n255\n" % (w, h))
    f.write(img.tobytes())
print("test chart with noise sigma 4 (no scikit-image)")
EOF
)
    if [ -z "$SOURCE" ]; then
        mv chart.ppm photo.ppm
        SOURCE="bare test chart (no numpy): compresses far better than a photograph"
    fi
fi
"$IMGCONV" --kernel 1 --quality 92 photo.ppm photo.jpg
"$IMGCONV" --chart 64x64 small.ppm
JPEG_MB=$(python3 -c "import os; print(f'{os.path.getsize(\"photo.jpg\")/1e6:.1f}')")

# ---- timing --------------------------------------------------------------------
# t_run OUT ARGS...: one process, wall seconds on stdout; fails the script when
# imgconv fails or writes nothing.
t_run() {
    local out=$1
    shift
    rm -f "$out"
    local t0=$EPOCHREALTIME
    "$IMGCONV" "$@" >/dev/null 2>"$WORK/stderr" || {
        echo "imgconv $* failed: $(cat "$WORK/stderr")" >&2
        exit 1
    }
    local t1=$EPOCHREALTIME
    [ -s "$out" ] || { echo "imgconv $* wrote no $out" >&2; exit 1; }
    python3 -c "print(f'{$t1 - $t0:.4f}')"
}
# stats "t1 t2 ...": median min max
stats() {
    python3 -c "import statistics as s; v=[float(x) for x in '$1'.split()]; print(f'{s.median(v):.4f} {min(v):.4f} {max(v):.4f}')"
}
declare -A MED MIN MAX
measure() { # NAME OUT ARGS...
    local name=$1 out=$2
    shift 2
    t_run "$out" "$@" >/dev/null # warm-up
    local ts=""
    for _ in $(seq 1 "$RUNS"); do ts="$ts $(t_run "$out" "$@")"; done
    read -r MED[$name] MIN[$name] MAX[$name] <<<"$(stats "$ts")"
    echo "$name: median ${MED[$name]} s (min ${MIN[$name]}, max ${MAX[$name]})" >&2
}

ok_cuda() { "$IMGCONV" --backend cuda --overwrite -k 1 small.ppm probe.ppm >/dev/null 2>&1; }
ok_cuda || echo "wholejob: backend cuda is not usable here; its rows say n/a" >&2

measure big_cpu out.jpg --backend cpu -k gaussian:9 --quality 92 photo.jpg out.jpg
measure small_cpu out.ppm --backend cpu -k gaussian:3 small.ppm out.ppm
RECAL="n/a"
if ok_cuda; then
    measure big_cuda out.jpg --backend cuda -k gaussian:9 --quality 92 photo.jpg out.jpg
    measure small_cuda out.ppm --backend cuda -k gaussian:3 small.ppm out.ppm
    RECAL=$(t_run out.ppm --backend cuda --recalibrate -k gaussian:3 small.ppm out.ppm)
fi
TIME_CPU=$("$IMGCONV" --backend cpu -k gaussian:9 --quality 92 --time --overwrite photo.jpg out.jpg 2>&1 || true)
TIME_CUDA="n/a" EXPLAIN="n/a"
if ok_cuda; then
    TIME_CUDA=$("$IMGCONV" --backend cuda -k gaussian:9 --quality 92 --time --overwrite photo.jpg out.jpg 2>&1 || true)
    # module loading mode and where the planner's ceilings came from
    EXPLAIN=$("$IMGCONV" --backend cuda --explain --overwrite -k gaussian:3 small.ppm out.ppm 2>&1 |
        grep -E "module loading|ceilings" || true)
fi

# ---- --backend auto against the better of cpu and cuda ---------------------------
# The cases auto must get within 1.1x of the better backend (docs/backends.md,
# "Auto: the whole job"): whole processes of cpu, cuda and auto, median of
# AUTO_RUNS runs (default RUNS) after one warm-up run; the backend auto chose
# comes from one more run with --json.
AUTO_RUNS=${AUTO_RUNS:-$RUNS}
quick && AUTO_RUNS=1
NB1=500 NB2=2000
quick && NB1=16 NB2=64
"$IMGCONV" -k 1 photo.ppm photo.png
python3 - "$W" "$H" <<'EOF' || "$IMGCONV" --chart 1920x1080 hd.ppm
# a 1920x1080 crop of the photograph
import sys
w, h = int(sys.argv[1]), int(sys.argv[2])
with open("photo.ppm", "rb") as f:
    data = f.read()
head = data.split(b"\n", 3)
pix = head[3]
x0, y0 = (w - 1920) // 2, (h - 1080) // 2
rows = [pix[((y0 + y) * w + x0) * 3:((y0 + y) * w + x0 + 1920) * 3] for y in range(1080)]
with open("hd.ppm", "wb") as f:
    f.write(b"P6\n1920 1080\n255\n" + b"".join(rows))
EOF
"$IMGCONV" -k 1 --quality 92 hd.ppm hd.jpg
# 8K RGBA PNG: the photograph tiled to 7680x4320 with an alpha ramp (numpy),
# else the RGBA test chart
python3 - <<'EOF' 2>/dev/null || "$IMGCONV" --chart 7680x4320x4 rgba8k.png
import struct, zlib
import numpy as np
with open("photo.ppm", "rb") as f:
    parts = f.read().split(b"\n", 3)
w, h = map(int, parts[1].split())
img = np.frombuffer(parts[3], dtype=np.uint8).reshape(h, w, 3)
big = np.tile(img, (2, 2, 1))[:4320, :7680]
alpha = np.broadcast_to(np.linspace(64, 255, 7680).astype(np.uint8), (4320, 7680))
rgba = np.dstack([big, alpha])
raw = b"".join(b"\0" + rgba[y].tobytes() for y in range(4320))
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
with open("rgba8k.png", "wb") as f:
    f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 7680, 4320, 8, 6, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw, 1)) + chunk(b"IEND", b""))
EOF
python3 - <<'EOF'
import random
random.seed(31)
with open("k31.txt", "w") as f:
    for _ in range(31):
        f.write(" ".join(str(random.randint(1, 9)) for _ in range(31)) + "\n")
EOF
# HD photographs for the batches: 20 distinct ones (bench/make_photos.py, else
# charts of 20 seeds), copied to fill NB2 files
mkdir -p hdsrc
if python3 "$HERE/make_photos.py" hdsrc 20 1920 1080 7 >/dev/null 2>&1; then
    HD_SOURCE="bench/make_photos.py HD photographs"
else
    for i in $(seq 1 20); do "$IMGCONV" --chart 1920x1080 --seed "$i" "hdsrc/c$i.ppm"; done
    HD_SOURCE="HD test charts (no scikit-image)"
fi
mkdir -p hdjpg batch1 batch2
for f in hdsrc/*.ppm; do "$IMGCONV" -k 1 --quality 92 "$f" "hdjpg/$(basename "${f%.ppm}").jpg"; done
mapfile -t HDJ < <(ls hdjpg/*.jpg)
for i in $(seq 0 $((NB2 - 1))); do
    src=${HDJ[$((i % ${#HDJ[@]}))]}
    cp "$src" "batch2/p$(printf %05d "$i").jpg"
    [ "$i" -lt "$NB1" ] && cp "$src" "batch1/p$(printf %05d "$i").jpg"
done

# t_job OUT ARGS...: one process, wall seconds; OUT ending in / is a batch's
# OUTDIR (removed first, must hold files after).
t_job() {
    local out=$1
    shift
    rm -rf "${out%/}"
    local t0=$EPOCHREALTIME
    "$IMGCONV" "$@" >/dev/null 2>"$WORK/stderr" || {
        echo "imgconv $* failed: $(cat "$WORK/stderr")" >&2
        exit 1
    }
    local t1=$EPOCHREALTIME
    if [ "${out%/}" != "$out" ]; then
        [ -n "$(ls -A "$out")" ] || { echo "imgconv $* wrote nothing into $out" >&2; exit 1; }
    else
        [ -s "$out" ] || { echo "imgconv $* wrote no $out" >&2; exit 1; }
    fi
    python3 -c "print(f'{$t1 - $t0:.4f}')"
}
declare -A AMED ACHOSE
auto_case() { # KEY OUT ARGS...: cpu, cuda (when usable) and auto
    local key=$1 out=$2
    shift 2
    local be ts
    for be in cpu cuda auto; do
        [ "$be" = cuda ] && ! ok_cuda && continue
        t_job "$out" --backend "$be" "$@" >/dev/null # warm-up
        ts=""
        for _ in $(seq 1 "$AUTO_RUNS"); do ts="$ts $(t_job "$out" --backend "$be" "$@")"; done
        AMED[$key.$be]=$(echo "$ts" | tr ' ' '\n' | grep . | median)
        echo "auto case $key, $be: median ${AMED[$key.$be]} s" >&2
    done
    rm -rf "${out%/}"
    ACHOSE[$key]=$("$IMGCONV" --backend auto --json "$@" 2>/dev/null | tail -1 |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["backend"])' 2>/dev/null || echo "?")
}
auto_case tiny out.ppm -k gaussian:3 small.ppm out.ppm
auto_case hd out.jpg -k gaussian:9 --quality 92 hd.jpg out.jpg
auto_case bigjpg out.jpg -k gaussian:9 --quality 92 photo.jpg out.jpg
auto_case bigpng out.png -k gaussian:9 photo.png out.png
auto_case rgba out8k.png -k gaussian:9 rgba8k.png out8k.png
auto_case batch1 ob1/ -k gaussian:5 --quality 92 -q -o ob1 batch1
auto_case batch2 ob2/ -k gaussian:5 --quality 92 -q -o ob2 batch2
auto_case k31 out.jpg --kernel-file k31.txt --max-work 0 --quality 92 photo.jpg out.jpg
auto_case sigma40 out.jpg -k gaussian:sigma=40 --max-work 0 --quality 92 photo.jpg out.jpg
AUTO_ROWS=(
    "tiny|64x64 PPM, gaussian:3"
    "hd|1920x1080 JPEG, gaussian:9"
    "bigjpg|${W}x${H} JPEG, gaussian:9"
    "bigpng|${W}x${H} PNG, gaussian:9"
    "rgba|7680x4320 RGBA PNG, gaussian:9"
    "batch1|$NB1 HD JPEGs (batch), gaussian:5"
    "batch2|$NB2 HD JPEGs (batch), gaussian:5"
    "k31|${W}x${H} JPEG, a 31x31 kernel (random, full rank)"
    "sigma40|${W}x${H} JPEG, gaussian:sigma=40"
)
auto_row() { # KEY LABEL: | case | cpu | cuda | auto | chose | auto/best | met |
    python3 - "$2" "${AMED[$1.cpu]:-}" "${AMED[$1.cuda]:-}" "${AMED[$1.auto]:-}" "${ACHOSE[$1]:-?}" <<'EOF'
import sys
label, cpu, cuda, auto, chose = sys.argv[1:6]
vals = [float(v) for v in (cpu, cuda) if v]
best = min(vals) if vals else None
r = float(auto) / best if best and auto else None
fmt = lambda v: v if v else "n/a"
print(f"| {label} | {fmt(cpu)} | {fmt(cuda)} | {fmt(auto)} | {chose} | "
      + (f"{r:.2f}x | {'yes' if r <= 1.1 else 'no'} |" if r else "n/a | |"))
EOF
}

# ---- the table -----------------------------------------------------------------
row() { # CASE BACKEND KEY [TARGET_S]
    local m=${MED[$3]:-} target=${4:+<= $4 s} met=""
    if [ -z "$m" ]; then
        echo "| $1 | $2 | n/a | | | | ${target:-} | |"
        return
    fi
    [ -n "${4:-}" ] && met=$(python3 -c "print('yes' if $m <= $4 else 'no')")
    echo "| $1 | $2 | $m | ${MIN[$3]} | ${MAX[$3]} | $RUNS | ${target:-} | $met |"
}
ratio() { # A B TARGET: A/B
    local a=${MED[$1]:-} b=${MED[$2]:-} t=${3:-}
    [ -n "$a" ] && [ -n "$b" ] || { echo "n/a"; return; }
    python3 -c "r=$a/$b; print(f'{r:.2f}x' + ('' if '$t' == '' else (' (target <= $t' + 'x: ' + ('met' if r <= float('$t' or 0) else 'missed') + ')')))"
}
{
    echo "# Whole-process times, $STAMP"
    echo
    echo "\`bench/run.sh wholejob\` at commit $COMMIT on $(hostname) ($(machine));"
    echo "$("$IMGCONV" --version | head -1). Wall time of the whole \`imgconv\` process,"
    echo "median of $RUNS runs after one warm-up run. Big input: $SOURCE, ${W}x${H} RGB,"
    echo "JPEG quality 92, $JPEG_MB MB. Small input: the 64x64 RGB test chart (PPM)."
    echo
    echo "| case | backend | median s | min s | max s | runs | target | met |"
    echo "|---|---|---|---|---|---|---|---|"
    row "6000x4000 JPEG -> JPEG gaussian:9" cuda big_cuda 0.15
    row "6000x4000 JPEG -> JPEG gaussian:9" cpu big_cpu
    row "64x64 PPM gaussian:3" cpu small_cpu 0.05
    row "64x64 PPM gaussian:3" cuda small_cuda 0.15
    echo
    echo "- big, cuda / cpu: $(ratio big_cuda big_cpu 0.4)"
    echo "- small, cuda / cpu: $(ratio small_cuda small_cpu)"
    echo "- small, cuda, one run with \`--recalibrate\` (measures the GPU's copy and FMA"
    echo "  rates instead of reading them from ~/.cache/imgconv): $RECAL s"
    echo "- \`--explain\` of the small cuda case after the runs:"
    echo '```'
    echo "$EXPLAIN"
    echo '```'
    echo
    echo "Where the big case's time goes (\`--time\`, one run each):"
    echo
    echo '```'
    echo "\$ imgconv --backend cuda -k gaussian:9 --quality 92 --time photo.jpg out.jpg"
    echo "$TIME_CUDA"
    echo "\$ imgconv --backend cpu -k gaussian:9 --quality 92 --time photo.jpg out.jpg"
    echo "$TIME_CPU"
    echo '```'
    echo
    echo "## --backend auto against the better of cpu and cuda"
    echo
    echo "Whole processes, median of $AUTO_RUNS run(s) after one warm-up run each; \"chose\" is the"
    echo "backend of one more \`--backend auto --json\` run. Target: auto within 1.1x of the"
    echo "better of cpu and cuda. Batches: $HD_SOURCE, 20 distinct files copied to fill them."
    echo
    echo "| case | cpu s | cuda s | auto s | chose | auto / best | <= 1.1x |"
    echo "|---|---|---|---|---|---|---|"
    for r in "${AUTO_ROWS[@]}"; do auto_row "${r%%|*}" "${r#*|}"; done
} >"$RESULT"
cat "$RESULT"
