/*
 * test_gpu_multi.c - one image split across several GPUs (issue 6, "Several
 * GPUs"; src/dispatch/multi.c): ic_context_options.n_devices >= 2 gives the
 * one-device output sample for sample.
 *
 * For every CUDA backend and device list ({0,0}, {0,0,0}, and {0,1}, {1,0}
 * when two devices are visible; a repeated ordinal is two independent states
 * on one GPU), seeded random cases: widths 1..200, heights 1..160 including
 * heights below the number of shares and below the kernel height, 1..4
 * channels, AoS and SoA (mixed source/destination too), pitched rows, every
 * border mode with integer and non-integer border values, kernels 1x1..15x15
 * (and some 31x31 for `cuda`), bias, convolution and correlation, alpha keep
 * or independent; every fourth case with page-locked images, which the
 * pipeline copies by DMA straight into dst. The split output must equal the
 * one-device output (except where the fast path picks its FFT method, whose
 * float32 error depends on where its tiles fall: there only the oracle
 * decides), match the float64 oracle (tests/support) and leave every byte
 * outside the samples as it was. Also: a pageable image large enough for each
 * share's threaded staging, the explain text, and the refusals (n_devices 17
 * or -1, a negative ordinal: IC_ERR_INVALID_ARG; an ordinal the machine does
 * not have: IC_ERR_DEVICE naming it, at context creation).
 * Without a GPU: exit 77 (SKIPPED).
 *
 * ICT_SEED=N, ICT_CASES=N (cases per backend and device list) narrow a run;
 * IC_TEST_QUICK=1 (under compute-sanitizer) runs fewer, smaller cases.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

#define SEED 0x5EED0D15C0DE2026ull
#define CASES 24
#define QUICK_CASES 6

static const char *const kBackends[] = {
    "cuda-global",       "cuda-const",      "cuda-tiled-in", "cuda-tiled-out",
    "cuda-tiled-cached", "cuda-tiled-halo", "cuda-gemm",     "cuda"};

typedef struct devlist {
    int n;
    int dev[3];
} devlist;

static void list_str(const devlist *d, char *buf, size_t n)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < d->n && o < n; i++) {
        const int w = snprintf(buf + o, n - o, "%s%d", i ? "," : "{", d->dev[i]);
        if (w < 0)
            return;
        o += (size_t)w;
    }
    if (o + 2 <= n)
        snprintf(buf + o, n - o, "}");
}

static ic_status open_multi(ic_context **ctx, const char *be, const devlist *d)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.n_devices = d->n;
    for (int i = 0; i < d->n; i++)
        o.devices[i] = d->dev[i];
    return ic_context_create(ctx, be, &o);
}

typedef struct stats {
    int cases, failures, tiny, fft;
} stats;

static int run_case(const char *be, const devlist *d, ic_context *one, ic_context *multi,
                    uint64_t seed, int index, int quick, stats *st)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)index));
    const int maxw = quick ? 64 : 200, maxh = quick ? 48 : 160;
    const int w = ict_range(&r, 0, 4) == 0 ? ict_range(&r, 1, 4) : ict_range(&r, 1, maxw);
    int h;
    const int hsel = ict_range(&r, 0, 5);
    if (hsel == 0)
        h = ict_range(&r, 1, d->n); /* at most one row per share, some shares empty */
    else if (hsel == 1)
        h = ict_range(&r, 1, 8); /* often below the kernel height */
    else
        h = ict_range(&r, 1, maxh);
    const int ch = ict_range(&r, 1, 4);
    const ic_layout sl = ict_range(&r, 0, 1) ? IC_SOA : IC_AOS;
    const ic_layout dl = ict_range(&r, 0, 3) == 0 ? (sl == IC_AOS ? IC_SOA : IC_AOS) : sl;
    int kw = 2 * ict_range(&r, 0, 7) + 1, kh = 2 * ict_range(&r, 0, 7) + 1;
    if (!strcmp(be, "cuda") && index % 6 == 5)
        kw = kh = 31;
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

    char dls[64];
    list_str(d, dls, sizeof dls);
    char what[400];
    snprintf(what, sizeof what,
             "%s devices %s case %d: %dx%d x%d %s->%s, kernel %dx%d type %d, border %s value "
             "%g, bias %g, %s, alpha %s, %s; rerun: ICT_SEED=0x%016" PRIx64,
             be, dls, index, w, h, ch, ict_layout_str(sl), ict_layout_str(dl), kw, kh, ktype,
             ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlation" : "convolution", ict_alpha_str(p.alpha),
             pinned ? "pinned images" : "pageable images", seed);

    ict_img src, out[2];
    ic_kernel k;
    memset(&k, 0, sizeof k);
    memset(&src, 0, sizeof src);
    int failed = 1, n_out = 0, fft = 0;
    if (ict_img_alloc(&src, w, h, ch, sl, (size_t)ict_range(&r, 0, 5), pinned)) {
        printf("FAIL %s: cannot allocate the source\n", be);
        goto done;
    }
    for (; n_out < 2; n_out++)
        if (ict_img_alloc(&out[n_out], w, h, ch, dl, (size_t)ict_range(&r, 0, 5), pinned)) {
            printf("FAIL %s: cannot allocate an output\n", be);
            goto done;
        }
    ict_img_random(&src, &r);
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        printf("FAIL %s: ict_kernel_random\n  %s\n", be, what);
        goto done;
    }
    if (!strcmp(be, "cuda")) { /* which method the fast path takes for this job */
        char plan[2048] = "";
        if (ic_plan_explain(one, &src.im, &k, &p, plan, sizeof plan) == IC_OK)
            fft = strstr(plan, "method fft") != NULL;
    }
    const uint8_t poison = (uint8_t)(ict_next(&r) >> 56);
    ic_context *ctxs[2] = {one, multi};
    static const char *const names[2] = {"one device", "split"};
    for (int i = 0; i < 2; i++) {
        ict_img_poison(&out[i], poison);
        const ic_status s = ic_convolve(ctxs[i], &src.im, &out[i].im, &k, &p);
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
    int x, y, c;
    if (!fft && ict_first_diff(&out[0].im, &out[1].im, &x, &y, &c)) {
        printf("FAIL %s: split differs from one device at (%d,%d) channel %d: %d vs %d\n  %s\n", be,
               x, y, c, *ic_image_at(&out[1].im, x, y, c), *ic_image_at(&out[0].im, x, y, c), what);
        goto done;
    }
    ict_cmp cmp;
    const int ok = ict_oracle_check(&src.im, &k, &p, &out[1].im, 0, h, &cmp);
    if (ok < 0) {
        printf("FAIL %s: out of memory in the test\n", be);
        goto done;
    }
    if (!ok) {
        printf("FAIL %s: split output differs from the oracle\n  %s\n", be, what);
        ict_cmp_print(&cmp);
        goto done;
    }
    failed = 0;
    st->tiny += h < d->n;
    st->fft += fft;
done:
    st->cases++;
    st->failures += failed;
    ic_kernel_free(&k);
    for (int i = 0; i < n_out; i++)
        ict_img_free(&out[i]);
    if (src.im.data)
        ict_img_free(&src);
    return failed;
}

