#!/usr/bin/env bash
# devices.sh - --devices LIST (issue 6, "Several GPUs"): the refusals, which
# need no GPU (bad lists, too many devices, --device with --devices, a CPU
# backend named or picked by auto, --chart), each one line and exit 2; and,
# where a CUDA backend is usable, that one image split across {0,0} and a
# batch spread over {0,0} give the one-device output byte for byte.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

make_pgm in.pgm 4 3 10 20 30 40 50 60 70 80 90 100 110 120
K=(--kernel gaussian:3)

# ---- bad lists: usage errors naming --devices ----------------------------------
for bad in "" "," "0," ",0" "0,,1" "x" "0,x" "-1" "0,-1" "1024" "0 1" " 0" "1.5" "al" "ALL"; do
    expect_error 2 "--devices" "--devices '$bad' refused" "${K[@]}" --devices "$bad" in.pgm o.pgm
done
seventeen=$(seq -s, 0 16)
sixteen=$(seq -s, 0 15)
expect_error 2 "more than 16 devices" "17 devices refused" "${K[@]}" --devices "$seventeen" \
    in.pgm o.pgm
# 16 entries parse: what follows is about the backend, not the list.
run "${K[@]}" --devices "$sixteen" --backend cpu in.pgm o.pgm
if [ "$RC" -eq 2 ] && grep -q "needs a CUDA backend" "$ERR" && ! grep -q "more than" "$ERR"; then
    ok "16 devices parse (then refused for --backend cpu)"
else
    fail "16 devices"
    show_last
fi
expect_error 2 "--devices" "--devices without a value" "${K[@]}" in.pgm o.pgm --devices

# ---- CPU backends --------------------------------------------------------------
for b in cpu seq; do
    expect_error 2 "needs a CUDA backend" "--devices with --backend $b" \
        "${K[@]}" --backend "$b" --devices 0 in.pgm o.pgm
    expect_error 2 "needs a CUDA backend" "--devices 0,0 with --backend $b, batch" \
        "${K[@]}" --backend "$b" --devices 0,0 -o outdir in.pgm
    expect_error 2 "needs a CUDA backend" "--devices 0,1 with --backend $b, stream" \
        "${K[@]}" --backend "$b" --devices 0,1 --stream 4x3x1
done
[ ! -e o.pgm ] && [ ! -e outdir ] && ok "nothing written by the refusals" ||
    fail "a refused command wrote a file"

expect_error 2 "cannot be combined" "--device with --devices" \
    "${K[@]}" --device 0 --devices 0,0 in.pgm o.pgm
expect_error 2 "--devices" "--devices with --chart" --chart 8x8 --devices 0 c.ppm

run --help
grep -q -- "--devices LIST" "$OUT" && ok "--help documents --devices" ||
    fail "--help does not mention --devices LIST"

# ---- auto: refused without a GPU, split with one ---------------------------------
run --list-backends
if ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    expect_error 2 "needs a CUDA backend" "--devices with auto and no usable GPU" \
        "${K[@]}" --devices 0 in.pgm o.pgm
    expect_error 2 "--devices 'all'" "--devices all without a GPU" \
        "${K[@]}" --devices all in.pgm o.pgm
    finish
fi

expect_ok "chart" --chart 301x203 --seed 5 c.ppm
for b in cuda cuda-global; do
    rm -f one.ppm split.ppm
    expect_ok "$b, one device" --kernel gaussian:7 --border reflect --backend "$b" c.ppm one.ppm
    expect_ok "$b, split across 0,0" --kernel gaussian:7 --border reflect --backend "$b" \
        --devices 0,0 c.ppm split.ppm
    [ "$(compare_pnm one.ppm split.ppm)" = SAME ] && ok "$b: split == one device" ||
        fail "$b: split differs from one device: $(compare_pnm one.ppm split.ppm)"
done
expect_ok "devices all" --kernel gaussian:7 --border reflect --backend cuda --devices all \
    c.ppm all.ppm
[ "$(compare_pnm one.ppm all.ppm)" = SAME ] && ok "all == one device" ||
    fail "--devices all differs from one device"
expect_error 5 "999" "a device the machine does not have" \
    "${K[@]}" --backend cuda --devices 0,999 in.pgm o.pgm

mkdir bin
for i in 1 2 3 4 5; do
    "$IMGCONV" --chart 97x61 --seed "$i" "bin/i$i.ppm" || fail "chart $i"
done
expect_ok "batch, one device" --kernel box:5 --backend cuda -q -o b1 bin
expect_ok "batch over devices 0,0" --kernel box:5 --backend cuda --devices 0,0 -q -o b2 bin
same=1
for i in 1 2 3 4 5; do
    [ "$(compare_pnm "b1/i$i.ppm" "b2/i$i.ppm")" = SAME ] || same=0
done
[ "$same" = 1 ] && ok "batch over two workers == one device" || fail "batch outputs differ"
finish
