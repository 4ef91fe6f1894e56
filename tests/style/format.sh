#!/usr/bin/env bash
# format.sh SOURCE_DIR - the C, CUDA and header files follow .clang-format
# (checked with clang-format 14, Debian 12's, which scripts/install-deps.sh
# installs: another major version formats some lines differently, so it is
# not used). Fix with: clang-format-14 -i FILE. Exit 77 (SKIPPED) without
# clang-format 14.
set -uo pipefail
src=$(cd "$1" && pwd)
cf=""
for c in clang-format-14 clang-format; do
    command -v "$c" >/dev/null 2>&1 || continue
    if "$c" --version | grep -q "version 14\."; then cf=$c; break; fi
done
[ -n "$cf" ] || { echo "format.sh: SKIPPED: no clang-format 14 (run scripts/install-deps.sh)"; exit 77; }
cd "$src" || exit 1
if git rev-parse --git-dir >/dev/null 2>&1; then
    mapfile -t files < <(git ls-files 'src/*.c' 'src/*.h' 'src/*.cu' 'src/*.cuh' 'include/*.h' \
        'tools/*.c' 'tools/*.h' 'tests/*.c' 'tests/*.h' 'bench/*.c' 'bench/*.h' 'bench/*.cu' \
        'python/src/*.c')
else
    mapfile -t files < <(find src include tools tests bench python/src -type f \
        \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort)
fi
bad=0
for f in "${files[@]}"; do
    if ! "$cf" --dry-run --Werror "$f" >/dev/null 2>&1; then
        echo "not formatted: $f (clang-format-14 -i $f)"
        bad=$((bad + 1))
    fi
done
echo "format.sh: ${#files[@]} files checked, $bad not formatted"
[ "$bad" -eq 0 ]
