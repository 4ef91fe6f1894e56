#!/usr/bin/env python3
"""The peer table: imgconv-bench's cells beside NPP and CV-CUDA.

  peers_table.py --bench bench-STAMP.json [--bench-md bench-STAMP.md]
                 [--cvcuda cvcuda-STAMP.json] --out-md peers-STAMP.md
                 --out-json peers-STAMP.json [--note LINE]...

Inputs: imgconv-bench's JSON (its tables by flag: A, B, E for the cells, F and H for the
planner; its markdown, by default the JSON's name with .md, for the planner's
picks of tables F and H and their sections, copied as they are) and
bench/cvcuda_cells.py's JSON (optional: without it the peers are NPP only and
the verdict says so). Writes the markdown table and its JSON; prints one
summary line. Exit 0 when written (whatever the verdicts), 2 on bad input
(one line on stderr, no output file).

Targets:
  speed      every cell of the seed tables (A: 480p..8K 3x3; B: HD 3x3..9x9)
             and of the large-kernel table (E: 8K Gaussian and random 9, 15,
             21, 31): best peer / imgconv `cuda` >= 2;
  copy       8K 3x3: imgconv / copy floor (bytes in + out over the run's
             measured copy bandwidth) <= 1.15;
  separable  every Gaussian cell: imgconv / floor (max(bytes / copy,
             2rK multiply-adds per sample / FMA rate)) <= 2;
  npp31      8K random 31x31: NPP Filter32f / imgconv >= 8;
  batch      the one-call batch (backend cuda/batch) of 64 x 480p: imgconv /
             its floor (all bytes in + out over the copy bandwidth: 64 x the
             per-image floor) <= 1.5.
Peers: NPP Filter32f (any kernel), NPP GaussBorder (Gaussians up to 15),
CV-CUDA conv2d (any kernel), CV-CUDA gaussian (Gaussians). A CV-CUDA figure
is the lower of its CUDA-event and its CUPTI kernel time (the peer's favour).
A second count takes that rule for every party: imgconv and NPP at the lower
of their event time and their CUPTI time from the CUPTI table (K) of the same
run (published peer figures are CUPTI kernel times), where it holds the cell.

Batch cells: an imgconv-bench cell with an integer "batch" (or "images") > 1
(images per call; "ms" the whole call), in any table, matched to cvcuda_cells.py's batch cells by size,
kernel, K and batch. Every batch cell shows its time over its floor; the
batch target counts the 64 x 480p cell of the one-call backend.

Planner (the calibration tables, F, H and N): for each case, the planner's time
against the fastest forced method (F: direct, sep, fft 256, fft 512, fft 512 fused at 8K, the
planner's own time from table E; H: rows x1..x64 separable and full sums,
and sep, the pick at its own time where no column holds it; N, when the bench has it: sep and
tensor in every tile shape on grey, grey + alpha, RGBA and RGB SoA images, the pick as timed);
right when within PLANNER_TOL of the fastest.
"""
import argparse
import json
import math
import os
import re
import sys

SPEED = 2.0
COPY = 1.15
SEPARABLE = 2.0
NPP31 = 8.0
BATCH = 1.5
BATCH_CASE = ("480p", 64)
PLANNER_TOL = 1.05

SEED_CELLS = [("A", s, "gaussian", 3) for s in ("480p", "720p", "HD", "4K", "8K")]
SEED_CELLS += [("B", "HD", "gaussian", k) for k in (3, 5, 7, 9)]
LARGE_CELLS = [("E", "8K", kind, k) for kind in ("gaussian", "random") for k in (9, 15, 21, 31)]


class BadInput(Exception):
    pass


def load_json(path, what):
    try:
        with open(path) as f:
            d = json.load(f)
    except (OSError, ValueError) as e:
        raise BadInput(f"{path}: cannot read the {what} JSON: {e}")
    if not isinstance(d, dict) or not isinstance(d.get("cells"), list):
        raise BadInput(f"{path}: not a {what} JSON (no \"cells\" list)")
    return d


def pos(v):
    """v when a positive number, else None (the bench writes -1 for none)."""
    return float(v) if isinstance(v, (int, float)) and v > 0 and math.isfinite(v) else None


def fmt_ms(v):
    if v is None:
        return "-"
    return f"{v:.4f}" if v < 0.1 else f"{v:.3f}" if v < 10 else f"{v:.1f}"


def fmt_x(v, nd=2):
    return "-" if v is None else f"{v:.{nd}f}"


def images_of(c):
    """Images per call of a batch cell ("batch", or "images"), else 1."""
    n = c.get("batch", c.get("images", 1))
    return n if isinstance(n, int) and n > 1 else 1


