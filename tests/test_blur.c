/*
 * test_blur.c - gaussian and box blurs of any size (the `cpu` backend's
 * constant-time path and the FIR it keeps for small ones) against a float64
 * oracle written here: the image extended by the border rule over the support
 * 2*ceil(3 sigma)+1 (or the box), then the exact separable sum. Every border
 * mode, 1 to 4 channels, both layouts, 8 and 16 bits, images smaller than the
 * blur, sigma 0.3 to 1000, boxes past 255, premultiplied alpha; then the
 * kernel text (sigma=SXxSY, the truncation warning) and its one-line errors.
 * Every output sample must be within 1 level of the oracle; the largest
 * distance is printed.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "oracle.h" /* ict_border_map: the border rule, apart from the library */

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

/* Normalised 1D weights over n taps: a Gaussian of sigma, or a box when sigma is 0. */
static double *weights(int n, double sigma)
{
    double *w = malloc((size_t)n * sizeof *w), s = 0;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) / 2;
        w[i] = sigma > 0 ? exp(-x * x / (2 * sigma * sigma)) : 1.0;
        s += w[i];
    }
    for (int i = 0; i < n; i++)
        w[i] /= s;
    return w;
}

/* The float64 blur of one plane of values v (w x h), outside value out. */
static void blur_plane(const double *v, int w, int h, const double *wx, int nx, const double *wy,
                       int ny, ic_border b, double out, double *res)
{
    double *t = malloc((size_t)w * (size_t)h * sizeof *t); /* the x pass of each image row */
    const int rx = nx / 2, ry = ny / 2;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int i = 0; i < nx; i++) {
                const int sx = ict_border_map(x + i - rx, w, b);
                s += wx[i] * (sx < 0 ? out : v[(size_t)y * w + sx]);
            }
            t[(size_t)y * w + x] = s;
        }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            double s = 0;
            for (int j = 0; j < ny; j++) {
                const int sy = ict_border_map(y + j - ry, h, b); /* rows outside: all `out` */
                s += wy[j] * (sy < 0 ? out : t[(size_t)sy * w + x]);
            }
            res[(size_t)y * w + x] = s;
        }
    free(t);
}

typedef struct blur_case {
    const char *spec;
    double sx, sy; /* 0: box */
    int nx, ny;    /* support */
} blur_case;

/* A photograph-like image: smooth shading, edges and a little noise. */
static void fill(ic_image *im)
{
    const double top = im->type == IC_U16 ? 65535.0 : 255.0;
    const double fx = 0.02 + 0.1 * uniform(), fy = 0.02 + 0.1 * uniform();
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < im->channels; c++) {
                double v = 0.5 + 0.3 * sin(fx * x * (c + 1) + fy * y) +
                           ((x / 7 + y / 5) % 3 == 0 ? 0.15 : -0.1) + 0.05 * (uniform() - 0.5);
                v = v < 0 ? 0 : (v > 1 ? 1 : v);
                ic_image_set(im, x, y, c, (unsigned)lrint(v * top));
            }
}

/* Runs one case on `backend` and compares every sample with the oracle. */
static double run_case(const blur_case *bc, int w, int h, int ch, ic_sample_type type,
                       ic_layout layout, ic_border b, ic_alpha alpha, const char *backend)
{
    ic_kernel k;
    ic_image src, dst;
    if (ic_kernel_parse(&k, bc->spec) != IC_OK) {
        EXPECT(0, "%s: %s", bc->spec, ic_last_error());
        return 99;
    }
    EXPECT(k.width == bc->nx && k.height == bc->ny, "%s is %dx%d, not %dx%d", bc->spec, k.width,
           k.height, bc->nx, bc->ny);
    ic_image_create_type(&src, w, h, ch, layout, type);
    ic_image_create_type(&dst, w, h, ch, layout, type);
    fill(&src);
    ic_params p;
    ic_params_default(&p);
    p.border = b;
    p.border_value = type == IC_U16 ? 40000.0f : 170.0f;
    p.alpha = alpha;
    const ic_status s = ic_filter(&src, &dst, &k, &p, backend);
    double worst = 0;
    if (s != IC_OK) {
        EXPECT(0, "%s %dx%dx%d: %s", bc->spec, w, h, ch, ic_last_error());
        worst = 99;
        goto out;
    }
    const double top = type == IC_U16 ? 65535.0 : 255.0;
    const int premul = (ch == 2 || ch == 4) && alpha == IC_ALPHA_AUTO;
    double *wx = weights(bc->nx, bc->sx), *wy = weights(bc->ny, bc->sy);
    const size_t n = (size_t)w * h;
    double *v = malloc(n * sizeof *v), *res = malloc(n * ch * sizeof *res);
    for (int c = 0; c < ch; c++) {
        const int colour = premul && c != ch - 1;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                v[(size_t)y * w + x] = (double)ic_image_get(&src, x, y, c) *
                                       (colour ? (double)ic_image_get(&src, x, y, ch - 1) : 1.0);
        const double out = colour ? (double)p.border_value * p.border_value : p.border_value;
        blur_plane(v, w, h, wx, bc->nx, wy, bc->ny, b, out, res + (size_t)c * n);
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                double want = res[(size_t)c * n + (size_t)y * w + x];
                if (premul && c != ch - 1) {
                    const double a = res[(size_t)(ch - 1) * n + (size_t)y * w + x];
                    want = a > 0 ? want / a : 0;
                }
                want = want < 0 ? 0 : (want > top ? top : want);
                const double d = fabs((double)ic_image_get(&dst, x, y, c) - want);
                if (d > worst)
                    worst = d;
            }
    free(v);
    free(res);
    free(wx);
    free(wy);
    EXPECT(worst <= 1.0, "%s on %s %dx%d, %d channels, %s, %s, border %s: %.3f levels from float64",
           bc->spec, backend, w, h, ch, type == IC_U16 ? "16-bit" : "8-bit",
           layout == IC_SOA ? "planar" : "interleaved", ic_border_name(b), worst);
out:
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_kernel_free(&k);
    return worst;
}

