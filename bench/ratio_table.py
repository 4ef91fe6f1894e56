#!/usr/bin/env python3
"""ratio_table.py - seed 003 Fig 7.14's arithmetic-to-global-memory ratio as
measured: turns the Nsight Compute runs of `scripts/gpu-check.sh ratio` (one
kernel launch per backend and filter, `ncu --csv --page raw --print-units
base`) into a Markdown table next to the formula's values (imgconv-bench
--tables R, whose Markdown this reads; the formula itself lives only in
bench/fig714.h). Run by gpu-check.sh; the output is never edited by hand.

  ratio_table.py MANIFEST BENCH_MD OUT_MD [HEADER_LINE...]

MANIFEST: one run per line, tab-separated:
  label  backend  K  nominal_macs  mix  ncu_output_file
mix says which global loads the kernel issues, to split the threads' load
count N and requested bytes B (smsp__sass_thread_inst_executed_op_global_ld
[_pred_on], smsp__sass_data_bytes_mem_global_op_ld) into samples and weights:
  u8f32  uint8 samples and float32 weights (the strategy backends:
         weights by __ldg, one per multiply-add): weights W = (B - N) / 3,
         sample bytes S = N - W;
  rows   the rows method: 16-byte sample loads in the interior threads, and
         in the edge threads one uint8 sample and one float32 weight per tap:
         W = (16 N - B) / 27, sample bytes S = B - 4 W.
The split is checked in the table: W / FFMA is 1.00 for u8f32 kernels.
"""
import csv
import re
import sys

CORE = [
    "gpu__time_duration.sum",
    "smsp__sass_thread_inst_executed_op_ffma_pred_on.sum",
    "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum",
    "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum",
    "lts__t_sectors_srcunit_tex_op_read.sum",
    "dram__bytes_read.sum",
]
# the threads' global loads: count and bytes, under whichever name the ncu
# run used (sm__ or smsp__, with or without _pred_on; _pred_on preferred)
THREAD = [
    r"^sm(sp)?__sass_thread_inst_executed_op_global_ld(_pred_on)?\.sum$",
    r"^sm(sp)?__sass_data_bytes_mem_global_op_ld\.sum$",
]


def thread_metric(m, pattern):
    names = sorted((k for k in m if re.match(pattern, k)), key=lambda k: "_pred_on" not in k)
    return m[names[0]] if names else None


def num(s):
    s = (s or "").replace(",", "").strip()
    try:
        return float(s)
    except ValueError:
        return None


def read_ncu(path):
    """The first kernel row of an ncu --csv --page raw output: (name, {metric: value})."""
    header = None
    with open(path, errors="replace") as f:
        lines = [l for l in f if l.startswith('"')]
    for row in csv.reader(lines):
        if not row:
            continue
        if row[0] == "ID":
            header = row
            continue
        if header is None or num(row[0]) is None:
            continue  # the units line, or anything before the header
        vals = dict(zip(header, row))
        return vals.get("Kernel Name", "?"), {k: num(v) for k, v in vals.items()}
    return None, {}


def short_kernel(name):
    name = name.replace("(anonymous namespace)::", "")
    m = re.match(r"([A-Za-z_0-9]+)<([^()]*)>", name)
    if not m:
        return name.split("(")[0]
    args = m.group(2).replace("ic_cu_", "").replace(", wglobal", "").replace(" ", "")
    return "%s<%s>" % (m.group(1).replace("ic_cu_conv_kernel", "conv"), args)


