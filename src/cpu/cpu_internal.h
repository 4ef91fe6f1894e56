/*
 * cpu_internal.h - the pieces of the fast CPU backend `cpu` (internal).
 *
 * The backend computes the correlation of an ic_job (src/dispatch/backend.h) the
 * way seed 004's sequential loop does, reorganised for a cache and for SIMD:
 *
 *  - the image is cut into tasks (plane x row band x column strip); a pool of
 *    persistent threads (cpu_pool.c) runs them;
 *  - a task converts each input row it needs ONCE from uint8 (or uint16; float32
 *    is copied) to float into a
 *    ring of kh padded rows (horizontal border applied while converting,
 *    vertical border by choosing which source row fills a ring slot);
 *  - every output row is then a weighted sum of the kh ring rows, vectorised
 *    across x. In AoS the row is w*c interleaved samples and a horizontal tap
 *    steps by c samples; in SoA each plane is a 1-channel image;
 *  - "direct" sums all kw*kh taps; "sep" uses a rank-r factorisation
 *    K = sum_r col_r row_r^T: a vertical pass into a temporary row, then a
 *    horizontal pass, 2*r*(kw+kh)-ish multiply-adds instead of kw*kh.
 *
 * The inner loops exist once per instruction set behind the cpu_ops table:
 * cpu_rows.c (portable C, the SSE2 baseline), cpu_simd_avx2.c (AVX2+FMA) and
 * cpu_simd_avx512.c (AVX-512F/BW), the latter two sharing one body,
 * cpu_simd_body.h. The ISA is picked at run time (__builtin_cpu_supports).
 */
#ifndef IC_CPU_INTERNAL_H
#define IC_CPU_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "cpu/cpu_fft.h"
#include "dispatch/backend.h"

/* Every float row handed to the inner loops stays readable (and finite) for
 * CPU_SLACK floats past its logical end, so vector loops may run over it. */
#define CPU_SLACK 64
/* Rows are allocated on this alignment (bytes). */
#define CPU_ALIGN 64
/* Vector accumulators per iteration of the SIMD loops (cpu_simd_body.h). */
#define CPU_NACC 8

/* Inner loops for one instruction set. n counts samples (floats or output
 * samples). Outputs are samples of `type` (an ic_sample_type: uint8, uint16,
 * or float32 stored unrounded and unclamped): the caller picks the type once
 * per row (never per sample), and the loops keep one instance per type so that
 * the uint8 path is the same code as before. */
typedef struct cpu_ops {
    const char *name; /* "scalar", "avx2", "avx512" */
    /* dst[k] = (float)src[k] for k < n. */
    void (*widen)(const uint8_t *src, float *dst, int n);
    /* The same for uint16 samples. */
    void (*widen16)(const uint16_t *src, float *dst, int n);
    /* out[s] = round(bias + sum_{j<kh} sum_{i<kw} w[j*kw+i] * rows[j][s + i*step])
     * (round: to uint8 or uint16 by type; float32 stores the sum); when out1 is non-NULL, rows
     * has kh+1 entries and out1 gets the same sum over rows[1..kh] (the next
     * output row). With premul nonzero (step = channels, 2 or 4, alpha last)
     * each pixel's sums FC (colour) and FA (alpha) are un-premultiplied
     * before the bias and rounding: colour = FA > 0 ? FC / FA : 0, alpha = FA. */
    void (*direct)(const float *const *rows, const float *w, int kw, int kh, int step, float bias,
                   int premul, int type, void *out, void *out1, int n);
    /* t[s] = sum_{j<kh} col[j] * rows[j][s]. */
    void (*vpass)(const float *const *rows, const float *col, int kh, float *t, int n);
    /* sum = (acc_in ? acc_in[s] : 0) + sum_{i<kw} row[i] * t[s + i*step]; then
     * out[s] = round(sum + bias) when out is non-NULL (un-premultiplied
     * first when premul, as in direct; of type as in direct), else acc_out[s] = sum. */
    void (*hpass)(const float *t, const float *row, int kw, int step, const float *acc_in,
                  float *acc_out, float bias, int premul, int type, void *out, int n);
    /* Premultiplied alpha on pixels of ch = 2 or 4 interleaved floats, alpha
     * last, n samples (a multiple of ch): row[colour] *= row[alpha] in place. */
    void (*premul)(float *row, int ch, int n);
} cpu_ops;

extern const cpu_ops ic_cpu_ops_scalar;
/* NULL when this build has no such code (not x86, or compiler without it). */
const cpu_ops *ic_cpu_ops_avx2(void);
const cpu_ops *ic_cpu_ops_avx512(void);

