/*
 * test_gpu_jpeg_order.c - the GPU codec's decode and the work queued on its
 * slots' streams, under load, as a specification. nvJPEG's hardware batched
 * decoder has been seen (H100) to write its outputs without waiting for
 * earlier work on its stream: a decode into a buffer that queued work still
 * writes would then be overwritten. For ITER rounds:
 *
 *  1. A batch of N photograph-like JPEGs (4:2:0 baseline, the hardware
 *     decoder's share, and one progressive, the hybrid decoder's) is decoded
 *     into slots 0..N-1; each image is within TOL of libjpeg-turbo's decode
 *     (docs/gpu-jpeg.md#pixels) and is the reference of the round.
 *  2. On every slot's stream (the stream the decoded image carries): LOAD
 *     device-to-device copies of a scratch buffer, then the image poisoned
 *     (every byte POISON). At once, without waiting, the same files are
 *     decoded into the same slots: each decoded image must equal the
 *     reference byte for byte. A decoder that wrote before the queued poison
 *     landed shows poison.
 *  3. Right after that decode, a copy of each image queued on its stream
 *     (cudaMemcpy2DAsync, no host wait first) holds the reference too: work
 *     queued on the image's stream runs after the decode.
 *
 *  4. Then two threads decode at once, each into slots of its own
 *     (ic_gpu_codec_open_decoders(codec, 2): the second decoder is made
 *     while the first decodes), every slot poisoned before each decode, for
 *     SECONDS: every image must equal the single-thread reference byte for
 *     byte, whichever decoder took it.
 *
 * The engine of each file is printed. Without a CUDA build, a device or
 * libjpeg: exit 77 (SKIPPED). IC_TEST_QUICK=1: small images, two rounds,
 * one second of concurrent decodes.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imgconv_gpu_codec.h"
#include "jpeg_cases.h"
#include "testutil.h"

#if !defined(IC_HAVE_CUDA) || !defined(IC_TEST_HAVE_JPEG)
int main(void)
{
    printf("SKIPPED: needs a CUDA build with libjpeg\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define N 12        /* files per batch */
#define POISON 0xA5 /* what the queued work writes into each slot */
#define TOL_MAX 64  /* against libjpeg-turbo, as test_gpu_jpeg.c */
#define TOL_MEAN 1.5
#define SCRATCH (64u << 20) /* bytes each load copy moves */

static int g_fail;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL: " __VA_ARGS__);                                                          \
            printf("\n");                                                                          \
            g_fail++;                                                                              \
        }                                                                                          \
    } while (0)

/* Copies a device AoS image into a new host image (after its stream's work). */
static int download(const ic_image *dev, ic_image *host)
{
    if (ic_image_create(host, dev->width, dev->height, dev->channels, IC_AOS) != IC_OK)
        return 0;
    if (cudaStreamSynchronize((cudaStream_t)dev->stream) != cudaSuccess ||
        cudaMemcpy2D(host->data, host->pitch, dev->data, dev->pitch, ic_image_row_bytes(dev),
                     (size_t)dev->height, cudaMemcpyDeviceToHost) != cudaSuccess) {
        ic_image_free(host);
        return 0;
    }
    return 1;
}

/* Largest absolute difference, and the mean, of two equal-shaped images. */
static int diff_max(const ic_image *a, const ic_image *b, double *mean)
{
    long long sum = 0;
    int m = 0;
    for (int y = 0; y < a->height; y++) {
        const uint8_t *p = (const uint8_t *)a->data + (size_t)y * a->pitch;
        const uint8_t *q = (const uint8_t *)b->data + (size_t)y * b->pitch;
        for (size_t x = 0; x < ic_image_row_bytes(a); x++) {
            const int d = abs((int)p[x] - (int)q[x]);
            sum += d;
            m = d > m ? d : m;
        }
    }
    *mean = (double)sum / ((double)a->height * (double)ic_image_row_bytes(a));
    return m;
}

