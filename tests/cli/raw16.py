#!/usr/bin/env python3
"""raw16.py - helpers of tests/cli/stream16.sh: 16-bit raw frames (little-endian,
as ffmpeg's rgb48le / gray16le) and the Netpbm files holding the same samples
(big-endian, maxval 65535), and a float64 oracle written apart from imgconv.

  raw16.py frames SEED W H C N OUT.raw PREFIX   N seeded frames into OUT.raw and
                                                each as PREFIX<i>.pnm (i = 1..N)
  raw16.py pnm2raw IN.pnm... OUT.raw            the samples of 16-bit PNMs, as
                                                little-endian raw frames
  raw16.py oracle W H C BORDER VALUE IN.raw OUT.raw
        the 3x3 kernel "1 2 1; 2 4 2; 1 2 1 / 16" over each frame in float64,
        BORDER mirror (reflect101) or constant (VALUE), rounded half to even
        and clamped to 0..65535.
"""
import random
import struct
import sys

import pnm  # beside this file

K = [[1, 2, 1], [2, 4, 2], [1, 2, 1]]
DIV = 16.0


def samples_le(data):
    return list(struct.unpack("<%dH" % (len(data) // 2), data))


def pack_le(vals):
    return struct.pack("<%dH" % len(vals), *vals)


def frames(seed, w, h, c, n, out, prefix):
    rng = random.Random(seed)
    # Extremes, values whose bytes differ (so a byte-order or 8-bit slip
    # shows), and noise: every frame spans the whole 16-bit range.
    special = [0, 1, 255, 256, 257, 32767, 32768, 65280, 65534, 65535]
    raw = bytearray()
    for i in range(n):
        vals = []
        for j in range(w * h * c):
            r = rng.random()
            if r < 0.15:
                vals.append(rng.choice(special))
            elif r < 0.5:  # a smooth part: neighbours close
                vals.append((j * 977 + i * 4099) % 65536)
            else:
                vals.append(rng.randrange(65536))
        raw += pack_le(vals)
        magic = b"P5" if c == 1 else b"P6"
        with open("%s%d.pnm" % (prefix, i + 1), "wb") as f:
            f.write(magic + b"\n%d %d\n65535\n" % (w, h))
            f.write(struct.pack(">%dH" % len(vals), *vals))
    with open(out, "wb") as f:
        f.write(raw)


def pnm2raw(paths, out):
    raw = bytearray()
    for p in paths:
        fields, body = pnm.read(p)
        if fields[3] != b"65535":
            sys.exit("%s: maxval %s, expected 65535" % (p, fields[3].decode()))
        vals = struct.unpack(">%dH" % (len(body) // 2), body)
        raw += pack_le(vals)
    with open(out, "wb") as f:
        f.write(raw)


def reflect101(i, n):
    if n == 1:
        return 0
    while i < 0 or i >= n:
        i = -i if i < 0 else 2 * (n - 1) - i
    return i


def oracle(w, h, c, border, value, inp, out):
    vals = samples_le(open(inp, "rb").read())
    size = w * h * c
    res = []
    for f0 in range(0, len(vals), size):
        fr = vals[f0 : f0 + size]
        for y in range(h):
            for x in range(w):
                for ch in range(c):
                    acc = 0.0
                    for dy in range(3):
                        for dx in range(3):
                            yy, xx = y + dy - 1, x + dx - 1
                            if border == "constant" and not (0 <= yy < h and 0 <= xx < w):
                                v = value
                            else:
                                v = fr[(reflect101(yy, h) * w + reflect101(xx, w)) * c + ch]
                            acc += K[dy][dx] / DIV * v
                    r = round(acc)  # Python rounds half to even
                    res.append(min(65535, max(0, r)))
    with open(out, "wb") as f:
        f.write(pack_le(res))


def main(a):
    if a[0] == "frames":
        frames(int(a[1]), int(a[2]), int(a[3]), int(a[4]), int(a[5]), a[6], a[7])
    elif a[0] == "pnm2raw":
        pnm2raw(a[1:-1], a[-1])
    elif a[0] == "oracle":
        oracle(int(a[1]), int(a[2]), int(a[3]), a[4], float(a[5]), a[6], a[7])
    else:
        sys.exit("unknown command " + a[0])


if __name__ == "__main__":
    main(sys.argv[1:])
