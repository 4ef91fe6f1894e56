/*
 * bench_transfer.c - the whole job, not only the kernel (seed 004's
 * last experiment, "synchronous vs asynchronous loading"): host->host time of
 * a 3x3 Gaussian on 480p..8K RGB images (and 24 MP, 6000x4000, a camera's
 * photograph) through
 *   default       ic_convolve with default options (IC_TRANSFER_AUTO), pageable
 *                 images: what a library caller or the CLI gets; the
 *                 target is 24 MP within 1.5x of the floor below
 *   sync          ic_convolve, IC_TRANSFER_SYNC, pageable images (cudaMemcpy2D)
 *   async         ic_convolve, IC_TRANSFER_ASYNC, pageable images (pinned staging)
 *   async pinned  ic_convolve, IC_TRANSFER_ASYNC, images in cudaHostAlloc memory
 *   sync pinned   ic_convolve, IC_TRANSFER_SYNC, images in cudaHostAlloc memory
 *   pageable copy cudaMemcpy pageable -> device -> pageable, no kernel: what a
 *                 framework's .cuda()/.cpu() round trip pays (the PyTorch peer)
 * and the PCIe floor: bytes / pinned bandwidth, for the larger direction (the
 * time if upload and download overlap perfectly) and for both in sequence.
 * Both pinned bandwidths are measured in the same run, on a 128 MB buffer.
 * Median of 15 runs after 3 warm-ups. The backend is cuda (the fast path, what auto picks) unless
 * IC_BENCH_TRANSFER_BACKEND names another CUDA strategy backend.
 * With two or more visible devices, a second table ("Several GPUs"):
 * 4K and 8K through backend `cuda`, async, pinned images, on one device and
 * split across all devices (ic_context_options.n_devices), with each device's
 * pinned bandwidth and the floor if every device's link carried its share.
 */
#include "bench_transfer.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imgconv.h"

#ifdef IC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

#define BT_RUNS 15
#define BT_WARM 3

#ifndef IC_HAVE_CUDA
int ic_bench_transfer(FILE *md, FILE *json)
{
    (void)json;
    if (md)
        fprintf(md, "transfer benchmark: built without CUDA\n");
    return 77;
}
#else

static double bt_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_d(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_d);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Pinned bandwidth in GB/s of device `dev`, host->device and device->host,
 * cudaEvent-timed; with duplex non-NULL also both directions at once (two
 * streams, two buffer pairs): *duplex = bytes each way / time of the pair,
 * the real ceiling of an overlapped upload and download. */
static int pinned_bandwidth2(int dev, double *h2d, double *d2h, double *duplex)
{
    const size_t n = (size_t)128 << 20;
    if (cudaSetDevice(dev) != cudaSuccess)
        return -1;
    void *h = NULL, *d = NULL, *h2 = NULL, *d2 = NULL;
    cudaEvent_t a, b;
    cudaStream_t s1 = NULL, s2 = NULL;
    if (cudaHostAlloc(&h, n, cudaHostAllocDefault) != cudaSuccess)
        return -1;
    if (cudaMalloc(&d, n) != cudaSuccess) {
        cudaFreeHost(h);
        return -1;
    }
    if (duplex && (cudaHostAlloc(&h2, n, cudaHostAllocDefault) != cudaSuccess ||
                   cudaMalloc(&d2, n) != cudaSuccess ||
                   cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
                   cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess)) {
        cudaFreeHost(h);
        cudaFree(d);
        if (h2)
            cudaFreeHost(h2);
        if (d2)
            cudaFree(d2);
        return -1;
    }
    memset(h, 1, n);
    if (h2)
        memset(h2, 2, n);
    cudaEventCreate(&a);
    cudaEventCreate(&b);
    double up[BT_RUNS], down[BT_RUNS], both[BT_RUNS];
    for (int i = -BT_WARM; i < BT_RUNS; i++) {
        float ms1 = 0, ms2 = 0, ms3 = 0;
        cudaEventRecord(a, 0);
        cudaMemcpy(d, h, n, cudaMemcpyHostToDevice);
        cudaEventRecord(b, 0);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms1, a, b);
        cudaEventRecord(a, 0);
        cudaMemcpy(h, d, n, cudaMemcpyDeviceToHost);
        cudaEventRecord(b, 0);
        cudaEventSynchronize(b);
        cudaEventElapsedTime(&ms2, a, b);
        if (duplex) {
            const double t0 = bt_now_ms();
            cudaMemcpyAsync(d, h, n, cudaMemcpyHostToDevice, s1);
            cudaMemcpyAsync(h2, d2, n, cudaMemcpyDeviceToHost, s2);
            cudaStreamSynchronize(s1);
            cudaStreamSynchronize(s2);
            ms3 = (float)(bt_now_ms() - t0);
        }
        if (i >= 0) {
            up[i] = (double)n / (ms1 * 1e6);
            down[i] = (double)n / (ms2 * 1e6);
            both[i] = duplex ? (double)n / (ms3 * 1e6) : 0;
        }
    }
    *h2d = median(up, BT_RUNS);
    *d2h = median(down, BT_RUNS);
    if (duplex) {
        *duplex = median(both, BT_RUNS);
        cudaStreamDestroy(s1);
        cudaStreamDestroy(s2);
        cudaFreeHost(h2);
        cudaFree(d2);
    }
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    cudaFree(d);
    cudaFreeHost(h);
    return cudaSetDevice(0) == cudaSuccess ? 0 : -1;
}

