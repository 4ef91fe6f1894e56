"""imgconv.Client against a real imgconv serve on 127.0.0.1 (a free port):
bytes in, bytes out identical to the CLI's; arrays in, arrays out identical
to the library's convolve; errors as ServerError."""
import subprocess

import numpy as np
import pytest

import imgconv


@pytest.fixture
def server(cli, tmp_path):
    out = subprocess.run([cli, "--version"], capture_output=True, text=True).stdout
    if "serve: built in" not in out:
        pytest.skip("imgconv built without the server (libevent)")
    p = subprocess.Popen([cli, "serve", "--listen", "127.0.0.1:0", "--backend", "cpu"],
                         stdout=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    assert "serving on http://" in line, line
    url = line.split("serving on ")[1].split()[0]
    yield url
    p.terminate()
    assert p.wait(30) == 0


def test_bytes_as_the_cli(server, cli, tmp_path):
    src, ref = tmp_path / "c.png", tmp_path / "ref.png"
    subprocess.run([cli, "--chart", "96x64", str(src)], check=True)
    subprocess.run([cli, "-k", "gaussian:5", "--border", "wrap", "--backend", "cpu", str(src),
                    str(ref)], check=True)
    c = imgconv.Client(server)
    assert c.health()["status"] == "ready"
    assert c.filter(src.read_bytes(), "gaussian:5", border="wrap") == ref.read_bytes()
    assert any(k["name"] == "gaussian" for k in c.kernels())
    assert "imgconv_requests_total" in c.metrics()


@pytest.mark.parametrize("shape,dtype", [((31, 47), np.uint8), ((20, 33, 3), np.uint8),
                                         ((17, 19, 3), np.uint16)])
def test_arrays_as_the_library(server, shape, dtype):
    rng = np.random.default_rng(7)
    a = rng.integers(0, np.iinfo(dtype).max + 1, size=shape, dtype=dtype)
    got = imgconv.Client(server).filter(a, "box:3", border="replicate")
    want = imgconv.convolve(a, "box:3", border="replicate", backend="cpu")
    assert got.dtype == a.dtype and got.shape == a.shape
    assert np.array_equal(got, np.asarray(want))


def test_errors(server):
    c = imgconv.Client(server)
    with pytest.raises(imgconv.ServerError) as e:
        c.filter(b"not an image", "box:3")
    assert e.value.status == 415 and e.value.error == "unsupported_format"
    with pytest.raises(imgconv.ServerError) as e:
        c.filter(np.zeros((8, 8), np.uint8), "nope:3")
    assert e.value.status == 400 and "unknown kernel" in e.value.message
