/*
 * test_cpu_paths.c - every path of the `cpu` backend, forced one at a time
 * through the advanced tier's tuning knobs (ic_tuning: method, cpu_isa,
 * cpu_tiny; src/cpu/cpu.c), against the float64 oracle on the
 * differential suite's random cases (tests/support/diff.c), with 1 and with 3
 * worker threads:
 *   direct and sep(arable / low-rank) paths, each with the scalar, AVX2 and
 *   AVX-512 inner loops (an instruction set this CPU lacks is skipped), the
 *   automatic choice, and "tiny" tasks that put strip, band and pass seams
 *   everywhere and use the thread pool even on small images.
 * Acceptance is the suite's: within 1 level, >= 99.9% exact. Every path also
 * runs the cases at 16 bits (ict_case_u16).
 * Also: bigger images with the named kernels whose exact ties (x.5 after a
 * /16) must survive the separable path, kernels up to 255x255 and images
 * wider than one column strip, and an unknown tuning word is refused. Each
 * forced path is checked to be the one that runs (ic_plan_get: instruction
 * set, and the direct path when direct is forced). ICT_SEED / ICT_CASES narrow
 * a run (testutil.h).
 */
#define IC_ADVANCED_API
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEED 0xC0FFEE5EEDull
#define CASES 160
#define MAX_DIM 150

/* ic_tuning_parse text of each path */
#define D "method=direct,"
#define S "method=sep,"
static const char *const paths[] = {
    D "cpu-isa=scalar",
    S "cpu-isa=scalar",
    D "cpu-isa=avx2",
    S "cpu-isa=avx2",
    D "cpu-isa=avx512",
    S "cpu-isa=avx512",
    "method=auto",
    D "cpu-isa=avx2,cpu-tiny=1",
    S "cpu-isa=avx2,cpu-tiny=1",
    D "cpu-isa=scalar,cpu-tiny=1",
    S "cpu-isa=scalar,cpu-tiny=1",
    S "cpu-isa=avx512,cpu-tiny=1",
};
#define N_PATHS ((int)(sizeof paths / sizeof paths[0]))

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : def;
}

/* Opens a cpu context tuned by `path` (ic_tuning_parse text) and checks with
 * ic_plan_get that the forced instruction set and direct path are what runs;
 * returns NULL (and sets *skip when the CPU lacks the instruction set) on
 * failure. */
static ic_context *open_cpu(const char *path, int threads, int *skip)
{
    *skip = 0;
    ic_tuning t;
    memset(&t, 0, sizeof t);
    if (ic_tuning_parse(path, &t) != IC_OK) {
        printf("FAIL: tuning '%s': %s\n", path, ic_last_error());
        return NULL;
    }
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.threads = threads;
    o.tuning = &t;
    ic_context *ctx = NULL;
    ic_status st = ic_context_create(&ctx, "cpu", &o);
    if (st != IC_OK) {
        printf("FAIL: %s threads %d: context: %s (%s)\n", path, threads, ic_status_str(st),
               ic_last_error());
        return NULL;
    }
    /* a plan of a 5x5 Gaussian on a small image: the forced ISA must run it */
    ic_image img;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    ic_plan plan;
    if (ic_image_create(&img, 40, 20, 3, IC_AOS) != IC_OK ||
        ic_kernel_parse(&k, "gaussian:5") != IC_OK) {
        printf("FAIL: %s: cannot make the plan's image or kernel\n", path);
        ic_image_free(&img);
        ic_context_free(ctx);
        return NULL;
    }
    st = ic_plan_get(ctx, &img, &k, NULL, &plan);
    ic_image_free(&img);
    ic_kernel_free(&k);
    if (st == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "has no")) {
        printf("  %-20s threads %d: skipped (%s)\n", path, threads, ic_last_error());
        *skip = 1;
        ic_context_free(ctx);
        return NULL;
    }
    const int bad =
        st != IC_OK || (t.cpu_isa != IC_ISA_AUTO && plan.isa != t.cpu_isa) ||
        (t.method == IC_METHOD_DIRECT && (plan.method != IC_METHOD_DIRECT || !plan.forced)) ||
        strcmp(plan.backend, "cpu") != 0;
    if (bad) {
        printf("FAIL: %s threads %d: plan %s (%s): backend %s, method %s, isa %s\n", path, threads,
               ic_status_str(st), ic_last_error(), plan.backend ? plan.backend : "(null)",
               ic_method_name(plan.method), ic_cpu_isa_name(plan.isa));
        ic_context_free(ctx);
        return NULL;
    }
    return ctx;
}

