/*
 * test_alpha.c - premultiplied alpha (docs/definitions.md#alpha) on every CPU backend,
 * as a specification:
 *
 *  1. Agreement with the float64 oracle on photograph-like images with real
 *     transparency (ict_alpha_photo: soft edges, holes, transparent pixels with
 *     garbage colour, almost-transparent dust): the suite's acceptance rule
 *     (testutil.h) on every sample, and at least 99% of colour samples within
 *     1 level of round(oracle) — every CPU backend (the `cpu` backend under
 *     several tunings (ic_tuning): direct and separable, scalar and SIMD, tiny
 *     seams), every border mode (constant with 0, 255 and a grey value), 2 and
 *     4 channels, AoS and SoA, the named blurs/sharpen/unsharp and random
 *     kernels (a full-rank 9x9 blur among them).
 *  2. Tiny F(a): colour = F(c*a) / F(a) however small F(a) > 0 is; a lone
 *     almost-transparent pixel seen through a kernel's smallest weight keeps
 *     its colour; F(a) = 0 (a transparent neighbourhood) gives colour = bias
 *     exactly, never the garbage colour under it.
 *  3. Alpha exactly equal, byte for byte, to the alpha channel the same
 *     backend computes with --alpha independent (the filtered alpha does not
 *     depend on premultiplication) for backends that premultiply themselves
 *     (IC_CAP_PREMULTIPLY); the float64 reference path of the others is held
 *     to the oracle by 1.
 *  4. Opaque stays opaque: alpha 255 everywhere gives the colour of the RGB
 *     image (equal for dyadic kernels, within 1 level and equal on >= 99.9%
 *     otherwise) and alpha 255, under replicate, mirror, reflect, wrap and
 *     constant 255; constant V < 255 is a translucent border pixel (colour V,
 *     alpha V): alpha drops below 255 at the edges and the colour there is the
 *     alpha-weighted mean, e.g. constant 0 does not darken the edges.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IC_ADVANCED_API
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* Tunings (ic_tuning_parse text) the `cpu` backend is run under (an
 * instruction set this machine lacks is skipped). */
static const char *const cpu_paths[] = {
    "method=auto",
    "method=direct,cpu-isa=scalar",
    "method=sep,cpu-isa=scalar,cpu-tiny=1",
    "method=direct,cpu-isa=avx2,cpu-tiny=1",
    "method=sep,cpu-isa=avx2",
    "method=direct,cpu-isa=avx512,cpu-tiny=1",
    "method=sep,cpu-isa=avx512",
};
#define N_CPU_PATHS ((int)(sizeof cpu_paths / sizeof cpu_paths[0]))

/* Named kernels (all sum to 1: auto premultiplies) and random ones. */
static const char *const named[] = {"gaussian:3", "gaussian:9", "box:5",       "sharpen",
                                    "unsharp:5",  "unsharp:9",  "gaussian:5x3"};
#define N_NAMED ((int)(sizeof named / sizeof named[0]))
static const struct {
    int kw, kh, type;
} randk[] = {{9, 9, ICT_K_BLUR}, {7, 7, ICT_K_SHARPEN}, {5, 5, ICT_K_LOWRANK}, {3, 7, ICT_K_BLUR}};
#define N_RANDK ((int)(sizeof randk / sizeof randk[0]))

static const struct {
    ic_border b;
    float value;
} borders[] = {{IC_BORDER_CONSTANT, 0},  {IC_BORDER_CONSTANT, 255}, {IC_BORDER_CONSTANT, 77},
               {IC_BORDER_REPLICATE, 0}, {IC_BORDER_MIRROR, 0},     {IC_BORDER_REFLECT, 0},
               {IC_BORDER_WRAP, 0}};
#define N_BORDERS ((int)(sizeof borders / sizeof borders[0]))

/* Colour statistics of one backend configuration. */
typedef struct stats {
    long long colour, within1;
} stats;

/* Plans a 3x3 box on a small RGBA image on ctx (alpha auto: premultiplied). */
static ic_status plan_rgba(ic_context *ctx, ic_plan *plan)
{
    ic_image img;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    ic_status st = ic_image_create(&img, 8, 8, 4, IC_AOS);
    if (st == IC_OK)
        st = ic_kernel_parse(&k, "box:3");
    if (st == IC_OK)
        st = ic_plan_get(ctx, &img, &k, NULL, plan);
    ic_image_free(&img);
    ic_kernel_free(&k);
    return st;
}

