/*
 * context.c - ic_context and ic_convolve: validates a request, prepares the
 * correlation weights (kernel flipped for convolution, divisor folded in),
 * resolves the alpha mode and hands ic_job values to the chosen backend (or,
 * with ic_context_options.n_devices >= 2 and a GPU backend, to one state per
 * device: multi.c).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/error.h"
#include "dispatch/backend.h"
#include "dispatch/dispatch.h"
#include "dispatch/multi.h"

struct ic_context {
    const ic_backend *be;
    void *state;
    ic_multi *multi;         /* instead of state: an image split across several devices */
    ic_context_options opts; /* opts.tuning points at tuning */
    ic_tuning tuning;        /* what every job carries (ic_context_set_tuning) */
    ic_timing timing;
    int is_auto;          /* created as "auto": a kernel be cannot run goes to cpu */
    ic_context *fallback; /* that cpu context, made on first use */
};

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static ic_status context_create(ic_context **ctx, const char *name, const ic_context_options *opts,
                                int is_auto, char *errbuf, size_t errlen)
{
    if (!ctx)
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no context pointer (NULL)");
    *ctx = NULL;
    if (!name || strcmp(name, "auto") == 0) {
        name = ic_backend_auto();
        is_auto = 1;
    }
    int usable = 0;
    const char *why = "";
    const ic_backend *be = ic__backend_find(name, &usable, &why);
    if (!be) {
        return ic_errf(errbuf, errlen, IC_ERR_NO_BACKEND,
                       "unknown backend '%s' (see --list-backends)", name);
    }
    if (!usable) {
        return ic_errf(errbuf, errlen, IC_ERR_NO_BACKEND, "backend '%s' is not usable here: %s",
                       name, why);
    }
    ic_context *c = calloc(1, sizeof *c);
    if (!c) {
        return ic_errf(errbuf, errlen, IC_ERR_NOMEM, "out of memory");
    }
    c->be = be;
    c->is_auto = is_auto && strcmp(be->name, "cpu") != 0;
    if (opts)
        c->opts = *opts;
    if (c->opts.tuning) {
        const ic_status ts = ic__tuning_check(c->opts.tuning);
        if (ts != IC_OK) {
            free(c);
            return ic_errf(errbuf, errlen, ts, "%s", ic_last_error());
        }
        c->tuning = *c->opts.tuning;
    }
    c->opts.tuning = &c->tuning;
    if (c->opts.max_memory == 0)
        c->opts.max_memory = ic_max_memory_default();
    if (c->opts.threads < 0 || c->opts.device < 0) {
        free(c);
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "negative thread count or device number");
    }
    const int nd = c->opts.n_devices;
    if (nd < 0 || nd > IC_MAX_DEVICES) {
        free(c);
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "device count %d outside 0..%d", nd,
                       IC_MAX_DEVICES);
    }
    for (int i = 0; i < nd; i++)
        if (c->opts.devices[i] < 0) {
            const int bad = c->opts.devices[i];
            free(c);
            return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                           "negative device number %d in the device list", bad);
        }
    if (nd == 1) { /* one device: the listed one */
        c->opts.device = c->opts.devices[0];
        c->opts.n_devices = 0;
    }
    if (nd >= 2 && be->is_gpu) {
        ic_status st = ic__multi_open(&c->multi, be, &c->opts, errbuf, errlen);
        if (st != IC_OK) {
            free(c);
            return st;
        }
    } else if (be->open) {
        ic_status st = be->open(&c->state, &c->opts, errbuf, errlen);
        if (st != IC_OK) {
            free(c);
            return st;
        }
    }
    *ctx = c;
    return IC_OK;
}

ic_status ic_context_create(ic_context **ctx, const char *name, const ic_context_options *opts)
{
    char err[256] = "";
    return ic_fail_msg(context_create(ctx, name, opts, 0, err, sizeof err), err);
}

ic_status ic__context_create_auto(ic_context **ctx, const char *name,
                                  const ic_context_options *opts)
{
    char err[256] = "";
    return ic_fail_msg(context_create(ctx, name, opts, 1, err, sizeof err), err);
}

void ic_context_free(ic_context *ctx)
{
    if (!ctx)
        return;
    ic_context_free(ctx->fallback);
    if (ctx->multi)
        ic__multi_close(ctx->multi);
    else if (ctx->be->close)
        ctx->be->close(ctx->state);
    free(ctx);
}

const char *ic_context_backend(const ic_context *ctx)
{
    return ctx ? ctx->be->name : "";
}

