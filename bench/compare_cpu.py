#!/usr/bin/env python3
"""compare_cpu.py - imgconv's `cpu` backend against OpenCV, libvips and
ImageMagick on this machine, in one run. Called by `bench/run.sh cpu`,
which checks the tools first; run that, not this.

Measures
  1. in memory, 1920x1080 and 3840x2160 RGB: cpu-bench (ic_convolve on a
     reused context, bench/cpu_bench.c) vs OpenCV cv2.filter2D, the same thread count
     (cv2.setNumThreads), the same kernel weights, correlation, BORDER_REFLECT_101
     (imgconv: mirror): 3x3 and 5x5 general (full-rank) kernels, 9x9 Gaussian;
     median of RUNS calls after warm-up;
  2. whole process on a PPM file (load, filter, save): the imgconv CLI vs
     `vips conv` (.mat kernel) vs ImageMagick `convert -morphology Convolve`,
     replicate border (what vips and ImageMagick do at edges), 3x3 and 9x9;
     median of PROC_RUNS runs after one warm-up;
  3. thread scaling: imgconv in memory with 1 vs N threads (two contexts in
     one process taking turns in short blocks, so that other load hits both
     alike);
  4. agreement: the imgconv CLI's output against OpenCV's on the same PPM;
  5. premultiplied alpha, 7680x4320 RGBA, 9x9 Gaussian and a random
     full-rank 9x9 blur: imgconv `cpu` --alpha auto (premultiplied) vs
     --alpha independent, and as the peer OpenCV's multiply -> filter2D ->
     divide sequence written in NumPy (OpenCV has no premultiplied filter).
It prints a Markdown report and writes it to REPORT (bench/run.sh cpu makes
it bench/results/cpu.md). With --alpha-only as the last argument it runs
section 5 alone. IC_BENCH_QUICK=1 (bench/run.sh --quick) measures 1920x1080
only, with few runs: a check that the suite works, not a measurement.
"""
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time

import cv2
import numpy as np

RUNS = 21
WARMUP = 3
PROC_RUNS = 11
SIZES = [(1920, 1080), (3840, 2160)]
# Full-rank "general" kernels (no factorisation applies) and a Gaussian.
KERNELS = [
    ("3x3 general", "1 2 0; -1 5 2; 0 -2 1 / 8", 1.0),
    ("5x5 general", "1 2 3 -1 0; 2 -3 4 1 1; 0 3 9 2 -1; -1 1 2 5 -2; 1 0 -1 2 1 / 31", 1.0),
    ("9x9 Gaussian", "gaussian:9", 2.0),
]
# Section 5: size, timed calls per process, rounds (independent and auto take
# turns, one process each, so that load changes hit both), target.
ALPHA_SIZE = (7680, 4320)
ALPHA_RUNS = 5
ALPHA_WARMUP = 1
ALPHA_ROUNDS = 2
ALPHA_PEER_RUNS = 3
ALPHA_TARGET = 1.5
if os.environ.get("IC_BENCH_QUICK") == "1":
    RUNS, WARMUP, PROC_RUNS, SIZES = 3, 1, 3, [(1920, 1080)]
    ALPHA_SIZE, ALPHA_RUNS, ALPHA_ROUNDS, ALPHA_PEER_RUNS = (1920, 1080), 2, 1, 1
# Targets: in-memory ratio per kernel above; whole process:
VIPS_TARGET = {"3x3": 1.3, "9x9": 2.0}
IM_TARGET = 4.0
SCALING_TARGET = 1.8


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def busy_ticks():
    """Busy time of all CPUs (user..steal) from /proc/stat, in seconds."""
    try:
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:9]]
    except (OSError, ValueError):
        return None
    user, nice, system, idle, iowait, irq, softirq, steal = v
    return (user + nice + system + irq + softirq + steal) / os.sysconf("SC_CLK_TCK")


def sh_load(cmd):
    """Runs cmd; returns (stdout, cores used meanwhile by everything else on
    the machine, incl. hypervisor steal): busy CPU time minus the child's."""
    import resource
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    b0, t0 = busy_ticks(), time.perf_counter()
    o = sh(cmd)
    b1, t1 = busy_ticks(), time.perf_counter()
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    if b0 is None or b1 is None:
        return o, float("nan")
    mine = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
    return o, max(0.0, (b1 - b0) - mine) / (t1 - t0)