/* A pageable image large enough that each share stages its bands on one host
 * thread per stream (cuda_async.cu: IC_AS_THREADED_BYTES), and the explain text. */
static int check_large(const char *be, const devlist *d)
{
    const int w = 3000, h = 2000, ch = 3;
    char dls[64];
    list_str(d, dls, sizeof dls);
    ic_context *one = NULL, *multi = NULL;
    ic_image src, a, b;
    ic_kernel k;
    memset(&src, 0, sizeof src);
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    memset(&k, 0, sizeof k);
    int bad = 1;
    if (ic_context_create(&one, be, NULL) != IC_OK || open_multi(&multi, be, d) != IC_OK) {
        printf("FAIL %s devices %s: context: %s\n", be, dls, ic_last_error());
        goto done;
    }
    if (ic_image_create(&src, w, h, ch, IC_AOS) != IC_OK ||
        ic_image_create(&a, w, h, ch, IC_AOS) != IC_OK ||
        ic_image_create(&b, w, h, ch, IC_AOS) != IC_OK) {
        printf("FAIL %s: out of memory in the test\n", be);
        goto done;
    }
    ict_rng rs;
    ict_rng_seed(&rs, ict_mix(SEED, 77));
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * ch; x++)
            src.data[(size_t)y * src.pitch + (size_t)x] = (uint8_t)(ict_next(&rs) >> 56);
    if (ic_kernel_parse(&k, "gaussian:7") != IC_OK) {
        printf("FAIL: kernel gaussian:7: %s\n", ic_last_error());
        goto done;
    }
    char plan[4096] = "";
    if (ic_plan_explain(multi, &src, &k, NULL, plan, sizeof plan) != IC_OK ||
        !strstr(plan, "split across")) {
        printf("FAIL %s devices %s: explain does not say 'split across': %s\n", be, dls, plan);
        goto done;
    }
    memset(a.data, 0xA5, a.pitch * (size_t)h);
    memset(b.data, 0x5A, b.pitch * (size_t)h);
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_REFLECT;
    const ic_status s1 = ic_convolve(one, &src, &a, &k, &p);
    const ic_status s2 = s1 == IC_OK ? ic_convolve(multi, &src, &b, &k, &p) : s1;
    if (s1 != IC_OK || s2 != IC_OK) {
        printf("FAIL %s devices %s: %dx%d: %s: %s / %s\n", be, dls, w, h,
               ic_status_str(s1 != IC_OK ? s1 : s2), ic_last_error(), ic_last_error());
        goto done;
    }
    int x, y, c;
    if (ict_first_diff(&a, &b, &x, &y, &c)) {
        printf("FAIL %s devices %s: %dx%d pageable: split differs at (%d,%d) channel %d\n", be, dls,
               w, h, x, y, c);
        goto done;
    }
    const ic_timing t = ic_context_timing(multi);
    printf("%-18s devices %s: %dx%d pageable, threaded staging: split == one device "
           "(upload %.2f, kernel %.2f, download %.2f, total %.2f ms)\n",
           be, dls, w, h, t.upload_ms, t.kernel_ms, t.download_ms, t.total_ms);
    bad = 0;
