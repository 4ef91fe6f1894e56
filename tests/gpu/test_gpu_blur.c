/*
 * test_gpu_blur.c - the `cuda` backend's blur method (src/cuda/fast/blur.cu):
 * gaussians of sigma 0.3 to 1000 (separate x and y sigmas too) and boxes up
 * to far past the image, on 8-bit, 16-bit and float32 images of 1 to 4
 * channels, AoS and SoA, every border mode, images smaller than the blur
 * (the extension wraps or mirrors several times), premultiplied alpha and
 * bias, against the float64 oracle of tests/support/blur_oracle.h.
 *
 * Each case's destination is poisoned first; the plan must name the blur
 * method (forced with method=blur for kernels under IC_FAST_BLUR_MIN_SIDE,
 * auto's choice from 33 taps a side and past 255); every sample must be
 * within 1 level of the clamped oracle at 8 and 16 bits, and within
 * F32_REL of the image's largest magnitude at float32 (the fit's L1 error,
 * 0.1/65535 a pass, and the float32 intermediate stay far below it). A
 * device-image case must equal the host run bit for bit; a gaussian whose
 * explicit support is wider than 2*ceil(4 sigma)+1 is refused in one line;
 * a batch of device images under a blur past 255 equals each image's run.
 * Radii hundreds of times the line (17x5 at sigma 300, 64x48 at sigma 500,
 * 1x2 and 2x1), where the window ends lie far past the line and are summed
 * in closed form, run every border mode with u8, u16 and float32, AoS and
 * SoA, 1 to 4 channels, in quick mode too.
 *
 * Without a GPU: exit 77 (SKIPPED). IC_TEST_QUICK=1 (compute-sanitizer)
 * runs a few small random cases and 45 of the far-radius ones;
 * ICT_SEED=N and ICT_CASES=N (the random cases) narrow a run. A failing
 * case prints its seed and parameters.
 */
#define IC_ADVANCED_API
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blur_oracle.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xB1u
#define CASES 240
#define QUICK_CASES 12
#define F32_REL 2e-5

static int failures;

typedef struct blur_spec {
    const char *text;
    double sx, sy; /* 0: box */
    int nx, ny;    /* support */
    int forced;    /* under IC_FAST_BLUR_MIN_SIDE: run with method=blur */
    int big;       /* long enough that quick mode and huge images skip it */
} blur_spec;

static const blur_spec specs[] = {
    {"gaussian:sigma=0.3", 0.3, 0.3, 3, 3, 1, 0},
    {"gaussian:sigma=2", 2, 2, 13, 13, 1, 0},
    {"gaussian:size=41,sigma=6", 6, 6, 41, 41, 0, 0},
    {"gaussian:sigma=10", 10, 10, 61, 61, 0, 0},
    {"gaussian:sigma=4x12", 4, 12, 25, 73, 0, 0},
    {"gaussian:sigma=60", 60, 60, 361, 361, 0, 0},
    {"gaussian:sigma=120", 120, 120, 721, 721, 0, 0},
    {"gaussian:sigma=30x250", 30, 250, 181, 1501, 0, 1},
    {"gaussian:sigma=1000", 1000, 1000, 6001, 6001, 0, 1},
    {"gaussian:sigma=1000x3", 1000, 3, 6001, 19, 0, 1},
    {"box:3", 0, 0, 3, 3, 1, 0},
    {"box:15", 0, 0, 15, 15, 1, 0},
    {"box:63x65", 0, 0, 63, 65, 0, 0},
    {"box:31x301", 0, 0, 31, 301, 0, 0},
    {"box:1001", 0, 0, 1001, 1001, 0, 0},
    {"box:4001x7", 0, 0, 4001, 7, 0, 1},
};
#define N_SPECS ((int)(sizeof specs / sizeof specs[0]))

static const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                    IC_BORDER_REFLECT, IC_BORDER_WRAP};

/* Photograph-like samples (smooth shading, edges, a little noise), as the
 * cpu blur test fills them: premultiplied colour divided by a blurred alpha
 * stays well conditioned. float32: the same shape, signed, a few hundred. */
