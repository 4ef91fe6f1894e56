/*
 * cpu.c - backend "cpu": the fast CPU fallback (what `auto` picks without a
 * GPU). It computes seed 004's convolution like `seq`, but on every core, with
 * SIMD inner loops and, when it is cheaper, through a separable / low-rank
 * factorisation of the kernel (K = sum_r col_r row_r^T, shared host code
 * ic_kernel_factor, as on the GPU).
 *
 * This file owns the backend entry, the context state (thread pool, per-worker
 * scratch, a cache of the last factorisation) and the plan of a job: which
 * instruction set (cpu_ops) and which path (direct or separable). The tasks
 * themselves are in cpu_band.c, the inner loops in cpu_rows.c / cpu_simd_*.c.
 *
 * Run-time dispatch (__builtin_cpu_supports): AVX-512F/BW when the CPU has it
 * (measured 5-25% faster than AVX2 on the 2-core Zen 4 dev machine, the 5x5
 * direct path most), else AVX2+FMA, else the portable loops (SSE2 baseline).
 * The tuning knobs (ic_tuning, read per job) can force any of them:
 *   method   IC_METHOD_DIRECT: always the direct kw*kh sum; IC_METHOD_SEP:
 *            the separable path whenever it is exact enough, whatever the cost
 *            (rank up to min(kw, kh)); see dyadic_weights() and
 *            FACTOR_MAX_REL_ERR; IC_METHOD_FFT: the FFT path (cpu_fft.c)
 *            whenever it can run the job, whatever its predicted error;
 *            other methods: the cost model's choice
 *   cpu_isa  scalar (the portable C loops), avx2 or avx512; one this CPU or
 *            build lacks fails the job (IC_ERR_UNSUPPORTED)
 *   cpu_tiny tiny strips, bands and passes, and the pool even for small
 *            images: every seam of cpu_band.c is crossed (tests only)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/kernel_internal.h"
#include "cpu/cpu_fft.h"
#include "cpu/cpu_blur.h"
#include "cpu/cpu_internal.h"
#include "exercises/linalg.h"

/* Cost model, per output sample, in units of one multiply-add of the direct
 * path on a kernel of at most DIRECT_SMALL taps. Fitted to single-thread times
 * on 1920x1080 RGB (bench/cpu_bench.c --cpu-time, AVX-512):
 *  - direct: kw*kh, times DIRECT_BIG beyond DIRECT_SMALL taps (the taps no
 *    longer stay in registers);
 *  - rank-r separable: r*(kw + kh) multiply-adds at SEP_MAC each (the
 *    temporary row is written and re-read, horizontal loads are unaligned),
 *    plus SEP_RANK for every accumulator pass of a rank after the first.
 * So 3x3 Gaussians stay direct (a tie in practice), 5x5 Gaussians and larger
 * separate, and rank-2 kernels (unsharp) separate from 7x7 on. */
#define DIRECT_SMALL 25
#define DIRECT_BIG 1.4
#define SEP_MAC 1.6
#define SEP_RANK 2.0
/* Below this many multiply-adds a job runs on the calling thread alone: waking
 * the pool costs more than it saves. */
#define SMALL_JOB_MACS (1 << 18)
#define MAX_THREADS 256
/* A factorisation is used only when it reproduces every weight this closely
 * (relative), with its sign and zeros kept: see plan_factors. */
#define FACTOR_MAX_REL_ERR 0x1p-20
/* Kernels of fewer taps never plan the FFT: its model never wins there, and
 * the tile search would cost small calls time. */
#define FFT_MIN_TAPS 100
/* The FFT is taken below this share of the other path's modelled cost only:
 * whole 12 MP runs on both cores measured a 31x31 kernel's FFT at 1.27x the
 * direct sum where the single-thread fit (core/fft_model.c) said 0.86x. */
#define FFT_MARGIN 0.65

enum { FORCE_AUTO = -1 };

