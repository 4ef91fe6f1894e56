#!/usr/bin/env bash
# batch_gpu.sh - a CUDA batch of JPEGs decoded by the CPU workers and by
# nvJPEG at once (issue 11, "batch at hardware speed"): every output is
# present; a file the CPU workers decoded is byte for byte the output of the
# host path (--codec cpu: libjpeg-turbo decode, filter on the GPU, CPU
# encoder) or of the device route (IC_BATCH_DECODE=cpu-device: libjpeg-turbo
# decode, filtered into a codec slot, nvJPEG encode), and one nvJPEG decoded
# is the output of the GPU path (IC_BATCH_DECODE=gpu: nvJPEG decode and
# encode) or within a few levels of it; --json's decoded_by and to_device
# count them; a cut file in the middle fails with the
# CPU path's one line, leaves no output, and the others are written; the
# same device listed twice (--devices 0,0) gives one device's outputs; four
# decode threads (IC_BATCH_GPU_DECODERS=4) give one thread's bytes. The
# difference between the two paths' outputs (decoders plus encoders) is
# printed. Needs a usable CUDA backend and JPEG support (exit 77 otherwise).
. "$(dirname "$0")/common.bash"
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" # pnm.py
cd "$TMP" || exit 1

has_format jpeg || { echo "SKIPPED: built without JPEG"; exit 77; }
run --list-backends
if ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    echo "SKIPPED: no usable CUDA backend ($CHECKS checks ran)"
    exit 77
fi

# 160 charts of 320x240 (odd seeds, JPEG q90), a cut one in the middle.
N=160
mkdir in
for i in $(seq 1 $N); do
    f=$(printf 'in/f%03d' "$i")
    "$IMGCONV" --chart 320x240 --seed "$i" "$f.ppm" >/dev/null 2>&1 &&
        "$IMGCONV" --backend cpu --kernel 1 --quality 90 "$f.ppm" "$f.jpg" >/dev/null 2>&1 ||
        fail "making $f.jpg"
    rm -f "$f.ppm"
done
CUT=in/f080.jpg
n=$(wc -c <"$CUT")
head -c $((n / 2)) "$CUT" >cut.tmp && mv cut.tmp "$CUT"
K=(--kernel gaussian:5 --quality 92)

# The references: every file on the host path, every file through nvJPEG.
run "${K[@]}" --backend cuda --codec cpu -q -o refA in
[ "$RC" -eq 3 ] && ok "host path reference (exit 3 for the cut file)" || { fail "host path reference"; show_last; }
cpu_line=$(grep 'f080.jpg' "$ERR")
IC_BATCH_DECODE=gpu IC_BATCH_GPU_DECODERS=1 run "${K[@]}" --backend cuda -q --json -o refB in
cp "$OUT" refB.json
[ "$RC" -eq 3 ] && ok "GPU path reference (exit 3)" || { fail "GPU path reference"; show_last; }
[ "$(grep 'f080.jpg' "$ERR")" = "$cpu_line" ] && ok "nvJPEG's side gives the cut file the CPU path's line" ||
    fail "GPU path: '$(grep 'f080.jpg' "$ERR")' against the CPU path's '$cpu_line'"

IC_BATCH_DECODE=cpu-device run "${K[@]}" --backend cuda -q --json -o refC in
cp "$OUT" refC.json
[ "$RC" -eq 3 ] && [ "$(grep 'f080.jpg' "$ERR")" = "$cpu_line" ] &&
    ok "device route reference (exit 3, the CPU path's line for the cut file)" ||
    { fail "device route reference"; show_last; }
case "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["codec"])' refC.json)" in
cpu*) ;;
*) python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["to_device"] == d["written"] == int(sys.argv[2]) else 1)' refC.json $((N - 1)) &&
    ok "cpu-device: all $((N - 1)) images took the device route" ||
    fail "cpu-device: $(python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); print(d["to_device"], "of", d["written"])' refC.json) images took the device route" ;;
esac

