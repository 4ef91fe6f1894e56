#!/usr/bin/env bash
# serve_gpu.sh - imgconv serve on a CUDA backend (docs/serve.md, "The GPU
# lane"): 64 concurrent clients x 20 HD JPEG requests, each reply byte for
# byte the batch CLI's nvJPEG route (IC_BATCH_DECODE=gpu: nvJPEG decode,
# filter on the device, nvJPEG encode); the lane served them in batches of
# more than one; small images and PNGs went to the CPU workers, with the
# cpu backend's bytes; Server-Timing names the lane. Needs the server, curl,
# python3, JPEG support and a usable CUDA backend (exit 77 otherwise).
source "$(dirname "$0")/common.bash"
HERE=$(cd "$(dirname "$0")" && pwd)
"$IMGCONV" --version | grep -q '^serve: built in' ||
    { echo "SKIPPED: this imgconv was built without the server (libevent)"; exit 77; }
command -v curl >/dev/null || { echo "SKIPPED: no curl"; exit 77; }
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
has_format jpeg || { echo "SKIPPED: built without JPEG"; exit 77; }
run --list-backends
if ! awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$'; then
    echo "SKIPPED: no usable CUDA backend"
    exit 77
fi
LOAD="$HERE/serve_load.py"
cd "$TMP" || exit 1
PID=""
cleanup() {
    [ -n "$PID" ] && kill "$PID" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT

# 8 HD JPEGs (different seeds), a small JPEG and a PNG.
mkdir in
for i in $(seq 1 8); do
    "$IMGCONV" --chart 1920x1080 --seed "$i" "in/f$i.ppm" &&
        "$IMGCONV" --backend cpu --kernel 1 --quality 90 "in/f$i.ppm" "in/f$i.jpg" &&
        rm "in/f$i.ppm" || { echo "FAIL making in/f$i.jpg"; exit 1; }
done
"$IMGCONV" --chart 160x120 small.jpg && "$IMGCONV" --chart 640x480 m.png || { echo "FAIL charts"; exit 1; }

IC_BATCH_DECODE=gpu run --kernel gaussian:5 --backend cuda -q -o ref in
[ "$RC" = 0 ] && ok "GPU path reference (batch, nvJPEG decode and encode)" || { fail "GPU reference"; show_last; }
"$IMGCONV" --backend cpu -k gaussian:5 small.jpg small_ref.jpg &&
    "$IMGCONV" --backend cpu -k gaussian:5 m.png m_ref.png || fail "cpu references"

"$IMGCONV" serve --backend cuda --listen 127.0.0.1:0 --workers 4 >srv.log 2>srv.err &
PID=$!
for _ in $(seq 600); do # two pipes to warm: up to a minute
    grep -q 'serving on' srv.log 2>/dev/null && break
    sleep 0.1
done
PORT=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' srv.log)
[ -n "$PORT" ] || { echo "FAIL the server did not start"; cat srv.err; exit 1; }
URL="http://127.0.0.1:$PORT"
grep -q 'GPU lane' srv.log && ok "the server has a GPU lane: $(sed -n 's/.*GPU lane \([^)]*\)).*/\1/p' srv.log)" ||
    fail "no GPU lane: $(cat srv.log)"
[ "$(curl -s "$URL/v1/health" | grep -c '"ready"')" = 1 ] && ok "health: ready once listening" || fail "health"

curl -s -D h.txt -o one.jpg --data-binary @in/f1.jpg "$URL/v1/filter?kernel=gaussian:5"
cmp -s one.jpg ref/f1.jpg && ok "one HD JPEG: the GPU path's bytes" || fail "one HD JPEG differs from ref/f1.jpg"
grep -qi '^Server-Timing:.*lane;desc=gpu' h.txt && ok "Server-Timing names the GPU lane" ||
    fail "Server-Timing: $(grep -i server-timing h.txt)"
curl -s -D h.txt -o small.out --data-binary @small.jpg "$URL/v1/filter?kernel=gaussian:5"
cmp -s small.out small_ref.jpg && grep -qi '^Server-Timing:.*lane;desc=cpu' h.txt &&
    ok "a 160x120 JPEG: the CPU workers, the cpu backend's bytes" || fail "small JPEG ($(grep -i server-timing h.txt))"
curl -s -D h.txt -o m.out --data-binary @m.png "$URL/v1/filter?kernel=gaussian:5"
cmp -s m.out m_ref.png && grep -qi '^Server-Timing:.*lane;desc=cpu' h.txt &&
    ok "a PNG: the CPU workers, the cpu backend's bytes" || fail "PNG ($(grep -i server-timing h.txt))"

python3 - >cases.json <<'EOF'
import json
print(json.dumps([{"query": "kernel=gaussian:5", "input": f"in/f{i}.jpg", "expect": f"ref/f{i}.jpg"}
                  for i in range(1, 9)]))
EOF
python3 "$LOAD" concurrent "$PORT" 64 20 cases.json && ok "64 clients x 20 HD JPEGs: every reply the GPU path's bytes" ||
    fail "64 clients x 20: wrong replies"

curl -s "$URL/v1/metrics" >metrics.txt
gpu=$(sed -n 's/^imgconv_lane_requests_total{lane="gpu"} //p' metrics.txt)
nb=$(sed -n 's/^imgconv_gpu_batch_size_count //p' metrics.txt)
ni=$(sed -n 's/^imgconv_gpu_batch_size_sum //p' metrics.txt)
[ "${gpu:-0}" -ge 1281 ] && ok "the GPU lane served $gpu requests" || fail "GPU lane requests: '$gpu'"
if [ "${nb:-0}" -gt 0 ] && [ "${ni:-0}" -gt "${nb:-0}" ]; then
    ok "batches of more than one under load: $ni images in $nb batches"
else
    fail "batch sizes: $ni images in $nb batches"
fi

# the lane's pipes take batches in turn: under this load each takes some
pipes=$(grep -c '^imgconv_gpu_pipe_batches_total{' metrics.txt)
idle=$(grep -c '^imgconv_gpu_pipe_batches_total{.*} 0$' metrics.txt)
if [ "$pipes" -ge 1 ] && [ "$idle" = 0 ]; then
    ok "every one of the lane's $pipes pipes decoded batches: $(grep '^imgconv_gpu_pipe_batches' metrics.txt | sed 's/.*pipe="\([0-9]*\)"} /\1:/' | tr '\n' ' ')"
else
    fail "pipes: $(grep '^imgconv_gpu_pipe' metrics.txt | tr '\n' ' ')"
fi

kill -TERM "$PID"
wait "$PID"
rc=$?
PID=""
[ "$rc" = 0 ] && ok "the server stops with 0" || fail "server exit $rc: $(cat srv.err)"
finish
