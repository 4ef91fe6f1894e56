/*
 * bench_gpu.h - the GPU half of imgconv-bench (bench_gpu.cu): device ceilings,
 * kernel-only timing of the `cuda` fast path on device-resident images, and
 * NVIDIA NPP side by side (when built with IC_HAVE_NPP). C-callable.
 *
 * Timing method, the same for every GPU number of the benchmark: warm-up, then
 * a spin kernel holds the GPU while the host queues `reps` runs, each between
 * two CUDA events, so host launch gaps stay out; the median is reported.
 * Runs rotate over enough input buffers (at least 3, at least ~150 MB in all)
 * that inputs do not sit in the 50 MB L2 between runs.
 */
#ifndef IC_BENCH_GPU_H
#define IC_BENCH_GPU_H

#include <stddef.h>

#include "cuda/fast/fast.h"
#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct bg_ctx bg_ctx;

/* 1 when a CUDA device is usable (else 0 and a reason). */
int bg_available(char *why, size_t n);
/* 1 when NPP was linked in. */
int bg_has_npp(void);

bg_ctx *bg_open(char *err, size_t n);
void bg_close(bg_ctx *g);

/* Device name, driver and runtime versions, SM count, L2 size (one line). */
void bg_describe(bg_ctx *g, char *buf, size_t n);

/* Measures the two ceilings: device-to-device cudaMemcpy of 1 GiB (bytes read
 * + written per second, median of 10) and the fp32 FMA rate of a register
 * loop kernel (multiply-adds per second, median of 10). Returns 0 on success. */
int bg_ceilings(bg_ctx *g, double *copy_bps, double *fma_per_s);

/* Uploads img into the rotating device buffers (AoS or SoA as img is), plus
 * a padded copy for NPP's border-less filter (halo `halo` pixels, AoS C3 only). */
int bg_set_image(bg_ctx *g, const ic_image *img, int halo, char *err, size_t n);

/* Kernel time of the fast path on the current image: median over reps runs.
 * force: IC_FAST_AUTO or a method. plan (may be NULL) gets the plan used.
 * Returns 0 on success. */
int bg_time_fast(bg_ctx *g, const ic_kernel *k, ic_border border, int reps, ic_fast_method force,
                 double *med_ms, ic_fast_plan *plan, char *err, size_t n);
/* The same with the job's premultiplied-alpha flag (ic_job.premultiply: the
 * current image must have 2 or 4 channels) set when premultiply is nonzero. */
int bg_time_fast_alpha(bg_ctx *g, const ic_kernel *k, ic_border border, int premultiply, int reps,
                       ic_fast_method force, double *med_ms, ic_fast_plan *plan, char *err,
                       size_t n);

/* NPP nppiFilter32f_8u_C3R (general weights, reversed as NPP wants) and
 * nppiFilterGaussBorder_8u_C3R (mask 3..15, replicate border) on the current
 * AoS RGB image. Return 0 on success, -1 when not applicable or not built. */
int bg_time_npp_filter(bg_ctx *g, const ic_kernel *k, int reps, double *med_ms, char *err, size_t n);
int bg_time_npp_gauss(bg_ctx *g, int ksize, int reps, double *med_ms, char *err, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* IC_BENCH_GPU_H */
