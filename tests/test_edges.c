/*
 * test_edges.c - edge strength, |sum| and chains (docs/definitions.md#edge-strength,
 * #chains) on every usable backend (the CUDA ones on a GPU machine; a backend
 * without 16-bit samples skips those cases), against a float64 oracle
 * written here:
 *
 *  1. Worked examples: one bright pixel of 10 under sobel gives 20 beside it
 *     (gx = 2*10, gy = 0) and round(sqrt(200)) = 14 diagonally; scharr 100
 *     and round(sqrt(2*30^2)) = 42; sobel-x --abs gives 10 on both sides
 *     where plain sobel-x clamps one side to 0.
 *  2. sobel, scharr, prewitt (the magnitude of the x kernel and its
 *     transpose), random signed kernels with --abs and a bias, and chains of
 *     2-3 random kernels (with and without --abs, fused or not), on random
 *     images of 1-4 channels, 8 and 16 bits, AoS and SoA, every border mode
 *     (constant with 0 and a grey value), images smaller than the kernel: every
 *     sample equals round(oracle) except where the oracle lies within a
 *     float32 bound of a rounding boundary, and those are off by at most 1.
 *     The oracle runs the steps one at a time in float64, never rounding
 *     between them, so a fusion that changed border semantics fails here.
 *     Premultiplied colour over an alpha sum float32 cannot tell from 0 is
 *     not compared (its quotient is noise on every backend).
 *  3. Fusion is what ic_chain_explain says: fused under wrap, for a 1x1
 *     step and for a symmetric first kernel under mirror; not fused under
 *     replicate, nor for an asymmetric first kernel under mirror.
 *  4. An empty chain, a NULL list and a bad element fail with
 *     IC_ERR_INVALID_ARG and one line naming the problem.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IC_ADVANCED_API
#include "testutil.h"

static int failures;
static long long checked, near_ties;
static int gpu; /* the backend's float32 sums may come from FFT tiles */

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* Border mapping, written apart from the library's. */
static int map(int i, int n, ic_border b)
{
    if (i >= 0 && i < n)
        return i;
    switch (b) {
    case IC_BORDER_REPLICATE:
        return i < 0 ? 0 : n - 1;
    case IC_BORDER_WRAP:
        return ((i % n) + n) % n;
    case IC_BORDER_MIRROR: {
        if (n == 1)
            return 0;
        const int p = ((i % (2 * n - 2)) + (2 * n - 2)) % (2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    }
    case IC_BORDER_REFLECT: {
        const int p = ((i % (2 * n)) + 2 * n) % (2 * n);
        return p < n ? p : 2 * n - 1 - p;
    }
    default:
        return -1;
    }
}

/* One plane, float64: correlation with weights w (kw x kh, already in
 * correlation orientation), then |.| or the magnitude with the transpose. */
static void oracle_step(const double *in, double *out, int W, int H, const double *w, int kw,
                        int kh, int magnitude, int absval, ic_border b, double outside)
{
    for (int y = 0; y < H; y++)
        for (int x = 0; x < W; x++) {
            double gx = 0, gy = 0;
            for (int j = 0; j < kh; j++)
                for (int i = 0; i < kw; i++) {
                    const int sx = map(x + i - kw / 2, W, b), sy = map(y + j - kh / 2, H, b);
                    const double v = (sx < 0 || sy < 0) ? outside : in[(size_t)sy * W + sx];
                    gx += w[(size_t)j * kw + i] * v;
                    if (magnitude)
                        gy += w[(size_t)i * kw + j] * v;
                }
            out[(size_t)y * W + x] = magnitude ? sqrt(gx * gx + gy * gy) : absval ? fabs(gx) : gx;
        }
}

/* The oracle of ic_convolve_chain(src, ks[0..n), p): float64 planes, alpha as
 * the documentation says (auto: premultiply when the product of the weight
 * sums is 1), values before rounding into want[c][y*W+x]; *scale bounds the
 * magnitude of the float32 sums (for the rounding-boundary allowance). */
static double *oracle_chain(const ic_image *src, const ic_kernel *ks, int n, const ic_params *p,
                            double *scale)
{
    const int W = src->width, H = src->height, C = src->channels;
    const size_t np = (size_t)W * H;
    const double max = ic_sample_max(src->type);
    double prod = 1, growth = 1;
    for (int i = 0; i < n; i++) {
        prod *= ic_kernel_sum(&ks[i]);
        double a = 0;
        for (int t = 0; t < ks[i].width * ks[i].height; t++)
            a += fabs(ks[i].coef[t] / ks[i].divisor);
        growth *= ks[i].magnitude ? 2 * a : a;
    }
    *scale = growth * (max + fabs(p->border_value)) + fabs(p->bias);
    ic_alpha alpha = p->alpha;
    if (C != 2 && C != 4)
        alpha = IC_ALPHA_INDEPENDENT;
    else if (alpha == IC_ALPHA_AUTO)
        alpha = fabs(prod - 1) < 1e-6 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_KEEP;
    const int premul = alpha == IC_ALPHA_PREMULTIPLY, ac = C - 1;
    double *cur = malloc(np * C * sizeof *cur), *nxt = malloc(np * C * sizeof *nxt);
    for (int c = 0; c < C; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                double v = ic_image_get(src, x, y, c);
                if (premul && c != ac)
                    v *= ic_image_get(src, x, y, ac) / max;
                else if (premul)
                    v /= max;
                cur[c * np + (size_t)y * W + x] = v;
            }
    for (int s = 0; s < n; s++) {
        const ic_kernel *k = &ks[s];
        double *w = malloc((size_t)k->width * k->height * sizeof *w);
        for (int j = 0; j < k->height; j++)
            for (int i = 0; i < k->width; i++) {
                const int di = p->correlate ? i : k->width - 1 - i;
                const int dj = p->correlate ? j : k->height - 1 - j;
                w[(size_t)dj * k->width + di] = k->coef[(size_t)j * k->width + i] / k->divisor;
            }
        for (int c = 0; c < C; c++) {
            const double v = p->border_value;
            const double outside = premul ? (c == ac ? v / max : v * v / max) : v;
            if (alpha == IC_ALPHA_KEEP && c == ac)
                memcpy(nxt + c * np, cur + c * np, np * sizeof *cur);
            else
                oracle_step(cur + c * np, nxt + c * np, W, H, w, k->width, k->height, k->magnitude,
                            p->abs, p->border, outside);
        }
        free(w);
        double *t = cur;
        cur = nxt;
        nxt = t;
    }
    for (int c = 0; c < C; c++)
        for (size_t t = 0; t < np; t++) {
            double v = cur[c * np + t];
            if (premul) {
                const double a = cur[ac * np + t];
                v = c == ac ? max * a : (a > 0 ? v / a : 0);
                if (c != ac && fabs(a) < 1e-5 * *scale / max)
                    v = NAN; /* colour / an alpha that float32 cannot tell from 0 */
            }
            if (!(alpha == IC_ALPHA_KEEP && c == ac))
                v += p->bias;
            nxt[c * np + t] = v;
        }
    free(cur);
    return nxt;
}

/* Every sample equals round(oracle), or is 1 off where the oracle lies within
 * a float32 bound of a rounding boundary. Returns 0 on success. */
static int compare(const ic_image *got, const double *want, double scale, const char *what)
{
    const int W = got->width, H = got->height;
    const double max = ic_sample_max(got->type);
    const double tol = scale * (gpu ? 1e-4 : 2e-6) + 1e-9;
    const double premul_tol = 1e-3; /* division by a small alpha */
    for (int c = 0; c < got->channels; c++)
        for (int y = 0; y < H; y++)
            for (int x = 0; x < W; x++) {
                const double v = want[(size_t)c * W * H + (size_t)y * W + x];
                if (isnan(v))
                    continue;
                const double cl = v < 0 ? 0 : v > max ? max : v;
                const long r = lrint(cl);
                const long g = (long)ic_image_get(got, x, y, c);
                checked++;
                if (g == r)
                    continue;
                const double frac = fabs(fabs(cl - floor(cl)) - 0.5);
                if (labs(g - r) == 1 && frac < tol + premul_tol * (got->channels % 2 == 0)) {
                    near_ties++;
                    continue;
                }
                CHECK(0, "%s: sample (%d,%d,%d) = %ld, oracle %.6f (round %ld)", what, x, y, c, g,
                      v, r);
                return 1;
            }
    return 0;
}

static ic_status run_chain(ic_context *ctx, const ic_image *src, ic_image *dst, const ic_kernel *ks,
                           int n, const ic_params *p)
{
    return n == 1 ? ic_convolve(ctx, src, dst, &ks[0], p)
                  : ic_convolve_chain(ctx, src, dst, ks, n, p);
}

static void worked_examples(ic_context *ctx)
{
    ic_image src, dst;
    ic_image_create(&src, 7, 7, 1, IC_AOS);
    ic_image_create(&dst, 7, 7, 1, IC_AOS);
    ic_image_set(&src, 3, 3, 0, 10);
    ic_kernel k;
    ic_params p;
    ic_params_default(&p);
    CHECK(ic_kernel_parse(&k, "sobel") == IC_OK && k.magnitude, "sobel parses as a magnitude");
    CHECK(ic_convolve(ctx, &src, &dst, &k, &p) == IC_OK, "sobel runs: %s", ic_last_error());
    CHECK(ic_image_get(&dst, 4, 3, 0) == 20 && ic_image_get(&dst, 2, 3, 0) == 20 &&
              ic_image_get(&dst, 3, 2, 0) == 20 && ic_image_get(&dst, 3, 3, 0) == 0,
          "sobel: 20 beside a lone 10, 0 on it (got %u %u %u %u)", ic_image_get(&dst, 4, 3, 0),
          ic_image_get(&dst, 2, 3, 0), ic_image_get(&dst, 3, 2, 0), ic_image_get(&dst, 3, 3, 0));
    CHECK(ic_image_get(&dst, 4, 4, 0) == 14, "sobel: round(sqrt(200)) = 14 diagonally (got %u)",
          ic_image_get(&dst, 4, 4, 0));
    ic_kernel_free(&k);
    CHECK(ic_kernel_parse(&k, "scharr") == IC_OK, "scharr parses");
    CHECK(ic_convolve(ctx, &src, &dst, &k, &p) == IC_OK, "scharr runs");
    CHECK(ic_image_get(&dst, 4, 3, 0) == 100 && ic_image_get(&dst, 4, 4, 0) == 42,
          "scharr: 100 beside, round(sqrt(1800)) = 42 diagonally (got %u %u)",
          ic_image_get(&dst, 4, 3, 0), ic_image_get(&dst, 4, 4, 0));
    ic_kernel_free(&k);
    CHECK(ic_kernel_parse(&k, "sobel-x") == IC_OK && !k.magnitude, "sobel-x stays linear");
    ic_convolve(ctx, &src, &dst, &k, &p);
    CHECK((ic_image_get(&dst, 4, 3, 0) == 0) != (ic_image_get(&dst, 2, 3, 0) == 0),
          "plain sobel-x clamps one side to 0");
    p.abs = 1;
    CHECK(ic_convolve(ctx, &src, &dst, &k, &p) == IC_OK, "sobel-x --abs runs");
    CHECK(ic_image_get(&dst, 4, 3, 0) == 20 && ic_image_get(&dst, 2, 3, 0) == 20,
          "sobel-x --abs: 20 on both sides (got %u %u)", ic_image_get(&dst, 4, 3, 0),
          ic_image_get(&dst, 2, 3, 0));
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
}

/* One random case: kinds 0 magnitude, 1 |sum|, 2 a chain. */
static void random_case(ic_context *ctx, const char *backend, ict_rng *r, int kind, uint64_t seed)
{
    static const char *const named[] = {"sobel", "scharr", "prewitt"};
    const int W = ict_range(r, 1, 23), H = ict_range(r, 1, 17), C = ict_range(r, 1, 4);
    const ic_layout lay = ict_below(r, 2) ? IC_SOA : IC_AOS;
    const ic_sample_type type = ict_below(r, 3) == 0 ? IC_U16 : IC_U8;
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)ict_below(r, 5);
    p.border_value = ict_below(r, 2) ? 0.0f : (float)(ic_sample_max(type) / 3);
    p.correlate = (int)ict_below(r, 2);
    p.alpha = (ic_alpha)ict_below(r, 4);
    ic_kernel ks[3];
    memset(ks, 0, sizeof ks);
    int n = 1;
    if (kind == 0) {
        ic_kernel_parse(&ks[0], named[ict_below(r, 3)]);
        if (p.alpha == IC_ALPHA_PREMULTIPLY)
            p.alpha = IC_ALPHA_KEEP; /* a magnitude of premultiplied colour means little */
    } else {
        n = kind == 1 ? 1 : ict_range(r, 2, 3);
        p.abs = kind == 1 || ict_below(r, 3) == 0;
        p.bias = kind == 1 ? (float)ict_range(r, -20, 20) : 0.0f;
        for (int i = 0; i < n; i++) {
            static const char *const sym[] = {"box:3x5", "gaussian:5", "1 2 1; 2 -4 2; 1 2 1"};
            if (ict_below(r, 3) == 0) { /* symmetric: fused under mirror and reflect */
                ic_kernel_parse(&ks[i], sym[ict_below(r, 3)]);
                continue;
            }
            const int s = ict_below(r, 4) == 0 ? 1 : 2 * ict_range(r, 0, 2) + 1;
            ict_kernel_random(&ks[i], r, s, ict_below(r, 2) ? s : 2 * ict_range(r, 0, 2) + 1,
                              (int)ict_below(r, 3) == 0 ? ICT_K_BLUR : ICT_K_INT);
        }
        if (kind == 2 && ict_below(r, 4) == 0)
            p.border = IC_BORDER_WRAP; /* fusion's case */
    }
    ict_buf s, d;
    ict_buf_alloc_type(&s, W, H, C, lay, 3, type);
    ict_buf_alloc_type(&d, W, H, C, ict_below(r, 2) ? IC_SOA : IC_AOS, 5, type);
    ict_buf_random(&s, r, 2 * (int)ict_below(r, 2));
    double scale;
    double *want = oracle_chain(&s.img, ks, n, &p, &scale);
    char what[256];
    snprintf(what, sizeof what,
             "%s kind %d seed %llu: %dx%dx%d %s %d-bit, %d kernels (%s %dx%d), border %s %g, "
             "abs %d, alpha %s",
             backend, kind, (unsigned long long)seed, W, H, C, ict_layout_str(lay),
             type == IC_U16 ? 16 : 8, n, ks[0].name, ks[0].width, ks[0].height,
             ict_border_str(p.border), (double)p.border_value, p.abs, ict_alpha_str(p.alpha));
    const ic_status st = run_chain(ctx, &s.img, &d.img, ks, n, &p);
    if (st == IC_ERR_UNSUPPORTED && type == IC_U16) {
        /* a backend without 16-bit samples: not this test's concern */
    } else {
        CHECK(st == IC_OK, "%s: %s", what, ic_last_error());
        if (st == IC_OK)
            compare(&d.img, want, scale, what);
    }
    free(want);
    for (int i = 0; i < 3; i++)
        ic_kernel_free(&ks[i]);
    ict_buf_free(&s);
    ict_buf_free(&d);
}

