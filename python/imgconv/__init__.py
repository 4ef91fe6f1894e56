"""imgconv: 2D image convolution on CUDA GPUs and SIMD CPUs.

    import imgconv
    out = imgconv.convolve(image, "gaussian:5", border="mirror")

`image` is an H x W or H x W x C (C = 1..4) uint8 array: a NumPy array (or
anything with the buffer protocol) is filtered in place in memory, without a
copy when its rows hold packed pixels (any row pitch, e.g. a crop of a larger
array); a CuPy array or a PyTorch CUDA tensor (anything with
``__cuda_array_interface__``, or ``__dlpack__`` when CuPy is present) is
filtered on its GPU by a CUDA backend, without a round trip through the host.
The result has the same kind, shape and dtype. The kernel is kernel text
(``"gaussian:5"``, ``"1 2 1; 2 4 2; 1 2 1 / 16"``, ``"@file.mat"``; see
``named_kernels()``), a 2D array of coefficients, or a :class:`Kernel`.

Semantics are those of the C library and the CLI (docs/definitions.md):
convolution by default (``correlate=True`` for correlation), float32 sums,
round to nearest even, clamp to 0..255; a kernel's own offset (libvips .mat
OFFSET) is added to ``bias`` as the CLI does. Failures raise :class:`Error`
with the library's one-line message. Filtering releases the GIL.
"""
import threading

import numpy as np

from . import _imgconv

__all__ = ["Error", "Kernel", "Context", "context", "convolve", "load", "save", "chart",
           "backends", "named_kernels", "version", "__version__"]


class Error(RuntimeError):
    """A failure reported by the C library; str() is its one-line message and
    `status` the ic_status code (see STATUS)."""
    status = 0


_imgconv._set_error(Error)
STATUS = _imgconv.status_names()
version = _imgconv.version
__version__ = _imgconv.version()


class Kernel(_imgconv.Kernel):
    """A convolution kernel: Kernel("gaussian:5"), Kernel("1 2 1 / 4"),
    Kernel("@sharpen.mat") or Kernel(array2d, divisor=1.0) (odd sizes up to
    255, coefficients in correlation orientation, as matrix text is)."""

    def __init__(self, source, divisor=1.0):
        if isinstance(source, str):
            super().__init__(source)
            return
        coef = np.asarray(source)
        if coef.ndim != 2:
            raise ValueError("a kernel array must be 2D (rows x columns)")
        if not np.issubdtype(coef.dtype, np.number):
            raise TypeError("kernel coefficients must be numbers")
        coef = np.ascontiguousarray(coef, dtype=np.float32)
        super().__init__(coef.tobytes(), coef.shape[1], coef.shape[0], float(divisor))

    @property
    def shape(self):
        return (self.height, self.width)

    @property
    def weights(self):
        """Effective weights (coefficient / divisor), float64, shape (height, width)."""
        return np.frombuffer(self.weights_bytes(), dtype=np.float64).reshape(self.shape).copy()

    def __repr__(self):
        return f"imgconv.Kernel({self.name!r}, {self.height}x{self.width})"


_kernel_cache = {}
_kernel_lock = threading.Lock()


def _kernel(k):
    if isinstance(k, _imgconv.Kernel):
        return k
    if isinstance(k, str) and not k.startswith("@"):
        with _kernel_lock:
            found = _kernel_cache.get(k)
        if found is None:
            found = Kernel(k)
            with _kernel_lock:
                if len(_kernel_cache) > 256:
                    _kernel_cache.clear()
                _kernel_cache[k] = found
        return found
    return Kernel(k)


def _device_of(x):
    """CUDA device ordinal of an array with __cuda_array_interface__."""
    if hasattr(x, "__dlpack_device__"):
        kind, dev = x.__dlpack_device__()
        return int(dev)
    dev = getattr(x, "device", None)
    for attr in ("id", "index"):
        if dev is not None and getattr(dev, attr, None) is not None:
            return int(getattr(dev, attr))
    return 0


