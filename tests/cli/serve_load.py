"""serve_load.py - the concurrent checks of tests/cli/serve.sh against a
running imgconv serve (not a test by itself: serve.sh runs it).

  serve_load.py concurrent PORT CLIENTS REQUESTS CASES.json
      CLIENTS threads each send REQUESTS requests, cycling through the cases
      ({"query", "input", "expect"}), and check every reply byte for byte.
  serve_load.py slow PORT
      one client sends a body one byte a second while others are answered.
  serve_load.py cutoff PORT
      clients that disconnect in the middle of their body.
  serve_load.py sigterm PORT PID N CASE.json
      N requests in flight (queued or being filtered, read from /v1/metrics),
      then SIGTERM: every one must be answered in full.
"""
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time


def post(port, query, body, timeout=60):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        c.request("POST", "/v1/filter?" + query, body=body)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def get(port, path):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        c.request("GET", path)
        r = c.getresponse()
        return r.status, r.read()
    finally:
        c.close()


def load_cases(path):
    cases = json.load(open(path))
    for c in cases:
        c["body"] = open(c["input"], "rb").read()
        c["want"] = open(c["expect"], "rb").read()
    return cases


def concurrent(port, clients, requests, cases_path):
    cases = load_cases(cases_path)
    bad = []
    lock = threading.Lock()

    def client(i):
        for r in range(requests):
            c = cases[(i + r) % len(cases)]
            try:
                status, data = post(port, c["query"], c["body"])
            except OSError as e:
                status, data = -1, str(e).encode()
            if status != 200 or data != c["want"]:
                with lock:
                    bad.append((i, r, c["query"], status, len(data)))

    t0 = time.time()
    ts = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    n = clients * requests
    print(f"{n} requests from {clients} clients in {time.time() - t0:.1f} s, "
          f"{len(bad)} wrong")
    for b in bad[:5]:
        print("  wrong:", b)
    return 0 if not bad else 1


def slow(port):
    s = socket.create_connection(("127.0.0.1", port))
    s.sendall(b"POST /v1/filter?kernel=box:3 HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n")
    times = []
    for i in range(3):
        s.sendall(b"x")
        t0 = time.time()
        status, _ = get(port, "/v1/health")
        times.append(time.time() - t0)
        if status != 200:
            print("health during a slow client:", status)
            return 1
        time.sleep(1)
    s.close()
    print(f"others answered in at most {max(times) * 1e3:.1f} ms during a slow body")
    return 0 if max(times) < 1.0 else 1


def cutoff(port):
    for i in range(20):
        s = socket.create_connection(("127.0.0.1", port))
        s.sendall(b"POST /v1/filter?kernel=box:3 HTTP/1.1\r\nHost: x\r\n"
                  b"Content-Length: 100000\r\n\r\n" + b"\x89PNG" + b"x" * 996)
        if i % 2:
            s.shutdown(socket.SHUT_WR)
        s.close()
    status, body = get(port, "/v1/health")
    print("health after 20 cut-off bodies:", status)
    return 0 if status == 200 else 1


def metric(port, name):
    _, text = get(port, "/v1/metrics")
    for line in text.decode().splitlines():
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def sigterm(port, pid, n, case_path):
    cases = load_cases(case_path)
    case = cases[-1]
    body = case["body"]
    results = [None] * (n + 1)
    # With two cases, the first is a blocker: one long job that the one
    # worker takes first, so that the n behind it stay queued however loaded
    # the machine is (a client descheduled for 50 ms let the first of them
    # end before every one was seen). Then every request but its body's last
    # byte first, then the last bytes one after another: the server queues
    # the n jobs within a moment.
    blocker = None
    if len(cases) > 1:
        blocker = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        blocker.request("POST", "/v1/filter?" + cases[0]["query"], body=cases[0]["body"])
        deadline = time.time() + 20
        while metric(port, "imgconv_images_in_flight") < 1 and time.time() < deadline:
            time.sleep(0.005)
    conns = []
    for _ in range(n):
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        c.putrequest("POST", "/v1/filter?" + case["query"])
        c.putheader("Content-Length", str(len(body)))
        c.endheaders()
        c.send(body[:-1])
        conns.append(c)
    for c in conns:
        c.send(body[-1:])
    if blocker:
        conns.append(blocker)  # its reply read as theirs, into results[n]

    def client(i):
        try:
            r = conns[i].getresponse()
            results[i] = (r.status, r.read())
        except OSError as e:
            results[i] = (-1, str(e).encode())
        finally:
            conns[i].close()

    ts = [threading.Thread(target=client, args=(i,)) for i in range(len(conns))]
    for t in ts:
        t.start()
    want = len(conns)
    deadline = time.time() + 20
    seen = 0
    while time.time() < deadline:
        seen = metric(port, "imgconv_queue_depth") + metric(port, "imgconv_images_in_flight")
        if seen >= want:
            break
        time.sleep(0.01)
    os.kill(pid, signal.SIGTERM)
    for t in ts:
        t.join()
    wants = [case["want"]] * n + ([cases[0]["want"]] if blocker else [])
    good = sum(1 for r, w in zip(results, wants) if r and r[0] == 200 and r[1] == w)
    print(f"{seen:.0f} in flight at SIGTERM; {good}/{want} answered in full and correct")
    for r, w in zip(results, wants):
        if not (r and r[0] == 200 and r[1] == w):
            print("  wrong:", r[0] if r else None, (r[1][:100] if r else b""))
            break
    return 0 if seen >= want and good == want else 1


if __name__ == "__main__":
    cmd, port = sys.argv[1], int(sys.argv[2])
    if cmd == "concurrent":
        sys.exit(concurrent(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    if cmd == "slow":
        sys.exit(slow(port))
    if cmd == "cutoff":
        sys.exit(cutoff(port))
    if cmd == "sigterm":
        sys.exit(sigterm(port, int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]))
    sys.exit(f"unknown command {cmd}")
