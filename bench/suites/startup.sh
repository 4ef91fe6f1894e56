# startup.sh - where a CUDA imgconv process loses its time: one
# readable report of
#   1. bench/probe/startup_probe (a process of its own): every one-time step
#      (CUDA context, nvJPEG handles hardware/default, hardware and hybrid
#      decode first/second, encoder first/second, 72 MiB pinned/device
#      allocations, imgconv's context, first/second ic_convolve small and big,
#      ic_gpu_codec_create), each with its own duration and the time since
#      exec; run twice (the first run also pays cold library page-ins), once
#      with the DEFAULT nvJPEG handle created first, and once with --concurrent
#      (the hardware and default handles and states made on two threads at
#      once: does nvJPEG serialise their creation inside?), and once with --why
#      (a DEFAULT handle, its states and destroys with logging allocators,
#      thread counts, and 1 ms stack samples of the creating thread: what is
#      inside the ~276 ms of each handle);
#   2. whole-process wall times and `--time --repeat 3` of imgconv on a
#      6000x4000 JPEG
#      (gaussian:9, JPEG out) and a 64x64 PPM (gaussian:3), cuda and cpu,
#      and the cuda cases again under CUDA_MODULE_LOADING=EAGER (the CUDA
#      runtime's own variable; lazy loading is the default since CUDA 12.2);
#      then an 80-image HD JPEG batch, twice per line, with the GPU codec's open
#      (on its own thread while the CPU workers decode; nvJPEG's objects made
#      side by side, as any codec of 4 slots or more) and IC_BATCH_DECODE=gpu (nvJPEG decodes every file,
#      the earlier default) or both (CPU workers and nvJPEG take files
#      from one list): wall, gpu_open_ms and decoded_by of each;
#   3. when `nsys` is on the PATH: Nsight Systems profiles of the two cuda
#      cases and of a 20-image HD JPEG batch (-o OUTDIR), with `nsys stats`
#      summaries (CUDA API calls by total time: cudaStreamSynchronize,
#      cudaMalloc, cudaHostAlloc, module loading...; kernels; OS runtime)
#      in text; the .nsys-rep files are kept in the run folder.
#
# usage: bench/run.sh startup [BUILD_DIR]
#   BUILD_DIR holds imgconv and startup_probe (a CUDA build with nvJPEG;
#   default: the build of the first imgconv found, build-gpu/ first).
set -uo pipefail
find_imgconv "${1:+$1/imgconv}"
B=$(dirname "$IMGCONV")
REPORT=$RESULT
BASE=$LOGDIR/startup
PROBE=$B/startup_probe
make_work startup
exec 3>"$REPORT"
say() { echo "$@" >&3; }
code() { say '```'; cat >&3; say '```'; }

say "# Start-up probe, $(date -u '+%Y-%m-%d %H:%M UTC')"
say
say "Machine: $(machine);"
say "commit $COMMIT; produced by bench/run.sh startup."

# ---- inputs --------------------------------------------------------------------
if python3 "$HERE/make_photos.py" "$WORK/big" 1 6000 4000 7 >/dev/null 2>"$WORK/photos.log"; then
    "$IMGCONV" --backend cpu --kernel 1 --quality 92 "$WORK/big/photo000.ppm" "$WORK/photo.jpg"
    SRC="a photograph (bench/make_photos.py)"
else
    "$IMGCONV" --chart 6000x4000 "$WORK/chart.ppm"
    "$IMGCONV" --backend cpu --kernel 1 --quality 92 "$WORK/chart.ppm" "$WORK/photo.jpg"
    SRC="the test chart (no scikit-image: $(tail -1 "$WORK/photos.log"))"
