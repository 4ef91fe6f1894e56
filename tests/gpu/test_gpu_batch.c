/*
 * test_gpu_batch.c - many images in one launch (issue 17): on the `cuda`
 * backend, ic_convolve_batch and ic_convolve_batch_async over device images
 * give, bit for bit, what ic_convolve gives image by image on the same
 * backend, and the float64 oracle's acceptance rule (tests/support).
 *
 * Seeded random batches: 1..70 images of sizes from 1x1 (smaller than the
 * kernel) to 127x90, now and then one up to HD, and every eighth batch (the
 * last one of the quick run) 257..600 images up to 24x24, so that a block's
 * search of the image table (batch_impl.cuh) runs over hundreds of entries.
 * Both places of that table: a batch of up to PARAM_CAP images passes it in
 * the launches' parameters, a larger one uploads it to device memory through
 * the pinned slots. Every fourth batch sits on the boundary, its images all
 * in the batched launches (alpha independent; the global method forced, or
 * rows every other one where it applies): PARAM_CAP images (batches 0,
 * 4, 16, 20, ...: parameters) or PARAM_CAP + 1 (batches 8, 12, 24, 28, ...:
 * the upload); the other 1..70-image batches fall mostly below it, the
 * 257..600-image ones far above; the quick run's 1..8-image batches take
 * parameters, its last (260 images) the upload;
 * 1, 3 or 4 channels (2 now and then), AoS or SoA (one per batch, as a
 * batched launch needs), 8- and 16-bit samples, every border mode, square
 * 3..9 kernels (the rows method) and odd non-square ones up to 15 (the
 * generic method), convolution and
 * correlation, bias, alpha independent / premultiply / keep / auto, the
 * method left to the planner or forced (rows, global, direct, sep), device
 * buffers from cudaMallocPitch (16-byte aligned rows) and from cudaMalloc
 * with odd pitches (the rows kernels' unaligned fallback), on the legacy
 * default stream or a non-blocking one. The batch runs synchronously
 * (ic_convolve_batch) or queued (ic_convolve_batch_async, then the stream is
 * synchronised); alpha keep is refused by the queued call
 * (IC_ERR_UNSUPPORTED) and taken by the synchronous one image by image.
 * Destinations are poisoned: no byte outside the samples may change.
 *
 * Then the rules of a batch that cannot be launched together: a batch with a
 * host image, or one destination that is another image's source, gives what
 * the loop gives (synchronous call); the queued call refuses a host image at
 * index 3 and a channel count that differs at index 2 with
 * IC_ERR_UNSUPPORTED naming the index; a destination of the wrong size at
 * index 5 is IC_ERR_INVALID_ARG naming image 5.
 *
 * Without a GPU: exit 77 (SKIPPED). IC_TEST_QUICK=1 (compute-sanitizer) runs
 * a few small batches. ICT_SEED=N and ICT_CASES=N narrow a run.
 */
#define IC_ADVANCED_API
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xBA7C4ED1A2026ull
#define CASES 40
#define QUICK_CASES 6
#define MAXN 600
/* Images whose table a batched launch carries in its parameters
 * (icf_batch::PARAM_CAP, src/cuda/fast/batch_impl.cuh): the largest batch
 * without an upload. */
