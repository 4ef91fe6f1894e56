#!/usr/bin/env bash
# trace.sh - the batch's profile (docs/cli.md#batch-and-streams): a CPU batch
# of 12 images with a cut file in the middle, run with --trace FILE --time
# --json:
#   - the trace is valid JSON in Chrome's Trace Event Format: a traceEvents
#     list of complete events ("ph": "X", ts and dur in microseconds, pid,
#     tid) with thread names for the lanes;
#   - every written file has read, decode, filter, encode and write events
#     naming it, in that order in time; the cut file has read and decode but
#     no write;
#   - the events of one thread do not overlap (a lane does one thing at a
#     time) and all lie within the run;
#   - --json's stage_ms has read, decode, upload, filter, download, encode and
#     write, and wait_ms the threads' waits; --time prints the stage table;
#   - --trace needs batch mode (exit 2), and a trace that cannot be written
#     stops the batch before any output (exit 4).
. "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

N=12
mkdir in
for i in $(seq 1 $N); do
    "$IMGCONV" --chart 96x64 --seed "$i" "$(printf 'in/f%02d.ppm' "$i")" >/dev/null 2>&1 ||
        fail "making image $i"
done
head -c 200 in/f06.ppm >cut.tmp && mv cut.tmp in/f06.ppm

run -k gaussian:5 --backend cpu --trace t.json --time -o out in
if [ "$RC" -eq 3 ] && grep -q '^  decode ' "$OUT" && grep -q '^  write ' "$OUT" &&
    grep -q '^  wait ms: workers ' "$OUT"; then
    ok "--time prints the stage table (exit 3 for the cut file)"
else
    fail "--time: exit $RC"
    show_last
fi
if python3 - "$N" <<'EOF'; then
import collections, json, sys
n = int(sys.argv[1])
d = json.load(open("t.json"))
ev = d["traceEvents"]
assert isinstance(ev, list) and ev, "no traceEvents"
names = {e["tid"]: e["args"]["name"] for e in ev if e.get("ph") == "M" and e["name"] == "thread_name"}
spans = [e for e in ev if e.get("ph") == "X"]
for e in spans:
    assert {"name", "ts", "dur", "pid", "tid"} <= set(e), e
    assert e["dur"] >= 0 and e["ts"] >= 0, e
    assert e["tid"] in names, ("a lane without a name", e)
by_file = collections.defaultdict(list)
for e in spans:
    if "args" in e:
        by_file[e["args"]["file"]].append(e)
stages = ["read", "decode", "filter", "encode", "write"]
for i in range(1, n + 1):
    f = f"in/f{i:02d}.ppm"
    got = {e["name"]: e for e in by_file[f]}
    if i == 6:
        assert "read" in got and "decode" in got and "write" not in got, (f, sorted(got))
        continue
    assert all(s in got for s in stages), (f, sorted(got))
    ends = [got[s]["ts"] for s in stages]
    assert ends == sorted(ends), (f, "stages out of order", ends)
    for a, b in zip(stages, stages[1:]):
        assert got[a]["ts"] + got[a]["dur"] <= got[b]["ts"] + 1, (f, a, b)
lanes = collections.defaultdict(list)
for e in spans:
    lanes[e["tid"]].append((e["ts"], e["ts"] + e["dur"]))
for tid, v in lanes.items():
    v.sort()
    for (a0, a1), (b0, b1) in zip(v, v[1:]):
        assert b0 >= a1 - 1, (names[tid], "overlapping spans", (a0, a1), (b0, b1))
assert d["otherData"]["dropped"] == 0, d["otherData"]
print(f"{len(spans)} spans on {len(lanes)} lanes: " + ", ".join(sorted(set(names[t] for t in lanes))))
EOF
    ok "the trace is a Chrome trace with every file's stages, in order, lanes not overlapping"
else
    fail "the trace"
fi

run -k gaussian:5 --backend cpu --json -o out2 in
python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); s=d["stage_ms"]; w=d["wait_ms"]; sys.exit(0 if set(s) == {"read","decode","upload","filter","download","encode","write"} and s["read"] > 0 and s["decode"] > 0 and set(w) == {"workers","filter","gpu_reader","gpu_encoders","writers"} else 1)' "$OUT" &&
    ok "--json: stage_ms and wait_ms" || fail "--json: $(head -c 400 "$OUT")"

expect_error 2 "--trace needs --outdir" "--trace in single mode" -k gaussian:5 --trace t2.json in/f01.ppm o.ppm
run -k gaussian:5 --trace nodir/t.json -o out3 in
[ "$RC" -eq 4 ] && [ ! -e out3/f01.ppm ] && grep -q 'nodir/t.json' "$ERR" &&
    ok "a trace that cannot be written: exit 4, no output" || { fail "--trace into a missing directory"; show_last; }

finish
