/*
 * test_gpu_diff.c - differential test of every CUDA backend (name "cuda*")
 * against the float64 oracle: the same seeded random cases as test_diff_cpu,
 * the worked rounding example, a few kernels larger than 15x15, and seed 004's
 * performance-study sizes (640x480 .. 7680x4320, RGB AoS, 3x3 and 9x9, three
 * border modes). For the big sizes the oracle runs on a sample of rows (the
 * edges, the middle, random rows); that every sample was written is checked by
 * running twice over dst poisoned with two different bytes and requiring the
 * same output. Then all of it again with 16-bit samples (IC_U16, full-range
 * random values, bias and border values scaled to the range; the big sizes up
 * to 1920x1080; IC_TEST_QUICK=1: 640x480 only and no 16-bit large kernels). Exits 77 (SKIPPED) when no CUDA backend is usable here.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "testutil.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static uint64_t hash_bytes(const uint8_t *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

/* ---- big images ------------------------------------------------------------------ */

typedef struct big_setup {
    int width, height;
    const ic_kernel *k;
    const char *kname;
    ic_params p;
} big_setup;

#define MAX_SAMPLED_ROWS 24

static int pick_rows(int h, ict_rng *r, int *rows)
{
    int n = 0;
    const int fixed[] = {0, 1, 2, 3, 4, h / 2, h - 5, h - 4, h - 3, h - 2, h - 1};
    for (size_t i = 0; i < sizeof fixed / sizeof fixed[0]; i++)
        rows[n++] = fixed[i];
    while (n < MAX_SAMPLED_ROWS)
        rows[n++] = (int)ict_below(r, (uint32_t)h);
    return n;
}

/* Runs one big setup on one backend; the oracle rows are computed by the
 * caller once per setup. Returns the number of failures. */
static int big_run(ic_context *ctx, const char *backend, const big_setup *s, const ict_buf *src,
                   ict_buf *dst, uint8_t *first, const int *rows, int nrows, const double *val,
                   const double *slack)
{
    char what[256];
    const int u16 = src->img.type == IC_U16;
    snprintf(what, sizeof what, "%s: %dx%d RGB aos%s, kernel %s, %s border (value %g), %s", backend,
             s->width, s->height, u16 ? " 16-bit" : "", s->kname, ict_border_str(s->p.border),
             (double)s->p.border_value, s->p.correlate ? "correlation" : "convolution");
    const uint64_t src_hash = hash_bytes(src->mem, src->bytes + src->guard);
    const size_t rows_n = (size_t)s->width * 3;   /* samples per row */
    const size_t rowb = rows_n * (u16 ? 2u : 1u); /* bytes per row */
    static const uint8_t poisons[2] = {0xA5, 0x5A};
    for (int run = 0; run < 2; run++) {
        ict_buf_fill(dst, poisons[run]);
        ic_status st = ic_convolve(ctx, &src->img, &dst->img, s->k, &s->p);
        if (st != IC_OK) {
            printf("FAIL %s: ic_convolve returned %s: %s\n", what, ic_status_str(st),
                   ic_last_error());
            return 1;
        }
        size_t off = 0;
        if (!ict_buf_padding_is(dst, poisons[run], &off)) {
            printf("FAIL %s: byte %zu outside the samples written (poison 0x%02x)\n", what, off,
                   poisons[run]);
            return 1;
        }
        for (int y = 0; y < s->height; y++) {
            uint8_t *row = dst->mem + (size_t)y * dst->img.pitch;
            if (run == 0) {
                memcpy(first + (size_t)y * rowb, row, rowb);
            } else if (memcmp(first + (size_t)y * rowb, row, rowb) != 0) {
                size_t x = 0;
                while (first[(size_t)y * rowb + x] == row[x])
                    x++;
                const size_t xs = u16 ? x / 2 : x; /* the sample of that byte */
                printf("FAIL %s: sample x=%zu y=%d c=%zu differs between runs over poison "
                       "0xA5 and 0x5A (byte %d vs %d): not written, or not deterministic\n",
                       what, xs / 3, y, xs % 3, first[(size_t)y * rowb + x], row[x]);
                return 1;
            }
        }
    }
    if (hash_bytes(src->mem, src->bytes + src->guard) != src_hash) {
        printf("FAIL %s: src modified\n", what);
        return 1;
    }
    ict_cmp cmp;
    ict_cmp_init(&cmp);
    for (int i = 0; i < nrows; i++)
        ict_compare_row(&cmp, &dst->img, rows[i], val + (size_t)i * rows_n,
                        slack + (size_t)i * rows_n);
    if (!ict_cmp_passed(&cmp)) {
        printf("FAIL %s: sampled rows differ from the oracle\n", what);
        ict_cmp_print(&cmp);
        return 1;
    }
    return 0;
}

/* The big sizes with samples of `type` (IC_U16: up to 1920x1080, the random
 * blur's constant border value 200 * 257). */