def _cuda_interface(x):
    cai = getattr(x, "__cuda_array_interface__", None)
    if cai is None:
        return None
    shape = tuple(cai["shape"])
    if cai["typestr"] not in ("|u1", "<u1", ">u1"):
        raise TypeError(f"device array: samples must be uint8, not {cai['typestr']}")
    if len(shape) not in (2, 3) or (len(shape) == 3 and not 1 <= shape[2] <= 4):
        raise ValueError("device array: expected H x W or H x W x C (C = 1..4)")
    c = shape[2] if len(shape) == 3 else 1
    strides = cai.get("strides")
    if strides is None:
        pitch = shape[1] * c
    else:
        if strides[1] != c or (len(shape) == 3 and strides[2] != 1) or strides[0] < shape[1] * c:
            raise ValueError(f"device array: strides {strides} are not rows of packed pixels"
                             " (make it contiguous first)")
        pitch = strides[0]
    stream = cai.get("stream")
    stream = 0 if stream in (None, 1) else int(stream)  # 1: the legacy default stream
    return cai["data"][0], shape, c, pitch, stream


def _empty_device_like(x):
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        with cupy.cuda.Device(_device_of(x)):
            return cupy.empty(x.shape, dtype=cupy.uint8)
    if mod == "torch":
        import torch
        return torch.empty(tuple(x.shape), dtype=torch.uint8, device=x.device)
    raise TypeError(f"cannot allocate an output like {type(x).__name__}; pass out=")


def _as_device_array(x):
    """x itself when it has __cuda_array_interface__; a CuPy view of a DLPack
    GPU array otherwise; None for host arrays."""
    if hasattr(x, "__cuda_array_interface__"):
        return x
    if hasattr(x, "__dlpack__") and hasattr(x, "__dlpack_device__"):
        kind, _ = x.__dlpack_device__()
        if kind in (2, 13):  # kDLCUDA, kDLCUDAManaged
            try:
                import cupy
            except ImportError as e:
                raise TypeError("a DLPack CUDA array needs CuPy installed (or pass an array with"
                                " __cuda_array_interface__)") from e
            return cupy.from_dlpack(x)
    return None


class Context(_imgconv.Context):
    """A backend and its resources (threads, device buffers, FFT plans),
    reused across calls: Context("cpu", threads=2), Context("cuda", device=1).
    One context serves one call at a time (calls from several threads wait
    their turn); use one per thread for parallel filtering (context() does)."""

    def __init__(self, backend="auto", threads=0, device=0):
        super().__init__(backend, threads, device)

    def __repr__(self):
        return f"imgconv.Context({self.backend!r})"

    def convolve(self, image, kernel, *, border="mirror", border_value=0.0, correlate=False,
                 bias=0.0, alpha="auto", out=None):
        """Filters `image` with `kernel` into `out` (allocated when None) and
        returns it. See the module documentation for the arguments."""
        k = _kernel(kernel)
        args = (str(border), float(border_value), bool(correlate), float(bias) + k.offset, str(alpha))
        dev = _as_device_array(image)
        if dev is not None:
            ptr, shape, c, pitch, stream = _cuda_interface(dev)
            if out is None:
                out = _empty_device_like(dev)
            optr, oshape, oc, opitch, _ = _cuda_interface(out)
            if oshape != shape:
                raise ValueError(f"out has shape {oshape}, the image {shape}")
            self.convolve_device(ptr, optr, k, shape[0], shape[1], c, pitch, opitch,
                                 _device_of(dev), stream, *args)
            return out
        src = np.asarray(image)
        if src.dtype not in (np.uint8, np.uint16):
            raise TypeError(f"image samples must be uint8 or uint16, not {src.dtype}")
        if not _wrappable(src):
            src = np.ascontiguousarray(src)
        if out is None:
            out = np.empty(src.shape, dtype=src.dtype)
        elif not isinstance(out, np.ndarray) or out.shape != src.shape or out.dtype != src.dtype:
            raise ValueError(f"out must be a {src.dtype} NumPy array of the image's shape")
        if np.shares_memory(src, out):
            raise ValueError("out overlaps the image (filtering cannot be done in place)")
        super().convolve(src, out, k, *args)
        return out


