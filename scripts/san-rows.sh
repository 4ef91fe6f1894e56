#!/usr/bin/env bash
# san-rows.sh - the rows method's kernels under compute-sanitizer, quick mode,
# one line a run (tool, test, part, exit status, the test's summary line, the
# tool's summary line): test_gpu_fast's row-by-row section (part 21/21:
# rows_roll and rows_ring forced), its rows-shape=8 differential run (8/21)
# and its named separable kernels as the planner takes them (16/21) under
# memcheck, racecheck, synccheck and initcheck; test_gpu_alpha and
# test_gpu_advanced under memcheck and initcheck. Run from the repository
# root after a build into build-gpu (scripts/gpu-check.sh builds it).
# The lines, under a count per tool, replace bench/results/sanitizers.md.
# Exit status: 1 when any run failed.
set -u
cd "$(dirname "$0")/.."
. bench/lib.sh
B=${B:-build-gpu}
bad=0
lines=$(mktemp)
trap 'rm -f "$lines" "$lines.md"' EXIT
exec 3>&1 >"$lines"
for T in memcheck racecheck synccheck initcheck; do
  for P in 21/21 8/21 16/21; do
    r=$(ICT_PART=$P IC_TEST_QUICK=1 timeout 100 compute-sanitizer --tool "$T" --error-exitcode 1 \
      "$B/tests/test_gpu_fast" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || bad=1
    echo "san $T test_gpu_fast $P rc=$rc" \
      "$(echo "$r" | grep -E 'rows method|8-bit .* cases|named separable' | grep -v ': 0 cases' | tail -1)" \
      "$(echo "$r" | grep -E 'ERROR SUMMARY|RACECHECK SUMMARY' | tail -1)"
  done
done
for T in memcheck initcheck; do
  for t in test_gpu_alpha test_gpu_advanced; do
    r=$(IC_TEST_QUICK=1 timeout 120 compute-sanitizer --tool "$T" --error-exitcode 1 "$B/tests/$t" 2>&1)
    rc=$?
    [ $rc -eq 0 ] || bad=1
    echo "san $T $t rc=$rc $(echo "$r" | grep -E 'passed|FAIL' | tail -1)" \
      "$(echo "$r" | grep -E 'ERROR SUMMARY' | tail -1)"
  done
done
exec >&3
cat "$lines"
{
  echo "# The rows method's kernels under compute-sanitizer (scripts/san-rows.sh)"
  echo
  echo "| tool | runs | rc=0 | error summary lines not 0 |"
  echo "|---|---|---|---|"
  for T in $(awk '{ print $2 }' "$lines" | sort -u); do
    echo "| $T | $(grep -c "^san $T " "$lines") | $(grep -c "^san $T .* rc=0 " "$lines") |" \
      "$(grep "^san $T " "$lines" | grep -E 'SUMMARY: [0-9]+' | grep -vc 'SUMMARY: 0 ') |"
  done
  echo
  echo '```'
  cat "$lines"
  echo '```'
} >"$lines.md"
publish "$lines.md" bench/results/sanitizers.md "scripts/san-rows.sh"
exit $bad
