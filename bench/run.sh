#!/usr/bin/env bash
# bench/run.sh - runs one benchmark suite and replaces its summary,
# bench/results/SUITE.md, in place (git history keeps the old ones). Raw
# files (logs, profiles, per-set tables) go to a run folder outside the tree:
# $OUT/bench-SUITE-STAMP when OUT is set (the GPU machine's), else
# build/bench-logs/SUITE-STAMP.
#
#   bench/run.sh --list
#   bench/run.sh [--quick] [--result FILE] SUITE [suite arguments]
#
# --quick: fewer runs and smaller inputs, to check a suite works; its summary
# goes to the run folder, not over the baseline, unless --result says where.
# --result FILE: write the summary there instead of bench/results/SUITE.md.
# Each suite's arguments and environment are in the comment atop
# bench/suites/SUITE.sh; the summary's first line names the device, the date
# and the commit.
set -euo pipefail
BENCH=$(cd "$(dirname "$0")" && pwd)

# suite name and one line each, for --list
SUITES="batch|batch throughput against libvips and ImageMagick (SETS=mixed, photo-jpeg, photo-png)
blur|gaussian sigma 10, 120, 500 on HD and 12 MP, whole call, cpu backend, vips gaussblur beside
codecs|PNG encode/decode and JPEG decode on 1 thread and every core, whole PNG and JPEG jobs, against libvips
cpu|the cpu backend against OpenCV, libvips and ImageMagick, and its thread scaling
fft|the cpu backend's FFT path against its direct and separable paths, 12 MP JPEG, kernels 31..255
f32|float32 RGB Gaussians, 8K 3x3 and 9x9, HD and 480p 3x3: imgconv cuda on torch tensors beside CV-CUDA's conv2d
dev|a trial run of the fast path (benchmark, fast test, SASS summary) into \$OUT; no summary
gpu-jpeg|one 6000x4000 JPEG through cuda, cuda --codec cpu and cpu, and test_gpu_jpeg's decode differences
jpeg-check|the GPU decode path's entropy check against a full libjpeg-turbo decode
png|PNG size, encode and decode speed against libvips and ImageMagick
serve|imgconv serve under a whole-request load, one and many clients, against one-shot processes and libvips
startup|where a CUDA process's start-up time goes (startup_probe, whole processes, nsys)
stream|raw frame stream throughput of imgconv --stream at 1080p and 8K
wholejob|whole imgconv processes: a 6000x4000 JPEG and a 64x64 PPM, cuda and cpu"

usage() { echo "usage: bench/run.sh --list | [--quick] [--result FILE] SUITE [ARGS...]" >&2; exit 2; }

quick_flag=0
dest=""
while [ $# -gt 0 ]; do
    case "$1" in
    --list)
        printf '%s\n' "$SUITES" | awk -F'|' '{ printf "  %-11s %s\n", $1, $2 }'
        exit 0 ;;
    --quick) quick_flag=1; shift ;;
    --result) dest=${2:?--result needs a file}; shift 2 ;;
    -h | --help) sed -n '2,/^set -/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) usage ;;
    *) break ;;
    esac
done
SUITE=${1:-}
[ -n "$SUITE" ] || usage
shift
printf '%s\n' "$SUITES" | grep -q "^$SUITE|" && [ -f "$BENCH/suites/$SUITE.sh" ] ||
    { echo "bench/run.sh: no suite '$SUITE' (bench/run.sh --list)" >&2; exit 2; }

. "$BENCH/lib.sh"
export IC_BENCH_QUICK=$quick_flag
if [ -n "${OUT:-}" ]; then LOGDIR=$OUT/bench-$SUITE-$STAMP; else LOGDIR=$ROOT/build/bench-logs/$SUITE-$STAMP; fi
mkdir -p "$LOGDIR"
LOGDIR=$(cd "$LOGDIR" && pwd)
if [ -z "$dest" ]; then
    dest=$ROOT/bench/results/$SUITE.md
    [ "$quick_flag" = 1 ] && dest=$LOGDIR/$SUITE.md
fi
# the suite writes here; the summary replaces $dest only when the suite succeeds
RESULT=$LOGDIR/$SUITE-raw.md
set +e
( . "$BENCH/suites/$SUITE.sh" "$@" ) 2>&1 | tee "$LOGDIR/console.txt"
rc=${PIPESTATUS[0]}
set -e
if [ "$rc" -ne 0 ]; then
    echo "bench/run.sh $SUITE: failed (rc=$rc); the log is $LOGDIR/console.txt" >&2
    exit "$rc"
fi
[ -s "$RESULT" ] || { echo "bench/run.sh $SUITE: no summary; raw files in $LOGDIR" >&2; exit 0; }
cmd="bench/run.sh $SUITE"
[ "$quick_flag" = 1 ] && cmd="bench/run.sh --quick $SUITE"
[ $# -gt 0 ] && cmd="$cmd$(printf ' %q' "$@")"
publish "$RESULT" "$dest" "$cmd"
echo "bench/run.sh $SUITE: summary $dest; raw files in $LOGDIR" >&2
