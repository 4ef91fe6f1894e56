/*
 * test_diff_cpu.c - differential test of every CPU backend (every usable
 * backend whose name does not start with "cuda": at least seq, cpu when built)
 * against the float64 oracle, over a few hundred seeded random cases
 * (tests/support/diff.c lists what they cover). First the oracle itself is
 * checked against values computed by hand, so that a wrong oracle cannot pass
 * a wrong backend.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* Wraps caller memory as an image without the library (tight rows). */
static ic_image wrap(uint8_t *data, int w, int h, int ch)
{
    ic_image im;
    memset(&im, 0, sizeof im);
    im.width = w;
    im.height = h;
    im.channels = ch;
    im.layout = IC_AOS;
    im.type = IC_U8;
    im.pitch = (size_t)w * (size_t)ch;
    im.data = data;
    return im;
}

/* A kernel struct filled by hand, so that the oracle checks do not depend on
 * ic_kernel_create. */
static ic_kernel kernel(int w, int h, float *coef, double divisor)
{
    ic_kernel k;
    memset(&k, 0, sizeof k);
    k.width = w;
    k.height = h;
    k.coef = coef;
    k.divisor = divisor;
    return k;
}

static ic_params params(ic_border b, float value, int correlate, float bias, ic_alpha a)
{
    ic_params p;
    p.border = b;
    p.border_value = value;
    p.correlate = correlate;
    p.bias = bias;
    p.alpha = a;
    return p;
}

static void near(double got, double want, const char *what)
{
    double d = got - want;
    CHECK(d < 1e-9 && d > -1e-9, "oracle %s: %.12g, want %.12g", what, got, want);
}

