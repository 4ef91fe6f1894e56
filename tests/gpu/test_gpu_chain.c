/*
 * test_gpu_chain.c - the device engine of chains, magnitudes and |sum|
 * (docs/definitions.md#chains) on the `cuda` backend against the host engine
 * (the cpu backend's result for the same host image and parameters):
 *
 *  1. ic_chain_explain on cuda names the device engine; on a context split
 *     across two devices (devices 0 and 0, where the driver allows it) the
 *     host engine, saying why, and that context still matches cpu.
 *  2. A lone 10 under sobel on device images: 20 beside it, round(sqrt(200))
 *     = 14 diagonally, 0 on it.
 *  3. Random cases, seeded: sobel, scharr and prewitt magnitudes, --abs of
 *     asymmetric kernels (sobel-x, "0 1 2", random integer kernels), chains
 *     of 2-4 steps mixing blurs, sharpen and magnitudes (with and without
 *     --abs); every border mode, 1-4 channels, AoS and SoA, every alpha mode,
 *     u8, u16 and f32, host and device images as source and destination
 *     (device ones on the default stream or on a stream of their own), and
 *     odd small images, smaller than the kernels. Device destinations are
 *     poisoned before each run (0xFF bytes: NaN in float32) and their row
 *     padding must keep the poison; host destinations keep their guard bytes.
 *     Integers must be within 1 level of the host engine's: both sum in
 *     float32 but in different orders (the backend may factor a kernel into
 *     1D passes), so a sum lying on a rounding boundary may round either way.
 *     Float32 samples must be within 1e-4 * (1 + the largest |sample| of the
 *     host result) of it. Where a chain amplifies float32 rounding past that
 *     (long 16-bit chains of sharpen and magnitudes), a sample may differ by
 *     up to the float32 bound of the chain instead: taps summed x 2^-23 x the
 *     largest |input| x the product of the steps' sum |w| (sqrt 2 more for a
 *     magnitude, 40x more for premultiplied colour); the summary counts
 *     those samples.
 *     Premultiplied colour is not compared where the host's alpha, less the
 *     bias, is under 5% of the type's maximum (colour divided by a small alpha
 *     sum is noise in every engine).
 *  4. A device image on another device ordinal than the context's is refused
 *     with IC_ERR_INVALID_ARG.
 *
 * Without a GPU: exit 77 (SKIPPED). IC_TEST_QUICK=1 runs a few small cases
 * (the compute-sanitizer run). ICT_SEED=N and ICT_CASES=N narrow a run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_check.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xC4A1D3ull
#define CASES 400
#define QUICK_CASES 32

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* A device image of like's shape with `extra` padding bytes a row. */
typedef struct dev_img {
    void *p;
    size_t bytes;
    ic_image im;
} dev_img;

static int dev_alloc(dev_img *d, const ic_image *like, size_t extra, void *stream)
{
    memset(d, 0, sizeof *d);
    const size_t pitch = ic_image_row_bytes(like) + extra;
    const size_t rows =
        (size_t)like->height * (size_t)(like->layout == IC_SOA ? like->channels : 1);
    d->bytes = pitch * rows;
    if (cudaMalloc(&d->p, d->bytes) != cudaSuccess)
        return 1;
    return ic_image_wrap_device_type(&d->im, d->p, like->width, like->height, like->channels,
                                     like->layout, pitch, like->type, 0, stream) != IC_OK;
}

static void dev_free(dev_img *d)
{
    if (d->p)
        cudaFree(d->p);
    memset(d, 0, sizeof *d);
}

