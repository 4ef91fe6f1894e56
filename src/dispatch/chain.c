/*
 * chain.c - what one linear pass on a backend cannot give: the gradient
 * magnitude of a kernel and its transpose (ic_kernel.magnitude), |sum|
 * (ic_params.abs) and chains of kernels (ic_convolve_chain).
 *
 * Consecutive linear steps are fused where composing them is exact; a chain
 * that fuses to one linear kernel runs as ic_convolve on the context's
 * backend, and |sum| of one linear kernel runs there too, as the larger of the
 * rounded K and -K results (rounding and clamping are monotonic and odd, so
 * that is exact). Everything else runs in the device engine of a GPU backend
 * (chain_device.c), or else here on the host in float32 planes, every tap
 * summed in the seq backend's order (docs/definitions.md#chains).
 */
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/border.h"
#include "core/error.h"
#include "dispatch/chain.h"

typedef ic__chain_step step;

static double clock_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int kernel_ok(const ic_kernel *k)
{
    return k->coef && k->width >= 1 && k->height >= 1 && (k->width & 1) && (k->height & 1) &&
           k->width <= IC_MAX_KERNEL && k->height <= IC_MAX_KERNEL && isfinite(k->divisor) &&
           k->divisor != 0.0 && (!k->magnitude || k->width == k->height);
}

static void steps_free(step *s, int n)
{
    for (int i = 0; s && i < n; i++)
        free(s[i].w);
    free(s);
}

/* 1 when w(i, j) = w(-i, j) = w(i, -j) exactly. */
static int symmetric(const step *a)
{
    for (int j = 0; j < a->kh; j++)
        for (int i = 0; i < a->kw; i++) {
            const float v = a->w[(size_t)j * a->kw + i];
            if (v != a->w[(size_t)j * a->kw + (a->kw - 1 - i)] ||
                v != a->w[(size_t)(a->kh - 1 - j) * a->kw + i])
                return 0;
        }
    return 1;
}

/* The exactness rule of fusion (docs/definitions.md#chains): two linear steps
 * a then b compose into one kernel when the wrap border makes both periodic;
 * under mirror and reflect when a is symmetric in x and y (the even extension
 * these borders make stays even through a symmetric kernel, so a's output
 * extended by the border is a applied to the extended input); when b is 1x1
 * (a pointwise scale); or when a is 1x1 and the border outside is not a
 * nonzero constant (scaling commutes with every other border). */
static int fusable(const step *a, const step *b, const ic_params *p)
{
    if (a->magnitude || a->abs || b->magnitude || b->abs)
        return 0;
    if (a->kw + b->kw - 1 > IC_MAX_KERNEL || a->kh + b->kh - 1 > IC_MAX_KERNEL)
        return 0;
    const int a1 = a->kw == 1 && a->kh == 1, b1 = b->kw == 1 && b->kh == 1;
    const int even = p->border == IC_BORDER_MIRROR || p->border == IC_BORDER_REFLECT;
    return p->border == IC_BORDER_WRAP || b1 || (even && symmetric(a)) ||
           (a1 && (p->border != IC_BORDER_CONSTANT || p->border_value == 0.0f));
}

/* a then b as one correlation: c(u) = sum_i a(i) b(u - i), in float64. */
static ic_status fuse(step *a, const step *b)
{
    const int cw = a->kw + b->kw - 1, ch = a->kh + b->kh - 1;
    double *acc = calloc((size_t)cw * (size_t)ch, sizeof *acc);
    float *c = malloc((size_t)cw * (size_t)ch * sizeof *c);
    if (!acc || !c) {
        free(acc);
        free(c);
        return IC_ERR_NOMEM;
    }
    for (int j = 0; j < a->kh; j++)
        for (int i = 0; i < a->kw; i++) {
            const double av = a->w[(size_t)j * a->kw + i];
            for (int v = 0; v < b->kh; v++)
                for (int u = 0; u < b->kw; u++)
                    acc[(size_t)(j + v) * cw + (i + u)] += av * b->w[(size_t)v * b->kw + u];
        }
    for (size_t t = 0; t < (size_t)cw * ch; t++)
        c[t] = (float)acc[t];
    free(acc);
    free(a->w);
    a->w = c;
    a->kw = cw;
    a->kh = ch;
    a->sum *= b->sum;
    a->end = b->end;
    return IC_OK;
}

