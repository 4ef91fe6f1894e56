/*
 * test_f32.c - float32 samples (IC_F32) on the CPU backends against a float64
 * reference written here from the definitions (include/imgconv.h,
 * docs/definitions.md "Float samples"): the output is the float32 sum itself,
 * neither rounded nor clamped.
 *
 * Tolerance. With u = 2^-24 (half of FLT_EPSILON), n = kw*kh taps and
 * S = |bias| + sum |K_i * x_i| (x_i the sample or border value each tap reads),
 * every output must satisfy
 *     |out - exact| <= (n + 20) * u * S + n * 2^-126
 * n + 1 roundings of a recursive sum of n products and the bias (gamma_(n+1));
 * one of the weight rounded to float32; 2^-20 relative (16 u) for a rank-1
 * factorisation of the cpu backend's separable path; the last term covers
 * underflow. Premultiplied alpha divides FC by FA, each bounded as above (with
 * one more u for the product c*a): colour error <= (eFC + |colour| * eFA) /
 * |FA| + 2 u |colour|, and where |FA| <= eFA the sign of FA is lost, so any
 * output passes.
 *
 * NaN and infinities: the sums are IEEE arithmetic, so a NaN in a window makes
 * NaN, an infinity makes an infinity of its sign, and NaN where it meets a zero
 * weight (0 * inf) or an infinity of the other sign; the float64 reference,
 * with IEEE arithmetic of its own, says which.
 *
 * ICT_SEED and ICT_CASES override the seed and the case count (IC_TEST_QUICK:
 * fewer cases).
 */
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "oracle.h"
#include "testutil.h"

#define U_F32 0x1p-24
#define MAX_DIM 40

/* Largest |error| / tolerance seen over a path (how much room is left). */
static double worst_ratio;

static float getf(const ic_image *im, int x, int y, int c)
{
    float v;
    memcpy(&v, ict_sample(im, x, y, c), sizeof v);
    return v;
}

static void setf(const ic_image *im, int x, int y, int c, float v)
{
    memcpy((void *)ict_sample(im, x, y, c), &v, sizeof v);
}

/* Exact (float64) correlation value and its bound S of channel c at (x, y),
 * with kernel weights K (double, already flipped for convolution). */
static void ref_sum(const ic_image *src, const double *K, int kw, int kh, const ic_params *p, int x,
                    int y, int c, double premul_alpha_c, double *val, double *s)
{
    double v = 0, a = 0;
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            const int sx = ict_border_map(x + i - kw / 2, src->width, p->border);
            const int sy = ict_border_map(y + j - kh / 2, src->height, p->border);
            double xv = (sx < 0 || sy < 0) ? p->border_value : getf(src, sx, sy, c);
            if (premul_alpha_c >= 0) /* colour times its pixel's alpha */
                xv *= (sx < 0 || sy < 0) ? p->border_value : getf(src, sx, sy, (int)premul_alpha_c);
            const double t = K[j * kw + i] * xv;
            v += t;
            a += fabs(t);
        }
    *val = v;
    *s = a;
}

/* Correlation weights of k under p, in float64. */
static double *ref_weights(const ic_kernel *k, const ic_params *p)
{
    const int kw = k->width, kh = k->height;
    double *K = malloc(sizeof *K * (size_t)kw * (size_t)kh);
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            const int di = p->correlate ? i : kw - 1 - i, dj = p->correlate ? j : kh - 1 - j;
            K[dj * kw + di] = k->coef[j * kw + i] / k->divisor;
        }
    return K;
}

/* 1 when out is acceptable for the exact value v with bound tol (IEEE
 * specials must match in kind and sign). */
static int close_enough(float out, double v, double tol)
{
    if (isnan(v))
        return isnan(out);
    if (isinf(v))
        return isinf(out) && (out > 0) == (v > 0);
    return !isnan(out) && fabs((double)out - v) <= tol;
}

/* Checks every sample of dst against the reference; returns the number of
 * bad samples and describes the first. */
