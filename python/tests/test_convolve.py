"""imgconv.convolve on NumPy arrays: against scipy.ndimage (an independent
float64 reference, border modes per the README's table) and against the C
CLI; no copies of wrappable arrays; errors; contexts; the GIL released."""
import subprocess
import threading
import time
import tracemalloc

import numpy as np
import pytest

import imgconv

ndimage = pytest.importorskip("scipy.ndimage")

# imgconv border -> scipy.ndimage mode (docs/definitions.md#border-modes).
MODES = {"constant": "constant", "replicate": "nearest", "mirror": "mirror",
         "reflect": "reflect", "wrap": "grid-wrap"}


def reference(img, kernel, border, correlate=False, bias=0.0, border_value=0.0):
    """scipy.ndimage in float64, rounded to nearest even and clamped."""
    w = imgconv.Kernel(kernel).weights if not isinstance(kernel, imgconv.Kernel) else kernel.weights
    f = ndimage.correlate if correlate else ndimage.convolve
    x = img.astype(np.float64)
    if x.ndim == 3:
        w = w[:, :, None]
    y = f(x, w, mode=MODES[border], cval=border_value) + bias
    return np.clip(np.rint(y), 0, 255).astype(np.uint8)


def assert_close(got, want, what):
    diff = np.abs(got.astype(int) - want.astype(int))
    exact = np.mean(diff == 0)
    assert diff.max() <= 1, f"{what}: max difference {diff.max()} at {np.unravel_index(diff.argmax(), diff.shape)}"
    assert exact >= 0.999, f"{what}: only {exact:.5f} of samples exact"


@pytest.mark.parametrize("border", sorted(MODES))
@pytest.mark.parametrize("kernel", ["gaussian:5", "sobel-x", "unsharp:size=7,amount=0.8", "box:3x7"])
def test_matches_scipy_on_photographs(photo, kernel, border):
    got = imgconv.convolve(photo, kernel, border=border, backend="cpu")
    assert got.shape == photo.shape and got.dtype == np.uint8
    assert_close(got, reference(photo, kernel, border), f"{kernel} {border}")
    assert not np.array_equal(got, photo) or kernel == "identity"


@pytest.mark.parametrize("backend", ["seq", "cpu"])
def test_correlate_bias_border_value_and_array_kernel(photo, backend):
    rng = np.random.default_rng(3)
    coef = rng.integers(-4, 6, size=(5, 9)).astype(np.float64)  # odd, not square, not symmetric
    k = imgconv.Kernel(coef, divisor=float(coef.sum() or 1))
    for correlate in (False, True):
        got = imgconv.convolve(photo, k, border="constant", border_value=37, correlate=correlate,
                               bias=12.37, backend=backend)
        want = reference(photo, k, "constant", correlate, 12.37, 37)
        assert_close(got, want, f"array kernel correlate={correlate} {backend}")


def test_array_kernel_equals_its_text():
    img = imgconv.chart(61, 83, 3, seed=2)
    a = imgconv.convolve(img, np.array([[1, 2, 1], [2, 4, 2], [1, 2, 1]]) / 16.0)
    b = imgconv.convolve(img, "1 2 1; 2 4 2; 1 2 1 / 16")
    assert np.array_equal(a, b)


@pytest.mark.parametrize("border", sorted(MODES))
def test_image_smaller_than_kernel_and_channels(border):
    rng = np.random.default_rng(11)
    for shape in [(4, 5), (3, 2, 2), (5, 4, 3), (6, 3, 4)]:
        img = rng.integers(0, 256, size=shape, dtype=np.uint8)
        got = imgconv.convolve(img, "gaussian:9", border=border, alpha="independent")
        assert_close(got, reference(img, "gaussian:9", border), f"{shape} {border}")


def test_strided_view_is_filtered_without_a_copy():
    big = np.zeros((1200, 1700, 3), dtype=np.uint8)
    big[:] = imgconv.chart(1200, 1700, 3, seed=4)
    view = big[100:1100, 50:1550]            # rows of packed pixels, pitch 1700*3
    out_big = np.full((1100, 1600, 3), 7, dtype=np.uint8)
    out = out_big[50:1050, 20:1520]
    ctx = imgconv.Context("cpu")
    ctx.convolve(view, "box:3", out=out)       # warm-up: pools and scratch
    tracemalloc.start()
    res = ctx.convolve(view, "box:3", border="replicate", out=out)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert res is out
    assert peak < view.nbytes // 10, f"{peak} bytes traced: the image was copied"
    assert_close(out, reference(np.ascontiguousarray(view), "box:3", "replicate"), "view")
    # outside the output view nothing changed
    mask = np.ones(out_big.shape[:2], bool)
    mask[50:1050, 20:1520] = False
    assert (out_big[mask] == 7).all()