/* The steps of kernels[0..n) under p, fused where exact. */
static ic_status steps_build(const ic_kernel *ks, int n, const ic_params *p, step **out, int *nout)
{
    *out = NULL;
    *nout = 0;
    if (n < 1 || !ks)
        return ic_fail(IC_ERR_INVALID_ARG, "empty chain: no kernel given");
    for (int i = 0; i < n; i++)
        if (!kernel_ok(&ks[i]))
            return ic_fail(IC_ERR_INVALID_ARG,
                           "chain step %d: invalid kernel (odd sizes 1..%d, a nonzero divisor, "
                           "square when a magnitude)",
                           i + 1, IC_MAX_KERNEL);
    step *s = calloc((size_t)n, sizeof *s);
    if (!s)
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    int m = 0;
    for (int i = 0; i < n; i++) {
        const ic_kernel *k = &ks[i];
        step t = {.kw = k->width,
                  .kh = k->height,
                  .magnitude = k->magnitude != 0,
                  .abs = p->abs != 0,
                  .first = i,
                  .end = i + 1};
        t.w = malloc((size_t)k->width * (size_t)k->height * sizeof *t.w);
        if (!t.w) {
            steps_free(s, m);
            return ic_fail(IC_ERR_NOMEM, "out of memory");
        }
        for (int j = 0; j < k->height; j++)
            for (int c = 0; c < k->width; c++) {
                const double v = (double)k->coef[(size_t)j * k->width + c] / k->divisor;
                const int di = p->correlate ? c : k->width - 1 - c;
                const int dj = p->correlate ? j : k->height - 1 - j;
                t.w[(size_t)dj * k->width + di] = (float)v;
                t.sum += v;
            }
        if (m > 0 && fusable(&s[m - 1], &t, p)) {
            const ic_status st = fuse(&s[m - 1], &t);
            free(t.w);
            if (st != IC_OK) {
                steps_free(s, m);
                return ic_fail(st, "out of memory");
            }
        } else {
            s[m++] = t;
        }
    }
    *out = s;
    *nout = m;
    return IC_OK;
}

/* One step as a kernel in correlation orientation (run with correlate = 1). */
static ic_kernel step_kernel(const step *s, const ic_kernel *ks)
{
    ic_kernel k;
    memset(&k, 0, sizeof k);
    k.width = s->kw;
    k.height = s->kh;
    k.coef = s->w;
    k.divisor = 1.0;
    k.magnitude = s->magnitude;
    if (s->end - s->first == 1)
        snprintf(k.name, sizeof k.name, "%s", ks[s->first].name);
    else
        snprintf(k.name, sizeof k.name, "%d fused kernels", s->end - s->first);
    return k;
}

/* ---- the host float32 engine ---------------------------------------------- */

typedef struct plane_job {
    const float *pad; /* the input plane padded by (kw/2, kh/2) */
    int pw;           /* padded width */
    float *out;       /* width x height */
    int width, y0, y1;
    const step *s;
    const float *wt; /* transposed weights (magnitude) */
} plane_job;

/* Eight float32 sums in one register pair (GCC and Clang vector types). */
typedef float f8 __attribute__((vector_size(32)));

/* Sums of the 8 samples from pad (a padded row pointer at x); gy with the
 * transposed weights when wt. Each lane sums its taps in row-major order. */
static inline void sums8(const plane_job *j, const float *pad, f8 *gx, f8 *gy)
{
    const step *s = j->s;
    f8 ax = {0}, ay = {0};
    for (int ky = 0; ky < s->kh; ky++) {
        const float *row = pad + (size_t)ky * j->pw;
        for (int kx = 0; kx < s->kw; kx++) {
            f8 v;
            memcpy(&v, row + kx, sizeof v);
            ax += v * s->w[(size_t)ky * s->kw + kx];
            if (j->wt)
                ay += v * j->wt[(size_t)ky * s->kw + kx];
        }
    }
    *gx = ax;
    *gy = ay;
}

