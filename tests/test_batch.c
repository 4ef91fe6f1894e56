/*
 * test_batch.c - ic_convolve_batch and ic_convolve_batch_async on the CPU
 * backends, as a specification (the batched GPU launch: tests/gpu/
 * test_gpu_batch.c):
 *
 *  1. A batch is the image-by-image loop: on `cpu` and `seq`, seeded random
 *     batches of 1..12 images (sizes 1x1..70x50 - smaller than the kernel
 *     too -, 1..4 channels, AoS and SoA on either side, 8- and 16-bit, every
 *     border mode, odd and non-square kernels, alpha modes) give exactly the
 *     bytes of n calls of ic_convolve, and no byte outside the samples is
 *     written (destinations poisoned, padding checked).
 *  2. Arguments: n == 0 is IC_OK (NULL arrays allowed); n < 0, NULL arrays
 *     with n > 0 and a NULL context are IC_ERR_INVALID_ARG, the message
 *     naming the entry point.
 *  3. A failing image is named: image 2 of 4 with a destination of another
 *     size gives IC_ERR_INVALID_ARG and "image 2:" in ic_last_error(); a
 *     16-bit image 1 on a backend without 16-bit samples would be named the
 *     same way (checked through a bad kernel on image 0 here: "image 0:").
 *  4. ic_convolve_batch_async on a CPU backend is IC_ERR_UNSUPPORTED naming
 *     the backend, n == 0 included (the call itself is not available there).
 *
 * ICT_SEED=N reruns one seed, ICT_BATCH=N one batch of it.
 */
#define IC_ADVANCED_API
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

#define MAXN 12

static uint64_t seed_of(void)
{
    const char *s = getenv("ICT_SEED");
    return s ? strtoull(s, NULL, 0) : 0xBA7C4ED17ull;
}

/* One random batch on `backend`: batch == loop, padding untouched. */
static void one_batch(ic_context *ctx, const char *backend, uint64_t seed, int index)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)index));
    const int n = ict_range(&r, 1, MAXN);
    const ic_sample_type type = ict_range(&r, 0, 2) == 0 ? IC_U16 : IC_U8;
    const int kw = 2 * ict_range(&r, 0, 4) + 1, kh = 2 * ict_range(&r, 0, 4) + 1;
    const int ktype = ict_range(&r, 0, ICT_K_COUNT - 1);
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)ict_range(&r, 0, 4);
    const int vmax = type == IC_U16 ? 65535 : 255;
    p.border_value = (float)ict_range(&r, 0, vmax);
    p.bias = ict_range(&r, 0, 1) ? (float)(ict_uniform(&r) * 20.0 - 10.0) : 0.0f;
    p.correlate = ict_range(&r, 0, 1);
    p.alpha = (ic_alpha)ict_range(&r, 0, 3);
    ic_kernel k;
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        CHECK(0, "ict_kernel_random");
        return;
    }
    ict_buf src[MAXN], bat[MAXN], one[MAXN];
    ic_image s_im[MAXN], b_im[MAXN];
    int made = 0;
    char what[300];
    snprintf(what, sizeof what,
             "%s batch %d: %d images %s, kernel %dx%d %s, border %s %g, bias %g, %s, alpha %s; "
             "rerun: ICT_SEED=0x%" PRIx64,
             backend, index, n, type == IC_U16 ? "u16" : "u8", kw, kh, ict_kernel_type_name(ktype),
             ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlation" : "convolution", ict_alpha_str(p.alpha), seed);
    for (; made < n; made++) {
        const int w = ict_range(&r, 0, 3) == 0 ? ict_range(&r, 1, 4) : ict_range(&r, 1, 70);
        const int h = ict_range(&r, 0, 3) == 0 ? ict_range(&r, 1, 4) : ict_range(&r, 1, 50);
        const int c = ict_range(&r, 1, 4);
        const ic_layout sl = ict_range(&r, 0, 1) ? IC_SOA : IC_AOS;
        const ic_layout dl = ict_range(&r, 0, 2) == 0 ? (sl == IC_AOS ? IC_SOA : IC_AOS) : sl;
        const size_t ex = (size_t)ict_range(&r, 0, 9) * 2;
        if (ict_buf_alloc_type(&src[made], w, h, c, sl, ex, type)) {
            CHECK(0, "allocation");
            goto done;
        }
        if (ict_buf_alloc_type(&bat[made], w, h, c, dl, ex + 2, type)) {
            ict_buf_free(&src[made]);
            CHECK(0, "allocation");
            goto done;
        }
        if (ict_buf_alloc_type(&one[made], w, h, c, dl, ex + 2, type)) {
            ict_buf_free(&src[made]);
            ict_buf_free(&bat[made]);
            CHECK(0, "allocation");
            goto done;
        }
        ict_buf_random(&src[made], &r, ict_range(&r, 0, 2));
        ict_buf_fill(&bat[made], 0xA5);
        ict_buf_fill(&one[made], 0x5A);
        s_im[made] = src[made].img;
        b_im[made] = bat[made].img;
    }
    if (getenv("ICT_VERBOSE"))
        for (int i = 0; i < n; i++)
            printf("%s: image %d: %dx%d x%d %s->%s\n", what, i, src[i].img.width, src[i].img.height,
                   src[i].img.channels, ict_layout_str(src[i].img.layout),
                   ict_layout_str(bat[i].img.layout));
    ic_status st = ic_convolve_batch(ctx, n, s_im, b_im, &k, &p);
    CHECK(st == IC_OK, "%s: ic_convolve_batch: %s: %s", what, ic_status_str(st), ic_last_error());
    for (int i = 0; st == IC_OK && i < n; i++) {
        const ic_status so = ic_convolve(ctx, &src[i].img, &one[i].img, &k, &p);
        CHECK(so == IC_OK, "%s: ic_convolve image %d: %s", what, i, ic_last_error());
        size_t off = 0;
        CHECK(ict_buf_padding_is(&bat[i], 0xA5, &off), "%s: image %d: byte %zu outside the samples",
              what, i, off);
        int same = 1;
        for (int y = 0; y < src[i].img.height && same; y++)
            for (int x = 0; x < src[i].img.width && same; x++)
                for (int c = 0; c < src[i].img.channels && same; c++)
                    if (ic_image_get(&bat[i].img, x, y, c) != ic_image_get(&one[i].img, x, y, c)) {
                        CHECK(0, "%s: image %d (%dx%d x%d) differs at (%d,%d,%d): %u vs %u", what,
                              i, src[i].img.width, src[i].img.height, src[i].img.channels, x, y, c,
                              ic_image_get(&bat[i].img, x, y, c),
                              ic_image_get(&one[i].img, x, y, c));
                        same = 0;
                    }
    }
done:
    for (int i = 0; i < made; i++) {
        ict_buf_free(&src[i]);
        ict_buf_free(&bat[i]);
        ict_buf_free(&one[i]);
    }
    ic_kernel_free(&k);
}

