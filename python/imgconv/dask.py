"""imgconv.dask: filter many image files, or a Dask array of images, on a Dask
distributed cluster (one machine's LocalCluster or many machines).

    from distributed import Client
    import imgconv.dask as icd
    client = Client(icd.local_cluster())            # or Client("tcp://scheduler:8786")
    report = icd.filter_files(client, ["a.png", "photos/"], "out/", "gaussian:5")
    print(report.summary()); assert not report.failed

Each file is one task: the worker loads it, filters it with its own cached
imgconv context and writes the result under a hidden temporary name in the
output folder, then publishes it with an atomic, exclusive link() to the final
name. So an output is complete or absent, never partial; when a worker dies
mid-batch the scheduler re-runs its tasks elsewhere and a re-run finds the
output already published instead of writing it a second time; temporaries of
a dead worker are removed at the end. Outputs that exist before the batch are
refused per file (overwrite=True replaces them atomically). Failures are
reported per file (Report.failed), never raised for the batch.

On a real cluster: start `dask scheduler` on one machine, `dask worker
tcp://SCHEDULER:8786 --nworkers 1 --nthreads 1` (CPU machines; imgconv uses
the machine's cores inside the worker) or `dask cuda worker
tcp://SCHEDULER:8786` (dask-cuda: one worker per GPU) on the others, with
imgconv installed (pip install ./python) and the input and output folders at
the same paths on every machine (a shared filesystem), then
Client("tcp://SCHEDULER:8786").
"""
import glob
import os
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

import imgconv

EXTENSIONS = (".png", ".jpg", ".jpeg", ".pgm", ".ppm", ".pnm")


def local_cluster(n_workers=None, gpu=None, threads=None, **kw):
    """A cluster on this machine following dask-cuda's convention of one
    worker per GPU when a CUDA backend is usable and dask_cuda is installed
    (gpu=None: decide so; True: require it), else `n_workers` single-threaded
    CPU worker processes (default: one per core) on the loopback interface."""
    usable_cuda = any(n.startswith("cuda") and u for n, _, u, _ in imgconv.backends())
    if gpu is None:
        gpu = usable_cuda
        if gpu:
            try:
                import dask_cuda  # noqa: F401
            except ImportError:
                gpu = False
    if gpu:
        from dask_cuda import LocalCUDACluster
        return LocalCUDACluster(n_workers=n_workers, **kw)
    from distributed import LocalCluster
    kw.setdefault("host", "127.0.0.1")
    kw.setdefault("dashboard_address", "127.0.0.1:0")
    return LocalCluster(n_workers=n_workers or os.cpu_count() or 1,
                        threads_per_worker=threads or 1, processes=True, **kw)


def expand_inputs(inputs):
    """Files, folders (their image files, sorted) and glob patterns -> paths."""
    out = []
    for item in [inputs] if isinstance(inputs, (str, os.PathLike)) else inputs:
        p = Path(item)
        if p.is_dir():
            out += sorted(q for q in p.iterdir() if q.suffix.lower() in EXTENSIONS and q.is_file())
        elif any(ch in str(item) for ch in "*?["):
            out += sorted(Path(q) for q in glob.glob(str(item)))
        else:
            out.append(p)
    return [str(q) for q in out]


@dataclass
class Report:
    """What happened to each file: ok (input, output), failed (input, message),
    skipped (input, reason)."""
    ok: list = field(default_factory=list)
    failed: list = field(default_factory=list)
    skipped: list = field(default_factory=list)

    def summary(self):
        lines = [f"{len(self.ok)} written, {len(self.failed)} failed, {len(self.skipped)} skipped"]
        lines += [f"  failed: {src}: {msg}" for src, msg in self.failed]
        lines += [f"  skipped: {src}: {why}" for src, why in self.skipped]
        return "\n".join(lines)


def _tmp_name(dst, batch):
    d = Path(dst)
    return str(d.with_name(f".{d.stem}.imgconv-{batch}-{uuid.uuid4().hex[:8]}{d.suffix}"))


def _filter_file(src, dst, batch, kernel, opts, overwrite, quality, delay=0.0):
    """Runs on a worker. Returns (src, dst, status, message)."""
    import time
    try:
        if not overwrite and os.path.lexists(dst):
            # Refused up front by the client, so it exists only because an
            # earlier attempt of this task (on a worker that died) published it.
            return src, dst, "ok", "published by an earlier attempt"
        img = imgconv.load(src)
        out = imgconv.convolve(img, kernel, **opts)
        if delay:
            time.sleep(delay)       # tests: widen the window a worker can die in
        if overwrite:
            imgconv.save(dst, out, quality)  # temporary + rename inside
            return src, dst, "ok", ""
        tmp = _tmp_name(dst, batch)
        imgconv.save(tmp, out, quality)
        try:
            os.link(tmp, dst)       # atomic and exclusive: never replaces
        except FileExistsError:
            return src, dst, "ok", "published by an earlier attempt"
        finally:
            os.unlink(tmp)
        return src, dst, "ok", ""
    except (imgconv.Error, OSError, ValueError, TypeError) as e:
        return src, dst, "failed", str(e)