/* The same for one sample (the row's last few). */
static void sums1(const plane_job *j, const float *pad, float *gx, float *gy)
{
    const step *s = j->s;
    float ax = 0.0f, ay = 0.0f;
    for (int ky = 0; ky < s->kh; ky++)
        for (int kx = 0; kx < s->kw; kx++) {
            const float v = pad[(size_t)ky * j->pw + kx];
            ax += v * s->w[(size_t)ky * s->kw + kx];
            if (j->wt)
                ay += v * j->wt[(size_t)ky * s->kw + kx];
        }
    *gx = ax;
    *gy = ay;
}

static float combine(const step *s, float gx, float gy)
{
    if (s->magnitude) /* the squares pass 2^24 at 16 bits */
        return (float)sqrt((double)gx * gx + (double)gy * gy);
    return s->abs ? fabsf(gx) : gx;
}

/* Rows [y0, y1) of one plane, 8 samples at a time. */
static void *plane_rows(void *arg)
{
    const plane_job *j = arg;
    const int W = j->width;
    for (int y = j->y0; y < j->y1; y++) {
        float *out = j->out + (size_t)y * W;
        const float *pad = j->pad + (size_t)y * j->pw;
        int x = 0;
        for (; x + 8 <= W; x += 8) {
            f8 gx, gy;
            sums8(j, pad + x, &gx, &gy);
            for (int i = 0; i < 8; i++)
                out[x + i] = combine(j->s, gx[i], gy[i]);
        }
        for (; x < W; x++) {
            float gx, gy;
            sums1(j, pad + x, &gx, &gy);
            out[x] = combine(j->s, gx, gy);
        }
    }
    return NULL;
}

typedef struct engine {
    int width, height, threads;
    ic_border border;
    float *pad; /* scratch: the padded plane of the largest step */
    plane_job jobs[64];
    pthread_t tid[64];
} engine;

/* One step on one plane: pad (border mapped, `outside` under a constant
 * border), then the rows in bands across the threads. */
static ic_status step_plane(engine *e, const step *s, const float *wt, const float *in, float *out,
                            float outside)
{
    const int rx = s->kw / 2, ry = s->kh / 2, W = e->width, H = e->height;
    const int pw = W + 2 * rx, ph = H + 2 * ry;
    for (int y = 0; y < ph; y++) {
        const int sy = ic_border_map(y - ry, H, (int)e->border);
        float *row = e->pad + (size_t)y * pw;
        for (int x = 0; x < pw; x++) {
            if (x == rx && sy >= 0) { /* the image's own row in one copy */
                memcpy(row + rx, in + (size_t)sy * W, (size_t)W * sizeof *row);
                x += W - 1;
                continue;
            }
            const int sx = ic_border_map(x - rx, W, (int)e->border);
            row[x] = (sx < 0 || sy < 0) ? outside : in[(size_t)sy * W + sx];
        }
    }
    int nt = e->threads < H ? e->threads : H;
    for (int t = 0; t < nt; t++) {
        plane_job *j = &e->jobs[t];
        *j = (plane_job){e->pad, pw, out, W, (int)((long)H * t / nt), (int)((long)H * (t + 1) / nt),
                         s,      wt};
    }
    int started = 0, failed = 0;
    for (int t = 1; t < nt; t++) {
        if (pthread_create(&e->tid[t], NULL, plane_rows, &e->jobs[t]) != 0)
            break;
        started = t;
    }
    for (int t = started + 1; t < nt; t++) /* threads that could not start: here */
        failed |= plane_rows(&e->jobs[t]) != NULL;
    failed |= plane_rows(&e->jobs[0]) != NULL;
    for (int t = 1; t <= started; t++) {
        void *r = NULL;
        pthread_join(e->tid[t], &r);
        failed |= r != NULL;
    }
    return failed ? IC_ERR_NOMEM : IC_OK;
}

/* Sample (0, y, c) of a host image and the distance to the next sample of
 * the row, in samples. */
static uint8_t *row_at(const ic_image *im, int y, int c, size_t *stride)
{
    *stride = im->layout == IC_AOS ? (size_t)im->channels : 1u;
    return ic_image_at(im, 0, y, c);
}

