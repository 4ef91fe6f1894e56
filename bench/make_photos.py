#!/usr/bin/env python3
"""make_photos.py - photograph-like test images for bench/run.sh suites.

Real photographs (scikit-image's bundled colour images: astronaut, coffee,
chelsea, rocket, ...) cropped at random, resized to WxH, given a random
exposure and white-balance change and sensor-like Gaussian noise, so that
they compress like camera output rather than like flat charts. Written as
binary PPM (P6); the caller converts them to JPEG or PNG.

usage: make_photos.py OUTDIR COUNT [W H SEED]
Exit 3 when numpy or scikit-image is missing (the caller falls back).
"""
import os
import sys

try:
    import numpy as np
    from skimage import data
    from skimage.transform import resize
except ImportError as e:  # the caller falls back to generated charts
    print(f"make_photos.py: {e}", file=sys.stderr)
    sys.exit(3)

NAMES = ["astronaut", "coffee", "chelsea", "rocket", "hubble_deep_field",
         "immunohistochemistry", "retina", "motorcycle_left", "lily", "colorwheel"]


def sources():
    out = []
    for name in NAMES:
        f = getattr(data, name, None)
        if f is None:
            continue
        try:
            im = f()
        except Exception:  # a data file that this skimage does not ship
            continue
        if isinstance(im, tuple):
            im = im[0]
        if im.ndim != 3 or im.shape[2] < 3:
            continue
        im = im[:, :, :3]
        if im.dtype != np.uint8:
            im = (np.clip(im, 0, 1) * 255).astype(np.uint8) if im.dtype.kind == "f" else im.astype(np.uint8)
        out.append((name, im))
    return out


def main():
    if len(sys.argv) < 3:
        print(__doc__, file=sys.stderr)
        sys.exit(2)
    outdir, count = sys.argv[1], int(sys.argv[2])
    w = int(sys.argv[3]) if len(sys.argv) > 3 else 1920
    h = int(sys.argv[4]) if len(sys.argv) > 4 else 1080
    rng = np.random.default_rng(int(sys.argv[5]) if len(sys.argv) > 5 else 2026)
    src = sources()
    if not src:
        print("make_photos.py: no colour image in skimage.data", file=sys.stderr)
        sys.exit(3)
    os.makedirs(outdir, exist_ok=True)
    for i in range(count):
        name, im = src[i % len(src)]
        sh, sw = im.shape[:2]
        # A random crop of the frame's aspect ratio, 75..100% of the largest.
        aspect = w / h
        ch = min(sh, int(sw / aspect))
        ch = max(16, int(ch * rng.uniform(0.75, 1.0)))
        cw = min(sw, int(ch * aspect))
        y0 = int(rng.integers(0, sh - ch + 1))
        x0 = int(rng.integers(0, sw - cw + 1))
        crop = im[y0:y0 + ch, x0:x0 + cw].astype(np.float32) / 255.0
        big = resize(crop, (h, w), order=1, anti_aliasing=False, preserve_range=True)
        gain = rng.uniform(0.85, 1.15) * rng.uniform(0.95, 1.05, size=3)
        noise = rng.normal(0.0, rng.uniform(1.5, 4.0) / 255.0, size=big.shape)
        px = np.clip((big * gain + noise) * 255.0 + 0.5, 0, 255).astype(np.uint8)
        path = os.path.join(outdir, f"photo{i:03d}.ppm")
        with open(path, "wb") as f:
            f.write(f"P6\n{w} {h}\n255\n".encode())
            f.write(px.tobytes())
        print(f"{path}: {name} crop {cw}x{ch}+{x0}+{y0}", file=sys.stderr)


if __name__ == "__main__":
    main()
