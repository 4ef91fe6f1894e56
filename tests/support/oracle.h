/*
 * oracle.h - the test suite's float64 reference for ic_convolve().
 *
 * A slow, obviously-right implementation of the semantics stated at the top of
 * include/imgconv.h and in issue 2 ("Semantics, exactly"), written from those
 * definitions and NOT from the library's code: it has its own border mapping
 * (seed 004's padding, iterated reflections for kernels larger than the image),
 * its own sample addressing, and it never calls a library convolution.
 *
 *   convolution: out(x,y) = bias + sum_{j,i} K(i,j) * in(x - i + cx, y - j + cy)
 *   correlation: out(x,y) = bias + sum_{j,i} K(i,j) * in(x + i - cx, y + j - cy)
 *   cx = (kw-1)/2, cy = (kh-1)/2, K(i,j) = coef[j*kw + i] / divisor.
 *
 * The oracle returns the unrounded float64 value of every sample; ict_round()
 * turns it into the expected uint8 (nearest, ties to even, clamp 0..255).
 *
 * Alpha (2- and 4-channel images, alpha = last channel), conventions chosen
 * here and to be matched by the dispatcher:
 *  - outside the image with IC_BORDER_CONSTANT every channel, alpha included,
 *    reads border_value (the padded image of seed 004 has the value in every
 *    channel); premultiplication happens after border mapping;
 *  - PREMULTIPLY: a = alpha/M (M = 255, or 65535 for IC_U16); Fa = sum K*a,
 *    Fca = sum K*c*a;
 *      colour = (Fa > 0 ? Fca / Fa : 0) + bias,   alpha = M*Fa + bias
 *    (bias is added after the division, to colour and alpha alike);
 *  - KEEP: colour channels filtered (+ bias), alpha copied unchanged (no bias);
 *  - INDEPENDENT: every channel filtered alone (+ bias), as the seeds do;
 *  - AUTO: PREMULTIPLY when |sum of weights - 1| < 1e-6 (weights summed in
 *    float64 as sum(coef)/divisor), else KEEP.
 *  1- and 3-channel images have no alpha: every channel is filtered alone.
 */
#ifndef ICT_ORACLE_H
#define ICT_ORACLE_H

#include <stdint.h>

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slack value meaning "any output is acceptable" (the premultiplied colour of a
 * sample whose filtered alpha is indistinguishable from 0 in float32). */
#define ICT_SLACK_ANY 1e30

/* Maps coordinate i onto [0, n) for border mode b by the definitions:
 * replicate clamps, mirror reflects about the edge sample (reflect-101),
 * reflect reflects about the edge (symmetric), wrap is periodic; reflections
 * are applied again and again until the index lands inside. Returns -1 for
 * IC_BORDER_CONSTANT outside [0, n). n >= 1. */
int ict_border_map(int i, int n, ic_border b);

/* Expected uint8 of a float64 value: clamp to [0, 255], round to nearest with
 * ties to even; NaN gives 0. */
uint8_t ict_round(double v);

/* The alpha mode the oracle applies for this kernel, image and request (AUTO
 * resolved; IC_ALPHA_INDEPENDENT for 1 and 3 channels). */
ic_alpha ict_effective_alpha(const ic_kernel *k, int channels, ic_alpha requested);

/* Value of every channel of output pixel (x, y) into val[0..channels-1].
 * slack (may be NULL) receives, per channel, a bound on how far (in levels) a
 * correct float32 implementation may land from val: a few ulps times the sum of
 * |terms| for filtered samples, 0 for a copied alpha, larger for premultiplied
 * colour where the division by the filtered alpha amplifies the rounding (and
 * ICT_SLACK_ANY where the sign of the filtered alpha is lost in float32), and
 * exactly 0 where float32 computes the sum exactly whatever the order (every
 * weight, the bias and the border value dyadic and small enough: integer
 * kernels with a power-of-two divisor, one-hot kernels...), so that ties such
 * as 160.5 must round to even.
 * The comparison uses it only to tell rounding-boundary cases from errors.
 * p NULL means ic_params defaults as documented (constant 0, convolution,
 * bias 0, alpha auto). */
void ict_oracle_pixel(const ic_image *src, const ic_kernel *k, const ic_params *p, int x, int y,
                      double *val, double *slack);

/* Values of rows y0 <= y < y1 into val[((y - y0)*width + x)*channels + c]
 * (and slack, same indexing, when non-NULL). */
void ict_oracle_rows(const ic_image *src, const ic_kernel *k, const ic_params *p, int y0, int y1,
                     double *val, double *slack);

/* ict_round for samples of 0..max (255 or 65535). */
uint16_t ict_round_max(double v, int max);

/* Largest sample of the image's type: 255 (IC_U8) or 65535 (IC_U16). */
int ict_type_max(const ic_image *img);

/* Address of (the first byte of) sample (x, y, c) of an image, from the
 * layout definitions in imgconv.h (written here so that the oracle does not
 * lean on the library); IC_U16 samples are 2 bytes in host order, IC_F32
 * samples 4. */
const uint8_t *ict_sample(const ic_image *img, int x, int y, int c);

/* Value of sample (x, y, c), IC_U8 or IC_U16. */
int ict_value(const ic_image *img, int x, int y, int c);

/* Sets sample (x, y, c) to v (kept within the type by the caller). */
void ict_set_value(const ic_image *img, int x, int y, int c, int v);

#ifdef __cplusplus
}
#endif

#endif /* ICT_ORACLE_H */
