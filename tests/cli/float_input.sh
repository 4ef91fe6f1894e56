#!/usr/bin/env bash
# float_input.sh - float images through the CLI: PFM (PF colour little-endian,
# Pf grey big-endian, bottom-up rows) and 32-bit float TIFF are read as float32,
# filtered unrounded and unclamped, and written as PFM, float TIFF or .npy;
# 8- and 16-bit images are written to .npy as uint8/uint16. Checked by a
# reference computed here in Python (no numpy: struct) within the float32
# tolerance of docs/definitions.md ("Float samples"). Refused, one line and
# exit 3: a 64-bit float TIFF, a truncated PFM, a PFM over --max-pixels, a
# malformed npy header. Standard input and output work with --format pfm.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
command -v python3 >/dev/null || {
    echo "SKIP: no python3"
    exit 77
}

python3 - <<'PY' || fail "python3 writes the float files"
import struct

W, H = 7, 5

def val(x, y, c):
    return (x * 0.37 - y * 1.25 + c * 0.5) * (1 if (x + y) % 3 else -3.0)

def pfm(path, magic, c, order):
    rows = []
    for y in reversed(range(H)):  # bottom-up
        rows += [val(x, y, k) for x in range(W) for k in range(c)]
    scale = b"-1.0" if order == "<" else b"1.0"
    with open(path, "wb") as f:
        f.write(magic + b"\n%d %d\n" % (W, H) + scale + b"\n")
        f.write(struct.pack(order + "%df" % len(rows), *rows))

pfm("rgb.pfm", b"PF", 3, "<")
pfm("grey.pfm", b"Pf", 1, ">")
with open("rgb.pfm", "rb") as f:
    data = f.read()
open("cut.pfm", "wb").write(data[:-9])
open("big.pfm", "wb").write(b"PF\n100000 100000\n-1.0\n" + b"\0" * 64)
open("bad.npy", "wb").write(b"\x93NUMPY\x01\x00\x20\x00{'descr': '<f4', 'shape': (2,2)}  \n")

def tiff(path, order, spp, bps, fmt_char):
    """An uncompressed one-strip TIFF of float samples (SampleFormat 3)."""
    vals = [val(x, y, k) for y in range(H) for x in range(W) for k in range(spp)]
    data = struct.pack(order + "%d%s" % (len(vals), fmt_char), *vals)
    photometric = 2 if spp == 3 else 1
    tags = [(256, 3, 1, W), (257, 3, 1, H), (258, 3, 1, bps), (259, 3, 1, 1),
            (262, 3, 1, photometric), (273, 4, 1, None), (277, 3, 1, spp),
            (278, 3, 1, H), (279, 4, 1, len(data)), (284, 3, 1, 1), (339, 3, 1, 3)]
    if spp > 1:  # BitsPerSample and SampleFormat hold one value per sample
        tags = [(t, ty, spp, v) if t in (258, 339) else (t, ty, c, v) for t, ty, c, v in tags]
    ifd = 8
    extra = ifd + 2 + 12 * len(tags) + 4
    arrays = b""
    body = b""
    offsets = {}
    for t, ty, c, v in tags:
        if c > 2:
            offsets[t] = extra + len(arrays)
            arrays += struct.pack(order + "%dH" % c, *[v] * c)
    strip = extra + len(arrays)
    for t, ty, c, v in tags:
        if t == 273:
            v = strip
        if t in offsets:
            body += struct.pack(order + "HHII", t, ty, c, offsets[t])
        elif ty == 3:
            body += struct.pack(order + "HHIHH", t, ty, c, v, 0)
        else:
            body += struct.pack(order + "HHII", t, ty, c, v)
    head = (b"II*\x00" if order == "<" else b"MM\x00*") + struct.pack(order + "I", ifd)
    with open(path, "wb") as f:
        f.write(head + struct.pack(order + "H", len(tags)) + body + struct.pack(order + "I", 0))
        f.write(arrays + data)

tiff("rgb32.tif", "<", 3, 32, "f")
tiff("grey32.tif", ">", 1, 32, "f")
tiff("rgb64.tif", ">", 3, 64, "d")
PY

# check.py KIND FILE CHANNELS KERNEL: the file's samples against the
# reference (box:3 or identity, mirror border) of val(); prints the worst
# error over its bound and exits 1 over 1.
cat >check.py <<'PY'
import struct, sys
kind, path, C, kern = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
W, H = 7, 5
def val(x, y, c):
    return (x * 0.37 - y * 1.25 + c * 0.5) * (1 if (x + y) % 3 else -3.0)
def mirror(i, n):
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i
raw = open(path, "rb").read()
if kind == "npy":
    assert raw[:6] == b"\x93NUMPY", "magic"
    hl = raw[8] | raw[9] << 8
    head = raw[10:10 + hl].decode()
    assert (10 + hl) % 64 == 0 and head.endswith("\n"), "padding"
    assert "'descr': '<f4'" in head and "'fortran_order': False" in head, head
    shape = "(%d, %d)" % (H, W) if C == 1 else "(%d, %d, %d)" % (H, W, C)
    assert shape in head, head
    s = struct.unpack("<%df" % (W * H * C), raw[10 + hl:])
    get = lambda x, y, c: s[(y * W + x) * C + c]
