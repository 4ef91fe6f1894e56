#!/usr/bin/env python3
"""float32 RGB Gaussians (8K, HD, 480p), imgconv's `cuda` beside CV-CUDA's conv2d.

Usage (GPU machine, `import imgconv` built with CUDA, `import torch` and,
for the CV-CUDA column, `import cvcuda` working):
  f32_cells.py OUT.md [--reps N] [--quick]

Cells: RGB float32 (HWC, interleaved) in [0, 1], replicate border, imgconv's
gaussian:K weights (bench/cvcuda_cells.py): 8K (7680x4320) with 3x3 and 9x9,
then the small cells, HD (1920x1080) and 480p (640x480) with 3x3, where a
launch's fixed costs weigh more.
imgconv filters PyTorch CUDA tensors zero-copy (imgconv.Context("cuda")
.convolve(..., out=)); CV-CUDA runs conv2d_into on RGBf32 images with an F32
kernel. Timing is bench/cvcuda_cells.py's: the median over reps calls
between CUDA events, queued behind a spin kernel, inputs rotating over
>= 150 MB (event_ms), and the median of the summed kernel durations per call
from CUPTI (cupti_ms). Each output is checked against torch's float64
conv2d: the largest |difference| over the float32 bound of
docs/definitions.md ("Float samples") should stay under 1. The last column
names the kernels one call launched (CUPTI), so the table says which fast-path
method ran.
--quick: 8K and 480p 3x3 only, fewer reps.
"""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from cvcuda_cells import Timer, gaussian_weights, rotation  # noqa: E402

SIZES = {"8K": (7680, 4320), "HD": (1920, 1080), "480p": (640, 480)}
CELLS = [("8K", 3), ("8K", 9), ("HD", 3), ("480p", 3)]
QUICK_CELLS = [("8K", 3), ("480p", 3)]


def kernel_names(names):
    """The kernels of one call, without argument lists, at most two."""
    short = sorted({n.split("(")[0].replace("void ", "").strip() for n in names})
    return "; ".join(short[:2]) + (" ..." if len(short) > 2 else "")


def reference(src, weights, torch):
    """torch float64 conv2d with replicate padding (correlation of the flipped
    kernel: the Gaussians are symmetric) and the bound sum |w x|."""
    k = len(weights)
    x = src.permute(2, 0, 1).unsqueeze(1).double()  # C x 1 x H x W
    wt = torch.tensor(weights, dtype=torch.float64, device=src.device).view(1, 1, k, k)
    xp = torch.nn.functional.pad(x, (k // 2,) * 4, mode="replicate")
    ref = torch.nn.functional.conv2d(xp, wt)
    bound = torch.nn.functional.conv2d(xp.abs(), wt.abs()) * (k * k + 20) * 2.0 ** -24
    return ref.squeeze(1).permute(1, 2, 0), bound.squeeze(1).permute(1, 2, 0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("out")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    import torch
    import imgconv
    if not torch.cuda.is_available():
        print("f32_cells: no CUDA device", file=sys.stderr)
        return 77
    try:
        import cvcuda
    except ImportError:
        cvcuda = None
    reps = 5 if a.quick else a.reps
    tm = Timer(reps)
    ctx = imgconv.Context("cuda")
    rows = []
    size_of_bufs = None
    for size, k in QUICK_CELLS if a.quick else CELLS:
        W, H = SIZES[size]
        if size != size_of_bufs:
            srcs = dsts = ib = ob = None  # one size at a time: 8K copies are large
            nbuf = rotation(W * H * 3 * 4)
            gen = torch.Generator(device="cuda").manual_seed(32)
            srcs = [torch.rand((H, W, 3), dtype=torch.float32, device="cuda", generator=gen)
                    for _ in range(nbuf)]
            dsts = [torch.empty_like(srcs[0]) for _ in range(2)]
            size_of_bufs = size
        text, weights = f"gaussian:{k}", gaussian_weights(k)
        ref, bound = reference(srcs[0], weights, torch)

        def worst(out):
            return float(((out.double() - ref).abs() / bound).max())

        calls = [lambda i=i: ctx.convolve(srcs[i % nbuf], text, border="replicate",
                                          out=dsts[i % 2]) for i in range(2 * nbuf)]
        ev, _ = tm.events(calls)
        cu = tm.cupti(calls)
        dsts[0].fill_(float("nan"))  # poisoned: a sample the call misses fails the check
        ctx.convolve(srcs[0], text, border="replicate", out=dsts[0])
        torch.cuda.synchronize()
        rows.append((size, f"{k}x{k}", "imgconv cuda", ev, cu[0], worst(dsts[0]),
                     kernel_names(cu[3])))
        if cvcuda is None:
            rows.append((size, f"{k}x{k}", "CV-CUDA conv2d", None, None, None, ""))
            continue

        def varshape(t):
            b = cvcuda.ImageBatchVarShape(1)
            b.pushback(cvcuda.as_image(t, cvcuda.Format.RGBf32))
            return b
        ib = [varshape(s) for s in srcs]
        ob = [varshape(d) for d in dsts]
        kern = torch.tensor(weights, dtype=torch.float32, device="cuda")
        kb = cvcuda.ImageBatchVarShape(1)
        kb.pushback(cvcuda.as_image(kern, cvcuda.Format.F32))
        anc = cvcuda.as_tensor(torch.full((1, 2), -1, dtype=torch.int32, device="cuda"), "NC")
        border = cvcuda.Border.REPLICATE
        ccalls = [lambda i=i: cvcuda.conv2d_into(ob[i % 2], ib[i % nbuf], kb, anc, border)
                  for i in range(2 * nbuf)]
        ev, _ = tm.events(ccalls)
        cu = tm.cupti(ccalls)
        dsts[0].fill_(float("nan"))
        cvcuda.conv2d_into(ob[0], ib[0], kb, anc, border)
        torch.cuda.synchronize()
        rows.append((size, f"{k}x{k}", "CV-CUDA conv2d", ev, cu[0], worst(dsts[0]),
                     kernel_names(cu[3])))

    def f(v, fmt):
        return "n/a" if v is None else fmt % v
    with open(a.out, "w") as o:
        o.write("## float32 RGB (HWC), replicate border, "
                f"{torch.cuda.get_device_name()}\n\n")
        o.write("8K is 7680x4320, HD 1920x1080, 480p 640x480.\n\n")
        o.write("| image | kernel | implementation | event ms | CUPTI kernel ms "
                "| worst error / bound | kernels a call |\n")
        o.write("|---|---|---|---|---|---|---|\n")
        for r in rows:
            o.write(f"| {r[0]} | {r[1]} | {r[2]} | {f(r[3], '%.3f')} | {f(r[4], '%.3f')} | "
                    f"{f(r[5], '%.3f')} | {r[6] or 'n/a'} |\n")
    print(open(a.out).read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
