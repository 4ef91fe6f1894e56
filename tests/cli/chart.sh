#!/usr/bin/env bash
# chart.sh - `imgconv --chart WxH[xC] [--seed S] OUTPUT`: the test chart is
# deterministic (same size and seed -> identical bytes), the seed changes the
# noise, any size and channel count works, and bad specs are usage errors.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "chart 97x61 (odd size) as PPM" --chart 97x61 a.ppm
expect_ok "same chart again" --chart 97x61 b.ppm
cmp -s a.ppm b.ppm && ok "same size and seed give identical bytes" || fail "same size and seed give identical bytes"
head -c 2 a.ppm | grep -q P6 && ok "3 channels by default (P6)" || fail "3 channels by default (P6)"
expect_ok "explicit seed 1 = default" --chart 97x61 --seed 1 c.ppm
cmp -s a.ppm c.ppm && ok "seed 1 is the default" || fail "seed 1 is the default"
expect_ok "seed 7" --chart 97x61 --seed 7 d.ppm
expect_ok "seed 7 again" --chart 97x61 --seed 7 e.ppm
cmp -s d.ppm e.ppm && ok "seed 7 twice: identical" || fail "seed 7 twice: identical"
cmp -s a.ppm d.ppm && fail "another seed changes the chart" || ok "another seed changes the chart"
expect_ok "grey chart 33x17x1" --chart 33x17x1 g.pgm
head -c 2 g.pgm | grep -q P5 && ok "1 channel gives P5" || fail "1 channel gives P5"
[ "$(wc -c <g.pgm)" -eq $((33 * 17 + $(head -n 3 g.pgm | wc -c))) ] && ok "PGM size matches 33x17" || fail "PGM size matches 33x17"
expect_ok "1x1 chart" --chart 1x1 one.ppm
expect_ok "1024x768 chart" --chart 1024x768 big.ppm
[ "$(head -n 2 big.ppm | tail -n 1)" = "1024 768" ] && ok "1024x768 header" || fail "1024x768 header"

if has_format png; then
    expect_ok "RGBA chart as PNG" --chart 64x48x4 --seed 3 a.png
    expect_ok "RGBA chart as PNG again" --chart 64x48x4 --seed 3 b.png
    cmp -s a.png b.png && ok "PNG chart deterministic" || fail "PNG chart deterministic"
    expect_ok "grey+alpha chart as PNG" --chart 64x48x2 ga.png
else
    echo "skip PNG charts (PNG not built in)"
fi

for bad in 0x10 10x0 -5x10 10 10x 10x10x5 10x10x0 axb 10x10x3x1 "10 x10" 1048577x1 ""; do
    expect_error 2 "--chart" "bad chart size '$bad'" --chart "$bad" bad.ppm
done
expect_error 2 "--max-pixels" "chart over --max-pixels" --chart 100x100 --max-pixels 9999 bad.ppm
expect_error 2 "--seed" "bad seed" --chart 8x8 --seed 4294967296 bad.ppm
expect_error 2 "--seed" "negative seed" --chart 8x8 --seed -1 bad.ppm
expect_error 2 "--kernel" "--kernel does not apply to --chart" --chart 8x8 --kernel box:3 bad.ppm
expect_error 2 "OUTPUT" "chart without OUTPUT" --chart 8x8
expect_error 2 "--seed" "--seed without --chart" --seed 3 --kernel box in.ppm out.ppm
expect_error 4 "bad.xyz" "unknown output extension" --chart 8x8 bad.xyz
expect_error 4 "nodir/c.ppm" "output into a missing directory" --chart 8x8 nodir/c.ppm
[ ! -e bad.ppm ] && [ ! -e bad.xyz ] && [ ! -e nodir ] && ok "no output file from failed charts" || fail "no output file from failed charts"

finish
