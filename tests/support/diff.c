/*
 * diff.c - the differential test every backend must pass: seeded random cases
 * through ic_context_create(backend) + ic_convolve(), each checked against the
 * float64 oracle (oracle.h) with the acceptance rule of testutil.h, plus
 * checks that src is left untouched and dst's row padding / trailing guard are
 * never written. Covers issue 2's list: kernels 1x1..15x15 incl. non-square,
 * every border mode, convolution and correlation, 1-4 channels, AoS and SoA
 * (src and dst independently), pitched rows, odd sizes, images smaller than
 * the kernel, bias and every alpha mode, on random images and on photograph-
 * like ones with real transparency (ict_alpha_photo; a quarter of the cases).
 */
#define IC_ADVANCED_API /* ic_tuning for ict_diff_backend_tuned */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

/* Kernel shapes cycled through by even cases (23 entries, a prime, so that
 * they meet every border mode and channel count). */
static const int shapes[][2] = {
    {1, 1}, {3, 3},   {1, 3}, {3, 1}, {5, 5},  {1, 15},  {15, 1}, {3, 7},
    {7, 3}, {15, 15}, {9, 9}, {1, 5}, {5, 1},  {7, 7},   {11, 3}, {13, 13},
    {1, 9}, {9, 1},   {3, 5}, {5, 3}, {15, 5}, {11, 11}, {1, 7},
};

/* Image sizes cycled through by every third case (19 entries, a prime). */
static const int sizes[][2] = {
    {1, 1}, {1, 9}, {9, 1},   {7, 5},  {33, 17}, {129, 65}, {2, 2},  {2, 3},  {3, 2},  {1, 2},
    {2, 1}, {5, 7}, {17, 33}, {64, 1}, {1, 64},  {31, 31},  {16, 9}, {65, 3}, {3, 65},
};

#define N_SHAPES ((int)(sizeof shapes / sizeof shapes[0]))
#define N_SIZES ((int)(sizeof sizes / sizeof sizes[0]))

static int cap(int v, int max_dim)
{
    return v > max_dim ? max_dim : v;
}

static int random_dim(ict_rng *r, int max_dim)
{
    uint32_t u = ict_below(r, 100);
    int hi = u < 50 ? 16 : u < 85 ? 64 : max_dim;
    return ict_range(r, 1, cap(hi, max_dim));
}

static size_t random_extra(ict_rng *r)
{
    uint32_t u = ict_below(r, 10);
    return u < 4 ? 0 : u < 8 ? (size_t)ict_range(r, 1, 9) : (size_t)ict_range(r, 10, 70);
}

void ict_case_make(ict_case *c, uint64_t seed, int index, int max_dim)
{
    memset(c, 0, sizeof *c);
    if (max_dim < 1)
        max_dim = 1;
    c->seed = seed;
    c->index = index;
    c->case_seed = ict_mix(seed, (uint64_t)index);
    ict_rng r;
    ict_rng_seed(&r, c->case_seed);
    const int i = index;

    /* The systematic part: every combination of these within 160 cases. */
    c->params.border = (ic_border)(i % 5);
    c->params.correlate = (i / 5) % 2;
    c->channels = 1 + (i / 10) % 4;
    c->params.alpha = (ic_alpha)((i / 40) % 4);
    const int lay = (i + i / 20) % 4;
    c->src_layout = (lay & 1) ? IC_SOA : IC_AOS;
    c->dst_layout = (lay & 2) ? IC_SOA : IC_AOS;

    if (i % 2 == 0) {
        c->kw = shapes[(i / 2) % N_SHAPES][0];
        c->kh = shapes[(i / 2) % N_SHAPES][1];
    } else {
        c->kw = 2 * ict_range(&r, 0, 7) + 1;
        c->kh = 2 * ict_range(&r, 0, 7) + 1;
    }
    if (i % 3 == 0) {
        c->width = cap(sizes[(i / 3) % N_SIZES][0], max_dim);
        c->height = cap(sizes[(i / 3) % N_SIZES][1], max_dim);
    } else if (i % 7 == 5 && (c->kw > 1 || c->kh > 1)) { /* smaller than the kernel */
        c->width = cap(ict_range(&r, 1, c->kw > 1 ? c->kw - 1 : 1), max_dim);
        c->height = cap(ict_range(&r, 1, c->kh > 1 ? c->kh - 1 : 1), max_dim);
    } else {
        c->width = random_dim(&r, max_dim);
        c->height = random_dim(&r, max_dim);
    }
    c->src_extra = random_extra(&r);
    c->dst_extra = random_extra(&r);
    c->ktype = i % 11 == 7 ? ICT_K_ONEHOT : (int)ict_below(&r, ICT_K_COUNT);
    c->alpha_style = (int)ict_below(&r, 4); /* 3: ict_alpha_photo */

    if ((i / 2) % 3 != 0)
        c->params.bias = (float)(ict_uniform(&r) * 90.0 - 40.0);
    if (c->params.border == IC_BORDER_CONSTANT && ict_below(&r, 2)) {
        c->params.border_value = (float)ict_range(&r, 0, 255);
        if (ict_below(&r, 5) == 0)
            c->params.border_value += 0.375f;
    }
    if (i % 160 == 0 || i % 160 == 30) { /* constant, convolution, auto: the defaults */
        c->params.bias = 0.0f;
        c->params.border_value = 0.0f;
        c->null_params = 1;
    }
}

