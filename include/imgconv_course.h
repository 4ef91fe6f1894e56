/*
 * imgconv_course.h - the course exercises of imgconv beside its image
 * filters: 1D convolution and the 1D stencil (seed 001) and the matrix product
 * (seed 002), on the CPU and on CUDA. A companion of imgconv.h (which it
 * includes), as zstd keeps zdict.h: an image user needs none of it. Same
 * conventions as imgconv.h: calls return an ic_status, ic_last_error() says
 * why one failed. Define IC_ADVANCED_API before including it for the
 * device-resident forms the benchmark times (imgconv.h, "Advanced API").
 */
#ifndef IMGCONV_COURSE_H
#define IMGCONV_COURSE_H

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Longest 1D kernel (odd lengths 1..IC_MAX_KERNEL_1D) and longest 1D signal
 * (so that every index, halo included, stays in an int). */
#define IC_MAX_KERNEL_1D 4095
#define IC_MAX_SIGNAL ((size_t)0x3FFFFFFF)

/* 1D convolution of a float32 signal: seed 001's 1D stencil extended to a 1D
 * convolution, computed on the GPU as seed 002's shared-memory tiles with halo
 * cells. With c = (klen-1)/2:
 *   convolution: out[i] = bias + sum_j k[j] * in[i - j + c]
 *   correlation: out[i] = bias + sum_j k[j] * in[i + j - c]
 * Samples outside [0, n) follow p->border exactly as image columns do
 * (p->border_value for IC_BORDER_CONSTANT); sums are accumulated in float32.
 * k holds klen weights (odd klen, 1..IC_MAX_KERNEL_1D, all finite; no divisor).
 * p may be NULL (ic_params_default: mirror border, convolution, bias 0); p->alpha
 * is ignored. backend: "cpu", "cuda", or NULL / "auto" (cuda when a device is
 * usable, else cpu). in and out must not overlap. On failure ic_last_error()
 * says why.
 * Errors: IC_ERR_INVALID_ARG (NULL pointers, n == 0, bad klen, border or
 * non-finite weight/bias/border value, overlap), IC_ERR_TOO_LARGE (n >
 * IC_MAX_SIGNAL), IC_ERR_NO_BACKEND (unknown backend; "cuda" in a build without
 * CUDA or on a machine without a device), IC_ERR_DEVICE (a CUDA call failed),
 * IC_ERR_NOMEM. */
ic_status ic_conv1d_f32(const float *in, float *out, size_t n, const float *k, int klen,
                        const ic_params *p, const char *backend);

/* ic_conv1d_f32 on uint8 samples: the float32 sum (bias included) is rounded
 * to nearest, ties to even, and clamped to [0, 255] (ic_convolve's rule). */
ic_status ic_conv1d_u8(const uint8_t *in, uint8_t *out, size_t n, const float *k, int klen,
                       const ic_params *p, const char *backend);

/* Seed 001's 1D stencil: out[i] = bias + sum_{j=-radius..radius} in[i + j], i.e.
 * ic_conv1d_f32 with an all-ones kernel of length 2*radius+1 (0 <= radius <=
 * (IC_MAX_KERNEL_1D-1)/2). p NULL gives the seed's zero ghost cells. Arguments
 * and errors as ic_conv1d_f32. */
ic_status ic_stencil1d(const float *in, float *out, size_t n, int radius, const ic_params *p,
                       const char *backend);

/* Matrix product C = A * B of row-major float32 matrices, A M x K, B K x N,
 * C M x N (M, K, N >= 1, any values, not only multiples of a tile); sums in
 * float32 over k in increasing order. variant:
 *   "cpu"        the CPU reference (one thread, i-k-j loops)
 *   "cuda-naive" seed 002's kernel: one thread per C entry, reads from global memory
 *   "cuda-tiled" seed 002's shared-memory kernel: 16x16 tiles of A and B
 *   "cuda"       the tiled kernel with register blocking (tile shape chosen by shape)
 *   NULL/"auto"  "cuda" when a device is usable, else "cpu".
 * Host pointers; C must not overlap A or B. Messages as ic_conv1d_f32.
 * Errors: IC_ERR_INVALID_ARG, IC_ERR_TOO_LARGE (a matrix over SIZE_MAX bytes),
 * IC_ERR_NO_BACKEND (unknown variant, or CUDA not usable), IC_ERR_DEVICE,
 * IC_ERR_NOMEM. */
ic_status ic_matmul(const float *A, const float *B, float *C, int M, int K, int N,
                    const char *variant);

#ifdef __cplusplus
}
#endif

#endif /* IMGCONV_COURSE_H */

/* ======================================================================== */
/* Advanced API: device-resident forms that do not wait (IC_ADVANCED_API)    */
/* ======================================================================== */
#if defined(IC_ADVANCED_API) && !defined(IMGCONV_COURSE_H_ADVANCED)
#define IMGCONV_COURSE_H_ADVANCED

#ifdef __cplusplus
extern "C" {
#endif

/* Device-resident 1D correlation that does not wait (for the benchmark's
 * 1D tables): d_in and d_out hold n samples (float32, or uint8 when u8 is nonzero;
 * 1 <= n <= IC_MAX_SIGNAL) in device memory of the current CUDA device,
 * d_k klen correlation weights (odd, 1..IC_MAX_KERNEL_1D) in device memory:
 *   d_out[i] = bias + sum_t d_k[t] * d_in[map(i + t - (klen-1)/2)]
 * (always a correlation: p->correlate and p->alpha are ignored; border,
 * border_value and bias as ic_conv1d_f32, p NULL: the defaults; uint8 results
 * rounded as ic_conv1d_u8). Queued on `stream` (a cudaStream_t, NULL: the
 * legacy default stream); the caller synchronises it. in and out must not
 * overlap. Errors: IC_ERR_INVALID_ARG, IC_ERR_TOO_LARGE, IC_ERR_NO_BACKEND
 * (a build without CUDA), IC_ERR_DEVICE. */
ic_status ic_conv1d_device(const void *d_in, void *d_out, size_t n, int u8, const float *d_k,
                           int klen, const ic_params *p, void *stream);

/* The kernels of ic_matmul's CUDA variants. */
typedef enum ic_matmul_kernel {
    IC_MATMUL_NAIVE = 0, /* "cuda-naive": one thread per C entry, from global memory */
    IC_MATMUL_TILED,     /* "cuda-tiled": 16x16 tiles of A and B in shared memory */
    IC_MATMUL_FAST       /* "cuda": the tiled kernel with register blocking */
} ic_matmul_kernel;

/* Device-resident C = A * B that does not wait (for the benchmark's matrix
 * tables):
 * row-major, contiguous float32 matrices in device memory of the current CUDA
 * device (A M x K, B K x N, C M x N; M, K, N >= 1), sums in increasing k,
 * queued on `stream` (NULL: the legacy default stream). Errors:
 * IC_ERR_INVALID_ARG, IC_ERR_NO_BACKEND (a build without CUDA),
 * IC_ERR_DEVICE. */
ic_status ic_matmul_device(ic_matmul_kernel kernel, const float *dA, const float *dB, float *dC,
                           int M, int K, int N, void *stream);

/* The tile shape ic_matmul_device uses for this kernel and shape, e.g.
 * "128x128x8 tile, 8x8 per thread" (static string; "" without CUDA). */
const char *ic_matmul_tile(ic_matmul_kernel kernel, int M, int K, int N);

#ifdef __cplusplus
}
#endif

#endif /* IC_ADVANCED_API */