#define PARAM_CAP 64

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static int quick(void)
{
    const char *q = getenv("IC_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* A device image with its own allocation (bytes in all, rows pitch apart). */
typedef struct dev_img {
    ic_image im;
    uint8_t *p;
    size_t bytes;
} dev_img;

static size_t rows_of(const ic_image *m)
{
    return (size_t)m->height * (size_t)(m->layout == IC_SOA ? m->channels : 1);
}

/* odd: cudaMalloc with an odd (even for 16-bit) pitch; else cudaMallocPitch. */
static int dev_alloc(dev_img *d, const ic_image *like, int odd, cudaStream_t stream)
{
    memset(d, 0, sizeof *d);
    const size_t row = ic_image_row_bytes(like), rows = rows_of(like);
    size_t pitch = row + (like->type == IC_U16 ? 2 : 1) * (size_t)(odd ? 3 : 0);
    void *p = NULL;
    if (!odd) {
        if (cudaMallocPitch(&p, &pitch, row, rows) != cudaSuccess)
            return -1;
    } else if (cudaMalloc(&p, pitch * rows) != cudaSuccess) {
        return -1;
    }
    d->p = (uint8_t *)p;
    d->bytes = pitch * rows;
    /* odd pitches: every row but the first off 16-byte alignment */
    if (ic_image_wrap_device(&d->im, p, like->width, like->height, like->channels, like->layout,
                             pitch, 0, stream) != IC_OK) {
        cudaFree(p);
        return -1;
    }
    d->im.type = like->type;
    return 0;
}

static void dev_free(dev_img *d)
{
    if (d->p)
        cudaFree(d->p);
    memset(d, 0, sizeof *d);
}

static int upload(dev_img *d, const ic_image *h)
{
    return cudaMemcpy2D(d->p, d->im.pitch, h->data, h->pitch, ic_image_row_bytes(h), rows_of(h),
                        cudaMemcpyHostToDevice) == cudaSuccess
               ? 0
               : -1;
}

static int download(ic_image *h, const dev_img *d)
{
    return cudaMemcpy2D(h->data, h->pitch, d->p, d->im.pitch, ic_image_row_bytes(h), rows_of(h),
                        cudaMemcpyDeviceToHost) == cudaSuccess
               ? 0
               : -1;
}

/* 1 when every byte of d's allocation outside its samples still holds v. */
static int dev_untouched(const dev_img *d, uint8_t v, size_t *off)
{
    uint8_t *all = malloc(d->bytes);
    if (!all || cudaMemcpy(all, d->p, d->bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        free(all);
        *off = (size_t)-1;
        return 0;
    }
    const size_t row = ic_image_row_bytes(&d->im);
    int ok = 1;
    for (size_t i = 0; i < d->bytes && ok; i++)
        if (i % d->im.pitch >= row && all[i] != v) {
            *off = i;
            ok = 0;
        }
    free(all);
    return ok;
}

static int same_samples(const ic_image *a, const ic_image *b, int *x, int *y, int *c)
{
    for (*y = 0; *y < a->height; (*y)++)
        for (*x = 0; *x < a->width; (*x)++)
            for (*c = 0; *c < a->channels; (*c)++)
                if (ic_image_get(a, *x, *y, *c) != ic_image_get(b, *x, *y, *c))
                    return 0;
    return 1;
}

/* The oracle on rows that keep the host check fast: all of a small image,
 * the borders and a middle band of a large one. */
static int oracle_ok(const ic_image *src, const ic_kernel *k, const ic_params *p,
                     const ic_image *out, ict_cmp *cmp)
{
    const int h = src->height;
    if ((long long)src->width * h <= 200000)
        return ict_oracle_check(src, k, p, out, 0, h, cmp);
    const int bands[3][2] = {{0, 8}, {h / 2 - 4, h / 2 + 4}, {h - 8, h}};
    for (int b = 0; b < 3; b++) {
        const int r = ict_oracle_check(src, k, p, out, bands[b][0], bands[b][1], cmp);
        if (r != 1)
            return r;
    }
    return 1;
}

static const char *const kMethods[] = {"auto", "rows", "global", "direct", "sep"};

/* One random batch; returns nothing, counts failures. */
static void one_batch(ic_context *ctx, cudaStream_t nb_stream, uint64_t seed, int index, int q)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)index));
    const int many = q ? index == QUICK_CASES - 1 : index % 8 == 7;
    /* either side of the parameter table's capacity, every image batched */
    const int edge = !q && index % 4 == 0;
    const int n = many ? (q ? 260 : ict_range(&r, 257, MAXN))
                  : q  ? ict_range(&r, 1, 8)
                       : (edge ? PARAM_CAP + index / 8 % 2 : ict_range(&r, 1, 70));
    const int drawn = ict_range(&r, 0, 4);
    const int u16 = ict_range(&r, 0, 3) == 0;
    const ic_sample_type type = u16 ? IC_U16 : IC_U8;
    const int rows_kernel = ict_range(&r, 0, 2) != 0;
    const int kw = rows_kernel ? 2 * ict_range(&r, 1, 4) + 1 : 2 * ict_range(&r, 0, 7) + 1;
    const int kh = rows_kernel ? kw : 2 * ict_range(&r, 0, 7) + 1;
    const int ktype = ict_range(&r, 0, ICT_K_COUNT - 1);
    static const int kChannels[] = {1, 3, 4, 3, 1, 4, 2};
    const int ch = kChannels[ict_range(&r, 0, 6)];
    const ic_layout lay = ict_range(&r, 0, 3) == 0 ? IC_SOA : IC_AOS;
    /* the edge batches: global, or rows every other one where it applies */
    const int method =
        edge ? (index / 4 % 2 && rows_kernel && !u16 && (lay == IC_SOA || ch != 2) ? 1 : 2) : drawn;
    const int async = ict_range(&r, 0, 1);
    cudaStream_t stream = ict_range(&r, 0, 1) ? nb_stream : NULL;
    const float unit = u16 ? 257.0f : 1.0f;
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)(index % 5);
    p.border_value = (float)ict_range(&r, 0, 255) * unit;
    p.bias = ict_range(&r, 0, 2) == 0 ? (float)(ict_uniform(&r) * 20.0 - 10.0) * unit : 0.0f;
    p.correlate = ict_range(&r, 0, 1);
    p.alpha = (ic_alpha)ict_range(&r, 0, 3);
    if (edge) /* keep runs image by image; rows premultiplies RGBA AoS only */
        p.alpha = IC_ALPHA_INDEPENDENT;

    ic_tuning t;
    memset(&t, 0, sizeof t);
    t.method = (ic_method)(method == 0   ? IC_METHOD_AUTO
                           : method == 1 ? IC_METHOD_ROWS
                           : method == 2 ? IC_METHOD_GLOBAL
                           : method == 3 ? IC_METHOD_DIRECT
                                         : IC_METHOD_SEP);
    if (ic_context_set_tuning(ctx, &t) != IC_OK) {
        CHECK(0, "set tuning: %s", ic_last_error());
        return;
    }
    ic_kernel k;
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        CHECK(0, "ict_kernel_random");
        return;
    }
    char what[400];
    snprintf(what, sizeof what,
             "batch %d: %d images%s x%d %s %s, kernel %dx%d %s, method %s, border %s %g, bias %g, "
             "%s, alpha %s, %s, %s stream; rerun: ICT_SEED=0x%" PRIx64,
             index, n, index % 3 == 1 ? " of one size" : "", ch, ict_layout_str(lay),
             u16 ? "u16" : "u8", kw, kh, ict_kernel_type_name(ktype), kMethods[method],
             ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlation" : "convolution", ict_alpha_str(p.alpha),
             async ? "async" : "sync", stream ? "non-blocking" : "default", seed);

    ict_buf *hs = calloc(MAXN, sizeof *hs), *hb = calloc(MAXN, sizeof *hb),
            *hl = calloc(MAXN, sizeof *hl);
    dev_img *ds = calloc(MAXN, sizeof *ds), *db = calloc(MAXN, sizeof *db),
            *dl = calloc(MAXN, sizeof *dl);
    ic_image *s_im = calloc(MAXN, sizeof *s_im), *b_im = calloc(MAXN, sizeof *b_im);
    int made = 0;
    const uint8_t poison = (uint8_t)(ict_next(&r) >> 56);
    if (!hs || !hb || !hl || !ds || !db || !dl || !s_im || !b_im) {
        CHECK(0, "out of memory in the test");
        goto done;
    }
    int big_left = q || many ? 0 : (ict_range(&r, 0, 2) == 0);
    /* every third batch of one size: its launches find an image by one
     * division instead of the search (batch_impl.cuh) */
    const int same = index % 3 == 1;
    if (same)
        big_left = 0;
    int w0 = 0, h0 = 0;
    for (; made < n; made++) {
        int w, h;
        if (same && made > 0) {
            w = w0;
            h = h0;
        } else if (many) {
            w = ict_range(&r, 1, 24);
            h = ict_range(&r, 1, 24);
        } else if (big_left) {
            big_left = 0;
            w = ict_range(&r, 640, 1920);
            h = ict_range(&r, 360, 1080);
        } else if (ict_range(&r, 0, 4) == 0) {
            w = ict_range(&r, 1, 5);
            h = ict_range(&r, 1, 5);
        } else {
            w = ict_range(&r, 1, q ? 64 : 127);
            h = ict_range(&r, 1, q ? 48 : 90);
        }
        w0 = w;
        h0 = h;
        const int odd = ict_range(&r, 0, 3) == 0;
        int bad = ict_buf_alloc_type(&hs[made], w, h, ch, lay, 0, type) ||
                  ict_buf_alloc_type(&hb[made], w, h, ch, lay, 0, type) ||
                  ict_buf_alloc_type(&hl[made], w, h, ch, lay, 0, type);
        if (!bad) {
            ict_buf_random(&hs[made], &r, ict_range(&r, 0, 2));
            bad = dev_alloc(&ds[made], &hs[made].img, odd, stream) ||
                  dev_alloc(&db[made], &hs[made].img, odd, stream) ||
                  dev_alloc(&dl[made], &hs[made].img, odd, stream) ||
                  upload(&ds[made], &hs[made].img) ||
                  cudaMemset(db[made].p, poison, db[made].bytes) != cudaSuccess ||
                  cudaMemset(dl[made].p, poison, dl[made].bytes) != cudaSuccess;
        }
        if (bad) {
            CHECK(0, "%s: cannot allocate image %d", what, made);
            made++;
            goto done;
        }
        s_im[made] = ds[made].im;
        b_im[made] = db[made].im;
    }
    /* the reference: image by image, synchronously */
    for (int i = 0; i < n; i++) {
        const ic_status s = ic_convolve(ctx, &ds[i].im, &dl[i].im, &k, &p);
        if (s != IC_OK) {
            CHECK(0, "%s: ic_convolve image %d: %s", what, i, ic_last_error());
            goto done;
        }
    }
    ic_status s;
    if (async) {
        s = ic_convolve_batch_async(ctx, n, s_im, b_im, &k, &p);
        const int keep = ict_effective_alpha(&k, ch, p.alpha) == IC_ALPHA_KEEP;
        if (keep) {
            CHECK(s == IC_ERR_UNSUPPORTED, "%s: alpha keep queued: %s", what, ic_status_str(s));
            goto done;
        }
        if (s == IC_OK && cudaStreamSynchronize(stream) != cudaSuccess) {
            CHECK(0, "%s: stream synchronize failed", what);
            goto done;
        }
    } else {
        s = ic_convolve_batch(ctx, n, s_im, b_im, &k, &p);
    }
    if (s != IC_OK) {
        CHECK(0, "%s: %s: %s", what, ic_status_str(s), ic_last_error());
        goto done;
    }
    for (int i = 0; i < n; i++) {
        size_t off = 0;
        int x = 0, y = 0, c = 0;
        if (download(&hb[i].img, &db[i]) || download(&hl[i].img, &dl[i])) {
            CHECK(0, "%s: download of image %d failed", what, i);
            break;
        }
        if (!dev_untouched(&db[i], poison, &off)) {
            CHECK(0, "%s: image %d (%dx%d): byte %zu outside the samples was written", what, i,
                  hs[i].img.width, hs[i].img.height, off);
            break;
        }
        if (!same_samples(&hb[i].img, &hl[i].img, &x, &y, &c)) {
            CHECK(0,
                  "%s: image %d (%dx%d) differs from its own ic_convolve at (%d,%d) channel %d: "
                  "%u vs %u",
                  what, i, hs[i].img.width, hs[i].img.height, x, y, c,
                  ic_image_get(&hb[i].img, x, y, c), ic_image_get(&hl[i].img, x, y, c));
            break;
        }
        ict_cmp cmp;
        const int ok = oracle_ok(&hs[i].img, &k, &p, &hb[i].img, &cmp);
        if (ok != 1) {
            CHECK(0, "%s: image %d (%dx%d) against the oracle%s", what, i, hs[i].img.width,
                  hs[i].img.height, ok < 0 ? ": out of memory" : "");
            if (ok == 0)
                ict_cmp_print(&cmp);
            break;
        }
    }
