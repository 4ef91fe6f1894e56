/*
 * bench_gpu.h - the GPU half of imgconv-bench (bench_gpu.cu): the device
 * ceilings the library measured, kernel-only timing of the `cuda` fast path on
 * device-resident images (ic_convolve_async, the public header's advanced
 * tier), and NVIDIA NPP side by side (when built with IC_HAVE_NPP).
 * C-callable.
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

#define IC_ADVANCED_API
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

/* The two ceilings of the `cuda` backend's cost model, measured by the
 * library in this run (the context is opened with recalibrate: its
 * device-to-device copy, bytes read + written per second, and its register
 * FMA loop, multiply-adds per second; ic_plan). Returns 0 on success, -1
 * when the library could not measure them (it then plans with built-in
 * figures). */
int bg_ceilings(bg_ctx *g, double *copy_bps, double *fma_per_s);

/* Uploads img into the rotating device buffers (AoS or SoA as img is), plus
 * a padded copy for NPP's border-less filter (halo `halo` pixels, AoS C3 only). */
int bg_set_image(bg_ctx *g, const ic_image *img, int halo, char *err, size_t n);

/* Kernel time of the fast path (correlation with k) on the current image:
 * median over reps runs of ic_convolve_async. tune: the knobs for these runs
 * (forced method, fft tile, rows shape; NULL: the planner's). plan (may be
 * NULL) gets the plan used (ic_plan_get). Returns 0 on success, 1 (not
 * timed, *plan the planner's own) when tune forces a method the planner
 * cannot take for this job. */
int bg_time_fast(bg_ctx *g, const ic_kernel *k, ic_border border, int reps, const ic_tuning *tune,
                 double *med_ms, ic_plan *plan, char *err, size_t n);
/* The same with premultiplied alpha (IC_ALPHA_PREMULTIPLY: the current image
 * must have 2 or 4 channels) when premultiply is nonzero, else independent. */
int bg_time_fast_alpha(bg_ctx *g, const ic_kernel *k, ic_border border, int premultiply, int reps,
                       const ic_tuning *tune, double *med_ms, ic_plan *plan, char *err, size_t n);

/* What any kernel costs on the current image, by the same event method: an
 * empty kernel (one block: the launch alone) and a device-to-device copy of
 * the image's bytes (cudaMemcpy2DAsync in -> out: the least a filter must
 * move). Medians over reps runs. Returns 0 on success. */
int bg_time_floors(bg_ctx *g, int reps, double *empty_ms, double *copy_ms, char *err, size_t n);

/* CUPTI kernel time (ms, median of the same number of runs) of the last
 * bg_time_* call, when CUPTI is recording (bench_cupti.h: bc_open); -1
 * otherwise or when CUPTI lost records. */
double bg_cupti_ms(const bg_ctx *g);

/* Many images: nimg AoS device images of w[i] x h[i] x channels
 * (uint8, cudaMallocPitch, several input sets rotated so that inputs do not
 * sit in L2), filtered with k (correlation, replicate border) by one
 * ic_convolve_batch_async per run (*batched_ms) and by nimg
 * ic_convolve_async per run (*single_ms); medians over reps runs, each
 * between two CUDA events. Returns 0 on success. */
int bg_time_batch(bg_ctx *g, const ic_kernel *k, int nimg, const int *w, const int *h, int channels,
                  int reps, double *batched_ms, double *single_ms, char *err, size_t n);

/* NPP nppiFilter32f_8u_C3R (general weights, reversed as NPP wants) and
 * nppiFilterGaussBorder_8u_C3R (mask 3..15, replicate border) on the current
 * AoS RGB image. Return 0 on success, -1 when not applicable or not built. */
int bg_time_npp_filter(bg_ctx *g, const ic_kernel *k, int reps, double *med_ms, char *err,
                       size_t n);
int bg_time_npp_gauss(bg_ctx *g, int ksize, int reps, double *med_ms, char *err, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* IC_BENCH_GPU_H */