static void fusion_explained(ic_context *ctx)
{
    ic_image src;
    ic_image_create(&src, 16, 16, 1, IC_AOS);
    ic_kernel ks[2];
    ic_kernel_parse(&ks[0], "box:3");
    ic_kernel_parse(&ks[1], "gaussian:5");
    ic_params p;
    ic_params_default(&p);
    char buf[4096];
    p.border = IC_BORDER_WRAP;
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "1 step after fusion") && strstr(buf, "fused into one") &&
              strstr(buf, "(7x7)"),
          "wrap: box:3 then gaussian:5 fuse into one 7x7 kernel:\n%s", buf);
    p.border = IC_BORDER_MIRROR;
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "1 step after fusion"),
          "mirror: a symmetric first kernel fuses:\n%s", buf);
    p.border = IC_BORDER_REPLICATE;
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "2 steps after fusion") && strstr(buf, "not fused"),
          "replicate: not fused:\n%s", buf);
    p.border = IC_BORDER_MIRROR;
    ic_kernel_free(&ks[0]);
    ic_kernel_parse(&ks[0], "0 1 2");
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "2 steps after fusion") && strstr(buf, "not fused"),
          "mirror: an asymmetric first kernel does not fuse:\n%s", buf);
    ic_kernel_free(&ks[1]);
    ic_kernel_parse(&ks[1], "2");
    CHECK(ic_chain_explain(ctx, &src, ks, 2, &p, buf, sizeof buf) == IC_OK &&
              strstr(buf, "1 step after fusion"),
          "mirror: a 1x1 step fuses:\n%s", buf);
    ic_kernel_free(&ks[0]);
    ic_kernel_free(&ks[1]);
    ic_image_free(&src);
}