# mixed DIR MODE: a batch with IC_BATCH_DECODE=MODE; checks its outputs.
mixed() {
    local dir=$1 mode=$2
    IC_BATCH_DECODE=$mode run "${K[@]}" --backend cuda --json -o "$dir" in
    cp "$OUT" "$dir.json"
    local errlines
    errlines=$(grep -c '^imgconv: error: ' "$ERR")
    if [ "$RC" -eq 3 ] && [ "$errlines" -eq 2 ] && [ "$(grep 'f080.jpg' "$ERR")" = "$cpu_line" ] &&
        grep -q "1 of $N files failed" "$ERR"; then
        ok "$mode: the cut file fails with the CPU path's line ($cpu_line), exit 3"
    else
        fail "$mode: cut file in the middle"
        show_last
    fi
    [ ! -e "$dir/f080.jpg" ] && [ "$(listing "$dir" | wc -l)" -eq $((N - 1)) ] &&
        ok "$mode: $((N - 1)) outputs, none for the cut file" ||
        fail "$mode: OUTDIR holds $(listing "$dir" | wc -l) files"
    "$IMGCONV" --backend cpu --kernel 1 --format ppm -q -o "p$dir" "$dir" >/dev/null 2>&1
    if python3 - "$dir" "$dir.json" <<'EOF'; then
import json, os, sys
d, js = sys.argv[1], json.load(open(sys.argv[2]))
import pnm  # tests/cli/pnm.py (PYTHONPATH)
def ppm(p):
    return pnm.read(p)[1]
by = js["decoded_by"]
names = sorted(os.listdir(d))
same_a = same_c = same_b = near_b = 0
# A file whose nvJPEG decode equals libjpeg-turbo's gives the same bytes on
# the device route and on the GPU path: such a file counts as either.
amb = sum(open(os.path.join("refB", n), "rb").read() == open(os.path.join("refC", n), "rb").read()
          for n in os.listdir("refC"))
worst = (0.0, 0)
for n in names:
    o = open(os.path.join(d, n), "rb").read()
    if o == open(os.path.join("refA", n), "rb").read():
        same_a += 1
        continue
    if o == open(os.path.join("refC", n), "rb").read():
        same_c += 1
        continue
    if o == open(os.path.join("refB", n), "rb").read():
        same_b += 1
        continue
    q = n[:-4] + ".ppm"
    x, y = ppm(os.path.join("p" + d, q)), ppm(os.path.join("prefB", q))
    diffs = [abs(u - v) for u, v in zip(x, y)]
    mean, mx = sum(diffs) / len(diffs), max(diffs)
    worst = max(worst, (mean, mx))
    assert len(x) == len(y) and mean <= 1.5 and mx <= 64, (n, "neither reference", mean, mx)
    near_b += 1
print(f"decoded_by {by}, to_device {js['to_device']}, {amb} files the same on the device route "
      f"and the GPU path: {same_a} equal the host path's bytes, "
      f"{same_c} the device route's, {same_b} the GPU path's, "
      f"{near_b} within mean 1.5 / max 64 of it (worst {worst})")
assert by["cpu"] + by["gpu"] == len(names), (by, len(names))
# the encoders differ (libjpeg-turbo, nvJPEG): the host route's bytes are its own
assert same_a == by["cpu"] - js["to_device"], (same_a, by, js["to_device"])
assert same_c + same_b + near_b == js["to_device"] + by["gpu"], (same_c, same_b, near_b, by)
assert js["to_device"] <= same_c <= js["to_device"] + amb, (same_c, js["to_device"], amb)
EOF
        ok "$mode: every output is the host path's (CPU-decoded) or the GPU path's (nvJPEG-decoded)"
    else
        fail "$mode: outputs against the two references"
    fi
}
"$IMGCONV" --backend cpu --kernel 1 --format ppm -q -o prefA refA >/dev/null 2>&1
"$IMGCONV" --backend cpu --kernel 1 --format ppm -q -o prefB refB >/dev/null 2>&1

# after: the CPU workers start when nvJPEG is open, so both take files.
mixed mixA after
codec=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["codec"])' mixA.json)
case "$codec" in
cpu*) echo "SKIPPED: nvJPEG is not usable here (codec: $codec): no mixed batch to check" ;;
*) if python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["decoded_by"]; sys.exit(0 if d["cpu"] > 0 and d["gpu"] > 0 else 1)' mixA.json; then
    ok "after: both decoders took files ($(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["decoded_by"])' mixA.json))"
else
    fail "after: one decoder took every file: $(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["decoded_by"])' mixA.json)"
fi ;;
esac
# Four decode threads, each on a decoder of its own once the codec made it:
# the same bytes as one thread's (refB), and every nvJPEG file counted once.
IC_BATCH_DECODE=gpu IC_BATCH_GPU_DECODERS=4 run "${K[@]}" --backend cuda -q --json -o dec4 in
cp "$OUT" dec4.json
if [ "$RC" -eq 3 ] && [ "$(grep 'f080.jpg' "$ERR")" = "$cpu_line" ] && [ ! -e dec4/f080.jpg ] &&
    same_bytes dec4 refB && [ "$(listing dec4 | wc -l)" -eq $((N - 1)) ]; then
    ok "4 decode threads: every output byte-identical to one thread's, the cut file's line"
else
    fail "4 decode threads: exit $RC, outputs against one thread's"
    show_last
