#!/usr/bin/env bash
# gpu-check.sh - the one GPU run: configure with CUDA for the local GPU, build,
# run the whole ctest suite (GPU tests run instead of skipping), run
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the GPU
# tests, and run the benchmark. Writes a log and a summary (device, driver,
# date, commit, tests passed/failed/skipped, sanitizer error counts) to $OUT
# (the device tool's folder) or bench/results/ when OUT is unset.
#
#   scripts/gpu-check.sh [all|test|san|bench|ncu|batch|stream|wholejob]...
#     (default all = test san bench; several allowed)
#   test: ctest (IC_CTEST_REGEX=... runs only matching tests); bench:
#   imgconv-bench (IC_BENCH_TABLES=letters runs a subset, see its --help);
#   ncu: Nsight Compute sections of the fast-path kernels on 8K and HD images
#   (into the log); batch / stream: bench/batch-compare.sh and
#   bench/stream-bench.sh with this build (peers from ./peers-bundle when
#   carried: scripts/pack-peers.sh); wholejob: bench/wholejob.sh, whole
#   processes (6000x4000 JPEG and 64x64 PPM, cuda and cpu, medians).
#   IC_COMMIT=<hash> names the commit when .git is not present.
#   IC_SAN_TOOLS="memcheck racecheck synccheck initcheck" picks the sanitizers,
#   IC_SAN_BUDGET (s) bounds their total time, IC_SAN_CASES their case count,
#   IC_SAN_TIMEOUT (s) each run, IC_SAN_TESTS (a glob) which test binaries.
set -uo pipefail
cd "$(dirname "$0")/.."
what=" ${*:-all} "
has() {
  case "$what" in *" $1 "*) return 0 ;; esac
  case "$1" in test|san|bench) case "$what" in *" all "*) return 0 ;; esac ;; esac
  return 1
}
out=${OUT:-bench/results}
mkdir -p "$out"
stamp=$(date -u +%Y%m%dT%H%M%SZ)
log="$out/gpu-check-$stamp.log"
summary="$out/gpu-summary-$stamp.md"
commit=${IC_COMMIT:-$(git rev-parse --short HEAD 2>/dev/null || echo unknown)}
jobs=$(nproc 2>/dev/null || echo 8)
exec > >(tee -a "$log") 2>&1

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
arch=${IC_CUDA_ARCH:-${cc:-90}}
echo "== imgconv gpu-check $stamp: commit $commit, device '${gpu_name:-none}', driver ${driver:-?}, sm_$arch"
nvcc --version | tail -1

