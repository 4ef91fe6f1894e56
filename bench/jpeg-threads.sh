#!/usr/bin/env bash
# jpeg-threads.sh [IMGCONV] - JPEG decode on 1..N threads of a noisy
# photograph with restart markers (bench/make_photos.py's photo 0 at W x H,
# default 6000x4000, written by imgconv on every core: one marker between
# strips), decoded in parts between its markers (src/io/jpeg_restart.c).
# Each decode figure is the median of RUNS (default 5) of imgconv's "load"
# stage (--time --repeat, identity kernel); the pixels of every thread count are
# checked against one thread's. Then the whole JPEG -> JPEG job with
# gaussian:9 on the CPU backend, least wall and CPU (user + sys) seconds of
# RUNS whole processes, at --threads 1 and N. Prints a markdown table.
# Env: W, H, RUNS, THREADS (default "1 2").
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN=${1:-$ROOT/build/imgconv}
W=${W:-6000} H=${H:-4000} RUNS=${RUNS:-5}
THREADS=${THREADS:-1 2}
[ -x "$BIN" ] || { echo "usage: $0 [PATH/TO/imgconv]" >&2; exit 2; }
py=python3
[ -x /usr/bin/python3 ] && py=/usr/bin/python3
T=$(mktemp -d "${TMPDIR:-/tmp}/jpeg-threads.XXXXXX")
trap 'rm -rf "$T"' EXIT
if ! "$py" "$ROOT/bench/make_photos.py" "$T" 1 "$W" "$H" 7 >/dev/null 2>&1; then
    "$BIN" --chart "${W}x${H}x3" --seed 7 "$T/photo000.ppm" >/dev/null
fi
MAXT=$(for t in $THREADS; do echo "$t"; done | sort -n | tail -1)
"$BIN" -k identity --threads "$MAXT" --overwrite --backend cpu "$T/photo000.ppm" "$T/in.jpg" >/dev/null
echo "JPEG decode, ${W}x${H} noisy photograph with restart markers ($(stat -c %s "$T/in.jpg") bytes), $(nproc) cores, $RUNS runs"
echo
echo "| threads | decode ms | speedup |"
echo "|---:|---:|---:|"
one=
for t in $THREADS; do
    "$BIN" --time --repeat "$RUNS" -k identity --threads "$t" --overwrite --backend cpu \
        "$T/in.jpg" "$T/dec-$t.ppm" >"$T/log" 2>&1
    best=$(awk '$1 == "load" { print $4 }' "$T/log")
    [ -n "$one" ] || one=$best
    cmp -s "$T/dec-$(echo "$THREADS" | awk '{ print $1 }').ppm" "$T/dec-$t.ppm" ||
        { echo "jpeg-threads: $t threads decode other pixels" >&2; exit 1; }
    echo "| $t | $best | $(awk -v a="$one" -v b="$best" 'BEGIN { printf "%.2fx", a / b }') |"
done
echo
echo "| whole job, gaussian:9, cpu | threads | wall s | cpu s |"
echo "|---|---:|---:|---:|"
for t in 1 "$MAXT"; do
    bw= bc=
    for _ in $(seq "$RUNS"); do
        /usr/bin/time -f "%e %U %S" -o "$T/time" "$BIN" -k gaussian:9 --threads "$t" --overwrite \
            --backend cpu "$T/in.jpg" "$T/out.jpg" >/dev/null 2>&1
        read -r e u s <"$T/time"
        c=$(awk -v u="$u" -v s="$s" 'BEGIN { printf "%.2f", u + s }')
        bw=$(awk -v a="$e" -v b="${bw:-}" 'BEGIN { print (b == "" || a < b) ? a : b }')
        bc=$(awk -v a="$c" -v b="${bc:-}" 'BEGIN { print (b == "" || a < b) ? a : b }')
    done
    echo "| JPEG -> JPEG | $t | $bw | $bc |"
done
