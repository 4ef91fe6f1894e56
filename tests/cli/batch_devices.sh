#!/usr/bin/env bash
# batch_devices.sh - a CUDA batch of JPEGs over several device pipelines:
# --devices 0,0 lists the same device twice, which gives two pipelines, each
# with its own filter contexts and, with the GPU side, its own GPU codec
# (slots, decoders, encoder). --json's "devices" lists both; their counts add
# up to the batch's; the workers hand images to both; each pipeline's outputs
# are byte for byte the one-device run's where the same decoder and encoder
# made them (--codec cpu: the host path; IC_BATCH_DECODE=cpu-device: every
# file through a pipeline's own nvJPEG encoder), and within the GPU codec's
# tolerance of it when nvJPEG decodes every file (IC_BATCH_DECODE=gpu);
# --time prints one line per device. Needs a usable CUDA backend and JPEG
# support (exit 77 otherwise).
. "$(dirname "$0")/common.bash"
export PYTHONPATH="$(cd "$(dirname "$0")" && pwd)${PYTHONPATH:+:$PYTHONPATH}" # pnm.py
cd "$TMP" || exit 1

has_format jpeg || { echo "SKIPPED: built without JPEG"; exit 77; }
run --list-backends
if ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    echo "SKIPPED: no usable CUDA backend ($CHECKS checks ran)"
    exit 77
fi

# 128 charts of 320x240 (JPEG q90).
N=128
mkdir in
for i in $(seq 1 $N); do
    f=$(printf 'in/f%03d' "$i")
    "$IMGCONV" --chart 320x240 --seed "$i" "$f.ppm" >/dev/null 2>&1 &&
        "$IMGCONV" --backend cpu --kernel 1 --quality 90 "$f.ppm" "$f.jpg" >/dev/null 2>&1 ||
        fail "making $f.jpg"
    rm -f "$f.ppm"
done
K=(--kernel gaussian:5 --quality 92)

# pair DIR MODE DEVICES ARGS...: a batch into DIR (IC_BATCH_DECODE=MODE, empty:
# the default) with --devices DEVICES and --json, kept as DIR.json.
pair() {
    local dir=$1 mode=$2 devs=$3
    shift 3
    IC_BATCH_DECODE=$mode run "${K[@]}" --backend cuda -q --json --devices "$devs" "$@" -o "$dir" in
    cp "$OUT" "$dir.json"
    if [ "$RC" -eq 0 ] && [ "$(listing "$dir" | wc -l)" -eq $N ]; then
        ok "${mode:-both} --devices $devs $*: exit 0, $N outputs"
    else
        fail "${mode:-both} --devices $devs $*: exit $RC, $(listing "$dir" | wc -l) outputs"
        show_last
    fi
}

# counts JSON [gpu]: the pipelines' counts add up to the batch's, and each
# took images (gpu: each device route's counts too).
counts() {
    python3 - "$@" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
gpu = len(sys.argv) > 2
devs = d["devices"]
print(f"{sys.argv[1]}: codec {d['codec']}; " + "; ".join(
    f"device {v['device']}: filtered {v['filtered']}, nvJPEG-decoded {v['decoded_by_gpu']}, "
    f"into slots {v['to_device']}, GPU-encoded {v['gpu_encoded']} ({v['codec']})" for v in devs))
assert len(devs) == 2, devs
assert sum(v["filtered"] for v in devs) == d["written"], (devs, d["written"])
assert sum(v["decoded_by_gpu"] for v in devs) == d["decoded_by"]["gpu"], (devs, d["decoded_by"])
assert sum(v["to_device"] for v in devs) == d["to_device"], (devs, d["to_device"])
assert all(v["filtered"] > 0 for v in devs), devs
if gpu:
    assert all(v["to_device"] > 0 and v["gpu_encoded"] == v["to_device"] for v in devs), devs
EOF
}

# The host path on two pipelines: byte for byte one device's.
pair oneA "" 0 --codec cpu
pair twoA "" 0,0 --codec cpu
counts twoA.json && ok "--codec cpu: both pipelines filtered, the counts add up" ||
    fail "--codec cpu: per-device counts"
same_bytes twoA oneA && ok "--codec cpu: every output byte-identical to one device's" ||
    fail "--codec cpu: outputs differ from one device's"

# Every file through a pipeline's own GPU codec (device route, nvJPEG encode).
pair oneC cpu-device 0
pair twoC cpu-device 0,0
case "$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["codec"])' twoC.json)" in
cpu*) echo "SKIPPED: nvJPEG is not usable here: no device route to check" ;;
*) counts twoC.json gpu && ok "cpu-device: both pipelines' codecs encoded images, the counts add up" ||
    fail "cpu-device: per-device counts"
    same_bytes twoC oneC && ok "cpu-device: every output byte-identical to one device's" ||
        fail "cpu-device: outputs differ from one device's" ;;
esac

# nvJPEG decodes every file, on whichever pipeline's decoder took it.
pair oneB gpu 0
pair twoB gpu 0,0
"$IMGCONV" --backend cpu --kernel 1 --format ppm -q -o poneB oneB >/dev/null 2>&1
"$IMGCONV" --backend cpu --kernel 1 --format ppm -q -o ptwoB twoB >/dev/null 2>&1
if python3 - <<'EOF'; then
import json, os
import pnm  # tests/cli/pnm.py (PYTHONPATH)
d = json.load(open("twoB.json"))
devs = d["devices"]
print("gpu: " + "; ".join(f"device {v['device']}: nvJPEG-decoded {v['decoded_by_gpu']}, "
                          f"filtered {v['filtered']}" for v in devs))
assert len(devs) == 2 and sum(v["filtered"] for v in devs) == d["written"], devs
assert sum(v["decoded_by_gpu"] for v in devs) == d["decoded_by"]["gpu"], devs
worst = (0.0, 0)
for n in sorted(os.listdir("ptwoB")):
    x, y = pnm.read("ptwoB/" + n)[1], pnm.read("poneB/" + n)[1]
    diffs = [abs(u - v) for u, v in zip(x, y)]
    worst = max(worst, (sum(diffs) / len(diffs), max(diffs)))
    assert len(x) == len(y) and worst[0] <= 1.5 and worst[1] <= 64, (n, worst)
print(f"gpu: worst output against one device's: mean {worst[0]:.3f}, max {worst[1]}")
EOF
    ok "gpu: the counts add up, every output within the GPU codec's tolerance of one device's"
else
    fail "gpu: per-device counts or outputs"
fi

# --time: one line per device pipeline.
run "${K[@]}" --backend cuda --time --devices 0,0 -o timed in
[ "$RC" -eq 0 ] && [ "$(grep -c '^  device 0 (pipeline [01],' "$OUT")" -eq 2 ] &&
    ok "--time: one line per device pipeline" || { fail "--time per device"; show_last; }

finish