static int pinned_bandwidth(int dev, double *h2d, double *d2h)
{
    return pinned_bandwidth2(dev, h2d, d2h, NULL);
}

/* An RGB image in pageable (ic_image_create) or pinned memory. */
typedef struct bt_img {
    ic_image im;
    void *pin;
} bt_img;

static int bt_alloc(bt_img *b, int w, int h, int pinned)
{
    memset(b, 0, sizeof *b);
    if (!pinned)
        return ic_image_create(&b->im, w, h, 3, IC_AOS) == IC_OK ? 0 : -1;
    const size_t n = (size_t)w * (size_t)h * 3u;
    /* portable: page-locked for every device's context (several GPUs) */
    if (cudaHostAlloc(&b->pin, n, cudaHostAllocPortable) != cudaSuccess)
        return -1;
    memset(b->pin, 0, n);
    return ic_image_wrap(&b->im, (uint8_t *)b->pin, w, h, 3, IC_AOS, 0) == IC_OK ? 0 : -1;
}

static void bt_free(bt_img *b)
{
    if (b->pin)
        cudaFreeHost(b->pin);
    else
        ic_image_free(&b->im);
    memset(b, 0, sizeof *b);
}

/* Median wall time of ic_convolve on a context made with options o. */
static double time_filter_opts(const char *backend, const ic_context_options *o, int pinned, int w,
                               int h, const ic_kernel *k)
{
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, o) != IC_OK)
        return -1;
    bt_img src, dst;
    double t[BT_RUNS], r = -1;
    if (bt_alloc(&src, w, h, pinned) == 0 && bt_alloc(&dst, w, h, pinned) == 0 &&
        ic_image_chart(&src.im, 1) == IC_OK) {
        int ok = 1;
        for (int i = -BT_WARM; i < BT_RUNS && ok; i++) {
            const double t0 = bt_now_ms();
            ok = ic_convolve(ctx, &src.im, &dst.im, k, NULL) == IC_OK;
            if (i >= 0)
                t[i] = bt_now_ms() - t0;
        }
        if (ok)
            r = median(t, BT_RUNS);
    }
    bt_free(&src);
    bt_free(&dst);
    ic_context_free(ctx);
    return r;
}

/* Median wall time of ic_convolve on one device with the given transfer mode. */
static double time_filter(const char *backend, int transfer, int pinned, int w, int h,
                          const ic_kernel *k)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.transfer = transfer;
    return time_filter_opts(backend, &o, pinned, w, h, k);
}

/* The several-GPU table: 4K and 8K, backend cuda, async, pinned images, one
 * device against all n (n >= 2). Returns 0, or 1 when a run failed. */
