#!/usr/bin/env bash
# stream16.sh - 16-bit raw frames through --stream WxHxC:16 (issue 15):
# little-endian samples (ffmpeg's rgb48le, gray16le) are filtered at 16 bits,
# each frame equal to the same frame filtered as a 16-bit PNM file by the same
# backend, and to a float64 oracle (tests/cli/raw16.py; the kernel's sums are
# exact in float32, so rounding half to even gives every sample exactly), on
# seq, cpu and the auto backend (cuda on a GPU machine); --border-value
# reaches 65535; a short final frame (an odd byte count) is exit 3 after the
# complete frames; --max-memory counts 2 bytes a sample; malformed depths
# are usage errors.
source "$(dirname "$0")/common.bash"
RAW16="python3 $(cd "$(dirname "$0")" && pwd)/raw16.py"
cd "$TMP" || exit 1
command -v python3 >/dev/null || {
    echo "SKIP: no python3"
    exit 77
}

W=37
H=23
K=(--kernel "1 2 1; 2 4 2; 1 2 1 / 16" --border mirror)
$RAW16 frames 7 $W $H 3 3 in.raw f || fail "raw16.py writes RGB frames"
$RAW16 frames 8 $W $H 1 2 grey.raw g || fail "raw16.py writes grey frames"
$RAW16 oracle $W $H 3 mirror 0 in.raw oracle.raw || fail "oracle RGB"
$RAW16 oracle $W $H 1 mirror 0 grey.raw oracle_grey.raw || fail "oracle grey"
[ "$(wc -c <in.raw)" -eq $((3 * W * H * 3 * 2)) ] || fail "in.raw size"

# seq, cpu, and the auto backend when it is another one (cuda on a GPU machine)
auto=$("$IMGCONV" --list-backends | sed -n 's/.*auto = \([a-z0-9-]*\) here.*/\1/p')
backends=(seq cpu)
case "$auto" in "" | seq | cpu) ;; *) backends+=(auto) ;; esac

for b in "${backends[@]}"; do
    # The same frames as 16-bit PPM files, filtered one by one by imgconv.
    for i in 1 2 3; do
        "$IMGCONV" "${K[@]}" --overwrite --backend "$b" "f$i.pnm" "o$i.ppm" || fail "$b: filter f$i.pnm"
    done
    $RAW16 pnm2raw o1.ppm o2.ppm o3.ppm want.raw || fail "pnm2raw"
    "$IMGCONV" "${K[@]}" --backend "$b" --stream ${W}x${H}x3:16 <in.raw >got.raw 2>err.txt
    rc=$?
    if [ "$rc" -eq 0 ] && [ ! -s err.txt ] && cmp -s got.raw want.raw; then
        ok "$b: three rgb48le frames equal to the 16-bit PPM path"
    else
        fail "$b: 16-bit stream against the PPM path (exit $rc, $(wc -c <got.raw) bytes)"
        cmp got.raw want.raw | head -1
        head -3 err.txt
    fi
    cmp -s got.raw oracle.raw && ok "$b: equal to the float64 oracle" ||
        { fail "$b: against the oracle"; cmp oracle.raw got.raw | head -1; }

    "$IMGCONV" "${K[@]}" --backend "$b" --stream ${W}x${H}x1:16 <grey.raw >got_grey.raw 2>err.txt
    rc=$?
    [ "$rc" -eq 0 ] && cmp -s got_grey.raw oracle_grey.raw && ok "$b: gray16le frames (oracle)" ||
        { fail "$b: gray16le frames (exit $rc)"; head -3 err.txt; }
done

# The oracle is not trivially equal to the input, and an 8-bit reading of
# the same bytes (twice the width) gives something else.
cmp -s oracle.raw in.raw && fail "the oracle equals the input: the test proves nothing"
"$IMGCONV" "${K[@]}" --stream $((2 * W))x${H}x3 <in.raw >as8.raw 2>/dev/null
cmp -s as8.raw oracle.raw && fail "an 8-bit stream gives the 16-bit result: the test proves nothing" ||
    ok "an 8-bit reading of the same bytes differs"

# --border constant with a 16-bit value (beyond 8-bit's 0..255).
"$IMGCONV" --kernel "1 2 1; 2 4 2; 1 2 1 / 16" --border constant --border-value 60000 \
    --stream ${W}x${H}x3:16 <in.raw >got_c.raw 2>err.txt
rc=$?
$RAW16 oracle $W $H 3 constant 60000 in.raw oracle_c.raw
[ "$rc" -eq 0 ] && cmp -s got_c.raw oracle_c.raw && ok "--border-value 60000 on a 16-bit stream" ||
    { fail "--border-value 60000 (exit $rc)"; head -3 err.txt; }
expect_error 2 "--border-value" "--border-value over 65535" "${K[@]}" --border-value 65536 \
    --stream 10x10x3:16
expect_error 2 "--border-value" "--border-value over 255 on an 8-bit stream" "${K[@]}" \
    --border-value 256 --stream 10x10x3

# :8 is the 8-bit default written out.
head -c $((W * H * 3 * 4)) in.raw >b8.raw
"$IMGCONV" "${K[@]}" --stream ${W}x${H}x3 <b8.raw >a.raw &&
    "$IMGCONV" "${K[@]}" --stream ${W}x${H}x3:8 <b8.raw >b.raw && cmp -s a.raw b.raw &&
    ok ":8 is the default" || fail ":8 against the default"

# Short final frame: the two complete frames come out, then one line, exit 3
# (101 extra bytes: half a sample at the end).
F=$((W * H * 3 * 2))
head -c $((2 * F + 101)) in.raw >short.raw
"$IMGCONV" "${K[@]}" --stream ${W}x${H}x3:16 <short.raw >got2.raw 2>err.txt
rc=$?
head -c $((2 * F)) oracle.raw >want2.raw
if [ "$rc" -eq 3 ] && [ "$(wc -l <err.txt)" -eq 1 ] &&
    grep -q "short final frame: 101 of $F bytes (frame 3)" err.txt && cmp -s got2.raw want2.raw; then
    ok "short final 16-bit frame: exit 3, the complete frames written"
else
    fail "short final 16-bit frame (exit $rc)"
    head -3 err.txt
fi

# Frames in flight: 8 frames of 100x100x3 take 240000 bytes at 8 bits and
# 480000 at 16; --max-memory 300000 allows the first only.
"$IMGCONV" "${K[@]}" --max-memory 300000 --stream 100x100x3 </dev/null >/dev/null 2>err.txt &&
    ok "--max-memory 300000: 8-bit frames fit" || { fail "--max-memory 8-bit"; head -3 err.txt; }
expect_error 2 "--max-memory" "--max-memory counts 2 bytes a sample" "${K[@]}" \
    --max-memory 300000 --stream 100x100x3:16

for bad in 10x10x3:12 10x10x3: 10x10x3:16:16 10x10:16 :16 10x10x3:016x 10x10x3x16 10x10x5:16; do
    expect_error 2 "--stream '$bad'" "--stream $bad" "${K[@]}" --stream "$bad"
done

finish