fi
"$IMGCONV" --chart 64x64 "$WORK/small.ppm"
mkdir -p "$WORK/hd" "$WORK/hdout"
if python3 "$HERE/make_photos.py" "$WORK/hdppm" 20 1920 1080 11 >/dev/null 2>&1; then
    for f in "$WORK"/hdppm/*.ppm; do
        "$IMGCONV" --backend cpu --kernel 1 --quality 92 "$f" "$WORK/hd/$(basename "${f%.ppm}").jpg"
    done
else
    for i in $(seq 1 20); do
        "$IMGCONV" --chart 1920x1080 --seed "$i" "$WORK/c$i.ppm"
        "$IMGCONV" --backend cpu --kernel 1 --quality 92 "$WORK/c$i.ppm" "$WORK/hd/c$i.jpg"
    done
fi
mkdir -p "$WORK/hd80"
for f in "$WORK"/hd/*.jpg; do
    for c in 1 2 3 4; do cp "$f" "$WORK/hd80/$c-$(basename "$f")"; done
done
say "Inputs: 6000x4000 JPEG q92 from $SRC, $(stat -c %s "$WORK/photo.jpg") bytes; 64x64 PPM chart;"
say "20 HD JPEGs for the batch profile, the same 4 times over (80 files) for the batch table."
say

# ---- 1. the probe ----------------------------------------------------------------
say "## 1. startup_probe: one-time costs, step by step"
say
say "'since exec' is the time since the process was exec'd; 'step' is the step's own time."
say "A step's call 1 minus its call 2 is the one-time cost a single-image process pays."
say
for args in "" "" "--default-first" "--concurrent" "--why"; do
    say "### startup_probe $args photo.jpg"
    say
    if [ -x "$PROBE" ]; then
        "$PROBE" $args "$WORK/photo.jpg" >"$WORK/probe.txt" 2>&1
        echo "(exit $?)" >>"$WORK/probe.txt"
        cat "$WORK/probe.txt" >&3
    else
        say "no $PROBE (not a CUDA build with nvJPEG)"
    fi
    say
done

# ---- 2. whole processes ----------------------------------------------------------
say "## 2. Whole processes: wall time and --time"
say
wall() { # OUT ARGS...: seconds of one imgconv process
    local out=$1
    shift
    rm -f "$out"
    local t0=$EPOCHREALTIME
    "$@" >"$WORK/stdout" 2>"$WORK/stderr"
    local rc=$? t1=$EPOCHREALTIME
    python3 -c "print(f'{$t1 - $t0:.4f} s (exit $rc)')"
}
cases=(
    "big cuda|$WORK/out.jpg|--backend cuda -k gaussian:9 --quality 92 $WORK/photo.jpg $WORK/out.jpg"
    "big cpu|$WORK/out.jpg|--backend cpu -k gaussian:9 --quality 92 $WORK/photo.jpg $WORK/out.jpg"
    "small cuda|$WORK/out.ppm|--backend cuda -k gaussian:3 $WORK/small.ppm $WORK/out.ppm"
    "small cpu|$WORK/out.ppm|--backend cpu -k gaussian:3 $WORK/small.ppm $WORK/out.ppm"
)
say "| case | env | run 1 | run 2 | run 3 |"
say "|---|---|---|---|---|"
for c in "${cases[@]}"; do
    IFS='|' read -r name out args <<<"$c"
    for env in "" "CUDA_MODULE_LOADING=EAGER"; do
        case "$name $env" in *cpu*EAGER*) continue ;; esac
        r=()
        for i in 1 2 3; do
            # shellcheck disable=SC2086 # args is a word list
            r+=("$(wall "$out" env $env "$IMGCONV" $args)")
        done
        say "| $name | ${env:-default} | ${r[0]} | ${r[1]} | ${r[2]} |"
    done
done
say
for c in "${cases[@]}"; do
    IFS='|' read -r name out args <<<"$c"
    say "\`imgconv $args --time --repeat 3\` ($name; first run against the median: one-time costs):"
    say
    # shellcheck disable=SC2086
    "$IMGCONV" $args --overwrite --time --repeat 3 2>&1 | sed "s|$WORK/||g" | code
    say
done
say "Batch of 80 HD JPEGs (gaussian:5, -o DIR, --json summary; gpu_open_ms: the GPU codec's"
say "open on its thread, decoded_by: files per decoder):"
say
say "| backend | IC_BATCH_DECODE | wall | gpu_open_ms | decoded_by | exit |"
say "|---|---|---|---|---|---|"
for combo in "cuda both" "cuda gpu" "cpu -"; do
    read -r be dec <<<"$combo"
    for _ in 1 2; do
        rm -rf "$WORK/hdout"
        t0=$EPOCHREALTIME
        IC_BATCH_DECODE=${dec/-/both} "$IMGCONV" --backend "$be" \
            -k gaussian:5 --quality 92 -q --json -o "$WORK/hdout" "$WORK/hd80" >"$WORK/batch.json" 2>&1
        rc=$?
        t1=$EPOCHREALTIME
        say "| $be | $dec | $(python3 -c "print(f'{$t1 - $t0:.3f} s')") | $(python3 -c '
import json, sys
try:
    d = json.load(open(sys.argv[1]))
    print(d.get("gpu_open_ms"), "|", d.get("decoded_by"))
except Exception as e:
    print("-", "|", "no JSON:", e)' "$WORK/batch.json") | $rc |"
    done
done
say
say "Last --json summary (cpu):"
code <"$WORK/batch.json"
say

# ---- 3. Nsight Systems ---------------------------------------------------------------
say "## 3. Nsight Systems"
say
if command -v nsys >/dev/null 2>&1; then
    say "$(nsys --version 2>&1 | head -1)"
    say
    prof() { # NAME ARGS...
        local name=$1
        shift
        nsys profile --force-overwrite true --trace=cuda,osrt,nvtx --sample=none --cpuctxsw=none \
            -o "$BASE-$name" "$@" >"$WORK/nsys.log" 2>&1 || { say "nsys profile $name failed:"; tail -5 "$WORK/nsys.log" | code; return; }
        say "### $name: \`$(echo "$*" | sed "s|$WORK/||g;s|$B/||g")\`"
        say
        nsys stats --force-export true --report cuda_api_sum,cuda_gpu_kern_sum,cuda_gpu_mem_time_sum,osrt_sum \
            --format csv -o "$WORK/st-$name" "$BASE-$name.nsys-rep" >/dev/null 2>&1
        for f in "$WORK"/st-"$name"_*.csv; do
            [ -f "$f" ] || continue
            local rep=${f##*/st-"${name}"_}
            say "${rep%.csv} (top 25 by time):"
            head -26 "$f" | code
            say
        done
        nsys stats --report cuda_api_trace --format csv "$BASE-$name.nsys-rep" 2>/dev/null |
            head -120 >"$BASE-$name-api-trace.csv"
        say "First 120 CUDA API calls in order: $(basename "$BASE")-$name-api-trace.csv; timeline: $(basename "$BASE")-$name.nsys-rep"
        say
    }
    prof big "$IMGCONV" --backend cuda --overwrite -k gaussian:9 --quality 92 "$WORK/photo.jpg" "$WORK/out.jpg"
    prof small "$IMGCONV" --backend cuda --overwrite -k gaussian:3 "$WORK/small.ppm" "$WORK/out.ppm"
    rm -rf "$WORK/hdout"
    prof batch "$IMGCONV" --backend cuda -k gaussian:5 --quality 92 -q -o "$WORK/hdout" "$WORK/hd"
else
    say "nsys is not on the PATH: skipped."
fi
exec 3>&-
cat "$REPORT"
