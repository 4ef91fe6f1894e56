/*
 * test_gpu_advanced.c - the public header's advanced tier (IC_ADVANCED_API) on
 * the `cuda` backends, as a specification:
 *
 *  1. The plan is what ic_plan_explain prints: for kernels that take each method
 *     (rows, direct, sep, fft, global) ic_plan_get's method, kernel rank,
 *     launch shape (tile, threads, blocks, SMs; rows per thread; FFT tiles),
 *     predicted time and ceilings appear in ic_plan_explain's text.
 *  2. Forcing: each method forced on a job it can take is the method that
 *     runs (plan.method, plan.forced) and gives oracle-equal output; a forced
 *     method that cannot take the job (rows on an 11x11 kernel, fft with
 *     premultiplied alpha) leaves the planner's choice, forced 0.
 *  3. The knobs change the plan as documented: rows-shape 1/2/4 is the rows
 *     per thread, and 8 too for a separable 3x3 (4 for other kernels),
 *     rows-full=1 drops the separable passes (rank 0),
 *     fft-n=512 the FFT tile (valid 512-K+1), calibrate=builtin the built-in
 *     ceilings (3e12 B/s copy, 27.7e12 FMA/s); the environment
 *     (IC_CUDA_METHOD=global) is not read.
 *  4. ic_convolve_async on device images, queued on a stream the test
 *     creates, equals ic_convolve's output byte for byte once the stream is
 *     synchronised, for every method forced; it refuses host images,
 *     different layouts, alpha keep and a context split over two states.
 *  5. ic_conv1d_device and ic_matmul_device equal the host calls
 *     ic_conv1d_f32 / ic_conv1d_u8 / ic_matmul on the same data.
 *  6. A strategy backend's plan gives the smallest device_memory a call fits
 *     in (device_min_bytes): a context with that limit filters the image
 *     (oracle-equal, bands >= 1 in its plan), one byte less is
 *     IC_ERR_TOO_LARGE.
 * Exits 77 (SKIPPED) without a usable CUDA device. IC_TEST_QUICK=1 (the
 * compute-sanitizer run) uses smaller images and skips the method names the
 * measured ceilings decide (they read low under the sanitizer).
 */
