"""Builds imgconv._imgconv, the C extension, linked statically against the
imgconv C library (libimgconv.a is position-independent for that).

Where the library comes from, first match wins:
  1. IMGCONV_BUILD_DIR=DIR: a CMake build of this checkout (DIR/libimgconv.a,
     DIR/imgconv.pc for the libraries it needs) - what `make test` uses;
  2. the checkout's own build/ (what `make` writes), when it is a build of
     this checkout and newer than every source file;
  3. `pkg-config imgconv`: an installed imgconv (`make install`), or
     IMGCONV_PREFIX=P to look under P/lib*/pkgconfig;
  4. otherwise the checkout is configured and built with CMake, on every core,
     into a cache folder outside it ($XDG_CACHE_HOME/imgconv or
     ~/.cache/imgconv, reused by the next install). CUDA kernels are built
     only when IMGCONV_CUDA=ON, or AUTO (the default) on a machine where
     nvidia-smi lists a GPU; IMGCONV_CUDA=OFF never builds them.

Nothing is written into the checkout: setuptools' build and egg-info folders
go to a temporary folder too. `pip install -v ./python` shows the build.
"""
import atexit
import hashlib
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent
SOURCES = ("src", "include", "CMakeLists.txt", "cmake")


def log(msg):
    print(f"imgconv setup: {msg}", file=sys.stderr, flush=True)


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout.strip()


def cmake_home(build):
    cache = build / "CMakeCache.txt"
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                return Path(line.split("=", 1)[1])
    return None


def from_build_dir(build):
    """Static archive, include dirs and Libs.private of a CMake build directory."""
    build = Path(build).resolve()
    archive = build / "libimgconv.a"
    pc = build / "imgconv.pc"
    if not archive.exists() or not pc.exists():
        sys.exit(f"imgconv setup: {build} has no libimgconv.a / imgconv.pc (build it first)")
    source = cmake_home(build) or CHECKOUT
    private = []
    for line in pc.read_text().splitlines():
        if line.startswith("Libs.private:"):
            private = shlex.split(line.split(":", 1)[1])
    return [str(source / "include")], [str(archive)], private


def newest_source():
    newest = 0.0
    for name in SOURCES:
        p = CHECKOUT / name
        files = [p] if p.is_file() else p.rglob("*")
        for f in files:
            if f.is_file():
                newest = max(newest, f.stat().st_mtime)
    return newest


def from_checkout_build():
    """The checkout's build/ when it is current: reusing it takes seconds."""
    build = CHECKOUT / "build"
    archive = build / "libimgconv.a"
    if not archive.exists() or not (build / "imgconv.pc").exists():
        return None
    home = cmake_home(build)
    if home is None or home.resolve() != CHECKOUT.resolve():
        return None
    if archive.stat().st_mtime < newest_source():
        log(f"{build} is older than the sources; not using it (run make first to reuse it)")
        return None
    log(f"using the checkout's build {build}")
    return from_build_dir(build)


def from_pkg_config():
    env = dict(os.environ)
    prefix = os.environ.get("IMGCONV_PREFIX")
    if prefix:
        dirs = [str(p) for p in Path(prefix).glob("lib*/**/pkgconfig")]
        env["PKG_CONFIG_PATH"] = os.pathsep.join(dirs + [env.get("PKG_CONFIG_PATH", "")])
    try:
        cflags = shlex.split(run(["pkg-config", "--cflags-only-I", "imgconv"], env=env))
        libdir = run(["pkg-config", "--variable=libdir", "imgconv"], env=env)
        libs = shlex.split(run(["pkg-config", "--static", "--libs", "imgconv"], env=env))
    except (OSError, subprocess.CalledProcessError):
        return None
    archive = Path(libdir) / "libimgconv.a"
    if not archive.exists():
        return None
    log(f"using the installed imgconv in {libdir}")
    private = [f for f in libs if f != "-limgconv"]
    return [f[2:] for f in cflags], [str(archive)], private


def has_gpu():
    try:
        out = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return out.returncode == 0 and "GPU" in out.stdout


def cache_dir():
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "imgconv"


def from_checkout():
    if not (CHECKOUT / "CMakeLists.txt").exists() or not (CHECKOUT / "include" / "imgconv.h").exists():
        sys.exit("imgconv setup: no installed imgconv (pkg-config imgconv) and no checkout around python/;"
                 " set IMGCONV_BUILD_DIR or IMGCONV_PREFIX")
    cuda = os.environ.get("IMGCONV_CUDA", "AUTO").upper()
    if cuda not in ("ON", "OFF", "AUTO"):
        sys.exit(f"imgconv setup: IMGCONV_CUDA={cuda}: expected ON, OFF or AUTO")
    if cuda == "AUTO":
        cuda = "AUTO" if has_gpu() else "OFF"
    key = hashlib.sha256(str(CHECKOUT.resolve()).encode()).hexdigest()[:12]
    build = cache_dir() / f"build-{key}-cuda{cuda.lower()}"
    jobs = str(os.cpu_count() or 2)
    log(f"building the C library (CUDA {cuda}) in {build} with {jobs} jobs")
    subprocess.run(["cmake", "-S", str(CHECKOUT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    f"-DIC_CUDA={cuda}", "-DBUILD_TESTING=OFF"], check=True,
                   stdout=sys.stderr)
    subprocess.run(["cmake", "--build", str(build), "--target", "imgconv", "-j", jobs],
                   check=True, stdout=sys.stderr)
    return from_build_dir(build)


def library():
    if os.environ.get("IMGCONV_BUILD_DIR"):
        return from_build_dir(os.environ["IMGCONV_BUILD_DIR"])
    return from_checkout_build() or from_pkg_config() or from_checkout()


def scratch():
    """A temporary folder for setuptools' build and egg-info output."""
    tmp = tempfile.mkdtemp(prefix="imgconv-setup-")
    atexit.register(shutil.rmtree, tmp, True)
    return tmp


includes, objects, private = library()
tmp = scratch()
setup(
    ext_modules=[Extension(
        "imgconv._imgconv",
        sources=["src/_imgconv.c"],
        include_dirs=includes,
        extra_objects=objects,
        extra_link_args=private,
        extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
    )],
    options={"build": {"build_base": os.path.join(tmp, "build")},
             "egg_info": {"egg_base": tmp}},
)