void ict_case_u16(ict_case *c)
{
    c->type = IC_U16;
    c->params.bias *= 257.0f;
    c->params.border_value *= 257.0f;
}

void ict_case_describe(const ict_case *c, const ic_kernel *k, char *buf, size_t n)
{
    const ic_params *p = &c->params;
    snprintf(buf, n,
             "seed=0x%016" PRIx64 " case=%d image=%dx%d%s ch=%d src=%s+%zu dst=%s+%zu "
             "kernel=%dx%d %s divisor=%.17g border=%s value=%g %s bias=%.9g alpha=%s%s%s",
             c->seed, c->index, c->width, c->height, c->type == IC_U16 ? " 16-bit" : "",
             c->channels, ict_layout_str(c->src_layout), c->src_extra,
             ict_layout_str(c->dst_layout), c->dst_extra, c->kw, c->kh,
             ict_kernel_type_name(c->ktype), k ? k->divisor : 0.0, ict_border_str(p->border),
             (double)p->border_value, p->correlate ? "correlation" : "convolution", (double)p->bias,
             ict_alpha_str(p->alpha), c->null_params ? " (params NULL)" : "",
             c->alpha_style == 3 ? " (photo image)" : "");
}

static void print_kernel(const ic_kernel *k)
{
    if (k->width * k->height > 25)
        return;
    printf("    kernel:");
    for (int j = 0; j < k->height; j++) {
        for (int i = 0; i < k->width; i++)
            printf(" %.9g", (double)k->coef[j * k->width + i]);
        printf(j + 1 < k->height ? " ;" : "\n");
    }
}

int ict_run_case(ic_context *ctx, const char *backend, const ict_case *c, ict_totals *tot)
{
    ict_rng r;
    ict_rng_seed(&r, c->case_seed ^ 0xA5A5A5A5A5A5A5A5ull);
    ict_buf src, dst;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    double *val = NULL, *slack = NULL;
    uint8_t *src_copy = NULL;
    char what[512];
    int failed = 1;
    const char *problem = NULL;

    if (ict_buf_alloc_type(&src, c->width, c->height, c->channels, c->src_layout, c->src_extra,
                           c->type) ||
        ict_buf_alloc_type(&dst, c->width, c->height, c->channels, c->dst_layout, c->dst_extra,
                           c->type)) {
        printf("FAIL %s: cannot allocate test images\n", backend);
        return 1;
    }
    const size_t nval = (size_t)c->width * (size_t)c->height * (size_t)c->channels;
    val = malloc(nval * sizeof *val);
    slack = malloc(nval * sizeof *slack);
    src_copy = malloc(src.bytes + src.guard);
    if (c->alpha_style == 3)
        ict_alpha_photo(&src, &r);
    else
        ict_buf_random(&src, &r, c->alpha_style);
    ic_status kst = ict_kernel_random(&k, &r, c->kw, c->kh, c->ktype);
    ict_case_describe(c, kst == IC_OK ? &k : NULL, what, sizeof what);
    if (!val || !slack || !src_copy) {
        problem = "out of memory in the test";
        goto report;
    }
    if (kst != IC_OK) {
        problem = "ic_kernel_create failed";
        goto report;
    }
    memcpy(src_copy, src.mem, src.bytes + src.guard);
    const uint8_t poison = (uint8_t)(ict_next(&r) >> 56);
    ict_buf_fill(&dst, poison);

    ic_status st = ic_convolve(ctx, &src.img, &dst.img, &k, c->null_params ? NULL : &c->params);
    if (st != IC_OK) {
        printf("FAIL %s: ic_convolve returned %d (%s): %s\n  %s\n", backend, (int)st,
               ic_status_str(st), ic_last_error(), what);
        goto done;
    }
    if (memcmp(src_copy, src.mem, src.bytes + src.guard) != 0) {
        problem = "src (or its padding) was modified";
        goto report;
    }
    size_t bad_off = 0;
    if (!ict_buf_padding_is(&dst, poison, &bad_off)) {
        printf("FAIL %s: dst byte at offset %zu (pitch %zu, %s) outside the samples was "
               "written: 0x%02x, poison 0x%02x\n  %s\n",
               backend, bad_off, dst.img.pitch,
               bad_off >= dst.bytes ? "after the end" : "row padding", dst.mem[bad_off], poison,
               what);
        goto done;
    }
    ict_oracle_rows(&src.img, &k, c->null_params ? NULL : &c->params, 0, c->height, val, slack);
    ict_cmp cmp;
    ict_cmp_init(&cmp);
    ict_compare_rows(&cmp, &dst.img, 0, c->height, val, slack);
    if (tot) {
        tot->samples += cmp.samples;
        tot->exact += cmp.exact;
        tot->unexplained += cmp.unexplained;
    }
    if (!ict_cmp_passed(&cmp)) {
        printf("FAIL %s: output differs from the oracle (poison 0x%02x, effective alpha %s)\n"
               "  %s\n",
               backend, poison,
               ict_alpha_str(ict_effective_alpha(&k, c->channels, c->params.alpha)), what);
        ict_cmp_print(&cmp);
        print_kernel(&k);
        goto done;
    }
    failed = 0;
    goto done;

report:
    printf("FAIL %s: %s\n  %s\n", backend, problem, what);
done:
    if (failed)
        printf("  rerun: ICT_SEED=0x%016" PRIx64 " ICT_CASE=%d\n", c->seed, c->index);
    if (tot) {
        tot->cases++;
        tot->failures += failed;
    }
    ic_kernel_free(&k);
    free(val);
    free(slack);
    free(src_copy);
    ict_buf_free(&src);
    ict_buf_free(&dst);
    return failed;
}