def median_wall(cmd, runs):
    subprocess.run(cmd, check=True, capture_output=True)  # warm-up
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        subprocess.run(cmd, check=True, capture_output=True)
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts)


def kernel_weights(bench, text):
    """The effective weights imgconv uses, as a float32 numpy kernel."""
    f = sh([bench, "--kernel", text, "--dump-kernel"]).split()
    kw, kh = int(f[0]), int(f[1])
    return np.array([float(v) for v in f[2:]], dtype=np.float32).reshape(kh, kw)


def imgconv_mem(bench, size, text, threads, explain=False):
    """threads: a count, or a list of counts timed call by call in turn."""
    if isinstance(threads, (list, tuple)):
        threads = ",".join(str(t) for t in threads)
    cmd = [bench, "--backend", "cpu", "--size", "%dx%d" % size, "--kernel", text,
           "--threads", str(threads), "--runs", str(RUNS), "--warmup", str(WARMUP),
           "--border", "mirror"]
    if explain:
        cmd.append("--explain")
    o, other = sh_load(cmd)
    r = json.loads(o)
    r["other_cores"] = other
    return r


def time_calls(fn, warmup, runs):
    """Median and minimum ms of runs calls of fn() after warmup untimed ones."""
    for _ in range(warmup):
        fn()
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        fn()
        ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)


def opencv_mem(img, k, threads, warmup=WARMUP, runs=RUNS):
    """Median and minimum ms of cv2.filter2D into a preallocated output."""
    cv2.setNumThreads(threads)
    dst = np.empty_like(img)
    return time_calls(
        lambda: cv2.filter2D(img, -1, k, dst=dst, borderType=cv2.BORDER_REFLECT_101), warmup,
        runs)


def write_mat(path, k):
    kh, kw = k.shape
    with open(path, "w") as f:
        f.write("%d %d 1 0\n" % (kw, kh))
        for row in k:
            f.write(" ".join("%.9g" % v for v in row) + "\n")


def im_kernel(k):
    kh, kw = k.shape
    return "%dx%d: %s" % (kw, kh, ",".join("%.9g" % v for v in k.flatten()))


def mark(ok):
    return "yes" if ok else "**no**"


def full_rank_blur_text():
    """A random 9x9 blur (positive integer weights over their sum: it sums to 1,
    so --alpha auto premultiplies) of full rank: no factorisation applies."""
    rng = np.random.default_rng(12)
    k = rng.integers(1, 100, size=(9, 9))
    assert np.linalg.matrix_rank(k.astype(np.float64)) == 9
    rows = "; ".join(" ".join(str(int(v)) for v in row) for row in k)
    return "%s / %d" % (rows, int(k.sum()))


def premultiplied_numpy(img, k, out):
    """The usual premultiplied blur with OpenCV and NumPy: colour * alpha,
    cv2.filter2D on float32, divide by the filtered alpha (0 where it is 0),
    round and clamp to uint8 into out."""
    f = img.astype(np.float32)
    a = f[..., 3:4]
    f[..., :3] *= a
    g = cv2.filter2D(f, -1, k, borderType=cv2.BORDER_REFLECT_101)
    fa = g[..., 3:4]
    with np.errstate(divide="ignore", invalid="ignore"):
        g[..., :3] = np.where(fa > 0, g[..., :3] / fa, 0.0)
    np.clip(np.rint(g, out=g), 0, 255, out=g)
    out[...] = g


def numpy_alpha_mem(img, k, threads):
    cv2.setNumThreads(threads)
    out = np.empty_like(img)
    return time_calls(lambda: premultiplied_numpy(img, k, out), 1, ALPHA_PEER_RUNS)