static int check(const ic_image *src, const ic_image *dst, const ic_kernel *k, const ic_params *p,
                 ic_alpha alpha, const char *what)
{
    const int kw = k->width, kh = k->height, n = kw * kh, ch = src->channels, ac = ch - 1;
    const double g = (n + 20) * U_F32, floor_ = n * 0x1p-126;
    double *K = ref_weights(k, p);
    int bad = 0;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++)
            for (int c = 0; c < ch; c++) {
                double v, s, tol;
                const float out = getf(dst, x, y, c);
                if (alpha == IC_ALPHA_KEEP && c == ac) {
                    v = getf(src, x, y, c);
                    tol = 0;
                } else if (alpha == IC_ALPHA_PREMULTIPLY) {
                    double fa, sa, fc, sc;
                    ref_sum(src, K, kw, kh, p, x, y, ac, -1, &fa, &sa);
                    const double efa = g * sa + floor_;
                    if (c == ac) {
                        v = fa + p->bias;
                        tol = g * (sa + fabs(p->bias)) + floor_;
                    } else {
                        ref_sum(src, K, kw, kh, p, x, y, c, ac, &fc, &sc);
                        if (fabs(fa) <= efa)
                            continue; /* the sign of FA is lost in float32 */
                        const double col = fa > 0 ? fc / fa : 0.0;
                        const double efc = (g + U_F32) * sc + floor_;
                        v = col + p->bias;
                        tol = (efc + fabs(col) * efa) / fabs(fa) + 2 * U_F32 * fabs(col) +
                              U_F32 * fabs(v);
                    }
                } else {
                    ref_sum(src, K, kw, kh, p, x, y, c, -1, &v, &s);
                    v += p->bias;
                    tol = g * (s + fabs(p->bias)) + floor_;
                }
                if (isfinite(v) && tol > 0 && fabs((double)out - v) / tol > worst_ratio)
                    worst_ratio = fabs((double)out - v) / tol;
                if (!close_enough(out, v, tol)) {
                    if (bad++ == 0)
                        printf("FAIL %s: sample (%d,%d,%d) = %.9g, expected %.9g within %.3g\n",
                               what, x, y, c, (double)out, v, tol);
                }
            }
    free(K);
    return bad;
}

/* Random float samples in [-1, 2] (a few large ones, a few exact zeros). */
static void fill_random(const ic_image *im, ict_rng *r, int alpha_style)
{
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < im->channels; c++) {
                const uint32_t u = ict_below(r, 20);
                float v = (float)(ict_uniform(r) * 3.0 - 1.0);
                if (u == 0)
                    v = 0.0f;
                else if (u == 1)
                    v = (float)((ict_uniform(r) - 0.5) * 2e4);
                if (alpha_style && (im->channels == 2 || im->channels == 4) &&
                    c == im->channels - 1)
                    v = u < 4 ? 0.0f : (float)ict_uniform(r); /* opacity, some holes */
                setf(im, x, y, c, v);
            }
}

/* Backends and tunings every random case runs on. */
static const char *const paths[][2] = {
    {"seq", NULL},
    {"cpu", "method=direct,cpu-isa=scalar"},
    {"cpu", "method=sep,cpu-isa=scalar"},
    {"cpu", "method=direct,cpu-isa=avx2"},
    {"cpu", "method=sep,cpu-isa=avx2"},
    {"cpu", "method=direct,cpu-isa=avx512"},
    {"cpu", "method=sep,cpu-isa=avx512,cpu-tiny=1"},
    {"cpu", "method=direct,cpu-isa=avx2,cpu-tiny=1"},
    {"cpu", "method=auto"},
};
#define N_PATHS ((int)(sizeof paths / sizeof paths[0]))

static const char *const kernels[] = {"gaussian:5", "box:3", "sobel-x", "sharpen", "unsharp:5"};

