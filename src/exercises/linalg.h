/*
 * linalg.h - the CPU 1D correlation and matrix product behind ic_conv1d_*,
 * ic_stencil1d and ic_matmul (internal; the public wrappers and the choice of
 * CPU or CUDA live in src/dispatch/signal.c).
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
 * odd, 1..IC_MAX_KERNEL_1D. Errors: IC_ERR_NOMEM (scratch tile). */
ic_status ic__conv1d_cpu(const void *in, void *out, int n, int is_u8, const float *w, int klen,
                         int border, float border_value, float bias);

/* C = A * B, row-major, A M x K, B K x N; sums over k in increasing order. */
void ic__matmul_cpu(const float *A, const float *B, float *C, int M, int K, int N);

#endif /* IC_CPU_LINALG_H */
