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

static const char *const tunings[] = {NULL, "method=direct", "method=sep", "method=global",
                                      "method=fft"};
#define N_TUNINGS ((int)(sizeof tunings / sizeof tunings[0]))

static const char *const kernels[] = {"gaussian:3", "gaussian:9", "box:5", "sobel-x", "unsharp:7"};
#define N_KERNELS ((int)(sizeof kernels / sizeof kernels[0]))

/* src filtered on device images into a host copy of the result, *dres
 * (created, IC_F32, src's layout). */
static ic_status run_device(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                            const ic_params *p, ic_image *dres)
{
    const size_t bytes = ic_image_size_bytes(src);
    void *ds = NULL, *dd = NULL;
    ic_status st =
        ic_image_create_type(dres, src->width, src->height, src->channels, src->layout, IC_F32);
    if (st != IC_OK)
        return st;
    if (cudaMalloc(&ds, bytes) != cudaSuccess || cudaMalloc(&dd, bytes) != cudaSuccess ||
        cudaMemcpy(ds, src->data, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        st = IC_ERR_DEVICE;
    } else {
        ic_image s, d;
        st = ic_image_wrap_device_type(&s, ds, src->width, src->height, src->channels, src->layout,
                                       src->pitch, IC_F32, 0, NULL);
        if (st == IC_OK)
            st = ic_image_wrap_device_type(&d, dd, src->width, src->height, src->channels,
                                           src->layout, src->pitch, IC_F32, 0, NULL);
        if (st == IC_OK)
            st = ic_convolve(ctx, &s, &d, k, p);
        for (int pl = 0; st == IC_OK && pl < (src->layout == IC_SOA ? src->channels : 1); pl++)
            if (cudaMemcpy2D(ic_image_at(dres, 0, 0, pl), dres->pitch,
                             (uint8_t *)dd + (size_t)pl * src->pitch * (size_t)src->height,
                             src->pitch, ic_image_row_bytes(src), (size_t)src->height,
                             cudaMemcpyDeviceToHost) != cudaSuccess)
                st = IC_ERR_DEVICE;
    }
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
    ic_params_default(&p);
    p.border = (ic_border)ict_below(&r, 5);
    p.border_value = (float)(ict_uniform(&r) * 2.0 - 0.5);
    p.bias = ict_below(&r, 3) == 0 ? (float)(ict_uniform(&r) - 0.5) : 0.0f;
    p.correlate = (int)ict_below(&r, 2);
    p.alpha = (ic_alpha)ict_below(&r, 4);
    const ic_alpha alpha = ict_effective_alpha(&k, ch, p.alpha);
    ic_image src, dst, dres;
    memset(&dres, 0, sizeof dres);
    if (ic_image_create_type(&src, w, h, ch, layout, IC_F32) != IC_OK ||
        ic_image_create_type(&dst, w, h, ch, layout, IC_F32) != IC_OK) {
        printf("FAIL %s case %d: out of memory\n", name, i);
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
    int fails = 0;
    st = ic_convolve(ctx, &src, &dst, &k, &p);
    if (st != IC_OK) {
        printf("FAIL %s: host images: %s (%s)\n", what, ic_status_str(st), ic_last_error());
        fails = 1;
    } else if (ict_f32_check(&src, &dst, &k, &p, alpha, what, worst) != 0) {
        fails = 1;
    } else if ((st = run_device(ctx, &src, &k, &p, &dres)) != IC_OK) {
        printf("FAIL %s: device images: %s (%s)\n", what, ic_status_str(st), ic_last_error());
        fails = 1;
    } else if (!same_bits(&dst, &dres)) {
        printf("FAIL %s: device images differ from host images\n", what);
        fails = 1;
    }
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_image_free(&dres);
    ic_kernel_free(&k);
    return fails;
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
        printf("  %s: %d cases, %d failed, largest error %.3f of the tolerance\n", name, ncases, f,
               worst);
        fails += f;
        ic_context_free(ctx);
    }
    fails += run_refusals();
    printf("%s\n", fails ? "FAILED" : "all passed");
    return fails ? 1 : 0;
}

#endif /* IC_HAVE_CUDA */
