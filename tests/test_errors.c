/*
 * test_errors.c - the one error shape (issue 14), through the public header:
 * for a failing call of each public family (images, kernels, parameters,
 * backends, contexts and filtering, files and bytes, the GPU codec, 1D
 * convolution and the matrix product) the status is the documented one and
 * ic_last_error() is one line naming the cause (the file, the kernel text,
 * the backend, the limit); ic_filter's message outlives its context; and the
 * message is per thread: two threads failing differently at the same time
 * each read their own, and neither disturbs the main thread's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imgconv_course.h"
#include "imgconv_gpu_codec.h"
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* A call gave status `want` and a one-line message containing `needle`. */
static void expect(const char *what, ic_status got, ic_status want, const char *needle)
{
    const char *m = ic_last_error();
    CHECK(m != NULL, "%s: ic_last_error() is NULL", what);
    if (!m)
        return;
    CHECK(got == want, "%s: status %s, want %s (message '%s')", what, ic_status_str(got),
          ic_status_str(want), m);
    CHECK(m[0] != '\0' && !strchr(m, '\n'), "%s: message is not one non-empty line: '%s'", what, m);
    CHECK(strstr(m, needle) != NULL, "%s: message '%s' does not mention '%s'", what, m, needle);
}

static void test_images(void)
{
    ic_image img;
    expect("ic_image_create 0 wide", ic_image_create(&img, 0, 5, 3, IC_AOS), IC_ERR_INVALID_ARG,
           "0x5");
    expect("ic_image_create huge", ic_image_create(&img, 1 << 30, 5, 1, IC_AOS), IC_ERR_TOO_LARGE,
           "size limit");
    uint8_t px[16];
    expect("ic_image_wrap pitch", ic_image_wrap(&img, px, 4, 1, 3, IC_AOS, 5), IC_ERR_INVALID_ARG,
           "pitch 5");
    expect("ic_image_wrap_device", ic_image_wrap_device(&img, px, 1, 1, 1, IC_AOS, 0, -3, NULL),
           IC_ERR_INVALID_ARG, "-3");
    ic_image a, b;
    CHECK(ic_image_create(&a, 4, 4, 3, IC_AOS) == IC_OK &&
              ic_image_create(&b, 5, 4, 3, IC_AOS) == IC_OK,
          "image setup");
    expect("ic_image_copy sizes", ic_image_copy(&b, &a), IC_ERR_INVALID_ARG, "differs");
    ic_image_free(&a);
    ic_image_free(&b);
}

static void test_kernels_and_params(void)
{
    ic_kernel k;
    expect("ic_kernel_parse ragged", ic_kernel_parse(&k, "1 2 1; 2 4; 1 2 1"), IC_ERR_KERNEL,
           "row");
    expect("ic_kernel_parse unknown name", ic_kernel_parse(&k, "gaussiann:5"), IC_ERR_KERNEL,
           "gaussiann");
    expect("ic_kernel_parse @missing", ic_kernel_parse(&k, "@/nonexistent-dir/kern.txt"), IC_ERR_IO,
           "/nonexistent-dir/kern.txt");
    expect("ic_kernel_load missing", ic_kernel_load(&k, "/nonexistent-dir/kern.mat"), IC_ERR_IO,
           "No such file");
    const float c[4] = {1, 1, 1, 1};
    expect("ic_kernel_create even", ic_kernel_create(&k, 2, 2, c, 1.0), IC_ERR_KERNEL, "odd");
    ic_factors f;
    expect("ic_kernel_factor NULL", ic_kernel_factor(NULL, 0, 0, &f), IC_ERR_INVALID_ARG,
           "invalid kernel");
    ic_border bo;
    expect("ic_border_parse", ic_border_parse("mirrorr", &bo), IC_ERR_INVALID_ARG, "mirrorr");
    ic_alpha al;
    expect("ic_alpha_parse", ic_alpha_parse("keeep", &al), IC_ERR_INVALID_ARG, "keeep");
    ic_backend_info info;
    expect("ic_backend_get", ic_backend_get(-1, &info), IC_ERR_INVALID_ARG, "no backend -1");
}

