"""Edge strength, abs=True and chains (docs/definitions.md#edge-strength,
#chains) against NumPy: the magnitude is computed here with np.pad (mode
"reflect" is the library's mirror, "symmetric" its reflect) and float64
sums; chains are run step by step in float64 without rounding between the
steps. Every sample equals round(expected) except within float32 rounding
of a tie, where it is 1 off at most."""
import numpy as np
import pytest

import imgconv

SOBEL_X = np.array([[-1, 0, 1], [-2, 0, 2], [-1, 0, 1]], dtype=np.float64)
SCHARR_X = np.array([[-3, 0, 3], [-10, 0, 10], [-3, 0, 3]], dtype=np.float64)
PREWITT_X = np.array([[-1, 0, 1], [-1, 0, 1], [-1, 0, 1]], dtype=np.float64)
PAD = {"mirror": "reflect", "reflect": "symmetric", "replicate": "edge", "wrap": "wrap",
       "constant": "constant"}


def correlate(img, w, border):
    """Float64 correlation of an H x W plane with w (odd sizes), np.pad borders."""
    ry, rx = w.shape[0] // 2, w.shape[1] // 2
    p = np.pad(img.astype(np.float64), ((ry, ry), (rx, rx)), mode=PAD[border])
    out = np.zeros(img.shape, dtype=np.float64)
    for j in range(w.shape[0]):
        for i in range(w.shape[1]):
            out += w[j, i] * p[j:j + img.shape[0], i:i + img.shape[1]]
    return out


def assert_rounds_to(got, want, maxval=255):
    want = np.clip(want, 0, maxval)
    r = np.rint(want)
    off = got.astype(np.int64) != r
    # float32 sums: a sample within their rounding of a tie may go either way
    tie = np.abs(np.abs(want - np.floor(want)) - 0.5) < 1e-3 + 2e-7 * want
    assert not (off & ~tie).any(), f"{int((off & ~tie).sum())} samples off, e.g. got " \
        f"{got[off & ~tie][:5]} want {want[off & ~tie][:5]}"
    assert (np.abs(got.astype(np.int64) - r) <= 1).all()


@pytest.fixture(scope="module")
def grey():
    rng = np.random.default_rng(43)
    return np.clip(imgconv.chart(61, 83, 1, seed=4).astype(np.int64)
                   + rng.integers(-40, 40, (61, 83)), 0, 255).astype(np.uint8)


@pytest.mark.parametrize("backend", ["cpu", "seq"])
@pytest.mark.parametrize("name,kx", [("sobel", SOBEL_X), ("scharr", SCHARR_X),
                                     ("prewitt", PREWITT_X)])
@pytest.mark.parametrize("border", ["mirror", "reflect", "replicate", "wrap", "constant"])
def test_magnitude_against_numpy(grey, backend, name, kx, border):
    # correlate=True: the weights lie over the image as written (either
    # orientation gives the same magnitude; this pins the transpose)
    got = imgconv.convolve(grey, name, border=border, backend=backend, correlate=True)
    gx = correlate(grey, kx, border)
    gy = correlate(grey, kx.T, border)
    assert_rounds_to(got, np.sqrt(gx * gx + gy * gy))


def test_sobel_helper(grey):
    assert (imgconv.sobel(grey, backend="cpu") == imgconv.convolve(grey, "sobel",
                                                                  backend="cpu")).all()
    assert imgconv.Kernel("sobel").magnitude and not imgconv.Kernel("sobel-x").magnitude
    assert "sobel" in imgconv.__all__


def test_sobel_16_bit(grey):
    g16 = grey.astype(np.uint16) * 257
    got = imgconv.sobel(g16, backend="cpu", correlate=True)
    gx, gy = correlate(g16, SOBEL_X, "mirror"), correlate(g16, SOBEL_X.T, "mirror")
    assert got.dtype == np.uint16
    assert_rounds_to(got, np.sqrt(gx * gx + gy * gy), 65535)


@pytest.mark.parametrize("backend", ["cpu", "seq"])
def test_abs_keeps_both_signs(grey, backend):
    got = imgconv.convolve(grey, "sobel-x", backend=backend, correlate=True, abs=True, bias=3)
    assert_rounds_to(got, np.abs(correlate(grey, SOBEL_X, "mirror")) + 3)
    plain = imgconv.convolve(grey, "sobel-x", backend=backend, correlate=True)
    assert (got >= plain).all() and (got > plain).any()


@pytest.mark.parametrize("border", ["mirror", "replicate", "wrap"])
def test_chain_against_steps(grey, border):
    steps = ["box:3", "sobel-x", "1 2 1 / 4"]
    got = imgconv.convolve(grey, steps, border=border, backend="cpu", correlate=True)
    want = grey.astype(np.float64)
    for s in steps:
        want = correlate(want, imgconv.Kernel(s).weights, border)
    assert_rounds_to(got, want)
    # a Kernel and a 2D array are chain elements too
    again = imgconv.convolve(grey, [imgconv.Kernel("box:3"), SOBEL_X, "1 2 1 / 4"], border=border,
                             backend="cpu", correlate=True)
    assert (again == got).all()


def test_chain_rgb_with_abs():
    img = imgconv.chart(40, 50, 3, seed=2)
    got = imgconv.convolve(img, ("gaussian:3", "laplacian"), abs=True, backend="cpu",
                           correlate=True)
    for c in range(3):
        want = np.abs(correlate(img[:, :, c], imgconv.Kernel("gaussian:3").weights, "mirror"))
        want = np.abs(correlate(want, imgconv.Kernel("laplacian").weights, "mirror"))
        assert_rounds_to(got[:, :, c], want)


def test_bad_chains_are_value_errors(grey):
    with pytest.raises(imgconv.InvalidArgument, match="empty chain"):
        imgconv.convolve(grey, [], backend="cpu")
    with pytest.raises(ValueError):
        imgconv.convolve(grey, ["box:3", "not a kernel"], backend="cpu")
    # a list of lists of numbers is one kernel, not a chain
    one = imgconv.convolve(grey, [[1, 2, 1]], backend="cpu")
    assert one.shape == grey.shape
