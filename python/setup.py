"""Builds imgconv._imgconv, the C extension, linked statically against the
imgconv C library (libimgconv.a is position-independent for that).

Where the library comes from, first match wins:
  1. IMGCONV_BUILD_DIR=DIR: a CMake build of this checkout (DIR/libimgconv.a,
     DIR/imgconv.pc for the libraries it needs) - what `make test` uses;
  2. `pkg-config imgconv`: an installed imgconv (`make install`), or
     IMGCONV_PREFIX=P to look under P/lib*/pkgconfig;
  3. otherwise the checkout around this folder is configured and built with
     CMake into python/build/clib (IMGCONV_CUDA=ON|OFF|AUTO, default AUTO).
"""
import os
import shlex
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup

HERE = Path(__file__).resolve().parent
CHECKOUT = HERE.parent


def run(cmd, **kw):
    return subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True, **kw).stdout.strip()


def from_build_dir(build):
    """Static archive, include dirs and Libs.private of a CMake build directory."""
    build = Path(build).resolve()
    archive = build / "libimgconv.a"
    pc = build / "imgconv.pc"
    if not archive.exists() or not pc.exists():
        sys.exit(f"imgconv setup: {build} has no libimgconv.a / imgconv.pc (build it first)")
    source = CHECKOUT
    cache = build / "CMakeCache.txt"
    if cache.exists():
        for line in cache.read_text().splitlines():
            if line.startswith("CMAKE_HOME_DIRECTORY:"):
                source = Path(line.split("=", 1)[1])
    private = []
    for line in pc.read_text().splitlines():
        if line.startswith("Libs.private:"):
            private = shlex.split(line.split(":", 1)[1])
    return [str(source / "include")], [str(archive)], private


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
    private = [f for f in libs if f != "-limgconv"]
    return [f[2:] for f in cflags], [str(archive)], private


def from_checkout():
    if not (CHECKOUT / "CMakeLists.txt").exists() or not (CHECKOUT / "include" / "imgconv.h").exists():
        sys.exit("imgconv setup: no installed imgconv (pkg-config imgconv) and no checkout around python/;"
                 " set IMGCONV_BUILD_DIR or IMGCONV_PREFIX")
    build = HERE / "build" / "clib"
    cuda = os.environ.get("IMGCONV_CUDA", "AUTO")
    subprocess.run(["cmake", "-S", str(CHECKOUT), "-B", str(build), "-DCMAKE_BUILD_TYPE=Release",
                    f"-DIC_CUDA={cuda}", "-DBUILD_TESTING=OFF"], check=True)
    subprocess.run(["cmake", "--build", str(build), "--target", "imgconv", "-j",
                    str(os.cpu_count() or 2)], check=True)
    return from_build_dir(build)


if os.environ.get("IMGCONV_BUILD_DIR"):
    includes, objects, private = from_build_dir(os.environ["IMGCONV_BUILD_DIR"])
else:
    found = from_pkg_config()
    includes, objects, private = found if found else from_checkout()

setup(ext_modules=[Extension(
    "imgconv._imgconv",
    sources=["src/_imgconv.c"],
    include_dirs=includes,
    extra_objects=objects,
    extra_link_args=private,
    extra_compile_args=["-std=c11", "-Wall", "-Wextra"],
)])
