/*
 * work.c - an estimate of a filter's arithmetic, for callers that bound the
 * work of a job before they decode its image (the CLI's --max-work, a
 * service over untrusted files).
 *
 * A kernel that separates at a useful rank r runs as r row passes and r
 * column passes, r * (kw + kh) multiply-adds a sample; any other as kw * kh.
 * Backends choose between the two by their own cost models, so the cheaper
 * of the two is counted: the estimate never exceeds what a backend runs.
 * Gaussian and box kernels count their constant-time sliding sums.
 */
#include "imgconv.h"

/* a * b, saturating at UINT64_MAX */
static uint64_t mul_sat(uint64_t a, uint64_t b)
{
    return (a != 0 && b > UINT64_MAX / a) ? UINT64_MAX : a * b;
}

uint64_t ic_convolve_work(int width, int height, int channels, const ic_kernel *k)
{
    if (width <= 0 || height <= 0 || channels <= 0 || !k || k->width <= 0 || k->height <= 0)
        return 0;
    uint64_t taps = (uint64_t)k->width * (uint64_t)k->height;
    if (k->blur) {
        /* sliding sums whatever the size (docs/design/blur.md): a box's two
         * running sums, or a gaussian's few cosine terms in two passes */
        const uint64_t slide = k->blur == IC_BLUR_BOX ? 4u : 64u;
        if (slide < taps)
            return mul_sat(mul_sat((uint64_t)width * (uint64_t)height, (uint64_t)channels), slide);
    }
    if (k->width > 1 && k->height > 1) {
        ic_factors f = {0};
        if (ic_kernel_factor(k, 0.0, 0, &f) == IC_OK && f.rank > 0) {
            const uint64_t sep = (uint64_t)f.rank * (uint64_t)(k->width + k->height);
            taps = sep < taps ? sep : taps;
        }
        ic_factors_free(&f);
    }
    return mul_sat(mul_sat((uint64_t)width * (uint64_t)height, (uint64_t)channels), taps);
}