def bench_cell(bench, table, size, kind, k, backend="cuda"):
    """imgconv-bench's single-image cell of a table (batch cells never)."""
    for c in bench["cells"]:
        if (c.get("table") == table and c.get("size") == size and c.get("kernel") == kind
                and c.get("k") == k and c.get("backend") == backend and images_of(c) == 1):
            return c
    return None


def lower(*vals):
    vals = [v for v in vals if v is not None]
    return min(vals) if vals else None


def cvcuda_ms(cv, table, size, kind, k, op, batch=1):
    """(best, events, cupti) ms of a CV-CUDA operation on a cell: the same
    table first, then any table with the same size, kernel and K."""
    if cv is None:
        return None, None, None
    hits = [c for c in cv["cells"] if c.get("size") == size and c.get("kernel") == kind
            and c.get("k") == k and c.get("op") == op and c.get("batch", 1) == batch
            and "error" not in c]
    hits.sort(key=lambda c: c.get("table") != table)
    if not hits:
        return None, None, None
    ev, cu = pos(hits[0].get("event_ms")), pos(hits[0].get("cupti_ms"))
    return lower(ev, cu), ev, cu


def copy_floor_ms(bench, c):
    gbps = pos(bench.get("copy_gbps"))
    if gbps is None:
        return None
    return 2.0 * c["width"] * c["height"] * c["channels"] / (gbps * 1e9) * 1e3


def cupti_of(bench, size, kind, k, backend):
    """CUPTI kernel ms of a backend on a cell from imgconv-bench's CUPTI table (K)
    (imgconv `cuda` and NPP timed there by CUDA events and by CUPTI), else None."""
    c = bench_cell(bench, "K", size, kind, k, backend)
    return pos(c.get("cupti_ms")) if c else None


def best_peer(peers, ms):
    """(name, ms, best / ms) of the fastest peer with a figure, else Nones."""
    have = {n: v for n, v in peers.items() if v is not None}
    name = min(have, key=have.get) if have else None
    best = have.get(name)
    return name, best, (best / ms if best is not None and ms is not None else None)


def peer_row(bench, cv, table, size, kind, k):
    c = bench_cell(bench, table, size, kind, k)
    row = {"table": table, "size": size, "kernel": kind, "k": k}
    if c is None:
        row.update(status="MISS (not measured)", missing=True)
        return row
    ms = pos(c.get("ms"))
    npp_f = pos(c.get("npp_filter32f_ms"))
    npp_g = pos(c.get("npp_gauss_ms")) if kind == "gaussian" else None
    cv_conv, cv_conv_ev, cv_conv_cu = cvcuda_ms(cv, table, size, kind, k, "conv2d")
    cv_g, cv_g_ev, cv_g_cu = (cvcuda_ms(cv, table, size, kind, k, "gaussian")
                              if kind == "gaussian" else (None, None, None))
    peers = {"NPP Filter32f": npp_f, "NPP GaussBorder": npp_g, "CV-CUDA conv2d": cv_conv,
             "CV-CUDA gaussian": cv_g}
    best_name, best, ratio = best_peer(peers, ms)
    row.update(case=c.get("case"), method=c.get("method"), imgconv_ms=ms,
               npp_filter32f_ms=npp_f, npp_gauss_ms=npp_g,
               cvcuda_conv2d_ms=cv_conv, cvcuda_conv2d_event_ms=cv_conv_ev,
               cvcuda_conv2d_cupti_ms=cv_conv_cu, cvcuda_gaussian_ms=cv_g,
               cvcuda_gaussian_event_ms=cv_g_ev, cvcuda_gaussian_cupti_ms=cv_g_cu,
               best_peer=best_name, best_peer_ms=best, ratio=ratio)
    # The same cell with every party at the lower of its CUDA-event and its
    # CUPTI time (the rule CV-CUDA's figures take above; imgconv's and NPP's
    # CUPTI times from the CUPTI table of the same run, where it holds the cell).
    ms_cu = cupti_of(bench, size, kind, k, "cuda")
    npp_f_cu = cupti_of(bench, size, kind, k, "npp-filter32f")
    npp_g_cu = cupti_of(bench, size, kind, k, "npp-gaussborder") if kind == "gaussian" else None
    peers_u = {"NPP Filter32f": lower(npp_f, npp_f_cu),
               "NPP GaussBorder": lower(npp_g, npp_g_cu) if npp_g is not None else None,
               "CV-CUDA conv2d": cv_conv, "CV-CUDA gaussian": cv_g}
    ms_u = lower(ms, ms_cu)
    best_u_name, best_u, ratio_u = best_peer(peers_u, ms_u)
    row.update(imgconv_cupti_ms=ms_cu, npp_filter32f_cupti_ms=npp_f_cu,
               npp_gauss_cupti_ms=npp_g_cu, imgconv_lower_ms=ms_u, best_peer_lower=best_u_name,
               best_peer_lower_ms=best_u, ratio_lower=ratio_u,
               status_lower="-" if ratio_u is None else "PASS" if ratio_u >= SPEED else "MISS")
    if ratio is None:
        row["status"] = "MISS (no figure)"
    else:
        ok = ratio >= SPEED
        row["status"] = "PASS" if ok else "MISS"
        if ok and cv is not None and cv_conv is None:
            row["status"] = "PASS (no CV-CUDA figure)"
        elif ok and cv is None:
            row["status"] = "PASS (NPP only)"
    return row


