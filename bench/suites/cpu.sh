# cpu.sh - measures imgconv's `cpu` backend against OpenCV filter2D (in
# memory, same thread count), `vips conv` and ImageMagick `convert -morphology
# Convolve` (whole process on a PPM), its own 1-vs-N-thread scaling and the
# cost of premultiplied alpha, in one run on this machine.
#
#   bench/run.sh cpu [--alpha-only] [BUILD_DIR]   (default: build-compare-cpu)
#
# --alpha-only: only the premultiplied-alpha rows (OpenCV and NumPy are all
# it needs). --quick: 1920x1080 only, fewer runs.
#
# Installs nothing: the peers come from scripts/install-bench-deps.sh
# (python3-opencv, libvips-tools, imagemagick). It configures a CPU-only
# Release build of imgconv in BUILD_DIR (PNM is all it needs), builds the CLI,
# and links bench/cpu_bench.c against the library as BUILD_DIR/cpu-bench, the
# in-memory timer (imgconv-bench's main belongs to the GPU study).
set -euo pipefail
here=$HERE
root=$ROOT
alpha_only=""
if [ "${1:-}" = "--alpha-only" ]; then
  alpha_only=--alpha-only
  shift
fi
build=${1:-$root/build-compare-cpu}

missing=()
if [ -z "$alpha_only" ]; then
  command -v vips >/dev/null 2>&1 || missing+=(libvips-tools)
  command -v convert >/dev/null 2>&1 || missing+=(imagemagick)
fi
py=""
for cand in python3 /usr/bin/python3; do
  if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import cv2, numpy' >/dev/null 2>&1; then
    py=$cand
    break
  fi
done
[ -n "$py" ] || missing+=(python3-opencv)
if [ ${#missing[@]} -gt 0 ]; then
  echo "cpu: missing ${missing[*]}; run scripts/install-bench-deps.sh (as root)" >&2
  exit 1
fi

echo "cpu: building imgconv (CPU only, Release) in $build" >&2
cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DIC_CUDA=OFF -DIC_PNG=OFF -DIC_JPEG=OFF \
  -DBUILD_TESTING=OFF >/dev/null
cmake --build "$build" -j "$(nproc)" --target imgconv imgconv-cli >/dev/null
"${CC:-cc}" -O2 -std=c11 -D_POSIX_C_SOURCE=200809L -I "$root/include" "$here/cpu_bench.c" \
  "$build/libimgconv.a" -lpthread -lm -o "$build/cpu-bench"

# the alpha rows alone are a partial run: kept in the run folder, not as the summary
report=$RESULT
[ -n "$alpha_only" ] && report=$LOGDIR/cpu-alpha.md
"$py" "$here/compare_cpu.py" "$build/imgconv" "$build/cpu-bench" "$report" ${alpha_only:+"$alpha_only"}
