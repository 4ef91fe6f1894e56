/*
 * blur_oracle.h - the float64 gaussian and box blur the blur tests check
 * against, written apart from every backend: the image extended by the
 * border rule over the support, then the exact separable sum with the
 * normalised weights exp(-i^2 / (2 sigma^2)) (a box: 1 / n).
 */
#ifndef ICT_BLUR_ORACLE_H
#define ICT_BLUR_ORACLE_H

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The blur of src (any sample type, layout, 1..4 channels) by an nx x ny
 * support, gaussian of sigma sx x sy (0: box), border b with border_value
 * outside under IC_BORDER_CONSTANT, premultiplied alpha when premul (the
 * last channel is alpha: colour sums over colour x alpha divided by the
 * alpha sum, 0 where that is not positive), bias added. res: channels
 * planes of width x height doubles, unrounded and unclamped. 0 on success,
 * -1 when out of memory. */
int ict_blur_oracle(const ic_image *src, double sx, double sy, int nx, int ny, ic_border b,
                    double border_value, int premul, double bias, double *res);

#ifdef __cplusplus
}
#endif

#endif
