/*
 * test_gpu_async.c - the asynchronous, banded transfer path of the CUDA
 * strategy backends (src/cuda/cuda_async.cu, seed 004's "synchronous vs
 * asynchronous loading") gives exactly the synchronous path's output.
 *
 * For every CUDA strategy backend, seeded random cases (sizes up to 260x200,
 * 1..4 channels, AoS and SoA, every border mode with integer and non-integer
 * border values, kernels 1x1..15x15, bias, convolution and correlation) are
 * filtered three times: sync (IC_TRANSFER_SYNC), async (IC_TRANSFER_ASYNC) and
 * async under a tiny device_memory limit that forces many row bands. The three
 * outputs must be equal sample for sample, the banded one must match the
 * float64 oracle (tests/support), and no byte outside the samples may be
 * written. Every fourth case uses page-locked (cudaHostAlloc) images, which
 * the async path copies by DMA directly. A limit below the smallest band must
 * give IC_ERR_TOO_LARGE. The fast path `cuda` also runs a pageable image
 * above 8 MB with a direct, a separable and an FFT kernel: the pipeline then
 * stages bands on one host thread per stream, and the fast path's hooks must
 * work from those threads. Without a GPU: exit 77 (SKIPPED).
 *
 * ICT_SEED=N and ICT_CASES=N (cases per backend) narrow a run for debugging.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define IC_ADVANCED_API /* ic_plan: the band plan of a call */
#include "gpu_img.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xA5F0C0DE2026ull
#define CASES 40

static const char *const kBackends[] = {
    "cuda-global",       "cuda-const",      "cuda-tiled-in", "cuda-tiled-out",
    "cuda-tiled-cached", "cuda-tiled-halo", "cuda-gemm",     "cuda"};

typedef struct stats {
    int cases, failures, multiband, bands_max;
} stats;