ic_status ic__context_device(const ic_context *ctx, int *device, const char **why)
{
    *why = "";
    if (!ctx)
        return IC_ERR_INVALID_ARG;
    if (!ctx->be->is_gpu) {
        *why = "the context's backend is not a CUDA one";
        return IC_ERR_UNSUPPORTED;
    }
    if (ctx->multi) {
        *why = "the context is split across several devices";
        return IC_ERR_UNSUPPORTED;
    }
    *device = ctx->opts.device;
    return IC_OK;
}

const ic_context_options *ic__context_options(const ic_context *ctx)
{
    return &ctx->opts;
}

void ic__context_set_timing(ic_context *ctx, const ic_timing *t)
{
    ctx->timing = *t;
}

ic_timing ic_context_timing(const ic_context *ctx)
{
    ic_timing t = {0, 0, 0, 0};
    return ctx ? ctx->timing : t;
}

static int kernel_valid(const ic_kernel *k)
{
    /* a blur past IC_MAX_KERNEL has no coefficients, only its shape */
    const int max = k && !k->coef && k->blur ? IC_MAX_BLUR : IC_MAX_KERNEL;
    return k && (k->coef || k->blur) && k->width >= 1 && k->height >= 1 && (k->width & 1) &&
           (k->height & 1) && k->width <= max && k->height <= max && isfinite(k->divisor) &&
           k->divisor != 0.0;
}

/* A blur without coefficients runs only on backends with a blur path. */
static ic_status kernel_runs(const ic_context *ctx, const ic_kernel *k, char *err, size_t errlen)
{
    if (k->coef || ((ctx->be->caps & IC_CAP_BLUR) && !ctx->multi))
        return IC_OK;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                   "%s is %dx%d; backend %s%s filters kernels up to %d (use backend cpu)", k->name,
                   k->width, k->height, ctx->be->name, ctx->multi ? " on several devices" : "",
                   IC_MAX_KERNEL);
}

/* The cpu context an `auto` context hands a host job whose kernel its own
 * backend cannot run (a blur past IC_MAX_KERNEL on a backend without
 * IC_CAP_BLUR), made on first use; NULL when the job stays where it is. */
static ic_context *auto_fallback(ic_context *ctx, const ic_image *src, const ic_image *dst,
                                 const ic_kernel *k)
{
    char why[256];
    if (!ctx->is_auto || !k || !src || src->memory != IC_MEM_HOST ||
        (dst && dst->memory != IC_MEM_HOST) || kernel_runs(ctx, k, why, sizeof why) == IC_OK)
        return NULL;
    if (!ctx->fallback) {
        ic_context_options o = ctx->opts;
        o.n_devices = 0; /* the cpu backend has no devices to split over */
        if (context_create(&ctx->fallback, "cpu", &o, 0, why, sizeof why) != IC_OK)
            return NULL; /* the job then fails with kernel_runs' reason */
    }
    ctx->fallback->tuning = ctx->tuning;
    return ctx->fallback;
}

static int image_valid(const ic_image *im)
{
    return im && im->data && im->width >= 1 && im->height >= 1 && im->channels >= 1 &&
           im->channels <= 4 && (im->layout == IC_AOS || im->layout == IC_SOA) &&
           (im->type == IC_U8 || im->type == IC_U16 || im->type == IC_F32) &&
           im->pitch >= ic_image_row_bytes(im) &&
           (im->memory == IC_MEM_HOST || (im->memory == IC_MEM_DEVICE && im->device >= 0));
}

/* The byte ranges [lo, hi) two images span; used to refuse overlapping buffers.
 * Host and device addresses (or two devices' addresses) are different spaces. */
static int images_overlap(const ic_image *a, const ic_image *b)
{
    if (a->memory != b->memory || (a->memory == IC_MEM_DEVICE && a->device != b->device))
        return 0;
    const uint8_t *a0 = a->data, *a1 = a->data + ic_image_size_bytes(a);
    const uint8_t *b0 = b->data, *b1 = b->data + ic_image_size_bytes(b);
    return a0 < b1 && b0 < a1;
}

static void copy_alpha(ic_image *dst, const ic_image *src)
{
    const int a = src->channels - 1;
    const size_t es = ic_sample_size(src->type);
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++)
            memcpy(ic_image_at(dst, x, y, a), ic_image_at(src, x, y, a), es);
}

/* Correlation weights of k under p (divisor folded in, flipped unless
 * correlating), also described as an ic_kernel with divisor 1 in *wk.
 * Returns the malloc'd weights (owned by the caller) or NULL. */