def filter_files(client, inputs, outdir, kernel, *, border="mirror", backend="auto",
                 correlate=False, bias=0.0, alpha="auto", border_value=0.0, threads=0,
                 fmt=None, overwrite=False, quality=0, _delay=0.0):
    """Filters every input file into `outdir` (same base name; `fmt` = "png",
    "jpg", ... changes the extension) on the client's cluster and returns a
    Report. `threads`: CPU threads of each worker's imgconv context (0: all
    cores of its machine; give 1 when several workers share a machine). The
    other arguments are those of imgconv.convolve."""
    import asyncio
    import concurrent.futures

    from distributed import as_completed
    cancelled = (asyncio.CancelledError, concurrent.futures.CancelledError)
    try:
        from distributed.scheduler import KilledWorker
    except ImportError:  # pragma: no cover - older/newer layouts
        from distributed import KilledWorker
    imgconv.Kernel(kernel) if isinstance(kernel, str) else None  # bad kernel text fails here, once
    outdir = Path(outdir)
    outdir.mkdir(parents=True, exist_ok=True)
    batch = uuid.uuid4().hex[:12]
    opts = dict(border=border, backend=backend, correlate=correlate, bias=bias, alpha=alpha,
                border_value=border_value, threads=threads)
    report = Report()
    jobs, seen = [], {}
    for src in expand_inputs(inputs):
        name = Path(src).stem + ("." + fmt.lstrip(".") if fmt else Path(src).suffix)
        dst = str((outdir / name).resolve())
        if dst in seen:
            report.failed.append((src, f"same output name as {seen[dst]}"))
            continue
        seen[dst] = src
        if os.path.abspath(src) == dst:
            report.failed.append((src, "the output would replace the input"))
        elif not overwrite and os.path.lexists(dst):
            report.skipped.append((src, f"{dst} exists (overwrite=True replaces it)"))
        else:
            jobs.append((src, dst))
    kernel_arg = kernel if isinstance(kernel, str) else np.asarray(kernel.weights if isinstance(
        kernel, imgconv.Kernel) else kernel, dtype=np.float64)
    futures = [client.submit(_filter_file, src, dst, batch, kernel_arg, opts, overwrite, quality,
                             _delay, key=f"imgconv-{batch}-{i}", pure=False)
               for i, (src, dst) in enumerate(jobs)]
    where = {f.key: job for f, job in zip(futures, jobs)}
    try:
        for fut in as_completed(futures):
            src, dst = where[fut.key]
            try:
                _, _, status, msg = fut.result()
            except (KilledWorker, *cancelled) as e:
                status, msg = "failed", f"workers died running it: {e}"
            except Exception as e:  # an unexpected exception on the worker
                status, msg = "failed", f"{type(e).__name__}: {e}"
            if status == "ok":
                report.ok.append((src, dst))
            else:
                report.failed.append((src, msg))
    finally:
        for tmp in outdir.glob(f".*.imgconv-{batch}-*"):  # left by a worker that died
            try:
                tmp.unlink()
            except OSError:
                pass
    return report


def _filter_stack(block, kernel, opts):
    out = np.empty_like(block)
    for i in range(block.shape[0]):
        imgconv.convolve(block[i], kernel, out=out[i], **opts)
    return out


def convolve_array(images, kernel, *, border="mirror", backend="auto", correlate=False,
                   bias=0.0, alpha="auto", border_value=0.0, threads=0):
    """Filters a Dask array of images shaped (N, H, W) or (N, H, W, C), uint8,
    lazily: returns a Dask array of the same shape and chunks along N. Each
    image is filtered whole (the array is rechunked so that a chunk holds whole
    images), so the result equals imgconv.convolve image by image; compute it
    with the client's scheduler as usual."""
    import dask.array as da
    if not isinstance(images, da.Array):
        images = da.asarray(images)
    if images.dtype != np.uint8 or images.ndim not in (3, 4):
        raise ValueError("expected a uint8 Dask array shaped (N, H, W) or (N, H, W, C)")
    images = images.rechunk({i: -1 for i in range(1, images.ndim)})
    k = kernel if isinstance(kernel, str) else np.asarray(
        kernel.weights if isinstance(kernel, imgconv.Kernel) else kernel, dtype=np.float64)
    opts = dict(border=border, backend=backend, correlate=correlate, bias=bias, alpha=alpha,
                border_value=border_value, threads=threads)
    return images.map_blocks(_filter_stack, k, opts, dtype=np.uint8)