/* The whole device buffer into host memory (NULL on failure). */
static uint8_t *dev_download(const dev_img *d)
{
    uint8_t *h = malloc(d->bytes);
    if (h && cudaMemcpy(h, d->p, d->bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(h);
        return NULL;
    }
    return h;
}

/* 1 when the image's row padding in the downloaded buffer is still 0xFF. */
static int padding_poisoned(const dev_img *d, const uint8_t *h)
{
    const size_t rb = ic_image_row_bytes(&d->im);
    for (size_t o = 0; o < d->bytes; o++)
        if (o % d->im.pitch >= rb && h[o] != 0xFF)
            return 0;
    return 1;
}

/* ---- what a case filters -------------------------------------------------- */

static const char *const mags[] = {"sobel", "scharr", "prewitt"};
static const char *const asym[] = {"sobel-x", "sobel-y", "0 1 2", "scharr-x",
                                   "-1 -1 0; -1 0 1; 0 1 2"};
static const char *const mix[] = {"gaussian:3", "gaussian:5", "box:3",   "sharpen",
                                  "sobel",      "prewitt",    "box:1x5", "unsharp:5"};

/* Kernel i of a case: kinds 0 magnitude, 1 |sum| of an asymmetric kernel,
 * 2 a chain of blurs, sharpen and magnitudes, 3 a chain that starts with a
 * magnitude. */
static ic_status case_kernel(ic_kernel *k, ict_rng *r, int kind, int i)
{
    if (kind == 0 || (kind == 3 && i == 0))
        return ic_kernel_parse(k, mags[ict_below(r, 3)]);
    if (kind == 1)
        return ict_below(r, 3) ? ic_kernel_parse(k, asym[ict_below(r, 5)])
                               : ict_kernel_random(k, r, 2 * ict_range(r, 0, 2) + 1,
                                                   2 * ict_range(r, 0, 2) + 1, ICT_K_INT);
    return ic_kernel_parse(k, mix[ict_below(r, 8)]);
}

/* Random samples of any type (float32: ict_f32_random's range). */
static void fill(ict_buf *b, ict_rng *r, int alpha_style)
{
    if (b->img.type == IC_F32)
        ict_f32_random(&b->img, r, 1);
    else
        ict_buf_random(b, r, alpha_style);
}

/* Compares got (host) with the host engine's want; 0 when they agree. */
static long long beyond_flat; /* samples past the flat tolerance, within the bound */

static int compare(const ic_image *got, const ic_image *want, int premul, float bias, double bound,
                   const char *what)
{
    const int C = got->channels, ac = C - 1;
    const double max = ic_sample_max(got->type);
    double scale = 0;
    for (int c = 0; c < C; c++)
        for (int y = 0; y < got->height; y++)
            for (int x = 0; x < got->width; x++) {
                const double v = fabs(ic_image_getf(want, x, y, c));
                scale = v > scale && isfinite(v) ? v : scale;
            }
    const double flat = got->type == IC_F32 ? 1e-4 * (1.0 + scale) : 1.0;
    const double tol = bound > flat ? bound : flat;
    for (int c = 0; c < C; c++)
        for (int y = 0; y < got->height; y++)
            for (int x = 0; x < got->width; x++) {
                if (premul && c < ac && ic_image_getf(want, x, y, ac) - bias < 0.05 * max)
                    continue;
                const double g = ic_image_getf(got, x, y, c), w = ic_image_getf(want, x, y, c);
                beyond_flat += fabs(g - w) > flat;
                if (!(fabs(g - w) <= tol)) { /* NaN (the poison) fails too */
                    CHECK(0, "%s: sample (%d,%d,%d) = %.6g, host engine %.6g (tolerance %.3g)",
                          what, x, y, c, g, w, tol);
                    return 1;
                }
            }
    return 0;
}

/* The float32 bound of a chain (see the top of the file); max_in is the
 * largest |input| (border value included). */
static double float_bound(const ic_kernel *ks, int n, double max_in, int premul)
{
    double taps = 0, amp = 1;
    for (int i = 0; i < n; i++) {
        double l1 = 0;
        for (int t = 0; t < ks[i].width * ks[i].height; t++)
            l1 += fabs(ks[i].coef[t]);
        l1 /= fabs(ks[i].divisor);
        amp *= ks[i].magnitude ? l1 * sqrt(2.0) : l1;
        taps += (double)ks[i].width * ks[i].height * (ks[i].magnitude ? 2 : 1);
    }
    return taps * ldexp(1.0, -23) * max_in * amp * (premul ? 40.0 : 1.0);
}

static ic_alpha chain_alpha(const ic_kernel *ks, int n, int C, ic_alpha a)
{
    if (C != 2 && C != 4)
        return IC_ALPHA_INDEPENDENT;
    if (a != IC_ALPHA_AUTO)
        return a;
    double prod = 1.0;
    for (int i = 0; i < n; i++)
        prod *= ic_kernel_sum(&ks[i]);
    return fabs(prod - 1.0) < 1e-6 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_KEEP;
}

static int run(ic_context *ctx, const ic_image *s, ic_image *d, const ic_kernel *ks, int n,
               const ic_params *p)
{
    return n == 1 ? ic_convolve(ctx, s, d, &ks[0], p) : ic_convolve_chain(ctx, s, d, ks, n, p);
}

static void random_case(ic_context *gpu, ic_context *cpu, const char *name, uint64_t seed, int i,
                        int max_dim, void *stream)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)i));
    const int kind = (int)ict_below(&r, 4);
    const int small = ict_below(&r, 4) == 0; /* smaller than most kernels */
    const int W = small ? ict_range(&r, 1, 4) : ict_range(&r, 1, max_dim);
    const int H = small ? ict_range(&r, 1, 4) : ict_range(&r, 1, max_dim);
    const int C = 1 + i % 4;
    static const ic_sample_type types[] = {IC_U8, IC_U16, IC_F32};
    const ic_sample_type type = types[i % 3];
    const int mem = (i / 4) % 4; /* bit 0: device source, bit 1: device destination */
    const ic_layout sl = ict_below(&r, 2) ? IC_SOA : IC_AOS,
                    dl = ict_below(&r, 2) ? IC_SOA : IC_AOS;
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)(i % 5);
    p.border_value = type == IC_F32 ? (float)ict_uniform(&r) : (float)(ic_sample_max(type) / 3);
    if (ict_below(&r, 2))
        p.border_value = 0.0f;
    p.correlate = (int)ict_below(&r, 2);
    p.alpha = (ic_alpha)ict_below(&r, 4);
    p.abs = kind == 1 || (kind >= 2 && ict_below(&r, 3) == 0);
    p.bias = ict_below(&r, 3) ? 0.0f : (float)((ict_uniform(&r) - 0.5) * 0.1 * ic_sample_max(type));
    const int n = kind <= 1 ? 1 : ict_range(&r, 2, 4);
    ic_kernel ks[4];
    memset(ks, 0, sizeof ks);
    for (int j = 0; j < n; j++)
        if (case_kernel(&ks[j], &r, kind, j) != IC_OK)
            CHECK(0, "%s case %d: kernel: %s", name, i, ic_last_error());
    const int premul = chain_alpha(ks, n, C, p.alpha) == IC_ALPHA_PREMULTIPLY;
    void *st = ict_below(&r, 2) ? stream : NULL;

    ict_buf src, dst;
    ic_image want;
    dev_img ds, dd;
    memset(&ds, 0, sizeof ds);
    memset(&dd, 0, sizeof dd);
    char what[512];
    snprintf(what, sizeof what,
             "%s case %d (seed %llu): kind %d, %dx%dx%d %s->%s %s, %s source, %s destination%s, "
             "%d step%s (%s%s%s%s%s%s%s), border %s %g, %s, abs %d, bias %g, alpha %s",
             name, i, (unsigned long long)seed, kind, W, H, C, ict_layout_str(sl),
             ict_layout_str(dl),
             type == IC_U8    ? "u8"
             : type == IC_U16 ? "u16"
                              : "f32",
             mem & 1 ? "device" : "host", mem & 2 ? "device" : "host", st ? " (own stream)" : "", n,
             n > 1 ? "s" : "", ks[0].name, n > 1 ? ", " : "", n > 1 ? ks[1].name : "",
             n > 2 ? ", " : "", n > 2 ? ks[2].name : "", n > 3 ? ", " : "", n > 3 ? ks[3].name : "",
             ict_border_str(p.border), (double)p.border_value,
             p.correlate ? "correlate" : "convolve", p.abs, (double)p.bias, ict_alpha_str(p.alpha));
    if (ict_buf_alloc_type(&src, W, H, C, sl, 4 * ict_below(&r, 3), type) != 0 ||
        ict_buf_alloc_type(&dst, W, H, C, dl, 8, type) != 0 ||
        ic_image_create_type(&want, W, H, C, dl, type) != IC_OK) {
        CHECK(0, "%s: out of host memory", what);
        return;
    }
    fill(&src, &r, (int)ict_below(&r, 3));
    double max_in = fabs(p.border_value);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const double v = fabs(ic_image_getf(&src.img, x, y, c));
                max_in = v > max_in ? v : max_in;
            }
    const double bound = float_bound(ks, n, max_in, premul);
    ic_status s = run(cpu, &src.img, &want, ks, n, &p);
    CHECK(s == IC_OK, "%s: host engine: %s", what, ic_last_error());

    const ic_image *in = &src.img;
    ic_image *out = &dst.img;
    if ((mem & 1) && s == IC_OK) {
        if (dev_alloc(&ds, &src.img, 8, st) != 0 ||
            cudaMemcpy2D(ds.p, ds.im.pitch, src.img.data, src.img.pitch,
                         ic_image_row_bytes(&src.img), ds.bytes / ds.im.pitch,
                         cudaMemcpyHostToDevice) != cudaSuccess) {
            CHECK(0, "%s: device source: %s", what, cudaGetErrorString(cudaGetLastError()));
            s = IC_ERR_DEVICE;
        }
        in = &ds.im;
    }
    if ((mem & 2) && s == IC_OK) {
        if (dev_alloc(&dd, &dst.img, 8, st) != 0 ||
            cudaMemset(dd.p, 0xFF, dd.bytes) != cudaSuccess) {
            CHECK(0, "%s: device destination: %s", what, cudaGetErrorString(cudaGetLastError()));
            s = IC_ERR_DEVICE;
        }
        out = &dd.im;
    }
    ict_buf_fill(&dst, 0xFF);
    if (s == IC_OK) {
        s = run(gpu, in, out, ks, n, &p);
        CHECK(s == IC_OK, "%s: device engine: %s (%s)", what, ic_status_str(s), ic_last_error());
    }
    if (s == IC_OK && (mem & 2)) {
        uint8_t *h = dev_download(&dd);
        CHECK(h != NULL, "%s: download: %s", what, cudaGetErrorString(cudaGetLastError()));
        if (h) {
            CHECK(padding_poisoned(&dd, h), "%s: the device destination's row padding changed",
                  what);
            ic_image view = dd.im;
            view.data = h;
            view.memory = IC_MEM_HOST;
            compare(&view, &want, premul, p.bias, bound, what);
            free(h);
        }
    } else if (s == IC_OK) {
        CHECK(ict_buf_padding_is(&dst, 0xFF, NULL), "%s: host destination padding changed", what);
        compare(&dst.img, &want, premul, p.bias, bound, what);
    }
    dev_free(&ds);
    dev_free(&dd);
    ict_buf_free(&src);
    ict_buf_free(&dst);
    ic_image_free(&want);
    for (int j = 0; j < n; j++)
        ic_kernel_free(&ks[j]);
}

