#!/usr/bin/env bash
# gpu_jpeg.sh - the CLI's GPU JPEG path (issue 11): with a CUDA backend a JPEG
# is decoded, filtered and encoded on the device (--codec auto), one file or
# a batch; a cut JPEG fails with the CPU path's exit code and message and
# leaves no output; a batch with a cut file in the middle writes the others
# and reports that one file. --codec takes auto|cpu. Without JPEG support or
# without a usable CUDA backend the GPU part is skipped (exit 77).
. "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

has_format jpeg || { echo "SKIPPED: built without JPEG"; exit 77; }

K=(--kernel gaussian:5)
"$IMGCONV" --chart 320x200 a.jpg >/dev/null 2>&1 || { echo "FAIL cannot make a chart"; exit 1; }
expect_error 2 "--codec" "--codec with a bad value" "${K[@]}" --codec gpu a.jpg o.jpg
expect_ok "--codec cpu" "${K[@]}" --backend cpu --codec cpu a.jpg cpu.jpg

run --list-backends
if ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    echo "SKIPPED: no usable CUDA backend ($CHECKS checks ran)"
    exit 77
fi

# ---- one file ----------------------------------------------------------------------
expect_ok "cuda, JPEG to JPEG" "${K[@]}" --backend cuda a.jpg g.jpg
run "${K[@]}" --backend cuda --time a.jpg g2.jpg
if [ "$RC" -eq 0 ] && grep -Eq "^  codec +(nvjpeg-hardware|nvjpeg-hybrid|cpu)" "$OUT"; then
    ok "--time names the codec: $(grep -E '^  codec' "$OUT" | sed 's/^ *codec *//')"
else
    fail "--time does not name the codec"
    show_last
fi
expect_ok "cuda, JPEG to PNG" "${K[@]}" --backend cuda a.jpg g.png
expect_ok "cuda, --codec cpu" "${K[@]}" --backend cuda --codec cpu a.jpg c.jpg
for f in g.jpg g.png c.jpg; do
    [ -s "$f" ] && ok "$f written" || fail "$f missing"
done

n=$(wc -c <a.jpg)
head -c $((n * 2 / 5)) a.jpg >cut.jpg
run "${K[@]}" --backend cpu cut.jpg cpu-cut.jpg
cpu_rc=$RC
cpu_msg=$(cat "$ERR")
expect_error "$cpu_rc" "cut.jpg" "cuda, cut JPEG" "${K[@]}" --backend cuda cut.jpg gpu-cut.jpg
[ "$(cat "$ERR")" = "$cpu_msg" ] && ok "same message as the CPU path: $cpu_msg" ||
    fail "cut JPEG: GPU path says '$(cat "$ERR")', CPU path '$cpu_msg'"
[ ! -e gpu-cut.jpg ] && [ -z "$(ls -A | grep '^\.gpu-cut')" ] && ok "no output for the cut JPEG" ||
    fail "an output (or temporary) was left for the cut JPEG"

# ---- a batch with a cut file in the middle -----------------------------------------
mkdir in
for i in 1 2 3 4 5; do
    "$IMGCONV" --chart 300x180 --seed "$i" "in/p$i.jpg" >/dev/null 2>&1
done
n=$(wc -c <in/p3.jpg)
head -c $((n / 2)) in/p3.jpg >in/p3cut.jpg
mv in/p3cut.jpg in/p3.jpg
run "${K[@]}" --backend cuda --json -o out in
cat "$OUT" >gpu.json
if [ "$RC" -eq 3 ] && python3 - gpu.json <<'EOF'; then
import json, sys
d = json.load(open(sys.argv[1]))
assert d["files"] == 5 and d["written"] == 4 and d["failed"] == 1, d
assert len(d["errors"]) == 1 and d["errors"][0]["file"].endswith("p3.jpg"), d
assert "truncated" in d["errors"][0]["error"], d
assert set(d["stage_ms"]) == {"read", "decode", "upload", "filter", "download", "encode", "write"}, d
print("codec", d["codec"], "images/s", d["images_per_s"], "stage_ms", d["stage_ms"])
EOF
    ok "cuda batch: 4 written, the cut file reported"
