#!/usr/bin/env bash
# serve.sh - imgconv serve end to end (docs/serve.md): a real server on
# 127.0.0.1 on a free port, real clients (curl, imgconv --server, the Python
# Client): every status, byte-identical replies under 64 concurrent clients,
# the limits, a slow client, clients that leave mid-body, and SIGTERM with
# requests in flight. Skips when the server is not built in or curl or
# python3 is missing.
source "$(dirname "$0")/common.bash"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
"$IMGCONV" --version | grep -q '^serve: built in' ||
    { echo "SKIPPED: this imgconv was built without the server (libevent)"; exit 77; }
command -v curl >/dev/null || { echo "SKIPPED: no curl"; exit 77; }
PY=""
for cand in python3 /usr/bin/python3; do # one with numpy, for the array checks
    command -v "$cand" >/dev/null || continue
    [ -z "$PY" ] && PY=$(command -v "$cand")
    "$cand" -c 'import numpy' 2>/dev/null && { PY=$(command -v "$cand"); break; }
done
[ -n "$PY" ] || { echo "SKIPPED: no python3"; exit 77; }
LOAD="$HERE/serve_load.py"
cd "$TMP" || exit 1

source "$HERE/serve_common.bash" # PIDS, start NAME ARGS...

# status DESC WANT CURL-ARGS...: the HTTP status of one request, and for
# errors a JSON body with "error" and "message".
status() {
    local desc=$1 want=$2
    shift 2
    local got
    got=$(curl -s -o body.out -w '%{http_code}' "$@")
    if [ "$got" != "$want" ]; then
        fail "$desc: status $got, expected $want ($(head -c 200 body.out))"
    elif [ "$want" != 200 ] && ! grep -q '"error": ".*", "message": ' body.out; then
        fail "$desc: $want without a JSON error body: $(head -c 200 body.out)"
    else
        ok "$desc: $want"
    fi
}

same() { # DESC A B
    if cmp -s "$2" "$3"; then ok "$1"; else fail "$1: $2 and $3 differ"; fi
}

"$IMGCONV" --chart 160x120 s.png && "$IMGCONV" --chart 160x120 s.jpg &&
    "$IMGCONV" --chart 640x480 m.png && "$IMGCONV" --chart 1500x1500 big.png &&
    "$IMGCONV" --chart 64x64x4 rgba.png || { echo "FAIL charts"; exit 1; }
head -c 3000 m.png >trunc.png
cp s.jpg damaged.jpg && printf garbagegarbage | dd of=damaged.jpg bs=1 seek=2000 conv=notrunc 2>/dev/null
head -c 9000000 /dev/urandom >huge.bin
printf 'not an image at all' >text.bin

start A --workers 2 --queue 256 --max-body 8M --max-pixels 2000000 --max-work 1e8 --timeout 5
URL=http://127.0.0.1:$PORT_A

# --- every status ---------------------------------------------------------
status "health" 200 "$URL/v1/health"
grep -q '"status": "ready"' body.out && ok "health says ready" || fail "health: $(cat body.out)"
status "kernels" 200 "$URL/v1/kernels"
grep -q '"name": "gaussian"' body.out && ok "kernels lists gaussian" || fail "kernels: $(head -c 200 body.out)"
status "filter PNG" 200 --data-binary @m.png -o out.png "$URL/v1/filter?kernel=gaussian:9&border=mirror"
"$IMGCONV" --backend cpu -k gaussian:9 --border mirror m.png ref.png
same "PNG reply is the CLI's output" body.out ref.png
curl -s -D headers.txt -o /dev/null --data-binary @m.png "$URL/v1/filter?kernel=gaussian:9"
grep -qi '^Server-Timing: queue;dur=[0-9.]*, decode;dur=[0-9.]*, filter;dur=[0-9.]*, encode;dur=[0-9.]*, lane;desc=cpu' headers.txt &&
    grep -qi '^Content-Type: image/png' headers.txt && ok "Content-Type and Server-Timing headers" ||
    fail "headers: $(cat headers.txt)"
