/*
 * test_chain_engine.c - which engine runs magnitudes, |sum| and chains
 * (docs/definitions.md#chains), and float32 samples in the host engine:
 *
 *  1. On the CPU backends, ic_chain_explain says the host engine runs them
 *     and why (no device engine); a chain that fuses to one kernel runs as
 *     one kernel on the backend.
 *  2. Float32 samples: a lone 0.25 under sobel gives 0.5 beside it and
 *     0.25 * sqrt(2) diagonally, and sobel-x --abs 0.5 on both sides
 *     (nothing rounded).
 *  3. The host engine sums in float32 whatever the sample type, so a float32
 *     image of integer values, filtered and then rounded and clamped here,
 *     gives exactly the 8-bit image's result: random magnitudes, |sum| and
 *     chains of 2-4 steps, every border mode, 1-4 channels, AoS and SoA.
 *
 * Seeded; a failing case prints its seed and parameters.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IC_ADVANCED_API
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static void engine_explained(ic_context *ctx, const char *backend)
{
    ic_image src;
    ic_image_create(&src, 16, 16, 1, IC_AOS);
    ic_kernel ks[2];
    ic_kernel_parse(&ks[0], "sobel");
    ic_kernel_parse(&ks[1], "gaussian:3");
    ic_params p;
    ic_params_default(&p);
    char buf[4096];
    CHECK(ic_chain_explain(ctx, &src, ks, 1, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "runs on the host CPU") && strstr(buf, "no device engine") &&
              !strstr(buf, "device engine of"),
          "%s: sobel runs in the host engine, saying why:\n%s", backend, buf);
    p.border = IC_BORDER_REPLICATE;
    CHECK(ic_chain_explain(ctx, &src, &ks[1], 2 - 1, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "runs as one kernel on backend"),
          "%s: one linear kernel runs on the backend:\n%s", backend, buf);
    ic_kernel_free(&ks[0]);
    ic_kernel_parse(&ks[0], "box:3");
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "2 steps after fusion") && strstr(buf, "runs on the host CPU"),
          "%s: an unfused chain runs in the host engine:\n%s", backend, buf);
    ic_kernel_free(&ks[0]);
    ic_kernel_free(&ks[1]);
    ic_image_free(&src);
}

static int near(float got, double want)
{
    return fabs((double)got - want) <= 1e-6 * (1.0 + fabs(want));
}

static void float_worked_example(ic_context *ctx, const char *backend)
{
    ic_image src, dst;
    ic_image_create_type(&src, 7, 7, 1, IC_AOS, IC_F32);
    ic_image_create_type(&dst, 7, 7, 1, IC_AOS, IC_F32);
    ic_image_setf(&src, 3, 3, 0, 0.25f);
    ic_kernel k;
    ic_params p;
    ic_params_default(&p);
    ic_kernel_parse(&k, "sobel");
    CHECK(ic_convolve(ctx, &src, &dst, &k, &p) == IC_OK, "%s: f32 sobel runs: %s", backend,
          ic_last_error());
    CHECK(near(ic_image_getf(&dst, 4, 3, 0), 0.5) && near(ic_image_getf(&dst, 2, 3, 0), 0.5) &&
              near(ic_image_getf(&dst, 3, 3, 0), 0.0) &&
              near(ic_image_getf(&dst, 4, 4, 0), 0.25 * sqrt(2.0)),
          "%s: f32 sobel of a lone 0.25: 0.5 beside, 0 on it, 0.3536 diagonally (got %g %g %g %g)",
          backend, (double)ic_image_getf(&dst, 4, 3, 0), (double)ic_image_getf(&dst, 2, 3, 0),
          (double)ic_image_getf(&dst, 3, 3, 0), (double)ic_image_getf(&dst, 4, 4, 0));
    ic_kernel_free(&k);
    ic_kernel_parse(&k, "sobel-x");
    p.abs = 1;
    CHECK(ic_convolve(ctx, &src, &dst, &k, &p) == IC_OK, "%s: f32 sobel-x --abs runs: %s", backend,
          ic_last_error());
    CHECK(near(ic_image_getf(&dst, 4, 3, 0), 0.5) && near(ic_image_getf(&dst, 2, 3, 0), 0.5),
          "%s: f32 sobel-x --abs: 0.5 on both sides (got %g %g)", backend,
          (double)ic_image_getf(&dst, 4, 3, 0), (double)ic_image_getf(&dst, 2, 3, 0));
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
}

/* One random chain on 8-bit samples and on the same values as float32. */
static void float_matches_u8(ic_context *ctx, const char *backend, uint64_t seed)
{
    static const char *const named[] = {"sobel",      "scharr",  "prewitt",
                                        "gaussian:3", "sharpen", "box:3x5"};
    ict_rng r;
    ict_rng_seed(&r, seed);
    const int W = ict_range(&r, 1, 19), H = ict_range(&r, 1, 13), C = ict_range(&r, 1, 4);
    const ic_layout lay = ict_below(&r, 2) ? IC_SOA : IC_AOS;
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)ict_below(&r, 5);
    p.border_value = ict_below(&r, 2) ? 0.0f : 85.0f;
    p.correlate = (int)ict_below(&r, 2);
    p.abs = ict_below(&r, 3) == 0;
    p.bias = (float)ict_range(&r, -10, 10);
    /* premultiplication divides alpha by the type's maximum, which differs */
    p.alpha = ict_below(&r, 2) ? IC_ALPHA_KEEP : IC_ALPHA_INDEPENDENT;
    const int n = ict_range(&r, 1, 4);
    ic_kernel ks[4];
    memset(ks, 0, sizeof ks);
    for (int i = 0; i < n; i++) {
        if (ict_below(&r, 2))
            ic_kernel_parse(&ks[i], named[ict_below(&r, 6)]);
        else
            ict_kernel_random(&ks[i], &r, 2 * ict_range(&r, 0, 2) + 1, 2 * ict_range(&r, 0, 2) + 1,
                              ICT_K_INT);
    }
    ic_image s8, d8, sf, df;
    ic_image_create_type(&s8, W, H, C, lay, IC_U8);
    ic_image_create_type(&d8, W, H, C, IC_AOS, IC_U8);
    ic_image_create_type(&sf, W, H, C, lay, IC_F32);
    ic_image_create_type(&df, W, H, C, ict_below(&r, 2) ? IC_SOA : IC_AOS, IC_F32);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const unsigned v = ict_below(&r, 256);
                ic_image_set(&s8, x, y, c, v);
                ic_image_setf(&sf, x, y, c, (float)v);
            }
    const ic_status a = ic_convolve_chain(ctx, &s8, &d8, ks, n, &p);
    const ic_status b = ic_convolve_chain(ctx, &sf, &df, ks, n, &p);
    char what[256];
    snprintf(what, sizeof what,
             "%s seed %llu: %dx%dx%d %s, %d steps (%s %dx%d first), border %s %g, abs %d, "
             "alpha %s",
             backend, (unsigned long long)seed, W, H, C, ict_layout_str(lay), n, ks[0].name,
             ks[0].width, ks[0].height, ict_border_str(p.border), (double)p.border_value, p.abs,
             ict_alpha_str(p.alpha));
    CHECK(a == IC_OK && b == IC_OK, "%s: status %d %d: %s", what, (int)a, (int)b, ic_last_error());
    for (int c = 0; a == IC_OK && b == IC_OK && c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const float f = ic_image_getf(&df, x, y, c);
                const float cl = f > 0.0f ? (f < 255.0f ? f : 255.0f) : 0.0f;
                const unsigned want = (unsigned)rintf(cl), got = ic_image_get(&d8, x, y, c);
                if (got != want) {
                    CHECK(0, "%s: sample (%d,%d,%d): 8-bit %u, float32 %.6f rounds to %u", what, x,
                          y, c, got, (double)f, want);
                    c = C;
                    y = H;
                    break;
                }
            }
    for (int i = 0; i < n; i++)
        ic_kernel_free(&ks[i]);
    ic_image_free(&s8);
    ic_image_free(&d8);
    ic_image_free(&sf);
    ic_image_free(&df);
}

int main(void)
{
    int quick, cases;
    uint64_t seed;
    ict_run_env(&quick, &seed, 0xC4A1E9ull, &cases, 200, 20);
    static const char *const backends[] = {"seq", "cpu"};
    for (int b = 0; b < 2; b++) {
        ic_context *ctx = NULL;
        if (ic_context_create(&ctx, backends[b], NULL) != IC_OK) {
            CHECK(0, "backend %s: %s", backends[b], ic_last_error());
            continue;
        }
        engine_explained(ctx, backends[b]);
        float_worked_example(ctx, backends[b]);
        for (int i = 0; i < cases; i++)
            float_matches_u8(ctx, backends[b], ict_mix(seed, (uint64_t)i));
        ic_context_free(ctx);
    }
    printf("test_chain_engine: %d cases a backend, %d failures\n", cases, failures);
    return failures ? 1 : 0;
}