/* Samples equal to POISON, in a row-major walk (a decoded photo has few). */
static long poisoned(const ic_image *a)
{
    long n = 0;
    for (int y = 0; y < a->height; y++) {
        const uint8_t *p = (const uint8_t *)a->data + (size_t)y * a->pitch;
        for (size_t x = 0; x < ic_image_row_bytes(a); x++)
            n += p[x] == POISON;
    }
    return n;
}

typedef struct files {
    unsigned char *jpg[N];
    unsigned long len[N];
    ic_bytes in[N];
    ic_image cpu[N]; /* libjpeg-turbo's decode */
} files;

static int make_files(files *f, int w, int h, uint64_t seed)
{
    memset(f, 0, sizeof *f);
    for (int i = 0; i < N; i++) {
        ic_image src;
        /* odd sizes for some, so that pitches differ */
        const int wi = w + (i % 3) * 7, hi = h + (i % 2) * 5;
        if (ic_image_create(&src, wi, hi, 3, IC_AOS) != IC_OK)
            return 0;
        ictj_photo_fill(&src, seed + (uint64_t)i);
        const ictj_opts o = {2, 2, i == N - 1, 0, 90}; /* the last one progressive */
        const int ok = ictj_write_jpeg(&src, &o, &f->jpg[i], &f->len[i]);
        ic_image_free(&src);
        if (!ok || ic_image_decode(&f->cpu[i], f->jpg[i], f->len[i], NULL) != IC_OK)
            return 0;
        f->in[i].data = f->jpg[i];
        f->in[i].size = f->len[i];
    }
    return 1;
}

static void free_files(files *f)
{
    for (int i = 0; i < N; i++) {
        free(f->jpg[i]);
        ic_image_free(&f->cpu[i]);
    }
}

/* Decodes the files into slots 0..N-1 and copies each image that decoded
 * into ref[i] (left zeroed otherwise); what names the step in failures.
 * Returns the decode's status. */
static ic_status decode_refs(ic_gpu_codec *codec, const files *f, ic_image *out,
                             ic_decode_result *res, ic_image *ref, const char *what)
{
    int slots[N];
    for (int i = 0; i < N; i++)
        slots[i] = i;
    memset(ref, 0, N * sizeof *ref);
    const ic_status st = ic_gpu_codec_decode(codec, N, f->in, slots, NULL, out, res);
    CHECK(st == IC_OK, "%s: decode: %s", what, ic_last_error());
    for (int i = 0; st == IC_OK && i < N; i++) {
        CHECK(res[i].status == IC_OK, "%s file %d: %s", what, i, res[i].error);
        if (res[i].status == IC_OK)
            CHECK(download(&out[i], &ref[i]), "%s file %d: cannot copy back", what, i);
    }
    return st;
}

/* ---- 4. concurrent decodes --------------------------------------------------- */

typedef struct conc {
    ic_gpu_codec *codec;
    const files *f;
    const ic_image *ref; /* N host references */
    int first_slot;      /* its slots: first_slot .. first_slot + N - 1 */
    double seconds;
    int rounds, bad;
    char why[256];
} conc;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* Poisons its slots, decodes the files into them, compares with the
 * references; again until the time is up. */
static void *conc_main(void *arg)
{
    conc *c = arg;
    int slots[N];
    for (int i = 0; i < N; i++)
        slots[i] = c->first_slot + i;
    ic_image out[N];
    ic_decode_result res[N];
    const double end = now_s() + c->seconds;
    while (now_s() < end && !c->bad) {
        if (c->rounds > 0) /* the slots hold the last round's images: poison them first */
            for (int i = 0; i < N; i++)
                (void)cudaMemset2DAsync(out[i].data, out[i].pitch, POISON,
                                        ic_image_row_bytes(&out[i]), (size_t)out[i].height,
                                        (cudaStream_t)out[i].stream);
        if (ic_gpu_codec_decode(c->codec, N, c->f->in, slots, NULL, out, res) != IC_OK) {
            snprintf(c->why, sizeof c->why, "decode: %s", ic_last_error());
            c->bad++;
            break;
        }
        for (int i = 0; i < N; i++) {
            ic_image got;
            if (res[i].status != IC_OK || !download(&out[i], &got)) {
                snprintf(c->why, sizeof c->why, "file %d: %s", i, res[i].error);
                c->bad++;
                continue;
            }
            double mean;
            const int m = diff_max(&got, &c->ref[i], &mean);
            if (m != 0) {
                snprintf(c->why, sizeof c->why,
                         "round %d file %d (%s): differs from the reference (max %d, %ld samples "
                         "of the poison)",
                         c->rounds, i, res[i].engine, m, poisoned(&got));
                c->bad++;
            }
            ic_image_free(&got);
        }
        c->rounds++;
    }
    return NULL;
}

