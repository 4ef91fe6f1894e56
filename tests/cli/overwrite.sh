#!/usr/bin/env bash
# overwrite.sh - single mode never destroys a picture by surprise: OUTPUT may
# not be INPUT's file (by name, through a link, or as standard input's file),
# an existing image is replaced only with --overwrite (a file that is not an
# image is replaced, as before), and a directory as OUTPUT points to -o DIR.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "a valid input" --chart 40x30 a.ppm
expect_ok "a second image" --chart 40x30 --seed 2 b.ppm
A=$(checksum a.ppm)
B=$(checksum b.ppm)

# INPUT - with standard input redirected from OUTPUT.
LAST_CMD="imgconv -k box:3 - a.ppm < a.ppm"
"$IMGCONV" -k box:3 - a.ppm <a.ppm >"$OUT" 2>"$ERR"
RC=$?
if [ "$RC" -eq 4 ] && grep -q "same file as standard input" "$ERR" && [ "$(checksum a.ppm)" = "$A" ]; then
    ok "OUTPUT that is standard input's file is refused (exit 4), left intact"
else
    fail "OUTPUT that is standard input's file"
    show_last
fi
# ... also with --overwrite: the input is never overwritten.
"$IMGCONV" -k box:3 --overwrite - a.ppm <a.ppm >"$OUT" 2>"$ERR"
RC=$?
[ "$RC" -eq 4 ] && [ "$(checksum a.ppm)" = "$A" ] && ok "... also with --overwrite" ||
    fail "--overwrite - a.ppm < a.ppm: exit $RC"

# The same file through another path: a hard link and a symbolic link.
ln a.ppm hard.ppm
ln -s a.ppm soft.ppm
expect_error 4 "hard.ppm" "OUTPUT a hard link to INPUT" -k box:3 --overwrite a.ppm hard.ppm
expect_error 4 "soft.ppm" "OUTPUT a symbolic link to INPUT" -k box:3 --overwrite a.ppm soft.ppm
expect_error 4 "a.ppm" "OUTPUT INPUT through ./" -k box:3 --overwrite ./a.ppm a.ppm
[ "$(checksum a.ppm)" = "$A" ] && ok "INPUT intact" || fail "INPUT changed"

# imgconv -k X a.ppm b.ppm, with b.ppm an image: refused without --overwrite.
expect_error 4 "b.ppm" "an existing image as OUTPUT" -k box:3 a.ppm b.ppm
grep -q -- "--overwrite" "$ERR" && ok "the message names --overwrite" || fail "no --overwrite hint"
[ "$(checksum b.ppm)" = "$B" ] && ok "the existing image is intact" || fail "b.ppm changed"
expect_ok "--overwrite replaces it" -k box:3 --overwrite a.ppm b.ppm
[ "$(checksum b.ppm)" != "$B" ] && ok "b.ppm replaced" || fail "b.ppm not replaced"
# Every format built in is recognised as an image.
for ext in png jpg tif webp; do
    fmt=$ext
    [ "$ext" = jpg ] && fmt=jpeg
    [ "$ext" = tif ] && fmt=tiff
    has_format "$fmt" || continue
    "$IMGCONV" --chart 16x16 "old.$ext" || fail "cannot write old.$ext"
    expect_error 4 "old.$ext" "an existing .$ext image as OUTPUT" -k box:3 a.ppm "old.$ext"
done
# A file that is not an image (empty, or text) is replaced as before.
: >empty.ppm
echo "notes" >text.ppm
expect_ok "an empty OUTPUT is replaced" -k box:3 a.ppm empty.ppm
expect_ok "a text OUTPUT is replaced" -k box:3 a.ppm text.ppm
"$IMGCONV" -k identity empty.ppm fresh.ppm 2>/dev/null && ok "... with an image" || fail "empty.ppm"

# A directory as OUTPUT: the hint is -o DIR.
mkdir outdir
expect_error 4 "-o outdir" "a directory as OUTPUT hints -o DIR" -k box:3 a.ppm outdir
expect_error 4 "-o outdir/" "... also written with a slash" -k box:3 a.ppm outdir/

# An unknown extension: the message lists the formats built in, from the table.
expect_error 4 "x.bmp" "unknown output format" -k box:3 a.ppm x.bmp
for fmt in pnm png jpeg tiff webp; do
    if has_format "$fmt"; then
        grep -q "\.$fmt" "$ERR" && ok "lists .$fmt (built in)" || fail "does not list .$fmt"
    else
        grep -q "\.$fmt" "$ERR" && fail "lists .$fmt, not built in" || ok "omits .$fmt (not built in)"
    fi
done

# -q, --json and --overwrite are accepted in single mode.
rm -f q.ppm j.ppm
expect_ok "-q without -o" -k box:3 -q a.ppm q.ppm
run -k box:3 --json a.ppm j.ppm
if [ "$RC" -eq 0 ] && grep -q '"output": "j.ppm"' "$OUT" && grep -q '"width": 40' "$OUT"; then
    ok "--json without -o prints one JSON line"
else
    fail "--json without -o"
    show_last
fi
expect_error 2 "--json" "--json with OUTPUT -" -k box:3 --json --format ppm a.ppm -

# Repeated -k chain (tests/cli/chains.sh); --kernel-file beside -k is
# refused, not chained or dropped.
expect_error 2 "--kernel-file" "-k and --kernel-file" -k box:3 --kernel-file k.txt a.ppm k2.ppm
expect_error 2 "--kernel-file" "--kernel-file twice" --kernel-file k.txt --kernel-file k.txt a.ppm k2.ppm
[ -e k2.ppm ] && fail "k2.ppm written" || ok "nothing written"
finish