/* Row y of channel c as floats. */
static void load_row(const ic_image *im, int y, int c, float *out)
{
    size_t st;
    const uint8_t *p = row_at(im, y, c, &st);
    if (im->type == IC_F32) {
        const float *q = (const float *)(const void *)p;
        for (int x = 0; x < im->width; x++)
            out[x] = q[(size_t)x * st];
    } else if (im->type == IC_U16) {
        const uint16_t *q = (const uint16_t *)(const void *)p;
        for (int x = 0; x < im->width; x++)
            out[x] = (float)q[(size_t)x * st];
    } else {
        for (int x = 0; x < im->width; x++)
            out[x] = (float)p[(size_t)x * st];
    }
}

/* Row y of channel c from floats: bias added, rounded and clamped (float32
 * samples as they are). */
static void store_row(const ic_image *im, int y, int c, const float *in, float bias)
{
    size_t st;
    uint8_t *p = row_at(im, y, c, &st);
    if (im->type == IC_F32) {
        float *q = (float *)(void *)p;
        for (int x = 0; x < im->width; x++)
            q[(size_t)x * st] = in[x] + bias;
    } else if (im->type == IC_U16) {
        uint16_t *q = (uint16_t *)(void *)p;
        for (int x = 0; x < im->width; x++)
            q[(size_t)x * st] = ic_round_u16(in[x] + bias);
    } else {
        for (int x = 0; x < im->width; x++)
            p[(size_t)x * st] = ic_round_u8(in[x] + bias);
    }
}

/* The alpha mode of a chain: AUTO premultiplies when the product of the
 * steps' weight sums is 1, as ic_convolve decides for one kernel. */
static ic_alpha chain_alpha(const ic_image *src, const ic_params *p, const step *s, int n)
{
    if (src->channels != 2 && src->channels != 4)
        return IC_ALPHA_INDEPENDENT;
    if (p->alpha != IC_ALPHA_AUTO)
        return p->alpha;
    double prod = 1.0;
    for (int i = 0; i < n; i++)
        prod *= s[i].sum;
    return fabs(prod - 1.0) < 1e-6 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_KEEP;
}

static int engine_threads(const ic_context *ctx)
{
    int t = ic__context_options(ctx)->threads;
    if (t <= 0) {
        const long n = sysconf(_SC_NPROCESSORS_ONLN);
        t = n > 0 ? (int)n : 1;
    }
    return t < 64 ? t : 64;
}

/* The chain on the host: src -> float planes (premultiplied when asked) ->
 * every step -> rounded into dst (any layout). */