static float *prepare_weights(const ic_kernel *k, const ic_params *p, ic_kernel *wk, double *sum)
{
    const int kw = k->width, kh = k->height;
    if (!k->coef) { /* a blur by its shape (symmetric: no flip); the job gets w NULL */
        *wk = *k;
        *sum = 1.0;
        return malloc(sizeof(float));
    }
    float *w = malloc((size_t)kw * (size_t)kh * sizeof *w);
    if (!w)
        return NULL;
    *sum = 0;
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            double v = (double)k->coef[(size_t)j * kw + i] / k->divisor;
            *sum += v;
            int di = p->correlate ? i : kw - 1 - i, dj = p->correlate ? j : kh - 1 - j;
            w[(size_t)dj * kw + di] = (float)v;
        }
    memset(wk, 0, sizeof *wk);
    wk->width = kw;
    wk->height = kh;
    wk->coef = w;
    wk->divisor = 1.0;
    snprintf(wk->name, sizeof wk->name, "%s", k->name);
    wk->blur = k->blur; /* Gaussians and boxes are symmetric: the flip keeps them */
    wk->sigma_x = k->sigma_x;
    wk->sigma_y = k->sigma_y;
    return w;
}

/* Bytes ic_image_create takes for src's shape in `layout` (rows padded to 64). */
static uint64_t created_bytes(const ic_image *src, ic_layout layout)
{
    const uint64_t w = (uint64_t)src->width * ic_sample_size(src->type), h = (uint64_t)src->height,
                   c = (uint64_t)src->channels;
    if (layout == IC_SOA)
        return ((w + 63u) & ~(uint64_t)63u) * h * c;
    return ((w * c + 63u) & ~(uint64_t)63u) * h;
}

/* ic_convolve_bytes with the destination's bytes known (0 for device memory). */
static uint64_t need_bytes(const ic_context *ctx, const ic_image *src, uint64_t dst_bytes,
                           ic_layout dst_layout, int kw, int kh)
{
    uint64_t n = dst_bytes;
    if (src->memory == IC_MEM_HOST)
        n += ic_image_size_bytes(src);
    if (dst_layout != src->layout)
        n += created_bytes(src, src->layout);
    if (ctx->be->host_bytes) {
        ic_job job;
        memset(&job, 0, sizeof job);
        job.src = src;
        job.kw = kw;
        job.kh = kh;
        n += ctx->be->host_bytes(&job);
    }
    return n;
}

uint64_t ic_convolve_bytes(const ic_context *ctx, const ic_image *src, const ic_kernel *k,
                           ic_layout dst_layout)
{
    if (!ctx || !image_valid(src) || !kernel_valid(k))
        return 0;
    return need_bytes(ctx, src, created_bytes(src, dst_layout), dst_layout, k->width, k->height);
}

static double mib(uint64_t bytes)
{
    return (double)bytes / (1024.0 * 1024.0);
}

/* The alpha mode a job of this image and request gets (AUTO resolved by the
 * weights' sum; 1- and 3-channel images have no alpha). */
static ic_alpha effective_alpha(const ic_image *src, const ic_params *p, double sum)
{
    if (src->channels != 2 && src->channels != 4)
        return IC_ALPHA_INDEPENDENT;
    if (p->alpha == IC_ALPHA_AUTO)
        return fabs(sum - 1.0) < 1e-6 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_KEEP;
    return p->alpha;
}

/* 1 when the context's backend filters samples of `type`; else 0 and one line
 * in err. */
static int type_supported(const ic_context *ctx, ic_sample_type type, char *err, size_t errlen)
{
    if (type == IC_U16 && !(ctx->be->caps & IC_CAP_U16)) {
        ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                "backend %s does not filter 16-bit samples (use cpu or seq)", ctx->be->name);
        return 0;
    }
    if (type == IC_F32 && !(ctx->be->caps & IC_CAP_F32)) {
        ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                "backend %s does not filter float32 samples (use cpu or seq)", ctx->be->name);
        return 0;
    }
    return 1;
}

/* Every check ic_convolve makes before it prepares anything (p not NULL):
 * one line in err on failure. Shared with ic_convolve_batch, which prefixes
 * the image's index. */