static int bench_multi(int n, const ic_kernel *k, FILE *md, FILE *json)
{
    if (n > IC_MAX_DEVICES)
        n = IC_MAX_DEVICES;
    double up[IC_MAX_DEVICES], down[IC_MAX_DEVICES], sum_bw = 0;
    for (int d = 0; d < n; d++) {
        if (pinned_bandwidth(d, &up[d], &down[d]) != 0)
            return 1;
        /* a share's time is set by its slower direction */
        sum_bw += up[d] < down[d] ? up[d] : down[d];
    }
    if (md) {
        fprintf(md,
                "### Several GPUs: host->host, RGB, 3x3 Gaussian, backend cuda, async, pinned "
                "images, %d devices\n\nPinned bandwidth per device (host->device / "
                "device->host, GB/s):",
                n);
        for (int d = 0; d < n; d++)
            fprintf(md, "%s device %d %.1f / %.1f", d ? "," : "", d, up[d], down[d]);
        fprintf(md,
                ". Split = ic_context_options.n_devices = %d: the image cut into %d row "
                "shares filtered concurrently, one per device. Ideal floor = bytes / the "
                "sum over devices of their slower direction's bandwidth (every link "
                "carrying its share, uploads and downloads overlapped). Median of %d "
                "runs, milliseconds.\n\n"
                "| size | MB each way | 1 device | %d devices | speed-up | ideal floor | "
                "split / floor |\n|---|---|---|---|---|---|---|\n",
                n, n, BT_RUNS, n);
    }
    if (json) {
        fprintf(json, ", \"devices\": %d, \"device_pinned_gbs\": [", n);
        for (int d = 0; d < n; d++)
            fprintf(json, "%s{\"h2d\": %.2f, \"d2h\": %.2f}", d ? ", " : "", up[d], down[d]);
        fprintf(json, "], \"multi_rows\": [");
    }
    static const struct {
        const char *name;
        int w, h;
    } sizes[] = {{"4K", 3840, 2160}, {"8K", 7680, 4320}};
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int w = sizes[i].w, h = sizes[i].h;
        const double bytes = (double)w * h * 3;
        ic_context_options o;
        memset(&o, 0, sizeof o);
        o.transfer = IC_TRANSFER_ASYNC;
        const double one = time_filter_opts("cuda", &o, 1, w, h, k);
        o.n_devices = n;
        for (int d = 0; d < n; d++)
            o.devices[d] = d;
        const double split = time_filter_opts("cuda", &o, 1, w, h, k);
        const double floor = bytes / (sum_bw * 1e6);
        if (one < 0 || split < 0)
            rc = 1;
        if (md)
            fprintf(md, "| %s | %.2f | %.3f | %.3f | %.2fx | %.3f | %.2fx |\n", sizes[i].name,
                    bytes / 1e6, one, split, split > 0 ? one / split : 0.0, floor, split / floor);
        if (json)
            fprintf(json,
                    "%s{\"size\": \"%s\", \"width\": %d, \"height\": %d, \"one_device_ms\": "
                    "%.4f, \"split_ms\": %.4f, \"ideal_floor_ms\": %.4f}",
                    i ? ", " : "", sizes[i].name, w, h, one, split, floor);
    }
    if (json)
        fprintf(json, "]");
    if (md)
        fprintf(md, "\n");
    return rc;
}

/* Pageable host -> device -> pageable host copies of n bytes (no kernel). */
static double time_pageable_copies(size_t n)
{
    uint8_t *a = malloc(n), *b = malloc(n);
    void *d = NULL;
    double t[BT_RUNS], r = -1;
    if (a && b && cudaMalloc(&d, n) == cudaSuccess) {
        memset(a, 7, n);
        memset(b, 0, n);
        for (int i = -BT_WARM; i < BT_RUNS; i++) {
            const double t0 = bt_now_ms();
            cudaMemcpy(d, a, n, cudaMemcpyHostToDevice);
            cudaMemcpy(b, d, n, cudaMemcpyDeviceToHost);
            if (i >= 0)
                t[i] = bt_now_ms() - t0;
        }
        r = median(t, BT_RUNS);
    }
    cudaFree(d);
    free(a);
    free(b);
    return r;
}