static void one_line(ic_status st, const char *want, const char *what)
{
    const char *m = ic_last_error();
    CHECK(st == IC_ERR_INVALID_ARG && strstr(m, want) && !strchr(m, '\n'),
          "%s: status %d, message '%s' (expected '%s')", what, (int)st, m, want);
}

static void bad_chains(ic_context *ctx)
{
    ic_image src, dst;
    ic_image_create(&src, 8, 8, 3, IC_AOS);
    ic_image_create(&dst, 8, 8, 3, IC_AOS);
    ic_kernel ks[2];
    ic_kernel_parse(&ks[0], "box:3");
    ic_kernel_parse(&ks[1], "box:3");
    one_line(ic_convolve_chain(ctx, &src, &dst, ks, 0, NULL), "empty chain", "n = 0");
    one_line(ic_convolve_chain(ctx, &src, &dst, NULL, 2, NULL), "empty chain", "NULL list");
    ks[1].width = 4; /* even: no centre */
    one_line(ic_convolve_chain(ctx, &src, &dst, ks, 2, NULL), "chain step 2", "even width");
    ks[1].width = 3;
    ks[1].magnitude = 1;
    ks[1].height = 1;
    one_line(ic_convolve_chain(ctx, &src, &dst, ks, 2, NULL), "chain step 2",
             "non-square magnitude");
    ks[1].height = 3;
    ic_kernel_free(&ks[0]);
    ic_kernel_free(&ks[1]);
    ic_image_free(&src);
    ic_image_free(&dst);
}