static void test_accuracy(void)
{
    static const blur_case cases[] = {
        {"gaussian:sigma=0.3", 0.3, 0.3, 3, 3},
        {"gaussian:sigma=2", 2, 2, 13, 13},
        {"gaussian:sigma=10", 10, 10, 61, 61}, /* just past the FIR crossover */
        {"gaussian:sigma=25", 25, 25, 151, 151},
        {"gaussian:sigma=60", 60, 60, 361, 361},
        {"gaussian:sigma=4x12", 4, 12, 25, 73},
        {"gaussian:sigma=30x90", 30, 90, 181, 541},
        {"box:3", 0, 0, 3, 3},
        {"box:15", 0, 0, 15, 15},
        {"box:63x65", 0, 0, 63, 65},
        {"box:31x301", 0, 0, 31, 301},
        {"box:1001", 0, 0, 1001, 1001},
    };
    const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                 IC_BORDER_REFLECT, IC_BORDER_WRAP};
    double worst8 = 0, worst16 = 0;
    int n = 0;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        for (int bi = 0; bi < 5; bi++)
            for (int ch = 1; ch <= 4; ch++) {
                /* cycle through shapes, types and layouts rather than all of them */
                const int t = (int)(i * 20 + (size_t)bi * 4 + (size_t)ch);
                const ic_sample_type type = t % 2 ? IC_U16 : IC_U8;
                const ic_layout layout = t % 3 == 0 ? IC_SOA : IC_AOS;
                const int w = 37 + (t * 13) % 50, h = 29 + (t * 7) % 40;
                const ic_alpha alpha = t % 5 == 0 ? IC_ALPHA_AUTO : IC_ALPHA_INDEPENDENT;
                const double d =
                    run_case(&cases[i], w, h, ch, type, layout, borders[bi], alpha, "cpu");
                if (type == IC_U16)
                    worst16 = d > worst16 ? d : worst16;
                else
                    worst8 = d > worst8 ? d : worst8;
                n++;
            }
    printf("accuracy: %d cases, largest distance from float64 %.3f levels (8-bit), %.3f (16-bit)\n",
           n, worst8, worst16);
}

/* Sigma up to 1000 and boxes longer than the image: the window covers the
 * whole image several times over, through every border rule. */
static void test_larger_than_image(void)
{
    static const blur_case big[] = {
        {"gaussian:sigma=250", 250, 250, 1501, 1501},
        {"gaussian:sigma=1000x300", 1000, 300, 6001, 1801},
        {"box:2001x99", 0, 0, 2001, 99},
    };
    const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                 IC_BORDER_REFLECT, IC_BORDER_WRAP};
    /* 17 rows: the last band of 16 rows holds one row, its later lane groups none */
    static const blur_case tall = {"gaussian:sigma=60", 60, 60, 361, 361};
    run_case(&tall, 50, 17, 3, IC_U8, IC_AOS, IC_BORDER_MIRROR, IC_ALPHA_INDEPENDENT, "cpu");
    /* long rows: the sliding sums run thousands of steps */
    static const blur_case wide = {"gaussian:sigma=150x1", 150, 1, 901, 7};
    run_case(&wide, 6000, 5, 1, IC_U8, IC_AOS, IC_BORDER_MIRROR, IC_ALPHA_INDEPENDENT, "cpu");
    run_case(&wide, 6000, 5, 1, IC_U16, IC_AOS, IC_BORDER_WRAP, IC_ALPHA_INDEPENDENT, "cpu");
    for (size_t i = 0; i < sizeof big / sizeof big[0]; i++)
        for (int bi = 0; bi < 5; bi++) {
            run_case(&big[i], 23, 9, 3, IC_U8, IC_AOS, borders[bi], IC_ALPHA_INDEPENDENT, "cpu");
            run_case(&big[i], 1, 4, 2, IC_U16, IC_SOA, borders[bi], IC_ALPHA_AUTO, "cpu");
        }
}