#define IC_ADVANCED_API
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv_course.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static int quick(void)
{
    const char *q = getenv("IC_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

static ic_context *cuda_ctx(const char *backend, const char *tuning)
{
    ic_context *ctx = ict_context_tuned(backend, tuning, NULL);
    CHECK(ctx, "%s context (%s): %s", backend, tuning ? tuning : "defaults", ic_last_error());
    return ctx;
}

static int contains(const char *text, const char *what, const char *label)
{
    const int ok = strstr(text, what) != NULL;
    CHECK(ok, "%s: explain lacks '%s':\n%s", label, what, text);
    return ok;
}

/* 1. ic_plan_get against ic_plan_explain's text. */
static void plan_vs_explain(ic_context *ctx, const ic_image *img, const ic_kernel *k,
                            const ic_params *p, const char *label)
{
    ic_plan plan;
    char text[2048] = "", frag[160];
    CHECK(ic_plan_get(ctx, img, k, p, &plan) == IC_OK, "%s: plan: %s", label, ic_last_error());
    CHECK(ic_plan_explain(ctx, img, k, p, text, sizeof text) == IC_OK, "%s: explain", label);
    snprintf(frag, sizeof frag, "cuda: method %s%s for a %dx%d kernel", ic_method_name(plan.method),
             plan.forced ? " (forced)" : "", k->width, k->height);
    contains(text, frag, label);
    snprintf(frag, sizeof frag, "(rank %d", plan.kernel_rank);
    contains(text, frag, label);
    if (plan.method == IC_METHOD_DIRECT || plan.method == IC_METHOD_SEP ||
        plan.method == IC_METHOD_TENSOR) {
        snprintf(frag, sizeof frag, "tile %dx%d px x %d channel", plan.tile_w, plan.tile_h,
                 plan.channels_per_block);
        contains(text, frag, label);
        snprintf(frag, sizeof frag, "%d threads, %.1f KB shared, %d blocks on %d SMs", plan.threads,
                 plan.smem / 1024.0, plan.blocks, plan.sms);
        contains(text, frag, label);
    } else if (plan.method == IC_METHOD_ROWS) {
        /* a separable 5x5..9x9 one input row at a time: 8 samples a thread */
        const int ring = plan.rank == 1 && k->width > 3 && plan.rows_per_thread > 4;
        snprintf(frag, sizeof frag, "%d samples x %d row", ring ? 8 : 16, plan.rows_per_thread);
        contains(text, frag, label);
        contains(text, plan.rank ? "separable" : "direct K*K sum", label);
        if (!plan.forced) /* why rows, and where its rule comes from */
            contains(text, "imgconv-bench tables F and H", label);
    } else if (plan.method == IC_METHOD_FFT) {
        snprintf(frag, sizeof frag, "%d tiles of %dx%d (%dx%d valid)", plan.fft_tiles, plan.fft_n,
                 plan.fft_n, plan.fft_valid, plan.fft_valid);
        contains(text, frag, label);
        /* fused: the multiply runs as cuFFT's callback */
        if (plan.fft_fused)
            contains(text, "multiply inside the R2C transform", label);
        else if (strstr(text, "inside the R2C"))
            CHECK(0, "%s: unfused plan, explain says fused", label);
    } else {
        snprintf(frag, sizeof frag, "one thread per output sample (%d blocks)", plan.blocks);
        contains(text, frag, label);
    }
    /* the pick's prediction among the candidates (rows' included) */
    const char *cand = plan.method == IC_METHOD_ROWS     ? "rows"
                       : plan.method == IC_METHOD_DIRECT ? "direct"
                       : plan.method == IC_METHOD_SEP    ? "separable"
                       : plan.method == IC_METHOD_FFT    ? "fft"
                       : plan.method == IC_METHOD_TENSOR ? "tensor"
                                                         : NULL;
    if (cand) {
        snprintf(frag, sizeof frag, "%s %.3f ms", cand, plan.pred_ms);
        contains(text, frag, label);
    }
    snprintf(frag, sizeof frag,
             "ceilings %.0f GB/s copy, %.1f TFLOP/s fp32 (%s); predicted %.3f ms",
             plan.copy_bps / 1e9, 2 * plan.fma_per_s / 1e12,
             plan.ceilings == IC_CEILINGS_MEASURED ? "measured now"
             : plan.ceilings == IC_CEILINGS_CACHED ? "from the calibration cache"
                                                   : "built-in defaults",
             plan.pred_ms);
    contains(text, frag, label);
    CHECK(plan.sms > 0 && plan.copy_bps > 0 && plan.fma_per_s > 0 && plan.pred_ms > 0 &&
              !strcmp(plan.backend, "cuda"),
          "%s: plan numbers (sms %d, copy %g, fma %g, pred %g, backend %s)", label, plan.sms,
          plan.copy_bps, plan.fma_per_s, plan.pred_ms, plan.backend);
}

/* Runs k on img with ctx (host images) and checks the oracle; returns the
 * output in *out (owned) for comparisons. */
static int filter_check(ic_context *ctx, const ic_image *img, const ic_kernel *k,
                        const ic_params *p, ic_image *out, const char *label)
{
    CHECK(ic_image_create(out, img->width, img->height, img->channels, img->layout) == IC_OK,
          "%s: out of memory", label);
    const ic_status st = ic_convolve(ctx, img, out, k, p);
    CHECK(st == IC_OK, "%s: ic_convolve: %s", label, ic_last_error());
    ict_cmp cmp;
    const int ok = st == IC_OK && ict_oracle_check(img, k, p, out, 0, img->height, &cmp) == 1;
    CHECK(ok, "%s: differs from the oracle", label);
    if (!ok && st == IC_OK)
        ict_cmp_print(&cmp);
    return ok;
}

/* 4. the same job through ic_convolve_async on device copies, on a stream. */
static void async_equal(ic_context *ctx, const ic_image *img, const ic_kernel *k,
                        const ic_params *p, const ic_image *want, const char *label)
{
    const size_t row = ic_image_row_bytes(img);
    const size_t rows = (size_t)img->height * (img->layout == IC_SOA ? img->channels : 1);
    void *ds = NULL, *dd = NULL;
    size_t sp = 0, dp = 0;
    cudaStream_t stream = NULL;
    ic_image s, d, back;
    memset(&back, 0, sizeof back);
    if (cudaMallocPitch(&ds, &sp, row, rows) != cudaSuccess ||
        cudaMallocPitch(&dd, &dp, row, rows) != cudaSuccess ||
        cudaStreamCreate(&stream) != cudaSuccess ||
        cudaMemcpy2D(ds, sp, img->data, img->pitch, row, rows, cudaMemcpyHostToDevice) !=
            cudaSuccess ||
        cudaMemset2D(dd, dp, 0x3C, row, rows) != cudaSuccess) {
        CHECK(0, "%s: CUDA setup failed", label);
        goto out;
    }
    CHECK(ic_image_wrap_device(&s, ds, img->width, img->height, img->channels, img->layout, sp, 0,
                               stream) == IC_OK &&
              ic_image_wrap_device(&d, dd, img->width, img->height, img->channels, img->layout, dp,
                                   0, stream) == IC_OK,
          "%s: wrap", label);
    ic_status st = ic_convolve_async(ctx, &s, &d, k, p);
    CHECK(st == IC_OK, "%s: ic_convolve_async: %s", label, ic_last_error());
    CHECK(cudaStreamSynchronize(stream) == cudaSuccess, "%s: stream sync", label);
    if (st != IC_OK ||
        ic_image_create(&back, img->width, img->height, img->channels, img->layout) != IC_OK)
        goto out;
    CHECK(cudaMemcpy2D(back.data, back.pitch, dd, dp, row, rows, cudaMemcpyDeviceToHost) ==
              cudaSuccess,
          "%s: download", label);
    CHECK(ic_image_equal(want, &back), "%s: async differs from ic_convolve", label);
out:
    ic_image_free(&back);
    if (stream)
        cudaStreamDestroy(stream);
    cudaFree(ds);
    cudaFree(dd);
}

/* 1, 2, 4: every method forced on a job it takes: plan, explain, oracle, async. */
static void methods(int q)
{
    const int W = q ? 200 : 640, H = q ? 120 : 360;
    static const struct {
        const char *tuning, *kernel;
        ic_method want;
        int channels;
    } runs[] = {
        {"method=rows", "gaussian:5", IC_METHOD_ROWS, 3},
        {"method=rows,rows-full=1,rows-shape=1", "gaussian:7", IC_METHOD_ROWS, 4},
        {"method=direct", "gaussian:9", IC_METHOD_DIRECT, 3},
        {"method=sep", "gaussian:15", IC_METHOD_SEP, 1},
        {"method=fft", "gaussian:31", IC_METHOD_FFT, 3},
        {"method=fft,fft-n=512", "gaussian:31", IC_METHOD_FFT, 1},
        {"method=fft,fft-fuse=always", "gaussian:31", IC_METHOD_FFT, 3},
        {"method=fft,fft-fuse=never", "gaussian:31", IC_METHOD_FFT, 2},
        {"method=global", "box:5", IC_METHOD_GLOBAL, 2},
        {"method=tensor", "gaussian:31", IC_METHOD_TENSOR, 3},
        {"method=tensor,tile-channels=1", "gaussian:21", IC_METHOD_TENSOR, 4},
        {NULL, "unsharp:9", IC_METHOD_AUTO, 3},
    };
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        char label[160];
        snprintf(label, sizeof label, "%s %s x%d", runs[i].tuning ? runs[i].tuning : "planner",
                 runs[i].kernel, runs[i].channels);
        ic_context *ctx = cuda_ctx("cuda", runs[i].tuning);
        ic_image img, out;
        ic_kernel k;
        memset(&out, 0, sizeof out);
        if (!ctx ||
            ic_image_create(&img, W, H, runs[i].channels, i % 2 ? IC_SOA : IC_AOS) != IC_OK) {
            ic_context_free(ctx);
            CHECK(0, "%s: setup", label);
            continue;
        }
        ic_image_chart(&img, (uint32_t)(40 + i));
        CHECK(ic_kernel_parse(&k, runs[i].kernel) == IC_OK, "%s: kernel", label);
        ic_params p;
        ic_params_default(&p);
        p.border = (ic_border)(i % 5);
        p.alpha = IC_ALPHA_INDEPENDENT;
        ic_plan plan;
        CHECK(ic_plan_get(ctx, &img, &k, &p, &plan) == IC_OK, "%s: plan", label);
        if (runs[i].want != IC_METHOD_AUTO)
            CHECK(plan.method == runs[i].want && plan.forced, "%s: plan %s forced %d", label,
                  ic_method_name(plan.method), plan.forced);
        else
            CHECK(!plan.forced, "%s: the planner's choice says forced", label);
        if (strstr(label, "fft-n=512"))
            CHECK(plan.fft_n == 512 && plan.fft_valid == 512 - 31 + 1, "%s: fft tile %d valid %d",
                  label, plan.fft_n, plan.fft_valid);
        if (runs[i].want == IC_METHOD_FFT)
            /* auto: a fresh context has run no FFT work yet */
            CHECK(plan.fft_fused == !!strstr(label, "fft-fuse=always"), "%s: fft_fused %d", label,
                  plan.fft_fused);
        if (strstr(label, "rows-full=1"))
            CHECK(plan.rows_per_thread == 1 && plan.rank == 0, "%s: rows x%d rank %d", label,
                  plan.rows_per_thread, plan.rank);
        plan_vs_explain(ctx, &img, &k, &p, label);
        if (filter_check(ctx, &img, &k, &p, &out, label))
            async_equal(ctx, &img, &k, &p, &out, label);
        ic_image_free(&out);
        ic_image_free(&img);
        ic_kernel_free(&k);
        ic_context_free(ctx);
    }
}

/* 2, 3: fallbacks, knobs, the environment. */
static void knobs(int q)
{
    ic_context *ctx = cuda_ctx("cuda", NULL);
    if (!ctx)
        return;
    ic_image img, rgba;
    ic_kernel k5, k11, k9;
    CHECK(ic_image_create(&img, 1920, 1080, 3, IC_AOS) == IC_OK &&
              ic_image_create(&rgba, 256, 128, 4, IC_AOS) == IC_OK,
          "images");
    CHECK(ic_kernel_parse(&k5, "gaussian:5") == IC_OK &&
              ic_kernel_parse(&k11, "gaussian:11") == IC_OK &&
              ic_kernel_parse(&k9, "gaussian:9") == IC_OK,
          "kernels");
    ic_tuning t;
    ic_plan a, b;
    /* rows shape and full sum */
    static const int shapes[] = {1, 2, 4};
    for (int i = 0; i < 3; i++) {
        memset(&t, 0, sizeof t);
        t.method = IC_METHOD_ROWS;
        t.rows_shape = shapes[i];
        CHECK(ic_context_set_tuning(ctx, &t) == IC_OK &&
                  ic_plan_get(ctx, &img, &k5, NULL, &a) == IC_OK && a.method == IC_METHOD_ROWS &&
                  a.rows_per_thread == shapes[i],
              "rows-shape=%d: rows x%d", shapes[i], a.rows_per_thread);
    }
    /* 8 rows a thread and more: separable kernels one input row at a time,
     * a 3x3 at 8 (rows_roll), a 5x5..9x9 as asked (rows_ring); the full sum
     * runs at 4, and the plans say so */
    ic_kernel k3;
    CHECK(ic_kernel_parse(&k3, "gaussian:3") == IC_OK, "kernel gaussian:3");
    static const int many[] = {8, 16, 32, 64};
    for (int i = 0; i < 4; i++) {
        memset(&t, 0, sizeof t);
        t.method = IC_METHOD_ROWS;
        t.rows_shape = many[i];
        CHECK(ic_context_set_tuning(ctx, &t) == IC_OK &&
                  ic_plan_get(ctx, &img, &k3, NULL, &a) == IC_OK && a.method == IC_METHOD_ROWS &&
                  a.rows_per_thread == 8 && a.rank == 1 &&
                  ic_plan_get(ctx, &img, &k5, NULL, &b) == IC_OK && b.method == IC_METHOD_ROWS &&
                  b.rows_per_thread == many[i] && b.rank == 1,
              "rows-shape=%d: gaussian:3 rows x%d rank %d, gaussian:5 rows x%d rank %d", many[i],
              a.rows_per_thread, a.rank, b.rows_per_thread, b.rank);
        t.rows_full = 1;
        CHECK(ic_context_set_tuning(ctx, &t) == IC_OK &&
                  ic_plan_get(ctx, &img, &k5, NULL, &b) == IC_OK && b.method == IC_METHOD_ROWS &&
                  b.rows_per_thread == 4 && b.rank == 0,
              "rows-shape=%d,rows-full=1: gaussian:5 rows x%d rank %d", many[i], b.rows_per_thread,
              b.rank);
    }
    /* the planner's own: a separable 9x9 one input row at a time, its rows
     * by the waves (ring_rows: 8..64) */
    memset(&t, 0, sizeof t);
    CHECK(ic_context_set_tuning(ctx, &t) == IC_OK &&
              ic_plan_get(ctx, &img, &k9, NULL, &a) == IC_OK && a.method == IC_METHOD_ROWS &&
              a.rank == 1 && a.rows_per_thread >= 8 && a.rows_per_thread <= 64,
          "gaussian:9: %s rows x%d rank %d", ic_method_name(a.method), a.rows_per_thread, a.rank);
    /* pixels with alpha (RGBA, grey + alpha AoS): never the 4-row kernels
     * (they spill there), and a premultiplied separable 3x3 at 2 rows, not
     * rows_roll's 8 (plan.cu, table P's shapes) */
    ic_image ga, big;
    CHECK(ic_image_create(&ga, 256, 128, 2, IC_AOS) == IC_OK &&
              ic_image_create(&big, 3840, 2160, 4, IC_AOS) == IC_OK,
          "alpha images");
    ic_kernel sharpen;
    CHECK(ic_kernel_parse(&sharpen, "sharpen") == IC_OK, "kernel sharpen");
    CHECK(ic_context_set_tuning(ctx, NULL) == IC_OK &&
              ic_plan_get(ctx, &rgba, &k3, NULL, &a) == IC_OK && a.premultiply &&
              a.method == IC_METHOD_ROWS && a.rows_per_thread == 2 &&
              ic_plan_get(ctx, &ga, &k3, NULL, &b) == IC_OK && b.premultiply &&
              b.method == IC_METHOD_ROWS && b.rows_per_thread == 2,
          "premultiplied gaussian:3: RGBA %s x%d, grey + alpha %s x%d", ic_method_name(a.method),
          a.rows_per_thread, ic_method_name(b.method), b.rows_per_thread);
    ic_params ind;
    ic_params_default(&ind);
    ind.alpha = IC_ALPHA_INDEPENDENT;
    CHECK(ic_plan_get(ctx, &big, &sharpen, &ind, &a) == IC_OK && !a.premultiply &&
              (a.method != IC_METHOD_ROWS || a.rows_per_thread != 4),
          "4K RGBA sharpen: %s x%d", ic_method_name(a.method), a.rows_per_thread);
    ic_kernel_free(&sharpen);
    ic_image_free(&big);
    ic_image_free(&ga);
    ic_kernel_free(&k3);
    memset(&t, 0, sizeof t);
    t.method = IC_METHOD_ROWS;
    CHECK(ic_context_set_tuning(ctx, &t) == IC_OK && ic_plan_get(ctx, &img, &k5, NULL, &a) == IC_OK,
          "rows plan");
    t.rows_full = 1;
    CHECK(ic_context_set_tuning(ctx, &t) == IC_OK && ic_plan_get(ctx, &img, &k5, NULL, &b) == IC_OK,
          "rows-full plan");
    CHECK(a.rank == 1 && b.rank == 0 && b.fmas > a.fmas,
          "rows-full=1 drops the separable passes (rank %d -> %d, fmas %g -> %g)", a.rank, b.rank,
          a.fmas, b.fmas);
    /* a forced method that cannot take the job leaves the planner's choice */
    CHECK(ic_plan_get(ctx, &img, &k11, NULL, &a) == IC_OK && a.method != IC_METHOD_ROWS &&
              !a.forced,
          "method=rows on 11x11: plan %s forced %d", ic_method_name(a.method), a.forced);
    memset(&t, 0, sizeof t);
    t.method = IC_METHOD_FFT;
    CHECK(ic_context_set_tuning(ctx, &t) == IC_OK &&
              ic_plan_get(ctx, &rgba, &k9, NULL, &a) == IC_OK && a.premultiply &&
              a.method != IC_METHOD_FFT && !a.forced,
          "method=fft with premultiplied alpha: plan %s forced %d premultiply %d",
          ic_method_name(a.method), a.forced, a.premultiply);
    /* the environment is not read */
    CHECK(ic_context_set_tuning(ctx, NULL) == IC_OK &&
              ic_plan_get(ctx, &img, &k9, NULL, &a) == IC_OK,
          "default plan");
    setenv("IC_CUDA_METHOD", "global", 1);
    setenv("IC_FAST_ROWS_SHAPE", "1", 1);
    ic_context *env = cuda_ctx("cuda", NULL);
    unsetenv("IC_CUDA_METHOD");
    unsetenv("IC_FAST_ROWS_SHAPE");
    if (env) {
        CHECK(ic_plan_get(env, &img, &k9, NULL, &b) == IC_OK && b.method == a.method &&
                  b.rows_per_thread == a.rows_per_thread && !b.forced,
              "the environment changed the plan (%s x%d, want %s x%d)", ic_method_name(b.method),
              b.rows_per_thread, ic_method_name(a.method), a.rows_per_thread);
        ic_context_free(env);
    }
    /* built-in ceilings */
    ic_context *bi = cuda_ctx("cuda", "calibrate=builtin");
    if (bi) {
        CHECK(ic_plan_get(bi, &img, &k9, NULL, &b) == IC_OK && b.ceilings == IC_CEILINGS_BUILTIN &&
                  b.copy_bps == 3.0e12 && b.fma_per_s == 27.7e12,
              "calibrate=builtin: ceilings %d copy %g fma %g", b.ceilings, b.copy_bps, b.fma_per_s);
        ic_context_free(bi);
    }
    if (!q)
        CHECK(a.ceilings == IC_CEILINGS_MEASURED || a.ceilings == IC_CEILINGS_CACHED,
              "default context: measured or cached ceilings (%d)", a.ceilings);
    /* async refusals */
    ic_image dimg;
    CHECK(ic_image_wrap_device(&dimg, (void *)16, 1920, 1080, 3, IC_SOA, 0, 0, NULL) == IC_OK,
          "wrap");
    ic_image out;
    CHECK(ic_image_create(&out, 1920, 1080, 3, IC_AOS) == IC_OK, "out");
    CHECK(ic_convolve_async(ctx, &img, &out, &k5, NULL) == IC_ERR_UNSUPPORTED,
          "ic_convolve_async refuses host images");
    ic_image dimg2; /* a valid interleaved image (its own pitch), apart from dimg */
    CHECK(ic_image_wrap_device(&dimg2, (void *)(uintptr_t)(1u << 30), 1920, 1080, 3, IC_AOS, 0, 0,
                               NULL) == IC_OK,
          "wrap aos");
    CHECK(ic_convolve_async(ctx, &dimg, &dimg2, &k5, NULL) == IC_ERR_UNSUPPORTED,
          "ic_convolve_async refuses different layouts");
    ic_image da, db;
    CHECK(ic_image_wrap_device(&da, (void *)16, 64, 64, 4, IC_AOS, 0, 0, NULL) == IC_OK &&
              ic_image_wrap_device(&db, (void *)(uintptr_t)(1u << 30), 64, 64, 4, IC_AOS, 0, 0,
                                   NULL) == IC_OK,
          "wrap rgba");
    ic_params keep;
    ic_params_default(&keep);
    keep.alpha = IC_ALPHA_KEEP;
    CHECK(ic_convolve_async(ctx, &da, &db, &k5, &keep) == IC_ERR_UNSUPPORTED &&
              strstr(ic_last_error(), "keep"),
          "ic_convolve_async refuses alpha keep (%s)", ic_last_error());
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.n_devices = 2;
    ic_context *split = NULL;
    CHECK(ic_context_create(&split, "cuda", &o) == IC_OK, "split context");
    if (split)
        CHECK(ic_convolve_async(split, &da, &db, &k5, NULL) == IC_ERR_UNSUPPORTED,
              "ic_convolve_async refuses a split context");
    ic_context_free(split);
    ic_image_free(&out);
    ic_kernel_free(&k5);
    ic_kernel_free(&k9);
    ic_kernel_free(&k11);
    ic_image_free(&img);
    ic_image_free(&rgba);
    ic_context_free(ctx);
}

/* 5. the device-resident 1D convolution and matrix product. */
static void signals(int q)
{
    const size_t n = q ? 5000 : 300000;
    const int klen = 9, M = 70, K = 33, N = 45;
    float *in = malloc(n * sizeof *in), *out = malloc(n * sizeof *out),
          *ref = malloc(n * sizeof *ref);
    uint8_t *in8 = malloc(n), *out8 = malloc(n), *ref8 = malloc(n);
    float A[70 * 33], B[33 * 45], C[70 * 45], R[70 * 45], w[9], wr[9];
    void *d_in = NULL, *d_out = NULL, *d_w = NULL, *dA = NULL, *dB = NULL, *dC = NULL;
    ict_rng r;
    ict_rng_seed(&r, 0x1DC0DEull);
    if (!in || !out || !ref || !in8 || !out8 || !ref8) {
        CHECK(0, "out of memory");
        goto out;
    }
    for (size_t i = 0; i < n; i++) {
        in[i] = (float)(ict_uniform(&r) * 2 - 1);
        in8[i] = (uint8_t)ict_range(&r, 0, 255);
    }
    for (int i = 0; i < klen; i++)
        w[i] = (float)ict_uniform(&r) / klen;
    for (int i = 0; i < klen; i++)
        wr[i] = w[klen - 1 - i]; /* the host call convolves: flip for the correlation */
    for (int i = 0; i < M * K; i++)
        A[i] = (float)(ict_uniform(&r) - 0.5);
    for (int i = 0; i < K * N; i++)
        B[i] = (float)(ict_uniform(&r) - 0.5);
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_REFLECT;
    p.bias = 0.25f;
    CHECK(ic_conv1d_f32(in, ref, n, wr, klen, &p, "cuda") == IC_OK &&
              ic_conv1d_u8(in8, ref8, n, wr, klen, &p, "cuda") == IC_OK &&
              ic_matmul(A, B, R, M, K, N, "cuda") == IC_OK,
          "host calls");
    if (cudaMalloc(&d_in, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&d_out, n * sizeof(float)) != cudaSuccess ||
        cudaMalloc(&d_w, sizeof w) != cudaSuccess || cudaMalloc(&dA, sizeof A) != cudaSuccess ||
        cudaMalloc(&dB, sizeof B) != cudaSuccess || cudaMalloc(&dC, sizeof C) != cudaSuccess) {
        CHECK(0, "cudaMalloc");
        goto out;
    }
    cudaMemcpy(d_w, w, sizeof w, cudaMemcpyHostToDevice);
    cudaMemcpy(d_in, in, n * sizeof(float), cudaMemcpyHostToDevice);
    CHECK(ic_conv1d_device(d_in, d_out, n, 0, (const float *)d_w, klen, &p, NULL) == IC_OK,
          "ic_conv1d_device f32: %s", ic_last_error());
    cudaMemcpy(out, d_out, n * sizeof(float), cudaMemcpyDeviceToHost);
    CHECK(!memcmp(out, ref, n * sizeof(float)), "ic_conv1d_device f32 equals ic_conv1d_f32");
    cudaMemcpy(d_in, in8, n, cudaMemcpyHostToDevice);
    CHECK(ic_conv1d_device(d_in, d_out, n, 1, (const float *)d_w, klen, &p, NULL) == IC_OK,
          "ic_conv1d_device u8: %s", ic_last_error());
    cudaMemcpy(out8, d_out, n, cudaMemcpyDeviceToHost);
    CHECK(!memcmp(out8, ref8, n), "ic_conv1d_device u8 equals ic_conv1d_u8");
    cudaMemcpy(dA, A, sizeof A, cudaMemcpyHostToDevice);
    cudaMemcpy(dB, B, sizeof B, cudaMemcpyHostToDevice);
    CHECK(ic_matmul_device(IC_MATMUL_FAST, dA, dB, dC, M, K, N, NULL) == IC_OK,
          "ic_matmul_device: %s", ic_last_error());
    cudaMemcpy(C, dC, sizeof C, cudaMemcpyDeviceToHost);
    CHECK(!memcmp(C, R, sizeof C), "ic_matmul_device equals ic_matmul(\"cuda\")");
    CHECK(strlen(ic_matmul_tile(IC_MATMUL_FAST, M, K, N)) > 0, "ic_matmul_tile names a tile");
out:
    cudaFree(d_in);
    cudaFree(d_out);
    cudaFree(d_w);
    cudaFree(dA);
    cudaFree(dB);
    cudaFree(dC);
    free(in);
    free(out);
    free(ref);
    free(in8);
    free(out8);
    free(ref8);
}

/* 6. a strategy backend's smallest device_memory. */
static void bands(void)
{
    ic_context *ctx = cuda_ctx("cuda-tiled-halo", NULL);
    if (!ctx)
        return;
    ic_image img, out;
    ic_kernel k;
    memset(&out, 0, sizeof out);
    CHECK(ic_image_create(&img, 300, 200, 3, IC_AOS) == IC_OK, "image");
    ic_image_chart(&img, 9);
    CHECK(ic_kernel_parse(&k, "gaussian:7") == IC_OK, "kernel");
    ic_plan plan;
    CHECK(ic_plan_get(ctx, &img, &k, NULL, &plan) == IC_OK && plan.device_min_bytes > 0,
          "device_min_bytes %zu", plan.device_min_bytes);
    const size_t min = plan.device_min_bytes;
    ic_context_free(ctx);
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.device_memory = min;
    ctx = NULL;
    CHECK(ic_context_create(&ctx, "cuda-tiled-halo", &o) == IC_OK, "limited context");
    if (ctx) {
        CHECK(ic_plan_get(ctx, &img, &k, NULL, &plan) == IC_OK && plan.bands >= 1 &&
                  plan.band_rows >= 1 && plan.streams >= 1,
              "bands %d of %d rows on %d streams", plan.bands, plan.band_rows, plan.streams);
        filter_check(ctx, &img, &k, NULL, &out, "cuda-tiled-halo at device_min_bytes");
        ic_context_free(ctx);
    }
    o.device_memory = min - 1;
    ctx = NULL;
    CHECK(ic_context_create(&ctx, "cuda-tiled-halo", &o) == IC_OK, "limited context");
    if (ctx) {
        ic_image o2;
        CHECK(ic_image_create(&o2, 300, 200, 3, IC_AOS) == IC_OK, "out");
        CHECK(ic_convolve(ctx, &img, &o2, &k, NULL) == IC_ERR_TOO_LARGE,
              "one byte under device_min_bytes is IC_ERR_TOO_LARGE");
        ic_image_free(&o2);
        ic_context_free(ctx);
    }
    ic_image_free(&out);
    ic_image_free(&img);
    ic_kernel_free(&k);
}

int main(void)
{
    char why[256];
    if (!ict_backend_usable("cuda", why, sizeof why)) {
        printf("SKIPPED: backend cuda: %s\n", why);
        return 77;
    }
    const int q = quick();
    methods(q);
    knobs(q);
    signals(q);
    bands();
    printf("test_gpu_advanced: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}

#endif /* IC_HAVE_CUDA */