status "JPEG to JPEG q90" 200 --data-binary @s.jpg "$URL/v1/filter?kernel=box:3&format=jpeg&quality=90"
"$IMGCONV" --backend cpu -k box:3 --quality 90 s.jpg ref.jpg
same "JPEG reply is the CLI's output" body.out ref.jpg
status "RGBA to JPEG on white" 200 --data-binary @rgba.png "$URL/v1/filter?kernel=sharpen&format=jpg&background=white"
"$IMGCONV" --backend cpu -k sharpen --background white rgba.png ref_rgba.jpg
same "flattened reply is the CLI's output" body.out ref_rgba.jpg
status "bad kernel" 400 --data-binary @s.png "$URL/v1/filter?kernel=bogus:3"
grep -q "unknown kernel 'bogus'" body.out && ok "bad kernel: the CLI's message" || fail "bad kernel: $(cat body.out)"
status "no kernel" 400 --data-binary @s.png "$URL/v1/filter?border=wrap"
status "unknown option" 400 --data-binary @s.png "$URL/v1/filter?kernel=box:3&frobnicate=1"
status "bad border" 400 --data-binary @s.png "$URL/v1/filter?kernel=box:3&border=sideways"
grep -q -- "--border 'sideways': unknown mode" body.out && ok "bad border: the CLI's message" || fail "bad border: $(cat body.out)"
status "kernel file refused" 400 --data-binary @s.png "$URL/v1/filter?kernel=@/etc/passwd"
status "kernel-file refused" 400 --data-binary @s.png "$URL/v1/filter?kernel-file=/etc/passwd"
status "limits not settable" 400 --data-binary @s.png "$URL/v1/filter?kernel=box:3&max-pixels=999999999"
status "other backend" 400 --data-binary @s.png "$URL/v1/filter?kernel=box:3&backend=seq"
status "bad format" 400 --data-binary @s.png "$URL/v1/filter?kernel=box:3&format=gif"
status "empty body" 400 -X POST "$URL/v1/filter?kernel=box:3"
status "unknown path" 404 "$URL/v2/nothing"
status "GET on filter" 405 "$URL/v1/filter?kernel=box:3"
status "body over --max-body" 413 --data-binary @huge.bin "$URL/v1/filter?kernel=box:3"
# refused from the Content-Length, before the body: curl waits for a 100
# Continue that never comes and sends none of it
up=$(curl -s -o body.out -w '%{size_upload}' --data-binary @huge.bin "$URL/v1/filter?kernel=box:3")
[ "$up" = 0 ] && ok "over --max-body: refused before the body is sent" ||
    fail "over --max-body: $up bytes sent before the 413"
status "chunked body growing over --max-body" 413 -H 'Transfer-Encoding: chunked' \
    --data-binary @huge.bin "$URL/v1/filter?kernel=box:3"
grep -q 'over --max-body' body.out && ok "chunked 413 names --max-body" || fail "chunked 413: $(head -c 200 body.out)"
status "chunked body within --max-body" 200 -H 'Transfer-Encoding: chunked' \
    --data-binary @s.png "$URL/v1/filter?kernel=gaussian:5"
"$IMGCONV" --backend cpu -k gaussian:5 s.png c1.png && same "chunked body reply" body.out c1.png
# replies pass the body-size guard and the connection takes the next request
"$PY" - "$PORT_A" <<'PYEOF' && ok "keep-alive: three requests on one connection" || fail "keep-alive"
import http.client, sys
c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=20)
body = open("m.png", "rb").read()
for i in range(3):
    c.request("POST", "/v1/filter?kernel=box:3", body=body)
    r = c.getresponse()
    r.read()
    assert r.status == 200, r.status
PYEOF
# A 3.6 MB body, a small request and a head over --max-body in one write:
# the guard reads no body past its own end (else it would lose the framing,
# and the third request its JSON 413). Then a 3.6 MB body in pieces (over
# the 1 MiB the guard reads at once). Replies in order, each the CLI's.
"$IMGCONV" --chart 1200x1000 l.ppm && "$IMGCONV" --backend cpu -k box:3 l.ppm pL.ppm &&
    "$IMGCONV" --chart 32x32 tiny.png && "$IMGCONV" --backend cpu -k box:3 tiny.png pT.png ||
    fail "pipelined: references"
