#!/usr/bin/env bash
# auto.sh - --backend auto (the default) chooses per job with the whole-job
# cost model (docs/backends.md, "Auto: the whole job"):
#   - a 64x64 image: --explain prints the choice and its reason (both
#     predictions), the choice is cpu, and the GPU was not looked for (with
#     a GPU and strace: no /dev/nvidia* node opened);
#   - a job the model gives to cuda (a 31x31 kernel on one thread): cuda on a
#     machine with a usable CUDA backend, else cpu without error, the reason
#     saying why cuda was not taken; the output is written either way;
#   - batch mode: --explain prints the choice on one line before the run,
#     --json carries it ("auto"); the stream prints it on stderr;
#   - an explicit --backend prints no choice, and --json has no "auto";
#   - a FIFO among a batch's inputs does not block the choice.
. "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

run --list-backends
CUDA_OK=0
awk '$2 == "yes" { print $1 }' "$OUT" | grep -q '^cuda$' && CUDA_OK=1

"$IMGCONV" --chart 64x64 small.ppm >/dev/null 2>&1 || fail "making small.ppm"

# One small image: cpu, the reason, no GPU probe.
run --explain -k gaussian:3 small.ppm out.ppm
line=$(grep '^  auto ' "$OUT")
if [ "$RC" -eq 0 ] && grep -q '^  backend   cpu (auto)' "$OUT" &&
    echo "$line" | grep -q 'auto      cpu: one image predicted .* s on cpu, .* s on cuda' &&
    echo "$line" | grep -q 'GPU not probed' && [ -s out.ppm ]; then
    ok "64x64: cpu, '$line'"
else
    fail "64x64: exit $RC, auto line '$line'"
    show_last
fi

# With a GPU, the small job does not even open the driver's device nodes
# (strace, when installed): the choice was made before any CUDA call.
if [ "$CUDA_OK" -eq 1 ] && command -v strace >/dev/null 2>&1; then
    strace -f -qq -e trace=open,openat -o trace.txt "$IMGCONV" -k gaussian:3 --overwrite \
        small.ppm out.ppm >/dev/null 2>&1
    n=$(grep -c '/dev/nvidia' trace.txt)
    [ "$n" -eq 0 ] && ok "64x64 with a GPU: no /dev/nvidia* opened" ||
        fail "64x64 with a GPU: $n opens of /dev/nvidia* ($(grep -m1 '/dev/nvidia' trace.txt))"
fi

# A heavy filter on one thread: 1800x1800 grey, a full-rank 31x31 kernel.
python3 - <<'EOF' || fail "making the 31x31 kernel"
import random
random.seed(31)
with open("k31.txt", "w") as f:
    for _ in range(31):
        f.write(" ".join(str(random.randint(1, 9)) for _ in range(31)) + "\n")
EOF
"$IMGCONV" --chart 1800x1800x1 big.pgm >/dev/null 2>&1 || fail "making big.pgm"
run --explain --threads 1 --kernel-file k31.txt big.pgm heavy.pgm
line=$(grep '^  auto ' "$OUT")
if [ "$CUDA_OK" -eq 1 ]; then
    [ "$RC" -eq 0 ] && grep -q '^  backend   cuda (auto)' "$OUT" && [ -s heavy.pgm ] &&
        ok "heavy job with a GPU: cuda, '$line'" || { fail "heavy job with a GPU: '$line'"; show_last; }
else
    if [ "$RC" -eq 0 ] && [ ! -s "$ERR" ] && grep -q '^  backend   cpu (auto)' "$OUT" &&
        echo "$line" | grep -Eq 'cuda would be faster, but (this build has no CUDA backend|no usable CUDA device|no GPU|no CUDA device)' &&
        [ -s heavy.pgm ]; then
        ok "heavy job without a GPU: cpu without error, '$line'"
    else
        fail "heavy job without a GPU: exit $RC, '$line'"
        show_last
    fi
fi
"$IMGCONV" --backend cpu --threads 1 --kernel-file k31.txt big.pgm heavy_cpu.pgm >/dev/null 2>&1
if [ "$CUDA_OK" -eq 0 ]; then
    cmp -s heavy.pgm heavy_cpu.pgm && ok "heavy job: auto's output is --backend cpu's" ||
        fail "heavy job: auto's output differs from --backend cpu's"
fi

# Batch: the choice before the run, and in --json.
mkdir in
for i in 1 2 3; do cp small.ppm "in/s$i.ppm"; done
run --explain -k gaussian:3 -o outA in
if [ "$RC" -eq 0 ] && head -1 "$OUT" | grep -q '^imgconv: backend cpu (auto): cpu: the batch predicted .* on cpu, .* on cuda'; then
    ok "batch --explain: '$(head -1 "$OUT")'"
else
    fail "batch --explain: exit $RC, '$(head -1 "$OUT")'"
    show_last
fi
run --json -k gaussian:3 -o outB in
if [ "$RC" -eq 0 ] && python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if d["backend"] == "cpu" and d["auto"].startswith("cpu: the batch predicted") else 1)' "$OUT"; then
    ok "batch --json carries the choice"
else
    fail "batch --json: $(head -c 300 "$OUT")"
fi
run --json --backend cpu -k gaussian:3 -o outC in
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); sys.exit(0 if "auto" not in d else 1)' "$OUT" &&
    ok "batch --json with --backend cpu: no auto" || fail "batch --json with --backend cpu: $(head -c 300 "$OUT")"
run --backend cpu --explain -k gaussian:3 --overwrite small.ppm out.ppm
! grep -q '^  auto ' "$OUT" && grep -q '^  backend   cpu$' "$OUT" &&
    ok "--backend cpu: no auto line" || { fail "--backend cpu --explain"; show_last; }

# A FIFO first in the batch: the choice reads no header from it (it would
# block), and the batch reports it as ever.
mkdir fifo_in && mkfifo fifo_in/a.ppm && cp small.ppm fifo_in/b.ppm
timeout 20 "$IMGCONV" -k gaussian:3 -o outF fifo_in/a.ppm fifo_in/b.ppm >/dev/null 2>fifo.err
rc=$?
[ "$rc" -eq 3 ] && grep -q 'a.ppm: not a regular file' fifo.err && [ -s outF/b.ppm ] &&
    ok "a FIFO in the batch: reported, the batch goes on" ||
    fail "a FIFO in the batch: exit $rc, '$(cat fifo.err)'"

# The stream: the choice on stderr, the frames untouched on stdout.
head -c $((64 * 64 * 3 * 2)) /dev/zero >frames.raw
"$IMGCONV" --stream 64x64x3 --explain -k gaussian:3 <frames.raw >frames.out 2>stream.err
rc=$?
if [ "$rc" -eq 0 ] && [ "$(wc -c <frames.out)" -eq $((64 * 64 * 3 * 2)) ] &&
    grep -q '^imgconv: backend cpu (auto): cpu: ' stream.err; then
    ok "stream --explain: '$(grep auto stream.err)'"
else
    fail "stream --explain: exit $rc, $(wc -c <frames.out) bytes, stderr '$(cat stream.err)'"
fi

finish