static ic_status check_pair(const ic_context *ctx, const ic_image *src, const ic_image *dst,
                            const ic_kernel *k, const ic_params *p, char *err, size_t errlen)
{
    if (!image_valid(src) || !image_valid(dst))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "invalid source or destination image");
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "destination size or channels differ from the source");
    if (src->type != dst->type)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "source and destination sample types differ");
    if (!type_supported(ctx, src->type, err, errlen))
        return IC_ERR_UNSUPPORTED;
    if ((src->memory != IC_MEM_HOST || dst->memory != IC_MEM_HOST) &&
        !(ctx->be->caps & IC_CAP_DEVICE_IMAGES)) {
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "backend %s cannot read or write device memory (use a CUDA backend)",
                       ctx->be->name);
    }
    /* Device images: nothing below may read or write them from the host. */
    const int on_device = src->memory == IC_MEM_DEVICE || dst->memory == IC_MEM_DEVICE;
    if (on_device && ctx->multi)
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "device images cannot be split across several devices (use one device)");
    if (images_overlap(src, dst))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "source and destination overlap");
    if (!kernel_valid(k))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "invalid kernel");
    const ic_status ks = kernel_runs(ctx, k, err, errlen);
    if (ks != IC_OK)
        return ks;
    if ((unsigned)p->border > IC_BORDER_WRAP || (unsigned)p->alpha > IC_ALPHA_INDEPENDENT ||
        !isfinite(p->border_value) || !isfinite(p->bias))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "invalid border, alpha, border value or bias");

    const uint64_t need =
        need_bytes(ctx, src, dst->memory == IC_MEM_HOST ? ic_image_size_bytes(dst) : 0, dst->layout,
                   k->width, k->height);
    if (need > ctx->opts.max_memory) {
        return ic_errf(
            err, errlen, IC_ERR_TOO_LARGE,
            "filtering %dx%d with %d channels needs %.1f MiB, over the memory limit %.1f MiB "
            "(raise it with --max-memory)",
            src->width, src->height, src->channels, mib(need), mib(ctx->opts.max_memory));
    }
    return IC_OK;
}

ic_status ic__convolve_check(const ic_context *ctx, const ic_image *src, const ic_image *dst,
                             const ic_kernel *k, const ic_params *p)
{
    char why[256] = "";
    return ic_fail_msg(check_pair(ctx, src, dst, k, p, why, sizeof why), why);
}

ic_status ic_convolve(ic_context *ctx, const ic_image *src, ic_image *dst, const ic_kernel *k,
                      const ic_params *p)
{
    if (!ctx)
        return ic_fail(IC_ERR_INVALID_ARG, "no context (NULL)");
    ic_context *fb = auto_fallback(ctx, src, dst, k);
    if (fb) {
        const ic_status fs = ic_convolve(fb, src, dst, k, p);
        ctx->timing = fb->timing;
        return fs;
    }
    const double t0 = now_ms();
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    {
        char why[256] = "";
        const ic_status cs = check_pair(ctx, src, dst, k, p, why, sizeof why);
        if (cs != IC_OK)
            return ic_fail_msg(cs, why);
    }
    if (k->magnitude || p->abs)
        return ic__convolve_special(ctx, src, dst, k, p);
    const int on_device = src->memory == IC_MEM_DEVICE || dst->memory == IC_MEM_DEVICE;

    /* Correlation weights: divisor folded in, flipped for convolution. */
    const int kw = k->width, kh = k->height;
    ic_kernel wk;
    double sum = 0;
    float *w = prepare_weights(k, p, &wk, &sum);
    if (!w)
        return ic_fail(IC_ERR_NOMEM, "out of memory");

    ic_alpha alpha = effective_alpha(src, p, sum);

    if (alpha == IC_ALPHA_PREMULTIPLY && on_device && !(ctx->be->caps & IC_CAP_PREMULTIPLY)) {
        free(w);
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "premultiplied alpha on device images is not supported by backend %s "
                       "(ask for alpha keep or independent)",
                       ctx->be->name);
    }

    /* Backends write dst in src's layout; convert afterwards when asked
     * otherwise. A device dst is converted by the backend on the device. */
    ic_image tmp, *out = dst;
    memset(&tmp, 0, sizeof tmp);
    ic_status st = IC_OK;
    char err[256] = ""; /* what the backend says when it fails */
    if (dst->layout != src->layout && dst->memory == IC_MEM_HOST) {
        st = ic_image_create_type(&tmp, src->width, src->height, src->channels, src->layout,
                                  src->type);
        if (st != IC_OK) {
            free(w);
            return ic_fail(st, "out of memory for the layout conversion");
        }
        out = &tmp;
    }
    ic_job job = {.src = src,
                  .dst = out,
                  .w = k->coef ? w : NULL,
                  .kw = kw,
                  .kh = kh,
                  .wk = &wk,
                  .border = p->border,
                  .border_value = p->border_value,
                  .bias = p->bias,
                  .tuning = &ctx->tuning};
    if (alpha == IC_ALPHA_KEEP && on_device) { /* the backend copies alpha on the device */
        job.keep_alpha = 1;
        alpha = IC_ALPHA_INDEPENDENT;
    }
    ic_timing t = {0, 0, 0, 0};
    /* Backends that premultiply themselves get the job flagged; the others
     * take the float64 reference path. */
    if (alpha == IC_ALPHA_PREMULTIPLY && (ctx->be->caps & IC_CAP_PREMULTIPLY)) {
        job.premultiply = 1;
        alpha = IC_ALPHA_INDEPENDENT;
    }
    if (alpha == IC_ALPHA_PREMULTIPLY) {
        const double tk = now_ms();
        st = ic__convolve_premultiplied(&job);
        t.kernel_ms = now_ms() - tk;
        if (st != IC_OK)
            ic_errf(err, sizeof err, st, "premultiplied alpha filter: %s", ic_status_str(st));
    } else {
        const double tk = now_ms();
        st = ctx->multi ? ic__multi_run(ctx->multi, &job, &t, err, sizeof err)
                        : ctx->be->run(ctx->state, &job, &t, err, sizeof err);
        if (t.kernel_ms == 0 && t.upload_ms == 0 && t.download_ms == 0)
            t.kernel_ms = now_ms() - tk; /* CPU backends: the whole run is the kernel */
        if (st == IC_OK && alpha == IC_ALPHA_KEEP)
            copy_alpha(out, src);
    }
    if (st == IC_OK && out != dst)
        st = ic_image_copy(dst, out);
    ic_image_free(&tmp);
    free(w);
    if (st != IC_OK)
        return ic_fail_msg(st, err);
    t.total_ms = now_ms() - t0;
    ctx->timing = t;
    return IC_OK;
}

