"""CuPy arrays and PyTorch CUDA tensors filtered on their GPU through
ic_image_wrap_device (no host round trip: the result is a device array of the
same kind, and a pitched view is filtered in place). Skipped without a CUDA build
or a GPU (and the CuPy / PyTorch cases without those packages; a ctypes
device buffer covers the path without them); on the GPU machine:
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


class CudaBuffer:
    """A pitched uint8 device buffer through the CUDA runtime (ctypes), with
    __cuda_array_interface__: the device path tested without CuPy/PyTorch."""

    rt = None

    @classmethod
    def runtime(cls):
        if cls.rt is None:
            import ctypes
            import ctypes.util
            names = [ctypes.util.find_library("cudart"), "libcudart.so", "/usr/local/cuda/lib64/libcudart.so"]
            for n in filter(None, names):
                try:
                    cls.rt = ctypes.CDLL(n)
                    break
                except OSError:
                    continue
            else:
                pytest.skip("no libcudart.so to allocate device memory with")
        return cls.rt

    def __init__(self, shape, pitch):
        import ctypes
        self.shape, self.pitch = shape, pitch
        self.ptr = ctypes.c_void_p()
        rt = self.runtime()
        assert rt.cudaMalloc(ctypes.byref(self.ptr), ctypes.c_size_t(pitch * shape[0])) == 0

    @property
    def __cuda_array_interface__(self):
        c = self.shape[2] if len(self.shape) == 3 else 1
        strides = (self.pitch, c, 1)[:len(self.shape)]
        return {"shape": self.shape, "typestr": "|u1", "data": (self.ptr.value, False),
                "strides": strides, "version": 3}

    def copy(self, host, to_device):
        import ctypes
        row = host.shape[1] * (host.shape[2] if host.ndim == 3 else 1)
        # cudaMemcpy2D(dst, dpitch, src, spitch, width, height, kind)
        dev, hp = ctypes.c_void_p(self.ptr.value), host.ctypes.data_as(ctypes.c_void_p)
        args = (dev, self.pitch, hp, host.strides[0]) if to_device else (hp, host.strides[0], dev, self.pitch)
        kind = 1 if to_device else 2
        st = self.runtime().cudaMemcpy2D(args[0], ctypes.c_size_t(args[1]), args[2], ctypes.c_size_t(args[3]),
                                         ctypes.c_size_t(row), ctypes.c_size_t(host.shape[0]), kind)
        assert st == 0, f"cudaMemcpy2D: {st}"

    def __del__(self):
        if self.rt is not None and self.ptr:
            self.rt.cudaFree(self.ptr)


@needs_cuda
@pytest.mark.parametrize("backend", ["cuda", "cuda-global"])
def test_pitched_device_buffers_without_cupy(backend):
    host = imgconv.chart(301, 257, 3, seed=12)
    src = CudaBuffer(host.shape, 1024)
    dst = CudaBuffer(host.shape, 896)
    src.copy(host, True)
    assert imgconv.convolve(src, "gaussian:5", border="wrap", backend=backend, out=dst) is dst
    got = np.empty_like(host)
    dst.copy(got, False)
    _close(got, imgconv.convolve(host, "gaussian:5", border="wrap", backend="cpu"))


def test_device_arrays_need_a_cuda_backend():
    class FakeDevice:  # what a CPU-only build sees from a device array
        __cuda_array_interface__ = {"shape": (8, 8), "typestr": "|u1", "data": (1 << 40, False),
                                    "strides": None, "version": 3}
    with pytest.raises(imgconv.Error):
        imgconv.convolve(FakeDevice(), "box", backend="cpu", out=FakeDevice())
