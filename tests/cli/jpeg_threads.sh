#!/usr/bin/env bash
# jpeg_threads.sh - one image of 1 MP or more written as JPEG is encoded in
# strips on several threads (issue 11): with --threads 1 the file has no
# restart marker; with --threads 2 and 3 it has a DRI and RST markers, the
# same bytes for both (and for the default, every core, where there are
# several), and decodes to exactly the pixels of the --threads 1 file, with
# imgconv's decoder and with djpeg (libjpeg-turbo-progs: no warning) or, in
# its absence, PIL. Colour and grey, the input's EXIF and ICC kept, OUTPUT -
# as the file, and a batch (-o) that stays on one thread per image. Such a
# file decodes on 2 threads to the pixels of 1, and a cut or damaged copy
# fails alike on both (--accept-damaged: the same pixels).
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
has_format jpeg || { echo "skipped: built without JPEG"; exit 77; }
PY=python3
[ -x /usr/bin/python3 ] && PY=/usr/bin/python3

"$IMGCONV" --chart 1501x1103 --seed 5 colour.jpg || fail "chart"
"$IMGCONV" --chart 1203x1001x1 --seed 6 grey.jpg || fail "grey chart"
# colour.jpg with an EXIF APP1 and an ICC APP2 spliced in after SOI.
$PY - <<'PY' || fail "making the camera JPEG"
import struct
jpg = open("colour.jpg", "rb").read()
exif = b"MM\x00*" + struct.pack(">I", 8) + struct.pack(">H", 0) + struct.pack(">I", 0) + bytes(range(200))
icc = bytearray(3000)
icc[0:4] = struct.pack(">I", len(icc)); icc[12:16] = b"mntr"; icc[16:20] = b"RGB "
icc[20:24] = b"XYZ "; icc[36:40] = b"acsp"
icc[68:80] = struct.pack(">III", 0xF6D6, 0x10000, 0xD32D)
for i in range(132, len(icc)): icc[i] = (i * 13) & 255
seg = lambda m, d: b"\xff" + bytes([m]) + struct.pack(">H", len(d) + 2) + d
open("exif.bin", "wb").write(exif)
open("icc.bin", "wb").write(icc)
open("camera.jpg", "wb").write(jpg[:2] + seg(0xE1, b"Exif\x00\x00" + exif) +
                               seg(0xE2, b"ICC_PROFILE\x00\x01\x01" + bytes(icc)) + jpg[2:])
PY

# markers FILE: "DRI N RST M IN_TURN|OUT_OF_TURN EXIF ICC" (EXIF, ICC: 1 when
# they equal exif.bin and icc.bin).
markers() {
    $PY - "$1" <<'PY'
import os, struct, sys
d = open(sys.argv[1], "rb").read()
i, dri, exif, icc = 2, 0, b"", b""
while d[i] == 0xFF and d[i + 1] != 0xDA:
    n = struct.unpack(">H", d[i + 2:i + 4])[0]
    body = d[i + 4:i + 2 + n]
    if d[i + 1] == 0xDD: dri = struct.unpack(">H", body)[0]
    if d[i + 1] == 0xE1 and body.startswith(b"Exif\0\0"): exif = body[6:]
    if d[i + 1] == 0xE2 and body.startswith(b"ICC_PROFILE\0"): icc += body[14:]
    i += 2 + n
rst = [d[j + 1] - 0xD0 for j in range(i, len(d) - 1) if d[j] == 0xFF and 0xD0 <= d[j + 1] <= 0xD7]
turn = all(r == k % 8 for k, r in enumerate(rst))
same = lambda b, f: int(os.path.exists(f) and b == open(f, "rb").read())
print("DRI", dri, "RST", len(rst), "IN_TURN" if turn else "OUT_OF_TURN", same(exif, "exif.bin"), same(icc, "icc.bin"))
PY
}

# decoded_same A B EXT: both JPEGs decoded to .EXT by imgconv are the same file.
decoded_same() {
    "$IMGCONV" -k identity "$1" "$1.$3" 2>/dev/null && "$IMGCONV" -k identity "$2" "$2.$3" 2>/dev/null &&
        cmp -s "$1.$3" "$2.$3"
}

# external A B: djpeg (or PIL) reads both without a word and finds the same pixels.
external() {
    if command -v djpeg >/dev/null 2>&1; then
        djpeg -pnm -outfile "$1.dj.pnm" "$1" 2>"$1.dj.err" && [ ! -s "$1.dj.err" ] &&
            djpeg -pnm -outfile "$2.dj.pnm" "$2" 2>"$2.dj.err" && [ ! -s "$2.dj.err" ] &&
            cmp -s "$1.dj.pnm" "$2.dj.pnm" && echo djpeg
    elif $PY -c "import PIL" 2>/dev/null; then
        $PY - "$1" "$2" <<'PY'
import sys, warnings
from PIL import Image
warnings.simplefilter("error")
a, b = (Image.open(f) for f in sys.argv[1:3])
a.load(); b.load()
sys.exit(0 if a.tobytes() == b.tobytes() else 1)
PY
        [ $? -eq 0 ] && echo PIL
    else
        echo none
    fi
}