static void arguments(ic_context *ctx)
{
    ic_kernel k;
    CHECK(ic_kernel_parse(&k, "box:3") == IC_OK, "box:3");
    ic_image s[4], d[4];
    int ok = 1;
    for (int i = 0; i < 4; i++) {
        ok &= ic_image_create(&s[i], 10 + i, 8, 3, IC_AOS) == IC_OK;
        ok &= ic_image_create(&d[i], 10 + i, i == 2 ? 9 : 8, 3, IC_AOS) == IC_OK;
    }
    CHECK(ok, "images");
    CHECK(ic_convolve_batch(ctx, 0, NULL, NULL, &k, NULL) == IC_OK, "n == 0 is IC_OK");
    CHECK(ic_convolve_batch(ctx, -1, s, d, &k, NULL) == IC_ERR_INVALID_ARG, "n < 0");
    CHECK(ic_convolve_batch(ctx, 2, NULL, d, &k, NULL) == IC_ERR_INVALID_ARG, "NULL src");
    CHECK(ic_convolve_batch(ctx, 2, s, NULL, &k, NULL) == IC_ERR_INVALID_ARG, "NULL dst");
    CHECK(ic_convolve_batch(NULL, 2, s, d, &k, NULL) == IC_ERR_INVALID_ARG &&
              strstr(ic_last_error(), "ic_convolve_batch: "),
          "NULL context: %s", ic_last_error());
    CHECK(ic_convolve_batch_async(NULL, 2, s, d, &k, NULL) == IC_ERR_INVALID_ARG &&
              strstr(ic_last_error(), "ic_convolve_batch_async: "),
          "batch_async, NULL context: %s", ic_last_error());
    CHECK(ic_convolve_batch_async(ctx, -1, s, d, &k, NULL) == IC_ERR_UNSUPPORTED,
          "batch_async n < 0 on a CPU backend: the backend is checked first");
    ic_status st = ic_convolve_batch(ctx, 4, s, d, &k, NULL);
    CHECK(st == IC_ERR_INVALID_ARG && strstr(ic_last_error(), "image 2:"),
          "a bad image 2 is named: %s / %s", ic_status_str(st), ic_last_error());
    CHECK(ic_convolve_batch(ctx, 2, s, d, &k, NULL) == IC_OK, "images 0 and 1 alone: %s",
          ic_last_error());
    ic_kernel bad = k;
    bad.width = 2;
    st = ic_convolve_batch(ctx, 2, s, d, &bad, NULL);
    CHECK(st == IC_ERR_INVALID_ARG && strstr(ic_last_error(), "image 0:"),
          "a bad kernel fails at image 0: %s / %s", ic_status_str(st), ic_last_error());
    st = ic_convolve_batch_async(ctx, 2, s, d, &k, NULL);
    CHECK(st == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), ic_context_backend(ctx)),
          "batch_async on %s: %s / %s", ic_context_backend(ctx), ic_status_str(st),
          ic_last_error());
    CHECK(ic_convolve_batch_async(ctx, 0, NULL, NULL, &k, NULL) == IC_ERR_UNSUPPORTED,
          "batch_async n == 0 on a CPU backend");
    for (int i = 0; i < 4; i++) {
        ic_image_free(&s[i]);
        ic_image_free(&d[i]);
    }
    ic_kernel_free(&k);
}

int main(void)
{
    const uint64_t seed = seed_of();
    static const char *const backends[] = {"cpu", "seq"};
    for (int b = 0; b < 2; b++) {
        ic_context *ctx = NULL;
        if (ic_context_create(&ctx, backends[b], NULL) != IC_OK) {
            printf("FAIL: context %s: %s\n", backends[b], ic_last_error());
            return 1;
        }
        const char *only = getenv("ICT_BATCH"); /* one batch, for debugging */
        for (int i = only ? atoi(only) : 0; i < (only ? atoi(only) + 1 : 30); i++)
            one_batch(ctx, backends[b], seed, i);
        arguments(ctx);
        ic_context_free(ctx);
    }
    printf("test_batch: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