def floors(bench):
    out = {"copy": [], "separable": [], "npp31": []}
    for t in ("A", "E"):
        c = bench_cell(bench, t, "8K", "gaussian", 3)
        if c and pos(c.get("ms")):
            f = copy_floor_ms(bench, c)
            r = c["ms"] / f if f else None
            out["copy"].append({"table": t, "case": c.get("case"), "imgconv_ms": c["ms"],
                                "copy_floor_ms": f, "ratio": r,
                                "status": "-" if r is None else "PASS" if r <= COPY else "MISS"})
    for c in bench["cells"]:
        if (c.get("table") in ("A", "B", "E") and c.get("backend") == "cuda"
                and c.get("kernel") == "gaussian" and pos(c.get("ms"))):
            f = pos(c.get("floor_ms"))
            cf = copy_floor_ms(bench, c)
            r = c["ms"] / f if f else None
            bound = None
            if f and cf:
                bound = "bytes" if f <= cf * 1.0001 else f"2rK FMAs (r = {c.get('rank')})"
            out["separable"].append({
                "table": c["table"], "case": c.get("case"), "k": c.get("k"),
                "rank": c.get("rank"), "method": c.get("method"), "imgconv_ms": c["ms"],
                "floor_ms": f, "bound": bound, "ratio": r,
                "status": "-" if r is None else "PASS" if r <= SEPARABLE else "MISS"})
    c = bench_cell(bench, "E", "8K", "random", 31)
    if c and pos(c.get("ms")):
        npp = pos(c.get("npp_filter32f_ms"))
        r = npp / c["ms"] if npp else None
        out["npp31"].append({"case": c.get("case"), "method": c.get("method"),
                             "imgconv_ms": c["ms"], "npp_filter32f_ms": npp, "ratio": r,
                             "status": "-" if r is None else "PASS" if r >= NPP31 else "MISS"})
    return out


def small_floors(bench, seed):
    """The resolution table's (A) measured launch and copy floors (imgconv-bench's floor-* cells)
    beside the 3x3 cell and its 2x target."""
    out = []
    for r in seed:
        if r.get("table") != "A" or r.get("missing"):
            continue
        e = bench_cell(bench, "A", r["size"], "gaussian", 3, "floor-empty-kernel")
        c = bench_cell(bench, "A", r["size"], "gaussian", 3, "floor-d2d-copy")
        if not e or not c:
            continue
        best = r.get("best_peer_ms")
        target = best / SPEED if best else None
        cm = pos(c.get("ms"))
        out.append({"size": r["size"], "empty_ms": pos(e.get("ms")), "copy_ms": cm,
                    "imgconv_ms": r.get("imgconv_ms"), "best_peer_ms": best, "target_ms": target,
                    "target_over_copy": target / cm if target and cm else None})
    return out


def batch_rows(bench, cv):
    rows = []
    for c in bench["cells"]:
        n = images_of(c)
        if n == 1 or not pos(c.get("ms")):
            continue
        size, kind, k = c.get("size"), c.get("kernel"), c.get("k")
        peers = {}
        for op in ("conv2d-varshape", "gaussian-tensor"):
            best, ev, cu = cvcuda_ms(cv, "batch", size, kind, k, op, batch=n)
            if best is not None:
                peers[op] = {"ms": best, "event_ms": ev, "cupti_ms": cu}
        best_op, best, ratio = best_peer({o: v["ms"] for o, v in peers.items()}, c["ms"])
        fl = pos(c.get("floor_ms"))
        over = c["ms"] / fl if fl else None
        status = None
        if c.get("backend") == "cuda/batch" and (size, n) == BATCH_CASE:
            status = "PASS" if over is not None and over <= BATCH else "MISS"
        rows.append({"table": c.get("table"), "case": c.get("case"), "backend": c.get("backend"),
                     "size": size, "kernel": kind, "k": k, "batch": n, "imgconv_ms": c["ms"],
                     "imgconv_ms_per_image": c["ms"] / n, "cvcuda": peers,
                     "best_peer": best_op, "best_peer_ms": best,
                     "ratio": ratio, "floor_ms": fl,
                     "over_floor": over, "status": status})
    return rows


