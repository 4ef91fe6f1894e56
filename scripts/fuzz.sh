#!/usr/bin/env bash
# fuzz.sh BUILD SECONDS [LOGDIR] - runs every libFuzzer target of tests/fuzz
# (built in BUILD by `make fuzz`) for SECONDS each, one after the other, from
# its committed seeds (tests/fuzz/corpus/NAME) with its dictionary when there
# is one. New inputs go to a scratch corpus, never into the repository. Fails
# (exit 1) when any target finds a crash, a leak, a sanitizer report, a
# timeout or an out-of-memory; the reproducer is kept in LOGDIR (default: a
# temporary directory, printed). Prints execs and coverage per target.
set -euo pipefail
BUILD=${1:?usage: fuzz.sh BUILD SECONDS [LOGDIR]}
SECONDS_EACH=${2:?usage: fuzz.sh BUILD SECONDS [LOGDIR]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOGDIR=${3:-$(mktemp -d "${TMPDIR:-/tmp}/imgconv-fuzz.XXXXXX")}
mkdir -p "$LOGDIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1:allocator_may_return_null=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}

targets=$(cd "$BUILD/tests/fuzz" && ls fuzz_* 2>/dev/null | grep -v '\.' || true)
[ -n "$targets" ] || { echo "fuzz.sh: no fuzz targets in $BUILD/tests/fuzz (make fuzz)" >&2; exit 1; }
fails=0
for t in $targets; do
    name=${t#fuzz_}
    seeds="$ROOT/tests/fuzz/corpus/$name"
    dict="$ROOT/tests/fuzz/${name#decode_}.dict"
    work="$LOGDIR/corpus-$name"
    mkdir -p "$work"
    args=(-max_total_time="$SECONDS_EACH" -timeout=10 -rss_limit_mb=2048 -max_len=65536
          -print_final_stats=1 -artifact_prefix="$LOGDIR/$name-")
    [ -f "$dict" ] && args+=(-dict="$dict")
    dirs=("$work")
    [ -d "$seeds" ] && dirs+=("$seeds")
    set +e
    "$BUILD/tests/fuzz/$t" "${args[@]}" "${dirs[@]}" >"$LOGDIR/$name.log" 2>&1
    rc=$?
    set -e
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "$LOGDIR/$name.log" | grep -o '[0-9]*$' || echo '?')
    cov=$(grep -oE '#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$LOGDIR/$name.log" | tail -1 | grep -oE 'cov: [0-9]+ ft: [0-9]+' || echo 'cov: ? ft: ?')
    if [ "$rc" -ne 0 ]; then
        fails=$((fails + 1))
        echo "FAIL $t (exit $rc, $execs execs, $cov): log $LOGDIR/$name.log"
        grep -E 'ERROR|SUMMARY|runtime error|Test unit written' "$LOGDIR/$name.log" | head -5 || true
    else
        echo "ok   $t: $execs execs in ${SECONDS_EACH}s, $cov"
    fi
done
[ "$fails" -eq 0 ] || { echo "fuzz.sh: $fails target(s) failed; logs in $LOGDIR" >&2; exit 1; }
echo "fuzz.sh: all targets clean; logs in $LOGDIR"