static int env_int(const char *name, long long *out)
{
    const char *s = getenv(name);
    if (!s || !*s)
        return 0;
    char *end = NULL;
    long long v = strtoll(s, &end, 0);
    if (*end)
        return 0;
    *out = v;
    return 1;
}

ic_context *ict_context_tuned(const char *backend, const char *tuning,
                              const ic_context_options *base)
{
    ic_tuning t;
    memset(&t, 0, sizeof t);
    ic_context_options o;
    memset(&o, 0, sizeof o);
    if (base)
        o = *base;
    o.tuning = &t; /* copied by ic_context_create */
    ic_context *ctx = NULL;
    if ((tuning && ic_tuning_parse(tuning, &t) != IC_OK) ||
        ic_context_create(&ctx, backend, &o) != IC_OK)
        return NULL;
    return ctx;
}

int ict_diff_backend(const char *backend, int ncases, uint64_t seed, int max_dim)
{
    return ict_diff_backend_ex(backend, NULL, IC_U8, ncases, seed, max_dim);
}

int ict_diff_backend_type(const char *backend, int ncases, uint64_t seed, int max_dim,
                          ic_sample_type type)
{
    return ict_diff_backend_ex(backend, NULL, type, ncases, seed, max_dim);
}

int ict_diff_backend_tuned(const char *backend, const char *tuning, int ncases, uint64_t seed,
                           int max_dim)
{
    return ict_diff_backend_ex(backend, tuning, IC_U8, ncases, seed, max_dim);
}

int ict_diff_backend_ex(const char *backend, const char *tuning, ic_sample_type type, int ncases,
                        uint64_t seed, int max_dim)
{
    long long v, only = -1;
    if (env_int("ICT_SEED", &v))
        seed = (uint64_t)v;
    if (env_int("ICT_CASES", &v) && v > 0)
        ncases = (int)v;
    if (env_int("ICT_CASE", &v) && v >= 0)
        only = v;

    ic_context *ctx = ict_context_tuned(backend, tuning, NULL);
    if (!ctx) {
        printf("FAIL %s: context (tuning %s): %s\n", backend, tuning ? tuning : "none",
               ic_last_error());
        return 1;
    }
    ict_totals tot;
    memset(&tot, 0, sizeof tot);
    for (int i = 0; i < ncases; i++) {
        if (only >= 0 && i != only)
            continue;
        ict_case c;
        ict_case_make(&c, seed, i, max_dim);
        if (type == IC_U16)
            ict_case_u16(&c);
        ict_run_case(ctx, backend, &c, &tot);
    }
    ic_context_free(ctx);

    const double exact = tot.samples ? 100.0 * (double)tot.exact / (double)tot.samples : 100.0;
    int overall = 0;
    if (tot.samples && (double)tot.exact < ICT_EXACT_MIN(type) * (double)tot.samples) {
        printf("FAIL %s: only %.4f%% of all samples exactly equal round(oracle) (need %.1f%%)\n",
               backend, exact, 100.0 * ICT_EXACT_MIN(type));
        overall = 1;
    }
    printf("%-18s %s %d cases, %d failed, %lld samples, %.4f%% exact, %lld off by 1 without a "
           "rounding-boundary reason (seed 0x%016" PRIx64 ")\n",
           backend, type == IC_U16 ? "16-bit" : "8-bit", tot.cases, tot.failures, tot.samples,
           exact, tot.unexplained, seed);
    return tot.failures + overall;
}

