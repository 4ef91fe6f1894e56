#!/usr/bin/env bash
# serve_load_c.sh - bench/probe/serve_load.c, the C load client of
# bench/suites/serve.sh: against a real imgconv serve on 127.0.0.1 (every
# reply checked against the CLI's bytes; a wrong --expect fails every
# request), a URL that is not loopback refused, and against serve_fake.py
# (chunked, Connection: close and to-end-of-stream replies read; malformed
# ones failed as errors, never a crash). Skips without the server, a C
# compiler or python3.
source "$(dirname "$0")/common.bash"
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
"$IMGCONV" --version | grep -q '^serve: built in' ||
    { echo "SKIPPED: this imgconv was built without the server (libevent)"; exit 77; }
CC=${CC:-cc}
command -v "$CC" >/dev/null || { echo "SKIPPED: no C compiler ($CC)"; exit 77; }
command -v python3 >/dev/null || { echo "SKIPPED: no python3"; exit 77; }
cd "$TMP" || exit 1

source "$HERE/serve_common.bash" # PIDS, start NAME ARGS...

"$CC" -O2 -pthread -Wall -Wextra -Werror "$ROOT/bench/probe/serve_load.c" -o serve_load 2>cc.err &&
    ok "serve_load.c compiles warning-free" || { fail "serve_load.c: $(head -5 cc.err)"; finish; }

field() { sed -n "s/.*$1=\([^ ]*\).*/\1/p" "$2"; }

# load DESC WANT_RC WANT_REQUESTS WANT_ERRORS WANT_LANES ARGS...: one run's exit
# status and fields.
load() {
    local desc=$1 rc_want=$2 req=$3 err=$4 lanes=$5
    shift 5
    ./serve_load "$@" >load.out 2>load.err
    local rc=$?
    if [ "$rc" = "$rc_want" ] && [ "$(field requests load.out)" = "$req" ] &&
        [ "$(field errors load.out)" = "$err" ] && [ "$(field lanes load.out)" = "$lanes" ]; then
        ok "$desc: exit $rc, $(cat load.out)"
    else
        fail "$desc: exit $rc (wanted $rc_want, $req requests, $err errors, lanes $lanes): $(cat load.out load.err)"
    fi
}

"$IMGCONV" --chart 64x64 small.png >/dev/null &&
    "$IMGCONV" -k gaussian:5 --backend cpu small.png ref.png >/dev/null || { echo "FAIL charts"; exit 1; }

start S
PID=$PID_S PORT=$PORT_S
URL=http://127.0.0.1:$PORT
Q="kernel=gaussian:5&format=png"

load "4 clients x 40 requests, checked" 0 40 0 cpu "$URL" small.png "$Q" --clients 4 --count 40 --expect ref.png
grep -q '^clients=4 requests=40 errors=0 seconds=[0-9.]* rps=[0-9.]* p50_ms=[0-9.]* p99_ms=[0-9.]* queue_ms=[0-9.]* decode_ms=[0-9.]* filter_ms=[0-9.]* encode_ms=[0-9.]* lanes=cpu$' load.out &&
    ok "serve-load.py's line format" || fail "line format: $(cat load.out)"
load "wrong --expect: every request an error" 1 0 40 - "$URL" small.png "$Q" --clients 4 --count 40 --expect small.png
load "bad requests (400) are errors" 1 0 10 - "$URL" small.png "kernel=bogus" --clients 2 --count 10 --warmup 0
load "--procs accepted, localhost" 0 20 0 cpu "http://localhost:$PORT/" small.png "$Q" --clients=3 --count 20 --procs 3 --expect ref.png
./serve_load "$URL" small.png "$Q" --clients 2 --count 1000000 --seconds 0.5 --expect ref.png >load.out 2>&1
rc=$? req=$(field requests load.out) secs=$(field seconds load.out)
if [ "$rc" = 0 ] && [ "$req" -gt 0 ] && [ "$req" -lt 1000000 ] && awk -v s="$secs" 'BEGIN { exit !(s >= 0.5 && s < 5) }'; then
    ok "--seconds 0.5 ends the run: $(cat load.out)"
else
    fail "--seconds 0.5: exit $rc, $(cat load.out)"
fi

for url in http://10.0.0.1:80 http://example.com:80 https://127.0.0.1:1 "http://[::2]:80" ftp://127.0.0.1:1; do
    ./serve_load "$url" small.png "$Q" >refused.out 2>refused.err
    rc=$?
    if [ "$rc" = 2 ] && [ ! -s refused.out ] && [ "$(wc -l <refused.err)" = 1 ]; then
        ok "$url refused: $(cat refused.err)"
    else
        fail "$url: exit $rc, $(cat refused.out refused.err)"
    fi
done
./serve_load "$URL" small.png "$Q" --clients 0 >/dev/null 2>&1
[ $? = 2 ] && ok "--clients 0 refused with 2" || fail "--clients 0 accepted"
./serve_load "$URL" missing.png "$Q" >/dev/null 2>&1
[ $? = 2 ] && ok "a missing body file refused with 2" || fail "missing body file accepted"
kill -TERM "$PID"
wait "$PID" && ok "server stops with 0" || fail "server exit $?"

# The same over a unix socket and, where the machine has it, IPv6 loopback.
"$IMGCONV" serve --backend cpu --socket "$TMP/s.sock" >unix.log 2>&1 &
PIDS+=($!)
"$IMGCONV" serve --backend cpu --listen '[::1]:0' >v6.log 2>&1 &
PIDS+=($!)
for _ in $(seq 100); do grep -q 'serving on' unix.log && [ -s v6.log ] && break; sleep 0.1; done
load "unix:PATH" 0 10 0 cpu "unix:$TMP/s.sock" small.png "$Q" --clients 2 --count 10 --expect ref.png
P6=$(sed -n 's/.*\[::1\]:\([0-9]*\).*/\1/p' v6.log)
if [ -n "$P6" ]; then
    load "http://[::1]:PORT" 0 10 0 cpu "http://[::1]:$P6" small.png "$Q" --clients 2 --count 10 --expect ref.png
else
    echo "skip IPv6 loopback: $(head -1 v6.log)"
fi

# A fake server's well-formed and malformed replies (serve_fake.py REPLIES).
python3 "$HERE/serve_fake.py" port.txt ref.png 2>fake.err &
PIDS+=($!)
for _ in $(seq 100); do [ -s port.txt ] && break; sleep 0.1; done
[ -s port.txt ] || { echo "FAIL fake server did not start: $(cat fake.err)"; exit 1; }
FAKE=http://127.0.0.1:$(cat port.txt)
for mode in ok chunked close eof; do
    load "fake: $mode reply read" 0 12 0 fake "$FAKE" small.png "$mode" --clients 3 --count 12 --expect ref.png
done
grep -q 'queue_ms=1.00 decode_ms=2.00 filter_ms=3.00 encode_ms=4.00' load.out &&
    ok "Server-Timing means" || fail "Server-Timing means: $(cat load.out)"
load "fake: malformed Server-Timing entries skipped" 0 4 0 - "$FAKE" small.png badtiming --count 4 --expect ref.png
grep -q 'queue_ms=0.00 decode_ms=2.50 filter_ms=0.00' load.out &&
    ok "two Server-Timing headers read" || fail "two Server-Timing headers: $(cat load.out)"
for mode in status500 garbage silent truncated badchunk shortchunk gzip hugelen twolens longhead; do
    load "fake: $mode is an error" 1 0 6 - "$FAKE" small.png "$mode" --clients 2 --count 6 --warmup 1 --expect ref.png
done
finish
