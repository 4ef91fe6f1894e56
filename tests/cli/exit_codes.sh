#!/usr/bin/env bash
# exit_codes.sh - the exit codes agree with the table --help prints: a batch
# whose output cannot be written exits 4 (an unreadable input 3), SIGINT
# exits 130 and SIGTERM 143 (128 + the signal), and --max-memory takes the
# suffixes --help lists (K, M, G, T).
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
set -m # background jobs get SIGINT too (without job control bash ignores it there)

run --help
for code in 0 1 2 3 4 5 130; do
    grep -Eq "^  $code +[a-z]" "$OUT" && ok "--help lists exit $code" || fail "--help lacks exit $code"
done
grep -q "143 for SIGTERM" "$OUT" && ok "--help gives SIGTERM's 143" || fail "--help lacks 143"

mkdir in
"$IMGCONV" --chart 32x32 in/p1.ppm && "$IMGCONV" --chart 32x32 --seed 2 in/p2.ppm || fail "inputs"

# An output that cannot be written (a directory stands where the file goes).
mkdir -p out/p1.ppm
run -k box:3 --overwrite -q -o out in
[ "$RC" -eq 4 ] && ok "batch with an unwritten output exits 4" ||
    { fail "batch with an unwritten output: exit $RC, expected 4"; show_last; }
# An input that cannot be read: 3.
run -k box:3 -q -o out2 in/p1.ppm in/missing.ppm
[ "$RC" -eq 3 ] && ok "batch with an unreadable input exits 3" ||
    { fail "batch with an unreadable input: exit $RC, expected 3"; show_last; }

# Signals: single mode dies of the signal, which the shell reports as 128 + N;
# batch mode finishes the files being written and exits 130 itself.
"$IMGCONV" --chart 2400x2400x1 big.pgm || fail "big input"
awk 'BEGIN { s = 3; for (y = 0; y < 81; y++) { l = ""; for (x = 0; x < 81; x++) {
    s = (s * 1103515245 + 12345) % 2147483648; l = l " " (s % 19 - 9) } print l } }' >k81.txt
mkdir many
for i in $(seq 1 6); do cp big.pgm many/f$i.pgm; done
for sig in INT TERM; do
    want=$((128 + $(kill -l $sig)))
    "$IMGCONV" --kernel-file k81.txt --backend cpu --threads 1 --max-work 0 big.pgm "s$sig.pgm" \
        2>/dev/null &
    pid=$!
    sleep 0.3
    kill -s $sig $pid
    wait $pid
    rc=$?
    [ "$rc" -eq "$want" ] && ok "single mode, SIG$sig: exit $want" || fail "single SIG$sig: exit $rc, expected $want"
done
"$IMGCONV" --kernel-file k81.txt --backend cpu --threads 1 --max-work 0 -q -o bout many \
    2>"$TMP/b.err" &
pid=$!
for _ in $(seq 1 200); do
    ls bout/*.pgm >/dev/null 2>&1 && break
    sleep 0.05
done
kill -s INT $pid
wait $pid
rc=$?
[ "$rc" -eq 130 ] && grep -q interrupted "$TMP/b.err" && ok "batch, SIGINT: exit 130" ||
    fail "batch SIGINT: exit $rc, expected 130"

# --max-memory: the suffixes --help lists.
grep -q "suffix K, M, G, T" <("$IMGCONV" --help) && ok "--help lists T" || fail "--help lacks T"
for v in 64K 64M 1G 1T 64k; do
    expect_ok "--max-memory $v" -k box:3 --max-memory $v --overwrite in/p1.ppm m.ppm
done
expect_error 2 "--max-memory" "--max-memory 1P is refused" -k box:3 --max-memory 1P in/p1.ppm m.ppm
expect_error 2 "--max-memory" "--max-memory 1KB is refused" -k box:3 --max-memory 1KB in/p1.ppm m.ppm
# A small limit is shown in a unit that shows it, not as "0.0 MiB".
"$IMGCONV" --chart 100x100 s100.ppm || fail "s100.ppm"
expect_error 3 "40.0 KiB" "--max-memory 40K: the limit in KiB" -k box:3 --max-memory 40K s100.ppm m2.ppm
grep -q "0\.0 MiB" "$ERR" && fail "a size shown as 0.0 MiB" || ok "no 0.0 MiB"
finish
