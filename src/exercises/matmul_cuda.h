/*
 * matmul_cuda.h - C-callable entry points of the CUDA matrix product
 * (matmul_cuda.cu), internal: ic_matmul reaches them through the `cuda`
 * backend's matmul entry (src/cuda/fast/plan.cu; the dispatcher's
 * src/dispatch/signal.c), backend cuda-gemm calls ic__matmul_dev on its column
 * matrix, and the benchmark times ic__matmul_dev alone against cuBLAS (device
 * pointers, CUDA events).
 */
#ifndef IC_CUDA_MATMUL_H
#define IC_CUDA_MATMUL_H

#include <stddef.h>

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Which kernel computes C = A * B; also the index into ic__matmul_cuda_variants. */
typedef enum ic_mm_variant {
    IC_MM_NAIVE = 0, /* seed 002: one thread per C entry, A and B from global memory */
    IC_MM_TILED,     /* seed 002: 16x16 tiles of A and B in shared memory, one C entry per thread */
    IC_MM_FAST       /* the same tiled kernel with register blocking; tile shape picked by shape */
} ic_mm_variant;

/* Computes C = A * B on device memory (row-major, contiguous: A M x K, B K x N,
 * C M x N; M, K, N >= 1), asynchronously on `stream` (a cudaStream_t; NULL =
 * the default stream). Every C entry sums its K products in increasing k.
 * Checks the launch; faults surface at the caller's next sync.
 * Errors: IC_ERR_INVALID_ARG, IC_ERR_DEVICE. */
ic_status ic__matmul_dev(ic_mm_variant v, const float *dA, const float *dB, float *dC, int M, int K,
                         int N, void *stream, char *err, size_t errlen);

/* The names ic_matmul accepts for the variants, in ic_mm_variant order:
 * {"cuda-naive", "cuda-tiled", "cuda", NULL}. */
extern const char *const ic__matmul_cuda_variants[];

/* The same from host memory to host memory (allocate, upload, run, download,
 * free; synchronous): the `cuda` backend's matmul entry (v is an
 * ic_mm_variant). The caller has checked that a device is usable.
 * Errors: as ic__matmul_dev, IC_ERR_TOO_LARGE. */
ic_status ic__matmul_cuda(int v, const float *A, const float *B, float *C, int M, int K, int N,
                          char *err, size_t errlen);

/* The tile shape ic__matmul_dev uses for this variant and shape, for tables:
 * e.g. "128x128x8 tile, 8x8 per thread" (static string). */
const char *ic__matmul_shape(ic_mm_variant v, int M, int K, int N);

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_MATMUL_H */