else:  # pfm, little-endian as written here
    parts = raw.split(b"\n", 3)
    assert parts[0] == (b"PF" if C == 3 else b"Pf") and parts[2] == b"-1.0", parts[:3]
    s = struct.unpack("<%df" % (W * H * C), parts[3])
    get = lambda x, y, c: s[((H - 1 - y) * W + x) * C + c]
n, u = (9, 2.0 ** -24) if kern == "box" else (1, 2.0 ** -24)
worst = 0.0
for y in range(H):
    for x in range(W):
        for c in range(C):
            if kern == "box":
                terms = [val(mirror(x + i, W), mirror(y + j, H), c) / 9.0
                         for j in (-1, 0, 1) for i in (-1, 0, 1)]
            else:
                terms = [val(x, y, c)]
            exact = sum(terms)
            bound = (n + 20) * u * sum(abs(t) for t in terms) + 1e-30
            worst = max(worst, abs(get(x, y, c) - exact) / bound)
print("worst error %.3f of the bound" % worst)
sys.exit(0 if worst <= 1.0 else 1)
PY

K=(--kernel box:3)
expect_ok "PF (little-endian RGB) -> npy" "${K[@]}" rgb.pfm out.npy &&
    python3 check.py npy out.npy 3 box >check.txt && ok "PF -> npy: $(cat check.txt)" ||
    { fail "PF -> npy values: $(cat check.txt)"; show_last; }
expect_ok "Pf (big-endian grey) -> PFM" "${K[@]}" grey.pfm out.pfm &&
    python3 check.py pfm out.pfm 1 box >check.txt && ok "Pf -> Pf: $(cat check.txt)" ||
    { fail "Pf -> Pf values: $(cat check.txt)"; show_last; }
# identity: every sample as stored, negative and over 1 included (no clamping)
expect_ok "PF -> PF, identity" --kernel identity rgb.pfm id.pfm &&
    python3 check.py pfm id.pfm 3 identity >check.txt && ok "identity keeps every float" ||
    { fail "identity: $(cat check.txt)"; show_last; }

if has_format tiff; then
    expect_ok "float TIFF (RGB, little-endian) -> float TIFF" "${K[@]}" rgb32.tif out.tif &&
        expect_ok "float TIFF -> npy" --kernel identity out.tif tif.npy &&
        python3 check.py npy tif.npy 3 box >check.txt && ok "float TIFF round trip: $(cat check.txt)" ||
        { fail "float TIFF: $(cat check.txt)"; show_last; }
    expect_ok "float TIFF (grey, big-endian) -> PFM" --kernel identity grey32.tif g.pfm &&
        python3 check.py pfm g.pfm 1 identity >check.txt && ok "grey float TIFF read" ||
        { fail "grey float TIFF: $(cat check.txt)"; show_last; }
    expect_error 3 rgb64.tif "64-bit float TIFF refused" "${K[@]}" rgb64.tif o64.png &&
        grep -q "float samples in this layout are not supported" "$ERR" && [ ! -e o64.png ] &&
        ok "64-bit float TIFF: the line says so, no output" || { fail "rgb64 message"; show_last; }
else
    echo "(TIFF part skipped: built without TIFF)"
fi

# 8- and 16-bit images to .npy keep their type
"$IMGCONV" --chart 8x6 c8.ppm || fail "chart"
expect_ok "8-bit -> npy" --kernel identity c8.ppm c8.npy &&
    head -c 80 c8.npy | grep -q "'descr': '|u1'.*'shape': (6, 8, 3)" && ok "uint8 npy header" ||
    { fail "uint8 npy"; show_last; }
expect_ok "npy -> ppm (read back)" --kernel identity c8.npy back.ppm &&
    cmp -s <(tail -c 144 c8.ppm) <(tail -c 144 back.ppm) && ok "uint8 npy round trip exact" ||
    { fail "uint8 npy round trip"; show_last; }

# standard input and output
run "${K[@]}" --format pfm - - <grey.pfm
[ "$RC" -eq 0 ] && head -c 3 "$OUT" | grep -q "^Pf" && ok "PFM through stdin and stdout" ||
    { fail "PFM via pipes"; show_last; }

# refusals
expect_error 3 cut.pfm "truncated PFM" "${K[@]}" cut.pfm o.pfm &&
    grep -q "truncated data" "$ERR" && ok "truncated PFM named as such" || show_last
expect_error 3 big.pfm "PFM over the pixel limit" "${K[@]}" big.pfm o.pfm &&
    grep -q "pixel limit" "$ERR" && ok "PFM limit checked before allocating" || show_last
expect_error 3 bad.npy "npy without fortran_order" "${K[@]}" bad.npy o.npy &&
    grep -q "npy:" "$ERR" && ok "malformed npy header refused" || show_last
[ ! -e o.pfm ] && [ ! -e o.npy ] && ok "no output left by the refusals" || fail "outputs left"
finish
