/*
 * f32_check.h - the float64 reference of float32 filtering (IC_F32) and its
 * tolerance, shared by tests/test_f32.c and tests/gpu/test_gpu_f32.c. Written
 * from the definitions (docs/definitions.md, "Float samples"), with the
 * oracle's own border mapping and sample addressing, never the library's.
 *
 * Tolerance. With u = 2^-24 (half of FLT_EPSILON), n = kw*kh taps and
 * S = |bias| + sum |K_i * x_i| (x_i the sample or border value each tap reads),
 * every output must satisfy
 *     |out - exact| <= (n + 20) * u * S + n * 2^-126
 * n + 1 roundings of a recursive sum of n products and the bias (gamma_(n+1));
 * one of the weight rounded to float32; 2^-20 relative (16 u) for a rank-1
 * factorisation of a separable path; the last term covers underflow. Fused
 * multiply-adds and any summation order stay within it. Premultiplied alpha
 * divides FC by FA, each bounded as above (with one more u for the product
 * c*a): colour error <= (eFC + |colour| * eFA) / |FA| + 2 u |colour|, and
 * where |FA| <= eFA the sign of FA is lost, so any output passes.
 * NaN and infinities must match the reference's in kind and sign.
 */
#ifndef ICT_F32_CHECK_H
#define ICT_F32_CHECK_H

#include "imgconv.h"
#include "testutil.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Sample (x, y, c) of an IC_F32 host image, and setting it. */
float ict_f32_get(const ic_image *im, int x, int y, int c);
void ict_f32_set(const ic_image *im, int x, int y, int c, float v);

/* Random samples in [-1, 2] (one in 20 zero, one in 20 up to 1e4 in
 * magnitude); with alpha_style, the alpha of 2- and 4-channel images is an
 * opacity in [0, 1), a few fully transparent. */
void ict_f32_random(const ic_image *im, ict_rng *r, int alpha_style);

/* Checks every sample of dst (IC_F32, host) against the reference of src, k
 * and p under the resolved alpha mode; returns the number of bad samples and
 * prints the first, prefixed by `what`. *worst (may be NULL) is raised to the
 * largest |error| / tolerance seen. */
int ict_f32_check(const ic_image *src, const ic_image *dst, const ic_kernel *k, const ic_params *p,
                  ic_alpha alpha, const char *what, double *worst);

#ifdef __cplusplus
}
#endif

#endif /* ICT_F32_CHECK_H */
