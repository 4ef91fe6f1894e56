#!/usr/bin/env bash
# options.sh - every filtering option of imgconv does what --help says, checked
# on exact samples where the answer can be worked out by hand (a 4x3 grey
# image and one-hot kernels that shift it, so each border mode and the
# convolution/correlation orientation give distinct, known rows), and on the
# test chart where only equality or difference can be checked.
source "$(dirname "$0")/common.bash"
cd "$TMP" || exit 1

# expect_samples DESC "EXPECTED SAMPLES" ARGS...: filter, then compare the
# output PGM/PPM samples (the output must be the last argument).
expect_samples() {
    local desc=$1 want=$2
    shift 2
    local out="${*: -1}"
    rm -f "$out" # a fresh output: an existing image is not replaced without --overwrite
    if ! expect_ok "$desc: runs" "$@"; then return; fi
    local got
    got=$(pnm_samples "$out")
    if [ "$got" = "$want" ]; then
        ok "$desc: samples"
    else
        fail "$desc: samples"
        echo "     want: $want"
        echo "     got:  $got"
    fi
}

# in(x, y): rows 10 20 30 40 / 50 60 70 80 / 90 100 110 120.
make_pgm in.pgm 4 3 10 20 30 40 50 60 70 80 90 100 110 120
IN="10 20 30 40 50 60 70 80 90 100 110 120"

# ---- kernel text forms ------------------------------------------------------
expect_samples "identity kernel '1'" "$IN" --kernel 1 in.pgm o.pgm
expect_samples "named identity" "$IN" --kernel identity in.pgm o.pgm
# A 5x1 one-hot kernel K(4,0) = 1, cx = 2: convolution gives out(x) = in(x-2),
# correlation out(x) = in(x+2); the two missing samples come from the border.
SHIFT="0 0 0 0 1"
expect_samples "convolution flips the kernel (constant 0)" \
    "0 0 10 20 0 0 50 60 0 0 90 100" --kernel "$SHIFT" --border constant in.pgm o.pgm
expect_samples "--correlate does not flip" \
    "30 40 0 0 70 80 0 0 110 120 0 0" --kernel "$SHIFT" --border constant --correlate in.pgm o.pgm
expect_samples "--border constant --border-value 7" \
    "7 7 10 20 7 7 50 60 7 7 90 100" --kernel "$SHIFT" --border constant --border-value 7 in.pgm o.pgm
expect_samples "the default border is mirror (reflect-101)" \
    "30 20 10 20 70 60 50 60 110 100 90 100" --kernel "$SHIFT" in.pgm o.pgm
expect_samples "the default border is mirror (--correlate)" \
    "30 40 30 20 70 80 70 60 110 120 110 100" --kernel "$SHIFT" --correlate in.pgm o.pgm
expect_samples "--border constant --border-value 255" \
    "255 255 10 20 255 255 50 60 255 255 90 100" --kernel "$SHIFT" --border constant --border-value 255 in.pgm o.pgm
expect_samples "--border replicate" \
    "10 10 10 20 50 50 50 60 90 90 90 100" --kernel "$SHIFT" --border replicate in.pgm o.pgm
expect_samples "--border mirror (reflect-101)" \
    "30 20 10 20 70 60 50 60 110 100 90 100" --kernel "$SHIFT" --border mirror in.pgm o.pgm
expect_samples "--border reflect (symmetric)" \
    "20 10 10 20 60 50 50 60 100 90 90 100" --kernel "$SHIFT" --border reflect in.pgm o.pgm
expect_samples "--border wrap" \
    "30 40 10 20 70 80 50 60 110 120 90 100" --kernel "$SHIFT" --border wrap in.pgm o.pgm
expect_samples "--correlate --border mirror" \
    "30 40 30 20 70 80 70 60 110 120 110 100" --kernel "$SHIFT" --correlate --border mirror in.pgm o.pgm
expect_samples "--correlate --border reflect" \
    "30 40 40 30 70 80 80 70 110 120 120 110" --kernel "$SHIFT" --correlate --border reflect in.pgm o.pgm
for alias in edge nearest clamp; do
    expect_samples "border alias $alias = replicate" \
        "10 10 10 20 50 50 50 60 90 90 90 100" --kernel "$SHIFT" --border $alias in.pgm o.pgm
done
expect_samples "border alias periodic = wrap" \
    "30 40 10 20 70 80 50 60 110 120 90 100" --kernel "$SHIFT" --border periodic in.pgm o.pgm