typedef struct cpu_state {
    cpu_pool *pool;
    int nthreads;
    const cpu_ops *best; /* the best instruction set this CPU and build have */
    /* from the job's tuning (apply_tuning) */
    const cpu_ops *ops;
    int force_path; /* FORCE_AUTO, CPU_DIRECT, CPU_SEP or CPU_FFT */
    int tiny;       /* ic_tuning.cpu_tiny */
    cpu_scratch *scratch;
    /* the factorisation of the last kernel, reused while the weights repeat */
    float *cache_w;
    int cache_kw, cache_kh, cache_force, cache_cap, cache_valid;
    int cache_rank; /* 0: direct */
    float *cache_row, *cache_col;
    cpu_fft *fft; /* the FFT path's buffers and kernel spectrum, made on first use */
} cpu_state;

static void cpu_close(void *state)
{
    cpu_state *st = state;
    if (!st)
        return;
    ic_cpu_pool_free(st->pool);
    if (st->scratch)
        for (int i = 0; i < st->nthreads; i++)
            ic_cpu_scratch_free(&st->scratch[i]);
    free(st->scratch);
    free(st->cache_w);
    free(st->cache_row);
    free(st->cache_col);
    ic_cpu_fft_free(st->fft);
    free(st);
}

/* Applies the job's tuning (ic_tuning) to st: forced path, instruction set,
 * tiny tasks. Fails when the instruction set asked for is not here. */
static ic_status apply_tuning(cpu_state *st, const ic_job *job, char *err, size_t errlen)
{
    static const ic_tuning none;
    const ic_tuning *t = job->tuning ? job->tuning : &none;
    st->force_path = t->method == IC_METHOD_DIRECT ? CPU_DIRECT
                     : t->method == IC_METHOD_SEP  ? CPU_SEP
                     : t->method == IC_METHOD_FFT  ? CPU_FFT
                                                   : FORCE_AUTO;
    st->tiny = t->cpu_tiny != 0;
    const cpu_ops *ops = st->best;
    if (t->cpu_isa == IC_ISA_SCALAR)
        ops = &ic_cpu_ops_scalar;
    else if (t->cpu_isa == IC_ISA_AVX2)
        ops = ic_cpu_ops_avx2();
    else if (t->cpu_isa == IC_ISA_AVX512)
        ops = ic_cpu_ops_avx512();
    if (!ops) {
        snprintf(err, errlen, "cpu: this CPU or build has no %s", ic_cpu_isa_name(t->cpu_isa));
        return IC_ERR_UNSUPPORTED;
    }
    st->ops = ops;
    return IC_OK;
}

static ic_status cpu_open(void **state, const ic_context_options *opts, char *err, size_t errlen)
{
    *state = NULL;
    int n = opts ? opts->threads : 0;
    if (n < 0) {
        snprintf(err, errlen, "threads must be >= 0 (0: one per core)");
        return IC_ERR_INVALID_ARG;
    }
    if (n == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        n = cores > 0 ? (int)(cores < MAX_THREADS ? cores : MAX_THREADS) : 1;
    }
    if (n > MAX_THREADS)
        n = MAX_THREADS;
    cpu_state *st = calloc(1, sizeof *st);
    if (!st)
        return IC_ERR_NOMEM;
    st->force_path = FORCE_AUTO;
    st->best = ic_cpu_ops_avx512();
    if (!st->best)
        st->best = ic_cpu_ops_avx2();
    if (!st->best)
        st->best = &ic_cpu_ops_scalar;
    st->ops = st->best;
    st->nthreads = n;
    st->scratch = calloc((size_t)n, sizeof *st->scratch);
    if (!st->scratch) {
        cpu_close(st);
        return IC_ERR_NOMEM;
    }
    ic_status s = ic_cpu_pool_create(&st->pool, n);
    if (s != IC_OK) {
        snprintf(err, errlen, "cannot start %d worker threads", n);
        cpu_close(st);
        return s;
    }
    *state = st;
    return IC_OK;
}

static double direct_cost(int kw, int kh)
{
    return (double)kw * kh * (kw * kh > DIRECT_SMALL ? DIRECT_BIG : 1.0);
}

static double sep_cost(int kw, int kh, int rank)
{
    return rank * SEP_MAC * (kw + kh) + (rank - 1) * SEP_RANK;
}

/* Largest rank whose separable cost is below the direct cost and `other`,
 * another path's (0: none). */
static int sep_max_rank(int kw, int kh, double other)
{
    const double below = direct_cost(kw, kh) < other ? direct_cost(kw, kh) : other;
    int r = 0;
    while (r < (kw < kh ? kw : kh) && sep_cost(kw, kh, r + 1) < below)
        r++;
    return r;
}

