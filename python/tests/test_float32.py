"""float32 images on every backend that filters them, against a NumPy float64
reference within the tolerance of docs/definitions.md ("Float samples"):
|out - exact| <= (n + 20) * 2**-24 * S, n = kh * kw taps, S = sum |w * x|.
Backends that do not filter float32 raise imgconv.Error naming themselves.
NaN and inf propagate as IEEE arithmetic says. Device arrays (CuPy,
PyTorch) are in test_float32_device.py.
"""
import numpy as np
import pytest

import imgconv

U = 2.0 ** -24


def _pad(img, ry, rx, border, value):
    spec = ((ry, ry), (rx, rx)) + ((0, 0),) * (img.ndim - 2)
    if border == "constant":
        return np.pad(img, spec, mode="constant", constant_values=value)
    mode = {"replicate": "edge", "mirror": "reflect", "reflect": "symmetric", "wrap": "wrap"}[border]
    return np.pad(img, spec, mode=mode)


def reference(img, weights, border="mirror", value=0.0, bias=0.0):
    """Convolution in float64 and its bound S (sum of |terms|)."""
    x = img.astype(np.float64)
    k = np.asarray(weights, dtype=np.float64)[::-1, ::-1]  # convolution flips
    kh, kw = k.shape
    p = _pad(x, kh // 2, kw // 2, border, value)
    out = np.zeros_like(x) + bias
    s = np.zeros_like(x) + abs(bias)
    h, w = x.shape[:2]
    for j in range(kh):
        for i in range(kw):
            t = k[j, i] * p[j:j + h, i:i + w]
            out += t
            s += np.abs(t)
    return out, s


def within(out, exact, s, n):
    tol = (n + 20) * U * s + n * 2.0 ** -126
    err = np.abs(out.astype(np.float64) - exact)
    assert out.dtype == np.float32
    assert np.all(err <= tol), f"worst {np.max(err / tol):.3f} of the bound"


def _float_backends():
    return [name for name, _, usable, _ in imgconv.backends() if usable and name in ("seq", "cpu")]


@pytest.mark.parametrize("backend", _float_backends())
@pytest.mark.parametrize("border", ["constant", "replicate", "mirror", "reflect", "wrap"])
@pytest.mark.parametrize("shape", [(37, 53), (19, 23, 3), (8, 9, 2), (2, 3, 4), (1, 1)])
def test_against_float64(backend, border, shape):
    rng = np.random.default_rng(hash((backend, border, shape)) & 0xFFFF)
    img = (rng.random(shape) * 3 - 1).astype(np.float32)  # outside 0..1: nothing is clamped
    w = rng.normal(size=(3, 5))  # odd, non-square, larger than the smallest images
    w32 = w.astype(np.float32).astype(np.float64)
    out = imgconv.convolve(img, w.astype(np.float32), border=border, border_value=0.25,
                           bias=0.125, backend=backend, alpha="independent")
    exact, s = reference(img, w32, border, 0.25, 0.125)
    within(out, exact, s, w.size)


@pytest.mark.parametrize("backend", _float_backends())
def test_named_kernels_and_helpers(backend):
    img = imgconv.chart(61, 47, 3, seed=3).astype(np.float32) / 255
    for text in ("gaussian:9", "box:5", "sobel-x", "unsharp:7"):
        out = imgconv.convolve(img, text, backend=backend)
        exact, s = reference(img, imgconv.Kernel(text).weights)
        within(out, exact, s, imgconv.Kernel(text).weights.size)
    g = imgconv.gaussian(img, sigma=1.5, backend=backend)
    assert g.dtype == np.float32 and g.shape == img.shape


def test_nan_and_inf_propagate():
    img = np.full((9, 11), 0.5, dtype=np.float32)
    img[4, 5] = np.nan
    img[1, 1] = np.inf
    for backend in _float_backends():
        box = imgconv.convolve(img, "box:3", backend=backend)
        assert np.isnan(box[3:6, 4:7]).all() and np.isfinite(box[7:, :3]).all()
        assert np.isposinf(box[0:3, 0:3]).all()
        sob = imgconv.convolve(img, "sobel-x", backend=backend)
        assert np.isnan(sob[1, 1])  # 0 * inf at the centre column


def test_strided_and_out():
    big = np.random.default_rng(1).random((40, 50, 3), dtype=np.float32)
    view = big[5:30, 7:41]
    out = np.empty((25, 34, 3), dtype=np.float32)
    res = imgconv.convolve(view, "box:3", backend="cpu", out=out)
    assert res is out
    exact, s = reference(view, np.full((3, 3), 1 / 9))
    within(out, exact, s, 9)
    with pytest.raises(ValueError):
        imgconv.convolve(view, "box:3", backend="cpu", out=np.empty((25, 34, 3), np.uint8))


def test_refused_dtypes_and_backends():
    with pytest.raises(TypeError):
        imgconv.convolve(np.zeros((4, 4), np.float64), "box:3")
    # A backend either filters float32 as cpu does or refuses it by name;
    # cuda's fast path takes it, the seed strategies refuse it.
    img = np.random.default_rng(5).random((9, 11), dtype=np.float32)
    want = imgconv.convolve(img, "box:3", backend="cpu")
    for name, _, usable, _ in imgconv.backends():
        if not usable:
            continue
        try:
            got = imgconv.convolve(img, "box:3", backend=name)
        except imgconv.Error as e:
            assert name not in ("seq", "cpu", "cuda"), e
            assert "float32" in str(e), (name, e)
            continue
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=name)


def test_files_round_trip(tmp_path):
    img = (np.random.default_rng(2).random((6, 7, 3)) * 4 - 2).astype(np.float32)
    img[0, 0, 0] = np.nan
    for ext in ("pfm", "npy", "tif"):
        p = tmp_path / f"x.{ext}"
        try:
            imgconv.save(p, img)
        except imgconv.Error as e:  # a build without TIFF
            assert ext == "tif", e
            continue
        back = imgconv.load(p)
        assert back.dtype == np.float32
        np.testing.assert_array_equal(np.asarray(back), img)
    np.testing.assert_array_equal(np.load(tmp_path / "x.npy"), img)
