#!/usr/bin/env bash
# gpu-check.sh - the one GPU run: configure with CUDA for the local GPU, build,
# run the whole ctest suite (GPU tests run instead of skipping), run
# compute-sanitizer (memcheck, racecheck, synccheck, initcheck) over the GPU
# tests, and run the benchmark. Each mode's summary replaces its file in
# bench/results/ (gpu-check.md: device, driver, date, commit, tests
# passed/failed/skipped, sanitizer error counts; kernels.md, peers.md,
# sanitizers.md, ratio.md, python.md, and the bench/run.sh suites' own);
# logs and raw files go to a run folder, $OUT/gpu-check-STAMP (the device
# tool's folder, which also gets a copy of bench/results/) or
# build/bench-logs/gpu-check-STAMP when OUT is unset.
#
#   scripts/gpu-check.sh [all|test|san|bench|peers|ncu|ncubench|ncutimes|ncusrc|ncujob|fftjob|ratio|batch|photos|jpeg|stream|wholejob|python|startup|png]...
#     (default all = test san bench; several allowed)
#   test: ctest (IC_CTEST_REGEX=... runs only matching tests); bench:
#   imgconv-bench (IC_BENCH_TABLES=letters runs a subset, see its --help);
#   peers: imgconv against NPP and CV-CUDA (peers.md, bench/peers_table.py):
#   imgconv-bench's seed, large-kernel and calibration tables (A B E F H N, NPP
#   side by side, plus a batch table when --help lists one; IC_PEERS_TABLES
#   overrides) and CV-CUDA on the same cells (bench/cvcuda_cells.py ->
#   cvcuda-STAMP.json in the run folder), CV-CUDA unpacked from .cvc/ when carried (made by
#   ../shared/peers/cvcuda/prepare.sh .cvc), then `imgconv --explain` on
#   5 calibration cases appended; about 2 minutes after the build.
#   ncu: Nsight Compute sections of the fast-path kernels on 8K and HD images
#   (into the log); ncubench: the same inside imgconv-bench with stall reasons
#   (IC_NCU_BENCH=TABLES:KERNEL-REGEX:SKIP ..., see below)
#   ncutimes: the duration of every kernel launch matching a regex inside
#   imgconv-bench (IC_NCU_TIMES=TABLES:KERNEL-REGEX:COUNT ..., default
#   E:fft:60, the FFT method's own kernels and cuFFT's), one line each, into
#   the log: where a multi-kernel method's time goes
#   ncusrc: Nsight Compute's source page (SASS, per-instruction executions
#   and stall samples, CSV) of one launch inside imgconv-bench into
#   ncu-src-STAMP-N.csv in the run folder (IC_NCU_SRC=TABLES:KERNEL-REGEX:SKIP ...)
#   ncujob: Nsight Compute on one `imgconv` process (8K RGB chart, full-rank
#   31x31): the first launch of the kernels matching IC_NCU_JOB (regex,
#   default fast_tensor), with stall reasons (into the log)
#   fftjob: the FFT method as a user meets it, whole `imgconv` processes on an
#   8K RGB chart with a full-rank 31x31 kernel, --tune fft-fuse=always (the
#   multiply as a cuFFT callback, linked when the plan is made) and =never, 3
#   runs each with -t, and how many output bytes the two differ in (into the log)
#   (into the log); ratio: seed 003 Fig 7.14's arithmetic-to-global-memory
#   ratio measured with Nsight Compute counters for every tiled backend, 5x5
#   and 9x9 on HD RGB, next to imgconv-bench's formula table (ratio.md, the
#   raw ncu CSV in the run folder; about 2 minutes); batch / stream:
#   bench/run.sh batch and bench/run.sh stream with this build (peers from
#   ./peers-bundle when carried: scripts/pack-peers.sh); photos: bench/run.sh
#   batch with SETS="photo-jpeg photo-png" (500 photograph-like 1920x1080
#   images, gaussian:5, cuda vs cpu vs vips: the batch targets; N=... fewer;
#   IC_PHOTO_SETS="photo-jpeg" runs one set; IMGCONV_ARGS adds a second cuda row);
#   wholejob: bench/run.sh wholejob, whole processes (6000x4000 JPEG and 64x64
#   PPM, cuda and cpu, medians; the single-image targets).
#   jpeg: bench/run.sh gpu-jpeg: one 6000x4000 JPEG, cuda vs cuda --codec cpu
#   vs cpu, then tests/gpu/test_gpu_jpeg's per-case decode differences.
#   startup: bench/run.sh startup, where a CUDA process's time goes (startup.md):
#   bench/probe/startup_probe's one-time costs step by step (context, nvJPEG
#   handles, first/second decode, encode, allocations, first/second ic_convolve),
#   whole-process times and --time of the 6000x4000 JPEG and 64x64 cases (also
#   under CUDA_MODULE_LOADING=EAGER), a 20-image HD batch, and Nsight Systems
#   profiles with `nsys stats` summaries when nsys is installed (about 2 minutes).
#   png: bench/run.sh png (png.md): PNG size, encode and decode
#   MB/s of imgconv (default, --compression 1..9) vs libvips and ImageMagick
#   (peers from ./peers-bundle when carried) on five 2048x2048 images; CPU only,
#   about 5 minutes on 16 cores (RUNS=3 ... faster, IMAGES=... a subset).
#   python: the Python package's tests verbosely (the CuPy/PyTorch device path
#   of python/tests/test_device.py included) and bench/dask_scaling.py on this
#   machine's cores plus one GPU worker (dask.md; python.md the test lines). Wheels the
#   machine lacks (pytest, distributed, ...; no network there) travel in .whl/
#   (carry it) and are installed into /tmp/site first, for ctest's python test too.
#   IC_COMMIT=<hash> names the commit when .git is not present.
#   IC_SAN_TOOLS="memcheck racecheck synccheck initcheck" picks the sanitizers,
#   IC_SAN_BUDGET (s) bounds their total time, IC_SAN_CASES their case count,
#   IC_SAN_TIMEOUT (s) each run, IC_SAN_TESTS (a glob) which test binaries.
#   IC_SAN_PARTS="test_gpu_diff:12 test_gpu_fast:10" splits those binaries into
#   that many processes (ICT_PART=k/N), each under IC_SAN_TIMEOUT. Racecheck
#   runs test_gpu_diff's big sizes at 480p only (ICT_BIG_SIZES=1).
set -uo pipefail
cd "$(dirname "$0")/.."
. bench/lib.sh
what=" ${*:-all} "
has() {
  case "$what" in *" $1 "*) return 0 ;; esac
  case "$1" in test|san|bench) case "$what" in *" all "*) return 0 ;; esac ;; esac
  return 1
}
stamp=$STAMP
device_out=${OUT:-}
out=${OUT:-build/bench-logs}/gpu-check-$stamp
mkdir -p "$out"
out=$(cd "$out" && pwd)
results=bench/results
log="$out/gpu-check.log"
summary="$out/gpu-check.md"
commit=$COMMIT
jobs=$(nproc 2>/dev/null || echo 8)
exec > >(tee -a "$log") 2>&1

