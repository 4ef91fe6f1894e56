# batch.sh - batch throughput of imgconv against libvips (`vips conv`)
# and ImageMagick (`mogrify`) on the same machine: a folder of N
# generated 1920x1080 RGB images, half PNG and half JPEG, filtered with the
# same 3x3 Gaussian (1 2 1; 2 4 2; 1 2 1 / 16), outputs in the input's format
# (JPEG quality 92 everywhere). vips has no batch mode, so it runs one process
# per file, as many at a time as there are cores (xargs -P); mogrify gets the
# whole list in one process; imgconv its batch mode (-o OUTDIR). Images/s and
# MB/s (decoded RGB megabytes) from wall time; imgconv's --json gives where
# its busy time went (decode, filter, encode) and which backend ran.
#
# SETS="photo-jpeg photo-png": instead (or as well), N (default 500)
# photograph-like 1920x1080 images (bench/make_photos.py: scikit-image's
# bundled photographs cropped, resized, with exposure changes and sensor
# noise; 25 distinct ones, copied to N files; generated charts when
# scikit-image is missing, which the result says) as JPEG (quality 92) or PNG,
# filtered with gaussian:5 (vips: the same weights as an integer mask, scale
# 256), outputs in the input's format. The imgconv row with a CUDA backend
# decodes and encodes JPEG on the GPU (nvJPEG); each set's section ends with
# the ratios its targets are about and the per-stage busy times.
#
# usage: bench/run.sh batch [PATH/TO/imgconv] [BACKEND]
#   BACKEND defaults to auto; the result names the backend auto picked.
#   SETS (default mixed): the sets to run, one section each in the summary.
#   N=200 images by default (env N; --quick: 20); photo sets 500.
#   CPU_ROW=1 adds a second imgconv row with --backend cpu (the GPU's share);
#   by default it is added when BACKEND ran on a CUDA backend (CPU_ROW=0: never).
#   IMGCONV_ARGS: extra imgconv options for a second row of BACKEND, e.g.
#   "--devices all" (the first row runs without them; the cpu row never gets them).
#   DECODE_ROWS: when BACKEND ran on a CUDA backend, one more imgconv row per
#   word, with IC_BATCH_DECODE set to it (default "gpu": nvJPEG decodes every
#   file, against the first row's default "handover": the CPU workers until
#   nvJPEG's hardware decoder is open, then nvJPEG alone; "both", "after",
#   "cpu" also possible; DECODE_ROWS= none).
#   ENV_ROWS: when BACKEND ran on a CUDA backend, one more imgconv row per
#   word VAR=VALUE, run with that environment (e.g. IC_BATCH_MALLOC=system).
#   The first row, the IMGCONV_ARGS row and the cpu row run with IC_BATCH_TRACE: the result ends
#   with their timelines (bench/batch_timeline.py: threads busy per stage).
#   Each imgconv row also gets a steady rate (issue 42's): N over its time
#   less that of the same command on the set's first file alone (median of 3).
#   NO_MOGRIFY=1 leaves ImageMagick out (it takes a minute per 500 photos).
#   Peers: vips and mogrify from PEERS=DIR (the bin/ of a bundle made by
#   scripts/pack-peers.sh, put first on PATH), else ./peers-bundle/bin when it
#   exists (the GPU machine, where it is carried), else the system's.
set -euo pipefail
# each set is this file again in a subshell (SET set), its section appended
if [ -z "${SET:-}" ]; then
    : >"$RESULT"
    for SET in ${SETS:-mixed}; do
        (RESULT=$LOGDIR/batch-$SET.md && . "${BASH_SOURCE[0]}" "$@")
        { cat "$LOGDIR/batch-$SET.md" && echo; } >>"$RESULT"
    done
    exit 0
fi
find_imgconv "${1:-}"
BACKEND=${2:-auto}
use_peers
read -r -a XARGS <<<"${IMGCONV_ARGS:-}"
quick && N=${N:-20}
case "$SET" in
mixed) N=${N:-200} ;;
photo-jpeg | photo-png) N=${N:-500} ;;
*) echo "SET must be mixed, photo-jpeg or photo-png, not '$SET'" >&2; exit 2 ;;
esac
W=1920
H=1080
DATE=$(date +%Y-%m-%d)
make_work batch
CORES=$(nproc)