if "$PY" - "$PORT_A" <<'PYEOF'; then
import socket, sys, time
def req(query, body, length=None):
    n = len(body) if length is None else length
    head = f"POST /v1/filter?{query} HTTP/1.1\r\nHost: t\r\nContent-Length: {n}\r\n\r\n"
    return head.encode() + body
def reply(f, want=b"200"):
    line = f.readline()
    assert line.split(b" ")[1] == want, line
    n = 0
    while True:
        h = f.readline()
        if h in (b"\r\n", b""):
            break
        k, _, v = h.partition(b":")
        if k.strip().lower() == b"content-length":
            n = int(v)
    return f.read(n)
big = open("l.ppm", "rb").read()
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
first = req("kernel=box:3", big)
s.sendall(first + req("kernel=box:3", open("tiny.png", "rb").read()) +
          req("kernel=box:3", b"", 9000000))
f = s.makefile("rb")
assert reply(f) == open("pL.ppm", "rb").read(), "first reply"
assert reply(f) == open("pT.png", "rb").read(), "second reply"
assert b"bytes)" in reply(f, b"413"), "third reply: the guard's own 413, after the others"
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=20)
third = req("kernel=box:3", big)
for i in range(0, len(third), 700000):
    s.sendall(third[i:i + 700000])
    time.sleep(0.05)
assert reply(s.makefile("rb")) == open("pL.ppm", "rb").read(), "body in pieces"
PYEOF
    ok "pipelined requests, then a body in pieces: replies in order, the CLI's"
else
    fail "pipelined requests"
fi
status "over --max-pixels" 413 --data-binary @big.png "$URL/v1/filter?kernel=box:3"
status "over --max-work" 413 --data-binary @m.png "$URL/v1/filter?kernel=motion:length=101,angle=45"
grep -q "max-work" body.out && ok "work limit names --max-work" || fail "work: $(cat body.out)"
status "not an image" 415 --data-binary @text.bin "$URL/v1/filter?kernel=box:3"
status "truncated PNG" 422 --data-binary @trunc.png "$URL/v1/filter?kernel=box:3"
status "damaged JPEG" 422 --data-binary @damaged.jpg "$URL/v1/filter?kernel=box:3"
status "damaged JPEG accepted on request" 200 --data-binary @damaged.jpg "$URL/v1/filter?kernel=box:3&accept-damaged"
status "still healthy" 200 "$URL/v1/health"

# --- the clients: imgconv --server and Python ------------------------------
run --server "$URL" -k gaussian:9 --border mirror m.png via.png
[ "$RC" = 0 ] && same "--server writes the CLI's output" via.png ref.png || { fail "--server"; show_last; }
run --server "$URL" -k gaussian:9 m.png via.png
[ "$RC" = 4 ] && grep -q "already exists" "$ERR" && ok "--server keeps an existing image" || { fail "--server overwrite"; show_last; }
run --server "$URL" -k bogus:1 m.png v2.png
[ "$RC" = 2 ] && grep -q "unknown kernel" "$ERR" && [ ! -e v2.png ] && ok "--server: a 400 is exit 2" || { fail "--server 400"; show_last; }
run --server "$URL" -k box:3 trunc.png v3.png
[ "$RC" = 3 ] && [ ! -e v3.png ] && ok "--server: a 422 is exit 3" || { fail "--server 422"; show_last; }
run --server "$URL" -k box:3 --time m.png v4.png
[ "$RC" = 2 ] && ok "--server refuses local-only options" || { fail "--server --time"; show_last; }
if PYTHONPATH= "$PY" - "$URL" "$ROOT/python/imgconv/client.py" <<'PYEOF'
import importlib.util, sys
spec = importlib.util.spec_from_file_location("client", sys.argv[2])
client = importlib.util.module_from_spec(spec); spec.loader.exec_module(client)
c = client.Client(sys.argv[1])
assert c.health()["status"] == "ready"
out = c.filter(open("m.png", "rb").read(), "gaussian:9", border="mirror")
assert out == open("ref.png", "rb").read(), "bytes differ"
try:
    c.filter(b"junk", "box:3")
    raise SystemExit("no error for junk")
