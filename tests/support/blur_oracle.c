/*
 * blur_oracle.c - the float64 blur of blur_oracle.h: two direct passes over
 * the border-extended image, O(n) a sample, for the small images the tests
 * use.
 */
#include <math.h>
#include <stdlib.h>

#include "blur_oracle.h"
#include "oracle.h" /* ict_border_map: the border rule, apart from the library */

static double *weights(int n, double sigma)
{
    double *w = malloc((size_t)n * sizeof *w), s = 0;
    if (!w)
        return NULL;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) / 2;
        w[i] = sigma > 0 ? exp(-x * x / (2 * sigma * sigma)) : 1.0;
        s += w[i];
    }
    for (int i = 0; i < n; i++)
        w[i] /= s;
    return w;
}

static double sample(const ic_image *im, int x, int y, int c)
{
    return im->type == IC_F32 ? (double)ic_image_getf(im, x, y, c)
                              : (double)ic_image_get(im, x, y, c);
}

int ict_blur_oracle(const ic_image *src, double sx, double sy, int nx, int ny, ic_border b,
                    double border_value, int premul, double bias, double *res)
{
    const int w = src->width, h = src->height, ch = src->channels;
    const size_t n = (size_t)w * h;
    double *wx = weights(nx, sx), *wy = weights(ny, sy);
    double *v = malloc(n * sizeof *v), *t = malloc(n * sizeof *t);
    int rc = -1;
    if (!wx || !wy || !v || !t)
        goto done;
    for (int c = 0; c < ch; c++) {
        const int colour = premul && c != ch - 1;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                v[(size_t)y * w + x] =
                    sample(src, x, y, c) * (colour ? sample(src, x, y, ch - 1) : 1.0);
        const double out = colour ? border_value * border_value : border_value;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double s = 0;
                for (int i = 0; i < nx; i++) {
                    const int q = ict_border_map(x + i - nx / 2, w, b);
                    s += wx[i] * (q < 0 ? out : v[(size_t)y * w + q]);
                }
                t[(size_t)y * w + x] = s;
            }
        double *r = res + (size_t)c * n;
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++) {
                double s = 0;
                for (int j = 0; j < ny; j++) {
                    const int q =
                        ict_border_map(y + j - ny / 2, h, b); /* rows outside: all `out` */
                    s += wy[j] * (q < 0 ? out : t[(size_t)q * w + x]);
                }
                r[(size_t)y * w + x] = s;
            }
    }
    for (size_t i = 0; i < n; i++) {
        const double a = premul ? res[(size_t)(ch - 1) * n + i] : 0;
        for (int c = 0; c < ch; c++) {
            double *r = res + (size_t)c * n + i;
            if (premul && c != ch - 1)
                *r = a > 0 ? *r / a : 0;
            *r += bias;
        }
    }
    rc = 0;
done:
    free(wx);
    free(wy);
    free(v);
    free(t);
    return rc;
}
