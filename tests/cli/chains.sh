#!/usr/bin/env bash
# chains.sh - edge strength, --abs and chains of kernels (repeated -k) from
# the command line (docs/cli.md#chains-and-edge-strength): a chain is one
# run whose result is that of its fused kernel where fusing is exact, one
# kernel alone equals its chain with a 1x1 identity, --abs keeps both signs,
# --explain says what fuses, and bad chains are one-line usage errors.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "chart" --chart 61x47 a.ppm

# box:3 then box:3 under wrap is exactly the 5x5 tent 1 2 3 2 1 (outer) / 81.
expect_ok "chain box:3 then box:3, wrap" -k box:3 -k box:3 --border wrap a.ppm c1.ppm
tent="1 2 3 2 1; 2 4 6 4 2; 3 6 9 6 3; 2 4 6 4 2; 1 2 3 2 1 / 81"
expect_ok "the 5x5 tent, wrap" -k "$tent" --border wrap a.ppm c2.ppm
cmp -s c1.ppm c2.ppm && ok "wrap chain = its fused kernel" || fail "wrap chain = its fused kernel"
run -k box:3 -k box:3 --border wrap --explain a.ppm c3.ppm
grep -q "1 step after fusion" "$OUT" && grep -q "fused into one" "$OUT" &&
    ok "--explain: wrap fuses" || { fail "--explain: wrap fuses"; show_last; }
# Mirror extends evenly, which a symmetric first kernel keeps: exact too.
run -k box:3 -k box:3 --explain a.ppm c4.ppm
grep -q "1 step after fusion" "$OUT" && ok "--explain: mirror fuses symmetric kernels" ||
    { fail "--explain: mirror fuses symmetric kernels"; show_last; }
expect_ok "the 5x5 tent, mirror" -k "$tent" a.ppm c5.ppm
cmp -s c4.ppm c5.ppm && ok "mirror chain = its fused kernel" || fail "mirror chain = its fused kernel"
# Replicate does not: the chain differs from the tent at the edges.
run -k box:3 -k box:3 --border replicate --explain a.ppm c6.ppm
grep -q "2 steps after fusion" "$OUT" && grep -q "not fused" "$OUT" &&
    ok "--explain: replicate does not fuse" || { fail "--explain: replicate does not fuse"; show_last; }
expect_ok "the 5x5 tent, replicate" -k "$tent" --border replicate a.ppm c7.ppm
cmp -s c6.ppm c7.ppm && fail "replicate chain differs from the fused kernel at the border" ||
    ok "replicate chain differs from the fused kernel at the border"

# A 1x1 identity step changes nothing; sobel alone is its one-step chain.
expect_ok "sobel" -k sobel a.ppm s1.ppm
expect_ok "identity then sobel" -k identity -k sobel a.ppm s2.ppm
cmp -s s1.ppm s2.ppm && ok "identity then sobel = sobel" || fail "identity then sobel = sobel"
cmp -s s1.ppm a.ppm && fail "sobel changes the image" || ok "sobel changes the image"

# --abs: sobel-x keeps both edges of a bright bar; without it one is 0.
printf 'P5\n9 3\n255\n' >bar.pgm
for _ in 1 2 3; do printf '\0\0\0\0\144\0\0\0\0' >>bar.pgm; done
expect_ok "sobel-x" -k sobel-x bar.pgm x1.pgm
expect_ok "sobel-x --abs" -k sobel-x --abs bar.pgm x2.pgm
row() { tail -c 9 "$1" | od -An -tu1 | tr -s ' ' | sed 's/^ //'; }
[ "$(row x2.pgm)" = "0 0 0 255 0 255 0 0 0" ] && ok "--abs: both sides (255 0 255)" ||
    fail "--abs: both sides, got '$(row x2.pgm)'"
[ "$(row x1.pgm)" != "$(row x2.pgm)" ] && ok "without --abs one side is 0" ||
    fail "without --abs one side is 0, got '$(row x1.pgm)'"

expect_error 2 "--kernel" "an empty kernel in a chain" -k box:3 -k "" a.ppm e1.ppm
expect_error 2 "--kernel" "a bad kernel in a chain" -k box:3 -k "1 2; 3" a.ppm e2.ppm
expect_error 2 "chain" "a chain with --outdir" -k box:3 -k box:3 -o out a.ppm
expect_error 2 "chain" "a chain with --stream" -k box:3 -k box:3 --stream 4x4x1
expect_error 2 "--signal" "a chain with --signal" --signal -k box:3 -k box:3 a.txt b.txt
many=()
for _ in $(seq 17); do many+=(-k identity); done
expect_error 2 "16 kernels" "17 kernels" "${many[@]}" a.ppm e3.ppm
[ -e e1.ppm ] || [ -e e2.ppm ] || [ -e e3.ppm ] && fail "an output was written" ||
    ok "nothing written on errors"
finish
