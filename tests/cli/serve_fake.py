"""serve_fake.py - a tiny HTTP server that answers POST /v1/filter?MODE with
well-formed and malformed replies, for tests/cli/serve_load_c.sh to check
that bench/probe/serve_load.c reads the good ones and fails the bad ones
cleanly (not a test by itself).

  serve_fake.py PORT_FILE BODY_FILE
      listens on 127.0.0.1:0, writes its port to PORT_FILE and answers every
      request with BODY_FILE's bytes in the way MODE says (see REPLIES).
"""
import os
import socket
import socketserver
import sys

TIMING = b"Server-Timing: queue;dur=1.00, decode;dur=2.00, filter;dur=3.00, encode;dur=4.00, lane;desc=fake\r\n"


def chunked(body):
    out = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n" + TIMING + b"\r\n"
    for i in range(0, len(body), 7):
        part = body[i:i + 7]
        out += b"%x;ext=1\r\n" % len(part) + part + b"\r\n"
    return out + b"0\r\nX-Trailer: 1\r\n\r\n", False


# MODE: (reply bytes, close the connection after it)
REPLIES = {
    "ok": lambda b: (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n" % len(b) + TIMING + b"\r\n" + b, False),
    "chunked": chunked,
    "close": lambda b: (b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: %d\r\n" % len(b) +
                        TIMING + b"\r\n" + b, True),
    "eof": lambda b: (b"HTTP/1.0 200 OK\r\n" + TIMING + b"\r\n" + b, True),
    "status500": lambda b: (b"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\nno", False),
    "garbage": lambda b: (b"garbage\r\n\r\n", True),
    "silent": lambda b: (b"", True),
    "truncated": lambda b: (b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (len(b) + 100) + b, True),
    "badchunk": lambda b: (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", True),
    "shortchunk": lambda b: (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", True),
    "gzip": lambda b: (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n" + b, True),
    "hugelen": lambda b: (b"HTTP/1.1 200 OK\r\nContent-Length: 99999999999999999999999\r\n\r\n", True),
    "twolens": lambda b: (b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\nab", True),
    "badtiming": lambda b: (b"HTTP/1.1 200 OK\r\nServer-Timing: ;;;, queue;dur=zz, ,lane;desc=, dur=1\r\n"
                            b"Server-Timing: decode;dur=2.5\r\nContent-Length: %d\r\n\r\n" % len(b) + b, False),
    "longhead": lambda b: (b"HTTP/1.1 200 OK\r\n" + b"X-A: " + b"a" * 200000, True),
}


class Handler(socketserver.StreamRequestHandler):
    def handle(self):
        while True:
            line = self.rfile.readline()
            if not line:
                return
            mode = line.split(b" ")[1].partition(b"?")[2].decode()
            length = 0
            while True:
                h = self.rfile.readline()
                if h in (b"\r\n", b"\n", b""):
                    break
                name, _, value = h.partition(b":")
                if name.strip().lower() == b"content-length":
                    length = int(value)
            self.rfile.read(length)
            data, close = REPLIES[mode](self.server.body)
            self.wfile.write(data)
            self.wfile.flush()
            if close:
                self.connection.shutdown(socket.SHUT_RDWR)
                return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


if __name__ == "__main__":
    srv = Server(("127.0.0.1", 0), Handler)
    srv.body = open(sys.argv[2], "rb").read()
    with open(sys.argv[1] + ".tmp", "w") as f:
        f.write(str(srv.server_address[1]))
    os.replace(sys.argv[1] + ".tmp", sys.argv[1])
    srv.serve_forever()
