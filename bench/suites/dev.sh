# dev.sh - one device call for the fast path's development: builds the
# benchmark and the GPU tests, runs the benchmark, the fast-path test, a
# register/SASS summary of the fast kernels and, with the time left, the
# differential GPU test, all into the run folder. Trial runs only: it writes
# no summary; the committed baseline comes from scripts/gpu-check.sh.
#   bench/run.sh dev   (env NCU=1 adds Nsight Compute sections; *_TIMEOUT)
set -uo pipefail
out=$LOGDIR
B=/tmp/bfast
cd "$ROOT"
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DIC_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
      >/dev/null || { echo "configure failed"; exit 1; }
cmake --build $B -j16 --target imgconv-bench test_gpu_fast test_gpu_diff imgconv-cli 2>&1 |
  grep -E "error|warning|NPP" | head -20
echo "build: $(( $(date +%s) - t0 )) s"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,power.draw,temperature.gpu \
           --format=csv,noheader
t0=$(date +%s)
timeout ${BENCH_TIMEOUT:-220} $B/imgconv-bench --out "$out" --stamp "${STAMP:-try}" \
  > "$out/bench-log.txt" 2>&1
echo "bench rc=$? $(( $(date +%s) - t0 )) s"
t0=$(date +%s)
timeout ${TEST_TIMEOUT:-120} $B/tests/test_gpu_fast > "$out/test-fast.txt" 2>&1
echo "test_gpu_fast rc=$? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|failures|passed|cases" "$out/test-fast.txt" | head -30
{
  for f in direct sep fft; do
    o=$B/CMakeFiles/imgconv.dir/src/cuda/fast/$f.cu.o
    cuobjdump -res-usage "$o" 2>/dev/null | grep -E "Function|REG" | paste - - | \
      sed -E 's/_ZN[0-9]+_GLOBAL__N__[0-9a-f_]+//' | cut -c1-200
    cuobjdump -sass "$o" 2>/dev/null | awk '
      /Function :/ {f=$3}
      /\/\*[0-9a-f]+\*\// {n[f]++; for (k in op) {}
        if ($0 ~ /FFMA/) a[f]++; if ($0 ~ /LDS/) b[f]++; if ($0 ~ /LDG/) c[f]++;
        if ($0 ~ /STS/) d[f]++; if ($0 ~ /LDC/) e[f]++; if ($0 ~ /I2F/) g[f]++;
        if ($0 ~ /LDL|STL/) l[f]++}
      END {for (f in n) printf "%s instr=%d FFMA=%d LDS=%d LDG=%d STS=%d LDC=%d I2F=%d local=%d\n",
           substr(f, 1, 90), n[f], a[f], b[f], c[f], d[f], e[f], g[f], l[f]}'
  done
} > "$out/sass.txt" 2>&1
t0=$(date +%s)
timeout ${DIFF_TIMEOUT:-60} $B/tests/test_gpu_diff > "$out/test-diff.txt" 2>&1
echo "test_gpu_diff rc=$? $(( $(date +%s) - t0 )) s"
grep -E "FAIL|failures|passed" "$out/test-diff.txt" | head -12
if [ -n "${NCU:-}" ] && command -v ncu >/dev/null; then
  $B/imgconv --chart 7680x4320 /tmp/chart8k.ppm >/dev/null 2>&1
  for spec in "sep gaussian:3" "direct gaussian:9" "sep gaussian:31"; do
    set -- $spec
    timeout 60 ncu --section SpeedOfLight --section Occupancy \
      --section LaunchStats -k regex:fast_ -c 1 $B/imgconv --backend cuda --tune method=$1 -k $2 \
      --border replicate /tmp/chart8k.ppm /tmp/o.ppm 2>&1 |
      grep -E "fast_|Duration|Throughput|Registers Per|Achieved Occupancy|Theoretical Occ|Block Limit" |
      sed "s/^/$1 $2: /" | cut -c1-160
  done > "$out/ncu.txt" 2>&1
fi
tail -n 4 "$out/bench-log.txt"
sed -n '/^## A/,$p' "$out/bench-${STAMP:-try}.md" | grep -v "^$" | cut -c1-230