static void parse_bad(const char *text, const char *needle)
{
    ic_kernel k;
    const ic_status s = ic_kernel_parse(&k, text);
    const char *e = ic_last_error();
    EXPECT(s == IC_ERR_KERNEL && strstr(e, needle) && !strchr(e, '\n'),
           "'%s' gave %s '%s', wanted an error with '%s'", text, ic_status_str(s), e, needle);
    if (s == IC_OK)
        ic_kernel_free(&k);
}

static void test_text(void)
{
    ic_kernel k;
    if (ic_kernel_parse(&k, "gaussian:sigma=4x12") == IC_OK) {
        EXPECT(k.width == 25 && k.height == 73 && k.blur == IC_BLUR_GAUSSIAN && k.sigma_x == 4 &&
                   k.sigma_y == 12 && k.warning[0] == '\0',
               "sigma=4x12: %dx%d blur %d sigma %g,%g warning '%s'", k.width, k.height, k.blur,
               k.sigma_x, k.sigma_y, k.warning);
        ic_kernel_free(&k);
    }
    if (ic_kernel_parse(&k, "gaussian:sigma=1000") == IC_OK) {
        EXPECT(k.width == 6001 && !k.coef && fabs(ic_kernel_sum(&k) - 1) < 1e-12 &&
                   fabs(ic_kernel_weight(&k, 3000, 3000) -
                        ic_kernel_weight(&k, 3000, 3001) * exp(1.0 / 2e6)) < 1e-15,
               "sigma=1000: %dx%d coef %p", k.width, k.height, (void *)k.coef);
        ic_kernel_free(&k);
    }
    if (ic_kernel_parse(&k, "gaussian:size=5,sigma=3") == IC_OK) {
        EXPECT(strstr(k.warning, "support 19x19") != NULL, "truncated: warning '%s'", k.warning);
        ic_kernel_free(&k);
    }
    if (ic_kernel_parse(&k, "box:301") == IC_OK) {
        EXPECT(k.width == 301 && k.blur == IC_BLUR_BOX && !k.coef, "box:301 is %dx%d", k.width,
               k.height);
        ic_kernel_free(&k);
    }
    parse_bad("gaussian:sigma=0", "sigma must be > 0");
    parse_bad("gaussian:sigma=-2", "sigma must be > 0");
    parse_bad("gaussian:sigma=4x0", "sigma must be > 0");
    parse_bad("gaussian:sigma=nan", "not finite");
    parse_bad("gaussian:sigma=1e9", "over the largest");
    parse_bad("gaussian:sigma=4xabc", "not a number");
    parse_bad("box:0", "1..65535");
    parse_bad("box:65537", "1..65535");
    parse_bad("box:4", "odd");
    parse_bad("unsharp:sigma=50", "over the largest");

    /* a window far wider than the bell: the FIR while it has weights, else an error */
    static const blur_case wide_window = {"gaussian:size=101,sigma=5", 5, 5, 101, 101};
    run_case(&wide_window, 40, 30, 3, IC_U8, IC_AOS, IC_BORDER_REFLECT, IC_ALPHA_INDEPENDENT,
             "cpu");
    if (ic_kernel_parse(&k, "gaussian:size=2001,sigma=5") == IC_OK) {
        ic_image a, b;
        ic_image_create(&a, 16, 16, 1, IC_AOS);
        ic_image_create(&b, 16, 16, 1, IC_AOS);
        const ic_status s = ic_filter(&a, &b, &k, NULL, "cpu");
        EXPECT(s == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "too wide"),
               "size 2001 sigma 5: %s '%s'", ic_status_str(s), ic_last_error());
        ic_image_free(&a);
        ic_image_free(&b);
        ic_kernel_free(&k);
    }

    /* backends without a blur path keep their FIR limit and say so */
    ic_image a, b;
    ic_image_create(&a, 16, 16, 1, IC_AOS);
    ic_image_create(&b, 16, 16, 1, IC_AOS);
    if (ic_kernel_parse(&k, "gaussian:sigma=100") == IC_OK) {
        const ic_status s = ic_filter(&a, &b, &k, NULL, "seq");
        EXPECT(s == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "up to 255"),
               "seq with sigma 100: %s '%s'", ic_status_str(s), ic_last_error());
        ic_kernel_free(&k);
    }
    ic_image_free(&a);
    ic_image_free(&b);
}

int main(void)
{
    test_text();
    test_accuracy();
    test_larger_than_image();
    if (failures)
        printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
