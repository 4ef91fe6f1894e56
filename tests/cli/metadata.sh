#!/usr/bin/env bash
# metadata.sh - the ICC profile and EXIF go from INPUT to OUTPUT through the
# CLI, single file and batch (issue 15): a camera-style JPEG (EXIF APP1 with
# orientation 6, "rotate 90 CW to view", and an ICC APP2 spliced in here by
# hand) filtered into JPEG and PNG keeps both blocks byte for byte, and its
# pixels are not rotated (the tag is kept, as libvips and ImageMagick do).
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
has_format jpeg || { echo "skipped: built without JPEG"; exit 77; }

"$IMGCONV" --chart 64x40 --seed 3 plain.jpg || fail "chart"
python3 - <<'PY' || fail "making the camera JPEG"
import struct
jpg = open("plain.jpg", "rb").read()
# EXIF, big-endian: IFD0 with Make and Orientation = 6.
ifd = struct.pack(">H", 2)
ifd += struct.pack(">HHII", 0x010F, 2, 13, 38)
ifd += struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0)
exif = b"MM\x00*" + struct.pack(">I", 8) + ifd + struct.pack(">I", 0) + b"imgconv test\x00"
open("exif.bin", "wb").write(exif)
icc = bytearray(256)
icc[0:4] = struct.pack(">I", 256); icc[12:16] = b"mntr"; icc[16:20] = b"RGB "
icc[20:24] = b"XYZ "; icc[36:40] = b"acsp"
for i in range(132, 256): icc[i] = (i * 7) & 255
app1 = b"Exif\x00\x00" + exif
seg = lambda m, d: b"\xff" + bytes([m]) + struct.pack(">H", len(d) + 2) + d
# Without the D50 illuminant libpng refuses the profile: the PNG must still be written.
app2 = b"ICC_PROFILE\x00\x01\x01" + bytes(icc)
open("oddicc.jpg", "wb").write(jpg[:2] + seg(0xE1, app1) + seg(0xE2, app2) + jpg[2:])
icc[68:80] = struct.pack(">III", 0xF6D6, 0x10000, 0xD32D)
open("icc.bin", "wb").write(icc)
app2 = b"ICC_PROFILE\x00\x01\x01" + bytes(icc)
open("camera.jpg", "wb").write(jpg[:2] + seg(0xE1, app1) + seg(0xE2, app2) + jpg[2:])
PY

# check FILE: its EXIF and ICC equal exif.bin and icc.bin, its size is 64x40.
check() {
    python3 - "$1" <<'PY'
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
exif, icc, size = open("exif.bin", "rb").read(), open("icc.bin", "rb").read(), None
got_exif = got_icc = None
if d[:2] == b"\xff\xd8":
    i, parts = 2, []
    while i + 4 <= len(d) and d[i] == 0xFF and d[i + 1] not in (0xDA, 0xD9):
        m, n = d[i + 1], struct.unpack(">H", d[i + 2:i + 4])[0]
        body = d[i + 4:i + 2 + n]
        if m == 0xE1 and body.startswith(b"Exif\x00\x00"): got_exif = body[6:]
        if m == 0xE2 and body.startswith(b"ICC_PROFILE\x00"): parts.append(body[14:])
        if m in (0xC0, 0xC1, 0xC2): size = struct.unpack(">HH", body[1:5])[::-1]
        i += 2 + n
    got_icc = b"".join(parts) or None
else:
    i = 8
    while i + 8 <= len(d):
        n, t = struct.unpack(">I4s", d[i:i + 8]); body = d[i + 8:i + 8 + n]
        if t == b"IHDR": size = struct.unpack(">II", body[:8])
        if t == b"eXIf": got_exif = body
        if t == b"iCCP": got_icc = zlib.decompress(body[body.index(b"\x00") + 2:])
        i += 12 + n
assert got_exif == exif, "EXIF differs or is missing"
assert got_icc == icc, "ICC profile differs or is missing"
assert tuple(size) == (64, 40), f"size {size}: pixels were rotated"
PY
}

expect_ok "filter a camera JPEG into JPEG" --kernel box:3 camera.jpg out.jpg
check out.jpg && ok "JPEG -> JPEG keeps EXIF (orientation 6) and ICC, pixels not rotated" ||
    fail "JPEG -> JPEG metadata"
if has_format png; then
    expect_ok "filter a camera JPEG into PNG" --kernel box:3 camera.jpg out.png
    check out.png && ok "JPEG -> PNG keeps EXIF and ICC (eXIf, iCCP)" || fail "JPEG -> PNG metadata"
    expect_ok "a profile libpng refuses is left out, the PNG written" --kernel 1 oddicc.jpg odd.png
    mkdir in && cp camera.jpg in/a.jpg
    run --kernel box:3 -q --format png -o outdir in
    [ "$RC" -eq 0 ] && check outdir/a.png && ok "batch keeps EXIF and ICC" || fail "batch metadata"
fi
finish
