/*
 * test_cpu_paths.c - every path of the `cpu` backend, forced one at a time
 * through IC_CPU_PATH (src/cpu/cpu.c), against the float64 oracle on the
 * differential suite's random cases (tests/support/diff.c), with 1 and with 3
 * worker threads:
 *   direct and sep(arable / low-rank) paths, each with the scalar, AVX2 and
 *   AVX-512 inner loops (an instruction set this CPU lacks is skipped), the
 *   automatic choice, and "tiny" tasks that put strip, band and pass seams
 *   everywhere and use the thread pool even on small images.
 * Acceptance is the suite's: within 1 level, >= 99.9% exact.
 * Also: bigger images with the named kernels whose exact ties (x.5 after a
 * /16) must survive the separable path, kernels up to 255x255 and images
 * wider than one column strip, and an unknown IC_CPU_PATH word is refused. ICT_SEED / ICT_CASES narrow a run (testutil.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#define SEED 0xC0FFEE5EEDull
#define CASES 160
#define MAX_DIM 150

static const char *const paths[] = {
    "direct,scalar", "sep,scalar", "direct,avx2", "sep,avx2",       "direct,avx512",
    "sep,avx512",    "auto",       "direct,avx2,tiny", "sep,avx2,tiny", "direct,scalar,tiny",
    "sep,scalar,tiny", "sep,avx512,tiny",
};
#define N_PATHS ((int)(sizeof paths / sizeof paths[0]))

static uint64_t env_u64(const char *name, uint64_t def)
{
    const char *v = getenv(name);
    return v && *v ? strtoull(v, NULL, 0) : def;
}

/* Opens a cpu context with IC_CPU_PATH=path; returns NULL (and sets *skip when
 * the CPU lacks the instruction set) on failure. */
static ic_context *open_cpu(const char *path, int threads, int *skip)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.threads = threads;
    setenv("IC_CPU_PATH", path, 1);
    ic_context *ctx = NULL;
    ic_status st = ic_context_create(&ctx, "cpu", &o);
    unsetenv("IC_CPU_PATH");
    *skip = 0;
    if (st == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "has no")) {
        printf("  %-20s threads %d: skipped (%s)\n", path, threads, ic_last_error());
        *skip = 1;
        return NULL;
    }
    if (st != IC_OK) {
        printf("FAIL: IC_CPU_PATH=%s threads %d: context: %s (%s)\n", path, threads,
               ic_status_str(st), ic_last_error());
        return NULL;
    }
    return ctx;
}

/* The random differential cases on one forced path. */
static int run_random(const char *path, int threads, uint64_t seed, int ncases)
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
        fails += ict_run_case(ctx, name, &c, &tot);
    }
    ic_context_free(ctx);
    double exact = tot.samples ? 100.0 * (double)tot.exact / (double)tot.samples : 100.0;
    printf("  %-20s threads %d: %d cases, %d failed, %lld samples, %.4f%% exact\n", path, threads,
           tot.cases, fails, tot.samples, exact);
    if (tot.samples && exact < 99.9) {
        printf("FAIL: %s: under 99.9%% exact over the run\n", name);
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
        {255, 255, 9, 7},  {1, 255, 1500, 23}, {255, 1, 700, 5}, {63, 63, 70, 40},
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
                printf("FAIL: IC_CPU_PATH=%s kernel '%s' %dx%dx%d %s border %s seed %" PRIu64 "\n",
                       path, ktext, w, h, ch, ict_layout_str(lay), ict_border_str(border), seed);
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
            fails += run_random(paths[p], t, seed, ncases);

    static const char *const kernels[] = {
        "1 2 1; 2 4 2; 1 2 1 / 16", "sobel-x", "gaussian:9", "1 4 6 4 1 / 16",
        "box:5", "unsharp:5", "1 2 1; 2 4 2; 1 2 1; 2 4 2; 1 2 1 / 16",
    };
    static const ic_border borders[] = {IC_BORDER_MIRROR, IC_BORDER_CONSTANT, IC_BORDER_WRAP};
    int b = 0;
    for (int p = 0; p < N_PATHS; p++)
        for (size_t k = 0; k < sizeof kernels / sizeof *kernels; k++, b++)
            fails += run_named(paths[p], kernels[k], 301, 37, 3 - (int)(k % 3),
                               k % 2 ? IC_SOA : IC_AOS, borders[b % 3], seed + (uint64_t)b);

    static const char *const big_paths[] = {"auto", "direct,avx2", "sep,avx2", "sep,scalar",
                                            "direct,avx512"};
    for (size_t p = 0; p < sizeof big_paths / sizeof *big_paths; p++)
        fails += run_big(big_paths[p], seed);

    /* an unknown word is refused, not ignored */
    setenv("IC_CPU_PATH", "direct,bogus", 1);
    ic_context *ctx = NULL;
    ic_status st = ic_context_create(&ctx, "cpu", NULL);
    unsetenv("IC_CPU_PATH");
    if (st == IC_OK || !strstr(ic_last_error(), "bogus")) {
        printf("FAIL: IC_CPU_PATH=direct,bogus was accepted (%s)\n", ic_last_error());
        fails++;
    }
    ic_context_free(ctx);

    printf("test_cpu_paths: %s (%d failures)\n", fails ? "FAILED" : "passed", fails);
    return fails ? 1 : 0;
}
