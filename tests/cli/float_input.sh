#!/usr/bin/env bash
# float_input.sh - images of float samples are refused, not misread (issue 15:
# the library has 8- and 16-bit integer samples only): a PFM (PF colour, Pf
# grey) and a float TIFF (32-bit grey little-endian, 64-bit RGB big-endian)
# give one line naming the file and saying float samples are not supported,
# exit 3 (input error), no output; the same through standard input and in a
# batch (the other files written, exit 3). The TIFF part is skipped when the
# build has no TIFF support.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
command -v python3 >/dev/null || {
    echo "SKIP: no python3"
    exit 77
}

python3 - <<'PY' || fail "python3 writes the float files"
import struct

def pfm(path, magic, w, h, c):
    vals = [0.25 + 0.01 * i for i in range(w * h * c)]
    with open(path, "wb") as f:
        f.write(magic + b"\n%d %d\n-1.0\n" % (w, h) + struct.pack("<%df" % len(vals), *vals))

pfm("rgb.pfm", b"PF", 4, 3, 3)
pfm("grey.pfm", b"Pf", 4, 3, 1)

def tiff(path, order, w, h, spp, bps, fmt_char):
    """An uncompressed one-strip TIFF of float samples (SampleFormat 3)."""
    n = w * h * spp
    data = struct.pack(order + "%d%s" % (n, fmt_char), *[0.5] * n)
    photometric = 2 if spp == 3 else 1
    tags = [(256, 3, 1, w), (257, 3, 1, h), (258, 3, 1, bps), (259, 3, 1, 1),
            (262, 3, 1, photometric), (273, 4, 1, None), (277, 3, 1, spp),
            (278, 3, 1, h), (279, 4, 1, len(data)), (284, 3, 1, 1), (339, 3, 1, 3)]
    if spp > 1:  # BitsPerSample and SampleFormat hold one value per sample
        tags = [(t, ty, spp, v) if t in (258, 339) else (t, ty, c, v) for t, ty, c, v in tags]
    ifd = 8
    extra = ifd + 2 + 12 * len(tags) + 4  # arrays of several SHORTs go here
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

tiff("grey32.tif", "<", 5, 4, 1, 32, "f")
tiff("rgb64.tif", ">", 5, 4, 3, 64, "d")
PY
K=(--kernel box:3)
files=(rgb.pfm grey.pfm)
has_format tiff && files+=(grey32.tif rgb64.tif) || echo "(TIFF part skipped: built without TIFF)"

for f in "${files[@]}"; do
    expect_error 3 "$f" "$f refused" "${K[@]}" "$f" "out_$f.png" &&
        grep -q "float samples are not supported" "$ERR" && [ ! -e "out_$f.png" ] &&
        ok "$f: the line says float samples are not supported, no output" ||
        { fail "$f: message or output"; show_last; }
    run "${K[@]}" --format png - - <"$f"
    [ "$RC" -eq 3 ] && [ ! -s "$OUT" ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
        grep -q "^imgconv: error: -: .*float samples are not supported" "$ERR" &&
        ok "$f through standard input: refused, exit 3" || { fail "$f via stdin"; show_last; }
done

"$IMGCONV" --chart 8x6 fine.ppm || fail "chart"
mkdir out
run "${K[@]}" -q --format ppm -o out fine.ppm "${files[@]}"
n=$(grep -c "float samples are not supported" "$ERR")
[ "$RC" -eq 3 ] && [ -s out/fine.ppm ] && [ "$n" -eq "${#files[@]}" ] &&
    [ "$(listing out)" = "fine.ppm" ] &&
    ok "batch: the float files reported ($n), the other written, exit 3" ||
    { fail "batch with float files ($n lines)"; show_last; }
finish
