/*
 * cpu_blur.h - the `cpu` backend's constant-time gaussian and box blurs
 * (cpu_blur.c); internal.
 */
#ifndef IC_CPU_BLUR_H
#define IC_CPU_BLUR_H

#include "cpu/cpu_internal.h"

/* Below these kw + kh the separable FIR costs no more than 1.2x the sliding
 * sums (measured on AVX2, 1920x1080 RGB, one thread: gaussian 55 taps 1.05x,
 * 61 taps 1.2-1.5x; box 31 about 1.1x), so blurs that have weights keep it. */
#define CPU_BLUR_GAUSS_TAPS 120
#define CPU_BLUR_BOX_TAPS 64

/* 1 when the job is a blur the sliding path should run: always when it has
 * no weights (past IC_MAX_KERNEL), else when cheaper and no FIR is forced. */
int ic_cpu_blur_wanted(const ic_job *job, int forced_fir);

/* Runs a blur job (job->wk->blur) on the pool's workers; isa_avx selects
 * the AVX2+FMA loops. Errors: IC_ERR_NOMEM, with one line in err. */
ic_status ic_cpu_blur_run(cpu_pool *pool, int nthreads, int isa_avx, const ic_job *job, char *err,
                          size_t errlen);

/* The cosine terms the horizontal and vertical passes of a gaussian job use
 * (0 for a box); 0 when none. */
int ic_cpu_blur_terms(const ic_job *job, int *tx, int *ty);

/* For tests: the sums that start a line of n samples e (outside a constant
 * border: v) extended by `border`, as the blur takes them from the window
 * folded onto the line: s[0] = sum e(t) and z[2k] + j z[2k+1] =
 * sum e^{j w[k] t} e(t) over t = -r..r; then s[x] for x < n slid from s[0]
 * through the rows each step drops and takes. 0 when out of memory. */
int ic__cpu_blur_fold_sums(const double *e, int n, int r, int nw, const double *w, int border,
                           double v, double *s, double *z);

#endif