def md_section(md, letter):
    """The section '## <letter>. ...' of imgconv-bench's markdown, up to the next."""
    if md is None:
        return None
    m = re.search(rf"^## {re.escape(letter)}\. .*?(?=^## |^Total benchmark time|\Z)", md,
                  re.S | re.M)
    return m.group(0).rstrip() if m else None


def md_rows(section):
    """Table rows of a markdown section as lists of cell strings (header and rule skipped)."""
    rows = []
    if not section:
        return rows
    for line in section.splitlines():
        if not line.startswith("|") or line.startswith("|---"):
            continue
        cells = [x.strip() for x in line.strip().strip("|").split("|")]
        rows.append(cells)
    return rows[1:]


def table_cases(bench, table, fields):
    """The cells of one bench table grouped by the values of `fields`, in first-seen order."""
    cases = {}
    for c in bench["cells"]:
        if c.get("table") == table:
            cases.setdefault(tuple(c.get(f) for f in fields), []).append(c)
    return cases


def planner_f(bench, md):
    out = []
    picks = {}
    for r in md_rows(md_section(md, "F")):
        m = re.match(r"(gaussian|random) (\d+)$", r[0])
        if m and len(r) > 1:
            picks[(m.group(1), int(m.group(2)))] = r[1]
    for (kind, k), cells in table_cases(bench, "F", ("kernel", "k")).items():
        forced = {c["backend"].split("/", 1)[1]: c for c in cells
                  if str(c.get("backend", "")).startswith("cuda/") and pos(c.get("ms"))}
        e = bench_cell(bench, "E", "8K", kind, k)
        pick = picks.get((kind, k)) or (e.get("method") if e else None)
        own = pos(e.get("ms")) if e else None
        if own is None and pick in forced:
            own = forced[pick]["ms"]
        best_m = min(forced, key=lambda m: forced[m]["ms"]) if forced else None
        best = forced[best_m]["ms"] if best_m else None
        r = own / best if own and best else None
        pred = pos(e.get("pred_ms")) if e else None
        out.append({"kernel": kind, "k": k, "pick": pick, "pick_ms": own,
                    "pick_pred_ms": pred, "fastest_forced": best_m, "fastest_forced_ms": best,
                    "forced": {m: {"ms": c["ms"], "pred_ms": pos(c.get("pred_ms"))}
                               for m, c in forced.items()},
                    "ratio": r,
                    "status": "-" if r is None else "right" if r <= PLANNER_TOL else "WRONG"})
    return out


def planner_h(bench, md):
    out = []
    picks = {}
    for r in md_rows(md_section(md, "H")):
        m = re.match(r"(\S+) (gaussian|random) (\d+)$", r[0])
        if m and len(r) > 1:
            picks[(m.group(1), m.group(2), int(m.group(3)))] = r[1]
    for (size, kind, k), cells in table_cases(bench, "H", ("size", "kernel", "k")).items():
        shapes = {c["backend"].split("/", 1)[1]: c["ms"] for c in cells if pos(c.get("ms"))}
        planner = shapes.pop("planner", None)  # the pick timed as the planner runs it
        pick = picks.get((size, kind, k))
        own = None
        if pick:
            pick = re.sub(r" [0-9.]+$", "", pick)
            m = re.match(r"rows x(\d+)( sep)?$", pick)
            if m:
                own = shapes.get(f"rows-x{m.group(1)}" if m.group(2) else f"rows-full-x{m.group(1)}")
            elif pick in ("sep", "tensor"):
                own = shapes.get(pick)
            if own is None:
                own = planner
        best_s = min(shapes, key=shapes.get) if shapes else None
        best = shapes.get(best_s)
        r = own / best if own and best else None
        out.append({"size": size, "kernel": kind, "k": k, "pick": pick, "pick_ms": own,
                    "fastest": best_s, "fastest_ms": best, "shapes": shapes, "ratio": r,
                    "status": "-" if r is None else "right" if r <= PLANNER_TOL else "WRONG"})
    return out


