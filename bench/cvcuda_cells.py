#!/usr/bin/env python3
"""CV-CUDA timed on imgconv-bench's cells, for bench/peers_table.py.

Usage (GPU machine, `import cvcuda` and `import torch` working):
  cvcuda_cells.py OUT.json [--imgconv PATH] [--reps N] [--quick]

The cells are imgconv-bench's: the resolution table, A (480p, 720p, HD, 4K, 8K;
3x3 Gaussian), the filter-size table, B (HD; 3x3, 5x5, 7x7, 9x9 Gaussians) and
the large-kernel table, E (8K; Gaussians 3..31 and
random full-rank 9, 15, 21, 31), plus a batch cell: 64 images of 480p, 3x3, one
call of CV-CUDA's variable-shape conv2d (and of its tensor gaussian on N=64).
uint8 RGB (HWC, interleaved), replicate border. Images: the library's chart
(`imgconv --chart WxH --seed S`, the seeds imgconv-bench draws with) when
--imgconv is given, else random bytes. Kernels: imgconv's gaussian:K
(sigma 0.3*((K-1)/2-1)+0.8, outer product of normalised 1D samples) and
imgconv-bench's random KxK (its LCG, weights over their sum), reproduced here.

Each operation is timed two ways:
  event_ms  median over reps calls, each between two CUDA events, queued behind
            a spin kernel (torch.cuda._sleep) so that host launch gaps stay
            out, inputs rotating over >= 150 MB so that they do not sit in the
            50 MB L2: the method of imgconv-bench (bench/bench_gpu.h), so these
            figures compare with its `cuda` and NPP columns;
  cupti_ms  median over reps calls of the summed durations of the CUDA kernels
            each call launched (torch.profiler/CUPTI trace; memcpy/memset not
            counted), the same rotation.
Each operation's output is also checked against a float64 reference (torch
conv2d, replicate padding) at one size: max |difference| in levels, and
whether the kernel had to be flipped (convolution vs correlation).
"""
import argparse
import json
import math
import os
import statistics
import struct
import subprocess
import sys
import tempfile
import time

SIZES = {"480p": (640, 480), "720p": (1280, 720), "HD": (1920, 1080), "4K": (3840, 2160),
         "8K": (7680, 4320)}
CHART_SEED = {"A": 1234, "B": 1234, "E": 4242}  # imgconv-bench's ic_image_chart seeds
ROTATE_BYTES = 150 << 20


def cells(quick):
    """(table, size, kernel kind, K) of the cells, in imgconv-bench's order."""
    out = [("A", s, "gaussian", 3) for s in ("480p", "720p", "HD", "4K", "8K")]
    out += [("B", "HD", "gaussian", k) for k in (3, 5, 7, 9)]
    out += [("E", "8K", "random", k) for k in (9, 15, 21, 31)]
    out += [("E", "8K", "gaussian", k) for k in (3, 5, 7, 9, 15, 21, 31)]
    if quick:
        out = [c for c in out if c[1] != "8K" or c[3] in (3, 31)]
    return out


def sigma_of(k):
    return 0.3 * ((k - 1) * 0.5 - 1.0) + 0.8


def gaussian_weights(k):
    s = sigma_of(k)
    g = [1.0 if i == (k - 1) // 2 else math.exp(-((i - (k - 1) // 2) ** 2) / (2 * s * s))
         for i in range(k)]
    t = sum(g)
    g = [v / t for v in g]
    return [[g[j] * g[i] for i in range(k)] for j in range(k)]


def random_weights(k):
    """imgconv-bench's make_kernel("random", K): float32 coefficients of an LCG
    over their (double) sum."""
    m = (1 << 64) - 1
    s = (0x9E3779B97F4A7C15 ^ k) & m
    c = []
    for _ in range(k * k):
        s = (s * 6364136223846793005 + 1442695040888963407) & m
        c.append(struct.unpack("f", struct.pack("f", (s >> 40) / 16777216.0))[0])
    t = sum(c)
    return [[c[j * k + i] / t for i in range(k)] for j in range(k)]


def read_ppm(path):
    import numpy as np
    with open(path, "rb") as f:
        data = f.read()
    fields, pos = [], 0
    while len(fields) < 4:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos) + 1
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(data[pos:end])
        pos = end
    if fields[0] != b"P6" or int(fields[3]) != 255:
        raise ValueError(f"{path}: not an 8-bit P6 PPM")
    w, h = int(fields[1]), int(fields[2])
    return np.frombuffer(data, dtype=np.uint8, count=w * h * 3, offset=pos + 1).reshape(h, w, 3)


