#!/usr/bin/env bash
# inputs.sh - what imgconv reads: a named input that is not a regular file
# (a FIFO, a device) is refused at once with one line naming it, in single
# mode, batch mode and through imgconv's own glob expansion; a file is
# refused by its size or its header before it is read whole; a JPEG with
# damaged entropy-coded data is refused (exit 3) unless --accept-damaged;
# and the messages say what happened: a write error's errno (not libtiff's
# guess), no skipped tag as the failure, no "scanline 4294967295", and no
# "0.0 MiB" for small limits.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

expect_ok "a chart to read" --chart 64x48 a.png

# A FIFO: opening it for reading would wait for a writer forever.
mkfifo p.png
# within SECONDS DESC CODE NAME ARGS...: expect_error, and the run ends in time.
within() {
    local secs=$1 desc=$2 code=$3 name=$4
    shift 4
    LAST_CMD="imgconv $*"
    timeout "$secs" "$IMGCONV" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    if [ "$RC" -eq 124 ]; then
        fail "$desc: still running after ${secs} s"
        show_last
        return 1
    fi
    expect_error "$code" "$name" "$desc" "$@"
}
within 5 "a FIFO as INPUT is refused at once" 3 p.png -k box:3 p.png out.png
grep -q "not a regular file" "$ERR" && ok "the message says why" ||
    { fail "the message says why"; show_last; }
# batch_fifo DESC OUTDIR FIFO INPUT...: a batch into OUTDIR ends in time
# with exit 3, FIFO refused as not a regular file, a.png written.
batch_fifo() {
    local desc=$1 outdir=$2 fifo=$3
    shift 3
    LAST_CMD="imgconv -k box:3 -q -o $outdir $*"
    timeout 5 "$IMGCONV" -k box:3 -q -o "$outdir" "$@" >"$OUT" 2>"$ERR"
    RC=$?
    if [ "$RC" -eq 3 ] && [ -f "$outdir/a.png" ] && grep -q "$fifo: not a regular file" "$ERR"; then
        ok "$desc (exit 3)"
    else
        fail "$desc"
        show_last
    fi
}
batch_fifo "batch: the FIFO fails, the other file is written" out p.png a.png p.png
mkdir in
cp a.png in/a.png
mkfifo in/x.png
batch_fifo "glob: the FIFO it matches fails at once" out2 in/x.png 'in/*.png'
within 5 "/dev/zero as INPUT is refused at once" 3 /dev/zero -k box:3 /dev/zero out.png
within 5 "--signal reads no FIFO either" 3 p.png --signal -k box:3 p.png out.txt

# A PNG signature and a header declaring 9459x9459, then 1 GB of nothing
# (a sparse file): the header is over --max-pixels, refused before the rest
# is read; a file over --max-memory is refused by its size.
printf '\211PNG\r\n\032\n\0\0\0\rIHDR\0\0\044\363\0\0\044\363\010\002\0\0\0\0\0\0\0' >big.png
# The CRC of that IHDR, so that libpng accepts the header.
python3 -c "
import struct, zlib
d = open('big.png', 'rb').read()
open('big.png', 'wb').write(d[:29] + struct.pack('>I', zlib.crc32(d[12:29]) & 0xffffffff))
"
cp big.png small.png
printf '\0\0\0\012' | dd of=small.png bs=1 seek=16 conv=notrunc 2>/dev/null
printf '\0\0\0\012' | dd of=small.png bs=1 seek=20 conv=notrunc 2>/dev/null
truncate -s 1G big.png small.png
start=$(date +%s%N)
within 5 "a 1 GB file declaring too many pixels" 3 "pixel limit" -k box:3 --max-pixels 1000000 \
    --max-memory 4G big.png out.png
ms=$((($(date +%s%N) - start) / 1000000))
[ "$ms" -lt 2000 ] && ok "refused from its header (${ms} ms)" ||
    fail "refused from its header: took ${ms} ms"
within 5 "a 1 GB file over --max-memory" 3 "memory limit" -k box:3 --max-memory 100M small.png \
    out.png
rm -f big.png small.png

# A cut PNG declaring 4000x4000 RGB: 200 bytes cannot hold 48 MB even at
# deflate's best ratio (1032:1), so it is refused before the image is made.
python3 -c "
import struct, zlib
def chunk(t, d):
    return struct.pack('>I', len(d)) + t + d + struct.pack('>I', zlib.crc32(t + d) & 0xffffffff)
z = zlib.compress(bytes(4000 * 12001))[:150]
open('cut.png', 'wb').write(b'\\x89PNG\\r\\n\\x1a\\n' + chunk(b'IHDR', struct.pack('>IIBBBBB', 4000, 4000, 8, 2, 0, 0, 0))
                           + chunk(b'IDAT', z))
