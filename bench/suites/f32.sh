# f32.sh - float32 RGB Gaussians (8K 3x3 and 9x9, HD and 480p 3x3) on the
# GPU: imgconv's `cuda` on PyTorch CUDA tensors (zero-copy) beside CV-CUDA's
# float32 conv2d in the same process (bench/f32_cells.py says how each is
# timed and checked, and names the kernels each call launched). The
# Python package is installed from the CUDA build BUILD into the run folder.
#
# usage: bench/run.sh f32 [BUILD]   (BUILD: a CUDA build of this checkout,
#   default build-gpu; env PY: the interpreter with torch and cvcuda)
set -euo pipefail
BUILD=$(cd "${1:-$ROOT/build-gpu}" && pwd)
PY=${PY:-python3}
site=$LOGDIR/site
IMGCONV_BUILD_DIR=$BUILD "$PY" -m pip install -q --no-build-isolation --no-deps \
    --target "$site" "$ROOT/python" >"$LOGDIR/pip.txt" 2>&1 ||
    { cat "$LOGDIR/pip.txt"; echo "f32: pip install ./python failed" >&2; exit 1; }
args=()
quick && args+=(--quick)
mkdir -p "$(dirname "$RESULT")"
PYTHONPATH=$site${PYTHONPATH:+:$PYTHONPATH} "$PY" "$BENCH/f32_cells.py" "$RESULT" "${args[@]}"