static void oracle_self_test(void)
{
    double v[4], s[4];

    /* in(x,y) = 1 + x + 3y and K(i,j) = 1 + i + 3j on 3x3. At the centre the
     * convolution pairs K(i,j) with in(2-i, 2-j) = 9 - (i+3j):
     * sum_{a=0..8} (1+a)(9-a) = 165; the correlation pairs it with itself:
     * sum_{b=1..9} b^2 = 285. */
    uint8_t img9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    float k9[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
    ic_image im = wrap(img9, 3, 3, 1);
    ic_kernel k = kernel(3, 3, k9, 1.0);
    ic_params p = params(IC_BORDER_CONSTANT, 0, 0, 0, IC_ALPHA_AUTO);
    ict_oracle_pixel(&im, &k, &p, 1, 1, v, s);
    near(v[0], 165, "3x3 convolution centre");
    p.correlate = 1;
    ict_oracle_pixel(&im, &k, &p, 1, 1, v, NULL);
    near(v[0], 285, "3x3 correlation centre");
    /* corner (0,0), correlation, zero border: K(1,1)*1 + K(2,1)*2 + K(1,2)*4 + K(2,2)*5
     * = 5 + 12 + 32 + 45 = 94; with divisor 2 and bias 3: 50. */
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 94, "3x3 correlation corner");
    k.divisor = 2.0;
    p.bias = 3.0f;
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 50, "3x3 correlation corner, divisor 2, bias 3");
    /* convolution corner: K(i,j) meets in(1-i, 1-j): K(0,0)*5 + K(1,0)*4 +
     * K(0,1)*2 + K(1,1)*1 = 5 + 8 + 8 + 5 = 26. */
    k.divisor = 1.0;
    p = params(IC_BORDER_CONSTANT, 0, 0, 0, IC_ALPHA_AUTO);
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 26, "3x3 convolution corner");

    /* 1x1 image of 10 under a 3x3 box of ones: 10 + 8 * outside. */
    uint8_t one[1] = {10};
    float ones[9] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    im = wrap(one, 1, 1, 1);
    k = kernel(3, 3, ones, 1.0);
    static const struct {
        ic_border b;
        float value;
        double want;
    } box[] = {{IC_BORDER_CONSTANT, 0, 10},  {IC_BORDER_CONSTANT, 5, 50},
               {IC_BORDER_REPLICATE, 0, 90}, {IC_BORDER_MIRROR, 0, 90},
               {IC_BORDER_REFLECT, 0, 90},   {IC_BORDER_WRAP, 0, 90}};
    for (size_t t = 0; t < sizeof box / sizeof box[0]; t++) {
        p = params(box[t].b, box[t].value, 0, 0, IC_ALPHA_AUTO);
        ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
        near(v[0], box[t].want, ict_border_str(box[t].b));
    }

    /* Row 10 20 30 40 and a 5x1 kernel 1 0 0 0 0. Correlation reads in(x-2),
     * convolution reads in(x+2): the border shows through. */
    uint8_t row[4] = {10, 20, 30, 40};
    float shift[5] = {1, 0, 0, 0, 0};
    im = wrap(row, 4, 1, 1);
    k = kernel(5, 1, shift, 1.0);
    static const struct {
        ic_border b;
        int correlate, x;
        double want;
    } sh[] = {
        {IC_BORDER_MIRROR, 1, 0, 30},    {IC_BORDER_MIRROR, 1, 1, 20}, /* in(-2), in(-1) */
        {IC_BORDER_REFLECT, 1, 0, 20},   {IC_BORDER_REFLECT, 1, 1, 10},
        {IC_BORDER_WRAP, 1, 0, 30},      {IC_BORDER_WRAP, 1, 1, 40},
        {IC_BORDER_REPLICATE, 1, 0, 10}, {IC_BORDER_CONSTANT, 1, 1, 7},
        {IC_BORDER_MIRROR, 0, 3, 20},    {IC_BORDER_REFLECT, 0, 3, 30}, /* in(5) */
        {IC_BORDER_WRAP, 0, 3, 20},      {IC_BORDER_REPLICATE, 0, 3, 40},
        {IC_BORDER_MIRROR, 0, 1, 40},    {IC_BORDER_CONSTANT, 0, 2, 7}, /* in(3), in(4) */
    };
    for (size_t t = 0; t < sizeof sh / sizeof sh[0]; t++) {
        p = params(sh[t].b, 7, sh[t].correlate, 0, IC_ALPHA_AUTO);
        ict_oracle_pixel(&im, &k, &p, sh[t].x, 0, v, NULL);
        char what[96];
        snprintf(what, sizeof what, "shift %s %s x=%d", ict_border_str(sh[t].b),
                 sh[t].correlate ? "correlation" : "convolution", sh[t].x);
        near(v[0], sh[t].want, what);
    }
    /* Kernel much larger than the image: 2x1 image {10, 20}, 9x1 correlation
     * one-hot at i=0 reads in(x-4). At x=0, in(-4): mirror (period 2) -> 0,
     * reflect (period 4) -> 0. At x=1, in(-3): mirror -> 1; reflect -3 -> 2
     * (about -1/2) -> 1 (about 3/2); wrap -> 1. */
    uint8_t two[2] = {10, 20};
    float far[9] = {1, 0, 0, 0, 0, 0, 0, 0, 0};
    im = wrap(two, 2, 1, 1);
    k = kernel(9, 1, far, 1.0);
    p = params(IC_BORDER_MIRROR, 0, 1, 0, IC_ALPHA_AUTO);
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 10, "mirror in(-4), n=2");
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 20, "mirror in(-3), n=2");
    p.border = IC_BORDER_REFLECT;
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 10, "reflect in(-4), n=2");
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 20, "reflect in(-3), n=2");
    p.border = IC_BORDER_WRAP;
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 20, "wrap in(-3), n=2");

    /* Alpha: grey+alpha pixels (200,255) (50,0) (100,255), 3x1 box / 3,
     * replicate. At x=1: a = 1 0 1, Fa = 2/3, Fca = (200 + 100)/3 = 100, so
     * premultiply gives colour 150, alpha 170; independent gives colour
     * 350/3, alpha 170; keep gives colour 350/3 and alpha 0 (copied). At x=0
     * (replicate: 200,200,50): a = 1 1 0, colour 200, alpha 170. */
    uint8_t ga[6] = {200, 255, 50, 0, 100, 255};
    float box3[3] = {1, 1, 1};
    im = wrap(ga, 3, 1, 2);
    k = kernel(3, 1, box3, 3.0);
    p = params(IC_BORDER_REPLICATE, 0, 0, 0, IC_ALPHA_PREMULTIPLY);
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, s);
    near(v[0], 150, "premultiply colour");
    near(v[1], 170, "premultiply alpha");
    CHECK(s[0] < 1e-3 && s[1] < 1e-3, "premultiply slack %g %g", s[0], s[1]);
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 200, "premultiply colour at the edge");
    p.alpha = IC_ALPHA_AUTO; /* weights sum to 1: premultiply */
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 150, "auto (sum 1) colour");
    p.bias = 10.0f; /* bias after the division, on colour and alpha */
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 160, "premultiply colour + bias");
    near(v[1], 180, "premultiply alpha + bias");
    p = params(IC_BORDER_REPLICATE, 0, 0, 0, IC_ALPHA_INDEPENDENT);
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 350.0 / 3.0, "independent colour");
    near(v[1], 170, "independent alpha");
    p.alpha = IC_ALPHA_KEEP;
    p.bias = 1.0f;
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, s);
    near(v[0], 350.0 / 3.0 + 1.0, "keep colour");
    near(v[1], 0, "keep alpha (copied, no bias)");
    CHECK(s[1] == 0.0, "keep alpha slack %g", s[1]);
    /* Edge kernel 1 -2 1 sums to 0: auto keeps: colour 200 - 100 + 100 = 200
     * at x=1? 1*200 - 2*50 + 1*100 = 200; alpha copied 0. */
    float edge[3] = {1, -2, 1};
    k = kernel(3, 1, edge, 1.0);
    p = params(IC_BORDER_REPLICATE, 0, 0, 0, IC_ALPHA_AUTO);
    ict_oracle_pixel(&im, &k, &p, 1, 0, v, NULL);
    near(v[0], 200, "auto (sum 0) colour");
    near(v[1], 0, "auto (sum 0) alpha copied");
    CHECK(ict_effective_alpha(&k, 2, IC_ALPHA_AUTO) == IC_ALPHA_KEEP, "auto with sum 0");
    CHECK(ict_effective_alpha(&k, 3, IC_ALPHA_PREMULTIPLY) == IC_ALPHA_INDEPENDENT,
          "no alpha channel in RGB");
    /* Fully transparent neighbourhood, constant border 0: Fa = 0 -> colour 0
     * (+ bias), alpha 0 (+ bias), exactly. */
    uint8_t clear[2] = {77, 0};
    im = wrap(clear, 1, 1, 2);
    k = kernel(3, 1, box3, 3.0);
    p = params(IC_BORDER_CONSTANT, 0, 0, 2.0f, IC_ALPHA_PREMULTIPLY);
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, s);
    near(v[0], 2, "transparent colour");
    near(v[1], 2, "transparent alpha");
    /* Constant border 255 is opaque white: a 1x1 (100, 255) pixel in a 3x1
     * box: Fa = 1, Fca = (255 + 100 + 255)/3. */
    uint8_t opaque[2] = {100, 255};
    im = wrap(opaque, 1, 1, 2);
    p = params(IC_BORDER_CONSTANT, 255, 0, 0, IC_ALPHA_PREMULTIPLY);
    ict_oracle_pixel(&im, &k, &p, 0, 0, v, NULL);
    near(v[0], 610.0 / 3.0, "constant 255 border colour");
    near(v[1], 255, "constant 255 border alpha");

    /* Rounding: nearest, ties to even, clamped. */
    static const struct {
        double v;
        int want;
    } rd[] = {{1.5, 2},       {2.5, 2},     {3.5, 4},     {0.5, 0},   {-0.5, 0},
              {-7, 0},        {254.5, 254}, {255.5, 255}, {1e9, 255}, {2.4999999, 2},
              {2.5000001, 3}, {127.5, 128}, {0, 0}};
    for (size_t t = 0; t < sizeof rd / sizeof rd[0]; t++)
        CHECK(ict_round(rd[t].v) == rd[t].want, "ict_round(%.9g) = %d, want %d", rd[t].v,
              ict_round(rd[t].v), rd[t].want);
}

