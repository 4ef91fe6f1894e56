#!/usr/bin/env python3
"""bench/peers_table.py on fixtures (ctest peers_table; no GPU).

bench-fixture.json/.md: cells of an H100 imgconv-bench run
(bench/results/bench-20261122T215818Z) plus one made-up batch cell;
cvcuda-fixture.json: MADE-UP CV-CUDA figures in cvcuda_cells.py's shape.
Every figure the merge prints is recomputed here from the fixture files with
this file's own lookups, and the bad-input paths are run: exit 2, one line,
no output file.
"""
import json
import math
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPT = os.path.join(ROOT, "bench", "peers_table.py")
BENCH = os.path.join(HERE, "bench-fixture.json")
BENCH_MD = os.path.join(HERE, "bench-fixture.md")
CVC = os.path.join(HERE, "cvcuda-fixture.json")

failures = 0


def check(ok, what):
    global failures
    if not ok:
        failures += 1
        print(f"FAIL {what}")


def close(a, b):
    return a is not None and b is not None and math.isclose(a, b, rel_tol=1e-9)


def run(args):
    return subprocess.run([sys.executable, SCRIPT] + args, capture_output=True, text=True)


bench = json.load(open(BENCH))
cvc = json.load(open(CVC))


def cuda_cell(table, size, kind, k):
    for c in bench["cells"]:
        if (c["table"], c["size"], c["kernel"], c["k"], c["backend"]) == (table, size, kind, k, "cuda"):
            return c
    return None


def cv_best(table, size, kind, k, op):
    same = [c for c in cvc["cells"] if (c["size"], c["kernel"], c["k"], c["op"], c["batch"]) ==
            (size, kind, k, op, 1) and "error" not in c]
    same.sort(key=lambda c: c["table"] != table)
    if not same:
        return None
    return min(v for v in (same[0]["event_ms"], same[0]["cupti_ms"]) if v is not None)


def expected_row(table, size, kind, k, with_cv):
    c = cuda_cell(table, size, kind, k)
    if c is None:
        return None
    peers = [c["npp_filter32f_ms"]]
    if kind == "gaussian":
        peers.append(c["npp_gauss_ms"])
    if with_cv:
        peers.append(cv_best(table, size, kind, k, "conv2d"))
        if kind == "gaussian":
            peers.append(cv_best(table, size, kind, k, "gaussian"))
    peers = [p for p in peers if p is not None and p > 0]
    return min(peers) / c["ms"]