/* The random differential cases on one forced path. */
static int run_random(const char *path, int threads, uint64_t seed, int ncases, ic_sample_type type)
{
    int skip;
    ic_context *ctx = open_cpu(path, threads, &skip);
    if (!ctx)
        return skip ? 0 : 1;
    char name[64];
    snprintf(name, sizeof name, "cpu[%s,t%d]", path, threads);
    ict_totals tot;
    memset(&tot, 0, sizeof tot);
    int fails = 0;
    for (int i = 0; i < ncases; i++) {
        ict_case c;
        ict_case_make(&c, seed, i, MAX_DIM);
        if (type == IC_U16)
            ict_case_u16(&c);
        fails += ict_run_case(ctx, name, &c, &tot);
    }
    ic_context_free(ctx);
    double exact = tot.samples ? 100.0 * (double)tot.exact / (double)tot.samples : 100.0;
    printf("  %-20s threads %d %s: %d cases, %d failed, %lld samples, %.4f%% exact\n", path,
           threads, type == IC_U16 ? "16-bit" : "8-bit", tot.cases, fails, tot.samples, exact);
    if (tot.samples && exact < 100.0 * ICT_EXACT_MIN(type)) {
        printf("FAIL: %s: under %.1f%% exact over the run\n", name, 100.0 * ICT_EXACT_MIN(type));
        fails++;
    }
    return fails;
}

/* Kernels up to IC_MAX_KERNEL on images narrower or wider than the ring's
 * strip (several column strips), on the automatic path and forced paths. */
static int run_big(const char *path, uint64_t seed)
{
    static const int big[][4] = {
        /* kw, kh, width, height */
        {255, 255, 9, 7},  {1, 255, 1500, 23}, {255, 1, 700, 5},  {63, 63, 70, 40},
        {3, 101, 700, 30}, {101, 3, 40, 300},  {31, 31, 600, 50},
    };
    int skip, fails = 0;
    ic_context *ctx = open_cpu(path, 2, &skip);
    if (!ctx)
        return skip ? 0 : 1;
    for (int i = 0; i < (int)(sizeof big / sizeof big[0]); i++) {
        ict_case c;
        ict_case_make(&c, seed, 1000 + i, MAX_DIM);
        c.kw = big[i][0];
        c.kh = big[i][1];
        c.width = big[i][2];
        c.height = big[i][3];
        c.channels = 1 + i % 4;
        c.alpha_style = 2;
        fails += ict_run_case(ctx, path, &c, NULL);
    }
    ic_context_free(ctx);
    printf("  %-20s big kernels: %d failed\n", path, fails);
    return fails;
}

/* A named kernel on a larger chart-like random image, every path: the
 * separable path must keep the exact ties of dyadic kernels. */