static ic_status host_run(ic_context *ctx, const ic_image *src, ic_image *dst, const step *s, int n,
                          const ic_params *p)
{
    const int W = src->width, H = src->height, C = src->channels;
    const ic_alpha alpha = chain_alpha(src, p, s, n);
    const int has_alpha = C == 2 || C == 4, ac = C - 1;
    const int filtered = alpha == IC_ALPHA_KEEP ? C - 1 : C;
    const int premul = alpha == IC_ALPHA_PREMULTIPLY;
    const float max = (float)ic_sample_max(src->type);
    int maxk = 1;
    for (int i = 0; i < n; i++) {
        const int a = (W + s[i].kw - 1) * (H + s[i].kh - 1);
        maxk = a > maxk ? a : maxk;
    }
    const uint64_t plane = (uint64_t)W * (uint64_t)H * sizeof(float);
    const uint64_t need = ic_image_size_bytes(src) + ic_image_size_bytes(dst) +
                          2u * plane * (uint64_t)C + (uint64_t)maxk * sizeof(float);
    const uint64_t limit = ic__context_options(ctx)->max_memory;
    if (need > limit)
        return ic_fail(IC_ERR_TOO_LARGE,
                       "filtering %dx%d with %d channels in float32 needs %.1f MiB, over the "
                       "memory limit %.1f MiB (raise it with --max-memory)",
                       W, H, C, need / 1048576.0, limit / 1048576.0);
    float *cur = malloc((size_t)plane * (size_t)C), *nxt = malloc((size_t)plane * (size_t)C);
    engine e = {.width = W, .height = H, .threads = engine_threads(ctx), .border = p->border};
    e.pad = malloc((size_t)maxk * sizeof(float));
    float *wt = NULL;
    ic_status st = IC_OK;
    if (!cur || !nxt || !e.pad) {
        st = ic_fail(IC_ERR_NOMEM, "out of memory for the float32 planes");
        goto done;
    }
    const size_t np = (size_t)W * (size_t)H;
    float outside[4];
    for (int c = 0; c < C; c++) {
        const float v = p->border_value;
        outside[c] = premul ? (c == ac ? v / max : v * (v / max)) : v;
        for (int y = 0; y < H; y++)
            load_row(src, y, c, cur + (size_t)c * np + (size_t)y * W);
    }
    if (premul) /* colour * a and a, a = alpha / max */
        for (size_t t = 0; t < np; t++) {
            const float a = cur[(size_t)ac * np + t] / max;
            for (int c = 0; c < ac; c++)
                cur[(size_t)c * np + t] *= a;
            cur[(size_t)ac * np + t] = a;
        }
    for (int i = 0; i < n; i++) {
        free(wt);
        wt = NULL;
        if (s[i].magnitude) {
            wt = malloc((size_t)s[i].kw * (size_t)s[i].kh * sizeof *wt);
            if (!wt) {
                st = ic_fail(IC_ERR_NOMEM, "out of memory");
                goto done;
            }
            for (int j = 0; j < s[i].kh; j++)
                for (int c = 0; c < s[i].kw; c++)
                    wt[(size_t)c * s[i].kw + j] = s[i].w[(size_t)j * s[i].kw + c];
        }
        for (int c = 0; c < filtered && st == IC_OK; c++)
            if (step_plane(&e, &s[i], wt, cur + (size_t)c * np, nxt + (size_t)c * np, outside[c]) !=
                IC_OK)
                st = ic_fail(IC_ERR_NOMEM, "out of memory for a row of sums");
        if (st != IC_OK)
            goto done;
        float *t = cur;
        cur = nxt;
        nxt = t;
    }
    if (premul) /* colour = F(c a) / F(a), alpha = max F(a) */
        for (size_t t = 0; t < np; t++) {
            const float a = cur[(size_t)ac * np + t];
            for (int c = 0; c < ac; c++)
                cur[(size_t)c * np + t] = a > 0.0f ? cur[(size_t)c * np + t] / a : 0.0f;
            cur[(size_t)ac * np + t] = max * a;
        }
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++) {
            if (has_alpha && c == ac && alpha == IC_ALPHA_KEEP) {
                load_row(src, y, c, nxt); /* alpha copied: integers, exact in float */
                store_row(dst, y, c, nxt, 0.0f);
            } else {
                store_row(dst, y, c, cur + (size_t)c * np + (size_t)y * W, p->bias);
            }
        }
done:
    free(wt);
    free(cur);
    free(nxt);
    free(e.pad);
    return st;
}

/* ---- entry points ----------------------------------------------------------- */

/* |K * src| as the larger of the backend's rounded K and -K results. */
static ic_status abs_on_backend(ic_context *ctx, const ic_image *src, ic_image *dst,
                                const ic_kernel *k, const ic_params *p)
{
    ic_params q = *p;
    q.abs = 0;
    const size_t n = (size_t)k->width * (size_t)k->height;
    ic_kernel neg = *k;
    neg.coef = malloc(n * sizeof *neg.coef);
    ic_image tmp;
    memset(&tmp, 0, sizeof tmp);
    if (!neg.coef)
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    for (size_t t = 0; t < n; t++)
        neg.coef[t] = -k->coef[t];
    ic_status st =
        ic_image_create_type(&tmp, src->width, src->height, src->channels, dst->layout, dst->type);
    if (st != IC_OK) {
        free(neg.coef);
        return ic_fail(st, "out of memory for |sum|'s second pass");
    }
    st = ic_convolve(ctx, src, dst, k, &q);
    ic_timing t1 = ic_context_timing(ctx);
    if (st == IC_OK)
        st = ic_convolve(ctx, src, &tmp, &neg, &q);
    free(neg.coef);
    if (st == IC_OK) {
        for (int c = 0; c < src->channels; c++)
            for (int y = 0; y < src->height; y++)
                for (int x = 0; x < src->width; x++) {
                    const float a = ic_image_getf(dst, x, y, c), b = ic_image_getf(&tmp, x, y, c);
                    if (b > a && dst->type == IC_F32)
                        ic_image_setf(dst, x, y, c, b);
                    else if (b > a)
                        ic_image_set(dst, x, y, c, (unsigned)b);
                }
        const ic_timing t2 = ic_context_timing(ctx);
        t1.upload_ms += t2.upload_ms;
        t1.kernel_ms += t2.kernel_ms;
        t1.download_ms += t2.download_ms;
        t1.total_ms += t2.total_ms;
        ic__context_set_timing(ctx, &t1);
    }
    ic_image_free(&tmp);
    return st;
}

