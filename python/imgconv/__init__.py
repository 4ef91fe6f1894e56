"""imgconv: 2D image convolution on CUDA GPUs and SIMD CPUs.

    import imgconv
    out = imgconv.convolve(image, "gaussian:5", border="mirror")
    out = imgconv.gaussian(image, sigma=2)

`image` is an H x W or H x W x C (C = 1..4) uint8, uint16 or float32 array. A NumPy
array (or anything with the buffer protocol) is read where it lies, without
a copy when its rows hold packed pixels (any row pitch, e.g. a crop of a
larger array); a CuPy array or a PyTorch CUDA tensor (anything with
``__cuda_array_interface__``, or ``__dlpack__`` when CuPy is present) is
filtered on its GPU by a CUDA backend, without a round trip through the host.
The result is a new array of the same kind, shape and dtype (or ``out=``);
the input is never modified. The kernel is kernel text (``"gaussian:5"``,
``"1 2 1; 2 4 2; 1 2 1 / 16"``, ``"@file.mat"``; see ``named_kernels()``), a
2D array of coefficients, or a :class:`Kernel`.

Semantics are those of the C library and the CLI (docs/definitions.md):
convolution by default (``correlate=True`` for correlation), float32 sums,
round to nearest even, clamp to the sample range (float32 images get the sums
themselves: no rounding, no clamping, NaN and inf propagate as IEEE says;
docs/python.md, "Float32"); the default border is
mirror; a kernel's own offset (libvips .mat OFFSET) is added to ``bias`` as
the CLI does. Filtering releases the GIL.

Errors: bad arguments (a bad border name, kernel text, shape) raise
:class:`InvalidArgument`, a ValueError; a missing or unreadable file raises
FileNotFoundError, PermissionError or IsADirectoryError; an image over the
limits raises :class:`LimitError`, a MemoryError; anything else the library
reports raises :class:`Error` (a RuntimeError). All but the OS errors are
subclasses of :class:`Error`, whose ``status`` is the library's ic_status code.
"""
from __future__ import annotations

import errno as _errno
import os as _os
import stat as _stat
import struct as _struct
import threading as _threading
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as _np

from . import _imgconv
from .client import Client, ServerError

__all__ = ["Error", "InvalidArgument", "LimitError", "FormatError", "Image", "Metadata",
           "Kernel", "Context",
           "context", "convolve", "gaussian", "box", "unsharp", "sharpen", "sobel", "load", "save",
           "chart", "backends", "backend_auto", "named_kernels", "version", "STATUS",
           "Client", "ServerError", "__version__"]


class Error(RuntimeError):
    """A failure reported by the C library; str() is its one-line message and
    `status` the ic_status code (see STATUS)."""
    status = 0


class InvalidArgument(Error, ValueError):
    """A bad argument: an unknown border or backend name, malformed kernel
    text, an array of the wrong shape."""


class LimitError(Error, MemoryError):
    """The image or kernel is over a limit, or memory ran out."""


class FormatError(Error):
    """A file is corrupt, truncated or of an unknown format."""


# ic_status codes (include/imgconv.h) and the class each one raises.
_INVALID_ARG, _NOMEM, _TOO_LARGE, _KERNEL, _IO, _FORMAT = 1, 2, 3, 4, 5, 6
_CLASS_OF = {_INVALID_ARG: InvalidArgument, _KERNEL: InvalidArgument, _NOMEM: LimitError,
             _TOO_LARGE: LimitError, _FORMAT: FormatError}


def _error(status: int, message: str) -> Error:
    """The exception for a library failure (called by the C extension)."""
    exc = _CLASS_OF.get(status, Error)(message)
    exc.status = status
    return exc


_imgconv._set_error(_error)
STATUS = _imgconv.status_names()
_U8, _F32 = 0, 2  # ic_sample_type of device arrays
version = _imgconv.version
__version__ = _imgconv.version()

PathLike = Union[str, "_os.PathLike[str]"]