def test_non_wrappable_layouts_are_copied_and_correct():
    img = imgconv.chart(70, 90, 3, seed=8)
    flipped = img[::-1, ::2]                 # negative row stride, pixel gaps
    got = imgconv.convolve(flipped, "gaussian:3", border="mirror")
    assert_close(got, reference(np.ascontiguousarray(flipped), "gaussian:3", "mirror"), "flipped")
    planar = np.ascontiguousarray(img.transpose(2, 0, 1)).transpose(1, 2, 0)  # channel stride != 1
    assert np.array_equal(imgconv.convolve(planar, "sharpen"), imgconv.convolve(img, "sharpen"))


def test_errors_carry_the_library_message():
    img = imgconv.chart(20, 20, 3)
    with pytest.raises(imgconv.Error, match="odd"):
        imgconv.convolve(img, "gaussian:4")
    with pytest.raises(imgconv.Error, match="unknown backend 'warp-drive'"):
        imgconv.convolve(img, "box", backend="warp-drive")
    with pytest.raises(imgconv.Error, match="unknown border mode 'sideways'"):
        imgconv.convolve(img, "box", border="sideways")
    with pytest.raises(imgconv.Error) as e:
        imgconv.Kernel(np.ones((2, 3)))
    assert e.value.status == 4  # IC_ERR_KERNEL
    with pytest.raises(TypeError, match="float32"):
        imgconv.convolve(img.astype(np.float64), "box")
    with pytest.raises(ValueError):
        imgconv.convolve(np.zeros((4, 4, 5), np.uint8), "box")
    with pytest.raises(ValueError, match="overlaps"):
        imgconv.convolve(img, "box", out=img)
    with pytest.raises(FileNotFoundError, match="missing.png"):
        imgconv.load("/nonexistent/missing.png")
    with pytest.raises(imgconv.Error, match="extension|unknown"):
        imgconv.save("/tmp/imgconv-test-out.xyz", img)


def test_contexts_are_reused():
    assert imgconv.context("cpu") is imgconv.context("cpu")
    assert imgconv.context("seq") is not imgconv.context("cpu")
    ctx = imgconv.Context("seq")
    assert ctx.backend == "seq"
    img = imgconv.chart(33, 47, 1)
    assert np.array_equal(ctx.convolve(img, "laplacian"), ctx.convolve(img, "laplacian"))
    assert imgconv.backend_auto() in [b[0] for b in imgconv.backends() if b[2]]
    assert "gaussian" in [k[0] for k in imgconv.named_kernels()]


def test_gil_is_released_while_filtering():
    img = imgconv.chart(1500, 1500, 3)
    ctx = imgconv.Context("seq")                 # one core, slow on purpose
    t0 = time.perf_counter()
    ctx.convolve(img, "box:15")
    call = time.perf_counter() - t0
    assert call > 0.2, f"the call took {call:.3f} s, too short to observe"
    stamps = []
    th = threading.Thread(target=ctx.convolve, args=(img, "box:15"))
    th.start()
    while th.is_alive():
        stamps.append(time.perf_counter())
    th.join()
    gaps = np.diff(stamps) if len(stamps) > 1 else np.array([call])
    # with the GIL held the main thread would stall for the whole call
    assert gaps.max() < 0.5 * call, f"main thread stalled {gaps.max():.3f} s of a {call:.3f} s call"


def test_threads_share_the_module_api():
    from concurrent.futures import ThreadPoolExecutor
    imgs = [imgconv.chart(200 + i, 300, 3, seed=i) for i in range(8)]
    serial = [imgconv.convolve(a, "gaussian:7") for a in imgs]
    with ThreadPoolExecutor(4) as ex:
        parallel = list(ex.map(lambda a: imgconv.convolve(a, "gaussian:7"), imgs))
    assert all(np.array_equal(s, p) for s, p in zip(serial, parallel))


def test_load_save_round_trip(tmp_path):
    img = imgconv.chart(40, 56, 4, seed=3)
    for ext in ("png", "ppm"):
        p = tmp_path / f"x.{ext}"
        imgconv.save(p, img[..., :3] if ext == "ppm" else img)
        back = imgconv.load(p)
        assert np.array_equal(back, img[..., :3] if ext == "ppm" else img)
    assert imgconv.load(tmp_path / "x.png", channels=1).shape == (40, 56)


