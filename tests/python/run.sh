#!/usr/bin/env bash
# run.sh BUILD_DIR SOURCE_DIR CLI - the ctest entry of the Python package:
# pip-installs python/ (linked against BUILD_DIR's libimgconv.a) into a
# temporary virtual environment and runs its pytest suite (python/tests),
# comparing against scipy.ndimage and the CLI, and the Dask tests.
# The interpreter: IC_PYTHON, else the first of python3, /usr/bin/python3 that
# imports numpy, scipy, pytest, setuptools and distributed (what
# scripts/install-deps.sh installs); failing that, a venv gets them from PyPI.
# Exit 77 (SKIPPED) only when none of that is possible. pytest's own exit code
# is returned, so "no tests collected" (5) fails.
set -uo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
cli=$3
mods="numpy scipy pytest setuptools distributed"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

has_mods() { "$1" -c "import $(echo $mods | tr ' ' ',')" >/dev/null 2>&1; }
py=""
for cand in ${IC_PYTHON:-} python3 /usr/bin/python3; do
    command -v "$cand" >/dev/null 2>&1 || continue
    if has_mods "$cand"; then py=$(command -v "$cand"); break; fi
done

if [ -n "$py" ]; then
    # The interpreter has everything: the package goes into a folder of its
    # own on PYTHONPATH (a venv made from an interpreter that is itself a venv,
    # like the GPU machine's PyTorch one, would not see that venv's packages).
    pipflags=(--no-build-isolation --no-deps --target "$tmp/site")
    vpy=$py
    export PYTHONPATH=$tmp/site${PYTHONPATH:+:$PYTHONPATH}
    where="packages of $py, imgconv in $tmp/site"
else
    base=$(command -v python3 || true)
    [ -n "$base" ] || { echo "run.sh: SKIPPED: no python3 on this machine"; exit 77; }
    if ! "$base" -m venv "$tmp/venv" >"$tmp/venv.log" 2>&1 ||
       ! "$tmp/venv/bin/pip" install -q numpy scipy pytest setuptools "dask[distributed]" >>"$tmp/venv.log" 2>&1; then
        tail -5 "$tmp/venv.log"
        echo "run.sh: SKIPPED: no python3 with $mods, and installing them failed (run scripts/install-deps.sh as root)"
        exit 77
    fi
    pipflags=(--no-build-isolation --no-deps)
    vpy=$tmp/venv/bin/python
    where="venv $tmp/venv"
fi
echo "run.sh: $("$vpy" --version) ($where)"
# A copy of python/: pip builds in the tree it is given, and the checkout stays clean.
cp -r "$src/python" "$tmp/pkg" && rm -rf "$tmp/pkg/build" "$tmp/pkg"/*.egg-info
if ! IMGCONV_BUILD_DIR=$build "$vpy" -m pip install -q "${pipflags[@]}" "$tmp/pkg" >"$tmp/pip.log" 2>&1; then
    cat "$tmp/pip.log"; echo "run.sh: FAIL: pip install ./python" >&2; exit 1
fi
# Run from the temporary folder so that `import imgconv` is the installed package.
cd "$tmp" || exit 1
IMGCONV_CLI=$cli "$vpy" -m pytest -q -rs -p no:cacheprovider "$src/python/tests"
rc=$?
[ $rc -eq 5 ] && echo "run.sh: FAIL: pytest collected no tests" >&2
exit $rc