# Vertical: a 1x3 column one-hot K(0,2) = 1: convolution out(y) = in(y-1).
expect_samples "column kernel, replicate" \
    "10 20 30 40 10 20 30 40 50 60 70 80" --kernel "0; 0; 1" --border replicate in.pgm o.pgm
# Divisor and rounding: (1 2 1)/4 with replicate; 12.5 -> 12 and 37.5 -> 38 (ties to even).
expect_samples "divisor '/ 4' and ties to even" \
    "12 20 30 38 52 60 70 78 92 100 110 118" --kernel "1 2 1 / 4" --border replicate in.pgm o.pgm
expect_samples "commas as separators" \
    "12 20 30 38 52 60 70 78 92 100 110 118" --kernel "1,2,1/4" --border replicate in.pgm o.pgm

# ---- --bias, rounding, clamping, .mat offset -------------------------------------
expect_samples "--bias 10.5 rounds ties to even (down)" \
    "20 30 40 50 60 70 80 90 100 110 120 130" --kernel 1 --bias 10.5 in.pgm o.pgm
expect_samples "--bias 11.5 rounds ties to even (up)" \
    "22 32 42 52 62 72 82 92 102 112 122 132" --kernel 1 --bias 11.5 in.pgm o.pgm
expect_samples "--bias 200 clamps at 255" \
    "210 220 230 240 250 255 255 255 255 255 255 255" --kernel 1 --bias 200 in.pgm o.pgm
expect_samples "--bias -55 clamps at 0" \
    "0 0 0 0 0 5 15 25 35 45 55 65" --kernel 1 --bias -55 in.pgm o.pgm
# libvips .mat: "W H SCALE OFFSET"; weights divided by SCALE; OFFSET added to --bias.
printf '3 1 2 5\n0 4 0\n' >k.mat
expect_samples ".mat kernel file: 2*in + 5" \
    "25 45 65 85 105 125 145 165 185 205 225 245" --kernel-file k.mat in.pgm o.pgm
expect_samples ".mat offset adds to --bias" \
    "27 47 67 87 107 127 147 167 187 207 227 247" --kernel-file k.mat --bias 2 in.pgm o.pgm
expect_samples "--kernel @FILE = --kernel-file" \
    "25 45 65 85 105 125 145 165 185 205 225 245" --kernel @k.mat in.pgm o.pgm
printf '# a plain matrix saved as .mat\n0 0 0 0 1\n' >plain.mat
expect_samples "--kernel @plain.mat without a libvips header" \
    "0 0 10 20 0 0 50 60 0 0 90 100" --kernel @plain.mat --border constant in.pgm o.pgm
printf '# shift right by two\n0 0 0 0 1\n' >shift.txt
expect_samples "matrix kernel file" \
    "0 0 10 20 0 0 50 60 0 0 90 100" --kernel-file shift.txt --border constant in.pgm o.pgm
printf '1\n2\n1\n/ 4\n' >col.txt
expect_samples "kernel file with rows per line and '/ D'" \
    "20 30 40 50 50 60 70 80 80 90 100 110" --kernel-file col.txt --border replicate in.pgm o.pgm

# ---- --channels ------------------------------------------------------------
expect_ok "--channels 3 on a grey input" --kernel 1 --channels 3 in.pgm rgb.ppm
head -c 2 rgb.ppm | grep -q P6 && ok "--channels 3 gives a PPM" || fail "--channels 3 gives a PPM"
[ "$(pnm_samples rgb.ppm | cut -d' ' -f1-6)" = "10 10 10 20 20 20" ] && ok "grey -> RGB repeats the sample" || fail "grey -> RGB repeats the sample"
expect_ok "--channels 1 back to grey" --kernel 1 --channels 1 rgb.ppm grey.pgm
cmp -s grey.pgm in.pgm && ok "RGB of equal samples -> grey is lossless" || fail "RGB of equal samples -> grey is lossless"

# ---- --max-pixels ----------------------------------------------------------
rm -f o.pgm
expect_ok "--max-pixels 12 admits a 4x3 image" --kernel 1 --max-pixels 12 in.pgm o.pgm
rm -f o.pgm
expect_error 3 "in.pgm" "--max-pixels 11 refuses a 4x3 image" --kernel 1 --max-pixels 11 in.pgm o.pgm
[ ! -e o.pgm ] && ok "no output over --max-pixels" || fail "no output over --max-pixels"