with tempfile.TemporaryDirectory() as tmp:
    md, js = os.path.join(tmp, "peers.md"), os.path.join(tmp, "peers.json")
    r = run(["--bench", BENCH, "--bench-md", BENCH_MD, "--cvcuda", CVC, "--out-md", md,
             "--out-json", js, "--note", "fixture run"])
    check(r.returncode == 0, f"merge exit {r.returncode}: {r.stderr}")
    check(r.stdout.startswith("issue 17: "), f"summary line: {r.stdout!r}")
    out = json.load(open(js))
    text = open(md).read()

    # speed: every seed and large-kernel cell, best peer / imgconv and its verdict
    rows = out["seed"] + out["large"]
    check(len(out["seed"]) == 9 and len(out["large"]) == 8, "9 seed + 8 large cells")
    passes = 0
    for row in rows:
        want = expected_row(row["table"], row["size"], row["kernel"], row["k"], True)
        name = f"{row['table']} {row['size']} {row['kernel']} {row['k']}"
        if want is None:
            check(row["status"].startswith("MISS") and row.get("missing"), f"{name}: missing")
            continue
        check(close(row["ratio"], want), f"{name}: ratio {row['ratio']} != {want}")
        check(row["status"].startswith("PASS") == (want >= 2.0), f"{name}: status {row['status']}")
        passes += want >= 2.0
    check(out["summary"]["speed"] == [passes, 17], f"speed summary {out['summary']['speed']}")
    # the fixture's table E has no random 21: reported, never passed
    r21 = [x for x in out["large"] if x["kernel"] == "random" and x["k"] == 21][0]
    check(r21.get("missing") and "MISS" in r21["status"], "random 21 missing")
    check("| 8K random 21x21 | not in this bench run |" in text, "random 21 row in the markdown")
    # a cell without any CV-CUDA figure (gaussian 21) says so when it passes
    g21 = [x for x in out["large"] if x["kernel"] == "gaussian" and x["k"] == 21][0]
    check(g21["cvcuda_conv2d_ms"] is None and g21["status"] == "PASS (no CV-CUDA figure)",
          f"gaussian 21: {g21['status']}")

    # copy floor of 8K 3x3 (tables A and E)
    for row in out["floors"]["copy"]:
        c = cuda_cell(row["table"], "8K", "gaussian", 3)
        floor = 7680 * 4320 * 3 * 2 / (bench["copy_gbps"] * 1e9) * 1e3
        check(close(row["ratio"], c["ms"] / floor), f"copy floor {row['table']}")
        check(row["status"] == ("PASS" if c["ms"] / floor <= 1.15 else "MISS"), "copy verdict")
    check(len(out["floors"]["copy"]) == 2, "copy floor rows A and E")

    # separable floor: every Gaussian cuda cell of A, B, E
    gauss = [c for c in bench["cells"] if c["table"] in "ABE" and c["backend"] == "cuda"
             and c["kernel"] == "gaussian"]
    check(len(out["floors"]["separable"]) == len(gauss) == 16, "16 Gaussian cells")
    for row, c in zip(out["floors"]["separable"], gauss):
        check(close(row["ratio"], c["ms"] / c["floor_ms"]), f"separable {c['case']}")
        check(row["status"] == ("PASS" if c["ms"] / c["floor_ms"] <= 2 else "MISS"),
              f"separable verdict {c['case']}")

    # 31x31 full rank vs NPP
    c31 = cuda_cell("E", "8K", "random", 31)
    n31 = out["floors"]["npp31"][0]
    check(close(n31["ratio"], c31["npp_filter32f_ms"] / c31["ms"]), "31x31 vs NPP")
    check(n31["status"] == ("PASS" if n31["ratio"] >= 8 else "MISS"), "31x31 verdict")

    # batch: the made-up 64 x 480p cell against CV-CUDA's best batch figure
    b = out["batch"]
    check(len(b) == 1 and b[0]["batch"] == 64, f"one batch row: {b}")
    cvb = [min(x["event_ms"], x["cupti_ms"]) for x in cvc["cells"]
           if x["table"] == "batch" and x["kernel"] == "gaussian"]
    bc = [x for x in bench["cells"] if x.get("batch") == 64][0]
    check(close(b[0]["ratio"], min(cvb) / bc["ms"]), "batch ratio")

    # planner F: pick's time (table E, else its forced time) vs the fastest forced method
    f_rows = {(x["kernel"], x["k"]): x for x in out["planner"]["F"]}
    check(len(f_rows) == 9, "9 F cases")
    g3 = f_rows[("gaussian", 3)]
    forced = [x["ms"] for x in bench["cells"] if x["table"] == "F" and x["kernel"] == "gaussian"
              and x["k"] == 3]
    check(g3["pick"] == "rows" and close(g3["ratio"], cuda_cell("E", "8K", "gaussian", 3)["ms"] /
                                         min(forced)), "F gaussian 3")
    r21 = f_rows[("random", 21)]  # not in E: the forced direct time is the pick's
    d21 = [x["ms"] for x in bench["cells"] if x["table"] == "F" and x["kernel"] == "random"
           and x["k"] == 21 and x["backend"] == "cuda/direct"][0]
    check(r21["pick"] == "direct" and close(r21["pick_ms"], d21), "F random 21 from its forced time")
    check(f_rows[("random", 3)]["status"] == "-", "F random 3: no figure for rows")
    # planner H: 'rows x2' is the full sum at 2 rows, 'rows x4 sep' the separable one at 4
    h = {(x["size"], x["kernel"], x["k"]): x for x in out["planner"]["H"]}
    check(len(h) == 14, "14 H cases")

    def hms(size, kind, k, backend):
        return [x["ms"] for x in bench["cells"] if x["table"] == "H" and x["size"] == size and
                x["kernel"] == kind and x["k"] == k and x["backend"] == backend][0]

    check(close(h[("480p", "gaussian", 3)]["pick_ms"], hms("480p", "gaussian", 3,
                                                          "cuda/rows-full-x2")), "H 480p pick")
    check(close(h[("8K", "gaussian", 9)]["pick_ms"], hms("8K", "gaussian", 9, "cuda/rows-x4")),
          "H 8K gaussian 9 pick")
    allh = [hms("480p", "gaussian", 3, x["backend"]) for x in bench["cells"]
            if x["table"] == "H" and x["size"] == "480p" and x["kernel"] == "gaussian"]
    want = hms("480p", "gaussian", 3, "cuda/rows-full-x2") / min(allh)
    check(close(h[("480p", "gaussian", 3)]["ratio"], want), "H 480p ratio")
    check(h[("480p", "gaussian", 3)]["status"] == ("right" if want <= 1.05 else "WRONG"),
          "H 480p verdict")
    # planner N: the pick as timed against the fastest of sep and tensor in every tile shape
    n = {(x["case"], x["channels"]): x for x in out["planner"]["N"]}
    check(len(n) == 2, f"2 N cases: {list(n)}")
    for (case, ch), row in n.items():
        cells = [x for x in bench["cells"] if x["table"] == "N" and x["case"] == case and
                 x["channels"] == ch]
        pick = [x for x in cells if x["backend"] == "cuda/planner"][0]
        fastest = min(x["ms"] for x in cells if x["backend"].startswith("cuda/tile-"))
        want = pick["ms"] / fastest
        check(row["pick"] == pick["method"] and close(row["ratio"], want), f"N {case} ratio")
        check(row["status"] == ("right" if want <= 1.05 else "WRONG"), f"N {case} verdict")
    check(n[("4K gaussian 11x11 AoS", 1)]["status"] == "WRONG" and
          n[("HD gaussian 21x21 AoS", 4)]["status"] == "right", "N verdicts")
    check(out["summary"]["planner_n"] == [1, 2] and r.stdout.rstrip().endswith(", N 1/2"),
          f"N summary {out['summary']['planner_n']}: {r.stdout!r}")
    # the markdown carries the issue table, the floors, tables F and H as measured, and N
    for frag in ("## Seed tables", "## Large kernels, 8K (table E)", "## Floors", "## Batches",
                 "## Planner (calibration tables F, H and N)", "N: on grey, grey + alpha",
                 "### F. Methods forced", "### H. The rows method", "fixture run",
                 "| 480p gaussian 3x3 | **0.0064** |"):
        check(frag in text, f"markdown lacks {frag!r}")

    # without CV-CUDA: NPP is the only peer, and the verdicts say so
    r = run(["--bench", BENCH, "--out-md", md, "--out-json", js])
    check(r.returncode == 0 and "NPP only" in r.stdout, f"NPP-only run: {r.stdout} {r.stderr}")
    out = json.load(open(js))
    for row in out["seed"] + out["large"]:
        want = expected_row(row["table"], row["size"], row["kernel"], row["k"], False)
        if want is not None:
            check(close(row["ratio"], want), f"NPP-only ratio {row['size']} {row['k']}")
            check(row["status"] == ("PASS (NPP only)" if want >= 2 else "MISS"),
                  f"NPP-only status {row['status']}")
    check("not measured in this run" in open(md).read(), "NPP-only markdown says so")

    # the batch target: the one-call 64 x 480p cell over its floor (<= 1.5);
    # the fixture's cell has no floor (MISS), a copy at 1.5x and 1.6x of one
    # does and does not pass, a one-by-one cell is shown but not judged
    bc = [x for x in bench["cells"] if x.get("batch") == 64][0]
    check(out["batch"][0]["status"] == "MISS" and out["batch"][0]["over_floor"] is None
          and out["summary"]["batch"] == [0, 1], f"batch without a floor: {out['batch'][0]}")
    for over, want in ((1.5, "PASS"), (1.6, "MISS")):
        alt = dict(bench)
        judged = dict(bc, floor_ms=bc["ms"] / over)
        alone = dict(judged, backend="cuda/one-by-one")
        alt["cells"] = [x for x in bench["cells"] if x.get("batch") != 64] + [judged, alone]
        alt_path = os.path.join(tmp, "bench-batch.json")
        json.dump(alt, open(alt_path, "w"))
        r = run(["--bench", alt_path, "--bench-md", BENCH_MD, "--cvcuda", CVC, "--out-md", md,
                 "--out-json", js])
        out = json.load(open(js))
        st = {x["backend"]: x for x in out["batch"]}
        check(r.returncode == 0 and close(st["cuda/batch"]["over_floor"], over)
              and st["cuda/batch"]["status"] == want and st["cuda/one-by-one"]["status"] is None
              and out["summary"]["batch"] == [int(want == "PASS"), 1]
              and f"batch within 1.5x of its floor {int(want == 'PASS')}/1" in r.stdout,
              f"batch at {over}x its floor: {st}, {r.stdout!r}")

    # every party at the lower of its events and CUPTI times: without table K
    # cells imgconv and NPP keep their event times; with MADE-UP table K cells
    # (480p 3x3: imgconv CUPTI at half its event time, NPP GaussBorder's at a
    # third; 8K 3x3: imgconv's CUPTI above its event time) the ratio is
    # recomputed here from the lower of each party's two figures
    r = run(["--bench", BENCH, "--bench-md", BENCH_MD, "--cvcuda", CVC, "--out-md", md,
             "--out-json", js])
    out = json.load(open(js))
    for row in out["seed"] + out["large"]:
        if not row.get("missing"):
            check(close(row["ratio_lower"], row["ratio"]), f"no table K: {row['case']}")
    check(out["summary"]["speed_lower"] == out["summary"]["speed"], "no table K: same count")
    alt = dict(bench)
    a480 = cuda_cell("A", "480p", "gaussian", 3)
    a8k = cuda_cell("A", "8K", "gaussian", 3)
    kc = [dict(a480, table="K", cupti_ms=a480["ms"] / 2),
          dict(a480, table="K", backend="npp-gaussborder", cupti_ms=a480["npp_gauss_ms"] / 3),
          dict(a8k, table="K", cupti_ms=a8k["ms"] * 1.5)]
    alt["cells"] = bench["cells"] + kc
    alt_path = os.path.join(tmp, "bench-k.json")
    json.dump(alt, open(alt_path, "w"))
    r = run(["--bench", alt_path, "--bench-md", BENCH_MD, "--cvcuda", CVC, "--out-md", md,
             "--out-json", js])
    out = json.load(open(js))
    row = out["seed"][0]
    peers = [a480["npp_filter32f_ms"], a480["npp_gauss_ms"] / 3,
             cv_best("A", "480p", "gaussian", 3, "conv2d"),
             cv_best("A", "480p", "gaussian", 3, "gaussian")]
    want = min(p for p in peers if p) / (a480["ms"] / 2)
    check(r.returncode == 0 and close(row["ratio_lower"], want) and close(row["ratio"],
          expected_row("A", "480p", "gaussian", 3, True)), f"480p with table K: {row}")
    check(row["status_lower"] == ("PASS" if want >= 2 else "MISS"), "480p lower verdict")
    row8 = [x for x in out["seed"] if x["table"] == "A" and x["size"] == "8K"][0]
    check(close(row8["ratio_lower"], row8["ratio"]) and close(row8["imgconv_cupti_ms"],
          a8k["ms"] * 1.5), f"8K: events lower than CUPTI: {row8}")
    lp = sum(1 for x in out["seed"] + out["large"] if x.get("status_lower") == "PASS")
    check(out["summary"]["speed_lower"][0] == lp and f"({lp}/" in r.stdout,
          f"lower count {out['summary']['speed_lower']} {r.stdout!r}")
    check("## The same cells, every party at the lower" in open(md).read(), "lower section")

    # a batch cell in a seed table ("images" instead of "batch"), listed first:
    # never taken for the single-image cell, still found as a batch row
    alt = dict(bench)
    moved = dict([x for x in bench["cells"] if x.get("batch") == 64][0], table="A", backend="cuda")
    del moved["batch"]
    moved["images"] = 64
    alt["cells"] = [moved] + [x for x in bench["cells"] if x.get("batch") != 64]
    alt_path = os.path.join(tmp, "bench-alt.json")
    json.dump(alt, open(alt_path, "w"))
    r = run(["--bench", alt_path, "--bench-md", BENCH_MD, "--cvcuda", CVC, "--out-md", md,
             "--out-json", js])
    out = json.load(open(js))
    check(r.returncode == 0 and out["seed"][0]["imgconv_ms"] == cuda_cell("A", "480p", "gaussian",
                                                                          3)["ms"],
          f"batch cell taken for 480p: {out['seed'][0]}")
    check(len(out["batch"]) == 1 and out["batch"][0]["batch"] == 64, "'images' batch cell")

    # bad input: exit 2, one line, nothing written
    for args, what in (([BENCH + ".absent"], "absent bench JSON"), ([BENCH_MD], "not JSON"),
                       ([CVC], "a CV-CUDA JSON as the bench's")):
        o1, o2 = os.path.join(tmp, "x.md"), os.path.join(tmp, "x.json")
        r = run(["--bench"] + args + ["--out-md", o1, "--out-json", o2])
        if what == "a CV-CUDA JSON as the bench's":
            # it has "cells": the merge runs and finds none of imgconv's cells
            check(r.returncode == 0 and json.load(open(o2))["summary"]["speed"][0] == 0, what)
            os.remove(o1)
            os.remove(o2)
            continue
        check(r.returncode == 2, f"{what}: exit {r.returncode}")
        check(len(r.stderr.strip().splitlines()) == 1 and r.stderr.startswith("peers_table: "),
              f"{what}: one line: {r.stderr!r}")
        check(not os.path.exists(o1) and not os.path.exists(o2), f"{what}: no output")
    r = run(["--bench", BENCH, "--out-md", os.path.join(tmp, "x.md"),
             "--out-json", os.path.join(tmp, "no-such-dir", "x.json")])
    check(r.returncode == 2 and not os.path.exists(os.path.join(tmp, "x.md")) and
          not os.path.exists(os.path.join(tmp, "x.md.tmp")), f"unwritable output: {r.stderr!r}")

print("peers_table:", "ok" if failures == 0 else f"{failures} failure(s)")
sys.exit(1 if failures else 0)
