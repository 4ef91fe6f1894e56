"""The package as Python users expect it: exception types, keyword helpers
equal to the kernel text they stand for, the public names, true docstrings."""
import os
import struct
import zlib

import numpy as np
import pytest

import imgconv


def img(h=23, w=31, c=3, seed=3):
    return np.random.default_rng(seed).integers(0, 256, (h, w, c), dtype=np.uint8)


def test_bad_border_is_value_error():
    with pytest.raises(ValueError) as e:
        imgconv.convolve(img(), "box:3", border="bogus", backend="cpu")
    assert isinstance(e.value, imgconv.Error) and isinstance(e.value, RuntimeError)
    assert "bogus" in str(e.value) and e.value.status == 1


def test_bad_kernel_text_is_value_error():
    with pytest.raises(imgconv.InvalidArgument):
        imgconv.convolve(img(), "gaussian:size=4", backend="cpu")
    with pytest.raises(ValueError):
        imgconv.Kernel("1 2 ; 3")


def test_missing_file_is_file_not_found(tmp_path):
    with pytest.raises(FileNotFoundError) as e:
        imgconv.load(tmp_path / "nope.png")
    assert e.value.filename == str(tmp_path / "nope.png")
    with pytest.raises(IsADirectoryError):
        imgconv.load(tmp_path)
    with pytest.raises(FileNotFoundError):
        imgconv.save(tmp_path / "no" / "such" / "x.png", img())


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads and writes everything")
def test_unreadable_file_is_permission_error(tmp_path):
    p = tmp_path / "a.png"
    imgconv.save(p, img())
    p.chmod(0)
    with pytest.raises(PermissionError):
        imgconv.load(p)


def test_corrupt_file_is_format_error(tmp_path):
    p = tmp_path / "bad.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 40)
    with pytest.raises(imgconv.FormatError):
        imgconv.load(p)


def _chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


def test_over_limit_is_memory_error(tmp_path):
    # A valid PNG header declaring 60000 x 60000 pixels: refused before decoding.
    p = tmp_path / "huge.png"
    p.write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 60000, 60000, 8, 2, 0, 0, 0))
                  + _chunk(b"IDAT", zlib.compress(b"\0" * 100)) + _chunk(b"IEND", b""))
    with pytest.raises(MemoryError) as e:
        imgconv.load(p)
    assert isinstance(e.value, imgconv.LimitError) and e.value.status == 3


def test_pathlib_paths(tmp_path):
    a = img()
    imgconv.save(tmp_path / "a.png", a)
    assert (imgconv.load(tmp_path / "a.png") == a).all()


@pytest.mark.parametrize("sigma", [0.5, 2, 3.7])
def test_gaussian_helper(sigma):
    a = img(seed=int(sigma * 10))
    got = imgconv.gaussian(a, sigma=sigma, backend="cpu")
    ref = imgconv.convolve(a, f"gaussian:sigma={float(sigma)!r}", backend="cpu")
    assert (got == ref).all()
    got = imgconv.gaussian(a, sigma, size=(3, 7), border="wrap", backend="cpu")
    ref = imgconv.convolve(a, f"gaussian:size=7x3,sigma={float(sigma)!r}", border="wrap",
                           backend="cpu")
    assert (got == ref).all()


def test_box_unsharp_sharpen_helpers():
    a = img()
    assert (imgconv.box(a, 5, backend="cpu") == imgconv.convolve(a, "box:5", backend="cpu")).all()
    assert (imgconv.box(a, (3, 5), backend="cpu")
            == imgconv.convolve(a, "box:5x3", backend="cpu")).all()
    ref = imgconv.convolve(a, "unsharp:sigma=1.5,amount=0.7", backend="cpu")
    assert (imgconv.unsharp(a, sigma=1.5, amount=0.7, backend="cpu") == ref).all()
    assert (imgconv.sharpen(a, backend="cpu") == imgconv.convolve(a, "sharpen", backend="cpu")).all()


@pytest.mark.parametrize("sigma", [0, -1, float("nan"), float("inf")])
def test_gaussian_helper_refuses_bad_sigma(sigma):
    with pytest.raises(ValueError):
        imgconv.gaussian(img(), sigma=sigma)