# ---- the chart: layout, threads, backend, repeat, positional order -----------------
expect_ok "chart for the option tests" --chart 131x77 chart.ppm
expect_ok "gaussian:5 aos" --kernel gaussian:5 chart.ppm g_aos.ppm
expect_ok "gaussian:5 --layout soa" --kernel gaussian:5 --layout soa chart.ppm g_soa.ppm
cmp -s g_aos.ppm g_soa.ppm && ok "--layout soa gives the same bytes as aos" || fail "--layout soa gives the same bytes as aos"
expect_ok "--threads 1" --kernel gaussian:5 --threads 1 chart.ppm g_t1.ppm
expect_ok "--threads 3" --kernel gaussian:5 --threads 3 chart.ppm g_t3.ppm
cmp -s g_aos.ppm g_t1.ppm && cmp -s g_aos.ppm g_t3.ppm && ok "--threads does not change the result" || fail "--threads does not change the result"
expect_ok "--transfer async --device-memory 1000000" --kernel gaussian:5 --transfer async --device-memory 1000000 chart.ppm g_async.ppm
cmp -s g_aos.ppm g_async.ppm && ok "--transfer async gives the same bytes" || fail "--transfer async gives the same bytes"
expect_ok "--transfer sync" --kernel gaussian:5 --transfer sync chart.ppm g_sync.ppm
expect_ok "--transfer auto --recalibrate" --kernel gaussian:5 --transfer auto --recalibrate chart.ppm g_auto.ppm
cmp -s g_aos.ppm g_sync.ppm && cmp -s g_aos.ppm g_auto.ppm && ok "--transfer sync and auto give the same bytes" || fail "--transfer sync and auto give the same bytes"
expect_ok "--backend seq --device 0" --kernel gaussian:5 --backend seq --device 0 chart.ppm g_seq.ppm
# --tune: knobs for tests and profiling (include/imgconv.h, ic_tuning); same bytes
expect_ok "--backend cpu" --kernel gaussian:5 --backend cpu chart.ppm g_tcpu.ppm
expect_ok "--tune method=direct" --kernel gaussian:5 --backend cpu --tune method=direct chart.ppm g_tdirect.ppm
expect_ok "--tune method=sep,cpu-isa=scalar,cpu-tiny=1" --kernel gaussian:5 --backend cpu \
    --tune method=sep,cpu-isa=scalar,cpu-tiny=1 chart.ppm g_tsep.ppm
cmp -s g_tcpu.ppm g_tdirect.ppm && cmp -s g_tcpu.ppm g_tsep.ppm && ok "--tune does not change the result" || fail "--tune does not change the result"
expect_ok "--tune with the cuda knobs on cpu (ignored there)" --kernel gaussian:5 --backend cpu \
    --tune method=rows,rows-shape=2,rows-full=1,fft-n=512,calibrate=builtin chart.ppm g_tcuda.ppm
cmp -s g_tcpu.ppm g_tcuda.ppm && ok "cuda knobs leave cpu's result alone" || fail "cuda knobs leave cpu's result alone"
expect_error 2 "rows-shape" "--tune rows-shape=3 is refused" --kernel gaussian:5 --tune rows-shape=3 chart.ppm g_bad.ppm
expect_error 2 "colour" "--tune with an unknown key is refused" --kernel gaussian:5 --tune colour=red chart.ppm g_bad.ppm
expect_ok "options after the files" chart.ppm g_perm.ppm --kernel gaussian:5
cmp -s g_aos.ppm g_perm.ppm && ok "option order does not matter" || fail "option order does not matter"
expect_ok "-k short option" -k gaussian:5 chart.ppm g_short.ppm
cmp -s g_aos.ppm g_short.ppm && ok "-k = --kernel" || fail "-k = --kernel"
expect_ok "named args by key" --kernel gaussian:size=5,sigma=0 chart.ppm g_key.ppm
cmp -s g_aos.ppm g_key.ppm && ok "gaussian:5 = gaussian:size=5,sigma=0" || fail "gaussian:5 = gaussian:size=5,sigma=0"
expect_ok "box:3" --kernel box:3 chart.ppm box_named.ppm
expect_ok "box as a matrix" --kernel "1 1 1; 1 1 1; 1 1 1 / 9" chart.ppm box_matrix.ppm
d=$(compare_pnm box_named.ppm box_matrix.ppm)
case "$d" in SAME | [0-9]*" 1 "*) ok "box:3 = matrix/9 (within 1 level: $d)" ;; *) fail "box:3 = matrix/9: $d" ;; esac
expect_ok "sobel-x" --kernel sobel-x chart.ppm sx_conv.ppm
expect_ok "sobel-x --correlate" --kernel sobel-x --correlate chart.ppm sx_corr.ppm
cmp -s sx_conv.ppm sx_corr.ppm && fail "--correlate changes an antisymmetric kernel's result" || ok "--correlate changes an antisymmetric kernel's result"
cp -- chart.ppm -dash.ppm
expect_ok "'--' ends the options" --kernel 1 -- -dash.ppm dash-out.ppm
cmp -s chart.ppm dash-out.ppm && ok "identity kernel reproduces the input" || fail "identity kernel reproduces the input"

