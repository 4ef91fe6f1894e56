#!/usr/bin/env bash
# pack-peers.sh - packs this Debian machine's libvips (`vips`) and ImageMagick
# (`mogrify`) into a relocatable folder, peers-bundle/, so that the batch and
# PNG comparisons (bench/run.sh batch, bench/run.sh png) can run them side by side
# with imgconv on the GPU machine, which has neither and no network.
#
# usage: scripts/pack-peers.sh [OUTDIR]      (default: ./peers-bundle, git-ignored)
#
# What it builds:
#   bin/vips, bin/mogrify   wrappers: set LD_LIBRARY_PATH=lib, VIPSHOME (so vips
#                           looks for its modules in the bundle: there are none),
#                           MAGICK_CONFIGURE_PATH / MAGICK_CODER_MODULE_PATH /
#                           MAGICK_CODER_FILTER_PATH, then exec libexec/<tool>.
#   libexec/                the Debian binaries themselves.
#   lib/                    every shared library they load except the glibc family
#                           (libc, libm, libpthread, libdl, librt, ld-linux, libresolv),
#                           copied and stripped (--strip-unneeded).
#   lib/stubs/              see "Stubs" below.
#   im/coders, im/filters   ImageMagick's PNG and JPEG coder modules only (it loads
#                           coders as modules; nothing else is needed for PNG/JPEG).
#   im/config               ImageMagick's XML configuration (policy.xml etc.: the same
#                           Debian policy the local runs use).
#   MANIFEST                versions, what was copied, what was stubbed, the size.
#
# Stubs: libvips and libMagickCore are linked against many libraries that a 3x3
# convolution of PNG/JPEG files never calls (SVG, FITS, Matlab/HDF5, OpenEXR, GSF,
# Pango/Cairo text, FFTW, X11, fontconfig/freetype, libxml2 -> ICU's 30 MB data).
# Copying them all would make ~100 MB. Each one of those (STUB_SONAMES below) is
# replaced by a generated library of the same SONAME that defines exactly the
# symbols the kept objects import from it; every stub function prints
# "peers-bundle: FUNC (LIB) is not in the bundle" and aborts, so a code path that
# needs one fails loudly instead of giving a wrong result. The verification below
# runs both tools on PNG and JPEG and compares the outputs byte for byte with the
# system tools' outputs. Side effect: fewer libraries to load, so each `vips`
# process starts slightly faster than the system one (vips runs one process per
# image); the MANIFEST notes the measured start-up time of both.
#
# How the lead carries it to the GPU machine: build it here, then give the device
# tool carry: ["peers-bundle"] (it is git-ignored; size printed at the end, must
# stay well under the 64 MiB carry limit together with anything else carried).
# There: bench/run.sh finds ./peers-bundle/bin by itself (or PEERS=DIR).
# Requires on the target: x86-64 Linux with glibc >= Debian 12's (2.36); the
# Ubuntu 24.04 GPU machine has 2.39. Nothing else from the target's /usr is used.
#
# Verification (run here, at the end): `env -i PATH=/usr/bin:/bin bin/vips conv
# in.png out.png g3.mat` (and .jpg), the same filter through bin/mogrify, outputs
# compared with the system tools', and an strace (else LD_DEBUG=libs) check that
# no shared object or coder module is opened from outside the bundle except glibc.
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
OUTDIR=${1:-$HERE/../peers-bundle}
GLIBC_RE='^(libc\.so|libm\.so|libmvec\.so|libpthread\.so|libdl\.so|librt\.so|ld-linux|libresolv\.so)'
# Libraries replaced by stubs (why each is safe for PNG/JPEG 3x3 conv: see header).
STUB_SONAMES=${STUB_SONAMES:-"librsvg-2.so.2 libcfitsio.so.10 libmatio.so.11 libOpenEXR-3_1.so.30
libpangocairo-1.0.so.0 libpango-1.0.so.0 libpangoft2-1.0.so.0 libcairo.so.2
libfftw3.so.3 libX11.so.6 libXext.so.6 libfontconfig.so.1 libfreetype.so.6"}

die() { echo "pack-peers: $*" >&2; exit 1; }
for t in readelf strip gcc python3 ldd; do command -v "$t" >/dev/null || die "needs $t"; done
if ! command -v vips >/dev/null || ! command -v mogrify >/dev/null; then
    echo "pack-peers: installing the peers first (scripts/install-bench-deps.sh)" >&2
    "$HERE/install-bench-deps.sh" || die "install vips and ImageMagick first"
fi
VIPS_BIN=$(readlink -f "$(command -v vips)")
MOG_BIN=$(readlink -f "$(command -v mogrify)")
MOG_NAME=$(basename "$MOG_BIN") # mogrify-im6.q16 on Debian 12
# ImageMagick's module and configuration directories, from the library itself.
IM_LIB=$(ldd "$MOG_BIN" | awk '/libMagickCore/ {print $3}')
[ -n "$IM_LIB" ] || die "cannot find libMagickCore of $MOG_BIN"
IM_MODDIR=$(dirname "$(find "$(dirname "$IM_LIB")" -maxdepth 4 -path '*/coders/png.la' | head -1)")
[ -d "$IM_MODDIR" ] || die "cannot find ImageMagick's coder modules"
IM_CONFDIRS=$(find "$(dirname "$IM_LIB")"/ImageMagick-* /etc/ImageMagick-* -maxdepth 2 \
    \( -name policy.xml -o -name configure.xml \) -printf '%h\n' 2>/dev/null | sort -u)

rm -rf "$OUTDIR"
mkdir -p "$OUTDIR"/{bin,libexec,lib/stubs,im/coders,im/filters,im/config}
OUTDIR=$(cd "$OUTDIR" && pwd)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/pack-peers.XXXXXX")
trap 'rm -rf "$WORK"' EXIT

cp "$VIPS_BIN" "$OUTDIR/libexec/vips"
cp "$MOG_BIN" "$OUTDIR/libexec/$MOG_NAME"
for c in png jpeg; do
    cp "$IM_MODDIR/$c.so" "$OUTDIR/im/coders/"
    # ltdl tries the .la's installed libdir first: blank it so the copy is used.
    sed -e "s|^libdir=.*|libdir=''|" "$IM_MODDIR/$c.la" >"$OUTDIR/im/coders/$c.la"
done
for d in $IM_CONFDIRS; do
    find "$d" -maxdepth 1 -name '*.xml' ! -name 'type-*.xml' -exec cp {} "$OUTDIR/im/config/" \;
done

# Walk the NEEDED graph from the roots: copy what is kept, record what is stubbed.
ROOTS=("$OUTDIR/libexec/vips" "$OUTDIR/libexec/$MOG_NAME" "$OUTDIR/im/coders/png.so" "$OUTDIR/im/coders/jpeg.so")
python3 - "$OUTDIR" "$GLIBC_RE" "$STUB_SONAMES" "$WORK" "${ROOTS[@]}" <<'EOF'
import os, re, shutil, subprocess, sys
out, glibc_re, stubs, work = sys.argv[1], re.compile(sys.argv[2]), set(sys.argv[3].split()), sys.argv[4]
roots = sys.argv[5:]

def run(*a):
    return subprocess.run(a, check=True, capture_output=True, text=True).stdout

where = {}  # soname -> path on this machine (from ldd of every root)
for r in roots:
    for line in run("ldd", r).splitlines():
        m = re.match(r"\s*(\S+) => (/\S+)", line)
        if m:
            where.setdefault(m.group(1), m.group(2))

def needed(path):
    return re.findall(r"\(NEEDED\)\s+Shared library: \[(.+?)\]", run("readelf", "-d", path))

def icu_subset(src, dst):
    """ICU's data library is one 30 MB blob (symbol icudtNN_dat). libxml2 (needed by
    libgsf, which vips_init calls) uses ICU only for character set converters, so
    rebuild the blob with the converters and their alias table only (icupkg, from
    icu-devtools). Returns False (copy the whole library) when icupkg is missing."""
    if not shutil.which("icupkg"):
        print("pack-peers: no icupkg (apt-get install icu-devtools): full ICU data", file=sys.stderr)
        return False
    sym = [l.split() for l in run("readelf", "-W", "--dyn-syms", src).splitlines()
           if re.search(r" icudt\d+_dat$", l)][0]
    name, addr, size = sym[7], int(sym[1], 16), int(sym[2], 0)
    sec = [l for l in run("readelf", "-W", "-S", src).splitlines() if " .rodata " in l][0]
    f = sec.split("]")[1].split()
    vaddr, off = int(f[2], 16), int(f[3], 16)
    pkg = name[:-4] + "l"  # icudt72l: little-endian package name
    os.makedirs(os.path.join(work, "icu-full"), exist_ok=True)
    full = os.path.join(work, "icu-full", pkg + ".dat")
    items, sub = os.path.join(work, "icu-items.txt"), os.path.join(work, "icu-sub")  # a list must end in .txt
    with open(src, "rb") as fh:
        fh.seek(off + addr - vaddr)
        open(full, "wb").write(fh.read(size))
    keep = [i for i in run("icupkg", "-l", full).split() if i.endswith(".cnv") or i == "cnvalias.icu"]
    open(items, "w").write("\n".join(keep) + "\n")
    os.makedirs(sub, exist_ok=True)
    run("icupkg", "-x", items, "-d", sub, full)
    run("icupkg", "-s", sub, "-a", items, "new", os.path.join(work, pkg + ".dat"))
    asm = os.path.join(work, "icudata.S")
    open(asm, "w").write(
        f'.section .rodata\n.globl {name}\n.type {name}, @object\n.balign 16\n{name}:\n'
        f'.incbin "{os.path.join(work, pkg + ".dat")}"\n.size {name}, .-{name}\n'
        '.section .note.GNU-stack,"",@progbits\n')
    so = os.path.basename(src)
    subprocess.run(["gcc", "-shared", "-nostdlib", "-o", dst, "-Wl,-soname," + so, asm], check=True)
    manifest_head.append(f"subset {so}: {len(keep)} of its items (converters + alias table), "
                         f"{os.path.getsize(dst) // 1024} KiB instead of {os.path.getsize(src) // 1024} KiB")
    return True

manifest_head = []
kept, stubbed, todo, seen = [], set(), list(roots), set()
while todo:
    obj = todo.pop()
    for so in needed(obj):
        if so in seen or glibc_re.match(so):
            continue
        seen.add(so)
        if so in stubs:
            stubbed.add(so)
            continue
        if so not in where:
            sys.exit(f"pack-peers: {so} (needed by {obj}) not found")
        dst = os.path.join(out, "lib", so)
        if so.startswith("libicudata") and icu_subset(where[so], dst):
            continue  # data only: no NEEDED to follow
        shutil.copy(where[so], dst)
        kept.append(dst)
        todo.append(dst)

def dynsyms(path):
    """(name, version or '', defined?, type, size) of each dynamic symbol."""
    res = []
    for line in run("readelf", "-W", "--dyn-syms", path).splitlines():
        f = line.split()
        if len(f) < 8 or not f[0].endswith(":") or f[0] == "Num:":
            continue
        name = f[7]
        ver = ""
        if "@" in name:
            name, _, ver = name.partition("@")
            ver = ver.lstrip("@")
        res.append((name, ver, f[6] != "UND", f[3], int(f[2], 0)))
    return res

importers = roots + kept
undef = {}  # name -> set of versions wanted
for obj in importers:
    for name, ver, defined, _, _ in dynsyms(obj):
        if not defined and name:
            undef.setdefault(name, set()).add(re.sub(r"\s*\(\d+\)$", "", ver))
manifest = manifest_head
for so in sorted(stubbed):
    defs = {n: (v, t, s) for n, v, d, t, s in dynsyms(where[so]) if d and n}
    syms = sorted(n for n in undef if n in defs)
    cfile = os.path.join(work, so + ".c")
    vfile = os.path.join(work, so + ".map")
    with open(cfile, "w") as c:
        c.write("/* generated by scripts/pack-peers.sh: stand-in for %s */\n" % so)
        c.write("#include <stdio.h>\n#include <stdlib.h>\n")
        c.write("static void missing(const char *f) {\n"
                "    fprintf(stderr, \"peers-bundle: %%s (%s) is not in the bundle\\n\", f);\n"
                "    abort();\n}\n" % so)
        for i, n in enumerate(syms):
            v, t, s = defs[n]
            if t == "FUNC" or t == "IFUNC":
                c.write(f'void f{i}(void) __asm__("{n}");\nvoid f{i}(void) {{ missing("{n}"); }}\n')
            else:
                c.write(f'__attribute__((aligned(32))) char d{i}[{max(s, 1)}] __asm__("{n}");\n')
    versions = {}
    for n in syms:
        v = defs[n][0]
        if v and v != "Base":
            versions.setdefault(v, []).append(n)
    cmd = ["gcc", "-shared", "-fPIC", "-O1", "-w", "-o", os.path.join(out, "lib", "stubs", so),
           "-Wl,-soname," + so, cfile]
    if versions:
        with open(vfile, "w") as m:
            for v, names in versions.items():
                m.write("%s { global: %s; };\n" % (v, "; ".join(names)))
        cmd.append("-Wl,--version-script=" + vfile)
    subprocess.run(cmd, check=True)
    manifest.append(f"stub {so}: {len(syms)} symbols (real one: {where[so]})")
for k in sorted(kept):
    manifest.append("copied " + os.path.basename(k))
open(os.path.join(work, "manifest"), "w").write("\n".join(manifest) + "\n")
EOF

strip --strip-unneeded "$OUTDIR"/lib/*.so* "$OUTDIR"/lib/stubs/*.so* "$OUTDIR"/im/coders/*.so \
    "$OUTDIR"/libexec/* 2>/dev/null || true
# Stubs live in lib/stubs, searched after lib/ (a real copy in lib/ would win).

# Wrappers. Relative to their own location, so the folder can move.
cat >"$OUTDIR/bin/vips" <<'EOF'
#!/bin/sh
# vips from peers-bundle (scripts/pack-peers.sh): bundled libraries, no modules.
d=$(cd "$(dirname "$0")/.." && pwd)
LD_LIBRARY_PATH=$d/lib:$d/lib/stubs VIPSHOME=$d GIO_MODULE_DIR=$d/lib/gio \
    exec "$d/libexec/vips" "$@"
EOF
cat >"$OUTDIR/bin/mogrify" <<EOF
#!/bin/sh
# ImageMagick mogrify from peers-bundle (scripts/pack-peers.sh): PNG/JPEG coders only.
d=\$(cd "\$(dirname "\$0")/.." && pwd)
LD_LIBRARY_PATH=\$d/lib:\$d/lib/stubs MAGICK_CONFIGURE_PATH=\$d/im/config \\
MAGICK_CODER_MODULE_PATH=\$d/im/coders MAGICK_CODER_FILTER_PATH=\$d/im/filters \\
MAGICK_HOME=\$d/im exec "\$d/libexec/$MOG_NAME" "\$@"
EOF
chmod +x "$OUTDIR/bin/vips" "$OUTDIR/bin/mogrify"
mkdir -p "$OUTDIR/lib/gio"

# ---- verification ---------------------------------------------------------
T=$WORK/t
mkdir -p "$T/sys" "$T/bun/vips" "$T/bun/im" "$T/sys/im"
# A 640x480 test picture (gradients and a checkerboard) as PPM, then PNG/JPEG.
python3 - "$T/in.ppm" <<'EOF'
import sys
w, h = 640, 480
px = bytearray()
for y in range(h):
    for x in range(w):
        c = 255 if ((x // 16) ^ (y // 16)) & 1 else 0
        px += bytes((x * 255 // w, y * 255 // h, c))
open(sys.argv[1], "wb").write(b"P6\n%d %d\n255\n" % (w, h) + px)
EOF
printf '3 3 16 0\n1 2 1\n2 4 2\n1 2 1\n' >"$T/g3.mat"
K='3x3: 0.0625,0.125,0.0625 0.125,0.25,0.125 0.0625,0.125,0.0625'
vips copy "$T/in.ppm" "$T/in.png"
vips copy "$T/in.ppm" "$T/in.jpg[Q=92]"
E=(env -i PATH=/usr/bin:/bin)
fail=0
for f in in.png in.jpg; do
    q=; case $f in *.jpg) q='[Q=92]' ;; esac
    "${E[@]}" "$OUTDIR/bin/vips" conv "$T/$f" "$T/bun/vips/$f$q" "$T/g3.mat"
    vips conv "$T/$f" "$T/sys/$f$q" "$T/g3.mat"
    cmp -s "$T/bun/vips/$f" "$T/sys/$f" || { echo "pack-peers: vips $f differs from the system's" >&2; fail=1; }
done
"${E[@]}" "$OUTDIR/bin/mogrify" -path "$T/bun/im" -quality 92 -morphology Convolve "$K" "$T/in.png" "$T/in.jpg"
mogrify -path "$T/sys/im" -quality 92 -morphology Convolve "$K" "$T/in.png" "$T/in.jpg"
for f in in.png in.jpg; do
    # PNG output carries a time stamp (tIME/date chunks): compare the pixels.
    a=$(vips avg "$T/bun/im/$f") b=$(vips avg "$T/sys/im/$f")
    d=$(vips subtract "$T/bun/im/$f" "$T/sys/im/$f" "$T/diff.v" && vips max "$T/diff.v")
    if [ "$a" != "$b" ] || ! awk -v d="$d" 'BEGIN { exit !(d == 0) }'; then
        echo "pack-peers: mogrify $f differs ($a vs $b, max diff $d)" >&2
        fail=1
    fi
done

# Which files did the bundled tools open? Only glibc from outside.
outside() { # LOG: shared objects / modules opened successfully from outside the bundle
    grep -E 'open(at)?\(' "$1" | grep -v ENOENT | grep -oE '"[^"]+"' | tr -d '"' |
        grep -E '\.(so|la)(\.[0-9.]+)?$' | grep -v "^$OUTDIR/" |
        awk -F/ -v re="$GLIBC_RE" '$NF !~ re' | sort -u || true
}
if command -v strace >/dev/null; then
    CHECK="strace -f (open/openat of every process)"
    "${E[@]}" strace -f -qq -e trace=open,openat -o "$T/vips.trace" \
        "$OUTDIR/bin/vips" conv "$T/in.jpg" "$T/x.jpg[Q=92]" "$T/g3.mat"
    "${E[@]}" strace -f -qq -e trace=open,openat -o "$T/im.trace" \
        "$OUTDIR/bin/mogrify" -path "$T/bun" -morphology Convolve "$K" "$T/in.png" "$T/in.jpg"
    bad=$( (outside "$T/vips.trace"; outside "$T/im.trace") | sort -u)
    other=$(cat "$T/vips.trace" "$T/im.trace" | grep -v ENOENT | grep -oE '"/(usr|etc|opt)/[^"]+"' |
        tr -d '"' | grep -vE '\.so' | sort -u | tr '\n' ' ')
else
    CHECK="LD_DEBUG=libs"
    "${E[@]}" LD_DEBUG=libs "$OUTDIR/bin/vips" conv "$T/in.png" "$T/x.png" "$T/g3.mat" 2>"$T/ld.log"
    bad=$(grep -oE 'calling init: \S+' "$T/ld.log" | awk '{print $3}' | grep -v "^$OUTDIR/" |
        awk -F/ -v re="$GLIBC_RE" '$NF !~ re' | sort -u || true)
    other="(not checked without strace)"
fi
# Stronger where a mount namespace can be made (root): run both again with
# ImageMagick's and vips' own directories hidden, as on the GPU machine.
HIDDEN="not run (no unshare -m here)"
hide=$(find /etc "$(dirname "$IM_LIB")" -maxdepth 1 \( -name 'ImageMagick-*' -o -name 'vips-modules-*' \))
if unshare -m true 2>/dev/null; then
    # shellcheck disable=SC2016 # expanded by the inner shell
    if unshare -m sh -c 'for d in $1; do mount -t tmpfs none "$d" || exit 9; done
        shift; env -i PATH=/usr/bin:/bin "$1/bin/vips" conv "$2/in.jpg" "$2/h.jpg[Q=92]" "$2/g3.mat" &&
        env -i PATH=/usr/bin:/bin "$1/bin/mogrify" -path "$2/bun" -quality 92 -morphology Convolve \
            "$3" "$2/in.png" "$2/in.jpg"' sh "$hide" "$OUTDIR" "$T" "$K"; then
        if cmp -s "$T/h.jpg" "$T/sys/in.jpg"; then
            HIDDEN="passed, hiding $(echo "$hide" | tr '\n' ' ')"
        else
            HIDDEN="FAILED (vips output differs)"
            fail=1
        fi
    else
        HIDDEN="FAILED"
        fail=1
    fi
fi

if [ -n "$bad" ]; then
    echo "pack-peers: loaded from outside the bundle:" >&2
    echo "$bad" >&2
    fail=1
fi

# Start-up cost of one vips process, bundle vs system (vips runs once per image).
startup() { python3 - "$@" <<'EOF'
import subprocess, sys, time
t = time.perf_counter()
for _ in range(20):
    subprocess.run(sys.argv[1:], check=True, capture_output=True)
print(f"{(time.perf_counter() - t) / 20 * 1e3:.1f} ms")
EOF
}
SU_BUN=$(startup "$OUTDIR/bin/vips" --version)
SU_SYS=$(startup vips --version)

SIZE=$(du -sh "$OUTDIR" | cut -f1)
SIZE_B=$(du -sb "$OUTDIR" | cut -f1)
{
    echo "peers-bundle built by scripts/pack-peers.sh on $(date -u +%Y-%m-%dT%H:%MZ)"
    echo "host: $(grep -m1 '^PRETTY_NAME=' /etc/os-release | cut -d'"' -f2), $(ldd --version | head -1)"
    echo "vips: $("$OUTDIR/bin/vips" --version | head -1)"
    echo "mogrify: $("$OUTDIR/bin/mogrify" -version | head -1)"
    echo "size: $SIZE ($SIZE_B bytes)"
    echo "checked with: $CHECK; outputs equal to the system tools': $([ $fail = 0 ] && echo yes || echo NO)"
    echo "other files read from outside the bundle: ${other:-none}"
    echo "run with the system's ImageMagick/vips directories hidden: $HIDDEN"
    echo "vips --version start-up: bundle $SU_BUN, system $SU_SYS (mean of 20)"
    cat "$WORK/manifest"
} >"$OUTDIR/MANIFEST"
head -8 "$OUTDIR/MANIFEST"
[ "$fail" = 0 ] || die "verification FAILED (see above); bundle left in $OUTDIR"
echo "peers-bundle: $OUTDIR, $SIZE; carry it with carry: [\"peers-bundle\"]"
