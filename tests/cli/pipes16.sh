#!/usr/bin/env bash
# pipes16.sh - 16-bit images through pipes (issue 15): INPUT - takes a 16-bit
# PNG, PGM, PPM or TIFF from standard input (format from the magic bytes) and
# OUTPUT - writes 16-bit PNG, PNM or TIFF in the --format given, byte for byte
# what the same run writes to a file, 16 bits kept; a TIFF cut short on
# standard input is one line, exit 3, nothing on standard output.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
command -v python3 >/dev/null || {
    echo "SKIP: no python3"
    exit 77
}

python3 - <<'PY' || fail "python3 writes the 16-bit PNM files"
import struct
for name, magic, c in (("in.ppm", b"P6", 3), ("in.pgm", b"P5", 1)):
    vals = [(i * 40503 + 7) % 65536 for i in range(9 * 7 * c)]
    open(name, "wb").write(magic + b"\n9 7\n65535\n" + struct.pack(">%dH" % len(vals), *vals))
PY
K=(--kernel "1 2 1; 2 4 2; 1 2 1 / 16")
HDR16=$(printf 'P6\n9 7\n65535\n')

# every 16-bit input format on standard input; the file run as the reference
ins=(in.ppm in.pgm)
has_format png && "$IMGCONV" --kernel 1 in.ppm in.png && ins+=(in.png)
has_format tiff && "$IMGCONV" --kernel 1 in.ppm in.tif && ins+=(in.tif)
for f in "${ins[@]}"; do
    ext=ppm
    [ "$f" = in.pgm ] && ext=pgm
    "$IMGCONV" "${K[@]}" "$f" "want_$f.$ext" || fail "file run of $f"
    run "${K[@]}" - "got_$f.$ext" <"$f"
    [ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && cmp -s "got_$f.$ext" "want_$f.$ext" &&
        ok "16-bit ${f#in.} on standard input: the file run's output" || { fail "stdin $f"; show_last; }
done
[ "$(head -c 13 want_in.ppm.ppm)" = "$HDR16" ] && ok "the reference keeps 16 bits" ||
    fail "reference is not 16-bit"
cmp -s want_in.ppm.ppm in.ppm && fail "the filter changed nothing: the test proves nothing"

# OUTPUT - in each 16-bit format: the bytes of the file output
outs=(ppm pnm)
has_format png && outs+=(png)
has_format tiff && outs+=(tif)
for fmt in "${outs[@]}"; do
    "$IMGCONV" "${K[@]}" in.ppm "file.$fmt" || fail "file output $fmt"
    run "${K[@]}" --format "$fmt" - - <in.ppm
    if [ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && cmp -s "$OUT" "file.$fmt"; then
        "$IMGCONV" --kernel 1 "file.$fmt" "back_$fmt.ppm"
        cmp -s "back_$fmt.ppm" want_in.ppm.ppm &&
            ok "OUTPUT - as $fmt: the file's bytes, 16 bits kept" || fail "$fmt lost samples"
    else
        fail "OUTPUT - as $fmt"
        show_last
    fi
done

if has_format tiff; then
    n=$(wc -c <in.tif)
    head -c $((n / 2)) in.tif >cut.tif
    run "${K[@]}" --format png - - <cut.tif
    [ "$RC" -eq 3 ] && [ ! -s "$OUT" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
        grep -q '^imgconv: error: -: ' "$ERR" && ok "a cut TIFF on standard input: one line, exit 3" ||
        { fail "cut TIFF on stdin"; show_last; }
else
    echo "(TIFF part skipped: built without TIFF)"
fi
finish
