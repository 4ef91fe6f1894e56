#!/usr/bin/env bash
# stream.sh - the raw frame stream (imgconv --stream WxHxC, issue 6): frames
# read from stdin come out filtered on stdout, each equal to filtering that
# frame as a PPM file; an empty input gives no output; a short final frame is
# an input error (exit 3, one line) after the complete frames were written;
# malformed sizes are usage errors; 40 frames (the reader, filter and writer
# stages overlapping) come out in order; a closed output pipe is exit 4.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

W=37
H=23
K=(--kernel "1 2 1; 2 4 2; 1 2 1 / 16" --border mirror)
# Three different frames: the pixel bytes of three charts (PPM header cut off).
for i in 1 2 3; do
    "$IMGCONV" --chart ${W}x${H} --seed "$i" "f$i.ppm" || fail "chart $i"
    "$IMGCONV" "${K[@]}" "f$i.ppm" "g$i.ppm" || fail "filter $i"
    tail -c $((W * H * 3)) "f$i.ppm" >"f$i.raw"
    tail -c $((W * H * 3)) "g$i.ppm" >"g$i.raw"
done
cat f1.raw f2.raw f3.raw >in.raw
cat g1.raw g2.raw g3.raw >want.raw

"$IMGCONV" "${K[@]}" --stream ${W}x${H}x3 <in.raw >got.raw 2>err.txt
rc=$?
if [ "$rc" -eq 0 ] && cmp -s got.raw want.raw && [ ! -s err.txt ]; then
    ok "three frames filtered, equal to the file path"
else
    fail "stream of three frames (exit $rc, $(wc -c <got.raw) bytes)"
    head -3 err.txt
fi

"$IMGCONV" "${K[@]}" --stream ${W}x${H}x3 </dev/null >empty.raw 2>err.txt
if [ $? -eq 0 ] && [ ! -s empty.raw ]; then ok "empty input: no frames, exit 0"; else fail "empty input"; fi

# Short final frame: two full frames come out, then the error.
head -c $((2 * W * H * 3 + 100)) in.raw >short.raw
"$IMGCONV" "${K[@]}" --stream ${W}x${H}x3 <short.raw >got2.raw 2>err.txt
rc=$?
head -c $((2 * W * H * 3)) want.raw >want2.raw
if [ "$rc" -eq 3 ] && [ "$(wc -l <err.txt)" -eq 1 ] && grep -q 'short final frame' err.txt &&
    cmp -s got2.raw want2.raw; then
    ok "short final frame: exit 3, the complete frames written"
else
    fail "short final frame (exit $rc)"
    head -3 err.txt
fi

# Single-channel frames.
tail -c $((W * H)) f1.ppm >grey.raw
"$IMGCONV" "${K[@]}" --stream ${W}x${H}x1 <grey.raw >grey.out 2>err.txt
if [ $? -eq 0 ] && [ "$(wc -c <grey.out)" -eq $((W * H)) ]; then ok "1-channel frames"; else fail "1-channel frames"; fi

# 40 distinct frames (more than the reader and writer rings hold, so the
# stages overlap and wrap around): byte for byte the frames filtered one by one
# as files, in order.
W2=61
H2=47
B2=$((W2 * H2 * 3))
K2=(--kernel gaussian:5 --border reflect)
: >in40.raw
: >want40.raw
for i in $(seq 1 40); do
    "$IMGCONV" --chart ${W2}x${H2} --seed $((100 + i)) "c$i.ppm" || fail "chart $i"
    "$IMGCONV" "${K2[@]}" "c$i.ppm" "d$i.ppm" || fail "filter $i"
    tail -c $B2 "c$i.ppm" >>in40.raw
    tail -c $B2 "d$i.ppm" >>want40.raw
done
"$IMGCONV" "${K2[@]}" --stream ${W2}x${H2}x3 <in40.raw >got40.raw 2>err.txt
rc=$?
if [ "$rc" -eq 0 ] && cmp -s got40.raw want40.raw && [ ! -s err.txt ]; then
    ok "40 frames in order, equal to filtering each frame as a file"
else
    fail "stream of 40 frames (exit $rc, $(wc -c <got40.raw) of $(wc -c <want40.raw) bytes)"
    cmp got40.raw want40.raw | head -1
    head -3 err.txt
fi

# A reader that goes away (344 kB of frames into a 64 kB pipe that head closes
# after 100 bytes): a write error, exit 4, one line.
("$IMGCONV" "${K2[@]}" --stream ${W2}x${H2}x3 <in40.raw 2>err.txt; echo $? >rc.txt) |
    head -c 100 >/dev/null
rc=$(cat rc.txt)
if [ "$rc" -eq 4 ] && [ "$(wc -l <err.txt)" -eq 1 ] &&
    grep -q '^imgconv: error: standard output: write error' err.txt; then
    ok "closed output pipe: write error, exit 4"
else
    fail "closed output pipe (exit $rc)"
    head -3 err.txt
fi

expect_error 2 "--stream" "size without channels" "${K[@]}" --stream 10x10
expect_error 2 "--stream" "zero width" "${K[@]}" --stream 0x10x3
expect_error 2 "--stream" "five channels" "${K[@]}" --stream 10x10x5
expect_error 2 "--stream" "file argument with --stream" "${K[@]}" --stream 10x10x3 in.raw

finish
