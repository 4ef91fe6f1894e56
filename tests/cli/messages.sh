#!/usr/bin/env bash
# messages.sh - what a new user reads: --border-value takes the range of the
# image's depth, RGBA saved as JPEG warns and --background flattens it,
# --help and --list-backends say what a backend does without course
# references, and --backend cuda on a machine without a GPU says so.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

# ---- --border-value: 0..65535 on a 16-bit image, 0..255 on an 8-bit one ----
python3 - <<'PY' || fail "python3 writes the 16-bit PGM"
import struct
open("in16.pgm", "wb").write(b"P5\n4 1\n65535\n" + struct.pack(">4H", 1000, 2000, 3000, 4000))
PY
SHIFT="0 0 1"
expect_ok "--border-value 65535 on a 16-bit image" \
    -k "$SHIFT" --border constant --border-value 65535 in16.pgm o16.pgm
first=$(od -An -tu1 -j $(($(wc -c <o16.pgm) - 8)) -N 2 o16.pgm | tr -s ' ' | sed 's/^ //')
[ "$first" = "255 255" ] && ok "the border sample is 65535" || fail "border sample bytes: $first"
"$IMGCONV" --chart 4x4x1 in8.pgm || fail "in8.pgm"
expect_error 2 "--border-value" "--border-value 300 on an 8-bit image" \
    -k "$SHIFT" --border constant --border-value 300 in8.pgm o8.pgm
grep -q "8-bit" "$ERR" && ok "names the depth" || fail "does not name the depth"
expect_ok "--border-value 255 on an 8-bit image" \
    -k "$SHIFT" --border constant --border-value 255 in8.pgm o8.pgm
expect_error 2 "--border-value" "--border-value 65536 is refused" \
    -k "$SHIFT" --border constant --border-value 65536 in16.pgm o16b.pgm

# ---- RGBA to JPEG: a warning, and --background ----
if has_format jpeg && has_format png; then
    "$IMGCONV" --chart 32x32x4 rgba.png || fail "rgba.png"
    run -k identity rgba.png a.jpg
    if [ "$RC" -eq 0 ] && grep -q "^imgconv: warning: a.jpg: alpha dropped" "$ERR" &&
        [ "$(wc -l <"$ERR")" -eq 1 ]; then
        ok "RGBA to JPEG warns in one line"
    else
        fail "RGBA to JPEG warning"
        show_last
    fi
    expect_ok "-q silences it" -k identity -q rgba.png q.jpg
    expect_ok "--background white: no warning" -k identity --background white rgba.png w.jpg
    expect_ok "--background '#000000'" -k identity --background '#000000' rgba.png k.jpg
    "$IMGCONV" -k identity --overwrite a.jpg a.ppm 2>/dev/null
    "$IMGCONV" -k identity w.jpg w.ppm 2>/dev/null
    [ "$(checksum a.ppm)" != "$(checksum w.ppm)" ] && ok "white differs from the default" ||
        fail "--background white changed nothing"
    # A fully transparent image flattened onto white is white.
    python3 - <<'PY' || fail "python3 writes a transparent PNG"
import struct, zlib
def chunk(t, d):
    return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xffffffff)
raw = b"".join(b"\0" + bytes([10, 20, 30, 0] * 8) for _ in range(8))
open("clear.png", "wb").write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", 8, 8, 8, 6, 0, 0, 0))
                              + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))
PY
    "$IMGCONV" -k identity --background white clear.png cw.jpg 2>/dev/null &&
        "$IMGCONV" -k identity cw.jpg cw.ppm 2>/dev/null || fail "clear.png to cw.ppm"
    low=$(pnm_samples cw.ppm | tr ' ' '\n' | sort -n | head -1)
    [ "${low:-0}" -ge 250 ] && ok "transparent on white is white (lowest sample $low)" ||
        fail "transparent on white: lowest sample $low"
    "$IMGCONV" -k identity clear.png cd.jpg 2>/dev/null && "$IMGCONV" -k identity cd.jpg cd.ppm 2>/dev/null
    high=$(pnm_samples cd.ppm | tr ' ' '\n' | sort -n | tail -1)
    [ "${high:-255}" -le 40 ] && ok "default: the stored colour, as before (highest $high)" ||
        fail "default: highest sample $high"
    "$IMGCONV" --chart 8x8 rgb.ppm || fail "rgb.ppm"
    expect_ok "an RGB input to JPEG does not warn" -k identity rgb.ppm c3.jpg
    expect_error 2 "--background" "--background red is refused" -k identity --background red rgba.png r.jpg
fi

# ---- course words are not in user-facing text ----
for args in --help --list-backends; do
    run $args
    if grep -Eiq "seed [0-9]|Kirk|Hwu|ghost|Fig [0-9]" "$OUT"; then
        fail "$args mentions the course: $(grep -Eio 'seed [0-9]+|Kirk|Hwu|ghost cells|Fig [0-9.]+' "$OUT" | head -3 | tr '\n' ' ')"
    else
        ok "$args speaks of what the backend does"
    fi
done

# ---- --backend cuda without a GPU ----
if "$IMGCONV" --version | grep -q "CUDA backends: built in"; then
    if "$IMGCONV" --list-backends | grep -Eq "^  cuda +yes"; then
        echo "skip: a GPU is usable here"
    else
        expect_error 5 "cuda" "--backend cuda without a GPU" -k box:3 --backend cuda in8.pgm g.pgm
        grep -qi "no GPU or CUDA driver found" "$ERR" && ok "says no GPU or driver was found" ||
            fail "message: $(cat "$ERR")"
        grep -q "insufficient" "$ERR" && fail "still speaks of an insufficient driver" ||
            ok "no 'insufficient driver'"
    fi
else
    echo "skip: CUDA backends not built in (the GPU message needs the CUDA build)"
fi
finish