/* The job ic_convolve would hand the backend for src, k and p, without a
 * destination (explain, plan): weights in *w (owned by the caller). */
static ic_status plan_job_of(const ic_context *ctx, const ic_image *src, const ic_kernel *k,
                             const ic_params *p, ic_job *job, ic_kernel *wk, float **w)
{
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    double sum;
    char why[256] = "";
    if (kernel_runs(ctx, k, why, sizeof why) != IC_OK)
        return ic_fail(IC_ERR_UNSUPPORTED, "%s", why);
    *w = prepare_weights(k, p, wk, &sum);
    if (!*w)
        return IC_ERR_NOMEM;
    *job = (ic_job){.src = src,
                    .dst = NULL,
                    .w = k->coef ? *w : NULL,
                    .kw = k->width,
                    .kh = k->height,
                    .wk = wk,
                    .border = p->border,
                    .border_value = p->border_value,
                    .bias = p->bias,
                    .tuning = &ctx->tuning};
    job->premultiply = effective_alpha(src, p, sum) == IC_ALPHA_PREMULTIPLY &&
                       (ctx->be->caps & IC_CAP_PREMULTIPLY);
    return IC_OK;
}

ic_status ic_plan_explain(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                          const ic_params *p, char *buf, size_t buflen)
{
    if (!ctx || !buf || buflen == 0 || !image_valid(src) || !kernel_valid(k))
        return ic_fail(IC_ERR_INVALID_ARG, "no context or buffer, or an invalid image or kernel");
    if (k->magnitude || (p && p->abs))
        return ic_chain_explain(ctx, src, k, 1, p, buf, buflen);
    ic_context *fb = auto_fallback(ctx, src, NULL, k);
    if (fb)
        return ic_plan_explain(fb, src, k, p, buf, buflen);
    ic_kernel wk;
    float *w;
    ic_job job;
    ic_status st = plan_job_of(ctx, src, k, p, &job, &wk, &w);
    if (st != IC_OK) /* plan_job_of said why unless memory ran out */
        return st == IC_ERR_NOMEM ? ic_fail(st, "out of memory") : st;
    if (ctx->multi)
        st = ic__multi_explain(ctx->multi, &job, buf, buflen);
    else if (ctx->be->explain)
        st = ctx->be->explain(ctx->state, &job, buf, buflen);
    else
        snprintf(buf, buflen, "%s: direct %dx%d correlation, one pass, no plan to choose\n",
                 ctx->be->name, k->width, k->height);
    free(w);
    return st != IC_OK ? ic_fail(st, "%s: explaining the plan failed", ctx->be->name) : st;
}

ic_status ic_context_set_tuning(ic_context *ctx, const ic_tuning *t)
{
    static const ic_tuning defaults;
    if (!ctx)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_context_set_tuning: NULL context");
    if (!t)
        t = &defaults;
    const ic_status st = ic__tuning_check(t);
    if (st != IC_OK)
        return st;
    ctx->tuning = *t;
    return IC_OK;
}

ic_status ic_context_get_tuning(const ic_context *ctx, ic_tuning *t)
{
    if (!ctx || !t)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_context_get_tuning: NULL argument");
    *t = ctx->tuning;
    return IC_OK;
}