except client.ServerError as e:
    assert e.status == 415 and e.error == "unsupported_format", e
try:
    import numpy as np
except ImportError:
    print("python client: bytes ok (no numpy)"); raise SystemExit(0)
a = (np.arange(40 * 30 * 3) % 251).astype(np.uint8).reshape(30, 40, 3)
b = c.filter(a, "box:3", border="replicate")
assert b.shape == a.shape and b.dtype == a.dtype
open("a.ppm", "wb").write(client._to_pnm(a))
print("python client: bytes and arrays ok")
np.save("b.npy", b)
PYEOF
then ok "python Client: bytes, errors, arrays"; else fail "python Client"; fi
if [ -f b.npy ]; then
    "$IMGCONV" --backend cpu -k box:3 --border replicate a.ppm ref_a.ppm
    "$PY" -c "
import numpy as np, sys
b = np.load('b.npy'); d = open('ref_a.ppm','rb').read()
ref = np.frombuffer(d[-b.size:], np.uint8).reshape(b.shape)
sys.exit(0 if (ref == b).all() else 1)" && ok "python Client array equals the CLI's" || fail "python array"
fi

# --- 64 concurrent clients x 20 requests, byte-identical -------------------
"$IMGCONV" --backend cpu -k gaussian:5 s.png c1.png
"$IMGCONV" --backend cpu -k box:3 --quality 90 s.jpg c2.jpg
"$IMGCONV" --backend cpu -k sobel-x --border replicate s.png c3.jpg
"$IMGCONV" --backend cpu -k sharpen --correlate s.jpg c4.png
cat >cases.json <<JSON
[{"query": "kernel=gaussian:5", "input": "s.png", "expect": "c1.png"},
 {"query": "kernel=box:3&quality=90&format=jpeg", "input": "s.jpg", "expect": "c2.jpg"},
 {"query": "kernel=sobel-x&border=replicate&format=jpg", "input": "s.png", "expect": "c3.jpg"},
 {"query": "kernel=sharpen&correlate&format=png", "input": "s.jpg", "expect": "c4.png"}]
JSON
"$PY" "$LOAD" concurrent "$PORT_A" 64 20 cases.json && ok "64 clients x 20 requests byte-identical" ||
    fail "concurrent replies"

# --- slow and vanishing clients --------------------------------------------
"$PY" "$LOAD" slow "$PORT_A" && ok "a slow client holds nobody up" || fail "slow client"
"$PY" "$LOAD" cutoff "$PORT_A" && ok "clients gone mid-body leave the server answering" || fail "cutoff"
curl -s "$URL/v1/metrics" >metrics.txt
grep -q '^imgconv_requests_total{code="200"} [1-9]' metrics.txt &&
    grep -q '^imgconv_request_duration_seconds_bucket{le="+Inf"}' metrics.txt &&
    grep -q '^imgconv_queue_depth 0' metrics.txt && grep -q '^imgconv_images_in_flight 0' metrics.txt &&
    grep -q '^imgconv_backend_busy_seconds_total{backend="cpu"}' metrics.txt &&
    grep -q '^imgconv_errors_total{code="422"} [1-9]' metrics.txt && ok "metrics" ||
    fail "metrics: $(head -20 metrics.txt)"
# a cpu server has no GPU lane: every request the CPU workers', no batch
grep -q '^imgconv_lane_requests_total{lane="cpu"} [1-9]' metrics.txt &&
    grep -q '^imgconv_lane_requests_total{lane="gpu"} 0$' metrics.txt &&
    grep -q '^imgconv_gpu_batch_size_count 0$' metrics.txt && ok "metrics per lane" ||
    fail "lane metrics: $(grep -E 'lane|batch' metrics.txt)"
run serve --backend cpu --batch-delay-us 100001
[ "$RC" = 2 ] && grep -q 'batch-delay-us' "$ERR" && ok "--batch-delay-us out of range: exit 2" ||
    { fail "--batch-delay-us 100001"; show_last; }