/* An exactly rank-1 kernel (in float32) gets the factors col = K[:, i0] / m
 * (integers for Sobel, binomial, box...) and row = K[j1, :], where m = K[j1, i0]
 * is the smallest nonzero entry of the column of the largest entry. Then every
 * product col[j]*row[i] reproduces K exactly and, for integer-like weights,
 * every partial sum is exact too: the separable result is bit-identical to the
 * exact one, including the exact .5 ties of dyadic kernels (e.g. /16), which an
 * SVD's irrational sqrt(sigma) scaling would break at random. Returns 1 when it
 * fits. */
static int exact_rank1(const float *w, int kw, int kh, float *row, float *col)
{
    int best = 0;
    for (int t = 1; t < kw * kh; t++)
        if (fabsf(w[t]) > fabsf(w[best]))
            best = t;
    if (w[best] == 0.0f)
        return 0;
    int i0 = best % kw, j1 = -1;
    for (int j = 0; j < kh; j++) {
        float a = fabsf(w[j * kw + i0]);
        if (a != 0.0f && (j1 < 0 || a < fabsf(w[j1 * kw + i0])))
            j1 = j;
    }
    const float m = w[j1 * kw + i0];
    for (int j = 0; j < kh; j++)
        col[j] = w[j * kw + i0] / m;
    for (int i = 0; i < kw; i++)
        row[i] = w[j1 * kw + i];
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            float p = col[j] * row[i];
            if (p != w[j * kw + i] || !isfinite(p))
                return 0;
        }
    return 1;
}

/* Multiply-adds per output sample of a plan. */
static double path_macs(const cpu_plan *plan)
{
    const ic_job *job = plan->job;
    if (plan->path == CPU_SEP)
        return (double)plan->rank * (job->kw + job->kh);
    return (double)job->kw * job->kh;
}

/* Largest relative error of the weights that rank-r factors reproduce,
 * max |w' - w| / |w| over the taps; infinity when a weight changes sign or a
 * zero weight becomes nonzero. */
static double factor_rel_err(const float *w, int kw, int kh, const float *row, const float *col,
                             int rank)
{
    double worst = 0.0;
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            double v = 0.0, t = w[j * kw + i];
            for (int r = 0; r < rank; r++)
                v += (double)col[r * kh + j] * (double)row[r * kw + i];
            if (v == t)
                continue;
            if (t == 0.0 || (v > 0.0) != (t > 0.0))
                return INFINITY;
            double e = fabs(v - t) / fabs(t);
            worst = e > worst ? e : worst;
        }
    return worst;
}

/* Decides direct or separable for the job's weights (cached per kernel and
 * rank cap); ranks whose passes cost `other` (the FFT's cost) or more are
 * not looked for, so a kernel the FFT takes is never factored. */
