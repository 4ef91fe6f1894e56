#!/usr/bin/env python3
"""plot.py - draws imgconv-bench's JSON as one PNG (called by imgconv-bench).

usage: plot.py BENCH.json OUT.png

Panels: (A) speedup over seq vs resolution, 3x3 Gaussian; (B) speedup vs
filter size at HD; (E) 8K large kernels: cuda, NPP and the floor in ms.
Exits non-zero (the benchmark then skips the plot) when matplotlib is missing.
"""
import json
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(sys.argv[1]) as f:
        data = json.load(f)
    cells = data["cells"]

    def series(table, key):
        out = {}
        for c in cells:
            if c["table"] != table or c["speedup_vs_seq"] <= 0 or c["backend"] == "seq":
                continue
            out.setdefault(c["backend"], []).append((c[key], c["speedup_vs_seq"]))
        return out

    fig, axes = plt.subplots(1, 3, figsize=(18, 5.5))
    order = ["480p", "720p", "HD", "4K", "8K"]
    ax = axes[0]
    for be, pts in sorted(series("A", "size").items()):
        pts = sorted(pts, key=lambda p: order.index(p[0]) if p[0] in order else 9)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=be,
                linewidth=3 if be == "cuda" else 1)
    ax.set_yscale("log")
    ax.set_title("A. speedup over seq, 3x3 Gaussian, RGB")
    ax.set_ylabel("x seq")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)

    ax = axes[1]
    for be, pts in sorted(series("B", "k").items()):
        pts = sorted(pts)
        ax.plot([f"{p[0]}x{p[0]}" for p in pts], [p[1] for p in pts], marker="o", label=be,
                linewidth=3 if be == "cuda" else 1)
    ax.set_yscale("log")
    ax.set_title("B. speedup over seq at HD, Gaussian")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", alpha=0.3)

    ax = axes[2]
    rows = [c for c in cells if c["table"] == "E" and c["backend"] == "cuda"]
    labels = [f'{c["kernel"][:5]} {c["k"]}' for c in rows]
    x = range(len(rows))
    ax.bar([i - 0.3 for i in x], [c["ms"] for c in rows], width=0.2, label="cuda")
    ax.bar([i - 0.1 for i in x], [c["floor_ms"] for c in rows], width=0.2, label="floor")
    ax.bar([i + 0.1 for i in x], [max(c["npp_filter32f_ms"], 0) for c in rows], width=0.2,
           label="NPP Filter32f")
    ax.bar([i + 0.3 for i in x], [max(c["npp_gauss_ms"], 0) for c in rows], width=0.2,
           label="NPP GaussBorder")
    ax.set_xticks(list(x))
    ax.set_xticklabels(labels, rotation=45, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel("kernel ms")
    ax.set_title("E. 8K RGB: cuda vs floor vs NPP")
    ax.legend(fontsize=7)
    ax.grid(True, which="both", axis="y", alpha=0.3)

    fig.suptitle(f'imgconv bench {data["stamp"]} - {data["device"]}', fontsize=9)
    fig.tight_layout()
    fig.savefig(sys.argv[2], dpi=110)
    return 0


if __name__ == "__main__":
    sys.exit(main())