int ic_bench_transfer(FILE *md, FILE *json)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess || n < 1) {
        if (md)
            fprintf(md, "transfer benchmark: no CUDA device\n");
        return 77;
    }
    const char *backend = getenv("IC_BENCH_TRANSFER_BACKEND");
    if (!backend || !backend[0])
        backend = "cuda";
    struct cudaDeviceProp prop;
    memset(&prop, 0, sizeof prop);
    cudaGetDeviceProperties(&prop, 0);
    double h2d = 0, d2h = 0, duplex = 0;
    if (pinned_bandwidth2(0, &h2d, &d2h, &duplex) != 0)
        return 1;
    ic_kernel k;
    if (ic_kernel_parse(&k, "1 2 1; 2 4 2; 1 2 1 / 16") != IC_OK)
        return 1;
    static const struct {
        const char *name;
        int w, h;
    } sizes[] = {{"480p", 640, 480}, {"720p", 1280, 720},  {"1080p", 1920, 1080},
                 {"4K", 3840, 2160}, {"24MP", 6000, 4000}, {"8K", 7680, 4320}};
    if (md) {
        fprintf(md,
                "### Host->host, RGB, 3x3 Gaussian, backend %s (%s)\n\n"
                "Pinned bandwidth measured in this run: host->device %.1f GB/s, device->host "
                "%.1f GB/s, and %.1f GB/s each way when both run at once (two streams, 128 MiB "
                "each). Floor = bytes / bandwidth of the larger direction (upload and "
                "download fully overlapped); duplex floor = bytes / the "
                "both-at-once bandwidth (what this link can do when uploads and downloads do "
                "overlap); serial floor = both directions one after the other. Default = "
                "ic_convolve with default options (IC_TRANSFER_AUTO) on pageable images, what "
                "a library caller or the CLI gets (target: 24MP within 1.5x of the floor). "
                "Median of %d runs, milliseconds.\n\n"
                "| size | MB each way | floor | duplex floor | serial floor | default | default "
                "/ floor | sync | async | async, pinned images | sync, pinned images | pageable "
                "copies only | async pinned / floor | async pinned / duplex floor |\n"
                "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
                backend, prop.name, h2d, d2h, duplex, BT_RUNS);
    }
    if (json)
        fprintf(json,
                "{\"device\": \"%s\", \"backend\": \"%s\", \"pinned_h2d_gbs\": %.2f, "
                "\"pinned_d2h_gbs\": %.2f, \"pinned_duplex_gbs\": %.2f, \"rows\": [",
                prop.name, backend, h2d, d2h, duplex);
    int rc = 0;
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        const int w = sizes[i].w, h = sizes[i].h;
        const double bytes = (double)w * h * 3;
        const double f_up = bytes / (h2d * 1e6), f_down = bytes / (d2h * 1e6);
        const double floor = f_up > f_down ? f_up : f_down, serial = f_up + f_down;
        const double dfloor = duplex > 0 ? bytes / (duplex * 1e6) : -1;
        const double deflt = time_filter(backend, IC_TRANSFER_AUTO, 0, w, h, &k);
        const double sync = time_filter(backend, IC_TRANSFER_SYNC, 0, w, h, &k);
        const double async = time_filter(backend, IC_TRANSFER_ASYNC, 0, w, h, &k);
        const double async_pin = time_filter(backend, IC_TRANSFER_ASYNC, 1, w, h, &k);
        const double sync_pin = time_filter(backend, IC_TRANSFER_SYNC, 1, w, h, &k);
        const double copies = time_pageable_copies((size_t)bytes);
        if (deflt < 0 || sync < 0 || async < 0 || async_pin < 0 || sync_pin < 0 || copies < 0)
            rc = 1;
        if (md)
            fprintf(md,
                    "| %s | %.2f | %.3f | %.3f | %.3f | %.3f | %.2fx | %.3f | %.3f | %.3f | %.3f | "
                    "%.3f | %.2fx | %.2fx |\n",
                    sizes[i].name, bytes / 1e6, floor, dfloor, serial, deflt, deflt / floor, sync,
                    async, async_pin, sync_pin, copies, async_pin / floor, async_pin / dfloor);
        if (json)
            fprintf(json,
                    "%s{\"size\": \"%s\", \"width\": %d, \"height\": %d, \"floor_ms\": %.4f, "
                    "\"duplex_floor_ms\": %.4f, "
                    "\"serial_floor_ms\": %.4f, \"default_ms\": %.4f, \"sync_ms\": %.4f, "
                    "\"async_ms\": %.4f, "
                    "\"async_pinned_ms\": %.4f, \"sync_pinned_ms\": %.4f, "
                    "\"pageable_copies_ms\": %.4f}",
                    i ? ", " : "", sizes[i].name, w, h, floor, dfloor, serial, deflt, sync, async,
                    async_pin, sync_pin, copies);
    }
    if (json)
        fprintf(json, "]");
    if (md)
        fprintf(md, "\n");
    if (n >= 2 && bench_multi(n, &k, md, json) != 0)
        rc = 1;
    if (json)
        fprintf(json, "}\n");
    ic_kernel_free(&k);
    return rc;
}
#endif