ic_status ic_plan_get(ic_context *ctx, const ic_image *src, const ic_kernel *k, const ic_params *p,
                      ic_plan *plan)
{
    if (!ctx || !plan || !image_valid(src) || !kernel_valid(k))
        return ic_fail(IC_ERR_INVALID_ARG, "ic_plan_get: invalid context, image, kernel or plan");
    ic_context *fb = auto_fallback(ctx, src, NULL, k);
    if (fb)
        return ic_plan_get(fb, src, k, p, plan);
    memset(plan, 0, sizeof *plan);
    plan->backend = ctx->be->name;
    plan->pred_ms = plan->pred_direct_ms = plan->pred_sep_ms = plan->pred_fft_ms =
        plan->pred_tensor_ms = -1;
    ic_kernel wk;
    float *w;
    ic_job job;
    ic_status st = plan_job_of(ctx, src, k, p, &job, &wk, &w);
    if (st != IC_OK) /* plan_job_of said why unless memory ran out */
        return st == IC_ERR_NOMEM ? ic_fail(st, "out of memory") : st;
    plan->premultiply = job.premultiply; /* the backend's plan may say more */
    char err[256] = "";
    if (ctx->multi)
        st = ic__multi_plan(ctx->multi, &job, plan, err, sizeof err);
    else if (ctx->be->plan)
        st = ctx->be->plan(ctx->state, &job, plan, err, sizeof err);
    free(w);
    plan->backend = ctx->be->name;
    if (st != IC_OK)
        return ic_fail(st, "%s", err[0] ? err : ic_status_str(st));
    return IC_OK;
}

/* ic_convolve_async's checks of one pair (ctx, its backend and p checked
 * by the caller, p not NULL): one line in err on failure. */
static ic_status check_async_pair(const ic_image *src, const ic_image *dst, const ic_kernel *k,
                                  char *err, size_t errlen)
{
    if (!image_valid(src) || !image_valid(dst) || !kernel_valid(k))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "invalid image or kernel");
    if (!k->coef)
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "%s is %dx%d; asynchronous calls take kernels up to %d", k->name, k->width,
                       k->height, IC_MAX_KERNEL);
    if (src->memory != IC_MEM_DEVICE || dst->memory != IC_MEM_DEVICE || src->layout != dst->layout)
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "source and destination must be device images of one layout");
    if (src->width != dst->width || src->height != dst->height || src->channels != dst->channels)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "destination size or channels differ from the source");
    if (src->type != dst->type)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "source and destination sample types differ");
    if (images_overlap(src, dst))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "source and destination overlap");
    return IC_OK;
}

static ic_status check_params(const ic_params *p, char *err, size_t errlen)
{
    if ((unsigned)p->border > IC_BORDER_WRAP || (unsigned)p->alpha > IC_ALPHA_INDEPENDENT ||
        !isfinite(p->border_value) || !isfinite(p->bias))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "invalid border, alpha, border value or bias");
    return IC_OK;
}

/* The async job of (src, dst) under prepared weights; alpha as resolved. */
static ic_job async_job(const ic_context *ctx, const ic_image *src, ic_image *dst, const float *w,
                        const ic_kernel *wk, const ic_params *p, ic_alpha alpha)
{
    ic_job job = {.src = src,
                  .dst = dst,
                  .w = wk->coef ? w : NULL, /* a blur by its shape: no weights, as in ic_convolve */
                  .kw = wk->width,
                  .kh = wk->height,
                  .wk = wk,
                  .border = p->border,
                  .border_value = p->border_value,
                  .bias = p->bias,
                  .premultiply = alpha == IC_ALPHA_PREMULTIPLY,
                  .tuning = &ctx->tuning,
                  .async = 1};
    return job;
}