/* Premultiplied alpha reverses the sign of both sums under -K, so |sum| with
 * it runs on the host. */
static int abs_fits_backend(const ic_image *src, const ic_kernel *k, const ic_params *p)
{
    if (k->magnitude)
        return 0;
    if (src->channels != 2 && src->channels != 4)
        return 1;
    if (p->alpha == IC_ALPHA_AUTO)
        return !(fabs(ic_kernel_sum(k) - 1.0) < 1e-6);
    return p->alpha != IC_ALPHA_PREMULTIPLY;
}

/* 1 when chains on ctx run in the device engine (chain_device.c). */
static int on_device(const ic_context *ctx, const char **why)
{
    const ic_chain_ops *ops;
    int device;
    return ic__chain_device_choose(ctx, &ops, &device, why);
}

/* The steps in the device engine where the context has one, else on the host. */
static ic_status run_engine(ic_context *ctx, const ic_image *src, ic_image *dst, const step *s,
                            int n, const ic_params *p)
{
    const ic_chain_ops *ops = NULL;
    int device = 0;
    const char *why = "";
    const int dev = ic__chain_device_choose(ctx, &ops, &device, &why);
    if (!dev && (src->memory != IC_MEM_HOST || dst->memory != IC_MEM_HOST))
        return ic_fail(IC_ERR_UNSUPPORTED,
                       "gradient magnitudes, |sum| and chains that do not fuse to one kernel run "
                       "on the host here (%s): give host images",
                       why);
    const double t0 = clock_ms();
    const ic_status st =
        dev ? ic__chain_device_run(ctx, ops, device, src, dst, s, n, p, chain_alpha(src, p, s, n))
            : host_run(ctx, src, dst, s, n, p);
    if (st == IC_OK) {
        const double ms = clock_ms() - t0;
        const ic_timing t = {0, ms, 0, ms};
        ic__context_set_timing(ctx, &t);
    }
    return st;
}

ic_status ic__convolve_special(ic_context *ctx, const ic_image *src, ic_image *dst,
                               const ic_kernel *k, const ic_params *p)
{
    const char *why;
    if (!k->magnitude && src->memory == IC_MEM_HOST && dst->memory == IC_MEM_HOST &&
        abs_fits_backend(src, k, p) && !on_device(ctx, &why))
        return abs_on_backend(ctx, src, dst, k, p);
    step *s;
    int n;
    ic_status st = steps_build(k, 1, p, &s, &n);
    if (st != IC_OK)
        return st;
    st = run_engine(ctx, src, dst, s, n, p);
    steps_free(s, n);
    return st;
}

ic_status ic_convolve_chain(ic_context *ctx, const ic_image *src, ic_image *dst,
                            const ic_kernel *kernels, int n, const ic_params *p)
{
    if (!ctx)
        return ic_fail(IC_ERR_INVALID_ARG, "no context (NULL)");
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    step *s;
    int m;
    ic_status st = steps_build(kernels, n, p, &s, &m);
    if (st != IC_OK)
        return st;
    if (m == 1) { /* one kernel after fusion: ic_convolve, on the backend where it can */
        ic_kernel k = step_kernel(&s[0], kernels);
        ic_params q = *p;
        q.correlate = 1; /* the step's weights are already flipped */
        st = ic_convolve(ctx, src, dst, &k, &q);
    } else {
        /* the checks ic_convolve makes, with the first kernel for the shapes */
        st = ic__convolve_check(ctx, src, dst, &kernels[0], p);
        if (st == IC_OK)
            st = run_engine(ctx, src, dst, s, m, p);
    }
    steps_free(s, m);
    return st;
}

static int any_magnitude(const step *s, int n)
{
    for (int i = 0; i < n; i++)
        if (s[i].magnitude)
            return 1;
    return 0;
}