gpu_name=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
driver=$(nvidia-smi --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -1)
cc=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1 | tr -d .)
arch=${IC_CUDA_ARCH:-${cc:-90}}
echo "== imgconv gpu-check $stamp: commit $commit, device '${gpu_name:-none}', driver ${driver:-?}, sm_$arch"
nvcc --version | tail -1

B=build-gpu
mkdir -p $B
t0=$(date +%s)
# The GPU machine lacks libdeflate, libtiff, libwebp and KissFFT headers: a carried
# codecs-bundle (scripts/pack-codecs.sh) gives it the coders a user's install has.
prefix=()
if [ -d codecs-bundle/lib ]; then
  prefix=(-DCMAKE_PREFIX_PATH="$PWD/codecs-bundle")
  # libtiff's own dependencies (libLerc, libjbig) are found through the path,
  # as a system's would be: RUNPATH does not reach a library's dependencies.
  export LD_LIBRARY_PATH=$PWD/codecs-bundle/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  echo "codecs from codecs-bundle: $(head -1 codecs-bundle/MANIFEST)"
fi
cmake -S . -B $B -DCMAKE_BUILD_TYPE=Release -DIC_CUDA=ON -DCMAKE_CUDA_ARCHITECTURES="$arch" \
      -DIC_WERROR=OFF "${prefix[@]}" >"$B/configure.log" 2>&1 || { echo "configure failed"; tail -20 "$B/configure.log"; exit 1; }
# What this machine's build has (formats, PNG writer, nvJPEG, NPP): figures depend on it.
grep -E "^-- imgconv:" "$B/configure.log"
cmake --build $B -j "$jobs" 2>&1 | grep -E "warning|error|Error" | head -50
cmake --build $B -j "$jobs" >/dev/null 2>&1 || { echo "BUILD FAILED"; cmake --build $B 2>&1 | tail -40; exit 1; }
echo "build: $(( $(date +%s) - t0 )) s"

if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl >/dev/null 2>&1 && export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH} &&
    echo "wheels from .whl installed into /tmp/site" || echo "installing .whl failed"
fi

