#!/usr/bin/env bash
# interrupt.sh - nothing left behind, whatever the signal (issue 13): 100
# single-file, batch and stream runs are killed with SIGINT, SIGTERM, SIGHUP or
# SIGKILL at random moments (seeded: IC_TEST_SEED), and after each the output
# directory must hold only complete files: every image there decodes, no
# hidden temporary exists, a stream output is whole frames (after SIGKILL the
# last frame may be cut: the stream writes to the caller's file). Single-file runs
# also go through the fallback without O_TMPFILE (IC_NO_TMPFILE=1: a hidden
# temporary that the signal handlers remove), with the catchable signals only
# (SIGKILL there can leave the temporary: docs/cli.md#output-files).
. "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1
set -m # background jobs get SIGINT too (without job control bash ignores it there)

RANDOM=${IC_TEST_SEED:-1913}
echo "seed ${IC_TEST_SEED:-1913}"
ext=ppm
has_format png && ext=png
"$IMGCONV" --chart 640x480x3 in.$ext || { fail "cannot make the input"; finish; }
mkdir -p in
for i in 1 2 3 4; do "$IMGCONV" --chart 320x240x3 --seed $i in/p$i.$ext; done
W=320 H=240 C=3
FRAME=$((W * H * C))
head -c $((FRAME * 12)) /dev/urandom >frames.raw

# How long an uninterrupted run of each kind takes (ms), to aim the kills.
ms_of() {
    local t0 t1
    t0=$(date +%s%N)
    "$@" >/dev/null 2>&1
    t1=$(date +%s%N)
    echo $(((t1 - t0) / 1000000 + 1))
}
T_SINGLE=$(ms_of "$IMGCONV" -k gaussian:9 in.$ext single-probe.$ext)
T_BATCH=$(ms_of "$IMGCONV" -k gaussian:9 -q -o probe-out in)
T_STREAM=$(ms_of sh -c "'$IMGCONV' --stream ${W}x${H}x${C} -k gaussian:9 <frames.raw >probe.raw")
rm -rf single-probe.$ext probe-out probe.raw
echo "uninterrupted: single ${T_SINGLE} ms, batch ${T_BATCH} ms, stream ${T_STREAM} ms"

SIGS=(INT TERM HUP KILL)
# decodes FILE: exit 0 when imgconv reads all of it
decodes() { "$IMGCONV" -k identity --overwrite "$1" check.ppm >/dev/null 2>&1; }

# Starts "$@" in the background, sends SIG after a random delay within ~1.2x
# the run's usual duration (ms), and waits for it.
kill_at_random() {
    local sig=$1 span=$2
    shift 2
    "$@" >/dev/null 2>&1 &
    local pid=$!
    local delay=$((RANDOM % (span * 12 / 10 + 1)))
    sleep "$(printf '%d.%03d' $((delay / 1000)) $((delay % 1000)))"
    kill -s "$sig" "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    LAST_DELAY=$delay
}

# only_complete DIR WHAT: every file in DIR decodes and none is hidden.
only_complete() {
    local dir=$1 what=$2 bad=""
    local hidden
    hidden=$(ls -A "$dir" | grep '^\.' || true)
    [ -n "$hidden" ] && bad="hidden files: $hidden"
    for f in "$dir"/*; do
        [ -e "$f" ] || continue
        decodes "$f" || bad="$bad; $(basename "$f") does not decode"
    done
    if [ -n "$bad" ]; then
        fail "$what: $bad"
        return 1
    fi
    return 0
}

KILLS=0 SINGLE_OK=0 BATCH_OK=0 STREAM_OK=0 COMPLETED=0
T0=$(date +%s)
mkdir -p single batch
for n in $(seq 1 40); do
    sig=${SIGS[$((n % 4))]}
    env=()
    # Every other catchable-signal run takes the fallback path.
    if [ "$sig" != KILL ] && [ $((n % 2)) -eq 0 ]; then env=(env IC_NO_TMPFILE=1); fi
    # An existing output is replaced: the old file must stay whole until then.
    out=single/out$((n % 5)).$ext
    # SIGKILL: a new output (an existing one is replaced by link + rename, and
    # SIGKILL between the two, microseconds, may leave the temporary name).
    [ "$sig" = KILL ] && out=single/new$n.$ext
    kill_at_random "$sig" "$T_SINGLE" "${env[@]}" "$IMGCONV" -k gaussian:9 in.$ext "$out"
    KILLS=$((KILLS + 1))
    only_complete single "single-file run $n (SIG$sig after ${LAST_DELAY} ms${env:+, no O_TMPFILE})" &&
        SINGLE_OK=$((SINGLE_OK + 1))
done
for n in $(seq 1 35); do
    sig=${SIGS[$((n % 4))]}
    dir=batch
    [ "$sig" = KILL ] && dir=batch-new$n && mkdir -p "$dir" # as above
    kill_at_random "$sig" "$T_BATCH" "$IMGCONV" -k gaussian:9 -q --overwrite -o "$dir" in
    KILLS=$((KILLS + 1))
    only_complete "$dir" "batch run $n (SIG$sig after ${LAST_DELAY} ms)" && BATCH_OK=$((BATCH_OK + 1))
done
for n in $(seq 1 25); do
    sig=${SIGS[$((n % 4))]}
    rm -f stream.raw
    kill_at_random "$sig" "$T_STREAM" sh -c "exec '$IMGCONV' --stream ${W}x${H}x${C} -k gaussian:9 <frames.raw >stream.raw"
    KILLS=$((KILLS + 1))
    size=$(stat -c %s stream.raw 2>/dev/null || echo 0)
    # The stream writes to the caller's file: imgconv creates nothing, and a
    # catchable signal lets the frame being written finish. SIGKILL can cut
    # that frame (the kernel stops the write), which is only reported.
    if [ -n "$(ls -A | grep '^\.' || true)" ]; then
        fail "stream run $n (SIG$sig): hidden files $(ls -A | grep '^\.')"
    elif [ $((size % FRAME)) -eq 0 ]; then
        STREAM_OK=$((STREAM_OK + 1))
    elif [ "$sig" = KILL ]; then
        STREAM_OK=$((STREAM_OK + 1))
        echo "note: stream run $n (SIGKILL after ${LAST_DELAY} ms) cut its last frame ($size bytes)"
    else
        fail "stream run $n (SIG$sig after ${LAST_DELAY} ms): $size bytes is not whole frames"
    fi
done
# The runs that were not interrupted must have produced every file.
for f in in/*; do
    b=$(basename "$f")
    [ -e "batch/${b%.*}.$ext" ] && COMPLETED=$((COMPLETED + 1))
done
secs=$(($(date +%s) - T0))
echo "$KILLS kills in $secs s: single-file $SINGLE_OK/40, batch $BATCH_OK/35, stream $STREAM_OK/25 clean"
[ "$KILLS" -eq 100 ] && ok "100 random kills" || fail "$KILLS kills"
[ "$SINGLE_OK" -eq 40 ] && ok "single-file: only complete files after 40 kills"
[ "$BATCH_OK" -eq 35 ] && ok "batch: only complete files after 35 kills"
[ "$STREAM_OK" -eq 25 ] && ok "stream: nothing created, whole frames after every catchable signal (25 kills)"
finish
