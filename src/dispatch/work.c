/*
 * work.c - an estimate of a filter's arithmetic, for callers that bound the
 * work of a job before they decode its image (the CLI's --max-work, a
 * service over untrusted files).
 *
 * A kernel that separates at a useful rank r runs as r row passes and r
 * column passes, r * (kw + kh) multiply-adds a sample; any other as kw * kh.
 * With KissFFT built in, a kernel the cpu backend's FFT path would take at
 * either sample depth (core/fft_model.c) may instead cost that path's
 * transforms, counted at FFT_MACS multiply-adds a butterfly. Backends choose
 * by their own cost models, so the cheapest is counted: the estimate never
 * exceeds what a backend runs.
 * Gaussian and box kernels count their constant-time sliding sums.
 */
#include <stdlib.h>

#include "core/fft_model.h"
#include "core/kernel_internal.h"
#include "imgconv.h"

/* Multiply-adds a butterfly of the FFT model counts at the least (a radix-2
 * step is 5 flops a point: 2.5; loads and stores counted as free). */
#define FFT_MACS 2.0

/* a * b, saturating at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

#ifdef IC_HAVE_KISSFFT
/* Multiply-adds of the cpu FFT path for this job, or 0 when that path could
 * turn it down: weights on exact ties, or a predicted error over the 16-bit
 * limit at the largest tile (the sample depth is not known here). */
static double fft_work(int width, int height, int channels, const ic_kernel *k)
{
    const size_t n = (size_t)k->width * (size_t)k->height;
    float *w = malloc(n * sizeof *w);
    if (!w)
        return 0;
    for (size_t t = 0; t < n; t++)
        w[t] = (float)(k->coef[t] / k->divisor);
    const int ok = !ic__weights_dyadic(w, n, 65536.0f) &&
                   ic__fft_error(w, k->width, k->height, IC_FFT_MAX_N, IC_FFT_MAX_N, 32768.0f,
                                 32768.0f) <= ic__fft_error_limit(1);
    free(w);
    if (!ok)
        return 0;
    ic_fft_geom g;
    ic__fft_geom(width, height, k->width, k->height, channels, 1, &g);
    return g.nx ? FFT_MACS * g.butterflies : 0;
}
#endif

uint64_t ic_convolve_work(int width, int height, int channels, const ic_kernel *k)
{
    if (width <= 0 || height <= 0 || channels <= 0 || !k || k->width <= 0 || k->height <= 0)
        return 0;
    const uint64_t samples = mul_sat((uint64_t)width * (uint64_t)height, (uint64_t)channels);
    uint64_t taps = (uint64_t)k->width * (uint64_t)k->height;
    if (k->blur) {
        /* sliding sums whatever the size (docs/design/blur.md): a box's two
         * running sums, or a gaussian's few cosine terms in two passes */
        const uint64_t slide = k->blur == IC_BLUR_BOX ? 4u : 64u;
        if (slide < taps)
            return mul_sat(samples, slide);
    }
    double fft = 0;
#ifdef IC_HAVE_KISSFFT
    fft = fft_work(width, height, channels, k);
#endif
    /* the factors only where a rank-1 pass could beat both others (an SVD
     * of a large kernel costs more than the FFT it would lose to) */
    const uint64_t rank1 = (uint64_t)(k->width + k->height);
    if (k->width > 1 && k->height > 1 && rank1 < taps &&
        !(fft > 0 && fft <= (double)samples * rank1)) {
        ic_factors f = {0};
        if (ic_kernel_factor(k, 0.0, 0, &f) == IC_OK && f.rank > 0) {
            const uint64_t sep = (uint64_t)f.rank * (uint64_t)(k->width + k->height);
            taps = sep < taps ? sep : taps;
        }
        ic_factors_free(&f);
    }
    if (k->magnitude) /* the kernel and its transpose */
        taps *= 2u;
    const uint64_t work = mul_sat(samples, taps);
    return fft > 0 && fft < (double)work ? (uint64_t)fft : work;
}
