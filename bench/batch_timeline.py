#!/usr/bin/env python3
"""batch_timeline.py - where a batch's time went, from its IC_BATCH_TRACE file.

    python3 bench/batch_timeline.py TRACE [--bin MS] [--title TEXT]

The trace (tools/cli_batch.c, add_time) holds one line per interval of a
stage, "t0_ms ms stage", times from the run's start (after the options are
read). Stages: i a worker's file read, d its decode (libjpeg-turbo & co), r/g
the GPU side's file reads and nvJPEG decodes (a batch each), u the filter's
upload, f the host-route filter (host to host), F the device-route filter
(host to device into a codec slot) or a device image's, o the filter's
download, e a CPU encode, n a GPU-side encode (nvJPEG), w an atomic
write. Moments: C the filter contexts exist, S the GPU codec's slots (the
device route), E its nvJPEG encoder is open, D its decoders are open (or
failed, or not needed).

Prints markdown: the moments, each stage's count / busy time / mean, and a
table of bins: for each bin, the threads busy in each stage on average
(thread-equivalents: 16 means 16 threads busy the whole bin) and the files
written by its end. Exit 2 on a missing or malformed trace.
"""
import argparse
import sys

NAMES = {
    "i": "read (CPU)",
    "d": "decode (CPU)",
    "r": "read (GPU side)",
    "g": "decode (nvJPEG)",
    "f": "filter, host route",
    "u": "upload",
    "F": "filter, device",
    "o": "download",
    "e": "encode (CPU)",
    "n": "encode (GPU side)",
    "w": "write",
}
MOMENTS = {"C": "filter contexts made", "S": "GPU codec slots ready", "E": "nvJPEG encoder open",
           "D": "GPU decoders open (or not needed)"}
ORDER = "idrgufFoenw"


def load(path):
    ev = []
    with open(path) as f:
        for ln, line in enumerate(f, 1):
            if line.startswith("#") or not line.strip():
                continue
            parts = line.split()
            if len(parts) != 3 or len(parts[2]) != 1:
                raise ValueError(f"{path}:{ln}: not 't0_ms ms stage'")
            ev.append((float(parts[0]), float(parts[1]), parts[2]))
    return ev


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--bin", type=float, default=100.0, help="bin width in ms (default 100)")
    ap.add_argument("--title", default="")
    a = ap.parse_args()
    try:
        ev = load(a.trace)
    except (OSError, ValueError) as e:
        print(f"batch_timeline.py: {e}", file=sys.stderr)
        return 2
    if a.bin <= 0:
        print("batch_timeline.py: --bin must be positive", file=sys.stderr)
        return 2
    spans = [e for e in ev if e[2] in NAMES]
    marks = [e for e in ev if e[2] in MOMENTS]
    end = max([s + d for s, d, _ in spans] + [s for s, _, _ in marks] + [0.0])
    if a.title:
        print(f"#### {a.title}\n")
    moments = ", ".join(f"{MOMENTS[k]} at {t:.0f} ms" for t, _, k in sorted(marks))
    print(f"Trace: {len(spans)} intervals over {end:.0f} ms; {moments or 'no moments marked'}.\n")
    print("| stage | intervals | busy s | mean ms | first start ms | last end ms |")
    print("|---|---:|---:|---:|---:|---:|")
    for k in ORDER:
        s = [e for e in spans if e[2] == k]
        if not s:
            continue
        busy = sum(d for _, d, _ in s)
        print(f"| {NAMES[k]} ({k}) | {len(s)} | {busy / 1e3:.2f} | {busy / len(s):.2f} | "
              f"{min(t for t, _, _ in s):.0f} | {max(t + d for t, d, _ in s):.0f} |")
    nb = int(end // a.bin) + 1
    busy = {k: [0.0] * nb for k in ORDER}
    for t, d, k in spans:  # spread each interval over the bins it covers
        b0, t1 = int(t // a.bin), t + d
        for b in range(b0, min(nb, int(t1 // a.bin) + 1)):
            lo, hi = max(t, b * a.bin), min(t1, (b + 1) * a.bin)
            if hi > lo:
                busy[k][b] += hi - lo
    writes = sorted(t + d for t, d, k in spans if k == "w")
    used = [k for k in ORDER if any(busy[k])]
    print(f"\nThreads busy per stage, averaged over {a.bin:.0f} ms bins; written = files written by "
          "the bin's end; moments in the bin they fall in.\n")
    print("| ms | " + " | ".join(used) + " | written | moments |")
    print("|---:|" + "---:|" * len(used) + "---:|---|")
    wi = 0
    for b in range(nb):
        hi = (b + 1) * a.bin
        while wi < len(writes) and writes[wi] <= hi:
            wi += 1
        m = " ".join(k for t, _, k in marks if b * a.bin <= t < hi)
        cells = " | ".join(f"{busy[k][b] / a.bin:.1f}" for k in used)
        print(f"| {b * a.bin:.0f} | {cells} | {wi} | {m} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
