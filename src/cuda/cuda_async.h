/*
 * cuda_async.h - the asynchronous, banded host side of the CUDA strategy
 * backends (internal; definitions in cuda_async.cu).
 *
 * Seed 004's last experiment ("synchronous vs asynchronous loading") shows that
 * the copies, not the kernel, dominate a host-to-host filter. This path stages
 * the image through pinned host buffers, splits it into row bands with halo
 * rows, and overlaps the upload, kernel and download of successive bands on
 * several CUDA streams. The same band pipeline processes images larger than a
 * device-memory limit. ic_cuda_run (cuda_host.cu) takes this path for host
 * images when the context asked for IC_TRANSFER_ASYNC or a device_memory
 * limit, and under IC_TRANSFER_AUTO (the default) for images of at least
 * IC_CUDA_AUTO_ASYNC_BYTES.
 *
 * C-callable, so that C tests can ask for the band plan.
 */
#ifndef IC_CUDA_ASYNC_H
#define IC_CUDA_ASYNC_H

#include <stddef.h>

#include "cuda/cuda_host.h"

#ifdef __cplusplus
extern "C" {
#endif

/* IC_TRANSFER_AUTO takes the pipeline for images of at least this many bytes
 * of samples (smaller ones: one copy each way, where staging buys nothing). */
#define IC_CUDA_AUTO_ASYNC_BYTES ((size_t)1 << 20)

/* Most streams (and buffer sets) the pipeline uses. */
#define IC_CUDA_ASYNC_SLOTS 4

/* How an image is cut into bands. */
typedef struct ic_cuda_band_plan {
    int slots;        /* streams used, 1..IC_CUDA_ASYNC_SLOTS */
    int band_rows;    /* output rows per band (the last band may have fewer) */
    int bands;        /* number of bands */
    size_t dev_pitch; /* pitch of the device band buffers */
    size_t dev_bytes; /* device memory the plan allocates in all (weights included) */
    size_t min_bytes; /* the smallest limit that works: one slot, bands of one row */
    int row_align;    /* a band's first source row is a multiple of this (16, or 1 where
                       * the limit leaves no room for the extra halo rows) */
} ic_cuda_band_plan;

/* The per-context buffers of the pipeline (pinned host, device, streams). */
typedef struct ic_cuda_async ic_cuda_async;

/* Plans the bands for the job described by a (width, height, channels, soa,
 * kw, kh, border; pointers unused) under a device-memory limit (0: none).
 * plan->min_bytes is set also when the limit is too small. Errors: IC_ERR_TOO_LARGE when even one-row bands do not fit the limit (err
 * says how much one needs), IC_ERR_INVALID_ARG. */
ic_status ic_cuda_async_plan(const ic_cuda_args *a, size_t device_memory, ic_cuda_band_plan *plan,
                             char *err, size_t errlen);

/* ic_cuda_async_plan for output rows [row0, row1) of the image only (0 <= row0
 * < row1 <= a->height): the bands cover that range, halos still taken from the
 * whole image. Errors as ic_cuda_async_plan. */
ic_status ic_cuda_async_plan_rows(const ic_cuda_args *a, int row0, int row1, size_t device_memory,
                                  ic_cuda_band_plan *plan, char *err, size_t errlen);

/* Runs one job through the band pipeline on the current device. a holds the
 * job's kernel arguments (device pointers NULL; cuda_host.cu's job_args); *as
 * is created on first use and reused (grown when needed) by later calls.
 * Fills the stage times of t summed over bands (the stages overlap, so their
 * sum may exceed the wall time). The result equals ic_cuda_run's sync path
 * sample for sample. When job->row0/row1 name a range (not both 0), only
 * output rows [row0, row1) are computed and only they are written to dst
 * (IC_ERR_INVALID_ARG for a range outside the image). */
ic_status ic_cuda_async_run(ic_cuda_async **as, size_t device_memory, const ic_cuda_args *a,
                            const ic_job *job, const ic_cuda_strategy *s, ic_timing *t, char *err,
                            size_t errlen);

/* Releases everything of a pipeline state (NULL-safe). The caller has set the
 * device the state was made on. */
void ic_cuda_async_free(ic_cuda_async *as);

/* Makes the pinned host buffer *p (cudaHostAlloc'd, *cap bytes) hold at
 * least n bytes: kept when it does, else freed and allocated anew (the
 * caller's copies from it are complete). */
ic_status ic_cuda_ensure_pinned(uint8_t **p, size_t *cap, size_t n, char *err, size_t errlen);

/* 1 when p points into page-locked memory the device can copy from directly. */
int ic_cuda_is_pinned(const void *p);

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_ASYNC_H */