static int run_case(const char *be, ic_context *sync_ctx, ic_context *async_ctx, uint64_t seed,
                    int index, stats *st)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)index));
    const int w = ict_range(&r, 0, 3) == 0 ? ict_range(&r, 1, 4) : ict_range(&r, 1, 260);
    const int h = ict_range(&r, 0, 5) == 0 ? ict_range(&r, 1, 3) : ict_range(&r, 1, 200);
    const int ch = ict_range(&r, 1, 4);
    const ic_layout sl = ict_range(&r, 0, 1) ? IC_SOA : IC_AOS;
    const ic_layout dl = ict_range(&r, 0, 3) == 0 ? (sl == IC_AOS ? IC_SOA : IC_AOS) : sl;
    const int kw = 2 * ict_range(&r, 0, 7) + 1, kh = 2 * ict_range(&r, 0, 7) + 1;
    const int ktype = ict_range(&r, 0, ICT_K_COUNT - 1);
    const int pinned = index % 4 == 3;
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)(index % 5);
    p.border_value =
        index % 3 == 0 ? (float)(ict_uniform(&r) * 300.0 - 20.0) : (float)ict_range(&r, 0, 255);
    p.bias = ict_range(&r, 0, 1) ? (float)(ict_uniform(&r) * 20.0 - 10.0) : 0.0f;
    p.correlate = ict_range(&r, 0, 1);
    p.alpha = (ch == 2 || ch == 4) && ict_range(&r, 0, 1) ? IC_ALPHA_KEEP : IC_ALPHA_INDEPENDENT;

    ict_img src, out[3];
    ic_kernel k;
    memset(&k, 0, sizeof k);
    int failed = 1, n_out = 0;
    ic_context *band_ctx = NULL;
    ic_plan plan;
    memset(&plan, 0, sizeof plan);
    if (ict_img_alloc(&src, w, h, ch, sl, (size_t)ict_range(&r, 0, 5), pinned)) {
        printf("FAIL %s: cannot allocate the source\n", be);
        return 1;
    }
    for (; n_out < 3; n_out++)
        if (ict_img_alloc(&out[n_out], w, h, ch, dl, (size_t)ict_range(&r, 0, 5), pinned)) {
            printf("FAIL %s: cannot allocate an output\n", be);
            goto done;
        }
    ict_img_random(&src, &r);
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        printf("FAIL %s: ict_kernel_random\n", be);
        goto done;
    }

    /* The tiny limit: one-row bands on one stream up to a few times that
     * (ic_plan.device_min_bytes of the call on the unlimited context). */
    if (ic_plan_get(async_ctx, &src.im, &k, &p, &plan) != IC_OK || plan.device_min_bytes == 0) {
        printf("FAIL %s: no plan: %s\n", be, ic_last_error());
        goto done;
    }
    const size_t limit = plan.device_min_bytes +
                         (size_t)ict_range(&r, 0, 3) * plan.device_min_bytes +
                         (size_t)ict_range(&r, 0, 4096);

    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.transfer = IC_TRANSFER_ASYNC;
    o.device_memory = limit;
    ic_status s = ic_context_create(&band_ctx, be, &o);
    if (s != IC_OK) {
        printf("FAIL %s: context with a device_memory limit of %zu: %s\n", be, limit,
               ic_last_error());
        goto done;
    }
    if (ic_plan_get(band_ctx, &src.im, &k, &p, &plan) != IC_OK) {
        printf("FAIL %s: no band plan under %zu bytes: %s\n", be, limit, ic_last_error());
        goto done;
    }
    char what[400];
    snprintf(what, sizeof what,
             "%s case %d: %dx%d x%d %s->%s, kernel %dx%d type %d, border %s value %g, bias %g, "
             "%s, alpha %s, %s, limit %zu (%d bands of %d rows, %d streams); rerun: "
             "ICT_SEED=0x%016" PRIx64,
             be, index, w, h, ch, ict_layout_str(sl), ict_layout_str(dl), kw, kh, ktype,
             ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlation" : "convolution", ict_alpha_str(p.alpha),
             pinned ? "pinned images" : "pageable images", limit, plan.bands, plan.band_rows,
             plan.streams, seed);

    const uint8_t poison = (uint8_t)(ict_next(&r) >> 56);
    ic_context *ctxs[3] = {sync_ctx, async_ctx, band_ctx};
    static const char *const names[3] = {"sync", "async", "async+limit"};
    for (int i = 0; i < 3; i++) {
        ict_img_poison(&out[i], poison);
        s = ic_convolve(ctxs[i], &src.im, &out[i].im, &k, &p);
        if (s != IC_OK) {
            printf("FAIL %s (%s): ic_convolve: %s: %s\n  %s\n", be, names[i], ic_status_str(s),
                   ic_last_error(), what);
            goto done;
        }
        size_t off = 0;
        if (!ict_img_untouched(&out[i], poison, &off)) {
            printf("FAIL %s (%s): byte %zu outside the samples was written\n  %s\n", be, names[i],
                   off, what);
            goto done;
        }
    }
    for (int i = 1; i < 3; i++) {
        int x, y, c;
        if (ict_first_diff(&out[0].im, &out[i].im, &x, &y, &c)) {
            printf("FAIL %s: %s differs from sync at (%d,%d) channel %d: %d vs %d\n  %s\n", be,
                   names[i], x, y, c, *ic_image_at(&out[i].im, x, y, c),
                   *ic_image_at(&out[0].im, x, y, c), what);
            goto done;
        }
    }
    ict_cmp cmp;
    const int ok = ict_oracle_check(&src.im, &k, &p, &out[2].im, 0, h, &cmp);
    if (ok < 0) {
        printf("FAIL %s: out of memory in the test\n", be);
        goto done;
    }
    if (!ok) {
        printf("FAIL %s: banded output differs from the oracle\n  %s\n", be, what);
        ict_cmp_print(&cmp);
        goto done;
    }
    failed = 0;
    if (plan.bands > 1)
        st->multiband++;
    if (plan.bands > st->bands_max)
        st->bands_max = plan.bands;
done:
    st->cases++;
    st->failures += failed;
    ic_kernel_free(&k);
    for (int i = 0; i < n_out; i++)
        ict_img_free(&out[i]);
    if (src.im.data)
        ict_img_free(&src);
    ic_context_free(band_ctx);
    return failed;
}