/* A context for backend under tuning `path` (NULL: defaults); NULL and *skip
 * set when the tuning asks for an instruction set this CPU lacks. */
static ic_context *open_ctx(const char *backend, const char *path, int *skip)
{
    ic_context *ctx = NULL;
    *skip = 0;
    ic_tuning t;
    memset(&t, 0, sizeof t);
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.tuning = &t;
    ic_status st = path ? ic_tuning_parse(path, &t) : IC_OK;
    CHECK(st == IC_OK, "tuning '%s': %s", path ? path : "", ic_last_error());
    if (st == IC_OK)
        st = ic_context_create(&ctx, backend, &o);
    CHECK(st == IC_OK, "%s %s: context: %s (%s)", backend, path ? path : "", ic_status_str(st),
          ic_last_error());
    ic_plan plan;
    if (st == IC_OK && path && plan_rgba(ctx, &plan) == IC_ERR_UNSUPPORTED) {
        *skip = 1;
        ic_context_free(ctx);
        return NULL;
    }
    return st == IC_OK ? ctx : NULL;
}

/* 1 when the context's backend premultiplies itself (ic_plan.premultiply of
 * a premultiplied job; the others take the float64 reference path). */
static int has_premultiply_cap(ic_context *ctx)
{
    ic_plan plan;
    const ic_status st = plan_rgba(ctx, &plan);
    CHECK(st == IC_OK, "%s: ic_plan_get: %s", ic_context_backend(ctx), ic_last_error());
    return st == IC_OK && plan.premultiply;
}

/* Filters src into dst (allocated like src) on ctx; returns the status. */
static ic_status filter(ic_context *ctx, const ict_buf *src, ict_buf *dst, const ic_kernel *k,
                        const ic_params *p)
{
    if (ict_buf_alloc(dst, src->img.width, src->img.height, src->img.channels, src->img.layout,
                      3) != 0)
        return IC_ERR_NOMEM;
    ict_buf_fill(dst, 0xA5);
    return ic_convolve(ctx, &src->img, &dst->img, k, p);
}

/* One photo case: oracle agreement, tiny/zero F(a), alpha vs independent. */
static void photo_case(ic_context *ctx, const char *label, int premul_cap, int w, int h, int ch,
                       ic_layout layout, const ic_kernel *k, const ic_params *p, uint64_t seed,
                       stats *st)
{
    ict_rng r;
    ict_rng_seed(&r, seed);
    ict_buf src, out, ind;
    memset(&out, 0, sizeof out);
    memset(&ind, 0, sizeof ind);
    if (ict_buf_alloc(&src, w, h, ch, layout, 5) != 0) {
        CHECK(0, "out of memory");
        return;
    }
    ict_alpha_photo(&src, &r);
    char what[256];
    snprintf(what, sizeof what,
             "%s kernel %s (%dx%d) %dx%dx%d %s border %s value %g %s bias %g seed 0x%llx", label,
             k->name, k->width, k->height, w, h, ch, ict_layout_str(layout),
             ict_border_str(p->border), (double)p->border_value,
             p->correlate ? "correlation" : "convolution", (double)p->bias,
             (unsigned long long)seed);
    ic_status s = filter(ctx, &src, &out, k, p);
    CHECK(s == IC_OK, "%s: ic_convolve %s", what, ic_status_str(s));
    const size_t n = (size_t)w * (size_t)h * (size_t)ch;
    double *val = malloc(n * sizeof *val), *slack = malloc(n * sizeof *slack);
    if (s != IC_OK || !val || !slack)
        goto done;

    /* 1. the acceptance rule against the oracle, on every sample */
    ict_cmp cmp;
    ict_cmp_init(&cmp);
    ict_compare_rows(&cmp, &out.img, 0, h, (ict_oracle_rows(&src.img, k, p, 0, h, val, slack), val),
                     slack);
    if (!ict_cmp_passed(&cmp)) {
        CHECK(0, "%s: differs from the oracle", what);
        ict_cmp_print(&cmp);
    }
    CHECK(ict_buf_padding_is(&out, 0xA5, NULL), "%s: row padding or guard written", what);

    /* 1b. colour within 1 level; 2. F(a) == 0 gives exactly round(bias) */
    const int ac = ch - 1;
    const uint8_t at_bias = ict_round((double)p->bias);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const double *v = val + ((size_t)y * w + x) * ch;
            /* every alpha the kernel sees (through a nonzero weight) is 0:
             * the oracle's F(a) is 0 and so is its error bound */
            const double *sl = slack + ((size_t)y * w + x) * ch;
            const int transparent =
                v[ac] == (double)p->bias && sl[ac] <= 1e-6 * (1.0 + fabs((double)p->bias));
            for (int c = 0; c < ac; c++) {
                const int got = *ict_sample(&out.img, x, y, c), want = ict_round(v[c]);
                st->colour++;
                st->within1 += abs(got - want) <= 1;
                if (transparent && got != at_bias) {
                    CHECK(0, "%s: (%d,%d) c%d transparent neighbourhood: colour %d, want %d", what,
                          x, y, c, got, at_bias);
                    goto done;
                }
            }
        }

    /* 3. alpha: the backend's own independent alpha, byte for byte */
    if (premul_cap) {
        ic_params pi = *p;
        pi.alpha = IC_ALPHA_INDEPENDENT;
        s = filter(ctx, &src, &ind, k, &pi);
        CHECK(s == IC_OK, "%s: independent run: %s", what, ic_status_str(s));
        for (int y = 0; s == IC_OK && y < h; y++)
            for (int x = 0; x < w; x++) {
                const int a = *ict_sample(&out.img, x, y, ac), b = *ict_sample(&ind.img, x, y, ac);
                if (a != b) {
                    CHECK(0, "%s: (%d,%d) alpha %d, independent alpha %d", what, x, y, a, b);
                    goto done;
                }
            }
    }