/* Two threads decoding into slots 0..N-1 and N..2N-1 for `seconds`. */
static void concurrent(ic_gpu_codec *codec, const files *f, double seconds)
{
    ic_image out[N], ref[N];
    ic_decode_result res[N];
    ic_gpu_codec_open_decoders(codec, 2);
    (void)decode_refs(codec, f, out, res, ref, "concurrent: reference");
    conc c[2];
    pthread_t th[2];
    int started[2] = {0, 0};
    for (int t = 0; t < 2 && !g_fail; t++) {
        memset(&c[t], 0, sizeof c[t]);
        c[t].codec = codec;
        c[t].f = f;
        c[t].ref = ref;
        c[t].first_slot = t * N;
        c[t].seconds = seconds;
        started[t] = pthread_create(&th[t], NULL, conc_main, &c[t]) == 0;
        CHECK(started[t], "concurrent: cannot start thread %d", t);
    }
    for (int t = 0; t < 2; t++)
        if (started[t]) {
            pthread_join(th[t], NULL);
            printf("concurrent: thread %d decoded %d batches of %d in %.1f s\n", t, c[t].rounds, N,
                   seconds);
            CHECK(c[t].bad == 0, "concurrent: thread %d: %d bad (%s)", t, c[t].bad, c[t].why);
            CHECK(c[t].rounds > 0, "concurrent: thread %d decoded nothing", t);
        }
    for (int i = 0; i < N; i++)
        ic_image_free(&ref[i]);
}

/* One round: reference decode, then load + poison + decode, then a copy
 * queued after the decode. */
