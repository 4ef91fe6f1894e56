/*
 * bench_gpu.cu - the GPU half of imgconv-bench: the device ceilings the
 * library measured (copy bandwidth, fp32 FMA rate), kernel-only timing of the
 * fast path on device-resident images through the public advanced tier
 * (ic_convolve_async, ic_plan_get, ic_tuning), and NVIDIA NPP timed the same
 * way (bench_gpu.h).
 */
#include <cuda_runtime.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_cupti.h"
#include "bench_gpu.h"

#ifdef IC_HAVE_NPP
#include <npp.h>
#endif

#define BG_MAX_BUF 64
#define BG_MAX_REPS 256

struct bg_ctx {
    ic_context *fast; /* backend `cuda`, opened with recalibrate */
    cudaEvent_t ev[2 * BG_MAX_REPS + 2];
    int nev;
    ic_image host; /* shape of the current image (data unused) */
    int nbuf;
    uint8_t *in[BG_MAX_BUF]; /* device images, pitch in_pitch */
    size_t in_pitch;
    uint8_t *out[2];
    size_t out_pitch;
    uint8_t *pad[BG_MAX_BUF]; /* NPP: image inside a halo, AoS C3 */
    size_t pad_pitch;
    int halo;
    int *spin_flag;
    double cupti_ms; /* CUPTI kernel time of the last time_runs, -1 when not measured */
#ifdef IC_HAVE_NPP
    NppStreamContext npp;
#endif
};

static int fail(char *err, size_t n, const char *what, cudaError_t e)
{
    if (err && n)
        snprintf(err, n, "%s: %s", what, cudaGetErrorString(e));
    (void)cudaGetLastError();
    return -1;
}

