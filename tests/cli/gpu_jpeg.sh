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
assert set(d["stage_ms"]) == {"read", "decode", "filter", "encode", "write"}, d
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

finish
