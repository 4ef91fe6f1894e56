/*
 * test_gpu_f32.c - float32 samples (IC_F32) on the GPU: the `cuda` fast path
 * filters them with its direct, separable and global methods (the planner's
 * subset; rows, fft and tensor are 8-bit only and a forced one falls back to
 * the planner's choice), host images and device images alike; the strategy
 * backends refuse them with IC_ERR_UNSUPPORTED naming themselves.
 *
 * Random cases (sizes 1..130, images smaller than the kernel, 1..4 channels,
 * AoS and SoA, every border mode, named and random odd kernels up to 9x9,
 * bias, convolution and correlation, every alpha mode) under auto and each
 * forced method are checked sample by sample against the float64 reference
 * of tests/support/f32_check.h within (n + 20) * 2^-24 * sum |w x|; the same
 * job on device images (ic_image_wrap_device_type, device -> device) must give
 * the host run's samples bit for bit. NaN and infinities propagate as on the
 * CPU (IEEE).
 *
 * The device images start 0, 4, 8 or 12 bytes into their allocations and have
 * tight rows or rows rounded up to 16 bytes plus 0, 4, 8, 12 or 64, so that
 * the fast path's float32 tiles take both their 16-byte vector loads and
 * stores and their scalar ones; wider images (264..600 x 40..200, 3x3, 9x9 and the other kernels)
 * add tiles wholly inside the image, where no sample is border-mapped. Every
 * output is poisoned (NaN) before the run, and on the device every byte
 * outside the image's rows (the offset, the row padding, a guard past the
 * end) must still hold its poison afterwards.
 *
 * Without a GPU: exit 77 (SKIPPED). IC_TEST_QUICK=1 runs a few small cases.
 * ICT_SEED=N and ICT_CASES=N narrow a run.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "f32_check.h"
#include "oracle.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xF32C0DAull
#define CASES 60
#define QUICK_CASES 6
#define MAX_DIM 130
#define WIDE_CASES 8
#define QUICK_WIDE_CASES 2
#define GUARD 64    /* poisoned bytes past a device image */
#define POISON 0xFF /* every byte: 0xFFFFFFFF is a NaN */

/* Device image placements: start offsets, and row pitches: a row's bytes as
 * they are (TIGHT) or rounded up to 16 plus 0, 4, 8, 12 or 64 bytes. The fast
 * path's 16-byte loads and stores need a 16-byte multiple of both. */
#define TIGHT ((size_t)-1)
static const size_t offs[] = {0, 4, 8, 12};
static const size_t pads[] = {TIGHT, 0, 4, 8, 12, 64};
#define N_OFFS ((int)(sizeof offs / sizeof offs[0]))
#define N_PADS ((int)(sizeof pads / sizeof pads[0]))

/* auto, each method forced, and two forced tile shapes: one channel per
 * block (AoS planes scattered one at a time, strided stores) and the
 * shortest tiles, so that smaller wide images still hold inner tiles */
static const char *const tunings[] = {NULL,
                                      "method=direct",
                                      "method=sep",
                                      "method=global",
                                      "method=fft",
                                      "method=direct,tile-rows=8,tile-channels=1",
                                      "method=sep,tile-rows=8"};
#define N_TUNINGS ((int)(sizeof tunings / sizeof tunings[0]))

static const char *const kernels[] = {"gaussian:3", "gaussian:9", "box:5", "sobel-x", "unsharp:7"};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

/* Sets every sample of a host IC_F32 image to NaN, so that one the run does
 * not write fails the float64 check. */
static void poison_host(ic_image *im)
{
    const size_t rows = (size_t)im->height * (im->layout == IC_SOA ? (size_t)im->channels : 1);
    for (size_t y = 0; y < rows; y++)
        memset((uint8_t *)im->data + y * im->pitch, POISON, ic_image_row_bytes(im));
}

/* The pitch of rows of rb bytes with padding `pad` (one of pads). */
static size_t pitch_of(size_t rb, size_t pad)
{
    return pad == TIGHT ? rb : (rb + 15) / 16 * 16 + pad;
}

/* src filtered on device images into a host copy of the result, *dres
 * (created, IC_F32, src's layout). The device images start `off` bytes into
 * their allocations, have rows of pitch_of(row bytes, pad) and are followed by
 * GUARD bytes; the destination's allocation is poisoned first, and every byte
 * of it outside the image's rows must keep its poison (else IC_ERR_INTERNAL). */