/* One random case on ctx; returns the number of failures. */
static int run_case(ic_context *ctx, const char *name, uint64_t seed, int i)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)i));
    const int small = ict_below(&r, 5) == 0; /* smaller than the kernel */
    const int w = small ? ict_range(&r, 1, 3) : ict_range(&r, 1, MAX_DIM);
    const int h = small ? ict_range(&r, 1, 3) : ict_range(&r, 1, MAX_DIM);
    const int ch = ict_range(&r, 1, 4);
    const ic_layout layout = ict_below(&r, 2) ? IC_SOA : IC_AOS;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    ic_status st;
    const uint32_t kind = ict_below(&r, 8);
    if (kind < (uint32_t)(sizeof kernels / sizeof kernels[0]))
        st = ic_kernel_parse(&k, kernels[kind]);
    else
        st = ict_kernel_random(&k, &r, 1 + 2 * ict_range(&r, 0, 4), 1 + 2 * ict_range(&r, 0, 4),
                               (int)ict_below(&r, ICT_K_COUNT));
    if (st != IC_OK) {
        printf("FAIL %s case %d: kernel: %s\n", name, i, ic_last_error());
        return 1;
    }
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)ict_below(&r, 5);
    p.border_value = (float)(ict_uniform(&r) * 2.0 - 0.5);
    p.bias = ict_below(&r, 3) == 0 ? (float)(ict_uniform(&r) - 0.5) : 0.0f;
    p.correlate = (int)ict_below(&r, 2);
    p.alpha = (ic_alpha)ict_below(&r, 4);
    const ic_alpha alpha = ict_effective_alpha(&k, ch, p.alpha);
    ict_buf s, d;
    if (ict_buf_alloc_type(&s, w, h, ch, layout, 4 * ict_below(&r, 3), IC_F32) != 0 ||
        ict_buf_alloc_type(&d, w, h, ch, layout, 8, IC_F32) != 0) {
        printf("FAIL %s case %d: out of memory\n", name, i);
        return 1;
    }
    fill_random(&s.img, &r, alpha == IC_ALPHA_PREMULTIPLY);
    ict_buf_fill(&d, 0xA5);
    char what[512];
    snprintf(what, sizeof what,
             "%s case %d (seed %llu): %dx%dx%d %s kernel %s %dx%d border %s value %g bias %g "
             "%s alpha %s",
             name, i, (unsigned long long)seed, w, h, ch, ict_layout_str(layout), k.name, k.width,
             k.height, ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlate" : "convolve", ict_alpha_str(alpha));
    int fails = 0;
    st = ic_convolve(ctx, &s.img, &d.img, &k, &p);
    if (st != IC_OK) {
        printf("FAIL %s: ic_convolve: %s (%s)\n", what, ic_status_str(st), ic_last_error());
        fails = 1;
    } else {
        fails = check(&s.img, &d.img, &k, &p, alpha, what) != 0;
        size_t off;
        if (!fails && !ict_buf_padding_is(&d, 0xA5, &off)) {
            printf("FAIL %s: wrote outside the samples at byte %zu\n", what, off);
            fails = 1;
        }
    }
    ict_buf_free(&s);
    ict_buf_free(&d);
    ic_kernel_free(&k);
    return fails;
}

static int run_random(uint64_t seed, int ncases)
{
    int fails = 0;
    for (int t = 0; t < N_PATHS; t++) {
        const char *be = paths[t][0], *tuning = paths[t][1];
        ic_context *ctx = ict_context_tuned(be, tuning, NULL);
        if (!ctx) {
            if (strstr(ic_last_error(), "has no") || strstr(ic_last_error(), "lacks")) {
                printf("  %s [%s]: skipped (%s)\n", be, tuning, ic_last_error());
                continue;
            }
            printf("FAIL %s [%s]: context: %s\n", be, tuning ? tuning : "", ic_last_error());
            fails++;
            continue;
        }
        char name[96];
        snprintf(name, sizeof name, "%s[%s]", be, tuning ? tuning : "");
        int f = 0, unsupported = 0;
        worst_ratio = 0;
        for (int i = 0; i < ncases && f < 3; i++) {
            f += run_case(ctx, name, seed, i);
            if (f && strstr(ic_last_error(), "has no")) {
                unsupported = 1; /* the forced instruction set is missing here */
                break;
            }
        }
        if (unsupported)
            printf("  %s: skipped (%s)\n", name, ic_last_error());
        else {
            printf("  %s: %d cases, %d failed, largest error %.3f of the tolerance\n", name, ncases,
                   f, worst_ratio);
            fails += f;
        }
        ic_context_free(ctx);
    }
    return fails;
}