def planner_n(bench):
    """The other-layouts table (N): the planner's pick, timed as it runs, against the fastest of sep
    and tensor (premultiplied: sep and direct) forced into every tile shape."""
    out = []
    for (case, ch), cells in table_cases(bench, "N", ("case", "channels")).items():
        cells = [c for c in cells if pos(c.get("ms"))]
        pick = next((c for c in cells if c.get("backend") == "cuda/planner"), None)
        forced = {f"{c['method']} {c['backend'].split('/', 1)[1][5:]}".replace(
            " planner", " planner-shape"): c["ms"] for c in cells
            if str(c.get("backend", "")).startswith("cuda/tile-")}
        best_s = min(forced, key=forced.get) if forced else None
        best = forced.get(best_s)
        own = pick["ms"] if pick else None
        r = own / best if own and best else None
        out.append({"case": case, "channels": ch, "pick": pick.get("method") if pick else None,
                    "pick_ms": own, "fastest": best_s, "fastest_ms": best, "ratio": r,
                    "status": "-" if r is None else "right" if r <= PLANNER_TOL else "WRONG"})
    return out


def count(rows, good, key="status"):
    judged = [r for r in rows if r.get(key, "-") != "-"]
    return sum(1 for r in judged if r[key].startswith(good)), len(judged)