static ic_status plan_factors(cpu_state *st, const ic_job *job, double other, char *err,
                              size_t errlen)
{
    const int kw = job->kw, kh = job->kh;
    const size_t nw = (size_t)kw * (size_t)kh;
    int cap = st->force_path == CPU_SEP ? (kw < kh ? kw : kh) : sep_max_rank(kw, kh, other);
    if (st->cache_valid && st->cache_kw == kw && st->cache_kh == kh &&
        st->cache_force == st->force_path && st->cache_cap == cap &&
        memcmp(st->cache_w, job->w, nw * sizeof(float)) == 0)
        return IC_OK;
    st->cache_valid = 0;
    free(st->cache_w);
    free(st->cache_row);
    free(st->cache_col);
    st->cache_row = st->cache_col = NULL;
    st->cache_rank = 0;
    st->cache_w = malloc(nw * sizeof(float));
    if (!st->cache_w)
        return IC_ERR_NOMEM;
    memcpy(st->cache_w, job->w, nw * sizeof(float));
    st->cache_kw = kw;
    st->cache_kh = kh;
    st->cache_force = st->force_path;
    st->cache_cap = cap;

    if (st->force_path != CPU_DIRECT && st->force_path != CPU_FFT && cap >= 1 && job->wk) {
        st->cache_row = malloc((size_t)kw * sizeof(float));
        st->cache_col = malloc((size_t)kh * sizeof(float));
        if (!st->cache_row || !st->cache_col)
            return IC_ERR_NOMEM;
        if (exact_rank1(job->w, kw, kh, st->cache_row, st->cache_col)) {
            st->cache_rank = 1;
        } else if (!ic__weights_dyadic(job->w, (size_t)kw * kh, 65536.0f)) {
            /* weights that are multiples of 2^-16 land on .5 often: the direct
             * sum and exact_rank1's factors are exact there, an SVD's are not,
             * so such kernels never take an inexact factorisation */
            ic_factors f;
            ic_status s = ic_kernel_factor(job->wk, 0.0, cap, &f);
            if (s != IC_OK) {
                snprintf(err, errlen, "factoring the kernel failed: %s", ic_status_str(s));
                return s;
            }
            if (f.rank > 0) {
                free(st->cache_row);
                free(st->cache_col);
                st->cache_row = f.row; /* ownership moves to the cache */
                st->cache_col = f.col;
                st->cache_rank = f.rank;
            } else {
                ic_factors_free(&f);
            }
        }
    }
    /* Premultiplied alpha divides by the filtered alpha, which amplifies the
     * error of the weights where it is small: factors that turn a zero weight
     * nonzero, or are off by more than float rounding, would turn transparent
     * neighbourhoods into noise (the named Gaussians and unsharp masks
     * reproduce every weight within 2e-7). Independent jobs follow the same
     * rule, so that a premultiplied job's alpha channel is computed exactly as
     * the independent job's (bit-identical alpha, tests/test_alpha.c). */
    if (st->cache_rank > 0 && factor_rel_err(job->w, kw, kh, st->cache_row, st->cache_col,
                                             st->cache_rank) > FACTOR_MAX_REL_ERR)
        st->cache_rank = 0;
    st->cache_valid = 1;
    return IC_OK;
}

/* Checks what run() relies on; dst may be NULL (explain). */
static int job_ok(const ic_job *job)
{
    const ic_image *s = job->src, *d = job->dst;
    const int max = job->w ? IC_MAX_KERNEL : IC_MAX_BLUR; /* no weights: a blur by its shape */
    if (!s || !s->data || (!job->w && !(job->wk && job->wk->blur)) || job->kw < 1 || job->kh < 1 ||
        job->kw % 2 == 0 || job->kh % 2 == 0 || job->kw > max || job->kh > max)
        return 0;
    if (s->width < 1 || s->height < 1 || s->width > IC_MAX_DIM || s->height > IC_MAX_DIM ||
        s->channels < 1 || s->channels > 4 ||
        (s->type != IC_U8 && s->type != IC_U16 && s->type != IC_F32) ||
        (s->layout != IC_AOS && s->layout != IC_SOA))
        return 0;
    if (job->premultiply && s->channels != 2 && s->channels != 4)
        return 0;
    size_t row = ic_image_row_bytes(s);
    if (s->pitch < row)
        return 0;
    if (!d)
        return 1;
    return d->data && d->type == s->type && d->width == s->width && d->height == s->height &&
           d->channels == s->channels && d->layout == s->layout && d->pitch >= row;
}

/* The FFT path's modelled cost when it may take the job, 0 when it is forced
 * and can run it, else INFINITY. It can run a job with KissFFT built in, no
 * premultiplied alpha and weights that are not all multiples of 2^-16, whose
 * exact ties its rounding would move (the cuda fast path's rule); it may take
 * it when its predicted error is within the accuracy rule's limit
 * (core/fft_model.c). Fills plan->fft and fft_err (-1: not a candidate). */
static double plan_fft(const cpu_state *st, const ic_job *job, cpu_plan *plan)
{
    const int kw = job->kw, kh = job->kh;
    const ic_image *src = job->src;
    const int forced = st->force_path == CPU_FFT;
    plan->fft_err = -1;
    if (!ic_cpu_fft_built || job->premultiply || st->force_path == CPU_DIRECT ||
        st->force_path == CPU_SEP || (!forced && kw * kh < FFT_MIN_TAPS) ||
        ic__weights_dyadic(job->w, (size_t)kw * kh, 65536.0f))
        return INFINITY;
    const int planes = src->channels;
    ic__fft_geom(src->width, src->height, kw, kh, planes, st->nthreads, &plan->fft);
    const int u16 = src->type == IC_U16;
    plan->fft_err = ic__fft_error(job->w, kw, kh, plan->fft.nx, plan->fft.ny,
                                  u16 ? 32768.0f : 128.0f, job->border_value);
    if (forced)
        return 0;
    return plan->fft_err <= ic__fft_error_limit(u16) ? plan->fft.cost : INFINITY;
}