"
expect_error 3 "cannot hold" "a cut PNG declaring a large image is refused from its size" \
    -k identity cut.png out.png

# A JPEG with garbage before its EOI marker: libjpeg warns "Corrupt JPEG
# data: N extraneous bytes before marker 0xd9" and djpeg exits 2.
if has_format jpeg; then
    expect_ok "a JPEG" -k identity a.png a.jpg
    n=$(wc -c <a.jpg)
    head -c $((n - 2)) a.jpg >bad.jpg
    printf 'garbagegarbagegarbage\377\331' >>bad.jpg
    expect_error 3 bad.jpg "damaged JPEG data is refused" -k identity bad.jpg out.png
    [ ! -e out.png ] && ok "and nothing is written" || fail "and nothing is written"
    run -k identity --accept-damaged bad.jpg out.png
    if [ "$RC" -eq 0 ] && [ -s out.png ] && [ "$(wc -l <"$ERR")" -eq 1 ] &&
        grep -q "imgconv: warning: bad.jpg: damaged JPEG data" "$ERR"; then
        ok "--accept-damaged decodes it with one warning line"
    else
        fail "--accept-damaged decodes it with one warning line"
        show_last
    fi
    mkdir bout
    cp bad.jpg a.jpg bout/ 2>/dev/null
    run -k identity -q -o bout2 bout
    [ "$RC" -eq 3 ] && ok "batch: the damaged JPEG fails (exit 3)" ||
        { fail "batch: the damaged JPEG fails (exit 3)"; show_last; }
    rm -rf bout2
    run -k identity -q --accept-damaged -o bout2 bout
    if [ "$RC" -eq 0 ] && [ -s bout2/bad.jpg ] && grep -q "bad.jpg: damaged JPEG data" "$ERR"; then
        ok "batch: --accept-damaged writes it, with the warning"
    else
        fail "batch: --accept-damaged writes it, with the warning"
        show_last
    fi
fi

# Small memory limits in bytes or KiB, not "needs 0.0 MiB, over 0.0 MiB".
expect_ok "a tiny image" --chart 4x4 tiny.png
expect_error 3 "256 bytes to decode, over the memory limit 200 bytes" \
    "--max-memory 200: the decode's need in bytes" -k box:3 --max-memory 200 tiny.png o.png
expect_error 3 "over the memory limit 1.0 KiB" "--max-memory 1K: the file's size in KiB" \
    -k box:3 --max-memory 1K a.png o.png
grep -q "0\.0 MiB" "$ERR" && fail "no 0.0 MiB" || ok "no 0.0 MiB"

if has_format tiff; then
    expect_ok "a TIFF" --chart 40x30 s.tif
    expect_ok "a larger image" --chart 200x150 big.ppm
    # A strip byte count past the end of the file (the strip is read whole),
    # and the Orientation tag turned into custom tag 60931 of type `type`,
    # which libtiff skips.
    tiff_case() {
        python3 - "$1" "$2" <<'PY'
import struct, sys
d = bytearray(open("s.tif", "rb").read())
assert d[:2] == b"II"
off = struct.unpack_from("<I", d, 4)[0]
for i in range(struct.unpack_from("<H", d, off)[0]):
    e = off + 2 + 12 * i
    tag = struct.unpack_from("<H", d, e)[0]
    if tag == 279:
        struct.pack_into("<I", d, e + 8, 50000)
    if tag == 274 and int(sys.argv[2]) >= 0:
        struct.pack_into("<HHII", d, e, 60931, int(sys.argv[2]), 1, 1)
open(sys.argv[1], "wb").write(d)
PY
    }
    tiff_case cut.tif -1
    expect_error 3 cut.tif "a short strip" -k identity cut.tif o.png
    grep -q 4294967295 "$ERR" && { fail "no scanline 4294967295"; show_last; } ||
        ok "no scanline 4294967295"
    for type in 0 16; do
        tiff_case "tag$type.tif" "$type"
        expect_error 3 "Read error" "a short strip after a skipped custom tag (type $type)" \
            -k identity "tag$type.tif" o.png
    done
    # A full disk: the file size limit makes every write past it fail.
    # Wherever it falls, the message is the errno's.
    full=0
    for blocks in $(seq 1 2 24); do
        (
            ulimit -f "$blocks"
            trap '' XFSZ
            "$IMGCONV" -k identity --compression 1 big.ppm full.tif
        ) >/dev/null 2>"$TMP/full.err" || true
        grep -q "File too large" "$TMP/full.err" || full=$((full + 1))
        grep -q "File too large" "$TMP/full.err" ||
            sed "s/^/     at $blocks KiB: /" "$TMP/full.err" | head -1
    done
    [ "$full" -eq 0 ] && ok "a write cut anywhere says the errno (File too large)" ||
        fail "a write cut anywhere says the errno: $full cuts did not"
fi

finish