static int big_sizes(const char *const *backends, int nb, ic_sample_type type)
{
    static const int sizes[][2] = {
        {640, 480}, {1280, 720}, {1920, 1080}, {3840, 2160}, {7680, 4320}};
    static const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR};
    int failures = 0;
    ict_rng r;
    ict_rng_seed(&r, ICT_DIFF_SEED ^ 0xB16B16ull ^ (uint64_t)type);
    const int u16 = type == IC_U16;

    /* Seed 004's Gaussian 3x3 and a random 9x9 blur (weights sum to 1). */
    static const float g3[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    ic_kernel k3, k9;
    if (ic_kernel_create(&k3, 3, 3, g3, 16.0) != IC_OK ||
        ict_kernel_random(&k9, &r, 9, 9, ICT_K_BLUR) != IC_OK) {
        printf("FAIL: cannot create the big-size kernels\n");
        return 1;
    }
    const ic_kernel *kernels[2] = {&k3, &k9};
    const char *knames[2] = {"gaussian 3x3 (1 2 1 / 16)", "random blur 9x9"};

    ic_context **ctx = calloc((size_t)nb, sizeof *ctx);
    if (!ctx)
        return 1;
    for (int b = 0; b < nb; b++) {
        if (ic_context_create(&ctx[b], backends[b], NULL) != IC_OK) {
            printf("FAIL %s: ic_context_create: %s\n", backends[b], ic_last_error());
            failures++;
            ctx[b] = NULL;
        }
    }
    /* IC_TEST_QUICK=1 (gpu-check.sh under compute-sanitizer): 480p and 720p only. */
    const char *quick = getenv("IC_TEST_QUICK");
    const int q = quick && *quick && *quick != '0';
    size_t nsizes = u16 ? (q ? 1 : 3) : q ? 2 : sizeof sizes / sizeof sizes[0];
    /* ICT_BIG_SIZES=n: at most the first n (racecheck: gpu-check.sh sets 1;
     * the part holding cuda-gemm's 8-bit big sizes ran past 90 s) */
    const char *nb_env = getenv("ICT_BIG_SIZES");
    if (nb_env && atoi(nb_env) >= 1 && (size_t)atoi(nb_env) < nsizes)
        nsizes = (size_t)atoi(nb_env);
    for (size_t si = 0; si < nsizes; si++) {
        const int w = sizes[si][0], h = sizes[si][1];
        const size_t rowb = (size_t)w * 3; /* samples per row */
        ict_buf src, dst;
        uint8_t *first = malloc(rowb * (size_t)h * (u16 ? 2u : 1u));
        int rows[MAX_SAMPLED_ROWS];
        const int nrows = pick_rows(h, &r, rows);
        double *val = malloc(sizeof(double) * rowb * (size_t)nrows);
        double *slack = malloc(sizeof(double) * rowb * (size_t)nrows);
        if (!first || !val || !slack || ict_buf_alloc_type(&src, w, h, 3, IC_AOS, 0, type) ||
            ict_buf_alloc_type(&dst, w, h, 3, IC_AOS, 16, type)) {
            printf("FAIL: cannot allocate %dx%d test images\n", w, h);
            free(first);
            free(val);
            free(slack);
            failures++;
            continue;
        }
        ict_buf_random(&src, &r, 0);
        double t0 = now_s();
        for (int ki = 0; ki < 2; ki++) {
            for (size_t bi = 0; bi < sizeof borders / sizeof borders[0]; bi++) {
                big_setup s;
                s.width = w;
                s.height = h;
                s.k = kernels[ki];
                s.kname = knames[ki];
                ic_params_default(&s.p);
                s.p.border = borders[bi];
                s.p.border_value = borders[bi] == IC_BORDER_CONSTANT && ki == 1
                                       ? (u16 ? 200.0f * 257.0f : 200.0f)
                                       : 0.0f;
                s.p.correlate = (int)(bi % 2);
                for (int i = 0; i < nrows; i++)
                    ict_oracle_rows(&src.img, s.k, &s.p, rows[i], rows[i] + 1,
                                    val + (size_t)i * rowb, slack + (size_t)i * rowb);
                for (int b = 0; b < nb; b++)
                    if (ctx[b])
                        failures += big_run(ctx[b], backends[b], &s, &src, &dst, first, rows, nrows,
                                            val, slack);
            }
        }
        printf("big %5dx%-5d RGB%s: %d backends x 6 setups checked (%.1f s)\n", w, h,
               u16 ? " 16-bit" : "", nb, now_s() - t0);
        free(first);
        free(val);
        free(slack);
        ict_buf_free(&src);
        ict_buf_free(&dst);
    }
    for (int b = 0; b < nb; b++)
        ic_context_free(ctx[b]);
    free(ctx);
    ic_kernel_free(&k3);
    ic_kernel_free(&k9);
    return failures;
}

/* ---- kernels beyond 15x15 --------------------------------------------------------- */

/* Larger kernels through the same case machinery, with samples of `type`. A
 * backend may answer IC_ERR_UNSUPPORTED for a kernel it cannot hold; that is
 * reported, not failed. */