/* NaN and infinities propagate through every path as IEEE arithmetic says. */
static int run_specials(void)
{
    int fails = 0;
    const char *const ks[] = {"box:3", "sobel-x", "gaussian:5"};
    for (int t = 0; t < N_PATHS; t++) {
        ic_context *ctx = ict_context_tuned(paths[t][0], paths[t][1], NULL);
        if (!ctx)
            continue; /* reported by run_random */
        for (size_t q = 0; q < sizeof ks / sizeof ks[0]; q++) {
            ic_kernel k;
            ic_image src, dst;
            if (ic_kernel_parse(&k, ks[q]) != IC_OK ||
                ic_image_create_type(&src, 23, 9, 3, IC_AOS, IC_F32) != IC_OK ||
                ic_image_create_type(&dst, 23, 9, 3, IC_AOS, IC_F32) != IC_OK) {
                printf("FAIL specials: setup: %s\n", ic_last_error());
                return 1;
            }
            for (int y = 0; y < 9; y++)
                for (int x = 0; x < 23; x++)
                    for (int c = 0; c < 3; c++)
                        setf(&src, x, y, c, 0.25f * (float)((x + y + c) % 5));
            setf(&src, 4, 4, 0, NAN);
            setf(&src, 12, 2, 1, INFINITY);
            setf(&src, 13, 6, 1, -INFINITY); /* meets +inf in some windows */
            setf(&src, 19, 4, 2, INFINITY);
            ic_params p;
            ic_params_default(&p);
            p.border = IC_BORDER_REPLICATE;
            const ic_status st = ic_convolve(ctx, &src, &dst, &k, &p);
            char what[256];
            snprintf(what, sizeof what, "specials %s[%s] %s", paths[t][0],
                     paths[t][1] ? paths[t][1] : "", ks[q]);
            if (st != IC_OK) {
                printf("FAIL %s: %s\n", what, ic_last_error());
                fails++;
            } else {
                fails += check(&src, &dst, &k, &p, IC_ALPHA_INDEPENDENT, what) != 0;
                /* the reference must see the specials: a NaN right at the NaN,
                 * at the lone +inf an infinity, or NaN where its weight is 0
                 * (sobel-x's centre: 0 * inf) */
                const float at_inf = getf(&dst, 19, 4, 2);
                if (!isnan(getf(&dst, 4, 4, 0)) ||
                    (q == 1 ? !isnan(at_inf) : !(isinf(at_inf) && at_inf > 0))) {
                    printf("FAIL %s: NaN or inf did not reach the output\n", what);
                    fails++;
                }
            }
            ic_image_free(&src);
            ic_image_free(&dst);
            ic_kernel_free(&k);
        }
        ic_context_free(ctx);
    }
    printf("  NaN and inf: %d failed\n", fails);
    return fails;
}