passed=0 failed=0 skipped=0 san_summary="not run" ctest_line="not run" bench_line="not run"
ratio_line="not run" peers_line="not run" calib_line="not run"
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
        # a binary named in IC_SAN_PARTS as NAME:N runs as N processes, each
        # with ICT_PART=k/N (every N-th section of the test), each within
        # IC_SAN_TIMEOUT: the slow tools on the long tests
        nparts=1
        for p in ${IC_SAN_PARTS-test_gpu_diff:12 test_gpu_fast:10}; do
          [ "${p%%:*}" = "$(basename $bin)" ] && nparts=${p##*:}
        done
        for k in $(seq 1 $nparts); do
          label=$(basename $bin)
          part=""
          [ "$nparts" -gt 1 ] && part=$k/$nparts && label="$label [part $part]"
          if [ $(( $(date +%s) - san_t0 )) -gt "$san_budget" ]; then
            echo "sanitizer $tool $label: NOT RUN (time budget spent)" | tee -a "$out/san.txt"
            skipped_runs=$((skipped_runs + 1))
            continue
          fi
          extra=""
          [ $tool = memcheck ] && extra="--leak-check full"
          ts=$(date +%s)
          # racecheck: test_gpu_diff's big sizes at 480p only (ICT_BIG_SIZES)
          bigs=""
          [ $tool = racecheck ] && bigs=1
          r=$(ICT_PART=$part ICT_BIG_SIZES=$bigs IC_TEST_QUICK=1 ICT_CASES=${IC_SAN_CASES:-8} timeout ${IC_SAN_TIMEOUT:-150} \
                compute-sanitizer --tool $tool $extra --error-exitcode 99 "$bin" 2>&1)
          rc=$?
          n=$(printf '%s\n' "$r" | grep -oE "ERROR SUMMARY: [0-9]+" | awk '{s+=$3} END {print s+0}')
          if [ "$rc" -eq 124 ]; then
            echo "sanitizer $tool $label: TIMEOUT after ${IC_SAN_TIMEOUT:-150} s" | tee -a "$out/san.txt"
            skipped_runs=$((skipped_runs + 1))
            continue
          fi
          [ "$rc" -ne 0 ] && [ "$n" -eq 0 ] && [ "$rc" -ne 77 ] && n=1
          echo "sanitizer $tool $label: rc=$rc errors=$n ($(( $(date +%s) - ts )) s)" | tee -a "$out/san.txt"
          [ "$n" -gt 0 ] && printf '%s\n' "$r" | grep -E "=========" | head -20
          errs=$((errs + n))
          runs=$((runs + 1))
        done
      done
      san_summary="$san_summary $tool=$errs errors in $runs runs${skipped_runs:+ ($skipped_runs not run)};"
    done
  else
    san_summary="compute-sanitizer not found"
  fi
  echo "sanitizers:$san_summary"
  {
    echo "# compute-sanitizer over the GPU tests (quick mode)"
    echo
    echo "Totals:$san_summary"
    echo
    echo '```'
    cat "$out/san.txt" 2>/dev/null
    echo '```'
  } > "$out/sanitizers.md"
  publish "$out/sanitizers.md" "$results/sanitizers.md" "scripts/gpu-check.sh san"
fi

if has bench; then
  if [ -x $B/imgconv-bench ]; then
    t0=$(date +%s)
    if $B/imgconv-bench --out "$out" --stamp "$stamp" ${IC_BENCH_TABLES:+--tables "$IC_BENCH_TABLES"}; then
      bench_line="kernels.md (raw: bench-$stamp.md / .json / .png)"
      publish "$out/bench-$stamp.md" "$results/kernels.md" "scripts/gpu-check.sh bench${IC_BENCH_TABLES:+ (IC_BENCH_TABLES=$IC_BENCH_TABLES)}"
    else
      bench_line="FAILED (rc=$?)"
      echo "benchmark $bench_line"
    fi
    echo "bench: $(( $(date +%s) - t0 )) s"
  else
    echo "benchmark: no imgconv-bench in this build"
  fi
fi

# peers_merge BENCH_JSON [CVCUDA_JSON]: the peers table from imgconv-bench's
# JSON (and CV-CUDA's figures when given); sets peers_line and calib_line.
peers_merge() {
  local m
  if ! command -v python3 >/dev/null 2>&1; then
    peers_line="python3 not found"
    return
  fi
  if m=$(python3 bench/peers_table.py --bench "$1" ${2:+--cvcuda "$2"} \
           --out-md "$out/peers-$stamp.md" --out-json "$out/peers-$stamp.json" \
           --note "device: ${gpu_name:-?} (sm_$arch), driver ${driver:-?}; commit $commit"); then
    echo "$m"
    peers_line="peers.md: ${m#issue 17: }"
    calib_line="${m##*planner right }"
    calib_line="right F ${calib_line#F }, within 5% of the fastest forced method (peers.md)"
  else
    peers_line="merge FAILED (see the log)"
  fi
}
# a full bench run carries the tables against NPP and the planner's
# calibration, so the summary has them (peers, when asked for, redoes it)
if has bench && [ -f "$out/bench-$stamp.json" ] && ! has peers &&
   case "${IC_BENCH_TABLES:-ABEFH}" in *F*|*H*) true ;; *) false ;; esac; then
  peers_merge "$out/bench-$stamp.json"
  [ -f "$out/peers-$stamp.md" ] && publish "$out/peers-$stamp.md" "$results/peers.md" "scripts/gpu-check.sh bench"