done:
    for (int i = 0; i < made; i++) {
        ict_buf_free(&hs[i]);
        ict_buf_free(&hb[i]);
        ict_buf_free(&hl[i]);
        dev_free(&ds[i]);
        dev_free(&db[i]);
        dev_free(&dl[i]);
    }
    free(hs);
    free(hb);
    free(hl);
    free(ds);
    free(db);
    free(dl);
    free(s_im);
    free(b_im);
    ic_kernel_free(&k);
}

/* Batches that cannot be launched together, and refusals. */
static void rules(ic_context *ctx)
{
    ic_context_set_tuning(ctx, NULL);
    enum { N = 6 };
    ict_rng r;
    ict_rng_seed(&r, 77);
    ict_buf h[N], out[N], ref[N];
    dev_img d[N], o[N];
    ic_image s_im[N], d_im[N];
    ic_kernel k;
    memset(h, 0, sizeof h);
    memset(out, 0, sizeof out);
    memset(ref, 0, sizeof ref);
    memset(d, 0, sizeof d);
    memset(o, 0, sizeof o);
    if (ic_kernel_parse(&k, "sharpen") != IC_OK) {
        CHECK(0, "kernel sharpen: %s", ic_last_error());
        return;
    }
    int ok = 1;
    for (int i = 0; i < N; i++) {
        ok &= !ict_buf_alloc(&h[i], 40, 30, 3, IC_AOS, 0) &&
              !ict_buf_alloc(&out[i], 40, 30, 3, IC_AOS, 0) &&
              !ict_buf_alloc(&ref[i], 40, 30, 3, IC_AOS, 0);
        if (!ok)
            break;
        ict_buf_random(&h[i], &r, 0);
        ok &= !dev_alloc(&d[i], &h[i].img, 0, NULL) && !dev_alloc(&o[i], &h[i].img, 0, NULL) &&
              !upload(&d[i], &h[i].img);
        if (!ok)
            break;
        s_im[i] = d[i].im;
        d_im[i] = o[i].im;
        /* the reference, image by image from host images */
        ok &= ic_convolve(ctx, &h[i].img, &ref[i].img, &k, NULL) == IC_OK;
    }
    CHECK(ok, "rules: setting up: %s", ic_last_error());
    if (!ok)
        goto done;
    /* a host image at index 3: the loop (synchronous), refused when queued */
    s_im[3] = h[3].img;
    ic_status s = ic_convolve_batch(ctx, N, s_im, d_im, &k, NULL);
    CHECK(s == IC_OK, "mixed batch: %s", ic_last_error());
    for (int i = 0; s == IC_OK && i < N; i++) {
        int x, y, c;
        CHECK(!download(&out[i].img, &o[i]) && same_samples(&out[i].img, &ref[i].img, &x, &y, &c),
              "mixed batch: image %d differs from ic_convolve", i);
    }
    s = ic_convolve_batch_async(ctx, N, s_im, d_im, &k, NULL);
    CHECK(s == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "image 3"),
          "queued batch with a host image 3: %s / %s", ic_status_str(s), ic_last_error());
    s_im[3] = d[3].im;
    /* another channel count at index 2 (a 1-channel view of the same rows) */
    ic_image grey_s = d[2].im, grey_d = o[2].im;
    grey_s.channels = grey_d.channels = 1;
    s_im[2] = grey_s;
    d_im[2] = grey_d;
    s = ic_convolve_batch_async(ctx, N, s_im, d_im, &k, NULL);
    CHECK(s == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "image 2"),
          "queued batch with 1 channel at image 2: %s / %s", ic_status_str(s), ic_last_error());
    s_im[2] = d[2].im;
    d_im[2] = o[2].im;
    /* a destination of another size at index 5 */
    d_im[5].height -= 1;
    s = ic_convolve_batch(ctx, N, s_im, d_im, &k, NULL);
    CHECK(s == IC_ERR_INVALID_ARG && strstr(ic_last_error(), "image 5:"),
          "wrong size at image 5: %s / %s", ic_status_str(s), ic_last_error());
    s = ic_convolve_batch_async(ctx, N, s_im, d_im, &k, NULL);
    CHECK(s == IC_ERR_INVALID_ARG && strstr(ic_last_error(), "image 5"),
          "queued, wrong size at image 5: %s / %s", ic_status_str(s), ic_last_error());
    d_im[5].height += 1;
    /* image 1 reads image 0's destination: the loop's order (image 1 sees
     * image 0's output) */
    {
        const ic_image s2[2] = {d[0].im, o[0].im};
        ic_image d2[2] = {o[0].im, o[1].im};
        s = ic_convolve_batch(ctx, 2, s2, d2, &k, NULL);
        CHECK(s == IC_OK, "aliased batch: %s", ic_last_error());
        int x, y, c;
        CHECK(s == IC_OK && ic_convolve(ctx, &ref[0].img, &ref[1].img, &k, NULL) == IC_OK &&
                  !download(&out[1].img, &o[1]) &&
                  same_samples(&out[1].img, &ref[1].img, &x, &y, &c),
              "aliased batch: image 1 is not image 0's output filtered again");
    }
    s = ic_convolve_batch(ctx, 0, NULL, NULL, &k, NULL);
    CHECK(s == IC_OK, "n == 0");
    s = ic_convolve_batch_async(ctx, 0, NULL, NULL, &k, NULL);
    CHECK(s == IC_OK, "queued n == 0");
    s = ic_convolve_batch_async(ctx, -1, s_im, d_im, &k, NULL);
    CHECK(s == IC_ERR_INVALID_ARG, "queued n < 0");
