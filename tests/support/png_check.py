#!/usr/bin/env python3
"""png_check.py DIR - decodes every DIR/*.png without libpng and without
imgconv's code and compares it with DIR/*.raw (the samples the writer was
given, as PNG stores them: big-endian 16-bit).

The chunk stream is walked by hand (signature, every CRC, IHDR first, IEND
last, IDAT consecutive), the IDAT data inflated with Python's zlib and the
five PNG filters undone here (PNG spec 9.2-9.4). Where Pillow is installed
(python3-pil, scripts/install-deps.sh) it decodes the 8-bit files and the
16-bit grey ones too. Exit 0 when all agree, 1 on a difference, 77 when
there is nothing to check.
"""
import glob
import os
import struct
import sys
import zlib

CHANNELS = {0: 1, 4: 2, 2: 3, 6: 4}


def chunks(data, name):
    assert data[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: bad signature"
    i, out = 8, []
    while i < len(data):
        n, t = struct.unpack(">I4s", data[i:i + 8])
        body = data[i + 8:i + 8 + n]
        crc = struct.unpack(">I", data[i + 8 + n:i + 12 + n])[0]
        assert zlib.crc32(t + body) == crc, f"{name}: CRC of {t} wrong"
        out.append((t, body))
        i += 12 + n
    assert i == len(data), f"{name}: trailing bytes"
    return out


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else b if pb <= pc else c


def decode(path):
    name = os.path.basename(path)
    cs = chunks(open(path, "rb").read(), name)
    types = [t for t, _ in cs]
    assert types[0] == b"IHDR" and types[-1] == b"IEND", f"{name}: chunk order {types}"
    idat = [i for i, t in enumerate(types) if t == b"IDAT"]
    assert idat and idat == list(range(idat[0], idat[-1] + 1)), f"{name}: IDAT not consecutive"
    w, h, depth, colour, comp, filt, inter = struct.unpack(">IIBBBBB", cs[0][1])
    assert (comp, filt, inter) == (0, 0, 0) and depth in (8, 16) and colour in CHANNELS
    bpp = CHANNELS[colour] * depth // 8
    n = w * bpp
    raw = zlib.decompress(b"".join(b for t, b in cs if t == b"IDAT"))
    assert len(raw) == h * (n + 1), f"{name}: {len(raw)} bytes inflated, {h * (n + 1)} expected"
    out, prev = bytearray(), bytearray(n)
    for y in range(h):
        ft, row = raw[y * (n + 1)], bytearray(raw[y * (n + 1) + 1:(y + 1) * (n + 1)])
        assert ft <= 4, f"{name}: filter type {ft} in row {y}"
        for i in range(n):
            a = row[i - bpp] if i >= bpp else 0
            c = prev[i - bpp] if i >= bpp else 0
            pred = (0, a, prev[i], (a + prev[i]) >> 1, paeth(a, prev[i], c))[ft]
            row[i] = (row[i] + pred) & 255
        out += row
        prev = row
    return bytes(out), depth, colour


def main():
    d = sys.argv[1]
    files = sorted(glob.glob(os.path.join(d, "*.png")))
    files = [f for f in files if os.path.exists(f[:-4] + ".raw")]
    if not files:
        return 77
    try:
        from PIL import Image
    except ImportError:
        Image = None
    bad = pil = 0
    for f in files:
        want = open(f[:-4] + ".raw", "rb").read()
        try:
            got, depth, colour = decode(f)
        except AssertionError as e:
            print(f"png_check: {e}")
            bad += 1
            continue
        if got != want:
            print(f"png_check: {os.path.basename(f)}: samples differ")
            bad += 1
        if Image and (depth == 8 or colour == 0):
            im = Image.open(f)
            if depth == 16:  # Pillow gives 16-bit grey as integers (mode I or I;16)
                b = b"".join(struct.pack(">H", v) for v in im.getdata())
            else:
                b = im.tobytes()
            if b != want:
                print(f"png_check: {os.path.basename(f)}: Pillow decodes other samples")
                bad += 1
            pil += 1
    print(f"png_check: {len(files)} files decoded, {pil} also by Pillow, {bad} bad")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
