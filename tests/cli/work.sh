#!/usr/bin/env bash
# work.sh - --max-work bounds the filter's arithmetic (multiply-adds: pixels x
# channels x the taps the kernel runs, rows + columns when it separates), so
# that a large kernel on a large image is refused in a moment, with one line
# naming the option, instead of running for a minute. CPU backends have a
# default bound; --max-work 0 lifts it.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "a 1200x1200 input" --chart 1200x1200x1 big.pgm
# A 255x255 kernel that does not separate (pseudo-random integers).
awk 'BEGIN { s = 7; for (y = 0; y < 255; y++) { l = ""; for (x = 0; x < 255; x++) {
    s = (s * 1103515245 + 12345) % 2147483648; l = l " " (s % 19 - 9) } print l } }' >k255.txt

# 1.44 MP x 65025 taps = 9.4e10 multiply-adds: over the default on the CPU.
t0=$(date +%s%N)
expect_error 3 "--max-work" "255x255 kernel on 1.44 MP refused by default" \
    --kernel-file k255.txt --backend cpu big.pgm out.pgm
ms=$((($(date +%s%N) - t0) / 1000000))
[ "$ms" -lt 5000 ] && ok "refused in $ms ms" || fail "refusal took $ms ms"
grep -q "big.pgm" "$ERR" && ok "names the input" || fail "does not name the input"
[ -e out.pgm ] && fail "out.pgm written" || ok "nothing written"
# The same through a PNG's header (refused before decoding).
if has_format png; then
    expect_ok "a PNG input" --chart 1200x1200x3 big.png
    expect_error 3 "--max-work" "refused from a PNG's header" --kernel-file k255.txt \
        --backend cpu big.png o.png
fi

# The raw frame stream: the frame size is known, so the bound is checked once.
# (The default bound is the CPU backends': name one, as a GPU machine's auto is cuda.)
LAST_CMD="imgconv --stream 1200x1200x1 --kernel-file k255.txt --backend cpu < /dev/null"
"$IMGCONV" --stream 1200x1200x1 --kernel-file k255.txt --backend cpu </dev/null >"$OUT" 2>"$ERR"
RC=$?
[ "$RC" -eq 3 ] && grep -q -- "--max-work" "$ERR" && ok "--stream: refused before any frame" ||
    { fail "--stream and --max-work"; show_last; }

# A separable kernel of the same size runs rows + columns: 510 taps, accepted.
expect_ok "box:255 (separable) on 1.44 MP runs" -k box:255 --backend cpu big.pgm box.pgm
# Small limits refuse small jobs, and 0 lifts the bound.
expect_ok "a 64x64 input" --chart 64x64x1 small.pgm
expect_error 3 "--max-work" "--max-work 5e4 refuses 64x64 x 25 taps" \
    -k "1 2 3 4 5; 2 1 2 3 4; 3 2 1 2 3; 4 3 2 1 2; 5 4 3 2 1" --max-work 5e4 small.pgm s.pgm
expect_ok "--max-work 2e5 admits 64x64 with box:3 (6 taps)" -k box:3 --max-work 2e5 small.pgm s1.pgm
expect_ok "--max-work 0 lifts the bound" --kernel-file k255.txt --max-work 0 small.pgm s2.pgm
expect_error 2 "--max-work" "--max-work -1 is refused" -k box:3 --max-work -1 small.pgm s3.pgm
expect_error 2 "--max-work" "--max-work abc is refused" -k box:3 --max-work abc small.pgm s3.pgm
finish
