#!/usr/bin/env python3
"""serve-load.py - a bounded whole-request load client for imgconv serve.

Sends POST /v1/filter requests (send, wait for the whole reply, check its
status and, with --expect, its bytes) from CLIENTS threads, each on its own
keep-alive connection, until COUNT requests are done or SECONDS have passed,
whichever comes first, and prints one line:

  clients=N requests=R errors=E seconds=S rps=X p50_ms=A p99_ms=B
      queue_ms=Q decode_ms=D filter_ms=F encode_ms=C lanes=L

the four _ms the means of the server's Server-Timing header (where its
time went; the rest of a request's latency is the network and HTTP), and
L the lanes that served the requests (cpu, gpu or cpu+gpu).

Loopback only (127.0.0.0/8, ::1, localhost, or unix:PATH): it is a
benchmark, not a load generator for other machines.

usage: serve-load.py URL BODY QUERY [--clients N] [--count R] [--seconds S]
                     [--expect FILE] [--warmup W] [--procs P]

--procs P spreads the clients and the count over P processes, so that one
Python interpreter's lock does not bound the load (P at most CLIENTS).

bench/probe/serve_load.c is its C twin (same arguments, same line, well
under a tenth of the client CPU a request), which bench/suites/serve.sh runs
where a C compiler is found; this one is for machines without.
"""
import argparse
import http.client
import multiprocessing
import ipaddress
import socket
import sys
import threading
import time
import urllib.parse


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path, timeout):
        super().__init__("localhost", timeout=timeout)
        self.path_ = path

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.path_)
        self.sock = s


def connector(url):
    if url.startswith("unix:"):
        return lambda: UnixConnection(url[5:], 600)
    u = urllib.parse.urlsplit(url)
    host = u.hostname or ""
    try:
        loop = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        loop = False
    if u.scheme != "http" or not loop:
        sys.exit(f"serve-load.py: {url}: loopback http://127.0.0.1:PORT or unix:PATH only")
    return lambda: http.client.HTTPConnection(host, u.port or 80, timeout=600)


def run(a, clients, count):
    """One process's share: its latencies, errors, stage sums, lanes and
    seconds."""
    body = open(a.body, "rb").read()
    want = open(a.expect, "rb").read() if a.expect else None
    new_conn = connector(a.url)
    path = "/v1/filter?" + a.query
    lock = threading.Lock()
    lat, errors = [], [0]
    stages = {"queue": 0.0, "decode": 0.0, "filter": 0.0, "encode": 0.0}
    lanes = set()
    left = [count]
    deadline = [0.0]

    def one(conn):
        t0 = time.perf_counter()
        conn.request("POST", path, body=body)
        r = conn.getresponse()
        data = r.read()
        ok = r.status == 200 and (want is None or data == want)
        timing = r.getheader("Server-Timing") or ""
        with lock:
            for part in timing.split(","):
                name, _, dur = part.strip().partition(";dur=")
                if name in stages and ok:
                    stages[name] += float(dur)
                elif name.startswith("lane;desc=") and ok:
                    lanes.add(name.partition(";desc=")[2])
        return ok, time.perf_counter() - t0

    def client():
        conn = new_conn()
        while True:
            with lock:
                if left[0] <= 0 or time.perf_counter() > deadline[0]:
                    break
                left[0] -= 1
            try:
                ok, dt = one(conn)
            except (OSError, http.client.HTTPException):
                conn.close()
                conn = new_conn()
                ok, dt = False, 0.0
            with lock:
                if ok:
                    lat.append(dt)
                else:
                    errors[0] += 1
        conn.close()

    warm = new_conn()
    for _ in range(a.warmup):
        one(warm)
    warm.close()
    for k in stages:
        stages[k] = 0.0
    lanes.clear()
    t0 = time.perf_counter()
    deadline[0] = t0 + a.seconds
    ts = [threading.Thread(target=client) for _ in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return lat, errors[0], stages, lanes, time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("url")
    ap.add_argument("body")
    ap.add_argument("query")
    ap.add_argument("--clients", type=int, default=1)
    ap.add_argument("--count", type=int, default=200)
    ap.add_argument("--seconds", type=float, default=30.0)
    ap.add_argument("--expect")
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--procs", type=int, default=1)
    a = ap.parse_args()
    if not (1 <= a.clients <= 1024 and 1 <= a.count <= 10**6 and 0 < a.seconds <= 600):
        sys.exit("serve-load.py: clients 1..1024, count 1..1e6, seconds up to 600")
    if not 1 <= a.procs <= a.clients:
        sys.exit("serve-load.py: procs 1..clients")
    connector(a.url)  # refuses anything but loopback before any process starts
    shares = [(a, a.clients // a.procs + (i < a.clients % a.procs),
               a.count // a.procs + (i < a.count % a.procs)) for i in range(a.procs)]
    if a.procs == 1:
        parts = [run(*shares[0])]
    else:
        with multiprocessing.get_context("fork").Pool(a.procs) as pool:
            parts = pool.starmap(run, shares)
    lat = sorted(x for p in parts for x in p[0])
    errors = sum(p[1] for p in parts)
    stages = {k: sum(p[2][k] for p in parts) for k in parts[0][2]}
    lanes = set().union(*(p[3] for p in parts))
    secs = max(p[4] for p in parts)
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1e3 if lat else float("nan")
    print(f"clients={a.clients} requests={len(lat)} errors={errors} seconds={secs:.2f} "
          f"rps={len(lat) / secs:.1f} p50_ms={pct(0.50):.2f} p99_ms={pct(0.99):.2f} " +
          " ".join(f"{k}_ms={v / max(1, len(lat)):.2f}" for k, v in stages.items()) +
          f" lanes={'+'.join(sorted(lanes)) or '-'}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())