def formula_rows(bench_md):
    """imgconv-bench's formula table (--tables R): {(design key, K): MAC per element}."""
    out = {}
    try:
        text = open(bench_md).read()
    except OSError:
        return out
    sec = text.split("## R.", 1)
    if len(sec) < 2:
        return out
    for line in sec[1].split("\n## ", 1)[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 8 or not re.match(r"^\d+x\d+$", cells[2]):
            continue
        k = int(cells[2].split("x")[0])
        design, tile, mpe = cells[0].replace("*", ""), cells[1], num(cells[5])
        if mpe is None:
            continue
        keys = []
        if "cuda-tiled-in" in design:
            keys.append("cuda-tiled-in")
        if "cuda-tiled-out" in design:
            keys += ["cuda-tiled-out", "cuda-tiled-halo"]
        if "cuda-tiled-cached" in design and "as loads" in tile:
            keys.append("cuda-tiled-cached")
        if "cuda-global" in design:
            keys.append("cuda-global")
        m = re.search(r"rows x(\d)", design)
        if m:
            keys.append("rows x" + m.group(1))
        if design.startswith("bound"):
            keys.append("bound")
        for key in keys:
            out[(key, k)] = mpe
    return out


def f(x, fmt="%.2f"):
    return fmt % x if x is not None else "n/a"


def ratio(a, b):
    return a / b if a is not None and b else None


def main(argv):
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    manifest, bench_md, out_md = argv[1:4]
    header_lines = argv[4:]
    formula = formula_rows(bench_md)
    rows, missing = [], []
    for line in open(manifest):
        parts = line.rstrip("\n").split("\t")
        if len(parts) != 6:
            continue
        label, backend, k, nominal, mix, path = parts
        k, nominal = int(k), float(nominal)
        kname, m = read_ncu(path)
        if kname is None:
            missing.append("%s %dx%d" % (label, k, k))
            continue
        fma = m.get(CORE[1])
        n, b = thread_metric(m, THREAD[0]), thread_metric(m, THREAD[1])
        w = s = None
        if n is not None and b is not None:
            if mix == "u8f32":
                w = (b - n) / 3.0
                s = n - w
            elif mix == "rows":
                w = (16.0 * n - b) / 27.0
                s = b - 4.0 * w
        l1_bytes = m.get(CORE[3]) * 32 if m.get(CORE[3]) is not None else None
        l2_bytes = m.get(CORE[4]) * 32 if m.get(CORE[4]) is not None else None
        per_sample = ratio(fma, s)
        rows.append(
            "| %s | %dx%d | `%s` | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |"
            % (
                label,
                k,
                k,
                short_kernel(kname),
                f(ratio(m.get(CORE[0]), 1e3), "%.1f"),
                f(ratio(fma, nominal), "%.3f"),
                f(ratio(w, fma), "%.3f"),
                f(ratio(s, 1e6), "%.1f"),
                f(per_sample),
                f(formula.get((label, k))),
                f(per_sample / 2.0 if per_sample is not None else None),
                f(ratio(fma, m.get(CORE[2])), "%.1f"),
                f(ratio(fma, l1_bytes)),
                f(ratio(fma, l2_bytes)),
                f(ratio(fma, m.get(CORE[5]))),
            )
        )
    with open(out_md, "w") as o:
        o.write("# Seed 003 Fig 7.14 measured: arithmetic-to-global-memory ratio\n\n")
        for h in header_lines:
            o.write(h + "\n")
        o.write(
            "\nOne launch per backend and filter (`ncu --clock-control none --cache-control all "
            "--launch-count 1`: caches flushed before each replay pass, so DRAM bytes are cold-cache), "
            "1920x1080 RGB uint8 AoS chart, replicate border, random full-rank KxK kernels "
            "(the rows method forced with --tune method=rows,rows-full=1,"
            "rows-shape=1|2|4). Multiply-adds (MAC) are the measured FFMA count "
            "(smsp__sass_thread_inst_executed_op_ffma_pred_on.sum); nominal = 1920 x 1080 x 3 "
            "x K*K.\n\n"
            "Columns: *weights/FFMA* checks the split of the threads' global loads into samples "
            "and weights (1.00: one weight load per MAC, the strategy backends' __ldg; rows: "
            "only its edge threads load weights); *MAC / sample* = FFMA / uint8 samples loaded "
            "by the threads' load instructions (one sample = one byte; comparable to the "
            "formula's MAC / element, table R, interior tile, weights not counted); *seed OP/B* "
            "= MAC / sample x 2 / 4, the seed's unit (float32 elements); *MAC / request* per L1 "
            "global-load request (warp instruction, samples and weights); *MAC / L1 B*, *MAC / "
            "L2 B*, *MAC / DRAM B*: per byte of global loads at the L1 (32-byte sectors, "
            "samples and weights), per byte L1 fetched from L2 (its misses), per byte read from "
            "DRAM. The formula counts load instructions with no cache; the L2 and DRAM columns "
            "show what the caches make of them (bound K*K MAC per byte at DRAM when every input "
            "byte is read once).\n\n"
        )
        o.write(
            "| backend | filter | kernel | us | FFMA / nominal | weights / FFMA | samples "
            "loaded (M) | MAC / sample | formula MAC / element (table R) | seed OP/B (float32) "
            "| MAC / request | MAC / L1 B | MAC / L2 B | MAC / DRAM B |\n"
            "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"
        )
        for r in rows:
            o.write(r + "\n")
        for k in sorted({int(r.split("|")[2].strip().split("x")[0]) for r in rows}):
            if ("bound", k) in formula:
                o.write(
                    "\n- Bound %dx%d: %s MAC per element (table R)."
                    % (k, k, f(formula[("bound", k)], "%.0f"))
                )
        if missing:
            o.write(
                "\n\nNo ncu result for: %s (see the ncu output beside this file).\n"
                % ", ".join(missing)
            )
        o.write("\n")
    print(open(out_md).read())
    return 0 if rows and not missing else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