else
    fail "cuda batch with a cut file"
    show_last
fi
[ "$(listing out)" = "$(printf 'p1.jpg\np2.jpg\np4.jpg\np5.jpg')" ] && ok "out/ holds the 4 outputs only" ||
    fail "out/ holds: $(listing out | tr '\n' ' ')"
gpu_err=$(grep 'p3.jpg' "$ERR")
run "${K[@]}" --backend cpu -q -o outc in
[ "$(grep 'p3.jpg' "$ERR")" = "$gpu_err" ] && ok "the batch error is the CPU path's" ||
    fail "batch error: GPU '$gpu_err', CPU '$(grep 'p3.jpg' "$ERR")'"
run "${K[@]}" --backend cuda -q --format png -o outp in
[ "$RC" -eq 3 ] && [ "$(listing outp | wc -l)" -eq 4 ] && ok "cuda batch JPEG -> PNG" ||
    { fail "cuda batch JPEG -> PNG"; show_last; }

# ---- metadata on the GPU path (issue 15): nvJPEG neither reads nor writes EXIF
# or ICC; the codec reads the header for them and inserts them after SOI/APP0
# as the CPU writer does. A 100000-byte profile needs two APP2 chunks.
python3 - <<'PY' || fail "making the camera JPEG"
import struct
jpg = open("a.jpg", "rb").read()
exif = b"MM\x00*" + struct.pack(">I", 8) + struct.pack(">H", 1) + struct.pack(">HHIHH", 0x0112, 3, 1, 6, 0) + struct.pack(">I", 0)
icc = bytearray(100000)
icc[0:4] = struct.pack(">I", len(icc)); icc[12:16] = b"mntr"; icc[16:20] = b"RGB "
icc[36:40] = b"acsp"; icc[68:80] = struct.pack(">III", 0xF6D6, 0x10000, 0xD32D)
for i in range(132, len(icc)): icc[i] = (i * 7 + (i >> 8)) & 255
open("exif.bin", "wb").write(exif); open("icc.bin", "wb").write(icc)
seg = lambda m, d: b"\xff" + bytes([m]) + struct.pack(">H", len(d) + 2) + d
c1, c2 = bytes(icc[:65519]), bytes(icc[65519:])
open("camera.jpg", "wb").write(jpg[:2] + seg(0xE1, b"Exif\x00\x00" + exif) +
    seg(0xE2, b"ICC_PROFILE\x00\x01\x02" + c1) + seg(0xE2, b"ICC_PROFILE\x00\x02\x02" + c2) + jpg[2:])
PY
# same_meta FILE: its EXIF and ICC equal exif.bin and icc.bin.
same_meta() {
    python3 - "$1" <<'PY'
import struct, sys
d = open(sys.argv[1], "rb").read()
i, exif, parts = 2, None, {}
while i + 4 <= len(d) and d[i] == 0xFF and d[i + 1] != 0xDA:
    n = struct.unpack(">H", d[i + 2:i + 4])[0]; body = d[i + 4:i + 2 + n]
    if d[i + 1] == 0xE1 and body[:6] == b"Exif\x00\x00": exif = body[6:]
    if d[i + 1] == 0xE2 and body[:12] == b"ICC_PROFILE\x00": parts[body[12]] = body[14:]
    i += 2 + n
icc = b"".join(parts[k] for k in sorted(parts))
assert exif == open("exif.bin", "rb").read(), "EXIF differs or is missing"
assert icc == open("icc.bin", "rb").read(), "ICC differs or is missing"
PY
}
expect_ok "cuda, a camera JPEG" "${K[@]}" --backend cuda camera.jpg gm.jpg
same_meta gm.jpg && ok "GPU path keeps EXIF and a 2-chunk ICC profile" || fail "GPU path metadata"
mkdir -p min && cp camera.jpg min/a.jpg && cp camera.jpg min/b.jpg
run "${K[@]}" --backend cuda -q -o mout min
[ "$RC" -eq 0 ] && same_meta mout/a.jpg && same_meta mout/b.jpg &&
    ok "GPU batch keeps EXIF and ICC" || fail "GPU batch metadata"

finish
