#!/usr/bin/env bash
# ratio_table.sh - bench/ratio_table.py, the parser behind `scripts/gpu-check.sh
# ratio` (seed 003 Fig 7.14 measured), on ncu CSV written here with known
# counts: the split of the threads' global loads into uint8 samples and float32
# weights (u8f32 and rows mixes), the ratios per sample / request / L1 / L2 /
# DRAM byte, the formula column read from imgconv-bench's table R, thousands
# separators, the units line, and a run without a result reported as missing
# (exit 1). Skipped without python3 or without imgconv-bench beside imgconv.
source "$(dirname "$0")/common.bash"
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
BENCH="$(dirname "$IMGCONV")/imgconv-bench"
command -v python3 >/dev/null 2>&1 || { echo "SKIPPED: no python3"; exit 77; }
[ -x "$BENCH" ] || { echo "SKIPPED: no imgconv-bench beside $IMGCONV"; exit 77; }
cd "$TMP" || exit 1

CUDA_VISIBLE_DEVICES= "$BENCH" --out . --stamp t --tables R >/dev/null 2>&1 &&
    grep -q '^## R\.' bench-t.md && ok "imgconv-bench --tables R writes table R" ||
    fail "imgconv-bench --tables R writes table R"

# One ncu --csv --page raw output: header, units line, one kernel row.
# LDNAME: the thread-level load count's name (both spellings occur).
# ncu_csv NAME FFMA THREAD_LD THREAD_BYTES REQUESTS SECTORS L2_SECTORS DRAM_BYTES
ncu_csv() {
    {
        echo '==PROF== Connected to process 1 (imgconv)'
        echo '"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","dram__bytes_read.sum","gpu__time_duration.sum","l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum","l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum","lts__t_sectors_srcunit_tex_op_read.sum","smsp__sass_data_bytes_mem_global_op_ld.sum","smsp__sass_thread_inst_executed_op_ffma_pred_on.sum","'"$LDNAME"'"'
        echo '"","","","","","","","byte","nsecond","request","sector","sector","byte","inst","inst"'
        echo "\"0\",\"1\",\"imgconv\",\"127.0.0.1\",\"$1\",\"1\",\"7\",\"$8\",\"250,000\",\"$5\",\"$6\",\"$7\",\"$4\",\"$2\",\"$3\""
    } > "$9"
}

# cuda-tiled-in 5x5 on HD RGB: nominal 155,520,000 MACs, one weight per MAC;
# 8,125,000 samples -> 19.14 MAC per sample (the formula's 32x32 input tile).
LDNAME=smsp__sass_thread_inst_executed_op_global_ld.sum
ncu_csv "(anonymous namespace)::ic_cu_conv_kernel<ic_cu_tiled_in, ic_cu_wglobal>(ic_cuda_args, ic_cu_wglobal)" \
    155,520,000 163645000 630205000 7776000 10000000 777600 6220800 tin.csv
# rows x2 9x9: 1,000,000 16-byte loads and 100,000 edge taps (a sample and a
# weight each): N = 1,200,000, B = 16,500,000 -> weights 100,000, samples
# 16,100,000 bytes.
LDNAME=smsp__sass_thread_inst_executed_op_global_ld_pred_on.sum
ncu_csv "(anonymous namespace)::rows_kernel<9, 3, 0, 2>(ic_cuda_args, rows_w<9, 0>, rows_edges)" \
    503884800 1200000 16500000 1000000 2000000 1000000 6220800 rows.csv
: > empty.csv
printf 'cuda-tiled-in\tcuda-tiled-in\t5\t155520000\tu8f32\t%s\n' "$TMP/tin.csv" > manifest
printf 'rows x2\tcuda\t9\t503884800\trows\t%s\n' "$TMP/rows.csv" >> manifest

python3 "$ROOT/bench/ratio_table.py" manifest bench-t.md out.md "device: test" > stdout.txt 2>&1
rc=$?
[ $rc -eq 0 ] && ok "parser exit 0 with every run present" || { fail "parser exit 0 (got $rc)"; cat stdout.txt; }
row() { grep "^| $1 | $2 |" out.md; }
col() { row "$1" "$2" | awk -F'|' -v c="$3" '{gsub(/^ +| +$/, "", $(c + 1)); print $(c + 1)}'; }
# columns: 1 backend, 2 filter, 3 kernel, 4 us, 5 FFMA/nominal, 6 weights/FFMA,
# 7 samples (M), 8 MAC/sample, 9 formula, 10 seed OP/B, 11 MAC/request,
# 12 MAC/L1 B, 13 MAC/L2 B, 14 MAC/DRAM B
check() { # check DESC BACKEND FILTER COLUMN EXPECTED
    local got
    got=$(col "$2" "$3" "$4")
    [ "$got" = "$5" ] && ok "$1: $5" || fail "$1: got '$got', want '$5'"
}
check "tiled-in kernel name shortened" cuda-tiled-in 5x5 3 '`conv<tiled_in>`'
check "tiled-in time in us" cuda-tiled-in 5x5 4 250.0
check "tiled-in FFMA / nominal (thousands separators)" cuda-tiled-in 5x5 5 1.000
check "tiled-in weights / FFMA" cuda-tiled-in 5x5 6 1.000
check "tiled-in samples loaded" cuda-tiled-in 5x5 7 8.1
check "tiled-in MAC / sample" cuda-tiled-in 5x5 8 19.14
check "tiled-in formula from table R" cuda-tiled-in 5x5 9 19.14
check "tiled-in seed units" cuda-tiled-in 5x5 10 9.57
check "tiled-in MAC / request" cuda-tiled-in 5x5 11 20.0
check "tiled-in MAC / L1 byte" cuda-tiled-in 5x5 12 0.49
check "tiled-in MAC / L2 byte" cuda-tiled-in 5x5 13 6.25
check "tiled-in MAC / DRAM byte" cuda-tiled-in 5x5 14 25.00
check "rows kernel name" "rows x2" 9x9 3 '`rows_kernel<9,3,0,2>`'
check "rows samples (16-byte loads + edge bytes)" "rows x2" 9x9 7 16.1
check "rows weights / FFMA (edge taps only)" "rows x2" 9x9 6 0.000
check "rows MAC / sample" "rows x2" 9x9 8 31.30
check "rows formula from table R (x2, 9x9)" "rows x2" 9x9 9 5.40
grep -q "^- Bound 9x9: 81 MAC per element" out.md && ok "bound from table R" || fail "bound from table R"

printf 'cuda-tiled-out\tcuda-tiled-out\t5\t155520000\tu8f32\t%s\n' "$TMP/empty.csv" >> manifest
python3 "$ROOT/bench/ratio_table.py" manifest bench-t.md out2.md > stdout.txt 2>&1
rc=$?
[ $rc -eq 1 ] && ok "a run without ncu result: exit 1" || fail "a run without ncu result: exit 1 (got $rc)"
grep -q "No ncu result for: cuda-tiled-out 5x5" out2.md && ok "missing run named in the table" ||
    fail "missing run named in the table"
finish
