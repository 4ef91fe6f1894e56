#!/usr/bin/env bash
# pipes.sh - INPUT - reads standard input (format from the magic bytes),
# OUTPUT - writes standard output in the --format given (issue 15): results
# equal the file-to-file command's byte for byte, and the misuses are usage
# errors or a clean input error.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

"$IMGCONV" --chart 96x64 --seed 4 in.ppm || fail "chart"
K=(--kernel gaussian:5)
"$IMGCONV" "${K[@]}" in.ppm ref.ppm || fail "reference"

"$IMGCONV" "${K[@]}" - out1.ppm <in.ppm && cmp -s out1.ppm ref.ppm &&
    ok "cat in.ppm | imgconv - out.ppm" || fail "INPUT -"
"$IMGCONV" "${K[@]}" --format ppm in.ppm - >out2.ppm && cmp -s out2.ppm ref.ppm &&
    ok "imgconv in.ppm - --format ppm > out" || fail "OUTPUT -"
cat in.ppm | "$IMGCONV" "${K[@]}" --format ppm - - | cat >out3.ppm && cmp -s out3.ppm ref.ppm &&
    ok "a pipe on both sides" || fail "- to -"
for f in png jpeg tiff webp; do
    has_format "$f" || continue
    ext=$f
    [ "$f" = jpeg ] && ext=jpg
    [ "$f" = tiff ] && ext=tif
    "$IMGCONV" --kernel 1 in.ppm "in.$ext" || fail "in.$ext"
    "$IMGCONV" "${K[@]}" "in.$ext" "ref.$ext" || fail "ref.$ext"
    "$IMGCONV" "${K[@]}" --format "$ext" - - <"in.$ext" >"pipe.$ext" && cmp -s "pipe.$ext" "ref.$ext" &&
        ok "$f through a pipe equals the file-to-file output" || fail "$f through a pipe"
done

expect_error 2 "needs --format" "OUTPUT - without --format" "${K[@]}" in.ppm -
expect_error 2 "--format needs" "--format with a file OUTPUT" "${K[@]}" --format png in.ppm o.png
expect_error 2 "--time" "--time with OUTPUT -" "${K[@]}" --time --format ppm in.ppm -
printf 'GIF89a not an image we read' >junk
run "${K[@]}" - o.ppm <junk
if [ "$RC" -eq 3 ] && grep -q '^imgconv: error: -: not a PNG/JPEG/TIFF/WebP/PNM file$' "$ERR" &&
    [ ! -e o.ppm ]; then
    ok "garbage on standard input: exit 3, one line naming -"
else
    fail "garbage on standard input"
    show_last
fi
run "${K[@]}" - o.ppm </dev/null
if [ "$RC" -eq 3 ] && grep -q 'empty file' "$ERR"; then ok "empty standard input: exit 3"; else
    fail "empty standard input"
    show_last
fi
finish