def write(a):
    bench = load_json(a.bench, "imgconv-bench")
    md_path = a.bench_md or re.sub(r"\.json$", ".md", a.bench)
    md = None
    if os.path.exists(md_path):
        with open(md_path) as f:
            md = f.read()
    cv = load_json(a.cvcuda, "cvcuda_cells.py") if a.cvcuda else None

    seed = [peer_row(bench, cv, *c) for c in SEED_CELLS]
    large = [peer_row(bench, cv, *c) for c in LARGE_CELLS]
    fl = floors(bench)
    batch = batch_rows(bench, cv)
    pf, ph, pn = planner_f(bench, md), planner_h(bench, md), planner_n(bench)

    sp, sn = count(seed + large, "PASS")
    lp, _ = count(seed + large, "PASS", "status_lower")
    ln = len(seed + large)
    cp, cn = count(fl["copy"], "PASS")
    fp, fn = count(fl["separable"], "PASS")
    np_, nn = count(fl["npp31"], "PASS")
    bp, bn = count([r for r in batch if r["status"]], "PASS")
    fr, fnn = count(pf, "right")
    hr, hn = count(ph, "right")
    nr, nnn = count(pn, "right")
    summary = {
        "speed": [sp, len(seed + large)], "speed_lower": [lp, ln], "copy": [cp, cn],
        "separable": [fp, fn],
        "npp31": [np_, nn], "planner_f": [fr, fnn], "planner_h": [hr, hn], "planner_n": [nr, nnn],
        "cvcuda": cv is not None, "batch_rows": len(batch), "batch": [bp, bn],
    }
    line = (f"issue 17: {sp}/{len(seed + large)} cells >= {SPEED:g}x the best peer"
            f"{'' if cv else ' (NPP only: no CV-CUDA figures)'} ({lp}/{ln} with every party "
            f"at the lower of its events and CUPTI times); 8K 3x3 within {COPY:g}x of the "
            f"copy floor {cp}/{cn}; Gaussians within {SEPARABLE:g}x of their floor {fp}/{fn}; "
            f"31x31 >= {NPP31:g}x NPP {np_}/{nn}; {BATCH_CASE[1]} x {BATCH_CASE[0]} batch within "
            f"{BATCH:g}x of its floor {bp}/{bn}; planner right F {fr}/{fnn}, H {hr}/{hn}"
            f"{f', N {nr}/{nnn}' if nnn else ''}")

    L = []
    L.append(f"# imgconv against NPP and CV-CUDA (issue 17) {bench.get('stamp', '')}")
    L.append("")
    L.append(f"imgconv-bench: {os.path.basename(a.bench)}; device: {bench.get('device', '?')}; "
             f"measured copy {fmt_x(pos(bench.get('copy_gbps')), 0)} GB/s, fp32 "
             f"{fmt_x(pos(bench.get('fma_tflops')), 1)} TFLOP/s.")
    if cv:
        L.append(f"CV-CUDA {cv.get('cvcuda_version', '?')} ({os.path.basename(a.cvcuda)}; torch "
                 f"{cv.get('torch_version', '?')}, images: {cv.get('images', '?')}, "
                 f"{cv.get('reps', '?')} calls per figure; calls whose queueing outran the spin "
                 f"kernel: {cv.get('spin_short', '?')}).")
    else:
        L.append("CV-CUDA: **not measured in this run** (no cvcuda_cells.py JSON): the best "
                 "peer is NPP's.")
    for n in a.note or []:
        L.append(n)
    L.append("")
    L.append(f"**{line}.**")
    L.append("")
    L.append("Kernel ms, medians, uint8 RGB AoS, replicate border, data on the GPU. imgconv "
             "`cuda` and NPP: CUDA events per call behind a spin kernel, inputs rotating over "
             ">= 150 MB (imgconv-bench). CV-CUDA: `events / CUPTI` (the same event method; "
             "CUPTI = summed kernel durations per call), the lower one counts. Ratio = best "
             f"peer / imgconv; PASS at >= {SPEED:g}. NPP GaussBorder takes masks up to 15.")

    def table(title, rows):
        L.append("")
        L.append(f"## {title}")
        L.append("")
        L.append("| cell | imgconv `cuda` ms | method | NPP Filter32f | NPP GaussBorder | "
                 "CV-CUDA conv2d | CV-CUDA gaussian | best peer | best / imgconv | >= 2x |")
        L.append("|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            name = f"{r['size']} {r['kernel']} {r['k']}x{r['k']}"
            if r.get("missing"):
                L.append(f"| {name} | not in this bench run | | | | | | | | {r['status']} |")
                continue

            def cvc(best, ev, cu):
                return "-" if best is None else f"{fmt_ms(ev)} / {fmt_ms(cu)}"

            L.append(f"| {name} | **{fmt_ms(r['imgconv_ms'])}** | {r.get('method') or '-'} | "
                     f"{fmt_ms(r['npp_filter32f_ms'])} | {fmt_ms(r['npp_gauss_ms'])} | "
                     f"{cvc(r['cvcuda_conv2d_ms'], r['cvcuda_conv2d_event_ms'], r['cvcuda_conv2d_cupti_ms'])} | "
                     f"{cvc(r['cvcuda_gaussian_ms'], r['cvcuda_gaussian_event_ms'], r['cvcuda_gaussian_cupti_ms'])} | "
                     f"{r['best_peer'] or '-'} {fmt_ms(r['best_peer_ms'])} | "
                     f"{fmt_x(r['ratio'])} | {r['status']} |")

    table("Seed tables (A: 3x3 Gaussian by size; B: HD by Gaussian size)", seed)
    table("Large kernels, 8K (table E)", large)

    L.append("")
    L.append("## The same cells, every party at the lower of its events and CUPTI times")
    L.append("")
    L.append("The tables above count CV-CUDA at the lower of its two times and imgconv and NPP "
             "by CUDA events, which include the GPU's launch processing (table A: an empty "
             "kernel takes about 0.0035 ms so). Here imgconv and NPP also take the lower of "
             "their event time above and their CUPTI kernel time from imgconv-bench's table K "
             "of this run (CUPTI: start to end of the kernels on the GPU, as the issue's peer "
             "figures were taken); `events / CUPTI`, `-` where table K lacks the cell.")
    L.append("")
    L.append("| cell | imgconv | NPP Filter32f | NPP GaussBorder | CV-CUDA conv2d | "
             "CV-CUDA gaussian | best peer | best / imgconv | >= 2x |")
    L.append("|---|---|---|---|---|---|---|---|---|")
    for r in seed + large:
        if r.get("missing"):
            continue

        def two(ev, cu):
            return "-" if ev is None and cu is None else f"{fmt_ms(ev)} / {fmt_ms(cu)}"

        L.append(f"| {r['size']} {r['kernel']} {r['k']}x{r['k']} | "
                 f"**{two(r['imgconv_ms'], r['imgconv_cupti_ms'])}** | "
                 f"{two(r['npp_filter32f_ms'], r['npp_filter32f_cupti_ms'])} | "
                 f"{two(r['npp_gauss_ms'], r['npp_gauss_cupti_ms'])} | "
                 f"{two(r['cvcuda_conv2d_event_ms'], r['cvcuda_conv2d_cupti_ms'])} | "
                 f"{two(r['cvcuda_gaussian_event_ms'], r['cvcuda_gaussian_cupti_ms'])} | "
                 f"{r['best_peer_lower'] or '-'} {fmt_ms(r['best_peer_lower_ms'])} | "
                 f"{fmt_x(r['ratio_lower'])} | {r['status_lower']} |")

    small = small_floors(bench, seed)
    if small:
        L.append("")
        L.append("## What any kernel costs at these sizes (table A)")
        L.append("")
        L.append("The same event method on the same image: an empty kernel (one block: the "
                 "launch alone) and a device-to-device copy of the image (cudaMemcpy2DAsync, "
                 "in -> out: the least a filter must move). A 2x target below the copy's time "
                 "asks a filter to beat a plain copy of its bytes.")
        L.append("")
        L.append("| size | empty kernel ms | d2d copy ms | imgconv 3x3 ms | best peer ms | "
                 "2x target ms | target / copy |")
        L.append("|---|---|---|---|---|---|---|")
        for r in small:
            L.append(f"| {r['size']} | {fmt_ms(r['empty_ms'])} | {fmt_ms(r['copy_ms'])} | "
                     f"{fmt_ms(r['imgconv_ms'])} | {fmt_ms(r['best_peer_ms'])} | "
                     f"{fmt_ms(r['target_ms'])} | {fmt_x(r['target_over_copy'])} |")

    L.append("")
    L.append("## Floors")
    L.append("")
    L.append(f"8K 3x3 against the copy floor (bytes in + out / measured copy bandwidth), target "
             f"<= {COPY:g}:")
    L.append("")
    L.append("| table | case | imgconv ms | copy floor ms | imgconv / floor | |")
    L.append("|---|---|---|---|---|---|")
    for r in fl["copy"]:
        L.append(f"| {r['table']} | {r['case']} | {fmt_ms(r['imgconv_ms'])} | "
                 f"{fmt_ms(r['copy_floor_ms'])} | {fmt_x(r['ratio'])} | {r['status']} |")
    L.append("")
    L.append(f"Separable (Gaussian) cells against their floor, max(bytes / copy, 2rK multiply-adds "
             f"per sample / FMA rate), target <= {SEPARABLE:g}:")
    L.append("")
    L.append("| table | case | method | imgconv ms | floor ms | bound | imgconv / floor | |")
    L.append("|---|---|---|---|---|---|---|---|")
    for r in fl["separable"]:
        L.append(f"| {r['table']} | {r['case']} | {r.get('method') or '-'} | "
                 f"{fmt_ms(r['imgconv_ms'])} | {fmt_ms(r['floor_ms'])} | {r['bound'] or '-'} | "
                 f"{fmt_x(r['ratio'])} | {r['status']} |")
    L.append("")
    L.append(f"Full rank 31x31 at 8K against NPP Filter32f, target >= {NPP31:g}:")
    L.append("")
    L.append("| case | method | imgconv ms | NPP Filter32f ms | NPP / imgconv | |")
    L.append("|---|---|---|---|---|---|")
    for r in fl["npp31"]:
        L.append(f"| {r['case']} | {r.get('method') or '-'} | {fmt_ms(r['imgconv_ms'])} | "
                 f"{fmt_ms(r['npp_filter32f_ms'])} | {fmt_x(r['ratio'], 1)} | {r['status']} |")
    if not fl["npp31"]:
        L.append("| 8K random 31x31 | not in this bench run | | | | - |")

    L.append("")
    L.append("## Batches")
    L.append("")
    if batch:
        L.append("One call on the whole batch (imgconv: its batch cell's backend; CV-CUDA: "
                 "`conv2d` on a variable-shape batch with one kernel per image, `gaussian` on an "
                 "NHWC tensor). ms per call (`events / CUPTI` for CV-CUDA), per image in brackets. "
                 f"Floor: all bytes in + out over the measured copy bandwidth; target for "
                 f"{BATCH_CASE[1]} x {BATCH_CASE[0]} in one call: <= {BATCH:g}x.")
        L.append("")
        L.append("| case | imgconv backend | imgconv ms | floor ms | imgconv / floor | "
                 "CV-CUDA conv2d varshape | CV-CUDA gaussian tensor | best peer / imgconv | |")
        L.append("|---|---|---|---|---|---|---|---|---|")
        for r in batch:
            def p(op):
                v = r["cvcuda"].get(op)
                if not v:
                    return "-"
                return (f"{fmt_ms(v['event_ms'])} / {fmt_ms(v['cupti_ms'])} "
                        f"({fmt_ms(v['ms'] / r['batch'])})")
            L.append(f"| {r['batch']} x {r['size']} {r['kernel']} {r['k']}x{r['k']} | "
                     f"{r['backend']} | {fmt_ms(r['imgconv_ms'])} "
                     f"({fmt_ms(r['imgconv_ms_per_image'])}) | {fmt_ms(r['floor_ms'])} | "
                     f"{fmt_x(r['over_floor'])} | {p('conv2d-varshape')} | "
                     f"{p('gaussian-tensor')} | {fmt_x(r['ratio'])} | {r['status'] or ''} |")
    else:
        L.append("No batch cell in this imgconv-bench run (a cell with \"batch\": N > 1: the "
                 "table of ic_convolve_batch_async).")
        if cv:
            for c in cv["cells"]:
                if c.get("table") == "batch" and "error" not in c:
                    L.append(f"CV-CUDA alone: {c['batch']} x {c['size']} {c['kernel']} "
                             f"{c['k']}x{c['k']} {c['op']}: {fmt_ms(pos(c.get('event_ms')))} ms "
                             f"events, {fmt_ms(pos(c.get('cupti_ms')))} ms CUPTI per call.")

    L.append("")
    L.append("## Planner (calibration tables F, H and N)")
    L.append("")
    L.append(f"F: the planner's pick at 8K (its time from table E, else its forced time) against "
             f"the fastest forced method; right within {PLANNER_TOL:g}x.")
    L.append("")
    L.append("| kernel | pick | pick ms (predicted) | fastest forced | ms | pick / fastest | |")
    L.append("|---|---|---|---|---|---|---|")
    for r in pf:
        L.append(f"| {r['kernel']} {r['k']} | {r['pick'] or '-'} | {fmt_ms(r['pick_ms'])} "
                 f"({fmt_ms(r['pick_pred_ms'])}) | {r['fastest_forced'] or '-'} | "
                 f"{fmt_ms(r['fastest_forced_ms'])} | {fmt_x(r['ratio'])} | {r['status']} |")
    L.append("")
    L.append(f"H: the planner's rows shape against the fastest of rows x1..x64 (separable and "
             f"full sums), sep and tensor (a pick no column holds, such as rows_ring's rows by the "
             f"waves, at its own time); right within {PLANNER_TOL:g}x.")
    L.append("")
    L.append("| case | pick | pick ms | fastest | ms | pick / fastest | |")
    L.append("|---|---|---|---|---|---|---|")
    for r in ph:
        L.append(f"| {r['size']} {r['kernel']} {r['k']} | {r['pick'] or '-'} | "
                 f"{fmt_ms(r['pick_ms'])} | {r['fastest'] or '-'} | {fmt_ms(r['fastest_ms'])} | "
                 f"{fmt_x(r['ratio'])} | {r['status']} |")
    if pn:
        L.append("")
        L.append(f"N: on grey, grey + alpha, RGBA and RGB SoA images, the planner's pick (timed as "
                 f"it runs) against the fastest of sep and tensor forced into every tile shape "
                 f"(premultiplied alpha: sep and direct); right within {PLANNER_TOL:g}x.")
        L.append("")
        L.append("| case | channels | pick | pick ms | fastest | ms | pick / fastest | |")
        L.append("|---|---|---|---|---|---|---|---|")
        for r in pn:
            L.append(f"| {r['case']} | {r['channels']} | {r['pick'] or '-'} | "
                     f"{fmt_ms(r['pick_ms'])} | {r['fastest'] or '-'} | "
                     f"{fmt_ms(r['fastest_ms'])} | {fmt_x(r['ratio'])} | {r['status']} |")
    for letter in ("F", "H"):  # imgconv-bench's sections as they are, one level down
        s = md_section(md, letter)
        L.append("")
        if s:
            L.extend("#" + x if x.startswith("## ") else x for x in s.splitlines())
        else:
            L.append(f"(imgconv-bench table {letter}: not in {os.path.basename(md_path)})")

    doc = {"stamp": bench.get("stamp"), "device": bench.get("device"),
           "bench": os.path.basename(a.bench),
           "cvcuda": os.path.basename(a.cvcuda) if a.cvcuda else None,
           "targets": {"speed": SPEED, "copy": COPY, "separable": SEPARABLE, "npp31": NPP31,
                       "planner_tol": PLANNER_TOL},
           "summary": summary, "summary_line": line, "seed": seed, "large": large,
           "floors": fl, "small_floors": small, "batch": batch,
           "planner": {"F": pf, "H": ph, "N": pn}}
    text_md = "\n".join(L) + "\n"
    text_json = json.dumps(doc, indent=1) + "\n"
    done = []
    try:  # both or neither
        for path, text in ((a.out_md, text_md), (a.out_json, text_json)):
            with open(path + ".tmp", "w") as f:
                f.write(text)
            done.append(path)
    except OSError as e:
        for path in done:
            os.remove(path + ".tmp")
        raise BadInput(f"cannot write {e.filename}: {e.strerror}")
    for path in done:
        os.replace(path + ".tmp", path)
    print(line)


def main():
    ap = argparse.ArgumentParser(description="imgconv against NPP and CV-CUDA")
    ap.add_argument("--bench", required=True)
    ap.add_argument("--bench-md")
    ap.add_argument("--cvcuda")
    ap.add_argument("--out-md", required=True)
    ap.add_argument("--out-json", required=True)
    ap.add_argument("--note", action="append")
    a = ap.parse_args()
    try:
        write(a)
    except BadInput as e:
        print(f"peers_table: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