fi
python3 - dec4.json <<'EOF' && ok "4 decode threads: files per thread add up" || fail "4 decode threads: --json counts"
import json, sys
d = json.load(open(sys.argv[1]))
dev = d["devices"][0]
per = dev["decoded_by_thread"]
print(f"decoded_by {d['decoded_by']}, by each decode thread {per}")
assert sum(per) == dev["decoded_by_gpu"] == d["decoded_by"]["gpu"], (per, dev, d["decoded_by"])
assert d["codec"].startswith("cpu") or len(per) == 4, per
EOF
# both: the CPU workers from the start, nvJPEG once open.
mixed mixB both
# handover (the default): the CPU workers until the hardware decoder is open, then it alone.
mixed mixH handover

# Two devices listed, the same device twice (each listed device gets its
# own filter context, fed from one queue): with --codec cpu every output is
# byte for byte the one-device host path's (refA, and --devices 0), and the
# cut file in the middle fails with its one line while the batch goes on.
# With the default codec each output is one of the three references'.
dual() { # DIR ARGS...: a batch with ARGS; checks exit 3, the cut file's line, N-1 outputs
    local dir=$1
    shift
    run "${K[@]}" --backend cuda -q "$@" -o "$dir" in
    if [ "$RC" -eq 3 ] && [ "$(grep -c '^imgconv: error: ' "$ERR")" -eq 2 ] &&
        [ "$(grep 'f080.jpg' "$ERR")" = "$cpu_line" ] && [ ! -e "$dir/f080.jpg" ] &&
        [ "$(listing "$dir" | wc -l)" -eq $((N - 1)) ]; then
        ok "$*: the cut file's one line ($cpu_line), $((N - 1)) outputs, exit 3"
    else
        fail "$*: exit $RC, $(listing "$dir" | wc -l) outputs"
        show_last
    fi
}
dual one0 --codec cpu --devices 0
dual two00 --codec cpu --devices 0,0
same_bytes two00 one0 && same_bytes two00 refA &&
    ok "--devices 0,0 --codec cpu: every output byte-identical to one device's" ||
    fail "--devices 0,0 --codec cpu: outputs differ from one device's"
dual two00d --devices 0,0
refs_check() { # DIR: every output is one of the one-device references
    python3 - "$1" <<'EOF'
import os, sys
d = sys.argv[1]
names = sorted(os.listdir(d))
bad = [n for n in names
       if not any(open(os.path.join(d, n), "rb").read() == open(os.path.join(r, n), "rb").read()
                  for r in ("refA", "refB", "refC"))]
print(f"{d}: {len(names)} outputs, {len(bad)} equal to none of the one-device references {bad[:3]}")
assert not bad
EOF
}
refs_check two00d && ok "--devices 0,0: every output is one of the one-device references" ||
    fail "--devices 0,0: outputs against the one-device references"
# Two real devices, where the machine has them: the same answers.
if [ "$(nvidia-smi -L 2>/dev/null | grep -c '^GPU ')" -ge 2 ]; then
    dual two01 --codec cpu --devices 0,1
    same_bytes two01 refA &&
        ok "--devices 0,1 --codec cpu: every output byte-identical to one device's" ||
        fail "--devices 0,1 --codec cpu: outputs differ from one device's"
    dual two01d --devices 0,1
    refs_check two01d && ok "--devices 0,1: every output is one of the one-device references" ||
        fail "--devices 0,1: outputs against the one-device references"
else
    echo "skip: --devices 0,1 (one GPU here)"
fi

# A context that cannot be made (a device that does not exist): the workers,
# started before it, stop (a file they already found bad is reported as it
# was found); the device's line last, the device exit code (5), no output.
run "${K[@]}" --backend cuda --device 1000 -o badctx in
if [ "$RC" -eq 5 ] && tail -1 "$ERR" | grep -q '^imgconv: error: .*1000' &&
    [ "$(grep -c '^imgconv: error: ' "$ERR")" -le 2 ] && [ "$(listing badctx | wc -l)" -eq 0 ]; then
    ok "a context that cannot be made: exit 5, '$(tail -1 "$ERR")', no output"
else
    fail "bad device: exit $RC, $(listing badctx | wc -l) outputs"
    show_last
fi

# What the two paths' outputs differ by (decoders and encoders), for the record.
python3 - <<'EOF'
import os
import pnm  # tests/cli/pnm.py (PYTHONPATH)
def ppm(p):
    return pnm.read(p)[1]
tot = cnt = mx = 0
for n in sorted(os.listdir("prefA")):
    x, y = ppm("prefA/" + n), ppm("prefB/" + n)
    tot += sum(abs(u - v) for u, v in zip(x, y)); cnt += len(x)
    mx = max(mx, max(abs(u - v) for u, v in zip(x, y)))
print(f"host path against GPU path outputs (decoded by libjpeg-turbo): mean |diff| {tot / max(cnt, 1):.3f}, max {mx}")
EOF

finish