/* ---- explain, the worked example, refusals -------------------------------- */

static void explained(ic_context *gpu)
{
    ic_image src;
    ic_image_create(&src, 32, 32, 3, IC_AOS);
    ic_kernel ks[2];
    ic_kernel_parse(&ks[0], "box:3");
    ic_kernel_parse(&ks[1], "sobel");
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_REPLICATE;
    char buf[4096];
    CHECK(ic_chain_explain(gpu, &src, &ks[1], 1, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "device engine of backend cuda") && strstr(buf, "transpose") &&
              !strstr(buf, "host CPU"),
          "cuda: sobel runs in the device engine:\n%s", buf);
    CHECK(ic_chain_explain(gpu, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "2 steps after fusion") && strstr(buf, "device engine of backend cuda"),
          "cuda: box:3 then sobel runs in the device engine:\n%s", buf);
    p.abs = 1;
    CHECK(ic_chain_explain(gpu, &src, ks, 1, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "device engine of backend cuda"),
          "cuda: box:3 --abs runs in the device engine:\n%s", buf);
    ic_kernel_free(&ks[0]);
    ic_kernel_free(&ks[1]);
    ic_image_free(&src);
}

/* Two shares on device 0: the host engine, and the same samples as cpu. */
static void split_context(ic_context *cpu)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.n_devices = 2;
    ic_context *two = NULL;
    if (ic_context_create(&two, "cuda", &o) != IC_OK) {
        printf("  split context (devices 0 and 0) not created here: %s\n", ic_last_error());
        return;
    }
    ic_image src, a, b;
    ic_image_create(&src, 40, 30, 3, IC_AOS);
    ic_image_create(&a, 40, 30, 3, IC_AOS);
    ic_image_create(&b, 40, 30, 3, IC_AOS);
    ic_image_chart(&src, 7);
    ic_kernel k;
    ic_kernel_parse(&k, "scharr");
    char buf[4096];
    CHECK(ic_chain_explain(two, &src, &k, 1, NULL, buf, sizeof buf) == IC_OK &&
              strstr(buf, "runs on the host CPU") && strstr(buf, "several devices"),
          "split context: the host engine, saying why:\n%s", buf);
    CHECK(ic_convolve(two, &src, &a, &k, NULL) == IC_OK &&
              ic_convolve(cpu, &src, &b, &k, NULL) == IC_OK && ic_image_equal(&a, &b),
          "split context: scharr as on cpu (%s)", ic_last_error());
    printf("  split context: host engine, %s\n",
           ic_image_equal(&a, &b) ? "equal to cpu" : "DIFFERS");
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&a);
    ic_image_free(&b);
    ic_context_free(two);
}