/* Sizes, wrapping, conversion and what the other types refuse. */
static int run_api(void)
{
    int fails = 0;
#define EXPECT(cond)                                                                               \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL api: %s (line %d)\n", #cond, __LINE__);                                   \
            fails++;                                                                               \
        }                                                                                          \
    } while (0)
    EXPECT(ic_sample_size(IC_F32) == 4);
    EXPECT(ic_sample_max(IC_F32) == 1);
    ic_image a, b, u;
    EXPECT(ic_image_create_type(&a, 5, 3, 2, IC_AOS, IC_F32) == IC_OK);
    EXPECT(a.pitch % 64 == 0 && ic_image_row_bytes(&a) == 40);
    float buf[16];
    EXPECT(ic_image_wrap_type(&b, (uint8_t *)buf + 2, 2, 2, 1, IC_AOS, 0, IC_F32) ==
           IC_ERR_INVALID_ARG);
    EXPECT(ic_image_wrap_type(&b, buf, 2, 2, 1, IC_AOS, 10, IC_F32) == IC_ERR_INVALID_ARG);
    EXPECT(ic_image_wrap_type(&b, buf, 2, 2, 1, IC_AOS, 8, IC_F32) == IC_OK);
    EXPECT(ic_image_wrap_device_type(&b, buf, 2, 2, 1, IC_AOS, 8, IC_F32, 0, NULL) == IC_OK &&
           b.type == IC_F32 && b.memory == IC_MEM_DEVICE);
    /* conversion: u8 -> f32 is v / 255; f32 -> u8 scales, clamps and rounds */
    EXPECT(ic_image_create_type(&u, 5, 3, 2, IC_SOA, IC_U8) == IC_OK);
    const float vals[] = {0.5f, -1.0f, 2.0f, NAN, 1.0f / 255.0f * 3.5f, 0.2f};
    const unsigned want[] = {128, 0, 255, 0, 4, 51};
    for (int i = 0; i < 6; i++)
        setf(&a, i % 5, i / 5, 0, vals[i]);
    EXPECT(ic_image_copy(&u, &a) == IC_OK);
    for (int i = 0; i < 6; i++)
        EXPECT(ic_image_get(&u, i % 5, i / 5, 0) == want[i]);
    ic_image_set(&u, 1, 1, 1, 51);
    EXPECT(ic_image_copy(&a, &u) == IC_OK && getf(&a, 1, 1, 1) == 51.0f / 255.0f);
    /* a type mismatch is refused */
    ic_kernel k;
    EXPECT(ic_kernel_parse(&k, "box:3") == IC_OK);
    EXPECT(ic_filter(&a, &u, &k, NULL, "cpu") == IC_ERR_INVALID_ARG);
    ic_kernel_free(&k);
    ic_image_free(&a);
    ic_image_free(&u);
    if (!fails)
        printf("  api: ok\n");
    return fails;
}

/* Float images through the memory encoder and decoder: PFM and npy keep
 * every bit (NaN and infinities included), PNG stores 16 bits. */
static int run_files(void)
{
    int fails = 0;
    const char *const names[] = {"x.pfm", "x.npy", "x.npy", "x.png"};
    const int chans[] = {3, 2, 1, 4};
    for (int t = 0; t < 4; t++) {
        ic_image a, b;
        uint8_t *buf = NULL;
        size_t n = 0;
        if (ic_image_create_type(&a, 9, 4, chans[t], IC_SOA, IC_F32) != IC_OK)
            return 1;
        for (int y = 0; y < 4; y++)
            for (int x = 0; x < 9; x++)
                for (int c = 0; c < chans[t]; c++)
                    setf(&a, x, y, c, (float)(x * 3 + y - c) / 7.0f - 0.5f);
        if (t < 3) {
            setf(&a, 1, 1, 0, NAN);
            setf(&a, 2, 3, 0, -INFINITY);
        }
        ic_status st = ic_image_encode(&a, names[t], NULL, &buf, &n);
        if (st == IC_OK)
            st = ic_image_decode(&b, buf, n, NULL);
        free(buf);
        if (st != IC_OK) {
            printf("FAIL files %s: %s\n", names[t], ic_last_error());
            ic_image_free(&a);
            fails++;
            continue;
        }
        int bad = b.channels != chans[t] || b.type != (t < 3 ? IC_F32 : IC_U16);
        for (int y = 0; !bad && y < 4; y++)
            for (int x = 0; x < 9; x++)
                for (int c = 0; c < chans[t]; c++) {
                    const float va = getf(&a, x, y, c);
                    if (t < 3 ? memcmp(ict_sample(&b, x, y, c), &va, 4) != 0
                              : ic_image_get(&b, x, y, c) !=
                                    (unsigned)lrint(65535.0 * fmin(fmax(va, 0.0), 1.0)))
                        bad = 1;
                }
        if (bad) {
            printf("FAIL files %s: samples, type or channels differ after the round trip\n",
                   names[t]);
            fails++;
        }
        ic_image_free(&a);
        ic_image_free(&b);
    }
    printf("  files (pfm, npy, png): %d failed\n", fails);
    return fails;
}

int main(void)
{
    int quick, ncases;
    uint64_t seed;
    ict_run_env(&quick, &seed, 0xF32F32ull, &ncases, 300, 40);
    printf("test_f32: seed %llu, %d cases per path\n", (unsigned long long)seed, ncases);
    int fails = run_api();
    fails += run_random(seed, ncases);
    fails += run_specials();
    fails += run_files();
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}