def _wrappable(a):
    """True when the library can take `a` as it is (rows of packed pixels)."""
    if a.ndim not in (2, 3):
        return False
    c = a.shape[2] if a.ndim == 3 else 1
    s, e = a.strides, a.itemsize
    return (a.dtype.isnative and s[1] == c * e and (a.ndim == 2 or s[2] == e)
            and s[0] >= a.shape[1] * c * e and s[0] % e == 0)


_local = threading.local()


def context(backend="auto", threads=0, device=0):
    """The calling thread's cached Context for (backend, threads, device),
    created on first use: repeated calls reuse its buffers and plans."""
    cache = getattr(_local, "contexts", None)
    if cache is None:
        cache = _local.contexts = {}
    key = (backend, threads, device)
    ctx = cache.get(key)
    if ctx is None:
        ctx = cache[key] = Context(backend, threads, device)
    return ctx


def convolve(image, kernel, border="mirror", backend="auto", correlate=False, bias=0.0,
             alpha="auto", border_value=0.0, threads=0, device=None, out=None):
    """Filters an image (H x W or H x W x C uint8, or uint16 NumPy arrays on
    the CPU backends; NumPy, CuPy or PyTorch CUDA) with a kernel and returns
    the result (of the image's dtype).

    border: constant (border_value), replicate/nearest, mirror (scipy "mirror",
    OpenCV's default), reflect (scipy "reflect"), wrap (scipy "grid-wrap").
    backend: "auto", "cpu", "seq", "cuda", ... (see backends()); device
    arrays use the device they live on. threads: CPU worker threads (0: one
    per core). out: an array to write into (same shape, not overlapping).
    The context comes from context(backend, threads, device), so repeated
    calls reuse it."""
    dev = _as_device_array(image)
    if device is None:
        device = _device_of(dev) if dev is not None else 0
    ctx = context(backend, threads, device)
    return ctx.convolve(image, kernel, border=border, border_value=border_value,
                        correlate=correlate, bias=bias, alpha=alpha, out=out)


def load(path, channels=0):
    """Loads a PNG, JPEG, TIFF, WebP or PGM/PPM file as an H x W (grey) or
    H x W x C array: uint16 for 16-bit files (16-bit PNG and TIFF, PNM with
    maxval > 255), uint8 otherwise; channels=1..4 converts on load."""
    buf, h, w, c, bits = _imgconv.load(path, channels)
    a = np.frombuffer(buf, dtype=np.uint16 if bits == 16 else np.uint8)
    return a.reshape((h, w) if c == 1 else (h, w, c))


def save(path, image, quality=0):
    """Saves an H x W [x C] uint8 or uint16 array; the format follows the
    extension (.png, .jpg/.jpeg, .tif, .webp, .pgm/.ppm/.pnm). uint16 is kept
    by PNG, TIFF and PNM and written as round(v / 257) by JPEG and WebP.
    Written to a temporary file and renamed, so a failure never leaves a
    partial file. quality: JPEG 1..100 (0: 92)."""
    a = np.asarray(image)
    if a.dtype not in (np.uint8, np.uint16):
        raise TypeError(f"image samples must be uint8 or uint16, not {a.dtype}")
    if not _wrappable(a):
        a = np.ascontiguousarray(a)
    _imgconv.save(a, path, int(quality))


def chart(height, width, channels=3, seed=1):
    """The deterministic test chart of `imgconv --chart` as an array."""
    buf = _imgconv.chart(height, width, channels, seed)
    a = np.frombuffer(buf, dtype=np.uint8)
    return a.reshape((height, width) if channels == 1 else (height, width, channels))


def backends():
    """[(name, summary, usable, why_not)] for every backend built in."""
    return _imgconv.backends()


def backend_auto():
    """The backend "auto" picks on this machine."""
    return _imgconv.backend_auto()


def named_kernels():
    """[(name, arguments, summary)] of the named kernels."""
    return _imgconv.named_kernels()