static void worked_example(ic_context *gpu)
{
    ic_image h;
    ic_image_create(&h, 7, 7, 1, IC_AOS);
    ic_image_set(&h, 3, 3, 0, 10);
    dev_img s, d;
    if (dev_alloc(&s, &h, 0, NULL) != 0 || dev_alloc(&d, &h, 0, NULL) != 0 ||
        cudaMemcpy2D(s.p, s.im.pitch, h.data, h.pitch, 7, 7, cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaMemset(d.p, 0xFF, d.bytes) != cudaSuccess) {
        CHECK(0, "worked example: device memory");
        return;
    }
    ic_kernel k;
    ic_kernel_parse(&k, "sobel");
    CHECK(ic_convolve(gpu, &s.im, &d.im, &k, NULL) == IC_OK, "sobel on device images: %s",
          ic_last_error());
    uint8_t *o = dev_download(&d);
    CHECK(o && o[3 * 7 + 4] == 20 && o[3 * 7 + 2] == 20 && o[2 * 7 + 3] == 20 &&
              o[3 * 7 + 3] == 0 && o[4 * 7 + 4] == 14,
          "sobel of a lone 10 on device images: 20 beside, 0 on it, 14 diagonally (got %d %d %d "
          "%d %d)",
          o ? o[3 * 7 + 4] : -1, o ? o[3 * 7 + 2] : -1, o ? o[2 * 7 + 3] : -1,
          o ? o[3 * 7 + 3] : -1, o ? o[4 * 7 + 4] : -1);
    free(o);
    /* the same device pointer claimed on an ordinal the context does not run on */
    ic_image other = s.im;
    other.device = 7;
    CHECK(ic_convolve(gpu, &other, &d.im, &k, NULL) == IC_ERR_INVALID_ARG,
          "a device image of another ordinal is refused (%s)", ic_last_error());
    ic_kernel_free(&k);
    dev_free(&s);
    dev_free(&d);
    ic_image_free(&h);
}

int main(void)
{
    char why[160];
    if (!ict_backend_usable("cuda", why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 77;
    }
    int quick, ncases;
    uint64_t seed;
    ict_run_env(&quick, &seed, SEED, &ncases, CASES, QUICK_CASES);
    const int max_dim = quick ? 24 : 90;
    ic_context *gpu = NULL, *cpu = NULL;
    if (ic_context_create(&gpu, "cuda", NULL) != IC_OK ||
        ic_context_create(&cpu, "cpu", NULL) != IC_OK) {
        printf("FAIL contexts: %s\n", ic_last_error());
        return 1;
    }
    cudaStream_t stream = NULL;
    if (cudaStreamCreate(&stream) != cudaSuccess) {
        printf("FAIL cudaStreamCreate\n");
        return 1;
    }
    printf("test_gpu_chain: seed %llu, %d cases\n", (unsigned long long)seed, ncases);
    explained(gpu);
    worked_example(gpu);
    split_context(cpu);
    for (int i = 0; i < ncases && failures < 5; i++)
        random_case(gpu, cpu, "cuda", seed, i, max_dim, (void *)stream);
    cudaStreamDestroy(stream);
    ic_context_free(gpu);
    ic_context_free(cpu);
    printf("test_gpu_chain: %d cases, %lld samples past 1 level (integers) or 1e-4 (float32) "
           "but within the chain's float32 bound, %d failures\n%s\n",
           ncases, beyond_flat, failures, failures ? "FAILED" : "all passed");
    return failures ? 1 : 0;
}

#endif /* IC_HAVE_CUDA */