class Images:
    """Device uint8 HWC images: the chart when the CLI is there, else random."""

    def __init__(self, cli, tmp):
        self.cli, self.tmp, self.cache, self.source = cli, tmp, {}, None

    def get(self, size, seed):
        import torch
        key = (size, seed)
        if key not in self.cache:
            w, h = SIZES[size]
            img = None
            if self.cli:
                path = os.path.join(self.tmp, f"chart-{size}-{seed}.ppm")
                try:
                    r = subprocess.run([self.cli, "--chart", f"{w}x{h}", "--seed", str(seed),
                                        path], capture_output=True, text=True)
                except OSError as e:
                    r = subprocess.CompletedProcess([self.cli], 127, "", str(e))
                why = r.stderr.strip()[:200]
                if r.returncode == 0:
                    try:
                        img = torch.from_numpy(read_ppm(path).copy()).cuda()
                        self.source = self.source or "imgconv --chart"
                    except Exception as e:  # numpy missing, a short file, ...
                        why = f"{type(e).__name__}: {e}"
                    os.remove(path)
                if img is None:
                    print(f"cvcuda_cells: the chart from {self.cli} failed ({why}); "
                          "random bytes instead", file=sys.stderr)
                    self.cli = None
            if img is None:
                g = torch.Generator(device="cuda").manual_seed(seed)
                img = torch.randint(0, 256, (h, w, 3), dtype=torch.uint8, device="cuda",
                                    generator=g)
                self.source = "random bytes"
            self.cache = {key: img}  # one size at a time: 8K copies are large
        return self.cache[key]