class Kernel(_imgconv.Kernel):
    """A convolution kernel: Kernel("gaussian:5"), Kernel("1 2 1 / 4"),
    Kernel("@sharpen.mat") or Kernel(array2d, divisor=1.0) (odd sizes up to
    255, coefficients in correlation orientation, as matrix text is)."""

    def __init__(self, source: Union[str, Any], divisor: float = 1.0) -> None:
        if isinstance(source, str):
            super().__init__(source)
            return
        coef = _np.asarray(source)
        if coef.ndim != 2:
            raise ValueError("a kernel array must be 2D (rows x columns)")
        if not _np.issubdtype(coef.dtype, _np.number):
            raise TypeError("kernel coefficients must be numbers")
        coef = _np.ascontiguousarray(coef, dtype=_np.float32)
        super().__init__(coef.tobytes(), coef.shape[1], coef.shape[0], float(divisor))

    @property
    def shape(self):
        return (self.height, self.width)

    @property
    def weights(self):
        """Effective weights (coefficient / divisor), float64, shape (height, width)."""
        return _np.frombuffer(self.weights_bytes(), dtype=_np.float64).reshape(self.shape).copy()

    def __repr__(self):
        return f"imgconv.Kernel({self.name!r}, {self.height}x{self.width})"


_kernel_cache = {}
_kernel_lock = _threading.Lock()


def _is_chain(k) -> bool:
    """A list or tuple of kernels (text, Kernel or 2D arrays) is a chain; a
    list of lists of numbers is one kernel's matrix."""
    return isinstance(k, (list, tuple)) and all(
        isinstance(x, (str, _imgconv.Kernel, _np.ndarray)) for x in k)


def _kernels(k):
    """(what the extension takes: a Kernel or a tuple of them, the offsets' sum)."""
    if _is_chain(k):
        ks = tuple(_kernel(x) for x in k)
        return ks, sum(x.offset for x in ks)
    one = _kernel(k)
    return one, one.offset


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
    little = _struct.pack("=H", 1) == b"\x01\x00"
    f4 = "<f4" if little else ">f4"
    if cai["typestr"] in ("|u1", "<u1", ">u1"):
        kind, e = _U8, 1
    elif cai["typestr"] == f4:
        kind, e = _F32, 4
    else:
        raise TypeError(f"device array: samples must be uint8 or float32, not {cai['typestr']}")
    if len(shape) not in (2, 3) or (len(shape) == 3 and not 1 <= shape[2] <= 4):
        raise ValueError("device array: expected H x W or H x W x C (C = 1..4)")
    c = shape[2] if len(shape) == 3 else 1
    strides = cai.get("strides")
    if strides is None:
        pitch = shape[1] * c * e
    else:
        if (strides[1] != c * e or (len(shape) == 3 and strides[2] != e)
                or strides[0] < shape[1] * c * e or strides[0] % e):
            raise ValueError(f"device array: strides {strides} are not rows of packed pixels"
                             " (make it contiguous first)")
        pitch = strides[0]
    stream = cai.get("stream")
    stream = 0 if stream in (None, 1) else int(stream)  # 1: the legacy default stream
    return cai["data"][0], shape, c, pitch, stream, kind


