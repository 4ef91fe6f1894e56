/*
 * test_f32.c - float32 samples (IC_F32) on the CPU backends against a float64
 * reference written here from the definitions (include/imgconv.h,
 * docs/definitions.md "Float samples"): the output is the float32 sum itself,
 * neither rounded nor clamped.
 *
 * Tolerance: (n + 20) * 2^-24 * (|bias| + sum |K_i x_i|) for n taps, derived
 * in tests/support/f32_check.h (and docs/definitions.md).
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
#include "f32_check.h"
#include "oracle.h"
#include "testutil.h"

#define MAX_DIM 40

/* Largest |error| / tolerance seen over a path (how much room is left). */
static double worst_ratio;

static float getf(const ic_image *im, int x, int y, int c)
{
    return ict_f32_get(im, x, y, c);
}

static void setf(const ic_image *im, int x, int y, int c, float v)
{
    ict_f32_set(im, x, y, c, v);
}

static int check(const ic_image *src, const ic_image *dst, const ic_kernel *k, const ic_params *p,
                 ic_alpha alpha, const char *what)
{
    return ict_f32_check(src, dst, k, p, alpha, what, &worst_ratio);
}

static void fill_random(const ic_image *im, ict_rng *r, int alpha_style)
{
    ict_f32_random(im, r, alpha_style);
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
