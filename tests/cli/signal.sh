#!/usr/bin/env bash
# signal.sh - `imgconv --signal` end to end: text (one number a line, and
# comma-separated) and raw little-endian float32 in and out, the kernel's
# orientation, border modes, a 2D kernel reduced to its column sums, the
# backends agreeing, and the errors (2 usage, 3 input, 4 output, 5 backend)
# with one stderr line, no output file and no temporary file left behind.
# Skips (77) when this CLI has no --signal yet.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

if ! "$IMGCONV" --signal --help >/dev/null 2>&1; then
    echo "SKIPPED: this imgconv has no --signal"
    exit 77
fi

# same DESC FILE EXPECTED: FILE holds exactly EXPECTED (printf format).
same() {
    local want
    want=$(printf -- "$3")
    if [ -f "$2" ] && [ "$(cat "$2")" = "$want" ]; then
        ok "$1"
    else
        fail "$1: got '$(cat "$2" 2>/dev/null | tr '\n' ' ')', want '$(echo "$want" | tr '\n' ' ')'"
    fi
}

# hex FILE: the bytes of FILE as hex pairs on one line.
hex() { od -An -v -tx1 "$1" | tr -s ' \n' ' ' | sed 's/^ //; s/ $//'; }

printf '0\n0\n4\n0\n0\n' >impulse.txt
expect_ok "text, one number a line" --signal --kernel "1 2 1 / 4" impulse.txt out.txt
same "impulse through 1 2 1 / 4" out.txt '0\n1\n2\n1\n0'

printf '1,2,3,4,5\n' >ramp.csv
expect_ok "comma-separated text" --signal --kernel "1 0 -1" --border constant ramp.csv d.csv
same "convolution with 1 0 -1 (zero border), commas kept" d.csv '2,2,2,2,-4'
expect_ok "--correlate" --signal --kernel "1 0 -1" --border constant --correlate ramp.csv c.csv
same "correlation with 1 0 -1" c.csv '-2,-2,-2,-2,4'

printf '4\n4\n4\n' >flat.txt
expect_ok "--border replicate" --signal --kernel "1 2 1 / 4" --border replicate flat.txt r.txt
same "a flat signal stays flat with replicate" r.txt '4\n4\n4'
expect_ok "--border constant" --signal --kernel "1 2 1 / 4" --border constant flat.txt z.txt
same "zero ghost cells pull the ends down" z.txt '3\n4\n3'
expect_ok "--border-value and --bias" --signal --kernel "1 2 1 / 4" --border constant \
    --border-value 8 --bias 1 \
    flat.txt v.txt
same "border value 8, bias 1" v.txt '6\n5\n6'
expect_ok "default border" --signal --kernel "1 2 1 / 4" ramp.csv dm.csv
same "the default border is mirror (2 1 2 .. 4 5 4)" dm.csv '1.5,2,3,4,4.5'

printf '# a trace\n 1.5 , 2.5\n\n3.5,4.5 # end\n' >messy.txt
expect_ok "comments, blanks and commas" --signal --kernel 1 messy.txt m.txt
same "identity kernel keeps the values" m.txt '1.5,2.5,3.5,4.5'

expect_ok "a 2D kernel" --signal --kernel "1 2 1; 2 4 2; 1 2 1 / 16" impulse.txt k2.txt
same "3x3 binomial reduced to 1 2 1 / 4" k2.txt '0\n1\n2\n1\n0'

# raw float32: 1 2 4 (little-endian) with 1 2 1 / 4, replicate -> 1.25 2.25 3.5
printf '\x00\x00\x80\x3f\x00\x00\x00\x40\x00\x00\x80\x40' >in.f32
expect_ok "raw float32" --signal --kernel "1 2 1 / 4" --border replicate in.f32 out.f32
if [ "$(hex out.f32)" = "00 00 a0 3f 00 00 10 40 00 00 60 40" ]; then
    ok "float32 bytes 1.25 2.25 3.5"
else
    fail "float32 bytes: got $(hex out.f32)"
fi
expect_ok "--format f32 on any name" --signal --format f32 --kernel "1 2 1 / 4" \
    --border replicate in.f32 out.dat
if cmp -s out.f32 out.dat; then ok "--format f32 output"; else fail "--format f32 output differs"; fi

# the backends agree on a longer signal (cuda only where usable)
awk 'BEGIN { for (i = 0; i < 5000; i++) printf "%d\n", (i * 37) % 101 - 50 }' >long.txt
expect_ok "backend cpu" --signal --kernel "1 4 6 4 1 / 16" --border mirror --backend cpu \
    long.txt cpu.txt
run --signal --kernel "1 4 6 4 1 / 16" --border mirror --backend cuda long.txt cuda.txt
if [ "$RC" -eq 0 ]; then
    if cmp -s cpu.txt cuda.txt; then ok "cuda output equals cpu"; else fail "cuda output differs"; fi
elif [ "$RC" -eq 5 ] && [ "$(wc -l <"$ERR")" -eq 1 ] && grep -q '^imgconv: error: ' "$ERR"; then
    ok "no usable CUDA: exit 5 with one line"
else
    fail "--backend cuda"
    show_last
fi

# errors
expect_error 3 missing.txt "missing input" --signal --kernel 1 missing.txt o.txt
printf '1,x,3\n' >bad.txt
expect_error 3 bad.txt "not a number" --signal --kernel 1 bad.txt o.txt
printf '1,,3\n' >empty.txt
expect_error 3 empty.txt "empty value" --signal --kernel 1 empty.txt o.txt
printf '1\nnan\n' >nan.txt
expect_error 3 nan.txt "NaN sample" --signal --kernel 1 nan.txt o.txt
printf '# nothing\n' >none.txt
expect_error 3 none.txt "no samples" --signal --kernel 1 none.txt o.txt
printf '\x00\x00\x80\x3f\x00' >odd.f32
expect_error 3 odd.f32 "float32 file of 5 bytes" --signal --kernel 1 odd.f32 o.f32
expect_error 2 --format "unknown format" --signal --format csv --kernel 1 impulse.txt o.txt
expect_error 2 "1 2" "even kernel" --signal --kernel "1 2" impulse.txt o.txt
expect_error 2 --kernel "no kernel" --signal impulse.txt o.txt
expect_error 2 OUTPUT "one file only" --signal --kernel 1 impulse.txt
expect_error 2 --bogus "unknown option" --signal --bogus --kernel 1 impulse.txt o.txt
expect_error 5 fpga "unknown backend" --signal --kernel 1 --backend fpga impulse.txt o.txt
expect_error 4 nodir/o.txt "missing output directory" --signal --kernel 1 impulse.txt nodir/o.txt
expect_error 4 impulse.txt "output is the input" --signal --kernel 1 impulse.txt impulse.txt
same "the input is untouched" impulse.txt '0\n0\n4\n0\n0'
for f in o.txt o.f32; do
    if [ -e "$f" ]; then fail "an error left $f behind"; else ok "no $f after the errors"; fi
done
if ls -A | grep -q '\.tmp-'; then fail "temporary files left: $(ls -A | grep '\.tmp-')"; else ok "no temporary file left"; fi

finish