static void test_contexts_and_filtering(void)
{
    ic_context *ctx = (ic_context *)&failures; /* must come back NULL */
    expect("ic_context_create unknown", ic_context_create(&ctx, "fpga-9000", NULL),
           IC_ERR_NO_BACKEND, "fpga-9000");
    CHECK(ctx == NULL, "a failed ic_context_create left *ctx set");

    ic_image src, dst, small;
    ic_kernel k;
    CHECK(ic_image_create(&src, 64, 48, 3, IC_AOS) == IC_OK &&
              ic_image_create(&dst, 64, 48, 3, IC_AOS) == IC_OK &&
              ic_image_create(&small, 32, 48, 3, IC_AOS) == IC_OK &&
              ic_kernel_parse(&k, "box:3") == IC_OK,
          "filter setup: %s", ic_last_error());

    /* The memory limit: ic_convolve names it. */
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.max_memory = 1000;
    CHECK(ic_context_create(&ctx, "seq", &o) == IC_OK, "seq context: %s", ic_last_error());
    if (ctx) {
        expect("ic_convolve over max_memory", ic_convolve(ctx, &src, &dst, &k, NULL),
               IC_ERR_TOO_LARGE, "memory limit");
        char plan[256];
        expect("ic_plan_explain NULL image",
               ic_plan_explain(ctx, NULL, &k, NULL, plan, sizeof plan), IC_ERR_INVALID_ARG,
               "invalid image");
        /* The GPU codec wants a CUDA context (or a CUDA build). */
        ic_gpu_codec *codec = NULL;
        expect("ic_gpu_codec_create on seq", ic_gpu_codec_create(&codec, ctx, 1),
               IC_ERR_UNSUPPORTED, "GPU codec");
        CHECK(codec == NULL, "a failed ic_gpu_codec_create left a codec");
        ic_context_free(ctx);
    }

    /* ic_filter frees its context before returning: its message must survive. */
    expect("ic_filter size mismatch", ic_filter(&src, &small, &k, NULL, "seq"), IC_ERR_INVALID_ARG,
           "differ from the source");
    expect("ic_filter unknown backend", ic_filter(&src, &dst, &k, NULL, "no-such-backend"),
           IC_ERR_NO_BACKEND, "no-such-backend");
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_image_free(&small);
}

static void test_files(void)
{
    char dir[] = "/tmp/ic-test-errors-XXXXXX";
    CHECK(mkdtemp(dir) != NULL, "mkdtemp");
    char path[512];
    ic_image img;
    expect("ic_image_load missing", ic_image_load(&img, "/nonexistent-dir/x.png", NULL), IC_ERR_IO,
           "cannot open");
    snprintf(path, sizeof path, "%s/garbage.png", dir);
    FILE *f = fopen(path, "wb");
    if (f) {
        fputs("this is not an image at all", f);
        fclose(f);
    }
    expect("ic_image_load garbage", ic_image_load(&img, path, NULL), IC_ERR_FORMAT, "not a PNG");
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = 10;
    ic_image chart;
    CHECK(ic_image_create(&chart, 20, 20, 3, IC_AOS) == IC_OK && ic_image_chart(&chart, 1) == IC_OK,
          "chart");
    snprintf(path, sizeof path, "%s/chart.ppm", dir);
    CHECK(ic_image_save(&chart, path, NULL) == IC_OK, "save %s: %s", path, ic_last_error());
    expect("ic_image_load over max_pixels", ic_image_load(&img, path, &lo), IC_ERR_TOO_LARGE,
           "pixel limit 10");
    expect("ic_image_decode empty", ic_image_decode(&img, "", 0, NULL), IC_ERR_FORMAT,
           "empty file");
    snprintf(path, sizeof path, "%s/out.xyz", dir);
    expect("ic_image_save bad extension", ic_image_save(&chart, path, NULL), IC_ERR_UNSUPPORTED,
           ".xyz");
    expect("ic_image_save no directory", ic_image_save(&chart, "/nonexistent-dir/o.png", NULL),
           IC_ERR_IO, "No such file");
    uint8_t *data = NULL;
    size_t size = 0;
    expect("ic_image_encode bad name", ic_image_encode(&chart, "out.qqq", NULL, &data, &size),
           IC_ERR_UNSUPPORTED, ".qqq");
    expect("ic_bytes_save no path", ic_bytes_save(NULL, "x", 1), IC_ERR_INVALID_ARG, "no data");
    ic_image_free(&chart);
    snprintf(path, sizeof path, "%s/garbage.png", dir);
    remove(path);
    snprintf(path, sizeof path, "%s/chart.ppm", dir);
    remove(path);
    rmdir(dir);
}