/* ---- thread pool (cpu_pool.c) --------------------------------------------- */

/* Runs task `task` on worker `worker` (0 = the calling thread). */
typedef void (*cpu_task_fn)(void *arg, int task, int worker);

typedef struct cpu_pool cpu_pool;

/* Creates a pool of `nthreads` workers in all: the caller of cpu_pool_run plus
 * nthreads-1 persistent pthreads, which sleep between runs.
 * Errors: IC_ERR_INVALID_ARG, IC_ERR_NOMEM (allocation or pthread_create). */
ic_status ic_cpu_pool_create(cpu_pool **pool, int nthreads);

/* Stops and joins the threads, frees the pool (NULL-safe). */
void ic_cpu_pool_free(cpu_pool *pool);

/* Runs fn for every task in [0, ntasks) on at most `workers` workers (the caller
 * included) and returns when all are done. Tasks are handed out in order, one
 * at a time, to whichever worker is free. */
void ic_cpu_pool_run(cpu_pool *pool, cpu_task_fn fn, void *arg, int ntasks, int workers);

/* ---- one job, cut into tasks (cpu_band.c) --------------------------------- */

enum { CPU_DIRECT = 0, CPU_SEP = 1, CPU_FFT = 2 };

/* Per-worker scratch, grown (never shrunk) by ic_cpu_scratch_reserve. */
typedef struct cpu_scratch {
    float *ring;        /* kh+1 rows of `pitch` floats */
    float *tmp;         /* vertical-pass row (sep) */
    float *acc;         /* rank accumulator row (sep, rank > 1) */
    uint8_t *bytes;     /* premultiply, SoA: two interleaved output rows (of samples) */
    const float **rows; /* 2*(kh+1) row pointers */
    int *tag;           /* kh+1: virtual row held by each ring slot; then kw-1: mapped
                        * x of each padding pixel of the strip */
    size_t cap_ring, cap_tmp, cap_acc, cap_rows, cap_tag, cap_bytes; /* capacities in elements */
} cpu_scratch;

/* A job as the tasks see it. */
typedef struct cpu_plan {
    const ic_job *job;
    const cpu_ops *ops;
    int path;          /* CPU_DIRECT, CPU_SEP or CPU_FFT (cpu_fft.c; no band tasks) */
    int rank;          /* sep: number of terms */
    const float *frow; /* sep: rank*kw row vectors */
    const float *fcol; /* sep: rank*kh column vectors */
    int planes;        /* SoA: channels; AoS: 1 (and premultiply) */
    int step;          /* samples per pixel in a row: channels (AoS, premultiply) or 1 */
    /* Premultiplied alpha (job->premultiply): every task filters all channels
     * of its pixels, interleaved in the float rows whatever the layout (an
     * SoA image is gathered on load and scattered on store); colour is
     * multiplied by alpha when a row is converted, and the inner loops
     * un-premultiply the sums in registers before rounding. */
    int premul;
    int strip_px; /* pixels per column strip */
    int nstrips, band_rows, nbands;
    int chunk;            /* sep: samples per vertical/horizontal pass */
    int tiny;             /* test mode: tiny strips, bands and chunks (seams everywhere) */
    cpu_scratch *scratch; /* one per worker */
    cpu_fft_geom fft;     /* CPU_FFT: tiles; cost and fft_err also when it lost */
    double fft_err;       /* predicted rounding error in levels (-1: not a candidate) */
    double best_cost;     /* modelled cost a sample of the path taken */
} cpu_plan;

/* Sizes the tasks of a plan (strip_px, nstrips, band_rows, nbands, chunk) for
 * `workers` workers; plan->job, ops, path, planes and step must be set. */
void ic_cpu_plan_tasks(cpu_plan *plan, int workers);

/* Number of tasks of a planned job. */
int ic_cpu_plan_ntasks(const cpu_plan *plan);

/* Makes s large enough for any task of plan. Errors: IC_ERR_NOMEM, IC_ERR_TOO_LARGE. */
ic_status ic_cpu_scratch_reserve(cpu_scratch *s, const cpu_plan *plan);

/* Frees the buffers of s and zeroes it. */
void ic_cpu_scratch_free(cpu_scratch *s);

/* Runs one task of a plan (a cpu_task_fn; arg is the cpu_plan). */
void ic_cpu_run_task(void *arg, int task, int worker);

#endif /* IC_CPU_INTERNAL_H */