def _empty_device_like(x):
    mod = type(x).__module__.split(".")[0]
    if mod == "cupy":
        import cupy
        with cupy.cuda.Device(_device_of(x)):
            return cupy.empty(x.shape, dtype=x.dtype)
    if mod == "torch":
        import torch
        return torch.empty(tuple(x.shape), dtype=x.dtype, device=x.device)
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

    def __init__(self, backend: str = "auto", threads: int = 0, device: int = 0) -> None:
        super().__init__(backend, threads, device)

    def __repr__(self):
        return f"imgconv.Context({self.backend!r})"

    def convolve(self, image: Any, kernel: Union[str, "Kernel", Any], *, border: str = "mirror",
                 border_value: float = 0.0, correlate: bool = False, bias: float = 0.0,
                 alpha: str = "auto", abs: bool = False, out: Any = None) -> Any:
        """Filters `image` with `kernel` (or a list of kernels: a chain) into
        `out` (allocated when None) and returns it. See the module
        documentation for the arguments."""
        k, offset = _kernels(kernel)
        args = (str(border), float(border_value), bool(correlate), float(bias) + offset, str(alpha),
                bool(abs))
        dev = _as_device_array(image)
        if dev is not None:
            ptr, shape, c, pitch, stream, kind = _cuda_interface(dev)
            if out is None:
                out = _empty_device_like(dev)
            optr, oshape, oc, opitch, _, okind = _cuda_interface(out)
            if oshape != shape or okind != kind:
                raise ValueError(f"out has shape {oshape}, the image {shape}, or another dtype")
            self.convolve_device(ptr, optr, k, shape[0], shape[1], c, pitch, opitch,
                                 _device_of(dev), stream, *args, kind)
            return out
        src = _np.asarray(image)
        if src.dtype not in (_np.uint8, _np.uint16, _np.float32):
            raise TypeError(f"image samples must be uint8, uint16 or float32, not {src.dtype}")
        if not _wrappable(src):
            src = _np.ascontiguousarray(src)
        if out is None:
            out = _np.empty(src.shape, dtype=src.dtype)
            if isinstance(image, Image):
                out = out.view(Image)
                out.metadata = image.metadata
        elif not isinstance(out, _np.ndarray) or out.shape != src.shape or out.dtype != src.dtype:
            raise ValueError(f"out must be a {src.dtype} NumPy array of the image's shape")
        if _np.shares_memory(src, out):
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


_local = _threading.local()


def context(backend: str = "auto", threads: int = 0, device: int = 0) -> "Context":
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


def convolve(image: Any, kernel: Union[str, "Kernel", Any], border: str = "mirror",
             backend: str = "auto", correlate: bool = False, bias: float = 0.0,
             alpha: str = "auto", border_value: float = 0.0, threads: int = 0,
             device: Optional[int] = None, out: Any = None, abs: bool = False) -> Any:
    """Filters an image (H x W or H x W x C uint8 or float32; uint16 too as
    NumPy arrays; NumPy, CuPy or PyTorch CUDA) with a kernel and returns the
    result (of the image's dtype; float32 unrounded and unclamped).

    border: constant (border_value), replicate/nearest, mirror (scipy "mirror",
    OpenCV's default), reflect (scipy "reflect"), wrap (scipy "grid-wrap").
    backend: "auto", "cpu", "seq", "cuda", ... (see backends()); device
    arrays use the device they live on. threads: CPU worker threads (0: one
    per core). out: an array to write into (same shape, not overlapping).
    The context comes from context(backend, threads, device), so repeated
    calls reuse it.

    kernel may be a list of kernels (text, Kernel or 2D arrays): a chain,
    applied in order in one call with the image kept in float32 between the
    steps (docs/definitions.md#chains). abs=True takes |weighted sum| before
    the bias and the rounding (docs/definitions.md#edge-strength)."""
    dev = _as_device_array(image)
    if device is None:
        device = _device_of(dev) if dev is not None else 0
    ctx = context(backend, threads, device)
    return ctx.convolve(image, kernel, border=border, border_value=border_value,
                        correlate=correlate, bias=bias, alpha=alpha, abs=abs, out=out)


def _check_readable(path: PathLike) -> str:
    """The path as str, or the OSError that Python's own open() would raise
    (checked without opening, so a FIFO does not block)."""
    path = _os.fspath(path)
    st = _os.stat(path)
    if _stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(_errno.EISDIR, _os.strerror(_errno.EISDIR), path)
    if not _os.access(path, _os.R_OK):
        raise PermissionError(_errno.EACCES, _os.strerror(_errno.EACCES), path)
    return path


