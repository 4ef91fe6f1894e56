"""imgconv.dask on a LocalCluster bound to the loopback interface: every file
filtered once and correctly, per-file failures, a worker killed mid-batch
(nothing lost, nothing written twice, no temporary left), Dask arrays."""
import os
import signal
import threading
import time

import numpy as np
import pytest

import imgconv

distributed = pytest.importorskip("distributed")
import imgconv.dask as icd  # noqa: E402


@pytest.fixture(scope="module")
def cluster():
    with icd.local_cluster(n_workers=2, gpu=False, silence_logs=50) as c, \
            distributed.Client(c, timeout=60) as client:
        yield c, client


def _inputs(folder, n, shape=(120, 160, 3)):
    folder.mkdir()
    paths = []
    for i in range(n):
        p = folder / f"img{i:03d}.png"
        imgconv.save(p, imgconv.chart(*shape, seed=i + 1))
        paths.append(p)
    return paths


def _check_outputs(paths, outdir, kernel, **opts):
    names = sorted(os.listdir(outdir))
    assert names == sorted(p.name for p in paths), f"unexpected files in {outdir}: {names}"
    for p in paths:
        want = imgconv.convolve(imgconv.load(p), kernel, **opts)
        assert np.array_equal(imgconv.load(outdir / p.name), want), p.name


def test_files_and_failures(cluster, tmp_path):
    _, client = cluster
    paths = _inputs(tmp_path / "in", 12)
    bad = tmp_path / "in" / "broken.png"
    bad.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)        # truncated PNG
    rep = icd.filter_files(client, [tmp_path / "in"], tmp_path / "out", "gaussian:5",
                           border="mirror", threads=1)
    assert len(rep.ok) == 12 and len(rep.failed) == 1, rep.summary()
    assert rep.failed[0][0].endswith("broken.png") and "broken.png" in rep.failed[0][1]
    _check_outputs(paths, tmp_path / "out", "gaussian:5", border="mirror")
    # a second run refuses every existing output, per file, and writes nothing
    rep2 = icd.filter_files(client, paths, tmp_path / "out", "gaussian:5")
    assert len(rep2.skipped) == 12 and not rep2.ok and not rep2.failed
    rep3 = icd.filter_files(client, paths[:3], tmp_path / "out", "sharpen", overwrite=True)
    assert len(rep3.ok) == 3
    assert np.array_equal(imgconv.load(tmp_path / "out" / paths[0].name),
                          imgconv.convolve(imgconv.load(paths[0]), "sharpen"))


def test_worker_killed_mid_batch(cluster, tmp_path):
    c, client = cluster
    paths = _inputs(tmp_path / "in", 40)
    out = tmp_path / "out"
    done = {}

    def killer():
        t0 = time.time()
        while time.time() - t0 < 60:   # wait until the batch is under way
            if out.exists() and len([n for n in os.listdir(out) if not n.startswith(".")]) >= 6:
                break
            time.sleep(0.05)
        pids = client.run(os.getpid)   # {worker address: pid}
        victim = sorted(pids)[0]
        os.kill(pids[victim], signal.SIGKILL)
        done["killed"] = victim

    th = threading.Thread(target=killer)
    th.start()
    t0 = time.time()
    rep = icd.filter_files(client, paths, out, "box:5", border="wrap", threads=1, _delay=0.15)
    th.join()
    assert "killed" in done, "the worker was not killed"
    assert time.time() - t0 < 240
    assert len(rep.ok) == 40 and not rep.failed and not rep.skipped, rep.summary()
    _check_outputs(paths, out, "box:5", border="wrap")      # exactly once each, no temporaries
    client.wait_for_workers(2, timeout=60)                   # the nanny restarted it


def test_dask_array(cluster):
    da = pytest.importorskip("dask.array")
    _, client = cluster
    stack = np.stack([imgconv.chart(90, 70, 3, seed=s) for s in range(7)])
    darr = da.from_array(stack, chunks=(3, 45, 35, 3))        # spatial chunks get merged
    res = icd.convolve_array(darr, "gaussian:7", border="reflect", threads=1)
    got = client.compute(res).result(timeout=120)
    want = np.stack([imgconv.convolve(a, "gaussian:7", border="reflect") for a in stack])
    assert np.array_equal(got, want)
    k = np.array([[0, -1, 0], [-1, 5, -1], [0, -1, 0]], dtype=float)
    got2 = icd.convolve_array(stack[:, :, :, 0], k, threads=1).compute(scheduler="sync")
    assert np.array_equal(got2, np.stack([imgconv.convolve(a[:, :, 0], "sharpen") for a in stack]))
