/*
 * conv1d_cuda.h - C-callable entry points of the CUDA 1D convolution
 * (conv1d_cuda.cu), internal: ic_conv1d_* reach them through the `cuda`
 * backend's conv1d entry (src/cuda/fast/plan.cu; the dispatcher's
 * src/dispatch/signal.c), and the benchmark times ic__conv1d_dev alone
 * (device pointers, CUDA events).
 */
#ifndef IC_CUDA_CONV1D_H
#define IC_CUDA_CONV1D_H

#include <stddef.h>

#include "imgconv_course.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Block shape of the tiled kernel: IC_CONV1D_THREADS threads, each computing
 * IC_CONV1D_ITEMS outputs, so a block owns IC_CONV1D_THREADS*IC_CONV1D_ITEMS
 * outputs plus klen-1 halo cells in shared memory. */
#define IC_CONV1D_THREADS 256
/* 8 outputs per thread measured faster than 4 at every kernel length;
 * a -D override lets the benchmark try other tile sizes. */
#ifndef IC_CONV1D_ITEMS
#define IC_CONV1D_ITEMS 8
#endif

/* Launches the tiled 1D correlation on device memory, asynchronously on
 * `stream` (a cudaStream_t; NULL = the default stream):
 *   d_out[i] = bias + sum_{t<klen} d_w[t] * d_in[map(i + t - (klen-1)/2)]
 * d_in/d_out: n float32 samples, or uint8 when is_u8 (1 <= n <= IC_MAX_SIGNAL), d_w: klen
 * correlation weights (odd, 1..IC_MAX_KERNEL_1D) in device memory. Checks the
 * launch; a fault inside the kernel surfaces at the caller's next sync.
 * Errors: IC_ERR_INVALID_ARG, IC_ERR_DEVICE (err names the failing call). */
ic_status ic__conv1d_dev(const void *d_in, void *d_out, int n, int is_u8, const float *d_w,
                         int klen, int border, float border_value, float bias, void *stream,
                         char *err, size_t errlen);

/* The same from host memory to host memory: allocates device buffers, uploads,
 * runs ic__conv1d_dev, downloads and frees (synchronous). w: klen correlation
 * weights on the host. The caller has checked that a device is usable. */
ic_status ic__conv1d_cuda(const void *in, void *out, int n, int is_u8, const float *w, int klen,
                          int border, float border_value, float bias, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_CONV1D_H */
