/*
 * plan.cu - backend "cuda", the fast path: a planner that picks, per job, the
 * cheapest of six methods by a roofline cost model, and the backend around
 * it (running, explaining, batches).
 *
 *   direct  (direct.cu)   K^2 multiply-adds per sample, shared-memory tile;
 *   sep     (sep.cu)      rank r = ic_kernel_factor(): r*(K*(th+K-1)/th + K);
 *   fft     (fft.cu)      overlap-save cuFFT tiles: cost independent of K;
 *   rows    (rows.cu)     square kernels up to 9x9 in registers, no shared
 *                         memory, separable where that is cheaper;
 *   tensor  (tensor.cu)   the direct sum as fp16 matrix products on the tensor
 *                         cores; a rank-1 kernel as two passes (tensor_sep.cu);
 *   global  (cuda_common.cuh) one thread per sample, for kernels none of the
 *                         others takes;
 *   blur    (blur.cu)     gaussian and box kernels of any size as float64
 *                         prefix sums, constant time per sample: every blur
 *                         past IC_MAX_KERNEL (shape only), and auto's choice
 *                         from IC_FAST_BLUR_MIN_SIDE taps a side (fast.h).
 *
 * Planning is three steps: a predictor per method (predict_*), the choice
 * between them (ic_fast_choose, plan_choose.c: every tie and margin rule)
 * and the fill of the chosen plan (fill_plan).
 *
 * Cost model. Ceilings are measured once per device, driver and imgconv
 * version and kept in the user's cache directory (core/calib_cache.h; the
 * first plan of a process reads them from there, so start-up does not pay
 * the probes; ic_context_options.recalibrate / `--recalibrate` measure again):
 * copy = bytes read + written by a 256 MiB device-to-device cudaMemcpy (best of
 * 3), fma = multiply-adds per second of a register-resident FMA loop kernel
 * (8 independent chains per thread, 4 blocks of 256 threads per SM). Then
 *   direct: t = L + max(io / copy, (K^2 + o_d) * samples / (e_d * fma))
 *   sep:    t = L + max(io / copy, (r*(K*(th+K-1)/th + K) + o_s) * samples / (e_s * fma))
 *   fft:    t = 5 L * batches + f_b * tiles * N^2 / copy
 *   rows:   t = L + 1.25 max(io / copy, multiply-adds / fma)
 *   tensor: t = L + max(io / copy, (mma / TC_RATIO + fixed + fill) * samples / fma)
 * io = input + output bytes; o_d, o_s = instructions per output sample besides
 * the FMAs that share their issue slots (fill, conversion, window loads,
 * rounding, stores: counted from the code); e_d, e_s = fraction of the FMA
 * peak the unrolled loops reach; f_b = device-memory bytes per tile element
 * across build, R2C, multiply, C2R and extract; L = launch cost. The tile
 * methods' times are divided by their shape's occupancy and last-wave fill
 * (tile_shape). The constants are fitted to benchmark runs
 * (docs/design/planner.md#model-constants).
 *
 * Premultiplied alpha (ic_job.premultiply): direct and sep take it with every
 * channel in one block (the colour needs the alpha of its pixels), rows on
 * RGBA and grey + alpha AoS, global always; FFT and tensor do not, so such
 * jobs never plan them.
 *
 * 16-bit samples (IC_U16): direct, sep and global take them through a
 * run-time branch in their shared loads and stores (tile.cuh, cuda_common.cuh),
 * not through a second set of instantiations. Three methods are planned out
 * (a forced one takes the planner's choice, as for any job it cannot run;
 * --explain says so):
 *   rows: its kernels are built around 16-byte loads of 16 uint8 samples per
 *     step and packed byte stores; a uint16 variant would be a second copy of
 *     every kernel;
 *   tensor: fp16 holds integers exactly only up to 2048;
 *   fft: its float32 rounding is a fixed fraction of the tile's magnitude
 *     (about 1e-4 of a level at 8 bits, fft.cu), so at 16 bits it is ~257
 *     times more levels (a few hundredths, more for small kernels) while the
 *     oracle's float32 bound for a direct sum shrinks with the tap count and
 *     the local magnitude: small kernels and dark regions would round the
 *     other way far more often than the acceptance rule allows. fft.cu reads
 *     and writes uint16 (centred at 32768) for when a float64 transform or a
 *     measured tolerance makes it eligible.
 */
#include <math.h>
#include <mutex>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/calib_cache.h"
#include "core/kernel_internal.h"
#include "cuda/cuda_common.cuh"
#include "cuda/chain_ops.h"
#include "cuda/fast/fast.h"
#include "cuda/fast/plan_choose.h"
#include "cuda/fast/tile.cuh"
#include "exercises/conv1d_cuda.h"
#include "exercises/matmul_cuda.h"

/* ---- model constants (docs/design/planner.md#model-constants says why) ------ */
static const double LAUNCH_S = 5.0e-6;         /* per kernel launch, event-timed */
static const double DIRECT_EFF = 0.80;         /* FMA-issue efficiency of the direct loops */
static const double SEP_EFF = 0.75;            /* ... of the fused separable loops */
static const double FFT_BYTES = 66.0;          /* device bytes per tile element, all FFT stages */
static const double FFT_FUSED_BYTES = 58.0;    /* ... with the multiply as cuFFT's callback */
static const double FFT_FUSE_AFTER_MS = 500.0; /* fft_fuse auto: FFT work before linking */
static const double FILL_INSTR = 4.0;          /* per input sample: load share, convert, store */
static const double STORE_INSTR = 3.0;         /* per output sample: round, stage, store */
static const double TILE_FIXED = 30.0; /* direct, sep: per output, block latency (FMA-equiv.) */
static const double TC_RATIO = 9.0;    /* tensor-core fp16 multiply-adds per fp32 FMA (mma.sync) */
static const double TC_FIXED = 37.0;   /* tensor: per output, staging, store (FMA-equiv.) */
static const double TC_SEP_FIXED = 46.0;         /* ... its rank-1 passes: and the H halves */
static const double TSEP_BIG_MAX_SAMPLES = 64e6; /* the rank-1 passes' big blocks below this */
static const double FACTOR_TOL = 1e-6; /* ic_kernel_factor tolerance (relative to max|K|) */
static const size_t FFT_BUDGET = (size_t)1 << 30; /* bytes of FFT tile buffers */
static const double BLUR_FP64 = 0.5;              /* fp64 multiply-adds per fp32 one (H100, H200) */
static const double BLUR_TERM_OPS = 20.0; /* fp64 multiply-adds a term a sample a pass (blur.cu) */
static const double BLUR_BYTES = 16.0;    /* float planes B and V, each written and read */

struct ic_fast_state {
    void *base; /* ic_cuda_open's state: buffers, events, upload/download */
    int device;
    ic_fast_method force; /* the job's ic_tuning.method (set by plan_job) */
    int recalibrate;      /* ic_context_options.recalibrate: measure, ignoring the cache */
    ic_fast_device dev;
    /* factorisation of the last kernel */
    int f_kw, f_kh;
    float *f_w;
    ic_factors fac;
    int sep_ok, fft_ok; /* ties: see tie_safe() */
    int sep_f32_ok;     /* float32 jobs: rank 1, every weight within 2^-20 of its own */
    ic_fast_fft *fft;
    float *dw; /* device weights for the global method on device jobs */
    size_t dw_cap;
    float *dw_host; /* what dw holds (dw_n floats), so repeated jobs copy nothing */
    size_t dw_n;
    ic_fast_batch *batch; /* descriptor tables of the batched launches (batch.cu) */
    ic_fast_blur *blur;   /* the blur method's scratch (blur.cu) */
    cudaEvent_t batch_ev; /* orders the other streams of a synchronous batch */
};

/* ---- device ceilings ------------------------------------------------------------ */

__global__ void fast_fma_probe(float *out, int iters, float a, float b)
{
    float x[8];
#pragma unroll
    for (int k = 0; k < 8; k++)
        x[k] = (float)(threadIdx.x + k);
    for (int i = 0; i < iters; i++)
#pragma unroll
        for (int k = 0; k < 8; k++)
            x[k] = fmaf(x[k], a, b);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 8; k++)
        s += x[k];
    if (s == 1234.5f) /* never true for the probe's inputs; keeps the loop alive */
        out[0] = s;
}

static std::mutex g_dev_mutex;
static ic_fast_device g_dev[64];
static int g_dev_done[64];

/* The cache key of a device: what makes its ceilings what they are. */
static void calib_key(const cudaDeviceProp &prop, char *key, size_t n)
{
    int drv = 0, rt = 0;
    (void)cudaDriverGetVersion(&drv);
    (void)cudaRuntimeGetVersion(&rt);
    char uuid[33];
    for (int i = 0; i < 16; i++)
        snprintf(uuid + 2 * i, 3, "%02x", (unsigned char)prop.uuid.bytes[i]);
    char name[64];
    int j = 0;
    for (int i = 0; prop.name[i] && j < 63; i++) /* printable ASCII only (calib_cache.h) */
        if (prop.name[i] >= 0x20 && prop.name[i] < 0x7f)
            name[j++] = prop.name[i];
    name[j] = '\0';
    snprintf(key, n, "%s uuid %s driver %d runtime %d imgconv %s", name, uuid, drv, rt,
             IC_VERSION_STRING);
}

