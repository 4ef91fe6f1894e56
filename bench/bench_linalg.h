/*
 * bench_linalg.h - the benchmark of the 1D convolution (seed 001's
 * stencil grown into seed 002's tiled 1D convolution) against the copy
 * ceiling, and of seed 002's matrix products (naive, tiled, register-blocked)
 * against cuBLAS SGEMM measured in the same run. Definitions in
 * bench_linalg.cu (built only with CUDA).
 */
#ifndef IC_BENCH_LINALG_H
#define IC_BENCH_LINALG_H

#include <stdio.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Measures on the current CUDA device, kernel-only on device-resident random
 * inputs (CUDA events, warm-up, median of 20 runs; 5 for the naive kernel on
 * the largest product):
 *   table L1  device-to-device cudaMemcpy of 1 GiB (the copy ceiling), then
 *             ic_conv1d_device on a float32 signal of 2^28 samples for kernel
 *             lengths 1, 3, 7, 15, 31, 127 and on a uint8 signal for length 3:
 *             ms, GB/s (bytes in + out), fraction of the ceiling; 3 x 4096
 *             outputs of each checked against a float64 host sum;
 *   table L2  ic_matmul_device naive / tiled / register-blocked and cublasSgemm
 *             for 1024^3, 4096^3, 1000x3000x777 and 4097x129x2049 (M x K x N):
 *             GFLOP/s, ratio to cuBLAS, max |C - C_cublas| / max |C_cublas|.
 * quick != 0: a 2^25-sample signal (and copy), 2048^3 instead of 4096^3, 5
 * runs. Full mode takes a few seconds on an H100.
 * md receives the two Markdown tables (may be NULL). json_items (may be NULL)
 * receives one JSON object per table row, each preceded by ",\n    ": items to
 * append to an array that already holds at least one item (imgconv-bench's
 * "cells"; every object has a "table" key, "L1" or "L2").
 * Returns 0 on success, 2 when every measurement ran but a result check failed
 * (flagged in the table and on stderr), 77 when no CUDA device is usable, 1
 * when a CUDA or cuBLAS call failed (one line on stderr names it). */
int ic_bench_linalg(FILE *md, FILE *json_items, int quick);

#ifdef __cplusplus
}
#endif

#endif /* IC_BENCH_LINALG_H */
