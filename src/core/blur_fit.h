/*
 * blur_fit.h - the weights of the constant-time gaussian and box blurs
 * (blur_fit.c), shared by the backends that run them as sliding or
 * prefix sums (src/cpu/cpu_blur.c, src/cuda/fast/blur.cu); internal.
 */
#ifndef IC_CORE_BLUR_FIT_H
#define IC_CORE_BLUR_FIT_H

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

#define IC_BLUR_MAX_TERMS 10

/* Taps a side from which the cuda fast path blurs by prefix sums rather
 * than FIR (src/cuda/fast/fast.h's IC_FAST_BLUR_MIN_SIDE, held equal to it
 * in blur.cu); auto's cost model reads it here, in a build without CUDA too. */
#define IC_BLUR_CUDA_MIN_SIDE 33

/* One pass's weights over the window of 2r+1 samples, m = -r..r:
 *   h(m) = a0 + sum_{k < nterms} a[k] cos(w[k] m)
 * (a box: nterms 0 and a0 its weight). */
typedef struct ic_blur_fit {
    int r;
    int nterms;
    double a0;
    double a[IC_BLUR_MAX_TERMS];
    double w[IC_BLUR_MAX_TERMS]; /* radians a sample */
    double err;                  /* L1 distance of h from the exact normalised weights */
} ic_blur_fit;

/* Fits a gaussian of sigma over the support n (odd) to within tol (L1), or
 * a box of weight box_weight when sigma is 0. 0 when out of memory or the
 * fit failed. */
int ic__blur_fit(ic_blur_fit *f, int n, double sigma, double box_weight, double tol);

/* 1 when a blur's kw x kh support can be fitted: a box always, a gaussian
 * whose support is at most 2*ceil(4 sigma)+1 (a wider window holds a bell
 * too narrow for IC_BLUR_MAX_TERMS cosines of its period). */
int ic__blur_fits(int blur, double sigma_x, double sigma_y, int kw, int kh);

#ifdef __cplusplus
}
#endif

#endif
