# serve_common.bash - what the imgconv serve tests share, sourced after
# common.bash and a `cd "$TMP"`: the servers they start are killed at exit
# (PIDS, with the temporary folder removed as common.bash does), and
#   start NAME ARGS...  runs `imgconv serve --backend cpu` on a free
#                       127.0.0.1 port with ARGS; sets PID_NAME and PORT_NAME
#                       from its "serving on" line (logs NAME.log, NAME.err).
# Servers and references run on the cpu backend: replies are compared byte
# for byte, and the default --max-work bound holds on CPU backends only.
PIDS=()
serve_cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    rm -rf "$TMP"
}
trap serve_cleanup EXIT

start() {
    local name=$1
    shift
    "$IMGCONV" serve --backend cpu --listen 127.0.0.1:0 "$@" >"$name.log" 2>"$name.err" &
    local pid=$!
    PIDS+=("$pid")
    for _ in $(seq 100); do
        grep -q 'serving on' "$name.log" 2>/dev/null && break
        sleep 0.1
    done
    local port
    port=$(sed -n 's/.*127\.0\.0\.1:\([0-9]*\).*/\1/p' "$name.log")
    [ -n "$port" ] || { echo "FAIL server $name did not start"; cat "$name.err"; exit 1; }
    printf -v "PID_$name" '%s' "$pid"
    printf -v "PORT_$name" '%s' "$port"
}