/* A limit below one band of one row is refused, and the context stays usable. */
static int check_too_small(const char *be)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.device_memory = 64;
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, be, &o) != IC_OK) {
        printf("FAIL %s: context with a 64-byte limit: %s\n", be, ic_last_error());
        return 1;
    }
    ic_image src, dst;
    ic_kernel k;
    int bad = 1;
    if (ic_image_create(&src, 100, 50, 3, IC_AOS) != IC_OK) {
        ic_context_free(ctx);
        return 1;
    }
    if (ic_image_create(&dst, 100, 50, 3, IC_AOS) == IC_OK) {
        if (ic_kernel_parse(&k, "box:5") == IC_OK ||
            ic_kernel_parse(&k, "1 1 1; 1 1 1; 1 1 1 / 9") == IC_OK) {
            const ic_status s = ic_convolve(ctx, &src, &dst, &k, NULL);
            if (s == IC_ERR_TOO_LARGE && strstr(ic_last_error(), "too small"))
                bad = 0;
            else
                printf("FAIL %s: 64-byte limit gave %s (%s), want IC_ERR_TOO_LARGE\n", be,
                       ic_status_str(s), ic_last_error());
            ic_kernel_free(&k);
        }
        ic_image_free(&dst);
    }
    ic_image_free(&src);
    ic_context_free(ctx);
    return bad;
}

/* Row y of both outputs against the float64 oracle (default parameters). */
static int oracle_row_ok(const ic_image *src, const ic_kernel *k, int y, const ic_image *a,
                         const ic_image *b)
{
    ict_cmp ca, cb;
    return ict_oracle_check(src, k, NULL, a, y, y + 1, &ca) == 1 &&
           ict_oracle_check(src, k, NULL, b, y, y + 1, &cb) == 1;
}

/* A pageable image large enough for the threaded staging path (cuda_async.cu:
 * IC_AS_THREADED_BYTES), sync against async, for kernels that take different
 * fast-path methods. */
static int check_threaded(const char *be)
{
    /* direct (rows), separable, and a full-rank 31x31 (FFT) */
    static const char *const kernels[] = {"gaussian:3", "gaussian:15", "random 31x31"};
    const int w = 2400, h = 1300, ch = 3;
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.transfer = IC_TRANSFER_SYNC;
    ic_context *sc = NULL, *ac = NULL;
    ic_image src, a, b;
    ic_kernel k2[3];
    int nk = 0, bad = 1;
    memset(&src, 0, sizeof src);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    if (ic_context_create(&sc, be, &o) != IC_OK) {
        printf("FAIL %s: sync context: %s\n", be, ic_last_error());
        return 1;
    }
    o.transfer = IC_TRANSFER_ASYNC;
    if (ic_context_create(&ac, be, &o) != IC_OK) {
        printf("FAIL %s: async context: %s\n", be, ic_last_error());
        goto done;
    }
    if (ic_image_create(&src, w, h, ch, IC_AOS) != IC_OK ||
        ic_image_create(&a, w, h, ch, IC_AOS) != IC_OK ||
        ic_image_create(&b, w, h, ch, IC_AOS) != IC_OK) {
        printf("FAIL %s: out of memory in the test\n", be);
        goto done;
    }
    ict_rng rs;
    ict_rng_seed(&rs, ict_mix(SEED, 99));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * ch; x++)
            src.data[(size_t)y * src.pitch + (size_t)x] = (uint8_t)(ict_next(&rs) >> 56);
    float coef[31 * 31];
    for (int i = 0; i < 31 * 31; i++)
        coef[i] = (float)(ict_uniform(&rs) - 0.3);
    /* IC_TEST_QUICK (the sanitizer runs): the direct kernel only */
    const char *q = getenv("IC_TEST_QUICK");
    const size_t nkern = q && *q && strcmp(q, "0") ? 1 : sizeof kernels / sizeof kernels[0];
    for (size_t i = 0; i < nkern; i++) {
        ic_kernel *kp = &k2[i];
        const ic_status ks = i == 2 ? ic_kernel_create(kp, 31, 31, coef, 31.0 * 31.0 * 0.2)
                                    : ic_kernel_parse(kp, kernels[i]);
        if (ks != IC_OK) {
            printf("FAIL %s: kernel %s: %s\n", be, kernels[i], ic_last_error());
            goto done;
        }
        nk = (int)i + 1;
        memset(a.data, 0xA5, a.pitch * (size_t)h);
        memset(b.data, 0x5A, b.pitch * (size_t)h);
        const ic_status s1 = ic_convolve(sc, &src, &a, kp, NULL);
        const ic_status s2 = s1 == IC_OK ? ic_convolve(ac, &src, &b, kp, NULL) : s1;
        if (s1 != IC_OK || s2 != IC_OK) {
            printf("FAIL %s: %s on %dx%d: %s: %s / %s\n", be, kernels[i], w, h,
                   ic_status_str(s1 != IC_OK ? s1 : s2), ic_last_error(), ic_last_error());
            goto done;
        }
        /* Direct and separable plans sum the same taps in the same order in
         * every band: identical. The FFT plan tiles each band from its own
         * first row, so its float rounding differs from the whole image's:
         * a sample may then differ by 1 where the exact value sits at a
         * rounding boundary, which the float64 oracle decides (both must
         * pass it), and such samples must be rare. */
        const int fft = i == 2;
        long long ndiff = 0;
        int bad_row = -1;
        for (int y = 0; y < h && bad_row < 0; y++)
            for (int x = 0; x < w * ch; x++) {
                const int va = a.data[(size_t)y * a.pitch + (size_t)x];
                const int vb = b.data[(size_t)y * b.pitch + (size_t)x];
                if (va == vb)
                    continue;
                ndiff++;
                if (!fft || va - vb > 1 || vb - va > 1) {
                    printf("FAIL %s: %s on %dx%d: async %d, sync %d at sample %d of row %d\n", be,
                           kernels[i], w, h, vb, va, x, y);
                    bad_row = y;
                    break;
                }
                if (ndiff <= 8 && !oracle_row_ok(&src, &k2[i], y, &a, &b)) {
                    printf("FAIL %s: %s on %dx%d: row %d of sync or async fails the oracle\n", be,
                           kernels[i], w, h, y);
                    bad_row = y;
                    break;
                }
            }
        if (bad_row >= 0)
            goto done;
        if (ndiff * 10000LL > (long long)w * h * ch) {
            printf("FAIL %s: %s on %dx%d: %lld samples differ between sync and async\n", be,
                   kernels[i], w, h, ndiff);
            goto done;
        }
        if (ndiff)
            printf("%-18s %s: %lld of %d samples differ by 1 (FFT tiles), both pass the oracle\n",
                   be, kernels[i], ndiff, w * h * ch);
    }
    printf("%-18s %dx%d pageable, threaded staging: sync == async for %zu kernels\n", be, w, h,
           nkern);
    bad = 0;