static void fill(ic_image *im, ict_rng *r)
{
    const double top = im->type == IC_U16 ? 65535.0 : 255.0;
    const double fx = 0.02 + 0.1 * ict_uniform(r), fy = 0.02 + 0.1 * ict_uniform(r);
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < im->channels; c++) {
                double v = 0.5 + 0.3 * sin(fx * x * (c + 1) + fy * y) +
                           ((x / 7 + y / 5) % 3 == 0 ? 0.15 : -0.1) + 0.05 * (ict_uniform(r) - 0.5);
                v = v < 0 ? 0 : (v > 1 ? 1 : v);
                if (im->type == IC_F32)
                    ic_image_setf(im, x, y, c, (float)((v - 0.3) * 700.0));
                else
                    ic_image_set(im, x, y, c, (unsigned)lrint(v * top));
            }
}

static ic_context *context_with(const char *tuning)
{
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, "cuda", NULL) != IC_OK)
        return NULL;
    if (tuning) {
        ic_tuning t; /* the parse keeps the fields it does not name */
        if (ic_context_get_tuning(ctx, &t) != IC_OK || ic_tuning_parse(tuning, &t) != IC_OK ||
            ic_context_set_tuning(ctx, &t) != IC_OK) {
            ic_context_free(ctx);
            return NULL;
        }
    }
    return ctx;
}

/* src filtered on device images (device -> device) into a host copy *out
 * (created like src). */
/* " (first at x, y, c: got G, want W)" for two host images of one shape that
 * differ, "" when they do not. */
static const char *first_diff(const ic_image *got, const ic_image *want)
{
    static char buf[160];
    buf[0] = 0;
    for (int y = 0; y < got->height; y++)
        for (int x = 0; x < got->width; x++)
            for (int c = 0; c < got->channels; c++) {
                const float g = ic_image_getf(got, x, y, c), w = ic_image_getf(want, x, y, c);
                if (memcmp(&g, &w, sizeof g) != 0) {
                    snprintf(buf, sizeof buf, " (first at %d, %d, %d: got %.9g, want %.9g)", x, y,
                             c, g, w);
                    return buf;
                }
            }
    return buf;
}