int main(void)
{
    /* every usable backend: seq and cpu here, the CUDA ones on a GPU machine */
    int tested = 0;
    for (int b = 0; b < ic_backend_count(); b++) {
        ic_backend_info info;
        if (ic_backend_get(b, &info) != IC_OK || !info.usable)
            continue;
        const char *const name = info.name;
        tested++;
        printf("backend %s\n", name);
        gpu = strncmp(name, "cuda", 4) == 0;
        ic_context *ctx = NULL;
        if (ic_context_create(&ctx, name, NULL) != IC_OK) {
            CHECK(0, "backend %s: %s", name, ic_last_error());
            continue;
        }
        worked_examples(ctx);
        for (int kind = 0; kind < 3; kind++)
            for (int i = 0; i < 150; i++) {
                const uint64_t seed = ict_mix((uint64_t)kind * 1000 + (uint64_t)i, (uint64_t)b);
                ict_rng r;
                ict_rng_seed(&r, seed);
                random_case(ctx, name, &r, kind, seed);
            }
        fusion_explained(ctx);
        bad_chains(ctx);
        ic_context_free(ctx);
    }
    CHECK(tested >= 2, "only %d usable backends (seq and cpu at least)", tested);
    printf("test_edges: %lld samples, %lld off by one at a rounding boundary, %d failures\n",
           checked, near_ties, failures);
    return failures ? 1 : 0;
}