# --- token, queue full, address, unix socket --------------------------------
printf 'sixteen-bytes-or-more-secret\n' >token
start T --token-file token --workers 1
status "no token" 401 --data-binary @s.png "http://127.0.0.1:$PORT_T/v1/filter?kernel=box:3"
status "wrong token" 401 -H 'Authorization: Bearer sixteen-bytes-or-more-secreT' "http://127.0.0.1:$PORT_T/v1/metrics"
status "right token" 200 -H 'Authorization: Bearer sixteen-bytes-or-more-secret' --data-binary @s.png "http://127.0.0.1:$PORT_T/v1/filter?kernel=gaussian:5"
same "token server reply" body.out c1.png
run --server "http://127.0.0.1:$PORT_T" --token-file token -k gaussian:5 s.png tok.png
[ "$RC" = 0 ] && same "--server --token-file" tok.png c1.png || { fail "--server token"; show_last; }

start Q --workers 1 --queue 1 --max-work 0
CURLS=()
for i in $(seq 12); do
    curl -s -o /dev/null -D "q$i.h" --data-binary @big.png "http://127.0.0.1:$PORT_Q/v1/filter?kernel=gaussian:31&format=png" &
    CURLS+=($!)
done
wait "${CURLS[@]}"
if grep -l '^HTTP/1.1 429' q*.h >/dev/null && grep -qi '^Retry-After: 1' $(grep -l '^HTTP/1.1 429' q*.h | head -1); then
    ok "a full queue answers 429 with Retry-After ($(grep -l '^HTTP/1.1 429' q*.h | wc -l) of 12)"
else
    fail "queue full: $(head -1 q*.h | tr '\n' ' ')"
fi

# --max-connections: four idle connections fill it; the fifth is answered
# the JSON 503 before its request is read (a body behind Expect: 100-continue
# is never sent), and once they close requests are served again
start M --workers 1 --max-connections 4
if "$PY" - "$PORT_M" <<'PYEOF'
import socket, subprocess, sys, time
port = int(sys.argv[1])
url = "http://127.0.0.1:%d/v1/filter?kernel=box:3" % port
idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]
def curl(*args):
    return subprocess.run(["curl", "-s", "-D", "busy.h", "-o", "busy.out", "-w",
                           "%{http_code} %{size_upload}", *args, url],
                          capture_output=True, text=True).stdout.split()
code, up = curl("--data-binary", "@huge.bin")
head, body = open("busy.h").read(), open("busy.out").read()
assert code == "503" and up == "0", (code, up)
assert '"error": "busy"' in body and "max-connections" in body, body
assert "Retry-After: 1" in head, head
# one that keeps sending after its 503 is closed a second later, not at --timeout
busy = socket.create_connection(("127.0.0.1", port))
busy.settimeout(5)
assert busy.recv(400).startswith(b"HTTP/1.1 503 "), "no 503 before any request"
t0 = time.time()
try:
    while time.time() - t0 < 5:
        busy.send(b"x" * 4096)
        time.sleep(0.05)
    raise SystemExit("a refused connection still open after 5 s")
except OSError:
    pass
for s in idle:
    s.close()
for _ in range(50):
    code, _ = curl("--data-binary", "@s.png")
    if code == "200":
        break
    time.sleep(0.1)
assert code == "200", code
PYEOF
then ok "--max-connections: 503 busy over it, before the body, closed within a second; served once they close"
else fail "--max-connections"; fi
curl -s "http://127.0.0.1:$PORT_M/v1/metrics" >metrics_m.txt
grep -q '^imgconv_connections_refused_total 2$' metrics_m.txt &&
    grep -q '^imgconv_errors_total{code="503"} 2$' metrics_m.txt &&
    grep -q '^imgconv_connections [1-5]$' metrics_m.txt && ok "metrics count the refused connections" ||
    fail "connection metrics: $(grep -E 'connections|503' metrics_m.txt)"