done:
    free(val);
    free(slack);
    ict_buf_free(&src);
    ict_buf_free(&out);
    ict_buf_free(&ind);
}

/* Every kernel, border, channel count, layout and size on one context. */
static void photo_cases(ic_context *ctx, const char *label, int premul_cap, stats *st)
{
    static const int sizes[][2] = {{53, 31}, {6, 5}};
    int idx = 0;
    for (int kk = 0; kk < N_NAMED + N_RANDK; kk++) {
        ic_kernel k;
        ict_rng kr;
        ict_rng_seed(&kr, ict_mix(0xA1FA, (uint64_t)kk));
        ic_status s = kk < N_NAMED
                          ? ic_kernel_parse(&k, named[kk])
                          : ict_kernel_random(&k, &kr, randk[kk - N_NAMED].kw,
                                              randk[kk - N_NAMED].kh, randk[kk - N_NAMED].type);
        if (s != IC_OK) {
            CHECK(0, "kernel %d: %s", kk, ic_status_str(s));
            continue;
        }
        if (kk >= N_NAMED)
            snprintf(k.name, sizeof k.name, "random %s",
                     ict_kernel_type_name(randk[kk - N_NAMED].type));
        for (int b = 0; b < N_BORDERS; b++)
            for (int ch = 2; ch <= 4; ch += 2)
                for (int lay = 0; lay < 2; lay++)
                    for (int sz = 0; sz < 2; sz++, idx++) {
                        ic_params p;
                        ic_params_default(&p);
                        p.border = borders[b].b;
                        p.border_value = borders[b].value;
                        p.correlate = idx % 2;
                        p.bias = idx % 5 == 3 ? 6.25f : idx % 5 == 4 ? -3.5f : 0.0f;
                        p.alpha = idx % 3 == 0 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_AUTO;
                        if (ict_effective_alpha(&k, ch, p.alpha) != IC_ALPHA_PREMULTIPLY)
                            p.alpha = IC_ALPHA_PREMULTIPLY; /* weights not summing to 1 */
                        photo_case(ctx, label, premul_cap, sizes[sz][0], sizes[sz][1], ch,
                                   lay ? IC_SOA : IC_AOS, &k, &p, ict_mix(0xF070, (uint64_t)idx),
                                   st);
                    }
        ic_kernel_free(&k);
    }
}