done:
    for (int i = 0; i < N; i++) {
        ict_buf_free(&h[i]);
        ict_buf_free(&out[i]);
        ict_buf_free(&ref[i]);
        dev_free(&d[i]);
        dev_free(&o[i]);
    }
    ic_kernel_free(&k);
}

int main(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    const char *se = getenv("ICT_SEED"), *ce = getenv("ICT_CASES");
    const uint64_t seed = se ? strtoull(se, NULL, 0) : SEED;
    const int q = quick();
    const int cases = ce ? atoi(ce) : q ? QUICK_CASES : CASES;
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, "cuda", NULL) != IC_OK) {
        printf("FAIL: context cuda: %s\n", ic_last_error());
        return 1;
    }
    cudaStream_t nb = NULL;
    if (cudaStreamCreateWithFlags(&nb, cudaStreamNonBlocking) != cudaSuccess) {
        printf("FAIL: cudaStreamCreateWithFlags\n");
        return 1;
    }
    for (int i = 0; i < cases; i++)
        one_batch(ctx, nb, seed, i, q);
    rules(ctx);
    cudaStreamDestroy(nb);
    ic_context_free(ctx);
    printf("test_gpu_batch: %d batches, %s (%d failures)\n", cases, failures ? "FAILED" : "passed",
           failures);
    return failures ? 1 : 0;
}

#endif