static ic_status measure_device(int device, int recalibrate, int builtin, ic_fast_device *d,
                                char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    cudaDeviceProp prop;
    IC_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    d->sms = prop.multiProcessorCount;
    d->cc_major = prop.major;
    d->smem_optin = prop.sharedMemPerBlockOptin;
    d->smem_per_sm = prop.sharedMemPerMultiprocessor;
    /* Defaults if a measurement cannot run: an H100's measured ceilings. */
    d->copy_bps = 3.0e12;
    d->fma_per_s = 27.7e12;
    d->source = IC_FAST_CEIL_DEFAULT;
    if (builtin) /* ic_tuning.calibrate == IC_CALIBRATE_BUILTIN */
        return IC_OK;
    char key[IC_CALIB_MAX_KEY + 1];
    calib_key(prop, key, sizeof key);
    ic_calib cached;
    if (!recalibrate && ic__calib_load(key, &cached)) {
        d->copy_bps = cached.copy_bps;
        d->fma_per_s = cached.fma_per_s;
        d->source = IC_FAST_CEIL_CACHED;
        return IC_OK;
    }
    int copy_ok = 0, fma_ok = 0;
    cudaEvent_t e0, e1;
    IC_CUDA_CHECK(cudaEventCreate(&e0));
    IC_CUDA_CHECK(cudaEventCreate(&e1));
    const size_t bytes = (size_t)256 << 20;
    void *a = NULL, *b = NULL;
    float best = 0;
    if (cudaMalloc(&a, bytes) == cudaSuccess && cudaMalloc(&b, bytes) == cudaSuccess &&
        cudaMemset(a, 1, bytes) == cudaSuccess) {
        for (int i = 0; i < 4; i++) {
            float ms = 0;
            if (cudaEventRecord(e0) != cudaSuccess ||
                cudaMemcpy(b, a, bytes, cudaMemcpyDeviceToDevice) != cudaSuccess ||
                cudaEventRecord(e1) != cudaSuccess || cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
                break;
            if (i > 0 && (best == 0 || ms < best)) /* the first is a warm-up */
                best = ms;
        }
        if (best > 0) {
            d->copy_bps = 2.0 * (double)bytes / (best * 1e-3);
            copy_ok = 1;
        }
    }
    (void)cudaFree(a);
    (void)cudaFree(b);
    (void)cudaGetLastError();
    float *out = NULL;
    if (cudaMalloc((void **)&out, sizeof(float)) == cudaSuccess) {
        const int iters = 4096, threads = 256, blocks = 4 * d->sms;
        best = 0;
        for (int i = 0; i < 4; i++) {
            float ms = 0;
            cudaEventRecord(e0);
            fast_fma_probe<<<blocks, threads>>>(out, iters, 0.999f, 0.001f);
            cudaEventRecord(e1);
            if (cudaEventSynchronize(e1) != cudaSuccess ||
                cudaEventElapsedTime(&ms, e0, e1) != cudaSuccess)
                break;
            if (i > 0 && (best == 0 || ms < best))
                best = ms;
        }
        if (best > 0) {
            d->fma_per_s = (double)blocks * threads * iters * 8.0 / (best * 1e-3);
            fma_ok = 1;
        }
        (void)cudaFree(out);
    }
    (void)cudaGetLastError();
    (void)cudaEventDestroy(e0);
    (void)cudaEventDestroy(e1);
    if (copy_ok && fma_ok) { /* only real measurements are worth keeping */
        d->source = IC_FAST_CEIL_MEASURED;
        const ic_calib c = {d->copy_bps, d->fma_per_s};
        (void)ic__calib_store(key, &c); /* best effort: a read-only home still works */
    }
    return IC_OK;
}

static ic_status device_ceilings(ic_fast_state *st, const ic_tuning *t, char *err, size_t errlen)
{
    if (st->dev.sms > 0)
        return IC_OK;
    const int d = st->device;
    if (t && t->calibrate == IC_CALIBRATE_BUILTIN) /* this state only: not shared */
        return measure_device(d, 0, 1, &st->dev, err, errlen);
    std::lock_guard<std::mutex> lock(g_dev_mutex);
    /* Once per process and device; a state asking to recalibrate measures
     * again unless this process already did. */
    if (d >= 0 && d < 64 && g_dev_done[d] &&
        !(st->recalibrate && g_dev[d].source != IC_FAST_CEIL_MEASURED)) {
        st->dev = g_dev[d];
        return IC_OK;
    }
    IC_CUDA_CHECK(cudaSetDevice(d));
    ic_status s = measure_device(d, st->recalibrate, 0, &st->dev, err, errlen);
    if (s == IC_OK && d >= 0 && d < 64) {
        g_dev[d] = st->dev;
        g_dev_done[d] = 1;
    }
    return s;
}

/* ---- the planner ---------------------------------------------------------------- */

extern "C" const char *ic_fast_method_name(ic_fast_method m)
{
    switch (m) {
    case IC_FAST_DIRECT:
        return "direct";
    case IC_FAST_SEP:
        return "sep";
    case IC_FAST_FFT:
        return "fft";
    case IC_FAST_GLOBAL:
        return "global";
    case IC_FAST_ROWS:
        return "rows";
    case IC_FAST_TENSOR:
        return "tensor";
    case IC_FAST_BLUR:
        return "blur";
    default:
        return "auto";
    }
}

static_assert(
    (int)IC_FAST_AUTO == (int)IC_METHOD_AUTO && (int)IC_FAST_DIRECT == (int)IC_METHOD_DIRECT &&
        (int)IC_FAST_SEP == (int)IC_METHOD_SEP && (int)IC_FAST_FFT == (int)IC_METHOD_FFT &&
        (int)IC_FAST_GLOBAL == (int)IC_METHOD_GLOBAL && (int)IC_FAST_ROWS == (int)IC_METHOD_ROWS &&
        (int)IC_FAST_TENSOR == (int)IC_METHOD_TENSOR && (int)IC_FAST_BLUR == (int)IC_METHOD_BLUR,
    "ic_fast_method and ic_method name the methods in the same order");

/* The job's tuning (never NULL from the dispatcher; the defaults otherwise). */
static const ic_tuning *tuning_of(const ic_job *job)
{
    static const ic_tuning none = {};
    return job->tuning ? job->tuning : &none;
}

/* Factorisation of the job's weights, cached while the kernel stays the same. */
static ic_status factor_job(ic_fast_state *st, const ic_job *job, char *err, size_t errlen)
{
    const size_t n = (size_t)job->kw * job->kh;
    if (st->f_w && st->f_kw == job->kw && st->f_kh == job->kh &&
        memcmp(st->f_w, job->w, n * sizeof(float)) == 0)
        return IC_OK;
    ic_factors_free(&st->fac);
    free(st->f_w);
    st->f_w = NULL;
    /* weights that are multiples of 2^-16 (ic__weights_dyadic): the direct
     * sum is exact there; an SVD factorisation or an FFT is not (a tie comes
     * out as x.4999 or x.5001), so such kernels take neither unless the
     * factors reproduce the weights exactly */
    const int dy = ic__weights_dyadic(job->w, n, 65536.0f);
    st->fft_ok = !dy;
    st->sep_ok = 0;
    if (job->kw == job->kh && job->kw >= 3 && job->kw <= IC_FAST_SEP_MAX_K && job->wk) {
        const int k = job->kw;
        int max_rank = k / 2;
        if (max_rank < 2)
            max_rank = 2;
        if (max_rank > IC_FAST_SEP_MAX_RANK)
            max_rank = IC_FAST_SEP_MAX_RANK;
        const ic_status s = ic_kernel_factor(job->wk, FACTOR_TOL, max_rank, &st->fac);
        if (s != IC_OK) {
            memset(&st->fac, 0, sizeof st->fac);
            snprintf(err, errlen, "cuda: factoring the kernel failed: %s", ic_status_str(s));
            return s;
        }
        st->sep_ok = st->fac.rank > 0;
        if (st->sep_ok && dy) {
            /* Only an exact rank-1 product of dyadic vectors keeps the ties: then
             * every partial sum of both passes is exact too (Sobel, Prewitt,
             * Scharr, binomial kernels). */
            st->sep_ok = st->fac.rank == 1 &&
                         ic__weights_dyadic(st->fac.row, (size_t)k, 1048576.0f) &&
                         ic__weights_dyadic(st->fac.col, (size_t)k, 1048576.0f);
            for (int j = 0; st->sep_ok && j < k; j++)
                for (int i = 0; i < k; i++)
                    if (st->fac.col[j] * st->fac.row[i] != job->w[(size_t)j * k + i]) {
                        st->sep_ok = 0;
                        break;
                    }
        }
    }
    st->f_w = (float *)malloc(n * sizeof(float));
    if (!st->f_w) {
        ic_factors_free(&st->fac);
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    memcpy(st->f_w, job->w, n * sizeof(float));
    st->f_kw = job->kw;
    st->f_kh = job->kh;
    /* float32 outputs keep their error within a few ulps of sum |w*x|
     * (docs/definitions.md, "Float samples"): only a rank-1 product that
     * reproduces every weight to 2^-20 of itself (zeros exactly) keeps that */
    st->sep_f32_ok = st->fac.rank == 1;
    for (int j = 0; st->sep_f32_ok && j < job->kh; j++)
        for (int i = 0; i < job->kw; i++) {
            const double w = job->w[(size_t)j * job->kw + i];
            const double p = (double)st->fac.col[j] * (double)st->fac.row[i];
            if (fabs(p - w) > 0x1p-20 * fabs(w)) {
                st->sep_f32_ok = 0;
                break;
            }
        }
    return IC_OK;
}

/* Picks channels per block cb (all of them for AoS or premultiplied alpha, or 1) and row groups nrg
 * (tile height 8*nrg) for a tile method: the shape with the fewest issue slots
 * per output (instr_of: FMAs + fill + loads + store, from the tile's halo)
 * divided by how busy it keeps the SMs: occupancy (warps per SM over the 16
 * that hide shared-memory and global latency here) and the grid's last wave.
 * smem_of(cb, nrg) == 0 means impossible. Returns 0 when nothing fits, else
 * the shape's efficiency factor (0..1] in *eff. */
template <class Smem, class Instr>
static int tile_shape(const ic_fast_device &d, const ic_job *job, const ic_tuning *tune,
                      Smem smem_of, Instr instr_of, int regs, int *cb_out, int *nrg_out,
                      size_t *smem_out, double *eff_out, double *instr_out)
{
    const ic_image *s = job->src;
    const int C = s->channels;
    /* AoS: all channels per block whenever that fits (a one-channel block
     * loads every channel's bytes and stores with a stride); SoA: planes. */
    const int cbs[2] = {s->layout == IC_SOA && !job->premultiply ? 1 : C, 1};
    const int ncb = (s->layout == IC_SOA || C == 1 || job->premultiply) ? 1 : 2;
    /* ic_tuning.tile_channels / tile_rows: pass 0 tries only that shape;
     * when it does not apply or fit, pass 1 is the planner's choice */
    const int want_cb = ncb == 2 && tune->tile_channels ? (tune->tile_channels == 1 ? 1 : C) : 0;
    const int want_nrg = tune->tile_rows / IC_FAST_R;
    double best = 0;
    for (int pass = want_cb || want_nrg ? 0 : 1; pass < 2 && best == 0; pass++)
        for (int i = 0; i < ncb && (best == 0 || pass == 0); i++) {
            const int cb = cbs[i];
            if (pass == 0 && want_cb && cb != want_cb)
                continue;
            for (int nrg = 1; nrg <= 8; nrg *= 2) {
                if (pass == 0 && want_nrg && nrg != want_nrg)
                    continue;
                const size_t sm = smem_of(cb, nrg);
                if (sm == 0 || sm > d.smem_optin)
                    continue;
                const int threads = 32 * cb * nrg;
                int bps = (int)(d.smem_per_sm / (sm + 1024));
                if (bps > 2048 / threads)
                    bps = 2048 / threads;
                if (bps > 65536 / (regs * threads))
                    bps = 65536 / (regs * threads);
                if (bps > 32)
                    bps = 32;
                if (bps < 1)
                    continue;
                const double occ = fmin(1.0, bps * threads / 32 / 16.0);
                const double blocks = (double)((s->width + IC_FAST_TW - 1) / IC_FAST_TW) *
                                      ((s->height + IC_FAST_R * nrg - 1) / (IC_FAST_R * nrg)) *
                                      (C / cb);
                const double waves = blocks / ((double)d.sms * bps);
                const double fill = waves >= 1 ? waves / ceil(waves) : waves;
                const double eff = occ * fill;
                const double instr = instr_of(cb, nrg);
                const double score = instr / eff;
                if (best == 0 || score < best) {
                    best = score;
                    *cb_out = cb;
                    *nrg_out = nrg;
                    *smem_out = sm;
                    *eff_out = eff;
                    *instr_out = instr;
                }
            }
        }
    return best > 0;
}

/* Whether a block of cb channels taller than nrg row groups fits
 * icf::MAX_THREADS and the shared memory smem_of(cb, n) it needs: the
 * separable passes (sep, and the tensor method's rank-1 passes) take the
 * tallest block that fits, by measurement rather than by tile_shape's wave
 * fill (plan_job says where). */
template <class Smem>
static bool taller_fits(const ic_fast_device &d, Smem smem_of, int cb, int nrg)
{
    for (int n = 2 * nrg; n <= 8 && 32 * cb * n <= icf::MAX_THREADS; n *= 2) {
        const size_t sm = smem_of(cb, n);
        if (sm && sm <= d.smem_optin)
            return true;
    }
    return false;
}

static double tile_blocks_of(const ic_job *job, int cb, int nrg)
{
    const ic_image *s = job->src;
    return (double)((s->width + IC_FAST_TW - 1) / IC_FAST_TW) *
           ((s->height + IC_FAST_R * nrg - 1) / (IC_FAST_R * nrg)) * (s->channels / cb);
}

/* ---- the predictors: one a method, each the model's time for the job in
 * seconds (-1: the method cannot run it) and what its launch needs ---------------- */

/* What every predictor reads. */
struct job_facts {
    const ic_job *job;
    const ic_tuning *tune;
    const ic_fast_device *d;
    const ic_image *img;
    int kw, kh;
    int u16, f32;     /* 16-bit or float32 samples: direct and separable only */
    int rank;         /* usable separable rank; 0 when the factors would break ties */
    int forced_shape; /* ic_tuning forces a tile shape: launched wherever it fits */
    double samples;
    double io;    /* bytes in and out */
    double t_mem; /* io at the copy ceiling */
};

/* A shared-memory tile method's prediction and launch shape. */
struct tile_pred {
    double t, fmas;
    int cb, nrg;
    size_t smem;
    int rank; /* separable rank the launch uses (tensor: 1 or 0) */
};

struct rows_pred {
    double t, fmas;
    int rank;       /* 0: the full K*K sum */
    int per_thread; /* output rows a thread by the shape rule */
    int rows;       /* ... as launched */
};

struct fft_pred {
    double t, fmas;
};

/* Fraction of the halo a tile of nrg row groups fills, in 128-wide rows. */
static double tile_halo(int kw, int kh, int nrg)
{
    return (double)(IC_FAST_R * nrg + kh - 1) / (IC_FAST_R * nrg) * (double)icf::sw_of(kw) /
           IC_FAST_TW;
}

static tile_pred predict_direct(const job_facts &f)
{
    const int kw = f.kw, kh = f.kh;
    tile_pred r = {-1, f.samples * kw * kh, 0, 0, 0, 0};
    auto instr_of = [&](int, int nrg) {
        const double loads = (double)icf::nvec_of(kw) *
                             (kh > 9 || kw != kh ? kh * IC_FAST_R : IC_FAST_R + kh - 1) /
                             (4.0 * IC_FAST_R);
        return kw * kh + tile_halo(kw, kh, nrg) * FILL_INSTR + STORE_INSTR + loads;
    };
    auto smem_of = [&](int cb, int nrg) { return ic_fast_direct_smem(kw, kh, cb, nrg); };
    double eff = 1, instr = 0;
    if (tile_shape(*f.d, f.job, f.tune, smem_of, instr_of, kw == 9 && kh == 9 ? 128 : 80, &r.cb,
                   &r.nrg, &r.smem, &eff, &instr))
        r.t = LAUNCH_S + fmax(f.t_mem / eff, f.samples * (instr / DIRECT_EFF + TILE_FIXED) /
                                                 (eff * f.d->fma_per_s));
    return r;
}

static tile_pred predict_sep(const job_facts &f)
{
    const int kw = f.kw, kh = f.kh, rank = f.rank;
    tile_pred r = {-1, 0, 0, 0, 0, rank};
    if (rank <= 0 || kw != kh)
        return r;
    auto per_output = [&](int nrg) {
        const double th = IC_FAST_R * nrg;
        return rank * (kw * (th + kh - 1) / th + kh);
    };
    auto instr_of = [&](int, int nrg) {
        const double th = IC_FAST_R * nrg;
        const double halo = (th + kh - 1) / th * (double)icf::sw_of(kw) / IC_FAST_TW;
        const double loads = rank * ((double)icf::nvec_of(kw) * (th + kh - 1) / th / 4.0 +
                                     (IC_FAST_R + kh - 1) / (4.0 * IC_FAST_R) + 0.25);
        return per_output(nrg) + halo * FILL_INSTR + STORE_INSTR + loads;
    };
    auto smem_of = [&](int cb, int nrg) { return ic_fast_sep_smem(kw, cb, nrg, rank); };
    /* from 11x11 the tallest block that fits, measured faster than the
     * model's wave fill (docs/design/planner.md#launch-shapes) */
    auto taken_smem = [&](int cb, int nrg) {
        if (kw >= 11 && !f.forced_shape && taller_fits(*f.d, smem_of, cb, nrg))
            return (size_t)0;
        return smem_of(cb, nrg);
    };
    double eff = 1, instr = 0;
    if (tile_shape(*f.d, f.job, f.tune, taken_smem, instr_of, 80, &r.cb, &r.nrg, &r.smem, &eff,
                   &instr)) {
        r.fmas = f.samples * per_output(r.nrg);
        r.t = LAUNCH_S + fmax(f.t_mem / eff,
                              f.samples * (instr / SEP_EFF + TILE_FIXED) / (eff * f.d->fma_per_s));
    }
    return r;
}

/* Sets the plan's fft_* fields where the method can run the job (no
 * premultiplied alpha, no 16-bit samples: see the top). */
static fft_pred predict_fft(const job_facts &f, const ic_fast_state *st, ic_fast_plan *p)
{
    fft_pred r = {-1, 0};
    if (!st->fft_ok || f.job->premultiply || f.u16 || f.f32)
        return r;
    const int kw = f.kw, kh = f.kh, k = kw > kh ? kw : kh;
    const ic_image *img = f.img;
    const int n = f.tune->fft_n > k ? f.tune->fft_n : ic_fast_fft_size(kw, kh);
    const int v = n - k + 1;
    const double tiles =
        (double)((img->width + v - 1) / v) * ((img->height + v - 1) / v) * img->channels;
    const double per_tile = (double)n * n * sizeof(float) * 2 + (double)n * (n / 2 + 1) * 8;
    double batches = ceil(tiles * per_tile / (double)FFT_BUDGET);
    if (batches < 1)
        batches = 1;
#ifdef IC_HAVE_FFT_CB
    /* auto: once the link's tens of ms cost less than the multiply passes
     * saved; never where this context's cuFFT failed to link it before */
    p->fft_fused = ic_fast_fft_fusable(st->fft) &&
                   (f.tune->fft_fuse == 1 ||
                    (f.tune->fft_fuse == 0 && ic_fast_fft_work_ms(st->fft) >= FFT_FUSE_AFTER_MS));
#else
    p->fft_fused = 0;
#endif
    /* five launches a batch either way (fused: six kernels instead of seven) */
    r.t = 5 * LAUNCH_S * batches +
          (p->fft_fused ? FFT_FUSED_BYTES : FFT_BYTES) * tiles * n * n / f.d->copy_bps;
    r.fmas = tiles * n * n * 2.0 * log2((double)n) * 2.5; /* ~5 N log N flops a transform pair */
    p->fft_n = n;
    p->fft_valid = v;
    p->fft_tiles = (int)tiles;
    return r;
}

/* Tensor cores: 8-bit samples without premultiplication, kernels that are not
 * tie-prone (as for the FFT), sm_80+, a constant border exact in fp16. Per
 * output, kh rows of 16*KS taps for the weights' hi and lo halves at TC_RATIO
 * times the fp32 rate, a fixed share and the fill; a rank-1 kernel runs as a
 * row and a column pass (tensor_sep.cu). */
static tile_pred predict_tensor(const job_facts &f, const ic_fast_state *st)
{
    const int kw = f.kw, kh = f.kh;
    const double samples = f.samples;
    const int tks = ic_fast_tensor_ksteps(kw);
    const int tsep = f.rank == 1 && kw == kh && kw <= IC_FAST_TENSOR_MAX_KW;
    tile_pred r = {-1, 0, 0, 0, 0, tsep};
    const float bv = f.job->border_value;
    if (!st->fft_ok || f.job->premultiply || f.u16 || f.f32 || f.d->cc_major < 8 ||
        (f.job->border == IC_BORDER_CONSTANT && !(bv == rintf(bv) && fabsf(bv) <= 2048)))
        return r;
    auto tsep_smem = [&](int cb, int nrg) { return ic_fast_tensor_sep_smem(kw, cb, nrg); };
    /* the rank-1 passes' big block of every channel, one an SM: its row
     * groups for cb channels, 0 where it is not taken (measured faster above
     * 17x17 below TSEP_BIG_MAX_SAMPLES: docs/design/planner.md#launch-shapes) */
    auto tsep_big = [&](int cb) {
        if (kw <= 17 || samples >= TSEP_BIG_MAX_SAMPLES || cb < 2)
            return 0;
        return (cb == 3 ? IC_FAST_TSEP_BIG_THREADS : IC_FAST_TSEP_BIG2_THREADS) / (32 * cb);
    };
    const double mmas = tsep ? ic_fast_tensor_sep_macs(kw) : (double)kh * 16 * tks * 2;
    auto instr_of = [&](int, int nrg) {
        return mmas / TC_RATIO + (tsep ? TC_SEP_FIXED : TC_FIXED) +
               tile_halo(kw, kh, nrg) * FILL_INSTR * 1.5;
    };
    /* the rank-1 passes' tile rows by measurement, not by the model's wave
     * fill: the big block, else the tallest that fits */
    auto taken_smem = [&](int cb, int nrg) {
        if (tsep && !f.forced_shape) {
            const int big = tsep_big(cb);
            if (big ? nrg != big
                    : 32 * cb * nrg > icf::MAX_THREADS || taller_fits(*f.d, tsep_smem, cb, nrg))
                return (size_t)0;
        }
        return tsep ? tsep_smem(cb, nrg) : ic_fast_tensor_smem(kw, kh, cb, nrg);
    };
    double eff = 1, instr = 0;
    if (tile_shape(*f.d, f.job, f.tune, taken_smem, instr_of, 80, &r.cb, &r.nrg, &r.smem, &eff,
                   &instr)) {
        r.fmas = samples * mmas;
        r.t = LAUNCH_S + fmax(f.t_mem / eff, samples * instr / (eff * f.d->fma_per_s));
    }
    return r;
}

/* rows: small square kernels in registers, no shared memory; the roofline
 * with a 25% allowance. */
static rows_pred predict_rows(const job_facts &f)
{
    const int kw = f.kw, kh = f.kh, rank = f.rank;
    const ic_image *img = f.img;
    const int soa = img->layout == IC_SOA;
    rows_pred r = {-1, f.samples * kw * kh, 0, 0, 0};
    if (f.u16 || f.f32 || !ic_fast_rows_eligible(kw, kh, img->channels, soa) ||
        (f.job->premultiply && !ic_fast_rows_premultiplies(img->channels, soa)))
        return r;
    /* separable when the factors are usable, small in rank and cheaper at 4
     * rows a thread; ic_tuning.rows_full keeps the full K*K sum, and
     * ic_tuning.rows_shape overrides the rows a thread */
    const int factored = rank >= 1 && rank <= IC_FAST_ROWS_MAX_RANK &&
                         rank * ((4.0 + kh - 1) / 4.0 * kw + kh) < (double)kw * kh &&
                         !f.tune->rows_full;
    r.per_thread = f.tune->rows_shape
                       ? f.tune->rows_shape
                       : ic_fast_rows_shape(img->width, img->height, img->channels, soa, kw,
                                            f.d->sms, f.d->copy_bps, factored);
    const double per_sep = rank * ((double)(r.per_thread + kh - 1) / r.per_thread * kw + kh);
    if (factored && per_sep < (double)kw * kh) {
        r.rank = rank;
        r.fmas = f.samples * per_sep;
    }
    r.t = LAUNCH_S + 1.25 * fmax(f.t_mem, r.fmas / f.d->fma_per_s);
    /* more than 4 rows a thread only for what rows_roll and rows_ring take
     * (a forced value elsewhere runs as 4, and the plan says so) */
    r.rows = ic_fast_rows_run(kw, r.rank, r.per_thread);
    /* pixels with alpha (grey + alpha, RGBA AoS): the 4-row kernels spill
     * there, and a premultiplied rolled kernel is faster at 2 rows
     * (docs/design/alpha.md#rows-per-thread) */
    if (ic_fast_rows_premultiplies(img->channels, soa) && !f.tune->rows_shape &&
        (r.rows == 4 || (f.job->premultiply && ic_fast_rows_rolls(kw, r.rank))))
        r.rows = 2;
    return r;
}

/* ---- the fill: the chosen method's launch shape and prediction ------------------ */

static void fill_tiled(ic_fast_plan *p, const job_facts &f, const ic_fast_state *st,
                       const tile_pred &t)
{
    p->rank = t.rank;
    p->factor_err = t.rank ? st->fac.max_err : 0;
    p->cb = t.cb;
    p->nrg = t.nrg;
    p->smem = t.smem;
    p->threads = 32 * t.cb * t.nrg;
    p->blocks = (int)tile_blocks_of(f.job, t.cb, t.nrg);
    p->fmas = t.fmas;
    p->bytes = f.io;
    p->pred_ms = t.t * 1e3;
}

static void fill_plan(ic_fast_plan *p, ic_fast_method m, const job_facts &f,
                      const ic_fast_state *st, const tile_pred &direct, const tile_pred &sep,
                      const fft_pred &fft, const tile_pred &tensor, const rows_pred &rows)
{
    const ic_image *img = f.img;
    p->method = m;
    switch (m) {
    case IC_FAST_DIRECT:
        fill_tiled(p, f, st, direct);
        break;
    case IC_FAST_SEP:
        fill_tiled(p, f, st, sep);
        break;
    case IC_FAST_TENSOR:
        fill_tiled(p, f, st, tensor);
        break;
    case IC_FAST_FFT:
        p->threads = 256;
        p->fmas = fft.fmas;
        p->bytes = (p->fft_fused ? FFT_FUSED_BYTES : FFT_BYTES) * p->fft_tiles * (double)p->fft_n *
                   p->fft_n;
        p->pred_ms = fft.t * 1e3;
        break;
    case IC_FAST_ROWS:
        p->rank = rows.rank;
        p->factor_err = rows.rank ? st->fac.max_err : 0;
        p->threads = 256;
        p->fmas = rows.fmas;
        p->bytes = f.io;
        p->pred_ms = rows.t * 1e3;
        break;
    default:
        p->method = IC_FAST_GLOBAL;
        p->threads = IC_CU_DIRECT_BX * IC_CU_DIRECT_BY;
        p->blocks = (int)((img->width + IC_CU_DIRECT_BX - 1) / IC_CU_DIRECT_BX *
                          ((img->height + IC_CU_DIRECT_BY - 1) / IC_CU_DIRECT_BY) * img->channels);
        p->fmas = direct.fmas;
        p->bytes = f.io;
        p->pred_ms = (LAUNCH_S + fmax(f.t_mem, direct.fmas * 4 / f.d->fma_per_s)) * 1e3;
        break;
    }
}

/* The blur method's plan: its terms, bytes and predicted time,
 *   t = 3 L + max(io / copy, ops / (BLUR_FP64 fma)),
 * ops = samples * BLUR_TERM_OPS * sum over the passes of terms: the prefix
 * sums cover the line only, whatever r (window ends past it in closed form). */
static void plan_blur(const ic_fast_state *st, const ic_job *job, ic_fast_plan *p)
{
    const ic_image *img = job->src;
    int tx = 0, ty = 0;
    (void)ic_fast_blur_terms(job->wk, job->kw, job->kh, img->type != IC_U8, &tx, &ty);
    const double samples = (double)img->width * img->height * img->channels;
    p->method = IC_FAST_BLUR;
    p->rank = 0;
    p->threads = 256;
    p->blocks = img->height * img->channels;
    p->fmas = samples * BLUR_TERM_OPS * ((tx + 1) + (ty + 1));
    p->bytes = samples * (2.0 * (double)ic_sample_size(img->type) + BLUR_BYTES);
    p->pred_ms = (3 * LAUNCH_S +
                  fmax(p->bytes / st->dev.copy_bps, p->fmas / (BLUR_FP64 * st->dev.fma_per_s))) *
                 1e3;
    p->pred_direct_ms = p->pred_sep_ms = p->pred_fft_ms = p->pred_rows_ms = p->pred_tensor_ms = -1;
}

/* 1 when the job takes the blur method: a blur by its shape alone always;
 * one with weights when forced, or under auto from IC_FAST_BLUR_MIN_SIDE
 * taps a side. Never an asynchronous job (it needs whole-image scratch and
 * the synchronous run). */
static int blur_taken(const ic_fast_state *st, const ic_job *job)
{
    if (!job->w)
        return 1;
    if (job->async || !ic_fast_blur_eligible(job->wk, job->kw, job->kh))
        return 0;
    return st->force == IC_FAST_BLUR ||
           (st->force == IC_FAST_AUTO &&
            (job->kw >= IC_FAST_BLUR_MIN_SIDE || job->kh >= IC_FAST_BLUR_MIN_SIDE));
}

/* The plan of a job: every method's prediction, the choice between them
 * (plan_choose.c) and the chosen method's launch. */
static ic_status plan_job(ic_fast_state *st, const ic_job *job, ic_fast_plan *p, char *err,
                          size_t errlen)
{
    memset(p, 0, sizeof *p);
    const ic_tuning *tune = tuning_of(job);
    /* ic_method and ic_fast_method name the methods in the same order */
    st->force = (ic_fast_method)tune->method;
    ic_status s = device_ceilings(st, tune, err, errlen);
    if (s != IC_OK)
        return s;
    if (blur_taken(st, job)) {
        if (!job->w && !ic_fast_blur_eligible(job->wk, job->kw, job->kh)) {
            snprintf(err, errlen,
                     "cuda: %s is wider than 2*ceil(4 sigma)+1, too wide for its sigma to run "
                     "as prefix sums (leave the size out: 2*ceil(3 sigma)+1)",
                     job->wk ? job->wk->name : "the kernel");
            return IC_ERR_UNSUPPORTED;
        }
        plan_blur(st, job, p);
        return IC_OK;
    }
    if ((s = factor_job(st, job, err, errlen)) != IC_OK)
        return s;
    job_facts f;
    f.job = job;
    f.tune = tune;
    f.d = &st->dev;
    f.img = job->src;
    f.kw = job->kw;
    f.kh = job->kh;
    f.u16 = f.img->type == IC_U16;
    f.f32 = f.img->type == IC_F32;
    f.rank = (f.f32 ? st->sep_f32_ok : st->sep_ok) ? st->fac.rank : 0;
    f.forced_shape = tune->tile_rows || tune->tile_channels;
    f.samples = (double)f.img->width * f.img->height * f.img->channels;
    f.io = 2.0 * f.samples * (double)ic_sample_size(f.img->type);
    f.t_mem = f.io / f.d->copy_bps;

    const tile_pred direct = predict_direct(f);
    const tile_pred sep = predict_sep(f);
    const fft_pred fft = predict_fft(f, st, p);
    const tile_pred tensor = predict_tensor(f, st);
    const rows_pred rows = predict_rows(f);
    p->pred_direct_ms = direct.t > 0 ? direct.t * 1e3 : -1;
    p->pred_sep_ms = sep.t > 0 ? sep.t * 1e3 : -1;
    p->pred_fft_ms = fft.t > 0 ? fft.t * 1e3 : -1;
    p->pred_tensor_ms = tensor.t > 0 ? tensor.t * 1e3 : -1;
    p->pred_rows_ms = rows.t > 0 ? rows.t * 1e3 : -1;
    if (rows.t > 0)
        p->rows = rows.rows;

    ic_fast_choice c;
    memset(&c, 0, sizeof c);
    c.t_direct = direct.t;
    c.t_sep = sep.t;
    c.t_fft = fft.t;
    c.t_tensor = tensor.t;
    c.t_rows = rows.t;
    c.samples = f.samples;
    c.kw = f.kw;
    c.kh = f.kh;
    c.tensor_rank1 = tensor.rank;
    c.rows_rank = rows.rank;
    c.rows_per_thread = rows.per_thread;
    c.force = st->force;
    fill_plan(p, ic_fast_choose(&c), f, st, direct, sep, fft, tensor, rows);
    return IC_OK;
}

/* ---- running ---------------------------------------------------------------------- */

static void args_of(const ic_job *job, const uint8_t *src, size_t sp, uint8_t *dst, size_t dp,
                    const float *dw, size_t smem_optin, ic_cuda_args *a)
{
    memset(a, 0, sizeof *a);
    a->src = src;
    a->src_pitch = sp;
    a->dst = dst;
    a->dst_pitch = dp;
    a->w = dw;
    a->width = job->src->width;
    a->height = job->src->height;
    a->channels = job->src->channels;
    a->soa = job->src->layout == IC_SOA;
    a->u16 = job->src->type == IC_U16;
    a->f32 = job->src->type == IC_F32;
    a->kw = job->kw;
    a->kh = job->kh;
    a->border = (int)job->border;
    a->border_value = job->border_value;
    a->bias = job->bias;
    a->premultiply = job->premultiply;
    a->smem_optin = smem_optin;
    a->stream = NULL;
}

/* Device-side preparation a plan needs before its launch (FFT spectrum). */
static ic_status prepare_plan(ic_fast_state *st, const ic_cuda_args *a, const ic_job *job,
                              ic_fast_plan *p, char *err, size_t errlen)
{
    if (p->method == IC_FAST_FFT)
        return ic_fast_fft_prepare(&st->fft, a, job->w, p, FFT_BUDGET, err, errlen);
    return IC_OK;
}

static ic_status launch_plan(ic_fast_state *st, const ic_cuda_args *a, const ic_job *job,
                             const ic_fast_plan *p, char *err, size_t errlen)
{
    switch (p->method) {
    case IC_FAST_DIRECT:
        return ic_fast_direct_launch(a, job->w, p, err, errlen);
    case IC_FAST_SEP:
        return ic_fast_sep_launch(a, st->fac.row, st->fac.col, st->fac.rank, p, err, errlen);
    case IC_FAST_FFT:
        return ic_fast_fft_launch(st->fft, a, err, errlen);
    case IC_FAST_ROWS:
        return ic_fast_rows_launch(a, job->w, st->fac.row, st->fac.col, p->rank, p->rows, err,
                                   errlen);
    case IC_FAST_TENSOR:
        if (p->rank == 1)
            return ic_fast_tensor_sep_launch(a, st->fac.row, st->fac.col, p, err, errlen);
        return ic_fast_tensor_launch(a, job->w, p, err, errlen);
    case IC_FAST_BLUR:
        return ic_fast_blur_launch(&st->blur, a, job->wk, err, errlen);
    default:
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    }
}

/* ic_cuda_run (cuda_host.cu) drives upload, launch and download; its strategy
 * hooks reach this call's state and plan through a->user (the async pipeline
 * calls them from its own worker threads, so no thread-local will do). */
struct run_ctx {
    ic_fast_state *st;
    const ic_job *job;
    ic_fast_plan plan;
};

static ic_status hook_prepare(const ic_cuda_args *a, const float *, char *err, size_t errlen)
{
    run_ctx *rc = (run_ctx *)a->user;
    return prepare_plan(rc->st, a, rc->job, &rc->plan, err, errlen);
}

static ic_status hook_launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    const run_ctx *rc = (const run_ctx *)a->user;
    return launch_plan(rc->st, a, rc->job, &rc->plan, err, errlen);
}

static const ic_cuda_strategy fast_strategy = {"cuda fast path kernel", hook_prepare, hook_launch,
                                               NULL};

static ic_status fast_open(void **state, const ic_context_options *opts, char *err, size_t errlen)
{
    if (!state)
        return IC_ERR_INVALID_ARG;
    *state = NULL;
    ic_fast_state *st = (ic_fast_state *)calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    const ic_status s = ic_cuda_open(&st->base, opts, err, errlen);
    if (s != IC_OK) {
        free(st);
        return s;
    }
    st->device = opts ? opts->device : 0;
    st->recalibrate = opts ? opts->recalibrate != 0 : 0;
    st->force = IC_FAST_AUTO;
    *state = st;
    return IC_OK;
}

static void fast_close(void *state)
{
    ic_fast_state *st = (ic_fast_state *)state;
    if (!st)
        return;
    (void)cudaSetDevice(st->device);
    ic_fast_fft_free(st->fft);
    ic_fast_batch_free(st->batch);
    ic_fast_blur_free(st->blur);
    if (st->batch_ev)
        (void)cudaEventDestroy(st->batch_ev);
    (void)cudaFree(st->dw);
    free(st->dw_host);
    (void)cudaGetLastError();
    ic_factors_free(&st->fac);
    free(st->f_w);
    ic_cuda_close(st->base);
    free(st);
}

static ic_status run_async(ic_fast_state *st, const ic_job *job, char *err, size_t errlen);

static ic_status fast_run(void *state, const ic_job *job, ic_timing *t, char *err, size_t errlen)
{
    ic_fast_state *st = (ic_fast_state *)state;
    if (!st || !job || !job->src || !t)
        return IC_ERR_INVALID_ARG;
    IC_CUDA_CHECK(cudaSetDevice(st->device));
    if (job->async)
        return run_async(st, job, err, errlen);
    run_ctx rc;
    rc.st = st;
    rc.job = job;
    ic_status s = plan_job(st, job, &rc.plan, err, errlen);
    if (s != IC_OK)
        return s;
    if (rc.plan.method == IC_FAST_BLUR) /* every row at once: never the bands */
        return ic_cuda_run_whole(st->base, job, &fast_strategy, &rc, t, err, errlen);
    return ic_cuda_run(st->base, job, &fast_strategy, &rc, t, err, errlen);
}

static void fmt_bytes(char *b, size_t n, double v)
{
    if (v >= 1e9)
        snprintf(b, n, "%.2f GB", v / 1e9);
    else if (v >= 1e6)
        snprintf(b, n, "%.1f MB", v / 1e6);
    else
        snprintf(b, n, "%.1f KB", v / 1e3);
}

static void fmt_ms(char *b, size_t n, double ms)
{
    if (ms < 0)
        snprintf(b, n, "n/a");
    else
        snprintf(b, n, "%.3f ms", ms);
}

/* --explain of the blur method. */
static ic_status explain_blur(const ic_fast_state *st, const ic_job *job, const ic_fast_plan *p,
                              char *buf, size_t buflen)
{
    const ic_image *img = job->src;
    const ic_kernel *k = job->wk;
    int tx = 0, ty = 0;
    (void)ic_fast_blur_terms(k, job->kw, job->kh, img->type != IC_U8, &tx, &ty);
    char pr[32], by[32], terms[96];
    fmt_ms(pr, sizeof pr, p->pred_ms);
    fmt_bytes(by, sizeof by, p->bytes);
    const int box = k->blur == IC_BLUR_BOX;
    if (box)
        snprintf(terms, sizeof terms, "one plain sum a pass, exact in float64");
    else
        snprintf(terms, sizeof terms, "sigma %g x %g, %d + %d cosine terms (row, column)",
                 k->sigma_x, k->sigma_y, tx, ty);
    snprintf(buf, buflen,
             "cuda: method blur%s for a %dx%d %s on %dx%d %s x%d%s%s\n"
             "  float64 prefix sums of the lines (reduce, then scan), window ends past a line "
             "in closed form: %s; "
             "row pass one line a block (256 runs), column pass 16 columns x 32 runs a block, "
             "then one store pass; %s\n"
             "  model: %.3g G fp64 multiply-adds, %s of device traffic; predicted %s\n",
             st->force == IC_FAST_BLUR ? " (forced)" : "", job->kw, job->kh,
             box ? "box" : "gaussian", img->width, img->height,
             img->layout == IC_SOA ? "SoA" : "AoS", img->channels,
             img->type == IC_U16   ? " 16-bit"
             : img->type == IC_F32 ? " float32"
                                   : "",
             job->premultiply ? ", premultiplied alpha" : "", terms,
             !job->w ? "past the FIR methods' sizes (weights not materialised)"
                     : "auto takes it from 33 taps a side (IC_FAST_BLUR_MIN_SIDE)",
             p->fmas / 1e9, by, pr);
    return IC_OK;
}

static ic_status fast_explain(void *state, const ic_job *job, char *buf, size_t buflen)
{
    ic_fast_state *st = (ic_fast_state *)state;
    char err[256] = "";
    const size_t errlen = sizeof err;
    if (!st || !job || !job->src || !buf || buflen == 0)
        return IC_ERR_INVALID_ARG;
    IC_CUDA_CHECK(cudaSetDevice(st->device));
    ic_fast_plan p;
    const ic_status s = plan_job(st, job, &p, err, errlen);
    if (s != IC_OK) {
        snprintf(buf, buflen, "cuda: no plan: %s\n", err);
        return IC_OK;
    }
    const ic_image *img = job->src;
    if (p.method == IC_FAST_BLUR)
        return explain_blur(st, job, &p, buf, buflen);
    char d[32], sp[32], f[32], rw[32], tc[32], pr[32], by[32];
    fmt_ms(rw, sizeof rw, p.pred_rows_ms);
    fmt_ms(tc, sizeof tc, p.pred_tensor_ms);
    fmt_ms(d, sizeof d, p.pred_direct_ms);
    fmt_ms(sp, sizeof sp, p.pred_sep_ms);
    fmt_ms(f, sizeof f, p.pred_fft_ms);
    fmt_ms(pr, sizeof pr, p.pred_ms);
    fmt_bytes(by, sizeof by, p.bytes);
    int o = snprintf(buf, buflen,
                     "cuda: method %s%s for a %dx%d kernel on %dx%d %s x%d%s%s (rank %d%s)\n"
                     "  candidates: rows %s, direct %s, separable %s, fft %s, tensor %s%s\n",
                     ic_fast_method_name(p.method), p.method == st->force ? " (forced)" : "",
                     job->kw, job->kh, img->width, img->height,
                     img->layout == IC_SOA ? "SoA" : "AoS", img->channels,
                     img->type == IC_U16   ? " 16-bit"
                     : img->type == IC_F32 ? " float32"
                                           : "",
                     job->premultiply ? ", premultiplied alpha" : "", st->fac.rank,
                     st->fac.rank ? "" : ": full rank or not factored", rw, d, sp, f, tc,
                     img->type != IC_U8 ? "; rows, fft and tensor: 8-bit samples only" : "");
    if (o < 0 || (size_t)o >= buflen)
        return IC_OK;
    const int ring = ic_fast_rows_rings(job->kw, p.rank, p.rows); /* 8 samples a thread */
    if (p.method == IC_FAST_DIRECT || p.method == IC_FAST_SEP || p.method == IC_FAST_TENSOR)
        o += snprintf(buf + o, buflen - o,
                      "  tile %dx%d px x %d channel%s per block, %d threads, %.1f KB shared, "
                      "%d blocks on %d SMs%s\n",
                      IC_FAST_TW, IC_FAST_R * p.nrg, p.cb, p.cb > 1 ? "s" : "", p.threads,
                      p.smem / 1024.0, p.blocks, st->dev.sms,
                      p.method == IC_FAST_SEP
                          ? (p.pred_rows_ms > 0 && p.method != st->force
                                 ? "; rank terms fused in shared memory (taken over rows for a "
                                   "rank-1 9x9 at 2 rows per thread: table H)"
                                 : "; rank terms fused in shared memory")
                      : p.method == IC_FAST_TENSOR
                          ? (p.rank == 1 ? "; fp16 mma.sync with fp32 sums, a row and a column "
                                           "pass (rank 1), weights and the row pass's sums as "
                                           "two fp16 halves each"
                                         : "; fp16 mma.sync with fp32 sums, each weight as two "
                                           "fp16 halves")
                          : "");
    else if (p.method == IC_FAST_FFT)
        o += snprintf(
            buf + o, buflen - o,
            "  overlap-save: %d tiles of %dx%d (%dx%d valid), cuFFT R2C/C2R in batches%s\n",
            p.fft_tiles, p.fft_n, p.fft_n, p.fft_valid, p.fft_valid,
            p.fft_fused ? "; spectrum multiply inside the R2C transform (a callback cuFFT "
                          "links when the plan is made)"
                        : "");
    else if (p.method == IC_FAST_ROWS)
        o += snprintf(
            buf + o, buflen - o,
            "  %d samples x %d row%s per thread from %d-byte loads%s, no shared "
            "memory; %s\n%s",
            ring ? 8 : 16, p.rows, p.rows > 1 ? "s" : "", ring ? 8 : 16,
            p.rows > 4 ? ", taken one input row at a time" : "",
            p.rank ? (p.rank == 1 ? "separable: 1 row + 1 column pass in registers"
                                  : "separable: 2 row + 2 column passes in registers")
                   : "direct K*K sum",
            p.method == st->force
                ? ""
                : "  rows is taken wherever it applies (measured fastest there: "
                  "imgconv-bench tables F and H) but for a full sum of 3.5M samples "
                  "or more that the tensor model predicts faster and a rank-1 9x9 at 2 rows "
                  "per thread from 2M samples (sep); rows per thread and "
                  "separable or full sum by the rule table H calibrates\n");
    else
        o +=
            snprintf(buf + o, buflen - o, "  one thread per output sample (%d blocks)\n", p.blocks);
    if (o < 0 || (size_t)o >= buflen)
        return IC_OK;
    static const char *const source[] = {"built-in defaults", "measured now",
                                         "from the calibration cache"};
    snprintf(buf + o, buflen - o,
             "  model: %.3g G multiply-adds, %s of device traffic; ceilings %.0f GB/s copy, "
             "%.1f TFLOP/s fp32 (%s); predicted %s\n",
             p.fmas / 1e9, by, st->dev.copy_bps / 1e9, 2 * st->dev.fma_per_s / 1e12,
             source[st->dev.source >= 0 && st->dev.source <= 2 ? st->dev.source : 0], pr);
    o += (int)strlen(buf + o);
    if ((size_t)o + 1 < buflen)
        snprintf(buf + o, buflen - o, "  CUDA module loading: %s\n", ic_cuda_module_loading());
    return IC_OK;
}

/* ---- device-resident runs that do not wait (ic_convolve_async) ----------------------- */

/* Queues the job's methods on src's stream: src and dst are device images
 * of one layout on this state's device; nothing is synchronised and nothing
 * crosses the bus but the weights when they change (the benchmark times
 * this with CUDA events). */
static ic_status device_weights(ic_fast_state *st, const ic_job *job, const float **dw, char *err,
                                size_t errlen);

static ic_status run_async(ic_fast_state *st, const ic_job *job, char *err, size_t errlen)
{
    if (!job->dst || !job->w || job->src->memory != IC_MEM_DEVICE ||
        job->dst->memory != IC_MEM_DEVICE || job->src->layout != job->dst->layout ||
        (job->premultiply && job->src->channels != 2 && job->src->channels != 4))
        return IC_ERR_INVALID_ARG;
    if (job->src->device != st->device || job->dst->device != st->device) {
        snprintf(err, errlen, "cuda: device images on device %d/%d, the context is on device %d",
                 job->src->device, job->dst->device, st->device);
        return IC_ERR_INVALID_ARG;
    }
    ic_fast_plan p;
    ic_status s = plan_job(st, job, &p, err, errlen);
    if (s != IC_OK)
        return s;
    const float *dw = NULL;
    /* global, the full tensor sum and rows (which may fall back) read the
     * device weights (uploaded once per kernel); the rank-1 tensor passes
     * take theirs as parameters and do not need them */
    if (p.method == IC_FAST_GLOBAL || p.method == IC_FAST_ROWS || p.method == IC_FAST_TENSOR)
        if ((s = device_weights(st, job, &dw, err, errlen)) != IC_OK)
            return s;
    ic_cuda_args a;
    args_of(job, job->src->data, job->src->pitch, job->dst->data, job->dst->pitch, dw,
            st->dev.smem_optin, &a);
    a.stream = job->src->stream; /* queued after the caller's work, not waited for */
    if ((s = prepare_plan(st, &a, job, &p, err, errlen)) != IC_OK)
        return s;
    return launch_plan(st, &a, job, &p, err, errlen);
}

/* The device copy of the job's weights (the global kernel's, and the rows
 * kernels' edge outputs'), copied only when they change: a synchronous copy
 * per call would put host latency inside the caller's timed region. */
static ic_status device_weights(ic_fast_state *st, const ic_job *job, const float **dw, char *err,
                                size_t errlen)
{
    const size_t nw = (size_t)job->kw * job->kh;
    {
        if (st->dw_cap < nw) {
            (void)cudaFree(st->dw);
            free(st->dw_host);
            st->dw = NULL;
            st->dw_host = NULL;
            st->dw_cap = st->dw_n = 0;
            IC_CUDA_CHECK(cudaMalloc((void **)&st->dw, nw * sizeof(float)));
            st->dw_host = (float *)malloc(nw * sizeof(float));
            if (!st->dw_host) {
                snprintf(err, errlen, "cuda: out of memory");
                return IC_ERR_NOMEM;
            }
            st->dw_cap = nw;
        }
        if (st->dw_n != nw || memcmp(st->dw_host, job->w, nw * sizeof(float)) != 0) {
            IC_CUDA_CHECK(cudaMemcpy(st->dw, job->w, nw * sizeof(float), cudaMemcpyHostToDevice));
            memcpy(st->dw_host, job->w, nw * sizeof(float));
            st->dw_n = nw;
        }
        *dw = st->dw;
    }
    return IC_OK;
}

/* ---- many images at once (ic_convolve_batch, backend.h run_batch) ------------------ */

/* A byte range of device memory an image spans; dst marks destinations. */
struct span {
    const uint8_t *lo, *hi;
};

static int span_cmp(const void *a, const void *b)
{
    const span *x = (const span *)a, *y = (const span *)b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* 1 when a destination overlaps another image of the batch (its own source is
 * checked by the dispatcher): the image-by-image order would then matter. */
static int batch_aliases(const ic_job *jobs, int n, int *nomem)
{
    *nomem = 0;
    span *d = (span *)malloc((size_t)n * sizeof(span));
    if (!d) {
        *nomem = 1;
        return 1;
    }
    for (int i = 0; i < n; i++) {
        d[i].lo = jobs[i].dst->data;
        d[i].hi = d[i].lo + ic_image_size_bytes(jobs[i].dst);
    }
    qsort(d, (size_t)n, sizeof(span), span_cmp);
    int bad = 0;
    for (int i = 1; i < n && !bad; i++)
        bad = d[i].lo < d[i - 1].hi;
    for (int i = 0; i < n && !bad; i++) { /* sources against the sorted destinations */
        const uint8_t *lo = jobs[i].src->data, *hi = lo + ic_image_size_bytes(jobs[i].src);
        int a = 0, b = n; /* first destination ending after lo */
        while (a < b) {
            const int m = (a + b) / 2;
            if (d[m].hi <= lo)
                a = m + 1;
            else
                b = m;
        }
        bad = a < n && d[a].lo < hi; /* never its own: checked by the dispatcher */
    }
    free(d);
    return bad;
}

/* Makes jobs[0].src's stream wait for the work queued on every other stream
 * of the batch's images. */
static ic_status wait_streams(ic_fast_state *st, const ic_job *jobs, int n, char *err,
                              size_t errlen)
{
    void *const s0 = jobs[0].src->stream;
    void *last = s0;
    for (int i = 0; i < n; i++)
        for (int side = 0; side < 2; side++) {
            void *o = side ? jobs[i].dst->stream : jobs[i].src->stream;
            if (o == s0 || o == last)
                continue;
            last = o;
            if (!st->batch_ev)
                IC_CUDA_CHECK(cudaEventCreateWithFlags(&st->batch_ev, cudaEventDisableTiming));
            IC_CUDA_CHECK(cudaEventRecord(st->batch_ev, (cudaStream_t)o));
            IC_CUDA_CHECK(cudaStreamWaitEvent((cudaStream_t)s0, st->batch_ev, 0));
        }
    return IC_OK;
}

/* Plans of the sizes seen so far in a batch (the images' plans depend only on
 * their size: every other input of plan_job is shared). */
struct size_plan {
    int w, h;
    ic_fast_method method;
    int rank;
};

/* Filters a uniform batch (backend.h): each image gets its own plan, as
 * ic_convolve_async would give it; the images whose plan is rows (16-byte
 * aligned) or global/direct go into one batched launch per method
 * (batch.cu), the others (separable, FFT, premultiplied direct) are launched
 * one by one on the same stream. */
static ic_status fast_run_batch(void *state, const ic_job *jobs, int n, int *taken, int *failed,
                                char *err, size_t errlen)
{
    ic_fast_state *st = (ic_fast_state *)state;
    *taken = 0;
    *failed = -1;
    if (!st || !jobs || n <= 0)
        return IC_ERR_INVALID_ARG;
    IC_CUDA_CHECK(cudaSetDevice(st->device));
    for (int i = 0; i < n; i++)
        if (jobs[i].src->device != st->device || jobs[i].dst->device != st->device) {
            *taken = 1;
            *failed = i;
            snprintf(err, errlen,
                     "cuda: device images on device %d/%d, the context is on device %d",
                     jobs[i].src->device, jobs[i].dst->device, st->device);
            return IC_ERR_INVALID_ARG;
        }
    if (!jobs[0].w) /* a blur by its shape: declined, the loop runs each image's blur */
        return IC_OK;
    int nomem = 0;
    if (batch_aliases(jobs, n, &nomem)) {
        if (!nomem)
            return IC_OK; /* declined: the loop keeps the image-by-image order */
        snprintf(err, errlen, "cuda: out of memory");
        return IC_ERR_NOMEM;
    }
    ic_fast_batch_item *items = (ic_fast_batch_item *)malloc((size_t)n * sizeof *items);
    int *alone = (int *)malloc((size_t)n * sizeof(int)); /* launched one by one */
    enum { MEMO = 16 };
    size_plan memo[MEMO];
    int n_memo = 0, n_alone = 0, n_items = 0;
    ic_status s = IC_OK;
    if (!items || !alone) {
        snprintf(err, errlen, "cuda: out of memory");
        s = IC_ERR_NOMEM;
    }
    for (int i = 0; s == IC_OK && i < n; i++) {
        const ic_job *job = &jobs[i];
        const int w = job->src->width, h = job->src->height;
        const size_plan *sp = NULL;
        for (int m = 0; m < n_memo && m < MEMO; m++)
            if (memo[m].w == w && memo[m].h == h) {
                sp = &memo[m];
                break;
            }
        if (!sp) {
            ic_fast_plan p;
            if ((s = plan_job(st, job, &p, err, errlen)) != IC_OK) {
                *taken = 1;
                *failed = i;
                break;
            }
            size_plan *slot = &memo[n_memo++ % MEMO];
            slot->w = w;
            slot->h = h;
            slot->method = p.method;
            slot->rank = p.method == IC_FAST_ROWS ? p.rank : 0;
            sp = slot;
        }
        ic_fast_method m = sp->method;
        if (m == IC_FAST_ROWS) { /* ic_fast_rows_launch's conditions, else global */
            const int aligned = (uintptr_t)job->src->data % 16 == 0 &&
                                (uintptr_t)job->dst->data % 16 == 0 && job->src->pitch % 16 == 0 &&
                                job->dst->pitch % 16 == 0;
            if (!aligned || (sp->rank > 0 && !st->fac.row))
                m = IC_FAST_GLOBAL;
        }
        if (m == IC_FAST_DIRECT && !job->premultiply)
            m = IC_FAST_GLOBAL; /* the same sums in the same order (ic_cu_dot) */
        if (m != IC_FAST_ROWS && m != IC_FAST_GLOBAL) {
            alone[n_alone++] = i;
            continue;
        }
        ic_fast_batch_item *it = &items[n_items++];
        it->src = job->src->data;
        it->src_pitch = job->src->pitch;
        it->dst = job->dst->data;
        it->dst_pitch = job->dst->pitch;
        it->width = w;
        it->height = h;
        it->method = m;
        it->rank = m == IC_FAST_ROWS ? sp->rank : 0;
    }
    const float *dw = NULL;
    if (s == IC_OK && n_items > 0 && (s = device_weights(st, &jobs[0], &dw, err, errlen)) != IC_OK)
        *taken = 1;
    const cudaStream_t stream = (cudaStream_t)jobs[0].src->stream;
    /* a synchronous batch waits for every image's stream, as ic_convolve
     * waits for its pair's (the async one leaves that to the caller) */
    if (s == IC_OK && !jobs[0].async && (s = wait_streams(st, jobs, n, err, errlen)) != IC_OK)
        *taken = 1;
    if (s == IC_OK && n_items > 0) {
        ic_cuda_args base;
        args_of(&jobs[0], NULL, 0, NULL, 0, dw, st->dev.smem_optin, &base);
        base.stream = (void *)stream;
        int launched = 0;
        s = ic_fast_batch_launch(&st->batch, &base, jobs[0].w, st->fac.row, st->fac.col,
                                 st->dev.sms, items, n_items, &launched, err, errlen);
        *taken = launched || s != IC_OK;
        if (s == IC_OK && !launched) { /* too many blocks for one launch */
            free(items);
            free(alone);
            return IC_OK;
        }
    }
    free(items);
    /* the others, one launch (or a few) each, on the same stream */
    for (int a = 0; s == IC_OK && a < n_alone; a++) {
        ic_job one = jobs[alone[a]];
        ic_image src = *one.src;
        src.stream = (void *)stream;
        one.src = &src;
        one.async = 1;
        s = run_async(st, &one, err, errlen);
        *taken = 1;
        if (s != IC_OK)
            *failed = alone[a];
    }
    free(alone);
    if (s != IC_OK)
        return s;
    *taken = 1;
    if (!jobs[0].async) {
        const cudaError_t ce = cudaStreamSynchronize(stream);
        if (ce != cudaSuccess)
            return ic_cuda_fail(err, errlen, "cuda fast batch kernels", (int)ce);
    }
    return IC_OK;
}

/* ---- the plan as numbers (ic_plan_get) ---------------------------------------------- */

static ic_status fast_plan_hook(void *state, const ic_job *job, ic_plan *out, char *err,
                                size_t errlen)
{
    ic_fast_state *st = (ic_fast_state *)state;
    if (!st || !job || !job->src || !out)
        return IC_ERR_INVALID_ARG;
    IC_CUDA_CHECK(cudaSetDevice(st->device));
    ic_fast_plan p;
    ic_status s = plan_job(st, job, &p, err, errlen);
    if (s != IC_OK || (s = ic_cuda_plan(st->base, job, out, err, errlen)) != IC_OK)
        return s;                 /* (ic_cuda_plan: the band pipeline's part) */
    if (p.method == IC_FAST_BLUR) /* every row at once (ic_cuda_run_whole) */
        out->bands = out->band_rows = out->streams = 0;
    out->method = (ic_method)p.method; /* the same order (plan_job) */
    out->forced = st->force != IC_FAST_AUTO && p.method == st->force;
    out->rank = p.rank;
    out->kernel_rank = st->fac.rank;
    out->factor_err = p.factor_err;
    out->premultiply = job->premultiply;
    out->threads = p.threads;
    out->blocks = p.blocks;
    out->smem = p.smem;
    if (p.method == IC_FAST_DIRECT || p.method == IC_FAST_SEP || p.method == IC_FAST_TENSOR) {
        out->tile_w = IC_FAST_TW;
        out->tile_h = IC_FAST_R * p.nrg;
        out->channels_per_block = p.cb;
    }
    if (p.method == IC_FAST_ROWS)
        out->rows_per_thread = p.rows;
    if (p.method == IC_FAST_FFT) {
        out->fft_n = p.fft_n;
        out->fft_valid = p.fft_valid;
        out->fft_tiles = p.fft_tiles;
        out->fft_fused = p.fft_fused;
    }
    out->fmas = p.fmas;
    out->bytes = p.bytes;
    out->pred_ms = p.pred_ms;
    out->pred_direct_ms = p.pred_direct_ms;
    out->pred_sep_ms = p.pred_sep_ms;
    out->pred_fft_ms = p.pred_fft_ms;
    out->pred_tensor_ms = p.pred_tensor_ms;
    out->sms = st->dev.sms;
    out->copy_bps = st->dev.copy_bps;
    out->fma_per_s = st->dev.fma_per_s;
    out->ceilings = st->dev.source == IC_FAST_CEIL_MEASURED ? IC_CEILINGS_MEASURED
                    : st->dev.source == IC_FAST_CEIL_CACHED ? IC_CEILINGS_CACHED
                                                            : IC_CEILINGS_BUILTIN;
    return IC_OK;
}

extern "C" const ic_backend ic_backend_cuda = {
    "cuda",
    "CUDA fast path: direct, separable/low-rank or FFT, chosen per job by a cost model",
    1,
    1000,
    ic_cuda_probe,
    fast_open,
    fast_close,
    fast_run,
    fast_explain,
    IC_CAP_PREMULTIPLY | IC_CAP_DEVICE_IMAGES | IC_CAP_ASYNC | IC_CAP_U16 | IC_CAP_F32 |
        IC_CAP_BLUR,
    NULL, /* host_bytes: the band pipeline's pinned staging is not counted yet */
    /* seeds 001 and 002 on the device (src/exercises/conv1d_cuda.cu, matmul_cuda.cu) */
    ic__conv1d_cuda,
    ic__matmul_cuda_variants,
    ic__matmul_cuda,
    ic__cuda_device_count,
    fast_plan_hook,
    fast_run_batch,
    &ic__cuda_chain_ops,
};