def alpha_section(out, bench, ncores):
    w, h = ALPHA_SIZE
    out("## Premultiplied alpha: %dx%d RGBA, `--alpha auto` vs `--alpha independent`"
        % (w, h))
    out("")
    out("cpu-bench's chart with an alpha ramp (transparent left quarter, translucent middle, "
        "holes), correlation, reflect-101 border, %d threads. Filter time of ic_convolve: "
        "median of %d calls after %d warm-up calls in one process; %d rounds in which the two "
        "modes take turns (one process each), the best round's median given (and the "
        "medians of all rounds). Target: auto / independent <= %g. The peer is OpenCV's "
        "multiply -> filter2D -> divide sequence written in NumPy (float32, the same "
        "weights, a random RGBA image of the same size; OpenCV has no premultiplied "
        "filter), median of %d calls; cv2.filter2D on the uint8 RGBA image alone "
        "(independent channels) for scale."
        % (ncores, ALPHA_RUNS, ALPHA_WARMUP, ALPHA_ROUNDS, ALPHA_TARGET, ALPHA_PEER_RUNS))
    out("")
    out("| kernel | independent ms | auto (premultiplied) ms | auto / independent | target | met "
        "| NumPy+OpenCV premultiplied ms | cv2.filter2D uint8 ms | other load | imgconv plan |")
    out("|---|---|---|---|---|---|---|---|---|---|")
    rng = np.random.default_rng(5)
    img = rng.integers(0, 256, size=(h, w, 4), dtype=np.uint8)
    for name, text in (("9x9 Gaussian", "gaussian:9"),
                       ("9x9 random full-rank blur", full_rank_blur_text())):
        med = {"independent": [], "auto": []}
        other, plan = [], ""
        for _ in range(ALPHA_ROUNDS):
            for mode in ("independent", "auto"):
                cmd = [bench, "--backend", "cpu", "--size", "%dx%d" % (w, h), "--channels", "4",
                       "--kernel", text, "--alpha", mode, "--threads", str(ncores), "--runs",
                       str(ALPHA_RUNS), "--warmup", str(ALPHA_WARMUP), "--border", "mirror",
                       "--explain"]
                o, load = sh_load(cmd)
                r = json.loads(o)
                med[mode].append(r["median_ms"])
                other.append(load)
                plan = r.get("plan", "").split(", %d of" % ncores)[0].replace("cpu: ", "")
        ti, ta = min(med["independent"]), min(med["auto"])
        k = kernel_weights(bench, text)
        tn, _ = numpy_alpha_mem(img, k, ncores)
        tc, _ = opencv_mem(img, k, ncores, 1, ALPHA_PEER_RUNS)
        ratio = ta / ti
        out("| %s | %.1f (%s) | %.1f (%s) | %.2fx | <= %gx | %s | %.1f | %.1f | %.2f | %s |"
            % (name, ti, ", ".join("%.0f" % v for v in med["independent"]), ta,
               ", ".join("%.0f" % v for v in med["auto"]), ratio, ALPHA_TARGET,
               mark(ratio <= ALPHA_TARGET), tn, tc,
               statistics.mean(other), plan))
    out("")