#define BG_CHECK(call)                                                                             \
    do {                                                                                           \
        const cudaError_t bg_e_ = (call);                                                          \
        if (bg_e_ != cudaSuccess)                                                                  \
            return fail(err, n, #call, bg_e_);                                                     \
    } while (0)

extern "C" int bg_available(char *why, size_t n)
{
    int count = 0;
    const cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess || count < 1) {
        snprintf(why, n, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        (void)cudaGetLastError();
        return 0;
    }
    return 1;
}

extern "C" int bg_has_npp(void)
{
#ifdef IC_HAVE_NPP
    return 1;
#else
    return 0;
#endif
}

static void free_images(bg_ctx *g)
{
    for (int i = 0; i < BG_MAX_BUF; i++) {
        (void)cudaFree(g->in[i]);
        (void)cudaFree(g->pad[i]);
        g->in[i] = g->pad[i] = NULL;
    }
    for (int i = 0; i < 2; i++) {
        (void)cudaFree(g->out[i]);
        g->out[i] = NULL;
    }
    g->nbuf = 0;
}

extern "C" void bg_close(bg_ctx *g)
{
    if (!g)
        return;
    free_images(g);
    for (int i = 0; i < g->nev; i++)
        (void)cudaEventDestroy(g->ev[i]);
    (void)cudaFree(g->spin_flag);
    ic_context_free(g->fast);
    free(g);
}

extern "C" bg_ctx *bg_open(char *err, size_t n)
{
    bg_ctx *g = (bg_ctx *)calloc(1, sizeof *g);
    if (!g) {
        snprintf(err, n, "out of memory");
        return NULL;
    }
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.recalibrate = 1; /* the ceilings of this run, not the cache's */
    if (ic_context_create(&g->fast, "cuda", &o) != IC_OK) {
        snprintf(err, n, "%s", ic_last_error());
        free(g);
        return NULL;
    }
    for (; g->nev < 2 * BG_MAX_REPS + 2; g->nev++)
        if (cudaEventCreate(&g->ev[g->nev]) != cudaSuccess) {
            fail(err, n, "cudaEventCreate", cudaGetLastError());
            bg_close(g);
            return NULL;
        }
    if (cudaMalloc((void **)&g->spin_flag, sizeof(int)) != cudaSuccess) {
        fail(err, n, "cudaMalloc", cudaGetLastError());
        bg_close(g);
        return NULL;
    }
#ifdef IC_HAVE_NPP
    cudaDeviceProp p;
    int dev = 0;
    cudaGetDevice(&dev);
    cudaGetDeviceProperties(&p, dev);
    memset(&g->npp, 0, sizeof g->npp);
    g->npp.hStream = 0;
    g->npp.nCudaDeviceId = dev;
    g->npp.nMultiProcessorCount = p.multiProcessorCount;
    g->npp.nMaxThreadsPerMultiProcessor = p.maxThreadsPerMultiProcessor;
    g->npp.nMaxThreadsPerBlock = p.maxThreadsPerBlock;
    g->npp.nSharedMemPerBlock = p.sharedMemPerBlock;
    g->npp.nCudaDevAttrComputeCapabilityMajor = p.major;
    g->npp.nCudaDevAttrComputeCapabilityMinor = p.minor;
    unsigned flags = 0;
    cudaStreamGetFlags(0, &flags);
    g->npp.nStreamFlags = flags;
#endif
    return g;
}

extern "C" void bg_describe(bg_ctx *g, char *buf, size_t n)
{
    (void)g;
    int dev = 0, drv = 0, rt = 0;
    cudaDeviceProp p;
    cudaGetDevice(&dev);
    if (cudaGetDeviceProperties(&p, dev) != cudaSuccess) {
        snprintf(buf, n, "unknown device");
        return;
    }
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    snprintf(buf, n, "%s (sm_%d%d, %d SMs, %.0f MB L2, %.1f GB), driver %d.%d, runtime %d.%d",
             p.name, p.major, p.minor, p.multiProcessorCount, p.l2CacheSize / 1048576.0,
             p.totalGlobalMem / 1073741824.0, drv / 1000, (drv % 1000) / 10, rt / 1000,
             (rt % 1000) / 10);
}

/* ---- timing ------------------------------------------------------------------- */

/* Keeps the GPU busy for about `cycles` clocks so that the host can queue the
 * timed runs behind it. */
__global__ void bg_spin(long long cycles, int *flag)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *flag = 1;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

typedef int (*bg_run_fn)(bg_ctx *g, int i, void *arg, char *err, size_t n);

static int time_runs_spin(bg_ctx *g, bg_run_fn fn, void *arg, int reps, long long spin,
                          double *med_ms, char *err, size_t n);

/* Median kernel time of reps runs of fn (warm-up excluded). */
static int time_runs(bg_ctx *g, bg_run_fn fn, void *arg, int reps, double *med_ms, char *err,
                     size_t n)
{
    return time_runs_spin(g, fn, arg, reps, 4000000LL /* ~2 ms */, med_ms, err, n);
}

/* time_runs with a spin of `spin` clocks: long enough for the host to queue
 * every run behind it. */
static int time_runs_spin(bg_ctx *g, bg_run_fn fn, void *arg, int reps, long long spin,
                          double *med_ms, char *err, size_t n)
{
    g->cupti_ms = -1;
    if (reps > BG_MAX_REPS)
        reps = BG_MAX_REPS;
    if (reps < 1)
        reps = 1;
    for (int i = 0; i < 3; i++)
        if (fn(g, i, arg, err, n))
            return -1;
    BG_CHECK(cudaDeviceSynchronize());
    bg_spin<<<1, 32>>>(spin, g->spin_flag);
    BG_CHECK(cudaGetLastError());
    for (int i = 0; i < reps; i++) {
        BG_CHECK(cudaEventRecord(g->ev[2 * i], 0));
        if (fn(g, i, arg, err, n))
            return -1;
        BG_CHECK(cudaEventRecord(g->ev[2 * i + 1], 0));
    }
    BG_CHECK(cudaDeviceSynchronize());
    double t[BG_MAX_REPS];
    for (int i = 0; i < reps; i++) {
        float ms = 0;
        BG_CHECK(cudaEventElapsedTime(&ms, g->ev[2 * i], g->ev[2 * i + 1]));
        t[i] = ms;
    }
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *med_ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    /* The same runs again with their kernels timed by CUPTI (bench_cupti.h). */
    if (bc_active()) {
        for (int i = 0; i < reps; i++) {
            bc_begin((unsigned)i + 1);
            const int r = fn(g, i, arg, err, n);
            const cudaError_t e = cudaDeviceSynchronize();
            bc_end();
            if (r)
                return -1;
            if (e != cudaSuccess)
                return fail(err, n, "cudaDeviceSynchronize", e);
        }
        double c[BG_MAX_REPS];
        if (bc_collect(c, reps) >= reps) {
            qsort(c, (size_t)reps, sizeof c[0], cmp_double);
            g->cupti_ms = reps % 2 ? c[reps / 2] : 0.5 * (c[reps / 2 - 1] + c[reps / 2]);
        }
    }
    return 0;
}

extern "C" double bg_cupti_ms(const bg_ctx *g)
{
    return g->cupti_ms;
}

/* ---- ceilings ----------------------------------------------------------------- */

extern "C" int bg_ceilings(bg_ctx *g, double *copy_bps, double *fma_per_s)
{
    /* the first plan of the context measures them (recalibrate) */
    ic_image img;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    ic_plan plan;
    memset(&plan, 0, sizeof plan);
    ic_status s = ic_image_create(&img, 64, 64, 1, IC_AOS);
    if (s == IC_OK)
        s = ic_kernel_parse(&k, "box:3");
    if (s == IC_OK)
        s = ic_plan_get(g->fast, &img, &k, NULL, &plan);
    ic_image_free(&img);
    ic_kernel_free(&k);
    if (s != IC_OK || plan.ceilings != IC_CEILINGS_MEASURED)
        return -1;
    *copy_bps = plan.copy_bps;
    *fma_per_s = plan.fma_per_s;
    return 0;
}

/* ---- images -------------------------------------------------------------------- */

/* Rows of samples of an image in memory (every plane's, for SoA). */
static size_t sample_rows(const ic_image *img)
{
    return (size_t)img->height * (img->layout == IC_SOA ? (size_t)img->channels : 1);
}

extern "C" int bg_set_image(bg_ctx *g, const ic_image *img, int halo, char *err, size_t n)
{
    free_images(g);
    g->host = *img;
    const size_t rowb = ic_image_row_bytes(img);
    const size_t rows = sample_rows(img);
    const size_t bytes = rowb * rows;
    int nbuf = (int)((150u << 20) / (bytes ? bytes : 1)) + 1;
    if (nbuf < 3)
        nbuf = 3;
    if (nbuf > BG_MAX_BUF)
        nbuf = BG_MAX_BUF;
    g->nbuf = nbuf;
    for (int i = 0; i < nbuf; i++) {
        BG_CHECK(cudaMallocPitch((void **)&g->in[i], &g->in_pitch, rowb, rows));
        BG_CHECK(cudaMemcpy2D(g->in[i], g->in_pitch, img->data, img->pitch, rowb, rows,
                              cudaMemcpyHostToDevice));
    }
    for (int i = 0; i < 2; i++) {
        BG_CHECK(cudaMallocPitch((void **)&g->out[i], &g->out_pitch, rowb, rows));
        BG_CHECK(cudaMemset2D(g->out[i], g->out_pitch, 0, rowb, rows));
    }
    g->halo = 0;
#ifdef IC_HAVE_NPP
    if (halo > 0 && img->layout == IC_AOS && img->channels == 3) {
        const size_t prow = (size_t)(img->width + 2 * halo) * 3, prows = img->height + 2 * halo;
        for (int i = 0; i < nbuf; i++) {
            BG_CHECK(cudaMallocPitch((void **)&g->pad[i], &g->pad_pitch, prow, prows));
            BG_CHECK(cudaMemset2D(g->pad[i], g->pad_pitch, 128, prow, prows));
            BG_CHECK(cudaMemcpy2D(g->pad[i] + halo * g->pad_pitch + halo * 3, g->pad_pitch,
                                  img->data, img->pitch, rowb, img->height,
                                  cudaMemcpyHostToDevice));
        }
        g->halo = halo;
    }
#else
    (void)halo;
#endif
    BG_CHECK(cudaDeviceSynchronize());
    return 0;
}

/* ---- what any kernel costs: launch and copy floors ---------------------------------- */

__global__ void bg_empty(void)
{
}

static int run_empty(bg_ctx *, int, void *, char *err, size_t n)
{
    bg_empty<<<1, 32>>>();
    BG_CHECK(cudaGetLastError());
    return 0;
}

/* The current image's bytes device to device (in -> out), as a filter must at
 * least read and write them. */
static int run_copy(bg_ctx *g, int i, void *, char *err, size_t n)
{
    BG_CHECK(cudaMemcpy2DAsync(g->out[i % 2], g->out_pitch, g->in[i % g->nbuf], g->in_pitch,
                               ic_image_row_bytes(&g->host), sample_rows(&g->host),
                               cudaMemcpyDeviceToDevice, 0));
    return 0;
}

extern "C" int bg_time_floors(bg_ctx *g, int reps, double *empty_ms, double *copy_ms, char *err,
                              size_t n)
{
    if (time_runs(g, run_empty, NULL, reps, empty_ms, err, n))
        return -1;
    return time_runs(g, run_copy, NULL, reps, copy_ms, err, n);
}

/* ---- the fast path ---------------------------------------------------------------- */

struct fast_arg {
    ic_image src, dst; /* device images; data set per run */
    const ic_kernel *k;
    ic_params p;
    ic_context *ctx;
};

static int run_fast(bg_ctx *g, int i, void *arg, char *err, size_t n)
{
    fast_arg *f = (fast_arg *)arg;
    f->src.data = g->in[i % g->nbuf];
    f->dst.data = g->out[i % 2];
    if (ic_convolve_async(f->ctx, &f->src, &f->dst, f->k, &f->p) != IC_OK) {
        snprintf(err, n, "%s", ic_last_error());
        return -1;
    }
    return 0;
}

extern "C" int bg_time_fast(bg_ctx *g, const ic_kernel *k, ic_border border, int reps,
                            const ic_tuning *tune, double *med_ms, ic_plan *plan, char *err,
                            size_t n)
{
    return bg_time_fast_alpha(g, k, border, 0, reps, tune, med_ms, plan, err, n);
}

extern "C" int bg_time_fast_alpha(bg_ctx *g, const ic_kernel *k, ic_border border, int premultiply,
                                  int reps, const ic_tuning *tune, double *med_ms, ic_plan *plan,
                                  char *err, size_t n)
{
    fast_arg f;
    memset(&f, 0, sizeof f);
    int dev = 0;
    cudaGetDevice(&dev);
    const ic_image *h = &g->host;
    if (ic_image_wrap_device(&f.src, g->in[0], h->width, h->height, h->channels, h->layout,
                             g->in_pitch, dev, NULL) != IC_OK ||
        ic_image_wrap_device(&f.dst, g->out[0], h->width, h->height, h->channels, h->layout,
                             g->out_pitch, dev, NULL) != IC_OK) {
        snprintf(err, n, "%s", ic_last_error());
        return -1;
    }
    f.k = k;
    f.ctx = g->fast;
    ic_params_default(&f.p);
    f.p.border = border;
    f.p.correlate = 1; /* NPP and the tables time the correlation */
    f.p.alpha = premultiply ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_INDEPENDENT;
    if (ic_context_set_tuning(g->fast, tune) != IC_OK) {
        snprintf(err, n, "%s", ic_last_error());
        return -1;
    }
    /* a forced method the planner cannot take is not timed: every table
     * that forces one shows "-" for it, and the planner's own pick ran in
     * its place (the rows table's shapes on its 12 kernels above 9x9, F's sep
     * on full-rank kernels) */
    if (tune && tune->method != IC_METHOD_AUTO) {
        ic_plan pre;
        int r = ic_plan_get(g->fast, &f.src, k, &f.p, &pre) == IC_OK ? 0 : -1;
        if (r)
            snprintf(err, n, "%s", ic_last_error());
        else if (!pre.forced) {
            snprintf(err, n, "forced method %s not taken (plan: %s)", ic_method_name(tune->method),
                     ic_method_name(pre.method));
            if (plan)
                *plan = pre;
            r = 1;
        }
        if (r) {
            (void)ic_context_set_tuning(g->fast, NULL);
            return r;
        }
    }
    int r = time_runs(g, run_fast, &f, reps, med_ms, err, n);
    if (r == 0 && plan && ic_plan_get(g->fast, &f.src, k, &f.p, plan) != IC_OK) {
        snprintf(err, n, "%s", ic_last_error());
        r = -1;
    }
    (void)ic_context_set_tuning(g->fast, NULL);
    return r;
}

/* ---- many images ------------------------------------------------------ */

struct batch_arg {
    int n, sets;
    ic_image *src; /* sets x n device images */
    ic_image *dst; /* n device images */
    const ic_kernel *k;
    ic_params p;
    ic_context *ctx;
    int batched;
};

static int run_batch(bg_ctx *, int i, void *arg, char *err, size_t n)
{
    batch_arg *b = (batch_arg *)arg;
    const ic_image *src = b->src + (size_t)(i % b->sets) * b->n;
    if (b->batched) {
        if (ic_convolve_batch_async(b->ctx, b->n, src, b->dst, b->k, &b->p) != IC_OK) {
            snprintf(err, n, "%s", ic_last_error());
            return -1;
        }
        return 0;
    }
    for (int j = 0; j < b->n; j++)
        if (ic_convolve_async(b->ctx, &src[j], &b->dst[j], b->k, &b->p) != IC_OK) {
            snprintf(err, n, "%s", ic_last_error());
            return -1;
        }
    return 0;
}

extern "C" int bg_time_batch(bg_ctx *g, const ic_kernel *k, int nimg, const int *w, const int *h,
                             int channels, int reps, double *batched_ms, double *single_ms,
                             char *err, size_t n)
{
    int dev = 0;
    cudaGetDevice(&dev);
    size_t bytes = 0; /* one set of inputs */
    for (int i = 0; i < nimg; i++)
        bytes += (size_t)w[i] * h[i] * channels;
    int sets = (int)((150u << 20) / (bytes ? bytes : 1)) + 1; /* inputs not in L2 */
    if (sets < 2)
        sets = 2;
    if (sets > 16)
        sets = 16;
    batch_arg b;
    memset(&b, 0, sizeof b);
    b.n = nimg;
    b.sets = sets;
    b.k = k;
    b.ctx = g->fast;
    ic_params_default(&b.p);
    b.p.border = IC_BORDER_REPLICATE;
    b.p.correlate = 1;
    b.p.alpha = IC_ALPHA_INDEPENDENT;
    b.src = (ic_image *)calloc((size_t)sets * nimg, sizeof(ic_image));
    b.dst = (ic_image *)calloc((size_t)nimg, sizeof(ic_image));
    int r = -1;
    if (!b.src || !b.dst) {
        snprintf(err, n, "out of memory");
        goto done;
    }
    for (int s = 0; s <= sets; s++)
        for (int i = 0; i < nimg; i++) {
            ic_image *im = s < sets ? &b.src[(size_t)s * nimg + i] : &b.dst[i];
            const size_t row = (size_t)w[i] * channels;
            size_t pitch = 0;
            void *p = NULL;
            if (cudaMallocPitch(&p, &pitch, row, (size_t)h[i]) != cudaSuccess) {
                fail(err, n, "cudaMallocPitch", cudaGetLastError());
                goto done;
            }
            ic_image_wrap_device(im, p, w[i], h[i], channels, IC_AOS, pitch, dev, NULL);
            /* a gradient with some texture: content does not change the time */
            if (cudaMemset2D(p, pitch, (s * 37 + i * 11) & 0xff, row, (size_t)h[i]) !=
                cudaSuccess) {
                fail(err, n, "cudaMemset2D", cudaGetLastError());
                goto done;
            }
        }
    if (cudaDeviceSynchronize() != cudaSuccess) {
        fail(err, n, "cudaDeviceSynchronize", cudaGetLastError());
        goto done;
    }
    /* the host queues n launches per run in the single case: a spin of
     * ~10 us per launch keeps those gaps out of the events */
    b.batched = 1;
    r = time_runs_spin(g, run_batch, &b, reps, 4000000LL + 20000LL * nimg * reps / 4, batched_ms,
                       err, n);
    b.batched = 0;
    if (r == 0)
        r = time_runs_spin(g, run_batch, &b, reps, 4000000LL + 20000LL * nimg * reps, single_ms,
                           err, n);
done:
    for (int s = 0; b.src && s < sets; s++)
        for (int i = 0; i < nimg; i++)
            (void)cudaFree(b.src[(size_t)s * nimg + i].data);
    for (int i = 0; b.dst && i < nimg; i++)
        (void)cudaFree(b.dst[i].data);
    (void)cudaGetLastError();
    free(b.src);
    free(b.dst);
    return r;
}

/* ---- NPP ---------------------------------------------------------------------------- */

#ifdef IC_HAVE_NPP
struct npp_arg {
    float *dk; /* device kernel, reversed */
    int ksize_w, ksize_h;
    NppiMaskSize mask;
};

static int npp_fail(char *err, size_t n, const char *what, NppStatus s)
{
    snprintf(err, n, "%s: NPP status %d", what, (int)s);
    return -1;
}

static int run_npp_filter(bg_ctx *g, int i, void *arg, char *err, size_t n)
{
    npp_arg *a = (npp_arg *)arg;
    const int b = i % g->nbuf;
    const Npp8u *src = g->pad[b] + (size_t)g->halo * g->pad_pitch + (size_t)g->halo * 3;
    NppiSize roi = {g->host.width, g->host.height};
    NppiSize ks = {a->ksize_w, a->ksize_h};
    NppiPoint anchor = {a->ksize_w / 2, a->ksize_h / 2};
    const NppStatus s = nppiFilter32f_8u_C3R_Ctx(src, (int)g->pad_pitch, g->out[i % 2],
                                                 (int)g->out_pitch, roi, a->dk, ks, anchor, g->npp);
    if (s < 0)
        return npp_fail(err, n, "nppiFilter32f_8u_C3R_Ctx", s);
    return 0;
}

static int run_npp_gauss(bg_ctx *g, int i, void *arg, char *err, size_t n)
{
    npp_arg *a = (npp_arg *)arg;
    NppiSize size = {g->host.width, g->host.height};
    NppiPoint off = {0, 0};
    const NppStatus s = nppiFilterGaussBorder_8u_C3R_Ctx(
        g->in[i % g->nbuf], (int)g->in_pitch, size, off, g->out[i % 2], (int)g->out_pitch, size,
        a->mask, NPP_BORDER_REPLICATE, g->npp);
    if (s < 0)
        return npp_fail(err, n, "nppiFilterGaussBorder_8u_C3R_Ctx", s);
    return 0;
}
#endif

extern "C" int bg_time_npp_filter(bg_ctx *g, const ic_kernel *k, int reps, double *med_ms,
                                  char *err, size_t n)
{
#ifdef IC_HAVE_NPP
    if (!g->halo || k->width / 2 > g->halo || k->height / 2 > g->halo) {
        snprintf(err, n, "no padded RGB image for NPP");
        return -1;
    }
    const int nw = k->width * k->height;
    float *h = (float *)malloc((size_t)nw * sizeof(float));
    if (!h) {
        snprintf(err, n, "out of memory");
        return -1;
    }
    for (int i = 0; i < nw; i++) /* NPP expects the coefficients in reverse order */
        h[nw - 1 - i] = (float)(k->coef[i] / k->divisor);
    npp_arg a;
    memset(&a, 0, sizeof a);
    a.ksize_w = k->width;
    a.ksize_h = k->height;
    if (cudaMalloc((void **)&a.dk, (size_t)nw * sizeof(float)) != cudaSuccess ||
        cudaMemcpy(a.dk, h, (size_t)nw * sizeof(float), cudaMemcpyHostToDevice) != cudaSuccess) {
        free(h);
        (void)cudaFree(a.dk);
        return fail(err, n, "cudaMalloc/cudaMemcpy(NPP kernel)", cudaGetLastError());
    }
    free(h);
    const int r = time_runs(g, run_npp_filter, &a, reps, med_ms, err, n);
    (void)cudaFree(a.dk);
    return r;
#else
    (void)g, (void)k, (void)reps, (void)med_ms;
    snprintf(err, n, "built without NPP");
    return -1;
#endif
}

extern "C" int bg_time_npp_gauss(bg_ctx *g, int ksize, int reps, double *med_ms, char *err,
                                 size_t n)
{
#ifdef IC_HAVE_NPP
    npp_arg a;
    memset(&a, 0, sizeof a);
    switch (ksize) {
    case 3:
        a.mask = NPP_MASK_SIZE_3_X_3;
        break;
    case 5:
        a.mask = NPP_MASK_SIZE_5_X_5;
        break;
    case 7:
        a.mask = NPP_MASK_SIZE_7_X_7;
        break;
    case 9:
        a.mask = NPP_MASK_SIZE_9_X_9;
        break;
    case 11:
        a.mask = NPP_MASK_SIZE_11_X_11;
        break;
    case 13:
        a.mask = NPP_MASK_SIZE_13_X_13;
        break;
    case 15:
        a.mask = NPP_MASK_SIZE_15_X_15;
        break;
    default:
        snprintf(err, n, "NPP Gauss has no %dx%d mask", ksize, ksize);
        return -1;
    }
    if (g->host.layout != IC_AOS || g->host.channels != 3) {
        snprintf(err, n, "NPP Gauss timed on AoS RGB only");
        return -1;
    }
    return time_runs(g, run_npp_gauss, &a, reps, med_ms, err, n);
#else
    (void)g, (void)ksize, (void)reps, (void)med_ms;
    snprintf(err, n, "built without NPP");
    return -1;
#endif
}
