/*
 * cpu_fft.h - the `cpu` backend's FFT path (internal): correlation of large
 * full-rank kernels through KissFFT, overlap-save tiles of nx x ny samples.
 *
 * core/fft_model.c holds what the planner reads (tile shape, cost, predicted
 * rounding error; pure C, built with or without KissFFT), cpu_fft.c the
 * transforms (a stub answering IC_ERR_UNSUPPORTED without KissFFT).
 * docs/backends.md#the-fft-path-on-the-cpu says how and why.
 */
#ifndef IC_CPU_FFT_H
#define IC_CPU_FFT_H

#include <stddef.h>

#include "core/fft_model.h"
#include "dispatch/backend.h"

/* 1 when this build carries KissFFT (IC_HAVE_KISSFFT), else 0. */
extern const int ic_cpu_fft_built;

/* The geometry, cost and error model: core/fft_model.h. */
typedef ic_fft_geom cpu_fft_geom;

struct cpu_pool;

/* Per-context FFT state: the kernel's spectrum for the last (weights, tile)
 * and every worker's buffers and transform plans, kept between calls. */
typedef struct cpu_fft cpu_fft;

/* Creates the state for up to nthreads workers. Errors: IC_ERR_NOMEM,
 * IC_ERR_UNSUPPORTED (no KissFFT in this build). */
ic_status ic_cpu_fft_create(cpu_fft **f, int nthreads);

/* Frees it (NULL-safe). */
void ic_cpu_fft_free(cpu_fft *f);

/* Runs job (not premultiplied; dst set) through geometry g on `workers`
 * workers of pool. On failure one line in err. */
ic_status ic_cpu_fft_run(cpu_fft *f, const ic_job *job, const cpu_fft_geom *g,
                         struct cpu_pool *pool, int workers, char *err, size_t errlen);

#endif /* IC_CPU_FFT_H */
