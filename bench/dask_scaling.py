#!/usr/bin/env python3
"""dask_scaling.py - how imgconv.dask.filter_files scales from 1 to N local
CPU workers (LocalCluster, one single-threaded worker process per core, the
imgconv context of each worker on 1 thread), against the same files filtered
in one process without Dask. Writes bench/results/dask.md in place (--out
another file).

    python3 bench/dask_scaling.py [--images 48] [--size 1024x768] [--kernel gaussian:9]
                                  [--max-workers N | --workers 1,2,4,8,16] [--repeat 3]
                                  [--gpu] [--out FILE]

--gpu adds a row with one worker whose context runs the `cuda` backend (one
worker per GPU, dask-cuda's convention), when a CUDA backend is usable.

Needs the Python package (pip install ./python) and distributed.
"""
import argparse
import datetime as dt
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import imgconv
import imgconv.dask as icd
from distributed import Client


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--images", type=int, default=48)
    ap.add_argument("--size", default="1024x768")
    ap.add_argument("--kernel", default="gaussian:9")
    ap.add_argument("--max-workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--workers", default="",
                    help="comma-separated worker counts (default 1..max-workers)")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--out", default=None, help="summary file (default bench/results/dask.md)")
    a = ap.parse_args()
    w, h = map(int, a.size.split("x"))
    root = Path(__file__).resolve().parent
    tmp = Path(tempfile.mkdtemp(prefix="dask-scaling-"))
    try:
        src = tmp / "in"
        src.mkdir()
        files = []
        for i in range(a.images):
            p = src / f"img{i:03d}.png"
            imgconv.save(p, imgconv.chart(h, w, 3, seed=i + 1))
            files.append(p)
        rows = []

        def timed(run):
            times = []
            for r in range(a.repeat):
                out = tmp / f"out-{len(rows)}-{r}"
                t0 = time.perf_counter()
                n = run(out)
                times.append(time.perf_counter() - t0)
                assert n == a.images, f"only {n} of {a.images} written"
                shutil.rmtree(out)
            return statistics.median(times), times

        def serial(out):
            out.mkdir()
            ctx = imgconv.Context("cpu", threads=1)
            for p in files:
                imgconv.save(out / p.name, ctx.convolve(imgconv.load(p), a.kernel))
            return len(list(out.iterdir()))

        med, times = timed(serial)
        rows.append(("no Dask, 1 process, 1 thread", med, times))
        counts = ([int(n) for n in a.workers.split(",")] if a.workers
                  else list(range(1, a.max_workers + 1)))
        for n in counts:
            with icd.local_cluster(n_workers=n, gpu=False, silence_logs=50) as c, Client(c) as client:
                client.wait_for_workers(n)

                def run(out, client=client):
                    rep = icd.filter_files(client, files, out, a.kernel, backend="cpu", threads=1)
                    assert not rep.failed, rep.summary()
                    return len(rep.ok)

                run(tmp / "warm")               # workers import imgconv, contexts open
                shutil.rmtree(tmp / "warm")
                med, times = timed(run)
                rows.append((f"Dask LocalCluster, {n} worker{'s' * (n > 1)} x 1 thread", med, times))
        usable = [n for n, _, u, _ in imgconv.backends() if n == "cuda" and u]
        if a.gpu and usable:
            with icd.local_cluster(n_workers=1, gpu=False, silence_logs=50) as c, Client(c) as client:
                client.wait_for_workers(1)

                def run_gpu(out, client=client):
                    rep = icd.filter_files(client, files, out, a.kernel, backend="cuda")
                    assert not rep.failed, rep.summary()
                    return len(rep.ok)

                run_gpu(tmp / "warm")
                shutil.rmtree(tmp / "warm")
                med, times = timed(run_gpu)
                rows.append(("Dask LocalCluster, 1 worker, backend cuda (1 GPU)", med, times))
        elif a.gpu:
            rows.append(("Dask, backend cuda: no usable CUDA backend here", float("nan"), []))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    stamp = dt.datetime.now(dt.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    commit = os.environ.get("IC_COMMIT", "")
    try:
        commit = commit or subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                                          capture_output=True, text=True).stdout.strip()
    except OSError:
        commit = "?"
    base = rows[1][1]
    lines = [f"# imgconv.dask scaling, {stamp}", "",
             f"Written by `bench/dask_scaling.py` at commit {commit}. Machine: {platform.node()}, "
             f"{os.cpu_count()} logical CPUs ({platform.processor() or platform.machine()}), "
             f"load average before the run {os.getloadavg()[0]:.1f}; Python {platform.python_version()}, "
             f"imgconv {imgconv.__version__}.", "",
             f"Workload: {a.images} PNG files of {w}x{h} RGB (the test chart), kernel `{a.kernel}`, "
             f"backend `cpu` with 1 thread per worker (the cuda row: backend `cuda`); load, filter and "
             f"atomic save per file. "
             f"Median of {a.repeat} runs after a warm-up batch.", "",
             "| configuration | median s | images/s | vs 1 Dask worker | runs (s) |",
             "|---|---|---|---|---|"]
    for name, med, times in rows:
        lines.append(f"| {name} | {med:.2f} | {a.images / med:.1f} | {base / med:.2f}x | "
                     + ", ".join(f"{t:.2f}" for t in times) + " |")
    text = "\n".join(lines) + "\n"
    out = Path(a.out) if a.out else root / "results" / "dask.md"
    out.write_text(text)
    sys.stdout.write(text + f"\nwritten to {out}\n")


if __name__ == "__main__":
    main()