static ic_status run_device(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                            const ic_params *p, ic_image *dres, size_t off, size_t pad)
{
    const size_t nrows = (size_t)src->height * (src->layout == IC_SOA ? src->channels : 1);
    const size_t rb = ic_image_row_bytes(src), pitch = pitch_of(rb, pad);
    const size_t bytes = off + pitch * nrows + GUARD;
    void *ds = NULL, *dd = NULL;
    uint8_t *back = NULL;
    ic_status st =
        ic_image_create_type(dres, src->width, src->height, src->channels, src->layout, IC_F32);
    if (st != IC_OK)
        return st;
    if (cudaMalloc(&ds, bytes) != cudaSuccess || cudaMalloc(&dd, bytes) != cudaSuccess ||
        cudaMemset(ds, POISON, bytes) != cudaSuccess ||
        cudaMemset(dd, POISON, bytes) != cudaSuccess ||
        cudaMemcpy2D((uint8_t *)ds + off, pitch, src->data, src->pitch, rb, nrows,
                     cudaMemcpyHostToDevice) != cudaSuccess ||
        !(back = (uint8_t *)malloc(bytes))) {
        st = IC_ERR_DEVICE;
    } else {
        ic_image s, d;
        st = ic_image_wrap_device_type(&s, (uint8_t *)ds + off, src->width, src->height,
                                       src->channels, src->layout, pitch, IC_F32, 0, NULL);
        if (st == IC_OK)
            st = ic_image_wrap_device_type(&d, (uint8_t *)dd + off, src->width, src->height,
                                           src->channels, src->layout, pitch, IC_F32, 0, NULL);
        if (st == IC_OK)
            st = ic_convolve(ctx, &s, &d, k, p);
        if (st == IC_OK && cudaMemcpy(back, dd, bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
            st = IC_ERR_DEVICE;
        for (size_t i = 0; st == IC_OK && i < bytes; i++) {
            const int inside = i >= off && i < off + pitch * nrows && (i - off) % pitch < rb;
            if (!inside && back[i] != POISON) {
                printf("  byte %zu of the destination's allocation (offset %zu, pitch %zu) was "
                       "written outside the image\n",
                       i, off, pitch);
                st = IC_ERR_INTERNAL;
            }
        }
        for (size_t y = 0; st == IC_OK && y < nrows; y++)
            memcpy((uint8_t *)dres->data + y * dres->pitch, back + off + y * pitch, rb);
    }
    free(back);
    cudaFree(ds);
    cudaFree(dd);
    return st;
}

/* 1 when two IC_F32 images hold the same bits in every sample. */
static int same_bits(const ic_image *a, const ic_image *b)
{
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++)
            for (int c = 0; c < a->channels; c++)
                if (memcmp(ic_image_at(a, x, y, c), ic_image_at(b, x, y, c), 4) != 0)
                    return 0;
    return 1;
}

/* Runs one job: on host images (output poisoned first), checked against the
 * float64 reference, then on device images at each of the nplace placements
 * (offs[place[2j]], pads[place[2j+1]]), each of which must give the host
 * run's samples bit for bit. Frees src and k. */
static int check_job(ic_context *ctx, const char *what, ic_image *src, ic_kernel *k,
                     const ic_params *p, ic_alpha alpha, const int *place, int nplace,
                     double *worst)
{
    ic_image dst, dres;
    memset(&dres, 0, sizeof dres);
    if (ic_image_create_type(&dst, src->width, src->height, src->channels, src->layout, IC_F32) !=
        IC_OK) {
        printf("FAIL %s: out of memory\n", what);
        ic_image_free(src);
        ic_kernel_free(k);
        return 1;
    }
    poison_host(&dst);
    int fails = 0;
    ic_status st = ic_convolve(ctx, src, &dst, k, p);
    if (st != IC_OK) {
        printf("FAIL %s: host images: %s (%s)\n", what, ic_status_str(st), ic_last_error());
        fails = 1;
    } else if (ict_f32_check(src, &dst, k, p, alpha, what, worst) != 0) {
        fails = 1;
    }
    for (int j = 0; !fails && j < nplace; j++) {
        const size_t off = offs[place[2 * j]], pad = pads[place[2 * j + 1]];
        const size_t pitch = pitch_of(ic_image_row_bytes(src), pad);
        if ((st = run_device(ctx, src, k, p, &dres, off, pad)) != IC_OK) {
            printf("FAIL %s: device images (offset %zu, pitch %zu): %s (%s)\n", what, off, pitch,
                   ic_status_str(st), ic_last_error());
            fails = 1;
        } else if (!same_bits(&dst, &dres)) {
            printf("FAIL %s: device images (offset %zu, pitch %zu) differ from host images\n", what,
                   off, pitch);
            fails = 1;
        }
        ic_image_free(&dres);
    }
    ic_image_free(src);
    ic_image_free(&dst);
    ic_kernel_free(k);
    return fails;
}

/* Random parameters: border (and its value), bias, convolution or
 * correlation, alpha. */
static void random_params(ict_rng *r, ic_params *p)
{
    ic_params_default(p);
    p->border = (ic_border)ict_below(r, 5);
    p->border_value = (float)(ict_uniform(r) * 2.0 - 0.5);
    p->bias = ict_below(r, 3) == 0 ? (float)(ict_uniform(r) - 0.5) : 0.0f;
    p->correlate = (int)ict_below(r, 2);
    p->alpha = (ic_alpha)ict_below(r, 4);
}

static int run_case(ic_context *ctx, const char *name, uint64_t seed, int i, int max_dim,
                    double *worst)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed, (uint64_t)i));
    const int small = ict_below(&r, 6) == 0;
    const int w = small ? ict_range(&r, 1, 4) : ict_range(&r, 1, max_dim);
    const int h = small ? ict_range(&r, 1, 4) : ict_range(&r, 1, max_dim);
    const int ch = ict_range(&r, 1, 4);
    const ic_layout layout = ict_below(&r, 2) ? IC_SOA : IC_AOS;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    const uint32_t kind = ict_below(&r, 8);
    ic_status st = kind < N_KERNELS ? ic_kernel_parse(&k, kernels[kind])
                                    : ict_kernel_random(&k, &r, 1 + 2 * ict_range(&r, 0, 4),
                                                        1 + 2 * ict_range(&r, 0, 4),
                                                        (int)ict_below(&r, ICT_K_COUNT));
    if (st != IC_OK) {
        printf("FAIL %s case %d: kernel: %s\n", name, i, ic_last_error());
        return 1;
    }
    ic_params p;
    random_params(&r, &p);
    const ic_alpha alpha = ict_effective_alpha(&k, ch, p.alpha);
    const int place[2] = {(int)ict_below(&r, N_OFFS), (int)ict_below(&r, N_PADS)};
    ic_image src;
    if (ic_image_create_type(&src, w, h, ch, layout, IC_F32) != IC_OK) {
        printf("FAIL %s case %d: out of memory\n", name, i);
        ic_kernel_free(&k);
        return 1;
    }
    ict_f32_random(&src, &r, alpha == IC_ALPHA_PREMULTIPLY);
    char what[512];
    snprintf(what, sizeof what,
             "%s case %d (seed %llu): %dx%dx%d %s kernel %s %dx%d border %s value %g bias %g "
             "%s alpha %s",
             name, i, (unsigned long long)seed, w, h, ch, ict_layout_str(layout), k.name, k.width,
             k.height, ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlate" : "convolve", ict_alpha_str(alpha));
    return check_job(ctx, what, &src, &k, &p, alpha, place, 1, worst);
}