static int run_named(const char *path, const char *ktext, int w, int h, int ch, ic_layout lay,
                     ic_border border, uint64_t seed)
{
    int skip;
    ic_context *ctx = open_cpu(path, 2, &skip);
    if (!ctx)
        return skip ? 0 : 1;
    ic_kernel k;
    if (ic_kernel_parse(&k, ktext) != IC_OK) {
        printf("FAIL: kernel %s: %s\n", ktext, ic_last_error());
        ic_context_free(ctx);
        return 1;
    }
    ict_rng r;
    ict_rng_seed(&r, seed);
    ict_buf src, dst;
    int fails = 0;
    if (ict_buf_alloc(&src, w, h, ch, lay, 3) || ict_buf_alloc(&dst, w, h, ch, lay, 5)) {
        printf("FAIL: out of memory\n");
        ic_kernel_free(&k);
        ic_context_free(ctx);
        return 1;
    }
    ict_buf_random(&src, &r, 2);
    ict_buf_fill(&dst, 0xA5);
    ic_params p;
    ic_params_default(&p);
    p.border = border;
    p.border_value = 77.0f;
    p.alpha = IC_ALPHA_INDEPENDENT;
    ic_status st = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
    if (st != IC_OK) {
        printf("FAIL: %s %s: %s (%s)\n", path, ktext, ic_status_str(st), ic_last_error());
        fails = 1;
    } else {
        size_t n = (size_t)w * (size_t)h * (size_t)ch;
        double *val = malloc(n * sizeof *val), *slack = malloc(n * sizeof *slack);
        if (!val || !slack) {
            printf("FAIL: out of memory\n");
            fails = 1;
        } else {
            ict_oracle_rows(&src.img, &k, &p, 0, h, val, slack);
            ict_cmp cmp;
            ict_cmp_init(&cmp);
            ict_compare_rows(&cmp, &dst.img, 0, h, val, slack);
            /* dyadic kernels have exactly representable results: no excuse */
            int need_all = strstr(ktext, "/ 16") || strstr(ktext, "sobel");
            if (!ict_cmp_passed(&cmp) || (need_all && cmp.exact != cmp.samples) ||
                !ict_buf_padding_is(&dst, 0xA5, NULL)) {
                printf("FAIL: %s kernel '%s' %dx%dx%d %s border %s seed %" PRIu64 "\n", path, ktext,
                       w, h, ch, ict_layout_str(lay), ict_border_str(border), seed);
                ict_cmp_print(&cmp);
                fails = 1;
            }
        }
        free(val);
        free(slack);
    }
    ict_buf_free(&src);
    ict_buf_free(&dst);
    ic_kernel_free(&k);
    ic_context_free(ctx);
    return fails;
}

int main(void)
{
    uint64_t seed = env_u64("ICT_SEED", SEED);
    int ncases = (int)env_u64("ICT_CASES", CASES);
    int fails = 0;
    printf("test_cpu_paths: seed %" PRIu64 ", %d cases per path\n", seed, ncases);

    for (int p = 0; p < N_PATHS; p++)
        for (int t = 1; t <= 3; t += 2)
            fails += run_random(paths[p], t, seed, ncases, IC_U8);
    /* 16 bits: the same cases on every path (3 threads: the seams are there) */
    for (int p = 0; p < N_PATHS; p++)
        fails += run_random(paths[p], 3, seed, ncases, IC_U16);

    static const char *const kernels[] = {
        "1 2 1; 2 4 2; 1 2 1 / 16",
        "sobel-x",
        "gaussian:9",
        "1 4 6 4 1 / 16",
        "box:5",
        "unsharp:5",
        "1 2 1; 2 4 2; 1 2 1; 2 4 2; 1 2 1 / 16",
    };
    static const ic_border borders[] = {IC_BORDER_MIRROR, IC_BORDER_CONSTANT, IC_BORDER_WRAP};
    int b = 0;
    for (int p = 0; p < N_PATHS; p++)
        for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++, b++)
            fails += run_named(paths[p], kernels[k], 301, 37, 3 - (int)(k % 3),
                               k % 2 ? IC_SOA : IC_AOS, borders[b % 3], seed + (uint64_t)b);

    static const char *const big_paths[] = {"method=auto", D "cpu-isa=avx2", S "cpu-isa=avx2",
                                            S "cpu-isa=scalar", D "cpu-isa=avx512"};
    for (size_t p = 0; p < sizeof big_paths / sizeof *big_paths; p++)
        fails += run_big(big_paths[p], seed);

    /* an unknown word is refused, not ignored, and leaves the tuning as it was */
    ic_tuning t;
    memset(&t, 0, sizeof t);
    ic_status st = ic_tuning_parse("method=direct,cpu-isa=bogus", &t);
    if (st != IC_ERR_INVALID_ARG || !strstr(ic_last_error(), "bogus") ||
        t.method != IC_METHOD_AUTO) {
        printf("FAIL: cpu-isa=bogus was accepted (%s)\n", ic_last_error());
        fails++;
    }

    printf("test_cpu_paths: %s (%d failures)\n", fails ? "FAILED" : "passed", fails);
    return fails ? 1 : 0;
}