fi

if has peers; then
  # imgconv against NPP and CV-CUDA on the same cells, and the planner's
  # calibration against every forced method.
  t0=$(date +%s)
  if [ ! -x $B/imgconv-bench ]; then
    peers_line="no imgconv-bench in this build"
  else
    pstamp=$stamp
    if has bench && [ -z "${IC_BENCH_TABLES:-}" ] && [ -f "$out/bench-$stamp.json" ]; then
      echo "peers: tables from this run's full benchmark (bench-$stamp.json)"
    else
      has bench && pstamp=$stamp-peers # keep the bench mode's own files
      tables=${IC_PEERS_TABLES:-ABEFHKN$($B/imgconv-bench --help 2>&1 | grep -oE '\b[A-Z]: batch' | cut -c1 | tr -d '\n')}
      echo "peers: imgconv-bench --tables $tables"
      $B/imgconv-bench --out "$out" --stamp "$pstamp" --tables "$tables" ||
        echo "peers: imgconv-bench failed (rc=$?)"
    fi
    cvc_json=""
    if [ -d .cvc ] && ls .cvc/libcvcuda-*.xz >/dev/null 2>&1 && [ -f .cvc/unpack.sh ]; then
      site=$(mktemp -d /tmp/cvc-site.XXXXXX)
      if bash .cvc/unpack.sh "$site" &&
         PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} python3 -c "import torch, cvcuda" 2>"$site/err"; then
        PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} timeout 300 python3 bench/cvcuda_cells.py \
          "$out/cvcuda-$stamp.json" ${IC_PEERS_REPS:+--reps "$IC_PEERS_REPS"} --imgconv "$B/imgconv" ||
          echo "peers: cvcuda_cells.py rc=$? (failed cells are listed in cvcuda-$stamp.json)"
        [ -s "$out/cvcuda-$stamp.json" ] && cvc_json="$out/cvcuda-$stamp.json"
      else
        echo "peers: CV-CUDA does not import here: $(tail -1 "$site/err" 2>/dev/null)"
      fi
      rm -rf "$site"
    else
      echo "peers: no .cvc/ in this tree (make it with bash ../shared/peers/cvcuda/prepare.sh .cvc and carry it): CV-CUDA not measured, NPP only"
    fi
    if [ -f "$out/bench-$pstamp.json" ]; then
      peers_merge "$out/bench-$pstamp.json" "$cvc_json"
    else
      peers_line="no bench-$pstamp.json (imgconv-bench failed)"
    fi
    # what the CLI's --explain says on the calibration cases (the plan's
    # candidates and ceilings), appended to the table
    if [ -f "$out/peers-$stamp.md" ]; then
      tmp=$(mktemp -d)
      r31=$(awk 'BEGIN{srand(31); s=0; t=""; for(i=0;i<31;i++){for(j=0;j<31;j++){w=1+int(9*rand()); s+=w;
        t=t w (j<30?" ":"")} t=t (i<30?"; ":"")} printf "%s / %d", t, s}')
      $B/imgconv --chart 7680x4320 "$tmp/8k.ppm" && $B/imgconv --chart 1920x1080 "$tmp/hd.ppm"
      {
        echo
        echo "## \`imgconv --backend cuda --explain\` on calibration cases"
        for c in "hd gaussian:3" "hd gaussian:9" "8k gaussian:3" "8k gaussian:31" "8k r31"; do
          set -- $c
          k=$2; [ "$k" = r31 ] && k=$r31
          echo
          echo "$1 RGB, kernel $2:"
          echo
          echo '```'
          $B/imgconv --backend cuda --border replicate --explain -k "$k" "$tmp/$1.ppm" "$tmp/o.ppm" 2>&1 |
            sed -n '/^  factors/,/^  output/p' | sed '$d'
          echo '```'
        done
      } >> "$out/peers-$stamp.md"
      rm -rf "$tmp"
      publish "$out/peers-$stamp.md" "$results/peers.md" "scripts/gpu-check.sh peers"
    fi
  fi
  echo "peers: $(( $(date +%s) - t0 )) s"