/* Wide images, so that tiles lie wholly inside the image (no border
 * mapping), at six placements: offset 0 with 16-byte rows (the 16-byte
 * loads and stores), offset 4 with 16-byte rows (a misaligned base: the
 * scalar ones), offsets 8 and 12 with random pitches, offset 0 with 64 bytes
 * of padding and offset 0 with tight rows; 3x3 and 9x9 in turn with the other
 * kernels and random odd non-square ones. */
static int run_wide_case(ic_context *ctx, const char *name, uint64_t seed, int i, double *worst)
{
    static const char *const wide_kernels[] = {"gaussian:3", "gaussian:9", "box:3",
                                               "sobel-x",    "unsharp:7",  "gaussian:5"};
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed ^ 0x5EEDF32ull, (uint64_t)i));
    const int w = ict_range(&r, 264, 600), h = ict_range(&r, 40, 200);
    const int ch = ict_range(&r, 1, 4);
    const ic_layout layout = ict_below(&r, 2) ? IC_SOA : IC_AOS;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    const int nk = (int)(sizeof wide_kernels / sizeof wide_kernels[0]);
    const ic_status st =
        i % 3 == 2 ? ict_kernel_random(&k, &r, 1 + 2 * ict_range(&r, 0, 4),
                                       1 + 2 * ict_range(&r, 0, 4), (int)ict_below(&r, ICT_K_COUNT))
                   : ic_kernel_parse(&k, wide_kernels[(i + i / 3) % nk]);
    if (st != IC_OK) {
        printf("FAIL %s wide case %d: kernel: %s\n", name, i, ic_last_error());
        return 1;
    }
    ic_params p;
    random_params(&r, &p);
    const ic_alpha alpha = ict_effective_alpha(&k, ch, p.alpha);
    const int r1 = (int)ict_below(&r, N_PADS), r2 = (int)ict_below(&r, N_PADS);
    const int place[][2] = {{0, 1}, {1, 1}, {2, r1}, {3, r2}, {0, N_PADS - 1}, {0, 0}};
    ic_image src;
    if (ic_image_create_type(&src, w, h, ch, layout, IC_F32) != IC_OK) {
        printf("FAIL %s wide case %d: out of memory\n", name, i);
        ic_kernel_free(&k);
        return 1;
    }
    ict_f32_random(&src, &r, alpha == IC_ALPHA_PREMULTIPLY);
    char what[512];
    snprintf(what, sizeof what,
             "%s wide case %d (seed %llu): %dx%dx%d %s kernel %s %dx%d border %s value %g "
             "bias %g %s alpha %s",
             name, i, (unsigned long long)seed, w, h, ch, ict_layout_str(layout), k.name, k.width,
             k.height, ict_border_str(p.border), (double)p.border_value, (double)p.bias,
             p.correlate ? "correlate" : "convolve", ict_alpha_str(alpha));
    return check_job(ctx, what, &src, &k, &p, alpha, &place[0][0],
                     (int)(sizeof place / sizeof place[0]), worst);
}