def _check_writable(path: PathLike) -> str:
    path = _os.fspath(path)
    if _os.path.isdir(path):
        raise IsADirectoryError(_errno.EISDIR, _os.strerror(_errno.EISDIR), path)
    folder = _os.path.dirname(path) or "."
    if not _os.path.exists(folder):
        raise FileNotFoundError(_errno.ENOENT, _os.strerror(_errno.ENOENT), folder)
    if not _os.path.isdir(folder):
        raise NotADirectoryError(_errno.ENOTDIR, _os.strerror(_errno.ENOTDIR), folder)
    if not _os.access(folder, _os.W_OK | _os.X_OK):
        raise PermissionError(_errno.EACCES, _os.strerror(_errno.EACCES), folder)
    return path


class Metadata:
    """What a file carries besides its pixels: the ICC profile and the EXIF
    block (bytes, or None). Pixels are never rotated: `orientation` is the
    EXIF orientation (1..8) that viewers apply, 0 when there is none."""

    __slots__ = ("icc", "exif")

    def __init__(self, icc: Optional[bytes] = None, exif: Optional[bytes] = None) -> None:
        self.icc = bytes(icc) if icc else None
        self.exif = bytes(exif) if exif else None

    @property
    def orientation(self) -> int:
        exif = self.exif
        if not exif or len(exif) < 8 or exif[:2] not in (b"II", b"MM"):
            return 0
        order = "<" if exif[:2] == b"II" else ">"
        try:
            ifd = _struct.unpack_from(order + "I", exif, 4)[0]
            (n,) = _struct.unpack_from(order + "H", exif, ifd)
            for i in range(n):
                tag, kind, count, value = _struct.unpack_from(order + "HHIH", exif,
                                                              ifd + 2 + 12 * i)
                if tag == 0x0112 and kind == 3 and count == 1:
                    return value if 1 <= value <= 8 else 0
        except _struct.error:
            return 0
        return 0

    def __bool__(self) -> bool:
        return bool(self.icc or self.exif)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Metadata) and (self.icc, self.exif) == (other.icc, other.exif)

    def __repr__(self) -> str:
        icc = f"{len(self.icc)} bytes" if self.icc else None
        exif = f"{len(self.exif)} bytes" if self.exif else None
        return f"imgconv.Metadata(icc={icc}, exif={exif}, orientation={self.orientation})"


class Image(_np.ndarray):
    """The pixels of a loaded file (a NumPy array: numpy.asarray, DLPack and
    every array operation see the pixels) with the file's `metadata`.
    Filtering an Image returns an Image with the same metadata, and save()
    writes it back, as the CLI does."""

    metadata: Metadata

    def __array_finalize__(self, obj: Any) -> None:
        self.metadata = getattr(obj, "metadata", None) or Metadata()


def load(path: PathLike, channels: int = 0) -> Image:
    """Loads a PNG, JPEG, TIFF, WebP or PGM/PPM file as an H x W (grey) or
    H x W x C Image (a NumPy array with .metadata: the ICC profile and EXIF
    block): uint16 for 16-bit files (16-bit PNG and TIFF, PNM with maxval >
    255), float32 for float files (PFM, float TIFF, float32 .npy), uint8
    otherwise; channels=1..4 converts on load.
    Raises FileNotFoundError, PermissionError or IsADirectoryError as open()
    does, FormatError for a corrupt or unknown file, LimitError over the
    limits."""
    buf, h, w, c, bits, icc, exif = _imgconv.load(_check_readable(path), int(channels))
    a = _np.frombuffer(buf, dtype={16: _np.uint16, 32: _np.float32}.get(bits, _np.uint8))
    img = a.reshape((h, w) if c == 1 else (h, w, c)).view(Image)
    img.metadata = Metadata(icc, exif)
    return img