fi

if has ncu; then
  # Hardware counters of the fast-path kernels (the profile evidence):
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

# Nsight Compute on the kernels matching REGEX inside `imgconv-bench --tables
# TABLES` (the ncubench and ncutimes modes): ncu_bench TABLES REGEX NCU-ARGS...
ncu_bench() {
  local tb=$1 kre=$2
  shift 2
  timeout 150 ncu --clock-control none --kernel-name regex:"$kre" "$@" \
    $B/imgconv-bench --out "$tmp" --stamp ncu --tables "$tb"
}

if has ncubench || has ncutimes; then
  t0=$(date +%s)
  if command -v ncu >/dev/null 2>&1; then
    tmp=$(mktemp -d)
    # ncubench: the kernels as the benchmark launches them (whole images,
    # rotating inputs), with the warp stall reasons per issued instruction.
    # IC_NCU_BENCH lists TABLES:KERNEL-REGEX:SKIP triples (profile launch
    # SKIP+1 of the matching kernels of `imgconv-bench --tables TABLES`);
    # LaunchStats shows the grid, so which launch it was can be checked.
    # IC_NCU_METRICS adds metrics (comma-separated, regex: allowed), e.g. the
    # executed instruction mix: regex:smsp__sass_thread_inst_executed_op_.*_pred_on\.sum
    if has ncubench; then
      for c in ${IC_NCU_BENCH:-M:batch_rows_kernel:8 E:fast_sep_kernel:3 E:rows_kernel:40}; do
        IFS=: read -r tb kre skip <<<"$c"
        echo "== ncu-bench: tables $tb, kernel /$kre/, launch $((skip + 1))"
        ncu_bench "$tb" "$kre" --launch-skip "$skip" \
          --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
          --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
          --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio'${IC_NCU_METRICS:+,$IC_NCU_METRICS} 2>&1 |
          grep -vE "^==PROF==|^\s*$|----|^  [A-Z] done" | head -150
      done
    fi
    # ncutimes: the duration of every launch matching (IC_NCU_TIMES lists
    # TABLES:KERNEL-REGEX:COUNT triples, the first COUNT launches), one line each
    if has ncutimes; then
      for c in ${IC_NCU_TIMES:-E:fft:60}; do
        IFS=: read -r tb kre count <<<"$c"
        echo "== ncu-times: tables $tb, kernel /$kre/, first $count launches (name, grid, block, duration)"
        ncu_bench "$tb" "$kre" --launch-count "$count" \
          --metrics gpu__time_duration.sum --csv --print-units base 2>/dev/null |
          python3 -c '
import csv, sys
rows = [r for r in csv.reader(l for l in sys.stdin if l.startswith("\""))]
if not rows:
    sys.exit("ncu-times: no rows")
h = rows[0]
k, g, b, v = h.index("Kernel Name"), h.index("Grid Size"), h.index("Block Size"), h.index("Metric Value")
for r in rows[1:]:
    print("%-60.60s %18s %14s %10.1f us" % (r[k], r[g], r[b], float(r[v].replace(",", "")) / 1e3))
'
      done
    fi
    rm -rf "$tmp"
  else
    echo "ncu: not found"
  fi
  echo "ncu-bench/ncu-times: $(( $(date +%s) - t0 )) s"
fi