@pytest.mark.parametrize("args", [
    ["-k", "gaussian:5", "--border", "mirror"],
    ["-k", "sobel-y", "--correlate", "--bias", "128", "--border", "replicate"],
    ["-k", "1 2 3; 4 5 6; 7 8 -9 / 15", "--border", "wrap"],
    ["-k", "box:9x3", "--border", "constant", "--border-value", "200"],
])
def test_matches_the_cli(cli, tmp_path, photo, args):
    src = tmp_path / "in.png"
    dst = tmp_path / "out.png"
    imgconv.save(src, photo)
    subprocess.run([cli, "--backend", "cpu", *args, str(src), str(dst)], check=True)
    opts = dict(zip(args[::2], args[1::2])) if "--correlate" not in args else {}
    if "--correlate" in args:
        rest = [a for a in args if a != "--correlate"]
        opts = dict(zip(rest[::2], rest[1::2]))
    got = imgconv.convolve(photo, opts["-k"], border=opts["--border"], backend="cpu",
                           correlate="--correlate" in args, bias=float(opts.get("--bias", 0)),
                           border_value=float(opts.get("--border-value", 0)))
    assert np.array_equal(imgconv.load(dst), got)


def test_defaults_match_the_cli(cli, tmp_path, photo):
    """No options at all: the package, the CLI and the C library share one
    default border (mirror), so a plain call gives the CLI's bytes."""
    src = tmp_path / "in.png"
    dst = tmp_path / "out.png"
    imgconv.save(src, photo)
    subprocess.run([cli, "--backend", "cpu", "-k", "gaussian:7", str(src), str(dst)], check=True)
    got = imgconv.convolve(photo, "gaussian:7", backend="cpu")
    assert np.array_equal(imgconv.load(dst), got)
    assert not np.array_equal(got, imgconv.convolve(photo, "gaussian:7", backend="cpu",
                                                     border="constant"))


def test_chart_matches_the_cli(cli, tmp_path):
    p = tmp_path / "chart.png"
    subprocess.run([cli, "--chart", "130x90x3", "--seed", "5", str(p)], check=True)
    assert np.array_equal(imgconv.load(p), imgconv.chart(90, 130, 3, seed=5))


@pytest.mark.parametrize("backend", ["seq", "cpu"])
@pytest.mark.parametrize("border", sorted(MODES))
def test_uint16_matches_scipy(backend, border):
    """16-bit arrays are filtered at 16 bits (docs/definitions.md#sample-types): scipy in
    float64, rounded and clamped to 0..65535. The weights (/ 16) and the bias
    are dyadic and the sums stay under 2^24 / 16, so float32 is exact: every
    sample must match."""
    rng = np.random.default_rng(16)
    img = rng.integers(0, 65536, size=(37, 53, 3), dtype=np.uint16)
    img[:5] = 65535 - rng.integers(0, 8, size=img[:5].shape, dtype=np.uint16)  # at the clamp
    k = imgconv.Kernel("1 2 1; 2 7 2; -1 2 1 / 16")  # sums to 17/16: rows 0..4 clamp
    got = imgconv.convolve(img, k, border=border, backend=backend, bias=300.25)
    assert got.dtype == np.uint16 and got.shape == img.shape
    f = ndimage.convolve(img.astype(np.float64), k.weights[:, :, None], mode=MODES[border]) + 300.25
    want = np.clip(np.rint(f), 0, 65535).astype(np.uint16)
    np.testing.assert_array_equal(got, want, err_msg=f"{backend} {border}")
    assert (got == 65535).any() and (got < 65535).any()


def test_uint16_load_save_round_trip(tmp_path):
    rng = np.random.default_rng(5)
    img = rng.integers(0, 65536, size=(21, 34, 4), dtype=np.uint16)
    for ext in ("png", "tif", "ppm"):
        a = img[..., :3] if ext == "ppm" else img
        try:
            imgconv.save(tmp_path / f"x.{ext}", a)
        except imgconv.Error as e:
            if ext == "tif" and "without tiff support" in str(e):
                continue  # a build without libtiff (the GPU machine has no libtiff-dev)
            raise
        back = imgconv.load(tmp_path / f"x.{ext}")
        assert back.dtype == np.uint16 and np.array_equal(back, a), ext
    imgconv.save(tmp_path / "x.jpg", img[..., :3])  # 8 bits: round(v / 257)
    assert imgconv.load(tmp_path / "x.jpg").dtype == np.uint8
    with pytest.raises(TypeError):
        imgconv.convolve(img.astype(np.int32), "box:3")
