#!/usr/bin/env bash
# depth.sh - 16-bit samples through the command line (issue 15): a 16-bit PPM
# stays 16-bit through PNG, TIFF and PPM outputs, standard input and output,
# and the identity kernel gives its samples back exactly; a JPEG or WebP
# output is written at 8 bits with one line on stderr saying so; --explain
# shows the depth.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

# 5x3 RGB, maxval 65535, samples near 0, near 65535 and in between (big-endian)
python3 - <<'PY' || fail "python3 writes the 16-bit PPM"
import struct
vals = [0, 1, 255, 256, 257, 1000, 32767, 32768, 40001, 65280, 65534, 65535, 12345, 54321, 7]
data = b"".join(struct.pack(">H", vals[(i * 7) % len(vals)]) for i in range(5 * 3 * 3))
open("in16.ppm", "wb").write(b"P6\n5 3\n65535\n" + data)
PY

run --kernel 1 in16.ppm id.ppm
[ "$RC" -eq 0 ] && cmp -s id.ppm in16.ppm && ok "identity kernel: 16-bit PPM out equals the input" ||
    { fail "identity 16-bit PPM"; show_last; }
for f in png tiff; do
    has_format "$f" || continue
    ext=$f
    [ "$f" = tiff ] && ext=tif
    run --kernel 1 in16.ppm "mid.$ext"
    run2=$RC
    run --kernel 1 "mid.$ext" "back_$f.ppm"
    [ "$run2" -eq 0 ] && [ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && cmp -s "back_$f.ppm" in16.ppm &&
        ok "16 bits survive a $f file" || { fail "16-bit $f round trip"; show_last; }
done
run --kernel 1 --format ppm - - <in16.ppm
[ "$RC" -eq 0 ] && cmp -s "$OUT" in16.ppm && ok "16-bit PPM through a pipe" ||
    { fail "16-bit pipe"; show_last; }
run --kernel box:3 in16.ppm box.ppm
[ "$RC" -eq 0 ] && [ "$(head -c 13 box.ppm)" = "$(printf 'P6\n5 3\n65535\n')" ] &&
    ok "a box filter writes 16 bits" || { fail "box 16-bit header"; show_last; }
for f in jpeg webp; do
    has_format "$f" || continue
    ext=$f
    [ "$f" = jpeg ] && ext=jpg
    name=JPEG
    [ "$f" = webp ] && name=WebP
    run --kernel 1 in16.ppm "low.$ext"
    want="imgconv: low.$ext: 16-bit samples written as 8-bit ($name holds 8 bits)"
    [ "$RC" -eq 0 ] && [ -s "low.$ext" ] && [ "$(cat "$ERR")" = "$want" ] &&
        ok "$f output: 8 bits and one line on stderr" || { fail "$f notice"; show_last; }
done
run --kernel 1 in16.ppm low8.ppm
[ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && ok "no notice when the output keeps 16 bits" ||
    { fail "spurious notice"; show_last; }
run --explain --kernel box:3 in16.ppm e.png
[ "$RC" -eq 0 ] && grep -q "of 16 bits" "$OUT" && grep -q "png, 16 bits" "$OUT" &&
    ok "--explain shows the depth" || { fail "--explain depth"; show_last; }
finish
