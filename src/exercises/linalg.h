/*
 * linalg.h - the CPU 1D correlation and matrix product behind ic_conv1d_*,
 * ic_stencil1d and ic_matmul (internal): the `cpu` backend's optional conv1d
 * and matmul entries (src/cpu/cpu.c; contract in src/dispatch/backend.h),
 * reached through the backend table by src/dispatch/signal.c.
 */
#ifndef IC_CPU_LINALG_H
#define IC_CPU_LINALG_H

#include <stddef.h>
#include <stdint.h>

#include "imgconv.h"

/* out[i] = bias + sum_{t<klen} w[t] * in[map(i + t - (klen-1)/2)], i < n, summed
 * in float32 in increasing t; map is ic_border_map (border_value outside for
 * IC_BORDER_CONSTANT). in and out hold n float32 samples, or n uint8 samples
 * when is_u8 (results rounded with ic_round_u8). 1 <= n <= IC_MAX_SIGNAL, klen
 * odd, 1..IC_MAX_KERNEL_1D. Errors: IC_ERR_NOMEM (scratch tile; err says so). */
ic_status ic__conv1d_cpu(const void *in, void *out, int n, int is_u8, const float *w, int klen,
                         int border, float border_value, float bias, char *err, size_t errlen);

/* The names ic_matmul accepts for ic__matmul_cpu: {"cpu", NULL}. */
extern const char *const ic__matmul_cpu_variants[];

/* C = A * B, row-major, A M x K, B K x N; sums over k in increasing order.
 * One kernel: variant (0) and err are unused. Always IC_OK. */
ic_status ic__matmul_cpu(int variant, const float *A, const float *B, float *C, int M, int K, int N,
                         char *err, size_t errlen);

#endif /* IC_CPU_LINALG_H */