/* 1 when the job goes to the sliding blur (cpu_blur.c) rather than the bands. */
static int blur_job(cpu_state *st, const ic_job *job, char *err, size_t errlen, ic_status *s)
{
    *s = IC_OK;
    if (!job->wk || !job->wk->blur)
        return 0;
    if (!job_ok(job)) {
        snprintf(err, errlen, "cpu: invalid job");
        *s = IC_ERR_INVALID_ARG;
        return 1;
    }
    if ((*s = apply_tuning(st, job, err, errlen)) != IC_OK)
        return 1;
    if (job->src->type == IC_F32) { /* the sliding sums are written for 8 and 16 bits */
        if (job->w)
            return 0;
        snprintf(err, errlen, "cpu: float32 samples take blurs up to %dx%d", IC_MAX_KERNEL,
                 IC_MAX_KERNEL);
        *s = IC_ERR_UNSUPPORTED;
        return 1;
    }
    return ic_cpu_blur_wanted(job, st->force_path != FORCE_AUTO);
}

/* Plans a job: path, rank, task geometry and the number of workers. */
static ic_status make_plan(cpu_state *st, const ic_job *job, cpu_plan *plan, int *workers,
                           char *err, size_t errlen)
{
    if (!job_ok(job)) {
        snprintf(err, errlen, "cpu: invalid job");
        return IC_ERR_INVALID_ARG;
    }
    ic_status s = apply_tuning(st, job, err, errlen);
    if (s != IC_OK)
        return s;
    memset(plan, 0, sizeof *plan);
    const double fft_cost = plan_fft(st, job, plan);
    if ((s = plan_factors(st, job, fft_cost / FFT_MARGIN, err, errlen)) != IC_OK)
        return s;
    plan->job = job;
    plan->ops = st->ops;
    /* float32 outputs keep every rounding error within a few ulps of
     * sum |w*x| (docs/definitions.md, "Float samples"); the terms of a rank >= 2
     * factorisation may cancel and break that bound, so they go direct */
    const int sep_ok = st->cache_rank == 1 || (st->cache_rank > 1 && job->src->type != IC_F32);
    plan->path = sep_ok ? CPU_SEP : CPU_DIRECT;
    plan->rank = sep_ok ? st->cache_rank : 0;
    plan->frow = st->cache_row;
    plan->fcol = st->cache_col;
    plan->premul = job->premultiply;
    plan->planes = job->src->layout == IC_SOA && !plan->premul ? job->src->channels : 1;
    plan->step = job->src->layout == IC_SOA && !plan->premul ? 1 : job->src->channels;
    plan->scratch = st->scratch;
    plan->tiny = st->tiny;
    plan->best_cost = plan->path == CPU_SEP ? sep_cost(job->kw, job->kh, plan->rank)
                                            : direct_cost(job->kw, job->kh);
    if (fft_cost < FFT_MARGIN * plan->best_cost) {
        plan->path = CPU_FFT;
        plan->best_cost = plan->fft.cost;
        *workers = st->nthreads < plan->fft.tasks ? st->nthreads : plan->fft.tasks;
        return IC_OK;
    }
    double macs = path_macs(plan) * job->src->width * (double)job->src->height * job->src->channels;
    int n = macs < SMALL_JOB_MACS && !st->tiny ? 1 : st->nthreads;
    ic_cpu_plan_tasks(plan, n);
    int ntasks = ic_cpu_plan_ntasks(plan);
    *workers = n < ntasks ? n : ntasks;
    return IC_OK;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static ic_status cpu_run(void *state, const ic_job *job, ic_timing *t, char *err, size_t errlen)
{
    cpu_state *st = state;
    double t0 = now_ms();
    if (!st || !job || !job->dst) {
        snprintf(err, errlen, "cpu: invalid job");
        return IC_ERR_INVALID_ARG;
    }
    cpu_plan plan;
    int workers;
    ic_status s;
    if (blur_job(st, job, err, errlen, &s)) {
        if (s == IC_OK)
            s = ic_cpu_blur_run(st->pool, st->nthreads, st->ops != &ic_cpu_ops_scalar, job, err,
                                errlen);
        t->upload_ms = 0;
        t->download_ms = 0;
        t->kernel_ms = now_ms() - t0;
        return s;
    }
    if (s != IC_OK)
        return s;
    s = make_plan(st, job, &plan, &workers, err, errlen);
    if (s != IC_OK)
        return s;
    for (int i = 0; i < workers && plan.path != CPU_FFT; i++) {
        s = ic_cpu_scratch_reserve(&st->scratch[i], &plan);
        if (s != IC_OK) {
            snprintf(err, errlen, "cpu: cannot allocate row buffers");
            return s;
        }
    }
    if (plan.path == CPU_FFT) {
        if (!st->fft && (s = ic_cpu_fft_create(&st->fft, st->nthreads)) != IC_OK) {
            snprintf(err, errlen, "cpu: cannot allocate the FFT state");
            return s;
        }
        s = ic_cpu_fft_run(st->fft, job, &plan.fft, st->pool, workers, err, errlen);
        if (s != IC_OK)
            return s;
    } else {
        ic_cpu_pool_run(st->pool, ic_cpu_run_task, &plan, ic_cpu_plan_ntasks(&plan), workers);
    }
    t->upload_ms = 0;
    t->download_ms = 0;
    t->kernel_ms = now_ms() - t0;
    return IC_OK;
}

static ic_status cpu_explain(void *state, const ic_job *job, char *buf, size_t buflen)
{
    cpu_state *st = state;
    char err[160] = "";
    cpu_plan plan;
    int workers;
    if (!st || !job || !buf || buflen == 0)
        return IC_ERR_INVALID_ARG;
    ic_status s;
    if (blur_job(st, job, err, sizeof err, &s) && s == IC_OK) {
        int tx, ty;
        if (ic_cpu_blur_terms(job, &tx, &ty))
            snprintf(buf, buflen,
                     "cpu: %s, %dx%d gaussian as sliding sums of %d and %d cosine terms "
                     "(constant time per pixel, docs/design/blur.md), %d threads",
                     st->ops != &ic_cpu_ops_scalar ? "avx2" : "scalar", job->kw, job->kh, tx + 1,
                     ty + 1, st->nthreads);
        else
            snprintf(buf, buflen, "cpu: %dx%d box as running sums (exact), %d threads", job->kw,
                     job->kh, st->nthreads);
        return IC_OK;
    }
    if (s == IC_OK)
        s = make_plan(st, job, &plan, &workers, err, sizeof err);
    if (s != IC_OK) {
        snprintf(buf, buflen, "%s", err);
        return s;
    }
    double direct = (double)job->kw * job->kh;
    char fft[200] = "";
    if (plan.fft_err >= 0 && plan.path != CPU_FFT)
        snprintf(fft, sizeof fft,
                 "; fft not taken (model %.0f units a sample against %.0f, taken under %.2fx; "
                 "predicted error %.1e "
                 "levels, limit %.1e)",
                 plan.fft.cost, plan.best_cost, FFT_MARGIN, plan.fft_err,
                 ic__fft_error_limit(job->src->type == IC_U16));
    if (plan.path == CPU_FFT)
        snprintf(buf, buflen,
                 "cpu: fft (KissFFT, float32) %dx%d, overlap-save tiles of %dx%d (%dx%d valid), "
                 "%d tiles x %d planes on %d of %d threads; model %.0f units a sample against "
                 "%.0f direct; predicted error %.1e levels (limit %.1e)%s",
                 job->kw, job->kh, plan.fft.nx, plan.fft.ny, plan.fft.vx, plan.fft.vy,
                 plan.fft.tx * plan.fft.ty, job->src->channels, workers, st->nthreads,
                 plan.fft.cost, direct_cost(job->kw, job->kh), plan.fft_err,
                 ic__fft_error_limit(job->src->type == IC_U16),
                 st->force_path == CPU_FFT ? " (forced)" : "");
    else if (plan.path == CPU_SEP)
        snprintf(
            buf, buflen,
            "cpu: %s loops, separable rank %d (%.0f multiply-adds per sample instead of %.0f), "
            "%d of %d threads, %d tasks (%d bands of %d rows x %d strips of %d px x %d planes)%s",
            plan.ops->name, plan.rank, path_macs(&plan), direct, workers, st->nthreads,
            ic_cpu_plan_ntasks(&plan), plan.nbands, plan.band_rows, plan.nstrips, plan.strip_px,
            plan.planes, fft);
    else
        snprintf(buf, buflen,
                 "cpu: %s loops, direct %dx%d (%.0f multiply-adds per sample), %d of %d threads, "
                 "%d tasks (%d bands of %d rows x %d strips of %d px x %d planes)%s",
                 plan.ops->name, job->kw, job->kh, direct, workers, st->nthreads,
                 ic_cpu_plan_ntasks(&plan), plan.nbands, plan.band_rows, plan.nstrips,
                 plan.strip_px, plan.planes, fft);
    return IC_OK;
}

static ic_status cpu_plan_hook(void *state, const ic_job *job, ic_plan *out, char *err,
                               size_t errlen)
{
    cpu_state *st = state;
    cpu_plan plan;
    int workers;
    if (!st || !job || !out)
        return IC_ERR_INVALID_ARG;
    ic_status s;
    if (blur_job(st, job, err, errlen, &s)) {
        if (s != IC_OK)
            return s;
        out->method = IC_METHOD_SEP; /* two 1D passes, by sliding sums */
        out->rank = out->kernel_rank = 1;
        out->premultiply = job->premultiply;
        out->isa = st->ops != &ic_cpu_ops_scalar ? IC_ISA_AVX2 : IC_ISA_SCALAR;
        out->workers = st->nthreads;
        return IC_OK;
    }
    if (s == IC_OK)
        s = make_plan(st, job, &plan, &workers, err, errlen);
    if (s != IC_OK)
        return s;
    out->method = plan.path == CPU_FFT   ? IC_METHOD_FFT
                  : plan.path == CPU_SEP ? IC_METHOD_SEP
                                         : IC_METHOD_DIRECT;
    out->forced = st->force_path == plan.path;
    if (plan.path == CPU_FFT) {
        /* the tile's width and its valid width (cpu tiles need not be square) */
        out->fft_n = plan.fft.nx;
        out->fft_valid = plan.fft.vx;
        out->fft_tiles = plan.fft.tx * plan.fft.ty;
    }
    out->rank = plan.rank;
    out->kernel_rank = plan.rank;
    out->premultiply = plan.premul;
    out->isa = plan.ops == &ic_cpu_ops_scalar  ? IC_ISA_SCALAR
               : plan.ops == ic_cpu_ops_avx2() ? IC_ISA_AVX2
                                               : IC_ISA_AVX512;
    out->workers = workers;
    return IC_OK;
}

static int cpu_probe(char *why, size_t whylen)
{
    (void)why;
    (void)whylen;
    return 1;
}

const ic_backend ic_backend_cpu = {
    .name = "cpu",
    .summary = "all cores, row bands through float ring buffers, AVX2/FMA when present, "
               "separable/low-rank path when cheaper"
#ifdef IC_HAVE_KISSFFT
               ", FFT (KissFFT) for large kernels"
#endif
    ,
    .is_gpu = 0,
    .rank = 10,
    .probe = cpu_probe,
    .open = cpu_open,
    .close = cpu_close,
    .run = cpu_run,
    .explain = cpu_explain,
    /* premultiply, U16 and F32 in the band pipeline (cpu_band.c); blurs by
     * their shape in cpu_blur.c */
    .caps = IC_CAP_PREMULTIPLY | IC_CAP_U16 | IC_CAP_F32 | IC_CAP_BLUR,
    /* seeds 001 and 002 on the CPU (src/exercises/conv1d.c, matmul.c) */
    .conv1d = ic__conv1d_cpu,
    .matmul_variants = ic__matmul_cpu_variants,
    .matmul = ic__matmul_cpu,
    .plan = cpu_plan_hook,
};