if has ratio; then
  # Seed 003 Fig 7.14 measured: one launch of each tiled backend's
  # kernel (and cuda-global's, the untiled baseline), 5x5 and 9x9 random
  # full-rank kernels on an HD RGB chart, hardware counters only (no
  # sections); bench/ratio_table.py turns the CSV into the table, beside
  # imgconv-bench's formula table. The thread-level load counters are
  # SASS-patched; if this ncu lacks them the core counters still run.
  t0=$(date +%s)
  if ! command -v ncu >/dev/null 2>&1; then
    ratio_line="ncu not found"
  elif ! command -v python3 >/dev/null 2>&1; then
    ratio_line="python3 not found"
  else
    tmp=$(mktemp -d)
    raw="$out/ratio-$stamp-ncu.txt"
    : > "$raw"
    core="gpu__time_duration.sum,smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"
    core="$core,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
    core="$core,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum"
    # the threads' global loads (count, bytes): the names this ncu lists first
    # (_pred_on: predicated-off threads not counted), then the other
    # spellings, then none (core counters only) as ncu refuses each in turn
    ncu --query-metrics > "$tmp/metrics.txt" 2>&1
    sets=()
    for ld in smsp__sass_thread_inst_executed_op_global_ld_pred_on smsp__sass_thread_inst_executed_op_global_ld \
              sm__sass_thread_inst_executed_op_global_ld; do
      for by in smsp__sass_data_bytes_mem_global_op_ld sm__sass_data_bytes_mem_global_op_ld; do
        if grep -qE "^$ld( |$)" "$tmp/metrics.txt" && grep -qE "^$by( |$)" "$tmp/metrics.txt"; then
          sets=("$core,$ld.sum,$by.sum" "${sets[@]}")
        else
          sets+=("$core,$ld.sum,$by.sum")
        fi
      done
    done
    sets+=("$core")
    set_i=0
    metrics=${sets[0]}
    $B/imgconv --chart 1920x1080 "$tmp/hd.ppm"
    # the formula table needs no GPU: hide it, so the bench skips its ceilings
    CUDA_VISIBLE_DEVICES= $B/imgconv-bench --out "$tmp" --stamp formula --tables R >/dev/null 2>&1 ||
      echo "ratio: imgconv-bench --tables R failed (no formula column)"
    kern() { # a random full-rank KxK blur: integer weights 1..9 over their sum
      awk -v k="$1" 'BEGIN{srand(714 + k); s=0; t="";
        for(i=0;i<k;i++){for(j=0;j<k;j++){w=1+int(9*rand()); s+=w; t=t w (j<k-1?" ":"")} t=t (i<k-1?"; ":"")}
        printf "%s / %d", t, s}'
    }
    : > "$tmp/manifest"
    for k in 5 9; do
      kt=$(kern $k)
      macs=$((1920 * 1080 * 3 * k * k))
      for c in cuda-global cuda-tiled-in cuda-tiled-out cuda-tiled-halo cuda-tiled-cached \
               "rows x1" "rows x2" "rows x4"; do
        set -- $c
        backend=$1 tune=method=auto mix=u8f32
        if [ "$1" = rows ]; then
          backend=cuda mix=rows
          tune="method=rows,rows-full=1,rows-shape=${2#x}"
        fi
        f="$tmp/ncu-${c// /}-$k.csv"
        run_ncu() {
          timeout 90 ncu --clock-control none --cache-control all --csv --page raw --print-units base \
            --kernel-name-base demangled --kernel-name regex:'ic_cu_conv_kernel|rows_kernel' \
            --launch-count 1 --metrics "$metrics" \
            $B/imgconv --backend $backend --tune "$tune" --border replicate -k "$kt" "$tmp/hd.ppm" "$tmp/out.ppm" \
            > "$f" 2>&1
        }
        run_ncu
        while ! grep -q '^"ID"' "$f" && [ $((set_i + 1)) -lt ${#sets[@]} ] &&
              grep -qiE "metric" "$f"; do
          echo "ratio: ncu refused --metrics ${metrics#$core}:"
          grep -iE "error" "$f" | head -2
          set_i=$((set_i + 1))
          metrics=${sets[$set_i]}
          run_ncu
        done
        [ "$c $k" = "cuda-global 5" ] && echo "ratio: counters $metrics"
        grep -q '^"ID"' "$f" || { echo "ratio: no ncu result for $c ${k}x$k:"; tail -5 "$f"; }
        { echo "## $c ${k}x$k (--tune $tune)"; cat "$f"; echo; } >> "$raw"
        printf '%s\t%s\t%s\t%s\t%s\t%s\n' "$c" "$backend" "$k" "$macs" "$mix" "$f" >> "$tmp/manifest"
      done
    done
    if python3 bench/ratio_table.py "$tmp/manifest" "$tmp/bench-formula.md" "$out/ratio-$stamp.md" \
         "device: ${gpu_name:-?} (sm_$arch), driver ${driver:-?}; commit $commit; $(ncu --version | tail -1)" \
         "" \
         "Raw ncu output: ratio-$stamp-ncu.txt in the run folder. Formula: imgconv-bench --tables R (bench/fig714.h)." \
         "" "Counters: \`${metrics//,/, }\`"; then
      ratio_line="ratio.md"
    else
      ratio_line="ratio.md (INCOMPLETE: see the log)"
    fi
    if [ -f "$tmp/bench-formula.md" ]; then
      { echo; sed -n '/^## R\./,$p' "$tmp/bench-formula.md" | sed '/^Total benchmark time/d'; } >> "$out/ratio-$stamp.md"
    fi
    publish "$out/ratio-$stamp.md" "$results/ratio.md" "scripts/gpu-check.sh ratio"
    rm -rf "$tmp"
  fi
  echo "ratio: $ratio_line ($(( $(date +%s) - t0 )) s)"
fi

# the bench/run.sh suites write their own summaries and keep their raw files here
export OUT=$out IC_COMMIT=$commit

if has batch; then
  t0=$(date +%s)
  bench/run.sh batch "$B/imgconv" || echo "batch failed (rc=$?)"
  echo "batch: $(( $(date +%s) - t0 )) s"
fi

if has jpeg; then
  t0=$(date +%s)
  cmake --build $B -j "$jobs" --target test_gpu_jpeg >/dev/null 2>&1
  bench/run.sh gpu-jpeg "$B/imgconv" >/dev/null 2>&1 || echo "gpu-jpeg failed (rc=$?)"
  grep -E "^\| \`|^GPU codec|FAIL" "$results/gpu-jpeg.md" 2>/dev/null | head -24
  echo "jpeg: $(( $(date +%s) - t0 )) s"
fi

if has photos; then
  t0=$(date +%s)
  SETS=${IC_PHOTO_SETS:-photo-jpeg photo-png} CPU_ROW=1 bench/run.sh batch "$B/imgconv" cuda ||
    echo "batch ${IC_PHOTO_SETS:-photo-jpeg photo-png} failed (rc=$?)"
  echo "photos: $(( $(date +%s) - t0 )) s"
fi

if has stream; then
  t0=$(date +%s)
  bench/run.sh stream "$B/imgconv" cuda || echo "stream failed (rc=$?)"
  echo "stream: $(( $(date +%s) - t0 )) s"
fi

# ncusrc: per-instruction counts and stall samples (Nsight Compute's source
# page, SASS, CSV) of one launch inside imgconv-bench: IC_NCU_SRC lists
# TABLES:KERNEL-REGEX:SKIP triples (default M:batch_rows_kernel:8), each into
# ncu-src-STAMP-N.csv: where a kernel's instructions and stalls are.
if has ncusrc && command -v ncu >/dev/null 2>&1; then
  t0=$(date +%s)
  tmp=$(mktemp -d)
  n=0
  for c in ${IC_NCU_SRC:-M:batch_rows_kernel:8}; do
    IFS=: read -r tb kre skip <<<"$c"
    n=$((n + 1))
    echo "== ncu-src: tables $tb, kernel /$kre/, launch $((skip + 1)) -> ncu-src-$stamp-$n.csv"
    ncu_bench "$tb" "$kre" --launch-skip "$skip" --launch-count 1 --section SourceCounters \
      --section WarpStateStats --section LaunchStats --page source --print-source sass --csv \
      > "$out/ncu-src-$stamp-$n.csv" 2>&1
    echo "ncu-src $n: rc=$? $(wc -l < "$out/ncu-src-$stamp-$n.csv") lines"
  done
  rm -rf "$tmp"
  echo "ncusrc: $(( $(date +%s) - t0 )) s"
fi

# An 8K RGB chart (c.ppm) and a full-rank 31x31 kernel (k31.txt) in folder $1.
job_inputs() {
  $B/imgconv --chart 7680x4320 "$1/c.ppm" >/dev/null
  python3 -c '
import random
random.seed(31)
for j in range(31):
    print(" ".join("%d" % random.randint(-50, 200) for i in range(31)))
print("/ 100000")' > "$1/k31.txt"
}

# ncujob: Nsight Compute on one `imgconv` process filtering the 8K chart with
# the full-rank 31x31 kernel: the first launch of the kernels matching
# IC_NCU_JOB (regex, default fast_tensor), with stall reasons (into the log).
if has ncujob && command -v ncu >/dev/null 2>&1; then
  t0=$(date +%s)
  tmp=$(mktemp -d)
  job_inputs "$tmp"
  echo "== ncu-job: 8K RGB, full-rank 31x31, kernel /${IC_NCU_JOB:-fast_tensor}/"
  timeout 150 ncu --clock-control none --kernel-name regex:"${IC_NCU_JOB:-fast_tensor}" \
    --launch-count 1 --section SpeedOfLight --section Occupancy --section LaunchStats \
    --section WarpStateStats --section SchedulerStats --section MemoryWorkloadAnalysis \
    --section ComputeWorkloadAnalysis \
    --metrics regex:'smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
    $B/imgconv --backend cuda --kernel-file "$tmp/k31.txt" "$tmp/c.ppm" "$tmp/o.ppm" 2>&1 |
    grep -vE "^==PROF==|^\s*$|----" | head -150
  rm -rf "$tmp"
  echo "ncujob: $(( $(date +%s) - t0 )) s"
fi

if has fftjob; then
  t0=$(date +%s)
  tmp=$(mktemp -d)
  job_inputs "$tmp"
  $B/imgconv --backend cuda --explain --kernel-file "$tmp/k31.txt" "$tmp/c.ppm" "$tmp/e.ppm" 2>&1 | grep -iE "method|overlap|predicted" | head -5
  for mode in fused unfused; do
    tune="--tune fft-fuse=always"; [ $mode = unfused ] && tune="--tune fft-fuse=never"
    for i in 1 2 3; do
      s0=$(date +%s%N)
      $B/imgconv --backend cuda -t $tune --kernel-file "$tmp/k31.txt" "$tmp/c.ppm" "$tmp/$mode.ppm" 2>&1 |
        head -12 | sed "s/^/  $mode run $i: /"
      echo "  $mode run $i: whole process $(( ($(date +%s%N) - s0) / 1000000 )) ms"
    done
  done
  python3 -c '
import sys
a = open(sys.argv[1], "rb").read(); b = open(sys.argv[2], "rb").read()
d = [abs(x - y) for x, y in zip(a, b) if x != y]
print("fused vs unfused: %d bytes, %d differ, max difference %d" % (len(a), len(d), max(d) if d else 0))
' "$tmp/fused.ppm" "$tmp/unfused.ppm"
  rm -rf "$tmp"
  echo "fftjob: $(( $(date +%s) - t0 )) s"
fi

if has wholejob; then
  t0=$(date +%s)
  bench/run.sh wholejob "$B/imgconv" || echo "wholejob failed (rc=$?)"
  echo "wholejob: $(( $(date +%s) - t0 )) s"
fi

if has png; then
  t0=$(date +%s)
  bench/run.sh png "$B/imgconv" >/dev/null || echo "png failed (rc=$?)"
  grep -E "^## |\| (default|vips|mogrify)" "$results/png.md" 2>/dev/null
  echo "png: png.md ($(( $(date +%s) - t0 )) s)"
fi

if has startup; then
  t0=$(date +%s)
  cmake --build $B -j "$jobs" --target startup_probe >/dev/null 2>&1 ||
    echo "startup: no startup_probe target (a build without nvJPEG?)"
  bench/run.sh startup "$B" >/dev/null || echo "startup failed (rc=$?)"
  grep -E "^\| +[0-9.]+ \| +[0-9.]+ \|" "$results/startup.md" 2>/dev/null | sort -t'|' -k3 -rn | head -12
  echo "startup: startup.md ($(( $(date +%s) - t0 )) s)"
fi

if has python; then
  t0=$(date +%s)
  pyt=/tmp/icpy-$stamp
  if IMGCONV_BUILD_DIR=$PWD/$B python3 -m pip install -q --no-build-isolation --no-deps \
       --target "$pyt" ./python > "$out/python-$stamp.txt" 2>&1; then
    here=$PWD
    ( cd /tmp && PYTHONPATH=$pyt${PYTHONPATH:+:$PYTHONPATH} IMGCONV_CLI=$here/$B/imgconv \
        python3 -m pytest -v -rs -p no:cacheprovider "$here/python/tests" ) >> "$out/python-$stamp.txt" 2>&1
    echo "pytest rc=$?"
    grep -E "passed|failed|SKIPPED|FAILED|test_device" "$out/python-$stamp.txt" | tail -40
    # the summary: each test's result line and pytest's closing line
    {
      echo '```'
      grep -E "::.* (PASSED|FAILED|SKIPPED|XFAIL|ERROR)" "$out/python-$stamp.txt" | sed "s#^.*python/tests/#python/tests/#"
      grep -E "^=+ .*(passed|failed).* in " "$out/python-$stamp.txt"
      echo '```'
    } > "$out/python.md"
    publish "$out/python.md" "$results/python.md" "scripts/gpu-check.sh python"
    PYTHONPATH=$pyt${PYTHONPATH:+:$PYTHONPATH} python3 bench/dask_scaling.py --out "$out/dask.md" \
      --workers 1,2,4,8,16 --repeat 3 --gpu >> "$out/python-$stamp.txt" 2>&1 || echo "dask_scaling failed (rc=$?)"
    [ -f "$out/dask.md" ] && publish "$out/dask.md" "$results/dask.md" "scripts/gpu-check.sh python" &&
      cat "$out/dask.md"
  else
    echo "pip install ./python failed:"; tail -20 "$out/python-$stamp.txt"
  fi
  echo "python: $(( $(date +%s) - t0 )) s"
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
  echo "| Fig 7.14 ratio (ncu) | $ratio_line |"
  echo "| peers (NPP, CV-CUDA) | $peers_line |"
  echo "| planner calibration | $calib_line |"
  echo "| raw files | $out |"
} > "$summary"
cat "$summary"
publish "$summary" "$results/gpu-check.md" "scripts/gpu-check.sh ${what# }"
# the device tool brings back only \$OUT: a copy of the summaries travels there
[ -n "$device_out" ] && cp -r "$results" "$out/results"
