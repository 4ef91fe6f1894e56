"""CuPy arrays and PyTorch CUDA tensors filtered on their GPU through
ic_image_wrap_device (no host round trip: the result is a device array of the
same kind, and a pitched view is filtered in place). Skipped without CuPy /
PyTorch, a CUDA build or a GPU; on the GPU machine:
    IMGCONV_BUILD_DIR=<cuda build> python -m pytest python/tests/test_device.py
"""
import numpy as np
import pytest

import imgconv


def _cuda_usable():
    return any(name.startswith("cuda") and usable for name, _, usable, _ in imgconv.backends())


needs_cuda = pytest.mark.skipif(not _cuda_usable(), reason="no usable CUDA backend in this build/machine")


def _close(a, b):
    d = np.abs(a.astype(int) - b.astype(int))
    assert d.max() <= 1 and np.mean(d == 0) >= 0.999


@needs_cuda
@pytest.mark.parametrize("backend", ["cuda", "cuda-global", "cuda-tiled-halo"])
def test_cupy(backend):
    cp = pytest.importorskip("cupy")
    host = imgconv.chart(517, 733, 3, seed=6)
    dev = cp.asarray(host)
    out = imgconv.convolve(dev, "gaussian:7", border="mirror", backend=backend)
    assert isinstance(out, cp.ndarray) and out.shape == host.shape
    _close(cp.asnumpy(out), imgconv.convolve(host, "gaussian:7", border="mirror", backend="cpu"))
    # a pitched view of a larger device array, written into a view
    big = cp.zeros((600, 800, 3), dtype=cp.uint8)
    big[10:527, 20:753] = dev
    res = cp.full((600, 800, 3), 9, dtype=cp.uint8)
    imgconv.convolve(big[10:527, 20:753], "sobel-x", border="reflect", backend=backend,
                     out=res[30:547, 40:773])
    want = imgconv.convolve(host, "sobel-x", border="reflect", backend="cpu")
    _close(cp.asnumpy(res[30:547, 40:773]), want)
    assert int((res[:30] != 9).sum()) == 0


@needs_cuda
def test_torch():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("torch without CUDA")
    host = imgconv.chart(300, 401, 1, seed=2)
    t = torch.from_numpy(host).cuda()
    out = imgconv.convolve(t, "box:5", border="replicate")
    assert isinstance(out, torch.Tensor) and out.is_cuda
    _close(out.cpu().numpy(), imgconv.convolve(host, "box:5", border="replicate", backend="cpu"))


def test_device_arrays_need_a_cuda_backend():
    class FakeDevice:  # what a CPU-only build sees from a device array
        __cuda_array_interface__ = {"shape": (8, 8), "typestr": "|u1", "data": (1 << 40, False),
                                    "strides": None, "version": 3}
    with pytest.raises(imgconv.Error):
        imgconv.convolve(FakeDevice(), "box", backend="cpu", out=FakeDevice())
