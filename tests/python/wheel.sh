#!/usr/bin/env bash
# wheel.sh BUILD_DIR SOURCE_DIR - `python3 -m build --wheel` of python/ against
# BUILD_DIR's library, the wheel installed into a fresh venv, imported and run
# there; the checkout's python/ must be left as it was (setup.py writes its
# build and egg-info folders elsewhere). Exit 77 (SKIPPED) only when no
# interpreter has numpy, setuptools, wheel and build (scripts/install-deps.sh
# installs them).
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
py=""
for cand in ${IC_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    if "$cand" -c "import numpy, setuptools, wheel, build, venv" >/dev/null 2>&1; then py=$(command -v "$cand"); break; fi
done
[ -n "$py" ] || { echo "wheel.sh: SKIPPED: no python3 with numpy, setuptools, wheel and build"; exit 77; }
fail() { echo "wheel.sh: FAIL: $*" >&2; exit 1; }

before=$(cd "$src/python" && find . -path ./tests -prune -o -print | grep -v __pycache__ | sort)
IMGCONV_BUILD_DIR=$build "$py" -m build --wheel --no-isolation --outdir "$tmp/dist" "$src/python" \
    >"$tmp/build.log" 2>&1 || { cat "$tmp/build.log"; fail "python -m build --wheel"; }
after=$(cd "$src/python" && find . -path ./tests -prune -o -print | grep -v __pycache__ | sort)
[ "$before" = "$after" ] || { diff <(echo "$before") <(echo "$after"); fail "the build wrote into python/"; }
whl=$(ls "$tmp"/dist/imgconv-*.whl) || fail "no wheel in $tmp/dist"
"$py" -c "import sys, zipfile; sys.exit('imgconv/py.typed' not in zipfile.ZipFile(sys.argv[1]).namelist())" "$whl" || fail "the wheel lacks imgconv/py.typed"

# A fresh venv that sees the system's numpy but not the checkout.
"$py" -m venv --system-site-packages "$tmp/venv" >/dev/null || fail "python3 -m venv"
# (an interpreter whose numpy comes from PYTHONPATH, not site-packages, lends none)
"$tmp/venv/bin/python" -c "import numpy" >/dev/null 2>&1 ||
    { echo "wheel.sh: SKIPPED: a venv of $py does not see its numpy"; exit 77; }
"$tmp/venv/bin/python" -m pip install -q --no-index --no-deps "$whl" >"$tmp/pip.log" 2>&1 ||
    { cat "$tmp/pip.log"; fail "pip install of the wheel"; }
cd "$tmp" || exit 1
"$tmp/venv/bin/python" - <<'PY' || fail "the installed wheel does not filter"
import numpy as np, imgconv
assert imgconv.__file__.startswith(__import__("sys").prefix), imgconv.__file__
a = np.arange(64, dtype=np.uint8).reshape(8, 8)
out = imgconv.box(a, 3, backend="cpu")
ref = imgconv.convolve(a, "box:3", backend="cpu")
assert out.shape == a.shape and (out == ref).all()
print("wheel.sh: imported", imgconv.__version__, "from", imgconv.__file__)
PY
echo "wheel.sh: PASS ($(basename "$whl"))"