static int large_kernels(const char *backend, ic_sample_type type)
{
    static const int shapes[][2] = {{17, 17}, {31, 31}, {63, 1}, {1, 63}, {25, 3}, {127, 5}};
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, NULL) != IC_OK) {
        printf("FAIL %s: ic_context_create: %s\n", backend, ic_last_error());
        return 1;
    }
    int failures = 0;
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        for (int variant = 0; variant < 4; variant++) {
            ict_case c;
            ict_case_make(&c, ICT_DIFF_SEED ^ 0x1A46Eull, (int)(i * 4 + (size_t)variant), 96);
            c.kw = shapes[i][0];
            c.kh = shapes[i][1];
            c.width = variant == 3 ? 7 : 96; /* one image smaller than the kernel */
            c.height = variant == 3 ? 5 : 80;
            if (c.ktype == ICT_K_FLOAT) /* keep float32 error well below a level */
                c.ktype = ICT_K_BLUR;
            if (type == IC_U16)
                ict_case_u16(&c);
            /* Probe whether the backend takes this kernel at all. */
            ic_kernel k;
            ict_buf a, b;
            float *coef = calloc((size_t)c.kw * (size_t)c.kh, sizeof *coef);
            int supported = 1;
            if (coef && ict_buf_alloc(&a, 8, 8, 1, IC_AOS, 0) == 0) {
                if (ict_buf_alloc(&b, 8, 8, 1, IC_AOS, 0) == 0) {
                    coef[0] = 1.0f;
                    if (ic_kernel_create(&k, c.kw, c.kh, coef, 1.0) == IC_OK) {
                        ict_buf_fill(&a, 1);
                        supported =
                            ic_convolve(ctx, &a.img, &b.img, &k, NULL) != IC_ERR_UNSUPPORTED;
                        ic_kernel_free(&k);
                    }
                    ict_buf_free(&b);
                }
                ict_buf_free(&a);
            }
            free(coef);
            if (!supported) {
                if (variant == 0)
                    printf("%-18s kernel %dx%d: IC_ERR_UNSUPPORTED (%s)\n", backend, c.kw, c.kh,
                           ic_last_error());
                continue;
            }
            failures += ict_run_case(ctx, backend, &c, NULL);
        }
    }
    ic_context_free(ctx);
    return failures;
}

int main(void)
{
    const char *names[32];
    int nb = 0, compiled = 0;
    char first_why[200] = "";
    const int count = ic_backend_count();
    for (int i = 0; i < count; i++) {
        ic_backend_info info;
        memset(&info, 0, sizeof info);
        if (ic_backend_get(i, &info) != IC_OK || !info.name || strncmp(info.name, "cuda", 4) != 0)
            continue;
        compiled++;
        if (info.usable && nb < 32)
            names[nb++] = info.name;
        else if (!info.usable && !first_why[0])
            snprintf(first_why, sizeof first_why, "%s: %s", info.name,
                     info.why[0] ? info.why : "not usable");
    }
    if (compiled == 0) {
        printf("SKIPPED: no CUDA backend compiled into this build\n");
        return 77;
    }
    if (nb == 0) {
        printf("SKIPPED: %s\n", first_why);
        return 77;
    }

    int failures = 0;
    const char *qenv = getenv("IC_TEST_QUICK");
    const int quick_mode = qenv && *qenv && *qenv != '0';
    /* ICT_PART=k/n (a sanitizer run in parts): three sections a backend
     * (rounding and 8-bit cases, 8-bit large kernels, 16 bits), then the
     * big sizes of each backend at 8 and at 16 bits */
    for (int b = 0; b < nb; b++) {
        double t0 = now_s();
        if (ict_part(3 * b)) {
            failures += ict_check_rounding(names[b]);
            failures += ict_diff_backend(names[b], ICT_DIFF_CASES, ICT_DIFF_SEED, ICT_DIFF_MAX_DIM);
        }
        if (ict_part(3 * b + 1))
            failures += large_kernels(names[b], IC_U8);
        if (ict_part(3 * b + 2)) {
            /* 16 bits: the same systematic cycle (160 cases) and more, other content */
            failures +=
                ict_diff_backend_type(names[b], ICT_DIFF_CASES / 2, ICT_DIFF_SEED ^ 0x16B175ull,
                                      ICT_DIFF_MAX_DIM, IC_U16);
            if (!quick_mode) /* (compute-sanitizer's time: the 8-bit large kernels suffice) */
                failures += large_kernels(names[b], IC_U16);
        }
        printf("%-18s random cases (8 and 16 bits), rounding and large kernels: %.1f s\n", names[b],
               now_s() - t0);
    }
    /* the big sizes: every backend on each image (the oracle rows computed
     * once); in a part run, each backend and depth its own section (all of
     * them in one section did not finish under racecheck in 120 s) */
    if (!getenv("ICT_PART")) {
        failures += big_sizes(names, nb, IC_U8);
        failures += big_sizes(names, nb, IC_U16);
    } else {
        for (int b = 0; b < nb; b++) {
            if (ict_part(3 * nb + b))
                failures += big_sizes(&names[b], 1, IC_U8);
            if (ict_part(4 * nb + b))
                failures += big_sizes(&names[b], 1, IC_U16);
        }
    }
    if (failures) {
        printf("test_gpu_diff: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_gpu_diff: all passed (%d CUDA backends)\n", nb);
    return 0;
}