/* Worked examples of tiny and zero F(a), values by hand. */
static void tiny_alpha(ic_context *ctx, const char *label)
{
    /* 9x1 correlation with weights 1 2 ... 9 / 45 on a 9x1 grey+alpha row:
     * pixel 0 is (200, 1), every other pixel (garbage, 0). At x = 4 the pixel
     * meets weight 1/45: F(a) = 1/(45*255) ~ 9e-5, colour = 200 exactly
     * (alone, it is the alpha-weighted mean), alpha = round(1/45) = 0. */
    ict_buf src, dst;
    memset(&dst, 0, sizeof dst);
    if (ict_buf_alloc(&src, 9, 1, 2, IC_AOS, 0) != 0)
        return;
    for (int x = 0; x < 9; x++) {
        *(uint8_t *)ict_sample(&src.img, x, 0, 0) = (uint8_t)(37 * x + 11);
        *(uint8_t *)ict_sample(&src.img, x, 0, 1) = 0;
    }
    *(uint8_t *)ict_sample(&src.img, 0, 0, 0) = 200;
    *(uint8_t *)ict_sample(&src.img, 0, 0, 1) = 1;
    ic_kernel k;
    ic_status s = ic_kernel_parse(&k, "1 2 3 4 5 6 7 8 9 / 45");
    CHECK(s == IC_OK, "kernel: %s", ic_last_error());
    ic_params p;
    ic_params_default(&p);
    p.correlate = 1;
    p.border = IC_BORDER_CONSTANT;
    if (s == IC_OK && filter(ctx, &src, &dst, &k, &p) == IC_OK) {
        /* x = 0..4 see pixel 0 through weights 5..1; x = 5..8 see none of it */
        for (int x = 0; x < 9; x++) {
            const int c = *ict_sample(&dst.img, x, 0, 0), a = *ict_sample(&dst.img, x, 0, 1);
            const int want_c = x <= 4 ? 200 : 0;
            const int want_a = 0; /* at most 5/45 of alpha 1 */
            CHECK(c == want_c && a == want_a, "%s: tiny F(a) at x=%d: (%d, %d), want (%d, %d)",
                  label, x, c, a, want_c, want_a);
        }
    } else {
        CHECK(0, "%s: tiny F(a) example did not run", label);
    }
    ict_buf_free(&dst);
    ic_kernel_free(&k);
    ict_buf_free(&src);
}

/* Opaque stays opaque: RGBA (alpha 255) against RGB of the same colours. */
static void opaque_cases(ic_context *ctx, const char *label)
{
    static const char *const ks[] = {"gaussian:3", "gaussian:9", "sharpen", "unsharp:9", "box:3"};
    static const int dyadic[] = {1, 0, 1, 0, 0};
    static const struct {
        ic_border b;
        float value;
    } same[] = {{IC_BORDER_REPLICATE, 0},
                {IC_BORDER_MIRROR, 0},
                {IC_BORDER_REFLECT, 0},
                {IC_BORDER_WRAP, 0},
                {IC_BORDER_CONSTANT, 255}};
    const int w = 41, h = 23;
    for (int kk = 0; kk < (int)(sizeof ks / sizeof ks[0]); kk++) {
        ic_kernel k;
        if (ic_kernel_parse(&k, ks[kk]) != IC_OK) {
            CHECK(0, "kernel %s: %s", ks[kk], ic_last_error());
            continue;
        }
        for (int b = 0; b < (int)(sizeof same / sizeof same[0]); b++)
            for (int lay = 0; lay < 2; lay++) {
                const ic_layout l = lay ? IC_SOA : IC_AOS;
                ict_rng r;
                ict_rng_seed(&r, ict_mix(0x0BA0E, (uint64_t)(kk * 16 + b * 2 + lay)));
                ict_buf rgba, rgb, o4, o3;
                memset(&o4, 0, sizeof o4);
                memset(&o3, 0, sizeof o3);
                if (ict_buf_alloc(&rgba, w, h, 4, l, 0) != 0 ||
                    ict_buf_alloc(&rgb, w, h, 3, l, 0)) {
                    CHECK(0, "out of memory");
                    return;
                }
                ict_alpha_photo(&rgba, &r);
                for (int y = 0; y < h; y++)
                    for (int x = 0; x < w; x++) {
                        *(uint8_t *)ict_sample(&rgba.img, x, y, 3) = 255;
                        for (int c = 0; c < 3; c++)
                            *(uint8_t *)ict_sample(&rgb.img, x, y, c) =
                                *ict_sample(&rgba.img, x, y, c);
                    }
                ic_params p;
                ic_params_default(&p);
                p.border = same[b].b;
                p.border_value = same[b].value;
                int off = 0, worst = 0, not255 = 0;
                if (filter(ctx, &rgba, &o4, &k, &p) == IC_OK &&
                    filter(ctx, &rgb, &o3, &k, &p) == IC_OK) {
                    for (int y = 0; y < h; y++)
                        for (int x = 0; x < w; x++) {
                            not255 += *ict_sample(&o4.img, x, y, 3) != 255;
                            for (int c = 0; c < 3; c++) {
                                int d = abs(*ict_sample(&o4.img, x, y, c) -
                                            *ict_sample(&o3.img, x, y, c));
                                off += d != 0;
                                worst = d > worst ? d : worst;
                            }
                        }
                    const int n = w * h * 3;
                    CHECK(not255 == 0 && worst <= 1 && (dyadic[kk] ? off == 0 : off * 1000 <= n),
                          "%s: opaque %s %s %s: %d alpha != 255, %d of %d colour samples differ "
                          "from RGB (at most %d levels)",
                          label, ks[kk], ict_border_str(p.border), ict_layout_str(l), not255, off,
                          n, worst);
                } else {
                    CHECK(0, "%s: opaque %s: ic_convolve failed", label, ks[kk]);
                }
                ict_buf_free(&rgba);
                ict_buf_free(&rgb);
                ict_buf_free(&o4);
                ict_buf_free(&o3);
            }
        ic_kernel_free(&k);
    }

    /* Constant V < 255: a translucent border pixel (colour V, alpha V). A 1x1
     * opaque grey+alpha pixel (100, 255), 3x1 box: constant 0 gives alpha
     * 255/3 = 85 and colour 100 (the transparent border adds no colour: the
     * RGB result would be 33); constant 51 gives F(a) = (255 + 2*51)/765,
     * colour (100*255 + 2*51*51)/(255 + 2*51) = 30702/357 = 86.0, alpha 119. */
    ict_buf one, o;
    memset(&o, 0, sizeof o);
    if (ict_buf_alloc(&one, 1, 1, 2, IC_AOS, 0) != 0)
        return;
    *(uint8_t *)ict_sample(&one.img, 0, 0, 0) = 100;
    *(uint8_t *)ict_sample(&one.img, 0, 0, 1) = 255;
    ic_kernel k;
    if (ic_kernel_parse(&k, "1 1 1 / 3") == IC_OK) {
        static const struct {
            float v;
            int c, a;
        } ex[] = {{0, 100, 85}, {51, 86, 119}, {255, 203, 255}};
        for (int t = 0; t < 3; t++) {
            ic_params p;
            ic_params_default(&p);
            p.border = IC_BORDER_CONSTANT;
            p.border_value = ex[t].v;
            ict_buf_free(&o);
            if (filter(ctx, &one, &o, &k, &p) != IC_OK) {
                CHECK(0, "%s: constant border example did not run", label);
                continue;
            }
            const int c = *ict_sample(&o.img, 0, 0, 0), a = *ict_sample(&o.img, 0, 0, 1);
            CHECK(c == ex[t].c && a == ex[t].a,
                  "%s: constant %g around an opaque pixel: (%d, %d), "
                  "want (%d, %d)",
                  label, (double)ex[t].v, c, a, ex[t].c, ex[t].a);
        }
        ic_kernel_free(&k);
    }
    ict_buf_free(&o);
    ict_buf_free(&one);
}

