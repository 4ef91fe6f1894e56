"""float32 CuPy arrays and PyTorch CUDA tensors filtered on their GPU with no
host round trip (ic_image_wrap_device_type), equal to the CPU result within
twice the float32 bound of docs/definitions.md ("Float samples"): each side
is within (n + 20) * 2**-24 * S of the exact value. A CUDA backend that does
not filter float32 raises imgconv.Error naming itself. Skipped without a
usable CUDA backend (and per package without CuPy / PyTorch); on the GPU
machine:
    IMGCONV_BUILD_DIR=<cuda build> python -m pytest python/tests/test_float32_device.py
"""
import numpy as np
import pytest

import imgconv

U = 2.0 ** -24


def _cuda_usable():
    return any(name.startswith("cuda") and usable for name, _, usable, _ in imgconv.backends())


needs_cuda = pytest.mark.skipif(not _cuda_usable(), reason="no usable CUDA backend in this build/machine")


def _bound(img, text):
    w = np.abs(imgconv.Kernel(text).weights)
    kh, kw = w.shape
    p = np.pad(np.abs(img.astype(np.float64)), ((kh // 2,) * 2, (kw // 2,) * 2, (0, 0)), mode="reflect")
    s = sum(w[j, i] * p[j:j + img.shape[0], i:i + img.shape[1]] for j in range(kh) for i in range(kw))
    return 2 * (w.size + 20) * U * s


def _filter_or_refused(x, text, backend):
    try:
        return imgconv.convolve(x, text, backend=backend)
    except imgconv.Error as e:
        assert "float32" in str(e) and backend in str(e), e
        pytest.skip(f"{backend} refuses float32: {e}")


@needs_cuda
@pytest.mark.parametrize("text", ["gaussian:3", "gaussian:9", "sobel-x"])
def test_cupy_float32(text):
    cp = pytest.importorskip("cupy")
    host = np.random.default_rng(4).random((257, 389, 3), dtype=np.float32) * 2 - 0.5
    dev = cp.asarray(host)
    out = _filter_or_refused(dev, text, "cuda")
    assert isinstance(out, cp.ndarray) and out.dtype == cp.float32 and out.shape == host.shape
    ref = imgconv.convolve(host, text, backend="cpu")
    assert np.all(np.abs(cp.asnumpy(out) - ref) <= _bound(host, text))


@needs_cuda
def test_torch_float32_zero_copy():
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("PyTorch without CUDA")
    host = np.random.default_rng(5).random((128, 200, 3), dtype=np.float32)
    x = torch.as_tensor(host, device="cuda")
    out = torch.full_like(x, 7.0)
    res = _filter_or_refused(x, "gaussian:9", "cuda")
    imgconv.convolve(x, "gaussian:9", backend="cuda", out=out)
    assert res.dtype == torch.float32 and res.device == x.device
    assert torch.equal(res, out)  # same device, same backend: the same samples
    ref = imgconv.convolve(host, "gaussian:9", backend="cpu")
    assert np.all(np.abs(out.cpu().numpy() - ref) <= _bound(host, "gaussian:9"))