static void round_once(ic_gpu_codec *codec, const files *f, int loads, void *scratch, int round)
{
    int slots[N];
    for (int i = 0; i < N; i++)
        slots[i] = i;
    ic_image out[N], ref[N];
    ic_decode_result res[N];
    char what[32];
    snprintf(what, sizeof what, "round %d", round);
    ic_status st = decode_refs(codec, f, out, res, ref, what);
    if (st != IC_OK)
        return;
    for (int i = 0; i < N; i++) {
        if (!ref[i].data)
            continue;
        double mean;
        const int m = diff_max(&ref[i], &f->cpu[i], &mean);
        if (round == 0)
            printf("file %2d %4dx%-4d engine %-16s against libjpeg-turbo: max %d mean %.3f\n", i,
                   out[i].width, out[i].height, res[i].engine, m, mean);
        CHECK(m <= TOL_MAX && mean <= TOL_MEAN, "round %d file %d (%s): max %d mean %.3f", round, i,
              res[i].engine, m, mean);
    }
    /* The load, then the poison, on each slot's stream; no host wait. */
    for (int i = 0; i < N; i++) {
        cudaStream_t s = (cudaStream_t)out[i].stream;
        for (int k = 0; k < loads; k++)
            (void)cudaMemcpyAsync((uint8_t *)scratch + SCRATCH, scratch, SCRATCH,
                                  cudaMemcpyDeviceToDevice, s);
        (void)cudaMemset2DAsync(out[i].data, out[i].pitch, POISON, ic_image_row_bytes(&out[i]),
                                (size_t)out[i].height, s);
    }
    ic_image again[N];
    st = ic_gpu_codec_decode(codec, N, f->in, slots, NULL, again, res);
    CHECK(st == IC_OK, "round %d: decode under load: %s", round, ic_last_error());
    /* A copy queued on each image's stream right after the decode. */
    uint8_t *copy[N];
    for (int i = 0; i < N; i++) {
        copy[i] = NULL;
        if (st != IC_OK || res[i].status != IC_OK ||
            cudaMalloc((void **)&copy[i], again[i].pitch * (size_t)again[i].height) != cudaSuccess)
            continue;
        (void)cudaMemcpy2DAsync(copy[i], again[i].pitch, again[i].data, again[i].pitch,
                                ic_image_row_bytes(&again[i]), (size_t)again[i].height,
                                cudaMemcpyDeviceToDevice, (cudaStream_t)again[i].stream);
    }
    for (int i = 0; i < N && st == IC_OK; i++) {
        if (res[i].status != IC_OK || !ref[i].data) {
            CHECK(res[i].status == IC_OK, "round %d file %d under load: %s", round, i,
                  res[i].error);
            continue;
        }
        ic_image got, cp;
        if (!download(&again[i], &got)) {
            CHECK(0, "round %d file %d: cannot copy back", round, i);
            continue;
        }
        double mean;
        const int m = diff_max(&got, &ref[i], &mean);
        CHECK(m == 0,
              "round %d file %d (%s): decoded under load differs from the reference "
              "(max %d, %ld samples of the poison %#x)",
              round, i, res[i].engine, m, poisoned(&got), POISON);
        ic_image dc = again[i];
        dc.data = copy[i];
        if (copy[i] && download(&dc, &cp)) {
            const int mc = diff_max(&cp, &ref[i], &mean);
            CHECK(mc == 0, "round %d file %d: a copy queued after the decode differs (max %d)",
                  round, i, mc);
            ic_image_free(&cp);
        }
        ic_image_free(&got);
    }
    for (int i = 0; i < N; i++) {
        (void)cudaFree(copy[i]);
        ic_image_free(&ref[i]);
    }
}

int main(void)
{
    if (ic_cuda_device_count() < 1) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    const int quick = getenv("IC_TEST_QUICK") && atoi(getenv("IC_TEST_QUICK")) > 0;
    const int w = quick ? 320 : 1920, h = quick ? 240 : 1080, rounds = quick ? 2 : 6;
    const int loads = quick ? 8 : 32; /* per slot: a few ms to tens of ms of queued work */
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, "cuda", NULL) != IC_OK) {
        printf("FAIL: context: %s\n", ic_last_error());
        return 1;
    }
    ic_gpu_codec *codec = NULL;
    if (ic_gpu_codec_create(&codec, ctx, 2 * N) != IC_OK) {
        printf("FAIL: codec: %s\n", ic_last_error());
        ic_context_free(ctx);
        return 1;
    }
    printf("GPU codec engine: %s; %d rounds of %d files of about %dx%d, %d load copies of %u MB "
           "per slot\n",
           ic_gpu_codec_engine(codec), rounds, N, w, h, loads, SCRATCH >> 20);
    files f;
    void *scratch = NULL;
    if (!make_files(&f, w, h, 42)) {
        CHECK(0, "cannot make the test JPEGs");
    } else if (cudaMalloc(&scratch, 2 * (size_t)SCRATCH) != cudaSuccess) {
        CHECK(0, "cannot allocate the load's scratch buffer");
    } else {
        for (int r = 0; r < rounds; r++)
            round_once(codec, &f, loads, scratch, r);
        concurrent(codec, &f, quick ? 1.0 : 3.0);
    }
    (void)cudaDeviceSynchronize();
    (void)cudaFree(scratch);
    free_files(&f);
    ic_gpu_codec_free(codec);
    ic_context_free(ctx);
    if (g_fail) {
        printf("%d failure(s)\n", g_fail);
        return 1;
    }
    printf("test_gpu_jpeg_order: all passed\n");
    return 0;
}
#endif