static void run_backend(const char *backend, const char *path)
{
    int skip = 0;
    ic_context *ctx = open_ctx(backend, path, &skip);
    char label[96];
    snprintf(label, sizeof label, "%s%s%s", backend, path ? " " : "", path ? path : "");
    if (!ctx) {
        if (skip)
            printf("%-36s skipped (this CPU lacks the instruction set)\n", label);
        return;
    }
    const int before = failures;
    stats st = {0, 0};
    photo_cases(ctx, label, has_premultiply_cap(ctx), &st);
    tiny_alpha(ctx, label);
    opaque_cases(ctx, label);
    const double pct = st.colour ? 100.0 * (double)st.within1 / (double)st.colour : 0.0;
    CHECK(st.colour > 0 && pct >= 99.0, "%s: %.3f%% of colour samples within 1 level", label, pct);
    printf("%-36s %lld colour samples, %.4f%% within 1 level of the oracle, %s\n", label, st.colour,
           pct, failures == before ? "passed" : "FAILED");
    ic_context_free(ctx);
}

int main(void)
{
    const int count = ic_backend_count();
    int ran = 0;
    for (int i = 0; i < count; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) != IC_OK || !info.name || strncmp(info.name, "cuda", 4) == 0)
            continue;
        if (!info.usable) {
            printf("%-36s not usable here: %s\n", info.name, info.why);
            continue;
        }
        if (strcmp(info.name, "cpu") == 0) {
            for (int p = 0; p < N_CPU_PATHS; p++)
                run_backend(info.name, cpu_paths[p]);
        } else {
            run_backend(info.name, NULL);
        }
        ran++;
    }
    CHECK(ran > 0, "no CPU backend ran");
    if (failures) {
        printf("test_alpha: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_alpha: passed\n");
    return 0;
}