def save(path: PathLike, image: Any, quality: int = 0,
         metadata: Optional[Metadata] = None) -> None:
    """Saves an H x W [x C] uint8, uint16 or float32 array; the format
    follows the extension (.png, .jpg/.jpeg, .tif, .webp, .pgm/.ppm/.pnm,
    .pfm, .npy). uint16 is kept by PNG, TIFF, PNM and npy and written as
    round(v / 257) by JPEG and WebP; float32 is kept by TIFF, PFM and npy and
    written clamped to 0..1 as 16 bits (PNG, PNM) or 8 bits (JPEG, WebP).
    The ICC profile and EXIF block of `metadata` (by default the image's own,
    for an Image from load()) are written where the format holds them.
    Written to a temporary file and renamed, so a failure never leaves a
    partial file. quality: JPEG 1..100 (0: 92). Raises FileNotFoundError or
    PermissionError for a missing or read-only folder."""
    if metadata is None:
        metadata = getattr(image, "metadata", None) or Metadata()
    a = _np.asarray(image)
    if a.dtype not in (_np.uint8, _np.uint16, _np.float32):
        raise TypeError(f"image samples must be uint8, uint16 or float32, not {a.dtype}")
    if not _wrappable(a):
        a = _np.ascontiguousarray(a)
    _imgconv.save(a, _check_writable(path), int(quality), metadata.icc, metadata.exif)


Size = Union[int, Tuple[int, int]]


def _size_text(size: Size, what: str) -> str:
    """Kernel-text size: N, or (height, width) as WxH."""
    if isinstance(size, (tuple, list)):
        if len(size) != 2:
            raise InvalidArgument(f"{what}: expected N or (height, width), got {size!r}")
        h, w = (int(v) for v in size)
        return f"{w}x{h}"
    return str(int(size))


def _positive(value: float, what: str) -> str:
    v = float(value)
    if not v > 0 or v == float("inf"):
        raise InvalidArgument(f"{what} must be a finite number > 0, not {value!r}")
    return repr(v)


def gaussian(image: Any, sigma: float, size: Optional[Size] = None, **kw: Any) -> Any:
    """Gaussian blur by `sigma` (pixels). The kernel spans 2*ceil(3*sigma)+1
    pixels unless `size` (N or (height, width)) is given. Other keywords are
    those of convolve() (border, backend, out, ...)."""
    text = f"gaussian:sigma={_positive(sigma, 'sigma')}"
    if size is not None:
        text += f",size={_size_text(size, 'size')}"
    return convolve(image, text, **kw)


def box(image: Any, size: Size = 3, **kw: Any) -> Any:
    """Box blur: the mean of a `size` window (N or (height, width))."""
    return convolve(image, f"box:{_size_text(size, 'size')}", **kw)


def unsharp(image: Any, sigma: float = 1.0, amount: float = 1.0, size: Optional[Size] = None,
            **kw: Any) -> Any:
    """Unsharp mask: image + amount * (image - gaussian(image, sigma))."""
    text = f"unsharp:sigma={_positive(sigma, 'sigma')},amount={float(amount)!r}"
    if size is not None:
        text += f",size={_size_text(size, 'size')}"
    return convolve(image, text, **kw)


def sobel(image: Any, **kw: Any) -> Any:
    """Edge strength sqrt(gx^2 + gy^2) of the 3x3 Sobel kernels, unscaled as
    OpenCV's Sobel and magnitude (docs/definitions.md#edge-strength)."""
    return convolve(image, "sobel", **kw)


def sharpen(image: Any, **kw: Any) -> Any:
    """The 3x3 sharpen kernel 0 -1 0 / -1 5 -1 / 0 -1 0."""
    return convolve(image, "sharpen", **kw)


def chart(height: int, width: int, channels: int = 3, seed: int = 1) -> _np.ndarray:
    """The deterministic test chart of `imgconv --chart` as an array."""
    buf = _imgconv.chart(height, width, channels, seed)
    a = _np.frombuffer(buf, dtype=_np.uint8)
    return a.reshape((height, width) if channels == 1 else (height, width, channels))


def backends() -> Sequence[Tuple[str, str, bool, str]]:
    """[(name, summary, usable, why_not)] for every backend built in."""
    return _imgconv.backends()


def backend_auto() -> str:
    """The backend "auto" picks on this machine."""
    return _imgconv.backend_auto()


def named_kernels() -> Sequence[Tuple[str, str, str]]:
    """[(name, arguments, summary)] of the named kernels."""
    return _imgconv.named_kernels()