def test_public_names():
    for name in imgconv.__all__:
        assert hasattr(imgconv, name), name
    public = {n for n in dir(imgconv) if not n.startswith("_")}
    assert "np" not in public and "threading" not in public
    assert {"gaussian", "box", "unsharp", "sharpen", "InvalidArgument"} <= set(imgconv.__all__)


def test_docstrings_true():
    doc = imgconv.__doc__
    assert "filtered in place" not in doc and "never modified" in doc
    a = img()
    before = a.copy()
    imgconv.convolve(a, "box:3", backend="cpu")
    assert (a == before).all(), "the input was modified"
    # The documented default border is mirror.
    m = imgconv.convolve(a, "box:3", backend="cpu")
    assert (m == imgconv.convolve(a, "box:3", border="mirror", backend="cpu")).all()
    assert (m != imgconv.convolve(a, "box:3", border="constant", backend="cpu")).any()


def test_py_typed_shipped():
    assert os.path.exists(os.path.join(os.path.dirname(imgconv.__file__), "py.typed"))


def _exif(orientation):
    # A little-endian TIFF header and one IFD holding the Orientation tag.
    return (b"II*\0" + struct.pack("<I", 8) + struct.pack("<H", 1)
            + struct.pack("<HHIHH", 0x0112, 3, 1, orientation, 0) + struct.pack("<I", 0))


def _icc_rgb():
    # The header of an RGB display profile (D50 illuminant, as libpng checks),
    # an empty tag table and some payload.
    icc = bytearray(256)
    struct.pack_into(">I", icc, 0, 256)
    icc[12:16], icc[16:20], icc[20:24], icc[36:40] = b"mntr", b"RGB ", b"XYZ ", b"acsp"
    icc[68:80] = struct.pack(">III", 0xF6D6, 0x10000, 0xD32D)
    for i in range(132, 256):
        icc[i] = (i * 7) & 255
    return bytes(icc)


@pytest.mark.parametrize("ext", ["jpg", "png", "webp", "tif"])
def test_metadata_round_trip(tmp_path, ext):
    meta = imgconv.Metadata(icc=_icc_rgb(), exif=_exif(6))
    assert meta.orientation == 6
    src = tmp_path / f"a.{ext}"
    try:
        imgconv.save(src, img(40, 30), metadata=meta)
    except imgconv.Error as e:  # a format this build lacks
        if "not supported" not in str(e) and "unknown" not in str(e):
            raise
        pytest.skip(f"{ext}: {e}")
    loaded = imgconv.load(src)
    assert isinstance(loaded, imgconv.Image) and isinstance(loaded, np.ndarray)
    assert loaded.metadata.orientation == 6 and loaded.metadata.exif
    if ext != "tif":  # TIFF keeps the EXIF tags libtiff knows, not the block verbatim
        assert loaded.metadata.exif == meta.exif
    assert loaded.metadata.icc == meta.icc
    # Filtering keeps the metadata, and save writes it back by default.
    out = imgconv.gaussian(loaded, 1.5, backend="cpu")
    assert isinstance(out, imgconv.Image) and out.metadata == loaded.metadata
    imgconv.save(tmp_path / f"b.{ext}", out)
    again = imgconv.load(tmp_path / f"b.{ext}")
    assert again.metadata == loaded.metadata
    # numpy and DLPack see the pixels.
    plain = np.asarray(loaded)
    assert type(plain) is np.ndarray and (plain == loaded).all()
    assert (np.from_dlpack(loaded) == plain).all()
    # metadata=Metadata() writes none.
    imgconv.save(tmp_path / f"c.{ext}", out, metadata=imgconv.Metadata())
    assert not imgconv.load(tmp_path / f"c.{ext}").metadata


def test_plain_array_loads_without_metadata(tmp_path):
    imgconv.save(tmp_path / "p.png", img())
    loaded = imgconv.load(tmp_path / "p.png")
    assert not loaded.metadata and loaded.metadata.orientation == 0