int ict_backend_usable(const char *name, char *why, size_t n)
{
    const int count = ic_backend_count();
    for (int i = 0; i < count; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) != IC_OK || !info.name || strcmp(info.name, name) != 0)
            continue;
        if (!info.usable && why && n)
            snprintf(why, n, "%s", info.why[0] ? info.why : "not usable (no reason given)");
        return info.usable ? 1 : 0;
    }
    if (why && n)
        snprintf(why, n, "backend %s is not compiled in", name);
    return 0;
}

/* ---- the worked rounding example -------------------------------------------------- */

/* One row through the 3x1 kernel; want[] written out by hand. */
static int rounding_row(ic_context *ctx, const char *backend, const char *label,
                        const float coef[3], int correlate, float bias, const uint8_t *in,
                        const uint8_t *want, int n)
{
    ict_buf src, dst;
    ic_kernel k;
    int bad = 0;
    if (ict_buf_alloc(&src, n, 1, 1, IC_AOS, 3) || ict_buf_alloc(&dst, n, 1, 1, IC_AOS, 5)) {
        printf("FAIL %s: cannot allocate\n", backend);
        return 1;
    }
    memcpy(src.mem, in, (size_t)n);
    ict_buf_fill(&dst, 0xA5);
    if (ic_kernel_create(&k, 3, 1, coef, 1.0) != IC_OK) {
        printf("FAIL %s: ic_kernel_create(3x1) failed\n", backend);
        ict_buf_free(&src);
        ict_buf_free(&dst);
        return 1;
    }
    ic_params p;
    memset(&p, 0, sizeof p);
    p.border = IC_BORDER_REPLICATE;
    p.correlate = correlate;
    p.bias = bias;
    p.alpha = IC_ALPHA_AUTO;
    ic_status st = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
    if (st != IC_OK) {
        printf("FAIL %s: rounding example %s: ic_convolve returned %s: %s\n", backend, label,
               ic_status_str(st), ic_last_error());
        bad = 1;
    } else {
        for (int x = 0; x < n; x++) {
            if (dst.mem[x] != want[x]) {
                printf("FAIL %s: rounding example %s, x=%d: got %d, want %d\n", backend, label, x,
                       dst.mem[x], want[x]);
                bad++;
            }
        }
    }
    ic_kernel_free(&k);
    ict_buf_free(&src);
    ict_buf_free(&dst);
    return bad;
}

int ict_check_rounding(const char *backend)
{
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, NULL) != IC_OK || !ctx) {
        printf("FAIL %s: ic_context_create: %s\n", backend, ic_last_error());
        return 1;
    }
    /* out(x) = (in(x-1) + in(x)) / 2, replicate border: as a correlation with
     * 0.5 0.5 0, and as a convolution with the flipped 0 0.5 0.5. */
    static const uint8_t in[] = {1, 2, 3, 4, 5, 253, 254, 255, 0, 1};
    /*        x:                  0  1    2    3    4    5    6      7      8      9
     *  average:                  1  1.5  2.5  3.5  4.5  129  253.5  254.5  127.5  0.5 */
    static const uint8_t avg[] = {1, 2, 2, 4, 4, 129, 254, 254, 128, 0};
    /* bias -2: -1 -0.5 0.5 1.5 2.5 127 251.5 252.5 125.5 -1.5 */
    static const uint8_t avg_m2[] = {0, 0, 0, 2, 2, 127, 252, 252, 126, 0};
    /* bias +1: 2 2.5 3.5 4.5 5.5 130 254.5 255.5 128.5 1.5 */
    static const uint8_t avg_p1[] = {2, 2, 4, 4, 6, 130, 254, 255, 128, 2};
    static const float corr[3] = {0.5f, 0.5f, 0.0f};
    static const float conv[3] = {0.0f, 0.5f, 0.5f};
    const int n = (int)sizeof in;
    int bad = 0;
    bad += rounding_row(ctx, backend, "correlation 0.5 0.5 0", corr, 1, 0.0f, in, avg, n);
    bad += rounding_row(ctx, backend, "convolution 0 0.5 0.5", conv, 0, 0.0f, in, avg, n);
    bad += rounding_row(ctx, backend, "bias -2", corr, 1, -2.0f, in, avg_m2, n);
    bad += rounding_row(ctx, backend, "bias +1", conv, 0, 1.0f, in, avg_p1, n);
    ic_context_free(ctx);
    return bad;
}