ic_status ic_convolve_async(ic_context *ctx, const ic_image *src, ic_image *dst, const ic_kernel *k,
                            const ic_params *p)
{
    if (!ctx)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_convolve_async: NULL context");
    if (!(ctx->be->caps & IC_CAP_ASYNC) || ctx->multi)
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "ic_convolve_async: backend %s%s does not queue device runs (use cuda on "
                       "one device)",
                       ctx->be->name, ctx->multi ? " split across devices" : "");
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    if (k && (k->magnitude || p->abs))
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "ic_convolve_async: gradient magnitudes and |sum| run on the host (use "
                       "ic_convolve with host images)");
    char why[256] = "";
    ic_status cs = check_async_pair(src, dst, k, why, sizeof why);
    if (cs == IC_OK)
        cs = check_params(p, why, sizeof why);
    if (cs == IC_OK && !type_supported(ctx, src->type, why, sizeof why))
        cs = IC_ERR_UNSUPPORTED;
    if (cs != IC_OK)
        return ic_fail(cs, "ic_convolve_async: %s", why);
    ic_kernel wk;
    double sum = 0;
    float *w = prepare_weights(k, p, &wk, &sum);
    if (!w)
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    const ic_alpha alpha = effective_alpha(src, p, sum);
    if (alpha == IC_ALPHA_KEEP) {
        free(w);
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "ic_convolve_async: alpha keep is not available (ask for premultiply or "
                       "independent)");
    }
    const ic_job job = async_job(ctx, src, dst, w, &wk, p, alpha);
    ic_timing t = {0, 0, 0, 0};
    char err[256] = "";
    const ic_status st = ctx->be->run(ctx->state, &job, &t, err, sizeof err);
    free(w);
    if (st != IC_OK)
        return ic_fail(st, "%s", err[0] ? err : ic_status_str(st));
    return IC_OK;
}

ic_status ic_filter(const ic_image *src, ic_image *dst, const ic_kernel *k, const ic_params *p,
                    const char *backend)
{
    ic_context *ctx = NULL;
    ic_status st = ic_context_create(&ctx, backend, NULL);
    if (st != IC_OK)
        return st;
    st = ic_convolve(ctx, src, dst, k, p);
    ic_context_free(ctx);
    return st;
}

/* ---- many images (ic_convolve_batch, ic_convolve_batch_async) ------------------ */

/* Index of the first image of a batch that differs from image 0 in what a
 * batched launch needs to share (device memory on the context's device,
 * layout of both sides, sample type, channel count); -1 when none does. *what
 * names the difference. */
static int batch_differs(const ic_context *ctx, int n, const ic_image *src, const ic_image *dst,
                         const char **what)
{
    for (int i = 0; i < n; i++) {
        const ic_image *s = &src[i], *d = &dst[i];
        *what = "is not a pair of device images on the context's device";
        if (s->memory != IC_MEM_DEVICE || d->memory != IC_MEM_DEVICE ||
            s->device != ctx->opts.device || d->device != ctx->opts.device)
            return i;
        *what = "has another layout than image 0";
        if (s->layout != src[0].layout || d->layout != src[0].layout)
            return i;
        *what = "has another sample type than image 0";
        if (s->type != src[0].type)
            return i;
        *what = "has another channel count than image 0";
        if (s->channels != src[0].channels)
            return i;
    }
    return -1;
}

/* Runs a uniform batch through the backend's run_batch: *taken = 0 when the
 * backend declines it (nothing ran). The jobs share the weights w/wk. */
static ic_status batch_run(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                           const float *w, const ic_kernel *wk, const ic_params *p, ic_alpha alpha,
                           int async, int *taken)
{
    *taken = 0;
    ic_job *jobs = malloc((size_t)n * sizeof *jobs);
    if (!jobs)
        return ic_fail(IC_ERR_NOMEM, "out of memory for %d batch jobs", n);
    for (int i = 0; i < n; i++) {
        jobs[i] = async_job(ctx, &src[i], &dst[i], w, wk, p, alpha);
        jobs[i].async = async;
    }
    char err[256] = "";
    int failed = -1;
    const ic_status st = ctx->be->run_batch(ctx->state, jobs, n, taken, &failed, err, sizeof err);
    free(jobs);
    if (st == IC_OK)
        return IC_OK;
    *taken = 1;
    if (failed >= 0)
        return ic_fail(st, "image %d: %s", failed, err[0] ? err : ic_status_str(st));
    return ic_fail(st, "batch of %d images: %s", n, err[0] ? err : ic_status_str(st));
}

/* The images one after the other through `one` (ic_convolve or
 * ic_convolve_async), the message naming the image that failed. */
static ic_status batch_loop(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                            const ic_kernel *k, const ic_params *p,
                            ic_status (*one)(ic_context *, const ic_image *, ic_image *,
                                             const ic_kernel *, const ic_params *))
{
    for (int i = 0; i < n; i++) {
        const ic_status st = one(ctx, &src[i], &dst[i], k, p);
        if (st != IC_OK) {
            char why[512];
            snprintf(why, sizeof why, "%s", ic_last_error());
            return ic_fail(st, "image %d: %s", i, why);
        }
    }
    return IC_OK;
}

/* The checks both batch entry points begin with, in this order, under the
 * caller's name fn: a context, one that queues device runs (async only),
 * n >= 0 and the image arrays. */