# ---- --repeat, --time, --explain ----------------------------------------------
expect_ok "--repeat 3 --time" --kernel gaussian:5 --repeat 3 --time chart.ppm rt.ppm
for stage in load upload kernel download save; do
    grep -Eq "^ +$stage +[0-9.]+ +[0-9.]+" "$OUT" || fail "--time prints a $stage line with mean and median"
done
grep -q 'mean' "$OUT" && grep -q 'median' "$OUT" && ok "--time prints mean and median per stage" || fail "--time prints mean and median"
grep -Eq '^imgconv: backend [a-z-]+: .*3 runs' "$OUT" && ok "--time says which backend ran and how often" || fail "--time says which backend ran and how often"
cmp -s g_aos.ppm rt.ppm && ok "--repeat writes the same output" || fail "--repeat writes the same output"
expect_ok "--time alone" --kernel gaussian:5 -t --backend seq chart.ppm rt1.ppm
grep -q 'backend seq:.*1 run$' "$OUT" && ok "--time with one run names backend seq" || fail "--time with one run names backend seq"
expect_ok "no --time: silent" --kernel gaussian:5 chart.ppm quiet.ppm
[ ! -s "$OUT" ] && ok "nothing on stdout without --time" || fail "nothing on stdout without --time"
expect_ok "--explain" --kernel gaussian:5 --border replicate --explain chart.ppm ex.ppm
grep -q '5x5' "$OUT" && grep -Eq 'rank 1\b' "$OUT" && grep -q 'replicate' "$OUT" && grep -q 'backend' "$OUT" \
    && ok "--explain shows kernel size, rank 1 for a Gaussian, border, backend" || { fail "--explain shows the plan"; cat "$OUT"; }
expect_ok "same without --explain" --kernel gaussian:5 --border replicate chart.ppm g_rep.ppm
cmp -s g_rep.ppm ex.ppm && ok "--explain still filters, the same way" || fail "--explain still filters, the same way"
expect_ok "--explain a rank-2 kernel" --kernel "1 2 3; 4 5 6; 7 8 10" --explain chart.ppm ex2.ppm
grep -Eq 'rank (2|3)\b|not separable' "$OUT" && ok "--explain: a full-rank 3x3 is not rank 1" || { fail "--explain rank of a full-rank kernel"; cat "$OUT"; }

# ---- formats: --quality and alpha (PNG/JPEG when built in) -------------------------
if has_format jpeg; then
    expect_ok "--quality 10" --kernel 1 --quality 10 chart.ppm q10.jpg
    expect_ok "--quality 95" --kernel 1 --quality 95 chart.ppm q95.jpg
    [ "$(wc -c <q10.jpg)" -lt "$(wc -c <q95.jpg)" ] && ok "--quality 10 gives a smaller JPEG than 95" || fail "--quality 10 gives a smaller JPEG than 95"
    expect_ok "JPEG in, PPM out" --kernel sharpen q95.jpg fromjpeg.ppm
else
    echo "skip --quality (JPEG not built in)"
fi
if has_format png; then
    expect_ok "RGBA chart" --chart 96x64x4 rgba.png
    for mode in auto premultiply keep independent; do
        expect_ok "--alpha $mode (gaussian:5)" --kernel gaussian:5 --alpha $mode rgba.png a_g_$mode.png
        expect_ok "--alpha $mode (sobel-x)" --kernel sobel-x --alpha $mode rgba.png a_s_$mode.png
    done
    cmp -s a_g_auto.png a_g_premultiply.png && ok "--alpha auto = premultiply for a blur (weights sum 1)" || fail "--alpha auto = premultiply for a blur"
    cmp -s a_s_auto.png a_s_keep.png && ok "--alpha auto = keep for sobel-x (weights sum 0)" || fail "--alpha auto = keep for sobel-x"
    expect_ok "PNG grey+alpha via --channels 2" --kernel box:3 --channels 2 rgba.png ga.png
    expect_ok "identity on RGBA, --alpha independent" --kernel 1 --alpha independent rgba.png id.png
    cmp -s rgba.png id.png && ok "identity reproduces an RGBA PNG byte for byte" || fail "identity reproduces an RGBA PNG byte for byte"
else
    echo "skip --alpha and PNG (PNG not built in)"
fi

finish