def rotation(bytes_one):
    return max(3, min(64, ROTATE_BYTES // max(1, bytes_one) + 1))


class Timer:
    def __init__(self, reps):
        import torch
        self.torch, self.reps = torch, reps
        # spin-kernel cycles per ms, measured once with events
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        a.record()
        torch.cuda._sleep(20_000_000)
        b.record()
        torch.cuda.synchronize()
        self.cycles_per_ms = 20_000_000 / max(a.elapsed_time(b), 1e-3)
        self.spin_short = 0  # calls whose queueing outran the spin (events may hold gaps)
        # CUPTI's first session in a process starts it up: not on a measured one
        from torch.profiler import ProfilerActivity, profile
        with profile(activities=[ProfilerActivity.CUDA]):
            torch.cuda._sleep(1000)
            torch.cuda.synchronize()

    def events(self, calls):
        """Median ms of reps calls (calls[i % len]) between events behind a spin."""
        torch = self.torch
        n = self.reps
        for i in range(3):
            calls[i % len(calls)]()
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for i in range(3):
            calls[i % len(calls)]()
        host_ms = (time.perf_counter() - t0) / 3 * 1e3  # enqueue cost per call (+ run if sync)
        torch.cuda.synchronize()
        spin_ms = min(500.0, max(2.0, 2.0 * n * host_ms + 1.0))
        ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
              for _ in range(n)]
        torch.cuda._sleep(int(spin_ms * self.cycles_per_ms))
        t0 = time.perf_counter()
        for i in range(n):
            ev[i][0].record()
            calls[i % len(calls)]()
            ev[i][1].record()
        queued_ms = (time.perf_counter() - t0) * 1e3
        torch.cuda.synchronize()
        covered = queued_ms < spin_ms
        if not covered:
            self.spin_short += 1
        t = sorted(a.elapsed_time(b) for a, b in ev)
        return statistics.median(t), covered

    def cupti(self, calls):
        """Median over reps calls of the summed kernel durations per call, the
        kernels of a call told apart by the number one call launches."""
        torch = self.torch
        from torch.profiler import ProfilerActivity, profile
        n = self.reps

        def trace(count):
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                for i in range(count):
                    calls[i % len(calls)]()
                torch.cuda.synchronize()
            fd, path = tempfile.mkstemp(suffix=".json")
            os.close(fd)
            try:
                prof.export_chrome_trace(path)
                with open(path) as f:
                    ev = json.load(f)
            finally:
                os.remove(path)
            ev = ev.get("traceEvents", ev) if isinstance(ev, dict) else ev
            ks = [e for e in ev if e.get("ph") == "X" and e.get("cat") == "kernel"]
            return sorted(ks, key=lambda e: float(e["ts"]))

        one = trace(1)
        per = len(one)
        ks = trace(n)
        names = sorted({e.get("name", "?")[:80] for e in one})
        if per == 0 or len(ks) != per * n:
            total = sum(float(e["dur"]) for e in ks) / 1e3
            return (total / n if n else 0.0), None, per, names, "mean (kernels per call varied)"
        sums, spans = [], []
        for i in range(n):
            g = ks[i * per:(i + 1) * per]
            sums.append(sum(float(e["dur"]) for e in g) / 1e3)
            spans.append((float(g[-1]["ts"]) + float(g[-1]["dur"]) - float(g[0]["ts"])) / 1e3)
        return statistics.median(sums), statistics.median(spans), per, names, "median"


def reference_check(src, out, weights):
    """Max |out - float64 reference| (levels), trying the kernel as given
    (correlation) and flipped (convolution)."""
    import torch
    import torch.nn.functional as F
    h = min(src.shape[0], 256)
    w = min(src.shape[1], 256)
    k = len(weights)
    r = k // 2
    x = src[:h, :w].permute(2, 0, 1).unsqueeze(0).double()
    y = out[:h, :w].permute(2, 0, 1).unsqueeze(0).double()
    if src.shape[0] > h or src.shape[1] > w:  # a corner crop: replicate only where true
        x = src[:h + r, :w + r].permute(2, 0, 1).unsqueeze(0).double()
        x = F.pad(x, (r, 0, r, 0), mode="replicate")
    else:
        x = F.pad(x, (r, r, r, r), mode="replicate")
    wt = torch.tensor(weights, dtype=torch.float64, device=src.device)
    best = None
    for flipped in (False, True):
        kk = torch.flip(wt, (0, 1)) if flipped else wt
        ref = F.conv2d(x, kk.expand(3, 1, k, k).contiguous(), groups=3)[..., :h, :w]
        d = float((y - ref).abs().max())
        if best is None or d < best[0]:
            best = (d, flipped)
    return best


def stream_name(cvcuda):
    try:
        return str(cvcuda.Stream.current)
    except Exception as e:  # informative only
        return f"? ({type(e).__name__})"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--imgconv", help="the imgconv CLI, to draw the chart images")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--batch", type=int, default=64)
    a = ap.parse_args()

    import torch
    import cvcuda
    if not torch.cuda.is_available():
        print("cvcuda_cells: no CUDA device", file=sys.stderr)
        return 77
    tm = Timer(a.reps)
    tmp = tempfile.mkdtemp()
    images = Images(a.imgconv, tmp)
    res = []
    border = cvcuda.Border.REPLICATE

    def record(cell, op, calls, check=None, extra=None):
        row = dict(cell, op=op)
        try:
            ev, covered = tm.events(calls)
            cu, span, per, names, how = tm.cupti(calls)
            row.update(event_ms=round(ev, 5), cupti_ms=round(cu, 5),
                       cupti_span_ms=round(span, 5) if span is not None else None,
                       kernels_per_call=per, kernels=names, cupti_stat=how,
                       spin_covered=covered)
            if check:
                d, flipped = check()
                row.update(max_diff=round(d, 3), flipped=flipped)
            if extra:
                row.update(extra)
            diff = "" if "max_diff" not in row else "  max diff %g" % row["max_diff"]
            print("%s %-5s %-8s %2dx%-2d %-16s events %8.4f ms  cupti %8.4f ms%s" %
                  (cell["table"], cell["size"], cell["kernel"], cell["k"], cell["k"], op, ev, cu,
                   diff), flush=True)
        except Exception as e:  # one failing operation does not lose the others
            row["error"] = f"{type(e).__name__}: {str(e)[:300]}"
            print(f"cvcuda_cells: {cell} {op} FAILED: {row['error']}", file=sys.stderr, flush=True)
        res.append(row)

    for table, size, kind, k in cells(a.quick):
        w, h = SIZES[size]
        src0 = images.get(size, CHART_SEED[table])
        nbuf = rotation(w * h * 3)
        srcs = [src0] + [src0.clone() for _ in range(nbuf - 1)]
        dsts = [torch.empty_like(src0) for _ in range(2)]
        weights = gaussian_weights(k) if kind == "gaussian" else random_weights(k)
        cell = {"table": table, "size": size, "width": w, "height": h, "channels": 3,
                "kernel": kind, "k": k, "batch": 1, "rotate": nbuf}
        ts = [cvcuda.as_tensor(s.unsqueeze(0), "NHWC") for s in srcs]
        td = [cvcuda.as_tensor(d.unsqueeze(0), "NHWC") for d in dsts]
        # conv2d: variable-shape batches of one image, one float kernel per image
        ib = []
        for s in srcs:
            b = cvcuda.ImageBatchVarShape(1)
            b.pushback(cvcuda.as_image(s, cvcuda.Format.RGB8))
            ib.append(b)
        ob = []
        for d in dsts:
            b = cvcuda.ImageBatchVarShape(1)
            b.pushback(cvcuda.as_image(d, cvcuda.Format.RGB8))
            ob.append(b)
        kern = torch.tensor(weights, dtype=torch.float32, device="cuda")
        kb = cvcuda.ImageBatchVarShape(1)
        kb.pushback(cvcuda.as_image(kern, cvcuda.Format.F32))
        anc = cvcuda.as_tensor(torch.full((1, 2), -1, dtype=torch.int32, device="cuda"), "NC")

        def conv_call(i):
            return lambda: cvcuda.conv2d_into(ob[i % 2], ib[i % nbuf], kb, anc, border)

        calls = [conv_call(i) for i in range(2 * nbuf)]

        def conv_check():
            torch.cuda.synchronize()
            cvcuda.conv2d_into(ob[0], ib[0], kb, anc, border)
            torch.cuda.synchronize()
            return reference_check(srcs[0], dsts[0], weights)

        record(cell, "conv2d", calls, conv_check)
        if kind == "gaussian":
            s = sigma_of(k)

            def gauss_call(i):
                return lambda: cvcuda.gaussian_into(td[i % 2], ts[i % nbuf], (k, k), (s, s), border)

            def gauss_check():
                torch.cuda.synchronize()
                cvcuda.gaussian_into(td[0], ts[0], (k, k), (s, s), border)
                torch.cuda.synchronize()
                return reference_check(srcs[0], dsts[0], weights)

            record(cell, "gaussian", [gauss_call(i) for i in range(2 * nbuf)], gauss_check)

    # The batch cell: a.batch images of 480p, 3x3, one call.
    n = a.batch
    w, h = SIZES["480p"]
    base = images.get("480p", 1234)
    nbuf = rotation(n * w * h * 3)
    for kind in ("gaussian", "random"):
        weights = gaussian_weights(3) if kind == "gaussian" else random_weights(3)
        cell = {"table": "batch", "size": "480p", "width": w, "height": h, "channels": 3,
                "kernel": kind, "k": 3, "batch": n, "rotate": nbuf}
        srcs = [base.unsqueeze(0).repeat(n, 1, 1, 1).contiguous() for _ in range(nbuf)]
        dsts = [torch.empty_like(srcs[0]) for _ in range(2)]

        def varshape(t):
            b = cvcuda.ImageBatchVarShape(n)
            for j in range(n):
                b.pushback(cvcuda.as_image(t[j], cvcuda.Format.RGB8))
            return b

        ib = [varshape(t) for t in srcs]
        ob = [varshape(t) for t in dsts]
        kern = torch.tensor(weights, dtype=torch.float32, device="cuda")
        kb = cvcuda.ImageBatchVarShape(n)
        for _ in range(n):
            kb.pushback(cvcuda.as_image(kern, cvcuda.Format.F32))
        anc = cvcuda.as_tensor(torch.full((n, 2), -1, dtype=torch.int32, device="cuda"), "NC")

        def bconv_call(i):
            return lambda: cvcuda.conv2d_into(ob[i % 2], ib[i % nbuf], kb, anc, border)

        def bconv_check():
            torch.cuda.synchronize()
            cvcuda.conv2d_into(ob[0], ib[0], kb, anc, border)
            torch.cuda.synchronize()
            return max(reference_check(srcs[0][j], dsts[0][j], weights) for j in (0, n - 1))

        record(cell, "conv2d-varshape", [bconv_call(i) for i in range(2 * nbuf)], bconv_check)
        if kind == "gaussian":
            ts = [cvcuda.as_tensor(t, "NHWC") for t in srcs]
            td = [cvcuda.as_tensor(t, "NHWC") for t in dsts]
            s = sigma_of(3)

            def bg_call(i):
                return lambda: cvcuda.gaussian_into(td[i % 2], ts[i % nbuf], (3, 3), (s, s), border)

            record(cell, "gaussian-tensor", [bg_call(i) for i in range(2 * nbuf)])

    doc = {
        "what": "CV-CUDA on imgconv-bench's cells (bench/cvcuda_cells.py)",
        "device": torch.cuda.get_device_name(0),
        "cvcuda_version": getattr(cvcuda, "__version__", "?"),
        "torch_version": torch.__version__,
        "cuda_runtime": torch.version.cuda,
        "stream": stream_name(cvcuda),
        "images": images.source,
        "reps": a.reps,
        "quick": a.quick,
        "spin_short": tm.spin_short,
        "timing": "event_ms: median of reps CUDA-event-timed calls queued behind a spin kernel, "
                  "inputs rotating over >= 150 MB (imgconv-bench's method); cupti_ms: median of "
                  "the summed kernel durations per call (torch.profiler/CUPTI)",
        "cells": res,
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"wrote {a.out} ({len(res)} cells, {sum('error' in r for r in res)} failed)")
    return 0 if not any("error" in r for r in res) else 1


if __name__ == "__main__":
    sys.exit(main())