static ic_status batch_args(const char *fn, int async, const ic_context *ctx, int n,
                            const ic_image *src, const ic_image *dst)
{
    if (!ctx)
        return ic_fail(IC_ERR_INVALID_ARG, async ? "%s: NULL context" : "%s: no context (NULL)",
                       fn);
    if (async && (!(ctx->be->caps & IC_CAP_ASYNC) || ctx->multi))
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "%s: backend %s%s does not queue device runs (use cuda on one device)", fn,
                       ctx->be->name, ctx->multi ? " split across devices" : "");
    if (n < 0 || (n > 0 && (!src || !dst)))
        return ic_fail(IC_ERR_INVALID_ARG, "%s: n < 0 or NULL image arrays", fn);
    return IC_OK;
}

/* One batched launch per method when the backend has one and the batch is
 * uniform (batch_differs), after every pair passed ic_convolve's checks;
 * otherwise ic_convolve image by image. */
ic_status ic_convolve_batch(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                            const ic_kernel *k, const ic_params *p)
{
    const ic_status as = batch_args("ic_convolve_batch", 0, ctx, n, src, dst);
    if (as != IC_OK || n == 0)
        return as;
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    const char *what = "";
    const int special = k && (k->magnitude || p->abs); /* ic_convolve's own path */
    if (!special && ctx->be->run_batch && !ctx->multi &&
        batch_differs(ctx, n, src, dst, &what) < 0) {
        const double t0 = now_ms();
        for (int i = 0; i < n; i++) {
            char why[256] = "";
            const ic_status cs = check_pair(ctx, &src[i], &dst[i], k, p, why, sizeof why);
            if (cs != IC_OK)
                return ic_fail(cs, "image %d: %s", i, why);
        }
        ic_kernel wk;
        double sum = 0;
        float *w = prepare_weights(k, p, &wk, &sum);
        if (!w)
            return ic_fail(IC_ERR_NOMEM, "out of memory");
        const ic_alpha alpha = effective_alpha(&src[0], p, sum);
        int taken = 0;
        ic_status st = IC_OK;
        /* alpha keep and premultiplication by a backend that cannot: the loop */
        if (alpha != IC_ALPHA_KEEP &&
            (alpha != IC_ALPHA_PREMULTIPLY || (ctx->be->caps & IC_CAP_PREMULTIPLY)))
            st = batch_run(ctx, n, src, dst, w, &wk, p, alpha, 0, &taken);
        free(w);
        if (st != IC_OK)
            return st;
        if (taken) {
            const double ms = now_ms() - t0;
            ic_timing t = {0, ms, 0, ms};
            ctx->timing = t;
            return IC_OK;
        }
    }
    return batch_loop(ctx, n, src, dst, k, p, ic_convolve);
}

ic_status ic_convolve_batch_async(ic_context *ctx, int n, const ic_image *src, ic_image *dst,
                                  const ic_kernel *k, const ic_params *p)
{
    const ic_status as = batch_args("ic_convolve_batch_async", 1, ctx, n, src, dst);
    if (as != IC_OK || n == 0)
        return as;
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    char why[256] = "";
    if (check_params(p, why, sizeof why) != IC_OK)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_convolve_batch_async: %s", why);
    if (k && (k->magnitude || p->abs))
        return ic_fail(IC_ERR_UNSUPPORTED, "ic_convolve_batch_async: gradient magnitudes and "
                                           "|sum| run on the host (use ic_convolve_batch)");
    for (int i = 0; i < n; i++) {
        ic_status cs = check_async_pair(&src[i], &dst[i], k, why, sizeof why);
        if (cs == IC_OK && !type_supported(ctx, src[i].type, why, sizeof why))
            cs = IC_ERR_UNSUPPORTED;
        if (cs != IC_OK)
            return ic_fail(cs, "ic_convolve_batch_async: image %d: %s", i, why);
    }
    const char *what = "";
    const int bad = batch_differs(ctx, n, src, dst, &what);
    if (bad >= 0)
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "ic_convolve_batch_async: image %d %s (the batch must be uniform)", bad,
                       what);
    ic_kernel wk;
    double sum = 0;
    float *w = prepare_weights(k, p, &wk, &sum);
    if (!w)
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    const ic_alpha alpha = effective_alpha(&src[0], p, sum);
    if (alpha == IC_ALPHA_KEEP) {
        free(w);
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "ic_convolve_batch_async: alpha keep is not available (ask for "
                       "premultiply or independent)");
    }
    int taken = 0;
    ic_status st = IC_OK;
    if (ctx->be->run_batch)
        st = batch_run(ctx, n, src, dst, w, &wk, p, alpha, 1, &taken);
    free(w);
    if (st != IC_OK || taken)
        return st;
    return batch_loop(ctx, n, src, dst, k, p, ic_convolve_async);
}