/* The comparison must reject what it should: a right answer passes, an
 * off-by-two sample fails, systematic off-by-one (truncation) fails. */
static void compare_self_test(void)
{
    double val[100], slack[100];
    uint8_t out[100];
    for (int i = 0; i < 100; i++) {
        val[i] = 10.3 + i;
        slack[i] = 1e-6;
        out[i] = (uint8_t)(10 + i);
    }
    ic_image im = wrap(out, 10, 10, 1);
    ict_cmp c;
    ict_cmp_init(&c);
    ict_compare_rows(&c, &im, 0, 10, val, slack);
    CHECK(ict_cmp_passed(&c) && c.exact == 100, "compare: a right image rejected");
    out[57] += 2;
    ict_cmp_init(&c);
    ict_compare_rows(&c, &im, 0, 10, val, slack);
    CHECK(!ict_cmp_passed(&c) && c.bad == 1 && c.x == 7 && c.y == 5,
          "compare: off by two not caught");
    out[57] -= 2;
    for (int i = 0; i < 100; i++)
        val[i] = 10.7 + i; /* out now truncates: every sample off by one */
    ict_cmp_init(&c);
    ict_compare_rows(&c, &im, 0, 10, val, slack);
    CHECK(!ict_cmp_passed(&c) && c.bad == 0 && c.unexplained == 100,
          "compare: systematic off-by-one passed");
}

/* 16 bits by hand: averages of neighbours (ties to even), the clamp at 65535
 * and at 0 with a bias, and the refusal of mixed types. */