done:
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&a);
    ic_image_free(&b);
    ic_context_free(one);
    ic_context_free(multi);
    return bad;
}

/* The refusals at context creation. */
static int check_refusals(int ndev)
{
    int fails = 0;
    ic_context *ctx = NULL;
    ic_context_options o;

    static const int bad_counts[] = {IC_MAX_DEVICES + 1, -1};
    for (size_t i = 0; i < sizeof bad_counts / sizeof bad_counts[0]; i++) {
        memset(&o, 0, sizeof o);
        o.n_devices = bad_counts[i];
        const ic_status s = ic_context_create(&ctx, "cuda", &o);
        ICT_CHECK(fails, s == IC_ERR_INVALID_ARG && ctx == NULL,
                  "n_devices %d gave %s (%s), want IC_ERR_INVALID_ARG", bad_counts[i],
                  ic_status_str(s), ic_last_error());
        ic_context_free(ctx);
        ctx = NULL;
    }

    memset(&o, 0, sizeof o);
    o.n_devices = 2;
    o.devices[1] = -3;
    ic_status s = ic_context_create(&ctx, "cuda-global", &o);
    ICT_CHECK(fails, s == IC_ERR_INVALID_ARG && ctx == NULL,
              "a negative ordinal gave %s (%s), want IC_ERR_INVALID_ARG", ic_status_str(s),
              ic_last_error());
    ic_context_free(ctx);
    ctx = NULL;

    /* An ordinal this machine does not have, in a list and alone. */
    const int missing = ndev > 999 ? ndev : 999;
    char name[16];
    snprintf(name, sizeof name, "%d", missing);
    for (int n = 1; n <= 3; n++) {
        memset(&o, 0, sizeof o);
        o.n_devices = n;
        o.devices[n - 1] = missing;
        s = ic_context_create(&ctx, n == 3 ? "cuda" : "cuda-tiled-halo", &o);
        ICT_CHECK(fails,
                  s == IC_ERR_DEVICE && ctx == NULL && strstr(ic_last_error(), name) &&
                      !strchr(ic_last_error(), '\n'),
                  "device list of %d ending in %d gave %s ('%s'), want IC_ERR_DEVICE naming it", n,
                  missing, ic_status_str(s), ic_last_error());
        ic_context_free(ctx);
        ctx = NULL;
    }

    /* n_devices 1: one device, devices[0]; a CPU backend ignores the list. */
    memset(&o, 0, sizeof o);
    o.n_devices = 1;
    s = ic_context_create(&ctx, "cuda", &o);
    ICT_CHECK(fails, s == IC_OK, "n_devices 1 on device 0: %s (%s)", ic_status_str(s),
              ic_last_error());
    ic_context_free(ctx);
    ctx = NULL;
    memset(&o, 0, sizeof o);
    o.n_devices = 2;
    o.devices[1] = missing;
    s = ic_context_create(&ctx, "cpu", &o);
    ICT_CHECK(fails, s == IC_OK, "cpu with a device list: %s (%s)", ic_status_str(s),
              ic_last_error());
    ic_context_free(ctx);
    return fails;
}