run serve --listen 0.0.0.0:0
[ "$RC" = 2 ] && grep -q -- "--allow-remote" "$ERR" && ok "a remote address needs --allow-remote" || { fail "allow-remote"; show_last; }
run serve -k box:3
[ "$RC" = 2 ] && ok "serve refuses filter options" || { fail "serve -k"; show_last; }
run --listen 127.0.0.1:1 -k box:3 s.png x.png
[ "$RC" = 2 ] && ok "--listen needs serve" || { fail "--listen alone"; show_last; }

"$IMGCONV" serve --backend cpu --socket "$TMP/s.sock" >U.log 2>U.err &
PID_U=$!
PIDS+=("$PID_U")
for _ in $(seq 100); do [ -S "$TMP/s.sock" ] && break; sleep 0.1; done
status "unix socket" 200 --unix-socket "$TMP/s.sock" --data-binary @s.png "http://x/v1/filter?kernel=gaussian:5"
same "unix socket reply" body.out c1.png
run --server "unix:$TMP/s.sock" -k gaussian:5 s.png unix.png
[ "$RC" = 0 ] && same "--server unix:PATH" unix.png c1.png || { fail "--server unix"; show_last; }
kill -TERM "$PID_U"; wait "$PID_U"; rc=$?
[ "$rc" = 0 ] && [ ! -e "$TMP/s.sock" ] && ok "unix server stops with 0 and removes its socket" || fail "unix stop: $rc"

# --- SIGTERM with 32 requests in flight -------------------------------------
# a blocker job (~1 s) on the one worker first, so that all 32 behind it
# are seen in flight at once however loaded the machine is
"$IMGCONV" --chart 1000x800 t.png
"$IMGCONV" --backend cpu -k gaussian:15 t.png c5.png
"$IMGCONV" --chart 2000x1600 tb.png && "$IMGCONV" --backend cpu -k gaussian:61 tb.png c6.png
echo '[{"query": "kernel=gaussian:61", "input": "tb.png", "expect": "c6.png"},
      {"query": "kernel=gaussian:15", "input": "t.png", "expect": "c5.png"}]' >term.json
start S --workers 1 --queue 64 --timeout 120
"$PY" "$LOAD" sigterm "$PORT_S" "$PID_S" 32 term.json && ok "SIGTERM: all 32 in flight answered" || fail "SIGTERM in flight"
wait "$PID_S"; rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: exit 0" || fail "SIGTERM: exit $rc ($(cat S.err))"
grep -q 'at the stop deadline' S.err && fail "SIGTERM: $(cat S.err)"
# past the stop deadline (--timeout 1): the rest are answered 503, not dropped
# (a full-rank 73x73 kernel summed directly: about 3.6e10 multiply-adds a
# request, over the deadline on any machine by the last of 12)
start D --workers 1 --timeout 1 --tune method=direct
CURLS=()
for i in $(seq 12); do
    curl -s -o /dev/null -w '%{http_code}\n' --data-binary @big.png \
        "http://127.0.0.1:$PORT_D/v1/filter?kernel=motion:length=101,angle=45" >"d$i.code" &
    CURLS+=($!)
done
# the stop comes once all 12 are accepted (one filtered, 11 queued): a
# loaded machine may take longer than any fixed pause to send the bodies,
# and a body still arriving at the stop is not an accepted request
for _ in $(seq 200); do
    curl -s "http://127.0.0.1:$PORT_D/v1/metrics" | grep -q '^imgconv_queue_depth 11' && break
    sleep 0.05
done
kill -TERM "$PID_D"
wait "${CURLS[@]}"
wait "$PID_D"; rc=$?
codes=$(cat d*.code | sort | uniq -c | tr -s ' \n' ' ')
if [ "$rc" = 0 ] && ! grep -qv '^\(200\|503\)$' d*.code && grep -q '^503$' d*.code; then
    ok "stop deadline: every request answered, the late ones 503 ($codes)"
else
    fail "stop deadline: exit $rc, codes $codes"
fi

kill -TERM "$PID_A" "$PID_T" "$PID_Q" "$PID_M"
wait "$PID_A"; rc=$?
[ "$rc" = 0 ] && ok "server A stops with 0" || fail "server A exit $rc"
finish
