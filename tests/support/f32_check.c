/*
 * f32_check.c - the float64 reference of float32 filtering and its tolerance
 * (f32_check.h says which and why).
 */
#include "f32_check.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

#define U_F32 0x1p-24

float ict_f32_get(const ic_image *im, int x, int y, int c)
{
    float v;
    memcpy(&v, ict_sample(im, x, y, c), sizeof v);
    return v;
}

void ict_f32_set(const ic_image *im, int x, int y, int c, float v)
{
    memcpy((void *)ict_sample(im, x, y, c), &v, sizeof v);
}

/* Exact (float64) correlation value and its bound S of channel c at (x, y),
 * with kernel weights K (double, already flipped for convolution). */
static void ref_sum(const ic_image *src, const double *K, int kw, int kh, const ic_params *p, int x,
                    int y, int c, double premul_alpha_c, double *val, double *s)
{
    double v = 0, a = 0;
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            const int sx = ict_border_map(x + i - kw / 2, src->width, p->border);
            const int sy = ict_border_map(y + j - kh / 2, src->height, p->border);
            double xv = (sx < 0 || sy < 0) ? p->border_value : ict_f32_get(src, sx, sy, c);
            if (premul_alpha_c >= 0) /* colour times its pixel's alpha */
                xv *= (sx < 0 || sy < 0) ? p->border_value
                                         : ict_f32_get(src, sx, sy, (int)premul_alpha_c);
            const double t = K[j * kw + i] * xv;
            v += t;
            a += fabs(t);
        }
    *val = v;
    *s = a;
}

/* Correlation weights of k under p, in float64. */
static double *ref_weights(const ic_kernel *k, const ic_params *p)
{
    const int kw = k->width, kh = k->height;
    double *K = malloc(sizeof *K * (size_t)kw * (size_t)kh);
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            const int di = p->correlate ? i : kw - 1 - i, dj = p->correlate ? j : kh - 1 - j;
            K[dj * kw + di] = k->coef[j * kw + i] / k->divisor;
        }
    return K;
}

/* 1 when out is acceptable for the exact value v with bound tol (IEEE
 * specials must match in kind and sign). */
static int close_enough(float out, double v, double tol)
{
    if (isnan(v))
        return isnan(out);
    if (isinf(v))
        return isinf(out) && (out > 0) == (v > 0);
    return !isnan(out) && fabs((double)out - v) <= tol;
}

int ict_f32_check(const ic_image *src, const ic_image *dst, const ic_kernel *k, const ic_params *p,
                  ic_alpha alpha, const char *what, double *worst)
{
    const int kw = k->width, kh = k->height, n = kw * kh, ch = src->channels, ac = ch - 1;
    const double g = (n + 20) * U_F32, floor_ = n * 0x1p-126;
    double *K = ref_weights(k, p);
    int bad = 0;
    for (int y = 0; y < src->height; y++)
        for (int x = 0; x < src->width; x++)
            for (int c = 0; c < ch; c++) {
                double v, s, tol;
                const float out = ict_f32_get(dst, x, y, c);
                if (alpha == IC_ALPHA_KEEP && c == ac) {
                    v = ict_f32_get(src, x, y, c);
                    tol = 0;
                } else if (alpha == IC_ALPHA_PREMULTIPLY) {
                    double fa, sa, fc, sc;
                    ref_sum(src, K, kw, kh, p, x, y, ac, -1, &fa, &sa);
                    const double efa = g * sa + floor_;
                    if (c == ac) {
                        v = fa + p->bias;
                        tol = g * (sa + fabs(p->bias)) + floor_;
                    } else {
                        ref_sum(src, K, kw, kh, p, x, y, c, ac, &fc, &sc);
                        if (fabs(fa) <= efa)
                            continue; /* the sign of FA is lost in float32 */
                        const double col = fa > 0 ? fc / fa : 0.0;
                        const double efc = (g + U_F32) * sc + floor_;
                        v = col + p->bias;
                        tol = (efc + fabs(col) * efa) / fabs(fa) + 2 * U_F32 * fabs(col) +
                              U_F32 * fabs(v);
                    }
                } else {
                    ref_sum(src, K, kw, kh, p, x, y, c, -1, &v, &s);
                    v += p->bias;
                    tol = g * (s + fabs(p->bias)) + floor_;
                }
                if (worst && isfinite(v) && tol > 0 && fabs((double)out - v) / tol > *worst)
                    *worst = fabs((double)out - v) / tol;
                if (!close_enough(out, v, tol)) {
                    if (bad++ == 0)
                        printf("FAIL %s: sample (%d,%d,%d) = %.9g, expected %.9g within %.3g\n",
                               what, x, y, c, (double)out, v, tol);
                }
            }
    free(K);
    return bad;
}

/* Random float samples in [-1, 2] (a few large ones, a few exact zeros). */
void ict_f32_random(const ic_image *im, ict_rng *r, int alpha_style)
{
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width; x++)
            for (int c = 0; c < im->channels; c++) {
                const uint32_t u = ict_below(r, 20);
                float v = (float)(ict_uniform(r) * 3.0 - 1.0);
                if (u == 0)
                    v = 0.0f;
                else if (u == 1)
                    v = (float)((ict_uniform(r) - 0.5) * 2e4);
                if (alpha_style && (im->channels == 2 || im->channels == 4) &&
                    c == im->channels - 1)
                    v = u < 4 ? 0.0f : (float)ict_uniform(r); /* opacity, some holes */
                ict_f32_set(im, x, y, c, v);
            }
}