B=build-gpu
t0=$(date +%s)
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DIC_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      -DIC_WERROR=OFF >/dev/null || { echo "configure failed"; exit 1; }
cmake --build $B -j "$jobs" 2>&1 | grep -E "warning|error|Error" | head -50
cmake --build $B -j "$jobs" >/dev/null 2>&1 || { echo "BUILD FAILED"; cmake --build $B 2>&1 | tail -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

passed=0 failed=0 skipped=0 san_summary="not run" ctest_line="not run" bench_line="not run"
if has test; then
  t0=$(date +%s)
  ctest --test-dir $B --output-on-failure -j 8 --timeout 400 ${IC_CTEST_REGEX:+-R "$IC_CTEST_REGEX"} \
    > "$out/ctest-$stamp.txt" 2>&1
  cat "$out/ctest-$stamp.txt" | grep -E "Test +#|tests passed|Failed|Not Run|SKIPPED|\*\*\*" | tail -80
  passed=$(grep -cE "Test +#.* Passed" "$out/ctest-$stamp.txt")
  failed=$(grep -cE "Test +#.*(\*\*\*Failed|\*\*\*Exception|\*\*\*Timeout|Failed )" "$out/ctest-$stamp.txt")
  skipped=$(grep -cE "Test +#.*Skipped" "$out/ctest-$stamp.txt")
  ctest_line="$passed passed, $failed failed, $skipped skipped"
  echo "ctest: $ctest_line ($(( $(date +%s) - t0 )) s)"
fi

if has san; then

  # compute-sanitizer over the GPU test binaries, in their quick mode (fewer,
  # smaller cases: IC_TEST_QUICK=1, ICT_CASES=24), within a time budget so the
  # whole call stays inside the device limit; runs that do not fit are listed
  # as not run, never counted as clean.
  san_summary=""
  san_budget=${IC_SAN_BUDGET:-240}
  san_t0=$(date +%s)
  if command -v compute-sanitizer >/dev/null 2>&1; then
    for tool in ${IC_SAN_TOOLS:-memcheck racecheck synccheck initcheck}; do
      errs=0 runs=0 skipped_runs=0
      for bin in $B/tests/${IC_SAN_TESTS:-test_gpu_*}; do
        [ -x "$bin" ] || continue
        if [ $(( $(date +%s) - san_t0 )) -gt "$san_budget" ]; then
          echo "sanitizer $tool $(basename $bin): NOT RUN (time budget spent)"
          skipped_runs=$((skipped_runs + 1))
          continue
        fi
        extra=""
        [ $tool = memcheck ] && extra="--leak-check full"
        r=$(IC_TEST_QUICK=1 ICT_CASES=${IC_SAN_CASES:-8} timeout ${IC_SAN_TIMEOUT:-150} compute-sanitizer --tool $tool $extra \
              --error-exitcode 99 "$bin" 2>&1)
        rc=$?
        n=$(printf '%s\n' "$r" | grep -oE "ERROR SUMMARY: [0-9]+" | awk '{s+=$3} END {print s+0}')
        if [ "$rc" -eq 124 ]; then
          echo "sanitizer $tool $(basename $bin): TIMEOUT after ${IC_SAN_TIMEOUT:-150} s"
          skipped_runs=$((skipped_runs + 1))
          continue
        fi
        [ "$rc" -ne 0 ] && [ "$n" -eq 0 ] && [ "$rc" -ne 77 ] && n=1
        echo "sanitizer $tool $(basename $bin): rc=$rc errors=$n"
        [ "$n" -gt 0 ] && printf '%s\n' "$r" | grep -E "=========" | head -20
        errs=$((errs + n))
        runs=$((runs + 1))
      done
      san_summary="$san_summary $tool=$errs errors in $runs runs${skipped_runs:+ ($skipped_runs not run)};"
    done
  else
    san_summary="compute-sanitizer not found"
  fi
  echo "sanitizers:$san_summary"
fi

if has bench; then
  if [ -x $B/imgconv-bench ]; then
    t0=$(date +%s)
    if $B/imgconv-bench --out "$out" --stamp "$stamp" ${IC_BENCH_TABLES:+--tables "$IC_BENCH_TABLES"}; then
      bench_line="bench-$stamp.md / .json / .png"
    else
      bench_line="FAILED (rc=$?)"
      echo "benchmark $bench_line"
    fi
    echo "bench: $(( $(date +%s) - t0 )) s"
  else
    echo "benchmark: no imgconv-bench in this build"
  fi
fi

if has ncu; then
  # Hardware counters of the fast-path kernels (issue 4's profile evidence):
  # speed of light, occupancy, launch statistics and warp stall reasons, one
  # launch of each kernel per case, clocks not locked (--clock-control none).
  t0=$(date +%s)
  if command -v ncu >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    $B/imgconv --chart 7680x4320 "$tmp/8k.ppm" && $B/imgconv --chart 1920x1080 "$tmp/hd.ppm"
    r9=$(awk 'BEGIN{srand(9); for(i=0;i<9;i++){r=""; for(j=0;j<9;j++) r=r sprintf("%.3f ", rand()); printf "%s%s", r, (i<8?"; ":"")}}')
    for c in "hd gaussian:3" "8k gaussian:3" "8k gaussian:9" "8k r9" "8k gaussian:15" "8k gaussian:31"; do
      set -- $c
      k=$2; [ "$k" = r9 ] && k="$r9 / 40"
      echo "== ncu: $1 RGB, kernel $2, backend cuda"
      timeout 120 ncu --clock-control none --kernel-name regex:'rows_kernel|fast_sep_kernel|fast_direct_kernel' \
        --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
        --section WarpStateStats --section ComputeWorkloadAnalysis \
        $B/imgconv --backend cuda --border replicate -k "$k" "$tmp/$1.ppm" "$tmp/out.ppm" 2>&1 |
        grep -vE "^==PROF==|^\s*$|----" | head -120
    done
    rm -rf "$tmp"
  else
    echo "ncu: not found"
  fi
  echo "ncu: $(( $(date +%s) - t0 )) s"
fi

if has batch && [ -x bench/batch-compare.sh ]; then
  t0=$(date +%s)
  RESULT="$out/batch-compare-$stamp.md" bench/batch-compare.sh "$B/imgconv" || echo "batch-compare failed (rc=$?)"
  echo "batch: $(( $(date +%s) - t0 )) s"
fi

if has stream && [ -x bench/stream-bench.sh ]; then
  t0=$(date +%s)
  RESULT="$out/stream-$stamp.md" bench/stream-bench.sh "$B/imgconv" cuda || echo "stream-bench failed (rc=$?)"
  echo "stream: $(( $(date +%s) - t0 )) s"
fi

if has wholejob && [ -x bench/wholejob.sh ]; then
  t0=$(date +%s)
  RESULT="$out/wholejob-$stamp.md" IC_COMMIT=$commit bench/wholejob.sh "$B/imgconv" ||
    echo "wholejob failed (rc=$?)"
  echo "wholejob: $(( $(date +%s) - t0 )) s"
fi

{
  echo "# imgconv GPU check $stamp"
  echo
  echo "| item | value |"
  echo "|---|---|"
  echo "| device | ${gpu_name:-none} (sm_$arch) |"
  echo "| driver | ${driver:-?} |"
  echo "| nvcc | $(nvcc --version | tail -1) |"
  echo "| date (UTC) | $(date -u '+%Y-%m-%d %H:%M') |"
  echo "| commit | $commit |"
  echo "| modes run | ${what# } |"
  echo "| ctest | $ctest_line |"
  echo "| compute-sanitizer | ${san_summary# } |"
  echo "| benchmark | $bench_line |"
} > "$summary"
cat "$summary"
