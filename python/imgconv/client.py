"""A client of ``imgconv serve`` (docs/serve.md), in pure Python.

    >>> from imgconv.client import Client
    >>> c = Client("http://127.0.0.1:8080")
    >>> png = c.filter(open("in.png", "rb").read(), "gaussian:5", border="mirror")
    >>> arr = c.filter(numpy_array, "box:3")      # an array in, an array out

Options are the CLI's long options with ``_`` for ``-``: ``border="wrap"``,
``quality=90``, ``format="jpeg"``, ``correlate=True``. Bytes in give the
encoded image's bytes back (the input's format unless ``format`` is given);
a uint8 or uint16 array of H x W or H x W x 1 or 3 channels gives an array of
the same shape and type back (sent and received as PNM, losslessly).
Errors are raised as ServerError with the HTTP status, the error word and
the server's message. Uses only the standard library (numpy for arrays).
"""
from __future__ import annotations

import http.client
import json
import socket
import urllib.parse
from typing import Any, Optional

__all__ = ["Client", "ServerError"]


class ServerError(Exception):
    """A request the server refused: .status (HTTP), .error, .message."""

    def __init__(self, status: int, error: str, message: str):
        super().__init__(f"{status} {error}: {message}")
        self.status = status
        self.error = error
        self.message = message


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self._path)
        self.sock = s


def _to_pnm(a: Any) -> bytes:
    import numpy as np
    a = np.ascontiguousarray(a)
    if a.ndim == 3 and a.shape[2] == 1:
        a = a[:, :, 0]
    if a.dtype not in (np.uint8, np.uint16) or not (
            a.ndim == 2 or (a.ndim == 3 and a.shape[2] == 3)):
        raise ValueError("arrays must be uint8 or uint16, H x W or H x W x 1 or 3 "
                         "(send encoded bytes for images with alpha)")
    magic = b"P5" if a.ndim == 2 else b"P6"
    maxval = 255 if a.dtype == np.uint8 else 65535
    head = b"%s\n%d %d\n%d\n" % (magic, a.shape[1], a.shape[0], maxval)
    return head + (a.astype(">u2").tobytes() if maxval > 255 else a.tobytes())


def _from_pnm(data: bytes, shape: tuple, dtype: Any) -> Any:
    import numpy as np
    fields, pos = [], 2
    while len(fields) < 3:
        while data[pos:pos + 1].isspace():
            pos += 1
        if data[pos:pos + 1] == b"#":
            pos = data.index(b"\n", pos)
            continue
        end = pos
        while not data[end:end + 1].isspace():
            end += 1
        fields.append(int(data[pos:end]))
        pos = end
    pos += 1
    w, h, maxval = fields
    c = 3 if data[:2] == b"P6" else 1
    a = np.frombuffer(data, dtype=">u2" if maxval > 255 else np.uint8, count=w * h * c,
                      offset=pos)
    return a.reshape(shape).astype(dtype)


class Client:
    """A connection to ``imgconv serve`` at url: http://HOST:PORT or unix:PATH.
    token: the bearer token of a server run with --token-file."""

    def __init__(self, url: str, token: Optional[str] = None, timeout: float = 60.0):
        self.url = url
        self.token = token
        self.timeout = timeout

    def _connection(self) -> http.client.HTTPConnection:
        if self.url.startswith("unix:"):
            return _UnixConnection(self.url[5:], self.timeout)
        u = urllib.parse.urlsplit(self.url)
        if u.scheme != "http" or not u.hostname:
            raise ValueError(f"url {self.url!r}: expected http://HOST:PORT or unix:PATH")
        return http.client.HTTPConnection(u.hostname, u.port or 80, timeout=self.timeout)

    def _request(self, method: str, path: str, body: Optional[bytes] = None) -> bytes:
        headers = {"Connection": "close"}
        if self.token:
            headers["Authorization"] = "Bearer " + self.token
        if body is not None:
            headers["Content-Type"] = "application/octet-stream"
        conn = self._connection()
        try:
            conn.request(method, path, body=body, headers=headers)
            r = conn.getresponse()
            data = r.read()
        finally:
            conn.close()
        if r.status != 200:
            try:
                j = json.loads(data)
                raise ServerError(r.status, j.get("error", ""), j.get("message", ""))
            except ValueError:
                raise ServerError(r.status, "http", data[:200].decode("latin-1")) from None
        return data

    def filter(self, image: Any, kernel: str, **options: Any) -> Any:
        """Filters image (encoded bytes, or a numpy array) with kernel (the
        CLI's --kernel text) and the CLI's options; returns bytes for bytes,
        an array for an array."""
        query = [("kernel", kernel)]
        for key, value in options.items():
            name = key.replace("_", "-")
            if value is True:
                query.append((name, "1"))
            elif value is not False and value is not None:
                query.append((name, str(value)))
        is_array = not isinstance(image, (bytes, bytearray, memoryview))
        if is_array:
            import numpy as np
            a = np.asarray(image)
            body = _to_pnm(a)
            query = [(k, v) for k, v in query if k != "format"] + [("format", "pnm")]
        else:
            body = bytes(image)
        path = "/v1/filter?" + urllib.parse.urlencode(query, quote_via=urllib.parse.quote)
        data = self._request("POST", path, body)
        return _from_pnm(data, a.shape, a.dtype) if is_array else data

    def health(self) -> dict:
        """GET /v1/health as a dict ({"status": "ready", ...})."""
        return json.loads(self._request("GET", "/v1/health"))

    def kernels(self) -> list:
        """The named kernels the server knows."""
        return json.loads(self._request("GET", "/v1/kernels"))["kernels"]

    def metrics(self) -> str:
        """The Prometheus text of /v1/metrics."""
        return self._request("GET", "/v1/metrics").decode()
