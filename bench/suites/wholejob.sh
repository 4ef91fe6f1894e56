# wholejob.sh - whole processes, as a user runs them: the wall time
# of `imgconv` from exec to exit, start-up, decode, filter, encode and write
# included, median of RUNS runs (default 7, at least 5) after one warm-up run
# (page cache, calibration cache):
#   big:   a 6000x4000 photograph, JPEG -> JPEG, gaussian:9 (quality 92),
#          --backend cuda and --backend cpu;
#   small: a 64x64 PPM -> PPM, gaussian:3, --backend cpu and --backend cuda;
#   plus one run of the small cuda case with --recalibrate (what a process
#   pays when the GPU's copy/FMA calibration is not cached yet).
# The photograph is one of scikit-image's bundled photographs (astronaut,
# else coffee/chelsea) upscaled to 6000x4000 with seeded sensor-like noise
# (sigma 4 levels, per channel) so that it compresses like camera output;
# without scikit-image, the test chart with the same noise (numpy), else the
# bare chart (the table says which). Then `--time` of the big case on both
# backends, for where the time goes.
#
# usage: bench/run.sh wholejob [PATH/TO/imgconv]
#   env RUNS (>= 5; --quick: 1), KEEP=1 keeps the work folder.
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
} >"$RESULT"
cat "$RESULT"