static void u16_worked_example(const char *backend)
{
    static const uint16_t in[] = {1, 2, 3, 4, 65533, 65534, 65535, 0, 40000, 40001};
    /* average of in(x-1), in(x), replicate border:
     * 1 1.5 2.5 3.5 32768.5 65533.5 65534.5 32767.5 20000 40000.5 */
    static const uint16_t avg[] = {1, 2, 2, 4, 32768, 65534, 65534, 32768, 20000, 40000};
    /* bias +1 (65534.5 -> 65534, 65535.5 clamped to 65535) and bias -3 (clamped at 0) */
    static const uint16_t avg_p1[] = {2, 2, 4, 4, 32770, 65534, 65535, 32768, 20001, 40002};
    static const uint16_t avg_m3[] = {0, 0, 0, 0, 32766, 65530, 65532, 32764, 19997, 39998};
    const int n = (int)(sizeof in / sizeof in[0]);
    uint16_t src[10], dst[10];
    memcpy(src, in, sizeof src);
    ic_image s, d;
    CHECK(ic_image_wrap_type(&s, src, n, 1, 1, IC_AOS, 0, IC_U16) == IC_OK, "wrap 16-bit");
    CHECK(ic_image_wrap_type(&d, dst, n, 1, 1, IC_AOS, 0, IC_U16) == IC_OK, "wrap 16-bit");
    static const float corr[3] = {0.5f, 0.5f, 0.0f};
    ic_kernel k;
    CHECK(ic_kernel_create(&k, 3, 1, corr, 1.0) == IC_OK, "kernel");
    ic_context *ctx = NULL;
    CHECK(ic_context_create(&ctx, backend, NULL) == IC_OK, "%s: context", backend);
    if (!ctx) {
        ic_kernel_free(&k);
        return;
    }
    const float biases[3] = {0.0f, 1.0f, -3.0f};
    const uint16_t *want[3] = {avg, avg_p1, avg_m3};
    for (int b = 0; b < 3; b++) {
        ic_params p = params(IC_BORDER_REPLICATE, 0, 1, biases[b], IC_ALPHA_AUTO);
        memset(dst, 0xA5, sizeof dst);
        ic_status st = ic_convolve(ctx, &s, &d, &k, &p);
        CHECK(st == IC_OK, "%s: 16-bit convolve: %s", backend, ic_last_error());
        for (int x = 0; st == IC_OK && x < n; x++)
            CHECK(dst[x] == want[b][x], "%s: 16-bit bias %g x=%d: got %u, want %u", backend,
                  (double)biases[b], x, dst[x], want[b][x]);
    }
    uint8_t d8[10];
    ic_image d8i;
    CHECK(ic_image_wrap(&d8i, d8, n, 1, 1, IC_AOS, 0) == IC_OK, "wrap 8-bit");
    ic_status st = ic_convolve(ctx, &s, &d8i, &k, NULL);
    CHECK(st == IC_ERR_INVALID_ARG && strstr(ic_last_error(), "sample types"),
          "%s: 16-bit into 8-bit gave %s (%s)", backend, ic_status_str(st), ic_last_error());
    ic_context_free(ctx);
    ic_kernel_free(&k);
}

int main(void)
{
    oracle_self_test();
    compare_self_test();
    if (failures) {
        printf("test_diff_cpu: the oracle failed its self-test (%d), not running backends\n",
               failures);
        return 1;
    }
    printf("oracle self-test passed\n");

    int ran = 0;
    const int count = ic_backend_count();
    for (int i = 0; i < count; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) != IC_OK || !info.name) {
            CHECK(0, "ic_backend_get(%d) failed", i);
            continue;
        }
        if (strncmp(info.name, "cuda", 4) == 0)
            continue;
        if (!info.usable) {
            printf("%-18s not usable here: %s\n", info.name, info.why);
            continue;
        }
        failures += ict_diff_backend(info.name, ICT_DIFF_CASES, ICT_DIFF_SEED, ICT_DIFF_MAX_DIM);
        failures += ict_diff_backend_type(info.name, ICT_DIFF_CASES, ICT_DIFF_SEED,
                                          ICT_DIFF_MAX_DIM, IC_U16);
        u16_worked_example(info.name);
        ran++;
    }
    char why[200];
    CHECK(ict_backend_usable("seq", why, sizeof why), "backend seq must be usable: %s", why);
    CHECK(ran > 0, "no CPU backend ran");
    if (failures) {
        printf("test_diff_cpu: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_diff_cpu: all passed\n");
    return 0;
}