int main(void)
{
    char why[256] = "";
    if (!ict_backend_usable("cuda-global", why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 77;
    }
    const int ndev = ic_cuda_device_count();
    if (ndev < 1) {
        printf("FAIL: cuda-global is usable but ic_cuda_device_count() is %d\n", ndev);
        return 1;
    }
    int quick, cases;
    uint64_t seed;
    ict_run_env(&quick, &seed, SEED, &cases, CASES, QUICK_CASES);
    devlist lists[4] = {{2, {0, 0, 0}}, {3, {0, 0, 0}}, {2, {0, 1, 0}}, {2, {1, 0, 0}}};
    const int nlists = ndev >= 2 ? 4 : 2;
    printf("%d CUDA device%s visible: device lists {0,0}, {0,0,0}%s\n", ndev, ndev > 1 ? "s" : "",
           ndev >= 2 ? ", {0,1}, {1,0}" : "");

    int failures = check_refusals(ndev), tested = 0;
    for (size_t b = 0; b < sizeof kBackends / sizeof kBackends[0]; b++) {
        const char *be = kBackends[b];
        if (!ict_backend_usable(be, why, sizeof why)) {
            printf("%-18s not tested: %s\n", be, why);
            continue;
        }
        tested++;
        ic_context *one = NULL;
        if (ic_context_create(&one, be, NULL) != IC_OK) {
            printf("FAIL %s: one-device context: %s\n", be, ic_last_error());
            failures++;
            continue;
        }
        for (int l = 0; l < nlists; l++) {
            char dls[64];
            list_str(&lists[l], dls, sizeof dls);
            ic_context *multi = NULL;
            if (open_multi(&multi, be, &lists[l]) != IC_OK) {
                printf("FAIL %s: context on devices %s: %s\n", be, dls, ic_last_error());
                failures++;
                continue;
            }
            stats st = {0, 0, 0, 0};
            for (int i = 0; i < cases; i++)
                run_case(be, &lists[l], one, multi, ict_mix(seed, b * 16 + (uint64_t)l), i, quick,
                         &st);
            ic_context_free(multi);
            failures += st.failures;
            printf("%-18s devices %-8s %d cases, %d failed, %d with fewer rows than shares, "
                   "%d by FFT (oracle only)\n",
                   be, dls, st.cases, st.failures, st.tiny, st.fft);
        }
        ic_context_free(one);
        if (!quick && (!strcmp(be, "cuda") || !strcmp(be, "cuda-global")))
            failures += check_large(be, &lists[ndev >= 2 ? 2 : 0]);
    }
    if (!tested) {
        printf("FAIL: no CUDA backend usable although cuda-global is\n");
        return 1;
    }
    return failures ? 1 : 0;
}
#endif