/* The strategy backends refuse float32 with one line naming them. */
static int run_refusals(void)
{
    int fails = 0;
    ic_image a, b;
    ic_kernel k;
    if (ic_image_create_type(&a, 8, 8, 1, IC_AOS, IC_F32) != IC_OK ||
        ic_image_create_type(&b, 8, 8, 1, IC_AOS, IC_F32) != IC_OK ||
        ic_kernel_parse(&k, "box:3") != IC_OK)
        return 1;
    for (int i = 0; i < ic_backend_count(); i++) {
        ic_backend_info info;
        char why[160];
        if (ic_backend_get(i, &info) != IC_OK || strncmp(info.name, "cuda-", 5) != 0 ||
            !ict_backend_usable(info.name, why, sizeof why))
            continue;
        const ic_status st = ic_filter(&a, &b, &k, NULL, info.name);
        if (st != IC_ERR_UNSUPPORTED || !strstr(ic_last_error(), "float32") ||
            !strstr(ic_last_error(), info.name)) {
            printf("FAIL %s: float32 gave %s (%s), expected a refusal naming it\n", info.name,
                   ic_status_str(st), ic_last_error());
            fails++;
        }
    }
    ic_image_free(&a);
    ic_image_free(&b);
    ic_kernel_free(&k);
    printf("  strategy backends refuse float32: %d failed\n", fails);
    return fails;
}

int main(void)
{
    char why[160];
    if (!ict_backend_usable("cuda", why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 77;
    }
    int quick, ncases;
    uint64_t seed;
    ict_run_env(&quick, &seed, SEED, &ncases, CASES, QUICK_CASES);
    const int max_dim = quick ? 40 : MAX_DIM;
    printf("test_gpu_f32: seed %llu, %d cases per tuning\n", (unsigned long long)seed, ncases);
    int fails = 0;
    for (int t = 0; t < N_TUNINGS; t++) {
        ic_context *ctx = ict_context_tuned("cuda", tunings[t], NULL);
        if (!ctx) {
            printf("FAIL cuda [%s]: context: %s\n", tunings[t] ? tunings[t] : "auto",
                   ic_last_error());
            fails++;
            continue;
        }
        char name[64];
        snprintf(name, sizeof name, "cuda[%s]", tunings[t] ? tunings[t] : "auto");
        double worst = 0;
        int f = 0;
        for (int i = 0; i < ncases && f < 3; i++)
            f += run_case(ctx, name, seed, i, max_dim, &worst);
        const int nwide = quick ? QUICK_WIDE_CASES : WIDE_CASES;
        for (int i = 0; i < nwide && f < 3; i++)
            f += run_wide_case(ctx, name, seed, i, &worst);
        printf("  %s: %d + %d wide cases, %d failed, largest error %.3f of the tolerance\n", name,
               ncases, nwide, f, worst);
        fails += f;
        ic_context_free(ctx);
    }
    fails += run_refusals();
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}

#endif /* IC_HAVE_CUDA */