static void test_signals(void)
{
    float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], k2[2] = {1, 1};
    expect("ic_conv1d_f32 even kernel", ic_conv1d_f32(in, out, 8, k2, 2, NULL, "cpu"),
           IC_ERR_INVALID_ARG, "kernel length 2");
    uint8_t u[4] = {0}, uo[4];
    expect("ic_conv1d_u8 backend", ic_conv1d_u8(u, uo, 4, k2, 1, NULL, "dsp"), IC_ERR_NO_BACKEND,
           "dsp");
    expect("ic_stencil1d radius", ic_stencil1d(in, out, 8, -1, NULL, "cpu"), IC_ERR_INVALID_ARG,
           "radius -1");
    float A[4] = {0}, B[4] = {0}, C[4];
    expect("ic_matmul M = 0", ic_matmul(A, B, C, 0, 2, 2, "cpu"), IC_ERR_INVALID_ARG,
           "must be >= 1");
    expect("ic_matmul variant", ic_matmul(A, B, C, 2, 2, 2, "cuda-blocked"), IC_ERR_NO_BACKEND,
           "cuda-blocked");
}

/* ---- per thread --------------------------------------------------------- */

#define ROUNDS 300

static pthread_barrier_t barrier;

typedef struct worker {
    int id;
    int bad; /* rounds where the thread read another's message */
} worker;

static void *fail_repeatedly(void *arg)
{
    worker *w = arg;
    char token[64];
    for (int r = 0; r < ROUNDS; r++) {
        ic_status st;
        if (w->id == 0) {
            snprintf(token, sizeof token, "/nonexistent-dir/thread0-round%d.txt", r);
            char text[80];
            snprintf(text, sizeof text, "@%s", token);
            ic_kernel k;
            st = ic_kernel_parse(&k, text);
        } else {
            snprintf(token, sizeof token, "backend-of-thread1-round%d", r);
            ic_context *ctx = NULL;
            st = ic_context_create(&ctx, token, NULL);
        }
        /* Both threads have failed before either reads. */
        pthread_barrier_wait(&barrier);
        if (st == IC_OK || !strstr(ic_last_error(), token))
            w->bad++;
        pthread_barrier_wait(&barrier);
    }
    return NULL;
}

static void test_per_thread(void)
{
    ic_image img;
    (void)ic_image_load(&img, "/nonexistent-dir/main-thread.png", NULL);
    char before[512];
    snprintf(before, sizeof before, "%s", ic_last_error());

    worker w[2] = {{0, 0}, {1, 0}};
    pthread_t t[2];
    CHECK(pthread_barrier_init(&barrier, NULL, 2) == 0, "barrier");
    int started = 0;
    for (int i = 0; i < 2; i++)
        started += pthread_create(&t[i], NULL, fail_repeatedly, &w[i]) == 0;
    CHECK(started == 2, "could not start the threads");
    if (started == 2)
        for (int i = 0; i < 2; i++)
            pthread_join(t[i], NULL);
    pthread_barrier_destroy(&barrier);
    CHECK(w[0].bad == 0 && w[1].bad == 0,
          "a thread read another thread's message (%d and %d of %d rounds)", w[0].bad, w[1].bad,
          ROUNDS);
    CHECK(strcmp(before, ic_last_error()) == 0,
          "the main thread's message changed while other threads failed: '%s' -> '%s'", before,
          ic_last_error());
    CHECK(strstr(before, "cannot open") != NULL, "main thread message: '%s'", before);

    /* A thread that has not failed yet reads "" (never NULL). */
}

static void *read_fresh(void *arg)
{
    const char *m = ic_last_error();
    *(int *)arg = m != NULL && m[0] == '\0';
    return NULL;
}

static void test_fresh_thread(void)
{
    int ok = 0;
    pthread_t t;
    if (pthread_create(&t, NULL, read_fresh, &ok) == 0) {
        pthread_join(t, NULL);
        CHECK(ok, "a new thread's ic_last_error() is not \"\"");
    }
}

int main(void)
{
    test_images();
    test_kernels_and_params();
    test_contexts_and_filtering();
    test_files();
    test_signals();
    test_per_thread();
    test_fresh_thread();
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("ok\n");
    return 0;
}
