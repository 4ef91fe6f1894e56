"""Shared fixtures: photographs (scikit-image's bundled pictures when it is
installed, else the library's test chart plus smooth noise, which has the same
mix of flat areas, edges and texture) and the path of the C CLI."""
import os
import shutil

import numpy as np
import pytest

import imgconv


def _photos():
    out = {}
    try:
        from skimage import data
        for name in ("astronaut", "camera", "coffee", "chelsea"):
            try:
                out[name] = np.ascontiguousarray(getattr(data, name)())
            except Exception:  # a data file missing from this installation
                pass
    except ImportError:
        pass
    if not out:
        rng = np.random.default_rng(16)
        base = imgconv.chart(300, 400, 3, seed=5).astype(np.float64)
        noise = rng.normal(0, 12, base.shape)
        out["chart-noise"] = np.clip(base + noise, 0, 255).astype(np.uint8)
        out["chart-grey"] = imgconv.chart(257, 301, 1, seed=9)
    return out


PHOTOS = _photos()


@pytest.fixture(params=sorted(PHOTOS))
def photo(request):
    return PHOTOS[request.param]


@pytest.fixture
def cli():
    path = os.environ.get("IMGCONV_CLI") or shutil.which("imgconv")
    if not path:
        pytest.skip("no imgconv CLI (set IMGCONV_CLI; make test does)")
    return path