for input in camera grey; do
    ext=ppm
    [ "$input" = grey ] && ext=pgm
    for t in 1 2 3; do
        expect_ok "$input: gaussian:5, --threads $t" -k gaussian:5 --threads "$t" "$input.jpg" "$input.t$t.jpg"
    done
    m1=$(markers "$input.t1.jpg")
    m2=$(markers "$input.t2.jpg")
    case "$m1" in "DRI 0 RST 0 "*) ok "$input: --threads 1: no restart markers" ;;
    *) fail "$input: --threads 1: $m1" ;; esac
    case "$m2" in "DRI 0 "* | *" RST 0 "* | *OUT_OF_TURN*) fail "$input: --threads 2: $m2" ;;
    *) ok "$input: --threads 2: $m2" ;; esac
    if [ "$input" = camera ]; then
        [ "${m1: -3}" = "1 1" ] && [ "${m2: -3}" = "1 1" ] &&
            ok "camera: EXIF and ICC kept with 1 and 2 threads" || fail "camera: metadata: $m1 / $m2"
    fi
    cmp -s "$input.t2.jpg" "$input.t3.jpg" && ok "$input: 2 and 3 threads: the same file" ||
        fail "$input: 2 and 3 threads: different files"
    decoded_same "$input.t1.jpg" "$input.t2.jpg" "$ext" &&
        ok "$input: 1 and 2 threads decode to the same pixels (imgconv)" ||
        fail "$input: 1 and 2 threads decode to different pixels (imgconv)"
    how=$(external "$input.t1.jpg" "$input.t2.jpg")
    case "$how" in
    djpeg | PIL) ok "$input: $how reads the 2-thread file cleanly, same pixels as 1 thread" ;;
    none) echo "     (neither djpeg nor PIL here: external decode not checked)" ;;
    *) fail "$input: djpeg/PIL: warnings or different pixels"
       cat "$input.t2.jpg.dj.err" 2>/dev/null | head -3 ;;
    esac
done

# Every core by default: the same file as 2 threads where there are several.
expect_ok "camera: default threads" -k gaussian:5 camera.jpg camera.t0.jpg
if [ "$(getconf _NPROCESSORS_ONLN)" -gt 1 ]; then
    cmp -s camera.t0.jpg camera.t2.jpg && ok "default threads: the 2-thread file" ||
        fail "default threads: not the 2-thread file"
fi
# OUTPUT -: the same bytes as the file.
run -k gaussian:5 --threads 2 --format jpg camera.jpg -
[ "$RC" -eq 0 ] && cmp -s "$OUT" camera.t2.jpg && ok "OUTPUT -: the 2-thread file" ||
    { fail "OUTPUT -: not the 2-thread file"; show_last; }
# A batch keeps one thread per image: no restart markers.
mkdir -p out
expect_ok "batch" -q -k gaussian:5 -o out camera.jpg grey.jpg
for f in camera grey; do
    m=$(markers "out/$f.jpg")
    case "$m" in "DRI 0 RST 0 "*) ok "batch: $f.jpg has no restart markers" ;;
    *) fail "batch: $f.jpg: $m" ;; esac
done

# Decoding: a file with restart markers decodes in parts on 2 threads to
# the pixels of 1 thread; a cut or damaged one fails with the same message
# and exit code, and --accept-damaged gives the same pixels.
for input in camera grey; do
    ext=ppm
    [ "$input" = grey ] && ext=pgm
    for t in 1 2; do
        expect_ok "$input: decode on $t threads" -k identity --threads "$t" "$input.t2.jpg" "$input.d$t.$ext"
    done
    cmp -s "$input.d1.$ext" "$input.d2.$ext" && ok "$input: 1 and 2 threads decode the same pixels" ||
        fail "$input: 1 and 2 threads decode different pixels"
done
$PY - <<'PY' || fail "making the damaged files"
d = open("camera.t2.jpg", "rb").read()
open("cut.jpg", "wb").write(d[: len(d) * 2 // 3])
b = bytearray(d)
for i in range(len(d) // 2, len(d) // 2 + 40):
    b[i] = (b[i] * 7 + 3) & 0xFF
open("garbage.jpg", "wb").write(bytes(b))
PY
for bad in cut garbage; do
    for t in 1 2; do
        run -k identity --threads "$t" --overwrite "$bad.jpg" "$bad.d$t.ppm"
        echo "$RC" >"$bad.rc$t"
        cp "$ERR" "$bad.err$t"
        run -k identity --threads "$t" --overwrite --accept-damaged "$bad.jpg" "$bad.a$t.ppm"
        echo "$RC" >"$bad.arc$t"
    done
    [ "$(cat "$bad.rc1")" -ne 0 ] && cmp -s "$bad.rc1" "$bad.rc2" && cmp -s "$bad.err1" "$bad.err2" &&
        ok "$bad: the same failure on 1 and 2 threads ($(head -c 80 "$bad.err1"))" ||
        fail "$bad: 1 thread: exit $(cat "$bad.rc1") $(cat "$bad.err1"); 2 threads: exit $(cat "$bad.rc2") $(cat "$bad.err2")"
    cmp -s "$bad.arc1" "$bad.arc2" && { [ "$(cat "$bad.arc1")" -ne 0 ] || cmp -s "$bad.a1.ppm" "$bad.a2.ppm"; } &&
        ok "$bad: --accept-damaged: the same on 1 and 2 threads" ||
        fail "$bad: --accept-damaged differs between 1 and 2 threads"
done
finish