static ic_status run_device(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                            const ic_params *p, ic_image *out)
{
    const size_t bytes = ic_image_size_bytes(src);
    void *ds = NULL, *dd = NULL;
    ic_status st =
        ic_image_create_type(out, src->width, src->height, src->channels, src->layout, src->type);
    if (st != IC_OK)
        return st;
    if (cudaMalloc(&ds, bytes) != cudaSuccess || cudaMalloc(&dd, bytes) != cudaSuccess ||
        cudaMemcpy(ds, src->data, bytes, cudaMemcpyHostToDevice) != cudaSuccess ||
        cudaMemset(dd, 0xA5, bytes) != cudaSuccess) {
        st = IC_ERR_DEVICE;
    } else {
        ic_image s, d;
        st = ic_image_wrap_device_type(&s, ds, src->width, src->height, src->channels, src->layout,
                                       src->pitch, src->type, 0, NULL);
        if (st == IC_OK)
            st = ic_image_wrap_device_type(&d, dd, src->width, src->height, src->channels,
                                           src->layout, src->pitch, src->type, 0, NULL);
        if (st == IC_OK)
            st = ic_convolve(ctx, &s, &d, k, p);
        if (st == IC_OK && cudaMemcpy(out->data, dd, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
            st = IC_ERR_DEVICE;
    }
    cudaFree(ds);
    cudaFree(dd);
    return st;
}

typedef struct blur_case {
    const blur_spec *spec;
    int w, h, ch;
    ic_sample_type type;
    ic_layout layout;
    ic_border border;
    int premul;
    float bias;
    int device; /* also run on device images and compare */
} blur_case;

static void describe(const blur_case *c, uint64_t seed, char *buf, size_t n)
{
    snprintf(buf, n, "seed %llu: %s on %dx%d x%d %s %s, border %s%s, bias %g%s",
             (unsigned long long)seed, c->spec->text, c->w, c->h, c->ch,
             c->type == IC_U16   ? "u16"
             : c->type == IC_F32 ? "f32"
                                 : "u8",
             c->layout == IC_SOA ? "SoA" : "AoS", ic_border_name(c->border),
             c->premul ? ", premultiplied" : "", c->bias, c->device ? ", device images" : "");
}

/* Runs one case; returns the largest distance from the oracle (levels, or
 * relative to the largest magnitude at float32). */
static double run_case(ic_context *auto_ctx, ic_context *blur_ctx, const blur_case *c,
                       uint64_t seed)
{
    char what[256];
    describe(c, seed, what, sizeof what);
    ict_rng r;
    ict_rng_seed(&r, seed);
    ic_context *ctx = c->spec->forced ? blur_ctx : auto_ctx;
    ic_kernel k;
    ic_image src, dst;
    if (ic_kernel_parse(&k, c->spec->text) != IC_OK) {
        printf("FAIL %s: %s\n", what, ic_last_error());
        failures++;
        return 99;
    }
    if (k.width != c->spec->nx || k.height != c->spec->ny) {
        printf("FAIL %s: kernel is %dx%d, the test expects %dx%d\n", what, k.width, k.height,
               c->spec->nx, c->spec->ny);
        failures++;
    }
    if (ic_image_create_type(&src, c->w, c->h, c->ch, c->layout, c->type) != IC_OK ||
        ic_image_create_type(&dst, c->w, c->h, c->ch, c->layout, c->type) != IC_OK) {
        printf("FAIL %s: no memory for the images\n", what);
        failures++;
        ic_kernel_free(&k);
        return 99;
    }
    fill(&src, &r);
    /* poison: 0xA5 bytes, and NaN (0xFF bytes) for float32 */
    memset(dst.data, c->type == IC_F32 ? 0xFF : 0xA5, ic_image_size_bytes(&dst));
    ic_params p;
    ic_params_default(&p);
    p.border = c->border;
    p.border_value = c->type == IC_U16 ? 40000.0f : c->type == IC_F32 ? -37.5f : 170.0f;
    p.alpha = c->premul ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_INDEPENDENT;
    p.bias = c->bias;
    double worst = 0;
    ic_plan plan;
    if (ic_plan_get(ctx, &src, &k, &p, &plan) != IC_OK) {
        printf("FAIL %s: no plan: %s\n", what, ic_last_error());
        failures++;
        worst = 99;
        goto out;
    }
    if (plan.method != IC_METHOD_BLUR) {
        printf("FAIL %s: planned %s, not blur\n", what, ic_method_name(plan.method));
        failures++;
    }
    if (ic_convolve(ctx, &src, &dst, &k, &p) != IC_OK) {
        printf("FAIL %s: %s\n", what, ic_last_error());
        failures++;
        worst = 99;
        goto out;
    }
    const size_t n = (size_t)c->w * c->h;
    double *res = malloc(n * (size_t)c->ch * sizeof *res);
    if (!res || ict_blur_oracle(&src, c->spec->sx, c->spec->sy, c->spec->nx, c->spec->ny, c->border,
                                p.border_value, c->premul, c->bias, res) != 0) {
        printf("FAIL %s: oracle out of memory\n", what);
        failures++;
        free(res);
        worst = 99;
        goto out;
    }
    const double top = c->type == IC_U16 ? 65535.0 : 255.0;
    double mag = fabs((double)p.border_value) + fabs((double)c->bias);
    if (c->type == IC_F32)
        for (int y = 0; y < c->h; y++)
            for (int x = 0; x < c->w; x++)
                for (int q = 0; q < c->ch; q++) {
                    const double a = fabs((double)ic_image_getf(&src, x, y, q));
                    mag = a > mag ? a : mag;
                }
    int bx = -1, by = -1, bc = -1;
    double bgot = 0, bwant = 0;
    for (int y = 0; y < c->h; y++)
        for (int x = 0; x < c->w; x++)
            for (int q = 0; q < c->ch; q++) {
                double want = res[(size_t)q * n + (size_t)y * c->w + x], got, d;
                if (c->type == IC_F32) {
                    got = ic_image_getf(&dst, x, y, q);
                    d = fabs(got - want) / mag;
                    if (!(d <= d + 1.0)) /* NaN: the poison survived */
                        d = INFINITY;
                } else {
                    want = want < 0 ? 0 : (want > top ? top : want);
                    got = ic_image_get(&dst, x, y, q);
                    d = fabs(got - want);
                }
                if (d > worst) {
                    worst = d;
                    bx = x;
                    by = y;
                    bc = q;
                    bgot = got;
                    bwant = want;
                }
            }
    free(res);
    const double limit = c->type == IC_F32 ? F32_REL : 1.0;
    if (!(worst <= limit)) {
        printf("FAIL %s: %.4g %s from float64 at (%d, %d, channel %d): %.6g, want %.6g\n", what,
               worst, c->type == IC_F32 ? "of the magnitude" : "levels", bx, by, bc, bgot, bwant);
        failures++;
    }
    if (c->device) {
        ic_image dev;
        const ic_status ds = run_device(ctx, &src, &k, &p, &dev);
        if (ds != IC_OK) {
            printf("FAIL %s: on device images: %s\n", what, ic_last_error());
            failures++;
        } else {
            if (!ic_image_equal(&dev, &dst)) { /* samples only: row padding is not written */
                printf("FAIL %s: device images differ from the host run%s\n", what,
                       first_diff(&dev, &dst));
                failures++;
            }
            ic_image_free(&dev);
        }
    }
out:
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_kernel_free(&k);
    return worst;
}

/* Explain names the method; a support over 2*ceil(4 sigma)+1 is refused. */
static void test_explain_and_refusal(ic_context *ctx)
{
    ic_image src;
    ic_kernel k;
    if (ic_image_create(&src, 64, 48, 3, IC_AOS) != IC_OK ||
        ic_kernel_parse(&k, "gaussian:sigma=120") != IC_OK) {
        printf("FAIL explain setup: %s\n", ic_last_error());
        failures++;
        return;
    }
    memset(src.data, 100, ic_image_size_bytes(&src));
    char buf[4096] = "";
    if (ic_plan_explain(ctx, &src, &k, NULL, buf, sizeof buf) != IC_OK ||
        !strstr(buf, "method blur")) {
        printf("FAIL explain of gaussian:sigma=120 does not name blur:\n%s\n", buf);
        failures++;
    }
    ic_kernel_free(&k);
    if (ic_kernel_parse(&k, "gaussian:size=301,sigma=10") == IC_OK) {
        ic_image dst;
        ic_image_create(&dst, 64, 48, 3, IC_AOS);
        const ic_status st = ic_convolve(ctx, &src, &dst, &k, NULL);
        const char *e = ic_last_error();
        if (st != IC_ERR_UNSUPPORTED || !strstr(e, "2*ceil(4 sigma)+1") || strchr(e, '\n')) {
            printf("FAIL gaussian:size=301,sigma=10: status %d, '%s'\n", (int)st, e);
            failures++;
        }
        ic_image_free(&dst);
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
}

/* A batch of device images under a blur past 255 (no weights): the batched
 * path declines it and each image gets the blur, equal to its own run;
 * ic_convolve_async refuses it (async 1). */
static void test_batch(ic_context *ctx, int async)
{
    enum { N = 3, W = 50, H = 40, C = 3 };
    ic_kernel k;
    ic_image host[N], want[N], dsrc[N], ddst[N];
    void *mem[2 * N] = {0};
    ict_rng r;
    ict_rng_seed(&r, 77);
    if (ic_kernel_parse(&k, "gaussian:sigma=60") != IC_OK) {
        printf("FAIL batch: %s\n", ic_last_error());
        failures++;
        return;
    }
    int ok = 1;
    for (int i = 0; i < N && ok; i++) {
        ok = ic_image_create(&host[i], W, H, C, IC_AOS) == IC_OK &&
             ic_image_create(&want[i], W, H, C, IC_AOS) == IC_OK;
        if (!ok)
            break;
        fill(&host[i], &r);
        const size_t bytes = ic_image_size_bytes(&host[i]);
        ok = ic_convolve(ctx, &host[i], &want[i], &k, NULL) == IC_OK &&
             cudaMalloc(&mem[2 * i], bytes) == cudaSuccess &&
             cudaMalloc(&mem[2 * i + 1], bytes) == cudaSuccess &&
             cudaMemcpy(mem[2 * i], host[i].data, bytes, cudaMemcpyHostToDevice) == cudaSuccess &&
             cudaMemset(mem[2 * i + 1], 0xA5, bytes) == cudaSuccess &&
             ic_image_wrap_device_type(&dsrc[i], mem[2 * i], W, H, C, IC_AOS, host[i].pitch, IC_U8,
                                       0, NULL) == IC_OK &&
             ic_image_wrap_device_type(&ddst[i], mem[2 * i + 1], W, H, C, IC_AOS, host[i].pitch,
                                       IC_U8, 0, NULL) == IC_OK;
    }
    if (ok && async) { /* refused in one line: the blur needs the synchronous run */
        const ic_status st = ic_convolve_async(ctx, &dsrc[0], &ddst[0], &k, NULL);
        const char *e = ic_last_error();
        if (st != IC_ERR_UNSUPPORTED || !strstr(e, "up to 255") || strchr(e, '\n')) {
            printf("FAIL async gaussian:sigma=60: status %d, '%s'\n", (int)st, e);
            failures++;
        }
    } else if (!ok || ic_convolve_batch(ctx, N, dsrc, ddst, &k, NULL) != IC_OK) {
        printf("FAIL %s of %d device images, gaussian:sigma=60: %s\n", async ? "async" : "batch", N,
               ic_last_error());
        failures++;
    } else {
        for (int i = 0; i < N; i++) {
            const size_t bytes = ic_image_size_bytes(&host[i]);
            if (cudaMemcpy(host[i].data, mem[2 * i + 1], bytes, cudaMemcpyDeviceToHost) !=
                    cudaSuccess ||
                !ic_image_equal(&host[i], &want[i])) {
                printf("FAIL %s image %d differs from its own run%s\n", async ? "async" : "batch",
                       i, first_diff(&host[i], &want[i]));
                failures++;
            }
        }
    }
    for (int i = 0; i < N; i++) {
        ic_image_free(&host[i]);
        ic_image_free(&want[i]);
    }
    for (int i = 0; i < 2 * N; i++)
        cudaFree(mem[i]);
    ic_kernel_free(&k);
}

int main(void)
{
    char why[256] = "";
    ic_backend_info info;
    int usable = 0;
    for (int i = 0; i < ic_backend_count(); i++)
        if (ic_backend_get(i, &info) == IC_OK && !strcmp(info.name, "cuda")) {
            usable = info.usable;
            snprintf(why, sizeof why, "%s", info.why);
        }
    if (!usable) {
        printf("SKIPPED: backend cuda: %s\n", why[0] ? why : "not built");
        return 77;
    }
    const char *q = getenv("IC_TEST_QUICK");
    const int quick = q && *q && strcmp(q, "0") != 0;
    int cases = quick ? QUICK_CASES : CASES;
    uint64_t seed0 = SEED;
    const char *e = getenv("ICT_SEED");
    if (e)
        seed0 = strtoull(e, NULL, 0);
    if ((e = getenv("ICT_CASES")) != NULL)
        cases = atoi(e);
    /* built-in ceilings: the blur's choice does not read them, and the
     * sanitizer runs skip the probes */
    ic_context *auto_ctx = context_with("calibrate=builtin"),
               *blur_ctx = context_with("method=blur,calibrate=builtin");
    if (!auto_ctx || !blur_ctx) {
        printf("FAIL: cuda contexts: %s\n", ic_last_error());
        return 1;
    }
    test_explain_and_refusal(auto_ctx);
    test_batch(auto_ctx, 0);
    test_batch(auto_ctx, 1);

    double worst8 = 0, worst16 = 0, worstf = 0;
    int ran = 0;
    for (int i = 0; i < cases; i++) {
        const uint64_t seed = ict_mix(seed0, (uint64_t)i);
        ict_rng r;
        ict_rng_seed(&r, seed);
        blur_case c;
        memset(&c, 0, sizeof c);
        /* every spec, border, channel count and type in turn; sizes at random */
        c.spec = &specs[i % N_SPECS];
        if (quick && c.spec->big)
            c.spec = &specs[(i * 5) % 7];
        c.border = borders[(i / N_SPECS + i) % 5];
        c.ch = 1 + (i % 4);
        c.type = (i / 2) % 3 == 0 ? IC_U8 : (i / 2) % 3 == 1 ? IC_U16 : IC_F32;
        c.layout = (i / 3) % 2 ? IC_SOA : IC_AOS;
        const int small = c.spec->big || quick;
        c.w = ict_range(&r, 1, small ? 40 : 90);
        c.h = ict_range(&r, 1, small ? 30 : 70);
        if (i % 11 == 0 && i % 2) /* one column or one row: every window mostly border */
            c.w = 1;
        else if (i % 11 == 0)
            c.h = 1;
        c.premul = c.type != IC_F32 && (c.ch == 2 || c.ch == 4) && i % 3 == 0;
        c.bias = i % 7 == 0 ? (c.type == IC_F32 ? 12.5f : 3.0f) : 0.0f;
        c.device = i % 9 == 4;
        const double d = run_case(auto_ctx, blur_ctx, &c, seed);
        if (c.type == IC_U8)
            worst8 = d > worst8 ? d : worst8;
        else if (c.type == IC_U16)
            worst16 = d > worst16 ? d : worst16;
        else
            worstf = d > worstf ? d : worstf;
        ran++;
    }
    { /* radii hundreds of times the line: every window end past it, both
       * passes; every border with every type, layout and channel count */
        static const blur_spec s300 = {"gaussian:sigma=300", 300, 300, 1801, 1801, 0, 1};
        static const blur_spec s500 = {"gaussian:sigma=500", 500, 500, 3001, 3001, 0, 1};
        static const blur_spec b999 = {"box:999x1401", 0, 0, 999, 1401, 0, 1};
        static const struct {
            const blur_spec *spec;
            int w, h, all; /* all: 30 cases (border x type x layout), else 5; -1: not quick */
        } far[] = {
            {&s300, 17, 5, 1}, {&s500, 64, 48, 1}, {&s300, 1, 2, 0},
            {&b999, 2, 1, 0},  {&b999, 13, 3, -1},
        };
        for (size_t f = 0; f < sizeof far / sizeof far[0]; f++) {
            if (quick && far[f].all < 0)
                continue;
            const int all = far[f].all != 0 && !(quick && f > 0); /* quick: 17x5 only */
            for (int i = 0; i < (all ? 30 : 5); i++) {
                blur_case c;
                memset(&c, 0, sizeof c);
                c.spec = far[f].spec;
                c.w = far[f].w;
                c.h = far[f].h;
                c.border = borders[i % 5];
                c.type = (i / 5) % 3 == 0 ? IC_U8 : (i / 5) % 3 == 1 ? IC_U16 : IC_F32;
                c.layout = (i / 15 + f) % 2 ? IC_SOA : IC_AOS;
                c.ch = 1 + (i + (int)f) % 4; /* 30 cases: every border with every count */
                c.premul = c.type != IC_F32 && (c.ch == 2 || c.ch == 4) && i % 3 == 0;
                c.device = i % 7 == 3;
                const double d =
                    run_case(auto_ctx, blur_ctx, &c, ict_mix(seed0, 3000 + 100 * f + i));
                if (c.type == IC_U8)
                    worst8 = d > worst8 ? d : worst8;
                else if (c.type == IC_U16)
                    worst16 = d > worst16 ? d : worst16;
                else
                    worstf = d > worstf ? d : worstf;
                ran++;
            }
        }
    }
    if (!quick) { /* larger images: many blocks of runs per line */
        static const blur_spec hd = {"gaussian:sigma=30", 30, 30, 181, 181, 0, 0};
        static const blur_spec wide = {"gaussian:sigma=150x1", 150, 1, 901, 7, 0, 0};
        const blur_case big[] = {
            {&hd, 640, 360, 3, IC_U8, IC_AOS, IC_BORDER_MIRROR, 0, 0.0f, 1},
            {&hd, 333, 257, 4, IC_U16, IC_SOA, IC_BORDER_CONSTANT, 1, 0.0f, 0},
            {&wide, 6000, 5, 1, IC_U8, IC_AOS, IC_BORDER_WRAP, 0, 0.0f, 0},
            {&wide, 6000, 5, 2, IC_F32, IC_AOS, IC_BORDER_REFLECT, 0, 0.0f, 0},
        };
        for (size_t i = 0; i < sizeof big / sizeof big[0]; i++) {
            const double d = run_case(auto_ctx, blur_ctx, &big[i], ict_mix(seed0, 1000 + i));
            if (big[i].type == IC_F32)
                worstf = d > worstf ? d : worstf;
            else if (big[i].type == IC_U16)
                worst16 = d > worst16 ? d : worst16;
            else
                worst8 = d > worst8 ? d : worst8;
            ran++;
        }
    }
    ic_context_free(auto_ctx);
    ic_context_free(blur_ctx);
    printf("blur on cuda: %d cases; largest distance from float64: %.3f levels (8-bit), %.3f "
           "(16-bit), %.3g of the magnitude (float32)\n",
           ran, worst8, worst16, worstf);
    if (failures) {
        printf("test_gpu_blur: FAILED (%d failures)\n", failures);
        return 1;
    }
    printf("test_gpu_blur: OK\n");
    return 0;
}
#endif