echo "generating $N ${W}x${H} images ($SET) in $WORK ..." >&2
mkdir -p "$WORK/in"
SOURCE="generated test charts (imgconv --chart, 10 seeds)"
if [ "$SET" = mixed ]; then
    distinct=10
    for i in $(seq 1 $distinct); do
        "$IMGCONV" --chart ${W}x${H} --seed "$i" "$WORK/seed$i.png"
        "$IMGCONV" --quality 92 "$WORK/seed$i.png" "$WORK/seed$i.jpg" --kernel 1
    done
    for i in $(seq 1 "$N"); do
        s=$(((i - 1) % distinct + 1))
        if [ $((i % 2)) -eq 0 ]; then cp "$WORK/seed$s.png" "$WORK/in/im$i.png"; else cp "$WORK/seed$s.jpg" "$WORK/in/im$i.jpg"; fi
    done
else
    ext=${SET#photo-}
    [ "$ext" = jpeg ] && ext=jpg
    distinct=25
    mkdir -p "$WORK/photos"
    pick_py
    if "$PY" "$HERE/make_photos.py" "$WORK/photos" $distinct $W $H 2>"$WORK/photos.log"; then
        SOURCE="photographs from scikit-image's skimage.data (cropped, resized, exposure and noise; bench/make_photos.py), $distinct distinct"
        i=0
        for f in "$WORK"/photos/*.ppm; do
            i=$((i + 1))
            "$IMGCONV" --quality 92 --kernel 1 "$f" "$WORK/seed$i.$ext"
        done
    else
        tail -1 "$WORK/photos.log" >&2
        distinct=10
        for i in $(seq 1 $distinct); do
            "$IMGCONV" --chart ${W}x${H} --seed "$i" "$WORK/seed$i.ppm"
            "$IMGCONV" --quality 92 --kernel 1 "$WORK/seed$i.ppm" "$WORK/seed$i.$ext"
        done
    fi
    for i in $(seq 1 "$N"); do
        s=$(((i - 1) % distinct + 1))
        cp "$WORK/seed$s.$ext" "$WORK/in/im$(printf %04d "$i").$ext"
    done
fi
mkdir -p "$WORK/in1" && cp "$(find "$WORK/in" -type f | sort | head -1)" "$WORK/in1/"
IN_MB=$(du -sm "$WORK/in" | cut -f1)
MB=$(python3 -c "print($N * $W * $H * 3 / 1e6)")

now() { date +%s.%N; }
rate() { python3 -c "t=$1; print(f'{t:.2f} | {$N/t:.1f} | {$MB/t:.1f}')"; }

# libvips: a matrix file, one process per image. The photo sets use
# gaussian:5 (sigma 1.1, OpenCV's rule), given to vips as integer weights of
# scale 256 (its fast integer path).
if [ "$SET" = mixed ]; then
    printf '3 3 16 0\n1 2 1\n2 4 2\n1 2 1\n' >"$WORK/g3.mat"
    K="1 2 1; 2 4 2; 1 2 1 / 16"
    KNAME="3x3 Gaussian (1 2 1; 2 4 2; 1 2 1 / 16)"
else
    python3 - "$WORK/g3.mat" <<'EOF'
import math, sys
s = 0.3 * ((5 - 1) / 2 - 1) + 0.8
g = [math.exp(-(i * i) / (2 * s * s)) for i in range(-2, 3)]
t = sum(g)
g = [v / t for v in g]
m = [[round(256 * a * b) for b in g] for a in g]
with open(sys.argv[1], "w") as f:
    f.write(f"5 5 {sum(map(sum, m))} 0\n")
    for row in m:
        f.write(" ".join(map(str, row)) + "\n")
EOF
    K="gaussian:5"
    KNAME="gaussian:5 (5x5, sigma 1.1)"
fi
cat >"$WORK/vips_one.sh" <<'EOF'
#!/bin/sh
# vips_one.sh IN OUTDIR MAT: one image through vips conv, JPEG at quality 92.
b=$(basename "$1")
case "$b" in
*.jpg) exec vips conv "$1" "$2/${b}[Q=92]" "$3" ;;
*) exec vips conv "$1" "$2/$b" "$3" ;;
esac
EOF
chmod +x "$WORK/vips_one.sh"

ROWS=()
run_tool() { # NAME COMMAND...
    local name=$1
    shift
    rm -rf "$WORK/out" && mkdir -p "$WORK/out"
    # The previous row's outputs were just deleted: their journal commit
    # (and, on a file system mounted with discard, their trim) would fall on
    # this row's first fsyncs and stall its writers; paid here, unclocked.
    sync -f "$WORK/out" 2>/dev/null || sync
    local t0 t1
    t0=$(now)
    "$@" >"$WORK/log" 2>&1 || { echo "$name failed:" >&2; tail -3 "$WORK/log" >&2; return 1; }
    t1=$(now)
    local n
    n=$(find "$WORK/out" -type f | wc -l)
    LAST_SECS=$(python3 -c "print($t1 - $t0)")
    ROWS+=("| $name | $n | $(rate "$LAST_SECS") |")
    echo "$name: $n files in $(python3 -c "print(round($t1 - $t0, 2))") s" >&2
}

json_backend() { python3 -c "import json, sys; print(json.load(open(sys.argv[1]))['backend'])" "$1"; }
IC_ENV=() # VAR=VALUE words for the next run_imgconv (its label shows them)
run_imgconv() { # BACKEND JSONFILE [EXTRA...]: one imgconv batch row, named after the backend that ran
    local be=$1 js=$2
    shift 2
    local label="imgconv --backend $be${*:+ $*}${IC_ENV[*]:+ (${IC_ENV[*]})}"
    # shellcheck disable=SC2016 # expanded by the inner shell
    run_tool "$label" sh -c 'j=$1; shift; "$@" >"$j"' sh "$js" env "${IC_ENV[@]}" \
        ${TRACE:+"IC_BATCH_TRACE=$TRACE"} "$IMGCONV" \
        --backend "$be" --kernel "$K" --quality 92 -q --json "$@" -o "$WORK/out" "$WORK/in"
    local used last=$((${#ROWS[@]} - 1))
    used=$(json_backend "$js")
    [ "$used" = "$be" ] || ROWS[last]=${ROWS[last]/"$label |"/"$label (picked $used) |"}
    # steady (issue 42's definition): N over the run's time less that of the
    # same command on one file (start-up, codec set-up), the median of 3
    local secs=$LAST_SECS one
    one=$(for _ in 1 2 3; do
        rm -rf "$WORK/out1" && mkdir -p "$WORK/out1"
        t0=$(now)
        if env "${IC_ENV[@]}" "$IMGCONV" --backend "$be" --kernel "$K" --quality 92 -q "$@" \
            -o "$WORK/out1" "$WORK/in1" >/dev/null 2>&1; then
            t1=$(now)
            python3 -c "print($t1 - $t0)"
        else
            echo inf # a failed one-file run gives no steady rate
        fi
    done | sort -g | sed -n 2p)
    STEADY+=("| $label | $(python3 -c "s, o = $secs, float('$one'); d = s - o
print(f'{s:.3f} | ' + (f'{o:.3f} | {$N / d:.1f}' if o != float('inf') and d > 0 else 'failed | n/a'))") |")
}
STEADY=()
IC_JSON="$WORK/imgconv.json"
TRACE=$WORK/trace-main.txt
run_imgconv "$BACKEND" "$IC_JSON"
TRACE=
USED=$(json_backend "$IC_JSON")
XARGS_JSON=
if [ ${#XARGS[@]} -gt 0 ]; then # e.g. --devices all: a second row with the extra options
    XARGS_JSON="$WORK/imgconv-xargs.json"
    TRACE=$WORK/trace-xargs.txt
    run_imgconv "$BACKEND" "$XARGS_JSON" "${XARGS[@]}"
    TRACE=
fi
DEC_JSONS=()
case "$USED" in
cuda*)
    for mode in ${DECODE_ROWS-gpu}; do
        DEC_JSONS+=("$WORK/imgconv-dec-$mode.json")
        IC_ENV=("IC_BATCH_DECODE=$mode")
        run_imgconv "$BACKEND" "$WORK/imgconv-dec-$mode.json"
        IC_ENV=()
    done
    for ev in ${ENV_ROWS:-}; do
        DEC_JSONS+=("$WORK/imgconv-env-${ev%%=*}.json")
        IC_ENV=("$ev")
        run_imgconv "$BACKEND" "$WORK/imgconv-env-${ev%%=*}.json"
        IC_ENV=()
    done
    ;;
esac
CPU_JSON=
case "${CPU_ROW:-auto}:$USED" in
1:* | auto:cuda*)
    CPU_JSON="$WORK/imgconv-cpu.json"
    TRACE=$WORK/trace-cpu.txt
    run_imgconv cpu "$CPU_JSON"
    TRACE=
    ;;
esac
VIPS_VER="not installed"
if command -v vips >/dev/null; then
    VIPS_VER=$(vips --version | head -1)
    run_tool "vips conv (xargs -P $CORES)" sh -c "ls '$WORK'/in/* | xargs -P $CORES -I{} '$WORK/vips_one.sh' {} '$WORK/out' '$WORK/g3.mat'"
fi
IM_VER="not installed"
if [ -z "${NO_MOGRIFY:-}" ] && command -v mogrify >/dev/null; then
    IM_VER=$(mogrify -version | head -1)
    run_tool "ImageMagick mogrify" mogrify -path "$WORK/out" -quality 92 -morphology Convolve \
        '3x3: 0.0625,0.125,0.0625 0.125,0.25,0.125 0.0625,0.125,0.0625' "$WORK"/in/*
fi

stages() { # JSONFILE: where imgconv's busy time went
    python3 - "$1" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
s = d["stage_ms"]
busy = sum(s.values()) or 1
parts = ", ".join(f"{k} {v/1e3:.2f} s ({100*v/busy:.0f}%)" for k, v in s.items() if v > 0)
extra = ""
if "decoded_by" in d:
    extra = f"; decoded by the CPU workers {d['decoded_by']['cpu']}, by the GPU codec {d['decoded_by']['gpu']}"
    if d.get("gpu_open_ms"):
        extra += f" (GPU codec open on its thread: {d['gpu_open_ms'] / 1e3:.2f} s"
        if d.get("gpu_encoder_ms"):
            extra += f", its encoder from {d['gpu_encoder_ms'] / 1e3:.2f} s"
        extra += ")"
    if "cleanup_ms" in d:
        extra += f"; the run {d['seconds']:.2f} s of the process, then freeing the GPU codec and contexts {d['cleanup_ms']:.0f} ms"
    if "to_device" in d:
        extra += f"; worker images on the device route {d['to_device']}"
    if len(d.get("devices", [])) > 1:  # the split over the device pipelines
        extra += "; per device: " + ", ".join(
            f"{v['device']}: filtered {v['filtered']}, nvJPEG-decoded {v['decoded_by_gpu']}, "
            f"device route {v['to_device']}, GPU-encoded {v['gpu_encoded']}, "
            f"codec open {v['gpu_open_ms'] / 1e3:.2f} s ({v['codec']})" for v in d["devices"])
if "wait_ms" in d:
    extra += "; threads waited for work: " + ", ".join(
        f"{k} {v/1e3:.2f} s" for k, v in d["wait_ms"].items() if v > 0)
print(f"backend {d['backend']}, codec {d.get('codec', 'cpu')}; busy time summed over threads: "
      f"{parts}; {d['written']} written, {d['failed']} failed{extra}")
EOF
}
row_ips() { # NAME-PREFIX: images/s of the first table row whose tool starts so
    printf '%s\n' "${ROWS[@]}" | awk -F'|' -v p="$1" 'index($2, " " p) == 1 { print $5 + 0; exit }'
}

{
    echo "# Batch throughput: imgconv vs libvips vs ImageMagick ($DATE)"
    echo
    echo "Machine: $(machine)."
    if [ "$SET" = mixed ]; then
        echo "$N images of ${W}x${H} RGB (half PNG, half JPEG), $KNAME, outputs in the"
    else
        echo "$N images of ${W}x${H} RGB, all ${SET#photo-} ($IN_MB MB of files), $KNAME, outputs in the"
    fi
    echo "input's format, JPEG quality 92. MB = decoded RGB megabytes ($MB MB in all)."
    echo "Images: $SOURCE."
    echo "Wall time of the whole run, one run each; produced by bench/run.sh batch (SET=$SET)."
    echo
    echo "| tool | files written | seconds | images/s | MB/s |"
    echo "|---|---|---|---|---|"
    printf '%s\n' "${ROWS[@]}"
    echo
    echo "Steady rates: the $N files' time less the same command's on one file (median of 3)."
    echo
    echo "| imgconv row | seconds | one file s | steady images/s |"
    echo "|---|---:|---:|---:|"
    printf '%s\n' "${STEADY[@]}"
    echo
    echo "imgconv --backend $BACKEND: $(stages "$IC_JSON")."
    if [ -n "$XARGS_JSON" ]; then echo "imgconv --backend $BACKEND $IMGCONV_ARGS: $(stages "$XARGS_JSON")."; fi
    for js in "${DEC_JSONS[@]}"; do
        case "$js" in
        *-dec-*) m=${js##*-dec-} && m="IC_BATCH_DECODE=${m%.json}" ;;
        *) m=${js##*-env-} && m=$(printf '%s\n' ${ENV_ROWS:-} | grep "^${m%.json}=" | head -1) ;;
        esac
        echo
        echo "imgconv --backend $BACKEND ($m): $(stages "$js")."
    done
    if [ -n "$CPU_JSON" ]; then
        echo
        echo "imgconv --backend cpu: $(stages "$CPU_JSON")."
    fi
    if [ "$SET" != mixed ] && [ -n "$CPU_JSON" ]; then
        echo
        python3 - "$(row_ips "imgconv --backend $BACKEND")" "$(row_ips "imgconv --backend cpu")" \
            "$(row_ips vips)" "$SET" <<'EOF'
import sys
g, c, st = float(sys.argv[1] or 0), float(sys.argv[2] or 0), sys.argv[4]
v = float(sys.argv[3] or 0)
print(f"Ratios (wall time, this run): imgconv --backend GPU row {g:.1f} images/s = "
      f"{g / c if c else 0:.2f}x imgconv cpu"
      + (f", {g / v:.2f}x libvips" if v > 0 else ", libvips not run") + ".")
if st == "photo-jpeg":
    print(f"Targets: >= 500 images/s {'met' if g >= 500 else 'missed'}; "
          f">= 8x libvips {('met' if g >= 8 * v else 'missed') if v > 0 else 'n/a'}; "
          f">= 4x imgconv cpu {'met' if c and g >= 4 * c else 'missed'}.")
EOF
    fi
    echo
    echo "Versions: imgconv $("$IMGCONV" --version | head -1); $VIPS_VER; $IM_VER."
    echo "Peers from $PEERS_FROM."
    for t in main xargs cpu; do
        [ -s "$WORK/trace-$t.txt" ] || continue
        echo
        case $t in
        main) ttl="Timeline of imgconv --backend $BACKEND (the first row)" ;;
        xargs) ttl="Timeline of imgconv --backend $BACKEND $IMGCONV_ARGS" ;;
        *) ttl="Timeline of imgconv --backend cpu" ;;
        esac
        python3 "$HERE/batch_timeline.py" "$WORK/trace-$t.txt" --title "$ttl" || echo "(timeline failed)"
    done
} >"$RESULT"
cat "$RESULT"