done:
    for (int i = 0; i < nk; i++)
        ic_kernel_free(&k2[i]);
    ic_image_free(&src);
    ic_image_free(&a);
    ic_image_free(&b);
    ic_context_free(sc);
    ic_context_free(ac);
    return bad;
}

int main(void)
{
    char why[256] = "";
    if (!ict_backend_usable("cuda-global", why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 77;
    }
    uint64_t seed = SEED;
    int cases = CASES;
    const char *e = getenv("ICT_SEED");
    if (e)
        seed = strtoull(e, NULL, 0);
    if ((e = getenv("ICT_CASES")) != NULL)
        cases = atoi(e);
    int failures = 0, tested = 0;
    for (size_t b = 0; b < sizeof kBackends / sizeof kBackends[0]; b++) {
        const char *be = kBackends[b];
        if (!ict_backend_usable(be, why, sizeof why)) {
            printf("%-18s not tested: %s\n", be, why);
            continue;
        }
        tested++;
        ic_context_options o;
        memset(&o, 0, sizeof o);
        o.transfer = IC_TRANSFER_SYNC;
        ic_context *sc = NULL, *ac = NULL;
        if (ic_context_create(&sc, be, &o) != IC_OK) {
            printf("FAIL %s: sync context: %s\n", be, ic_last_error());
            failures++;
            continue;
        }
        o.transfer = IC_TRANSFER_ASYNC;
        if (ic_context_create(&ac, be, &o) != IC_OK) {
            printf("FAIL %s: async context: %s\n", be, ic_last_error());
            ic_context_free(sc);
            failures++;
            continue;
        }
        stats st = {0, 0, 0, 0};
        for (int i = 0; i < cases; i++)
            run_case(be, sc, ac, ict_mix(seed, b), i, &st);
        ic_context_free(sc);
        ic_context_free(ac);
        failures += st.failures + check_too_small(be);
        if (!strcmp(be, "cuda"))
            failures += check_threaded(be);
        /* The limit must actually have cut images into bands. */
        if (cases >= 20 && st.multiband < cases / 2) {
            printf("FAIL %s: only %d of %d cases ran in several bands\n", be, st.multiband,
                   st.cases);
            failures++;
        }
        printf("%-18s %d cases, %d failed, %d in several bands (up to %d)\n", be, st.cases,
               st.failures, st.multiband, st.bands_max);
    }
    if (!tested) {
        printf("FAIL: no CUDA strategy backend usable although cuda-global is\n");
        return 1;
    }
    return failures ? 1 : 0;
}
#endif