/* "sobel (3x3)" or "3 fused kernels: a, b, c (7x7)" */
static void step_text(const step *s, const ic_kernel *ks, char *buf, size_t len)
{
    size_t at = 0;
    if (s->end - s->first > 1)
        at += (size_t)snprintf(buf, len, "%d kernels fused into one: ", s->end - s->first);
    for (int i = s->first; i < s->end && at < len; i++)
        at +=
            (size_t)snprintf(buf + at, len - at, "%s%s", i > s->first ? " then " : "", ks[i].name);
    if (at < len)
        snprintf(buf + at, len - at, " (%dx%d)%s%s", s->kw, s->kh,
                 s->magnitude ? ", gradient magnitude sqrt(gx^2 + gy^2) with the transpose" : "",
                 s->abs && !s->magnitude ? ", |sum|" : "");
}

ic_status ic_chain_explain(ic_context *ctx, const ic_image *src, const ic_kernel *kernels, int n,
                           const ic_params *p, char *buf, size_t buflen)
{
    if (!ctx || !buf || buflen == 0 || !src)
        return ic_fail(IC_ERR_INVALID_ARG, "no context, buffer or image");
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    step *s;
    int m;
    ic_status st = steps_build(kernels, n, p, &s, &m);
    if (st != IC_OK)
        return st;
    size_t at = 0;
#define PUT(...)                                                                                   \
    do {                                                                                           \
        if (at < buflen)                                                                           \
            at += (size_t)snprintf(buf + at, buflen - at, __VA_ARGS__);                            \
    } while (0)
    buf[0] = '\0';
    if (n > 1)
        PUT("chain of %d kernels, %d step%s after fusion (fused only where exact: wrap border, "
            "a symmetric first kernel under mirror or reflect, or a 1x1 step):\n",
            n, m, m == 1 ? "" : "s");
    for (int i = 0; i < m; i++) {
        char t[256];
        step_text(&s[i], kernels, t, sizeof t);
        PUT("%s%d: %s\n", n > 1 ? "  step " : "step ", i + 1, t);
        if (i + 1 < m && !s[i].magnitude && !s[i].abs && !s[i + 1].magnitude && !s[i + 1].abs) {
            if (s[i].kw + s[i + 1].kw - 1 > IC_MAX_KERNEL ||
                s[i].kh + s[i + 1].kh - 1 > IC_MAX_KERNEL)
                PUT("    not fused with step %d: the fused kernel would pass %d\n", i + 2,
                    IC_MAX_KERNEL);
            else
                PUT("    not fused with step %d: composing changes what the %s border means\n",
                    i + 2, ic_border_name(p->border));
        }
    }
    const int linear1 = m == 1 && !s[0].magnitude && !s[0].abs;
    const char *why = "";
    const int dev = !linear1 && on_device(ctx, &why);
    if (linear1) {
        ic_kernel k = step_kernel(&s[0], kernels);
        ic_params q = *p;
        q.correlate = 1;
        PUT("runs as one kernel on backend %s:\n", ic_context_backend(ctx));
        if (at < buflen)
            st = ic_plan_explain(ctx, src, &k, &q, buf + at, buflen - at);
    } else if (dev) {
        PUT("runs on the GPU in the device engine of backend %s (it filters float32 device "
            "images on one device): the image in float32 device planes (a host image uploaded "
            "once, downloaded once), every weighted sum a float32 device job on the backend%s%s, "
            "rounded into the destination's type on the device; nothing crosses the bus between "
            "steps\n",
            ic_context_backend(ctx),
            any_magnitude(s, m) ? " (a magnitude as K and its transpose)" : "",
            s[m - 1].abs ? ", |sum| taken on the device" : "");
    } else if (m == 1 && !s[0].magnitude && abs_fits_backend(src, &kernels[0], p)) {
        PUT("runs on backend %s as two passes, K and -K, keeping the larger rounded sample\n",
            ic_context_backend(ctx));
    } else {
        PUT("runs on the host CPU in float32 planes (%d threads), intermediate images neither "
            "rounded nor clamped; backend %s is not used: %s\n",
            engine_threads(ctx), ic_context_backend(ctx), why);
    }
#undef PUT
    steps_free(s, m);
    return st;
}