def main():
    alpha_only = len(sys.argv) == 5 and sys.argv[4] == "--alpha-only"
    if len(sys.argv) != 4 and not alpha_only:
        sys.exit("usage: compare_cpu.py IMGCONV CPU_BENCH REPORT.md [--alpha-only]")
    cli, bench, report = sys.argv[1:4]
    if alpha_only:
        return main_alpha(cli, bench, report)
    ncores = os.cpu_count() or 1
    tmp = tempfile.mkdtemp(prefix="ic-compare-")
    load_before = os.getloadavg()
    lines = []
    out = lines.append

    cpu_model = cpu_model_name()
    flags = ""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("flags"):
                    fl = line.split()
                    flags = " ".join(x for x in ("sse2", "avx2", "fma", "avx512f", "avx512bw")
                                     if x in fl)
                    break
    except OSError:
        pass
    vips_ver = sh(["vips", "--version"]).strip()
    im_ver = sh(["convert", "-version"]).splitlines()[0].replace("Version: ", "")
    ic_ver = sh([cli, "--version"]).splitlines()[0]

    # ---- the test images, from the CLI's chart ---------------------------------
    ppm = {}
    for w, h in SIZES:
        p = os.path.join(tmp, "chart-%dx%d.ppm" % (w, h))
        sh([cli, "--chart", "%dx%dx3" % (w, h), p])
        ppm[(w, h)] = p
    weights = {text: kernel_weights(bench, text) for _, text, _ in KERNELS}

    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    out("# imgconv `cpu` backend vs OpenCV, libvips, ImageMagick (%s)" % date)
    out("")
    out("Written by `bench/run.sh cpu` (do not edit by hand). Machine: %s, %d cores "
        "online (%s), %s. %s; OpenCV %s (python3-opencv); %s; %s."
        % (cpu_model, ncores, flags, platform.platform(), ic_ver, cv2.__version__, vips_ver,
           im_ver))
    out("Load average before the run: %.2f %.2f %.2f. The machine is shared: the \"other load\" "
        "columns give how many cores everything else (other processes, hypervisor steal) kept "
        "busy while imgconv was measured (busy time in /proc/stat minus the benchmark's own "
        "CPU time, over its wall time); on 2 cores, 0.5 other load takes a quarter of the "
        "machine from a 2-thread run." % load_before)
    out("")

    # ---- 1. in memory -----------------------------------------------------------
    out("## In memory: ic_convolve vs cv2.filter2D, %d threads each" % ncores)
    out("")
    out("Same uint8 RGB chart, same float32 weights, correlation, reflect-101 border, output "
        "uint8. Median (and minimum) of %d calls after %d warm-up calls; ratio of the medians = "
        "OpenCV / imgconv (> 1: imgconv faster). Both write into an output allocated "
        "once." % (RUNS, WARMUP))
    out("")
    out("| size | kernel | imgconv ms | OpenCV ms | ratio | target | met | other load | "
        "imgconv plan |")
    out("|---|---|---|---|---|---|---|---|---|")
    plans = {}
    for size in SIZES:
        img = cv2.imread(ppm[size], cv2.IMREAD_UNCHANGED)
        for name, text, target in KERNELS:
            r = imgconv_mem(bench, size, text, ncores, explain=True)
            o, omin = opencv_mem(img, weights[text], ncores)
            ratio = o / r["median_ms"]
            plan = r.get("plan", "")
            plan = plan.split(", %d of" % ncores)[0].replace("cpu: ", "")
            plans[name] = plan
            out("| %dx%d | %s | %.2f (%.2f) | %.2f (%.2f) | %.2fx | >= %gx | %s | %.2f | %s |"
                % (size[0], size[1], name, r["median_ms"], r["min_ms"], o, omin, ratio, target,
                   mark(ratio >= target), r["other_cores"], plan))
    out("")

    # ---- 2. whole process -----------------------------------------------------------
    out("## Whole process on a 1920x1080 RGB PPM: load, filter, save")
    out("")
    out("Replicate border for all three (libvips and ImageMagick extend edges by copying). "
        "`vips conv` runs at its default float precision, so it writes a float PFM; the "
        "`--precision integer` row (exact for the integer 3x3 kernel, output uchar) is given "
        "for reference. Median wall time of %d runs after one warm-up; ratio = other / "
        "imgconv." % PROC_RUNS)
    out("")
    out("| kernel | imgconv ms | vips conv ms | ratio | target | met | ImageMagick ms | ratio "
        "| target | met |")
    out("|---|---|---|---|---|---|---|---|---|---|")
    src = ppm[(1920, 1080)]
    for (name, text, _), key in ((KERNELS[0], "3x3"), (KERNELS[2], "9x9")):
        k = weights[text]
        mat = os.path.join(tmp, "k.mat")
        write_mat(mat, k)
        t_ic = median_wall([cli, "--backend", "cpu", "--kernel", text, "--correlate", "--border",
                            "replicate", src, os.path.join(tmp, "ic.ppm")], PROC_RUNS)
        t_vips = median_wall(["vips", "conv", src, os.path.join(tmp, "vips.ppm"), mat],
                             PROC_RUNS)
        t_im = median_wall(["convert", src, "-morphology", "Convolve", im_kernel(k),
                            os.path.join(tmp, "im.ppm")], PROC_RUNS)
        rv, ri = t_vips / t_ic, t_im / t_ic
        out("| %s | %.1f | %.1f | %.2fx | >= %gx | %s | %.1f | %.2fx | >= %gx | %s |"
            % (name, t_ic, t_vips, rv, VIPS_TARGET[key], mark(rv >= VIPS_TARGET[key]), t_im, ri,
               IM_TARGET, mark(ri >= IM_TARGET)))
        if key == "3x3":
            mat8 = os.path.join(tmp, "k8.mat")  # integer mask, scale 8: the same kernel
            with open(mat8, "w") as f:
                f.write("3 3 8 0\n")
                for row in (k * 8.0):
                    f.write(" ".join("%d" % round(v) for v in row) + "\n")
            t_vi = median_wall(["vips", "conv", src, os.path.join(tmp, "vipsi.ppm"), mat8,
                                "--precision", "integer"], PROC_RUNS)
            out("| %s, vips integer | %.1f | %.1f | %.2fx | - | - | - | - | - | - |"
                % (name, t_ic, t_vi, t_vi / t_ic))
    t_copy = median_wall(["vips", "copy", src, os.path.join(tmp, "copy.ppm")], PROC_RUNS)
    out("")
    out("For scale: `vips copy` of the same file (load + save, no filter) takes %.1f ms." % t_copy)
    out("")

    # ---- 3. thread scaling ------------------------------------------------------------
    out("## Thread scaling of imgconv `cpu` (in memory)")
    out("")
    out("One process, a 1-thread and a %d-thread context taking turns in blocks of 3 timed "
        "calls, each block after at least 20 ms of untimed calls that wake that context's "
        "workers (a worker that slept joins its next call late), %d timed calls each; "
        "medians." % (ncores, RUNS))
    out("")
    out("| size | kernel | 1 thread ms | %d threads ms | speed-up | target | met | other load |"
        % ncores)
    out("|---|---|---|---|---|---|---|---|")
    floor = ("1x1 identity (memory floor)", "1", 0.0)
    for size in SIZES:
        for name, text, _ in KERNELS + [floor]:
            r = imgconv_mem(bench, size, text, [1, ncores])
            t1, tn = r["median_ms"]
            target = SCALING_TARGET if ncores == 2 else 0.9 * ncores
            if text == "1":
                out("| %dx%d | %s | %.2f | %.2f | %.2fx | - | - | %.2f |"
                    % (size[0], size[1], name, t1, tn, t1 / tn, r["other_cores"]))
            else:
                out("| %dx%d | %s | %.2f | %.2f | %.2fx | >= %gx | %s | %.2f |"
                    % (size[0], size[1], name, t1, tn, t1 / tn, target, mark(t1 / tn >= target),
                       r["other_cores"]))
    out("")
    out("The 1x1 row does no arithmetic: it converts every sample to float and back, the "
        "memory traffic every kernel pays. Where it does not speed up with threads, memory "
        "bandwidth, not the cores, bounds the small kernels at that size.")
    out("")

    # ---- 4. agreement with OpenCV ------------------------------------------------------
    out("## Agreement with OpenCV (same PPM, correlation, reflect-101)")
    out("")
    out("| kernel | samples equal | max difference (levels) |")
    out("|---|---|---|")
    img = cv2.imread(src, cv2.IMREAD_UNCHANGED)
    for name, text, _ in KERNELS:
        dst = os.path.join(tmp, "agree.ppm")
        sh([cli, "--backend", "cpu", "--kernel", text, "--correlate", "--border", "mirror", src,
            dst])
        a = cv2.imread(dst, cv2.IMREAD_UNCHANGED).astype(np.int16)
        b = cv2.filter2D(img, -1, weights[text],
                         borderType=cv2.BORDER_REFLECT_101).astype(np.int16)
        d = np.abs(a - b)
        out("| %s | %.4f%% | %d |" % (name, 100.0 * np.mean(d == 0), int(d.max())))
    out("")
    alpha_section(out, bench, ncores)
    write_report(lines, report)
    for f in os.listdir(tmp):
        os.unlink(os.path.join(tmp, f))
    os.rmdir(tmp)


def cpu_model_name():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def write_report(lines, path):
    """Ends the report with the load average, prints it and writes it to path."""
    lines.append("Load average after the run: %.2f %.2f %.2f." % os.getloadavg())
    text = "\n".join(lines) + "\n"
    print(text)
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)
    print("written: %s" % path)


def main_alpha(cli, bench, report):
    """Section 5 alone, into the report."""
    ncores = os.cpu_count() or 1
    lines = []
    out = lines.append
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d")
    ic_ver = sh([cli, "--version"]).splitlines()[0]
    out("# imgconv `cpu` backend: premultiplied alpha cost (%s)" % date)
    out("")
    out("Written by `bench/run.sh cpu --alpha-only` (do not edit by hand). Machine: %s, %d "
        "cores online, %s. %s; OpenCV %s; NumPy %s. Load average before the run: %.2f %.2f "
        "%.2f (the machine is shared; \"other load\" = cores kept busy by everything else "
        "while imgconv ran)."
        % (cpu_model_name(), ncores, platform.platform(), ic_ver, cv2.__version__,
           np.__version__, *os.getloadavg()))
    out("")
    alpha_section(out, bench, ncores)
    write_report(lines, report)


if __name__ == "__main__":
    main()
