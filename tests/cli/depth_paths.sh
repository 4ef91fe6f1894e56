#!/usr/bin/env bash
# depth_paths.sh - where a 16-bit image meets an 8-bit format, every path says
# so once per file and nowhere else (issue 15; depth.sh covers one file):
# OUTPUT - with --format jpg, a batch into JPEG and WebP (one notice per
# 16-bit input, none for the 8-bit one, none for PNG/PPM/TIFF outputs, which
# keep 16 bits), --stream WxHxC:16 (raw frames: no notice). With a usable
# CUDA backend the batch runs the GPU pipeline (JPEG inputs by majority): a
# 16-bit PNG among them is filtered at 16 bits as the host pipeline does it,
# and a JPEG output of it gets the notice.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
command -v python3 >/dev/null || {
    echo "SKIP: no python3"
    exit 77
}

# 6x4 RGB, maxval 65535, samples whose low bytes matter
python3 - <<'PY' || fail "python3 writes the 16-bit PPM"
import struct
vals = [(i * 2654435761) % 65536 for i in range(6 * 4 * 3)]
open("deep.ppm", "wb").write(b"P6\n6 4\n65535\n" + struct.pack(">%dH" % len(vals), *vals))
PY
"$IMGCONV" --chart 6x4 flat.ppm || fail "8-bit chart"
K=(--kernel "1 2 1; 2 4 2; 1 2 1 / 16")

# ---- standard output ---------------------------------------------------------------
if has_format jpeg; then
    run "${K[@]}" --format jpg - - <deep.ppm
    [ "$RC" -eq 0 ] && [ -s "$OUT" ] &&
        [ "$(cat "$ERR")" = "imgconv: -: 16-bit samples written as 8-bit (JPEG holds 8 bits)" ] &&
        ok "OUTPUT - as JPEG: one notice naming -" || { fail "stdout JPEG notice"; show_last; }
fi
run "${K[@]}" --format ppm - - <deep.ppm
[ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && [ "$(head -c 13 "$OUT")" = "$(printf 'P6\n6 4\n65535\n')" ] &&
    ok "OUTPUT - as PPM: 16 bits, no notice" || { fail "stdout PPM"; show_last; }

# ---- batch, host pipeline ------------------------------------------------------------
for fmt in jpg webp; do
    f=jpeg name=JPEG
    [ "$fmt" = webp ] && f=webp name=WebP
    has_format "$f" || continue
    mkdir -p "b_$fmt"
    run "${K[@]}" --backend cpu -q --format "$fmt" -o "b_$fmt" deep.ppm flat.ppm
    want="imgconv: b_$fmt/deep.$fmt: 16-bit samples written as 8-bit ($name holds 8 bits)"
    if [ "$RC" -eq 0 ] && [ "$(cat "$ERR")" = "$want" ] && [ -s "b_$fmt/deep.$fmt" ] &&
        [ -s "b_$fmt/flat.$fmt" ]; then
        ok "batch into $name: one notice, for the 16-bit input only"
    else
        fail "batch into $name notice"
        show_last
    fi
done
mkdir -p b_ppm
run "${K[@]}" --backend cpu -q --format ppm -o b_ppm deep.ppm flat.ppm
"$IMGCONV" "${K[@]}" --backend cpu deep.ppm one.ppm
[ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && cmp -s b_ppm/deep.ppm one.ppm &&
    ok "batch into PPM: 16 bits kept (equal to the one-file run), no notice" ||
    { fail "batch into PPM"; show_last; }

# ---- stream: raw frames keep their depth --------------------------------------------
tail -c $((6 * 4 * 3 * 2)) deep.ppm >frame.be
run "${K[@]}" --stream 6x4x3:16 <frame.be
[ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && [ "$(wc -c <"$OUT")" -eq $((6 * 4 * 3 * 2)) ] &&
    ok "--stream :16: 16-bit frames out, no notice" || { fail "stream notice"; show_last; }

# ---- batch, GPU pipeline ---------------------------------------------------------------
run --list-backends
if ! has_format jpeg || ! has_format png ||
    ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    echo "(GPU pipeline part skipped: no usable cuda backend or no JPEG/PNG)"
    finish
fi
"$IMGCONV" --chart 64x48 --seed 1 a.jpg && "$IMGCONV" --chart 64x48 --seed 2 b.jpg &&
    "$IMGCONV" --kernel 1 deep.ppm deep.png || fail "GPU inputs"
mkdir -p g_png c_png g_jpg
# The same batch through the GPU pipeline (default codec) and the host one
# (--codec cpu), both on cuda: the 16-bit PNG's output must be the same file.
run "${K[@]}" --backend cuda -q --format png -o g_png a.jpg b.jpg deep.png
g_rc=$RC
run "${K[@]}" --backend cuda -q --codec cpu --format png -o c_png a.jpg b.jpg deep.png
"$IMGCONV" --kernel 1 g_png/deep.png g_deep.ppm 2>/dev/null
"$IMGCONV" --kernel 1 c_png/deep.png c_deep.ppm 2>/dev/null
if [ "$g_rc" -eq 0 ] && [ "$RC" -eq 0 ] && [ -s c_deep.ppm ] && cmp -s g_deep.ppm c_deep.ppm &&
    [ "$(head -c 13 g_deep.ppm)" = "$(printf 'P6\n6 4\n65535\n')" ]; then
    ok "GPU pipeline: a 16-bit PNG among JPEGs filtered at 16 bits, as the host pipeline"
else
    fail "GPU pipeline: 16-bit PNG (exit $g_rc/$RC; $(head -c 13 g_deep.ppm 2>/dev/null | tr '\n' ' '))"
fi
run "${K[@]}" --backend cuda -q --format jpg -o g_jpg a.jpg b.jpg deep.png
want="imgconv: g_jpg/deep.jpg: 16-bit samples written as 8-bit (JPEG holds 8 bits)"
[ "$RC" -eq 0 ] && [ "$(cat "$ERR")" = "$want" ] && [ -s g_jpg/deep.jpg ] &&
    ok "GPU pipeline into JPEG: one notice, for the 16-bit input only" ||
    { fail "GPU pipeline JPEG notice"; show_last; }
finish
