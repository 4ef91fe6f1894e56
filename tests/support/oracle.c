/*
 * oracle.c - float64 reference convolution for the tests (see oracle.h for the
 * exact semantics and the alpha/bias conventions). Follows the formulas of
 * include/imgconv.h and issue 2 literally, one output pixel at a time, with
 * seed 004's padding rules (constant / replicate / mirror) plus reflect and
 * wrap, applied as "pad, then convolve" without materialising the padding.
 *
 * Sums are formed as sum(coef * sample) in float64 and divided by the divisor
 * once at the end: for the integer kernels of the tests that sum is exact, so
 * a value such as 160.5 really is a tie and rounds to even.
 *
 * 16-bit images (IC_U16) follow the same formulas with samples 0..65535 and
 * premultiplied alpha a = alpha/65535; results are rounded into 0..65535.
 */
#include "oracle.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

int ict_border_map(int i, int n, ic_border b)
{
    if (i >= 0 && i < n)
        return i;
    switch (b) {
    case IC_BORDER_CONSTANT:
        return -1;
    case IC_BORDER_REPLICATE:
        return i < 0 ? 0 : n - 1;
    case IC_BORDER_MIRROR: /* about the edge sample: -1 -> 1, n -> n-2 */
        if (n == 1)
            return 0;
        while (i < 0 || i >= n) {
            if (i < 0)
                i = -i;
            if (i >= n)
                i = 2 * (n - 1) - i;
        }
        return i;
    case IC_BORDER_REFLECT: /* about the edge itself: -1 -> 0, n -> n-1 */
        while (i < 0 || i >= n) {
            if (i < 0)
                i = -1 - i;
            if (i >= n)
                i = 2 * n - 1 - i;
        }
        return i;
    case IC_BORDER_WRAP:
        while (i < 0)
            i += n;
        while (i >= n)
            i -= n;
        return i;
    }
    return -1;
}

uint8_t ict_round(double v)
{
    if (!(v > 0.0)) /* negative, zero and NaN */
        return 0;
    if (v >= 255.0)
        return 255;
    double f = floor(v);
    double d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return (uint8_t)f;
}

uint16_t ict_round_max(double v, int max)
{
    if (!(v > 0.0)) /* negative, zero and NaN */
        return 0;
    if (v >= (double)max)
        return (uint16_t)max;
    double f = floor(v);
    double d = v - f;
    if (d > 0.5 || (d == 0.5 && fmod(f, 2.0) != 0.0))
        f += 1.0;
    return (uint16_t)f;
}

int ict_type_max(const ic_image *img)
{
    return img->type == IC_U16 ? 65535 : 255;
}

const uint8_t *ict_sample(const ic_image *img, int x, int y, int c)
{
    const size_t pitch = img->pitch, es = img->type == IC_U16 ? 2u : img->type == IC_F32 ? 4u : 1u;
    if (img->layout == IC_SOA)
        return img->data + ((size_t)c * (size_t)img->height + (size_t)y) * pitch + (size_t)x * es;
    return img->data + (size_t)y * pitch + ((size_t)x * (size_t)img->channels + (size_t)c) * es;
}

int ict_value(const ic_image *img, int x, int y, int c)
{
    const uint8_t *p = ict_sample(img, x, y, c);
    if (img->type == IC_U16) {
        uint16_t v;
        memcpy(&v, p, sizeof v);
        return v;
    }
    return *p;
}

void ict_set_value(const ic_image *img, int x, int y, int c, int v)
{
    uint8_t *p = (uint8_t *)ict_sample(img, x, y, c);
    if (img->type == IC_U16) {
        const uint16_t u = (uint16_t)v;
        memcpy(p, &u, sizeof u);
    } else {
        *p = (uint8_t)v;
    }
}

ic_alpha ict_effective_alpha(const ic_kernel *k, int channels, ic_alpha requested)
{
    if (channels != 2 && channels != 4)
        return IC_ALPHA_INDEPENDENT;
    if (requested != IC_ALPHA_AUTO)
        return requested;
    double s = 0.0;
    for (int n = 0; n < k->width * k->height; n++)
        s += (double)k->coef[n];
    s /= k->divisor;
    return fabs(s - 1.0) < 1e-6 ? IC_ALPHA_PREMULTIPLY : IC_ALPHA_KEEP;
}

/* The defaults of ic_params_default() as documented, written out here. */
static void default_params(ic_params *p)
{
    p->border = IC_BORDER_MIRROR;
    p->border_value = 0.0f;
    p->correlate = 0;
    p->bias = 0.0f;
    p->alpha = IC_ALPHA_AUTO;
}

/* Fractional bits of v: the smallest e with v * 2^e an integer, or -1 when v
 * is not a dyadic rational with at most 60 of them. */
static int frac_bits(double v)
{
    for (int e = 0; e <= 60; e++) {
        double t = ldexp(v, e);
        if (t == floor(t))
            return e;
    }
    return -1;
}

/* When every weight coef/divisor is exactly a float32, and so are bias and
 * border value, every term and partial sum of a float32 implementation is a
 * multiple of 2^-E; it is then computed exactly (in any order) as long as the
 * sum of |terms| stays below 2^(24-E). Returns E, or -1 when not dyadic. */
static int exact_bits(const ic_kernel *k, const ic_params *p)
{
    int e = 0;
    for (int n = 0; n < k->width * k->height; n++) {
        const double c = (double)k->coef[n];
        const double w = c / k->divisor;
        if ((double)(float)w != w || w * k->divisor != c)
            return -1;
        int f = frac_bits(w);
        if (f < 0)
            return -1;
        e = f > e ? f : e;
    }
    const int fv = frac_bits((double)p->border_value), fb = frac_bits((double)p->bias);
    if (fv < 0 || fb < 0)
        return -1;
    e += fv;
    return fb > e ? fb : e;
}

static void pixel(const ic_image *src, const ic_kernel *k, const ic_params *p, int ebits, int x,
                  int y, double *val, double *slack)
{
    const int nch = src->channels;
    const int kw = k->width, kh = k->height;
    const int cx = (kw - 1) / 2, cy = (kh - 1) / 2;
    const ic_alpha mode = ict_effective_alpha(k, nch, p->alpha);
    const int ac = nch - 1; /* alpha channel when there is one */
    const double div = k->divisor;
    const double bias = (double)p->bias;
    const double amax = ict_type_max(src); /* alpha scale: 255, or 65535 at 16 bits */

    double sum[4] = {0, 0, 0, 0};  /* sum coef * sample, per channel */
    double mag[4] = {0, 0, 0, 0};  /* sum |coef * sample|: scale of the float32 error */
    double psum[4] = {0, 0, 0, 0}; /* premultiply: sum coef*c*a (colour), sum coef*a (alpha) */
    double pabs[4] = {0, 0, 0, 0}; /* premultiply: the same sums of magnitudes */

    for (int j = 0; j < kh; j++) {
        for (int i = 0; i < kw; i++) {
            const double coef = (double)k->coef[j * kw + i];
            const int sx = p->correlate ? x + i - cx : x - i + cx;
            const int sy = p->correlate ? y + j - cy : y - j + cy;
            const int mx = ict_border_map(sx, src->width, p->border);
            const int my = ict_border_map(sy, src->height, p->border);
            const int outside = mx < 0 || my < 0;
            double s[4] = {0, 0, 0, 0};
            for (int c = 0; c < nch; c++)
                s[c] = outside ? (double)p->border_value : (double)ict_value(src, mx, my, c);
            for (int c = 0; c < nch; c++) {
                sum[c] += coef * s[c];
                mag[c] += fabs(coef * s[c]);
            }
            if (mode == IC_ALPHA_PREMULTIPLY) {
                const double a = s[ac] / amax;
                for (int c = 0; c < ac; c++) {
                    psum[c] += coef * s[c] * a;
                    pabs[c] += fabs(coef) * s[c] * a;
                }
                psum[ac] += coef * a;
                pabs[ac] += fabs(coef) * a;
            }
        }
    }

    /* A float32 implementation rounds each weight, product and partial sum:
     * whatever the order, its error stays below g * (sum of |terms|), with g
     * allowing a factor 2 over the textbook bound (n + 2) * 2^-24. */
    const double g = 2.0 * (double)(kw * kh + 4) * ldexp(1.0, -24);
    for (int c = 0; c < nch; c++) {
        val[c] = bias + sum[c] / div;
        const double m = mag[c] / fabs(div) + fabs(bias);
        if (slack)
            slack[c] = (ebits >= 0 && ldexp(m, ebits) < 0x1p24) ? 0.0 : g * m;
    }
    if (mode == IC_ALPHA_KEEP) {
        val[ac] = (double)ict_value(src, x, y, ac);
        if (slack)
            slack[ac] = 0.0;
    }
    if (mode != IC_ALPHA_PREMULTIPLY)
        return;

    /* Fa and Fca carry the same kind of float32 error (g also covers the
     * rounding of a = alpha/255); the division amplifies it when Fa is small. */
    const double fa = psum[ac] / div;
    const double ea = g * pabs[ac] / fabs(div);
    val[ac] = amax * fa + bias;
    if (slack)
        slack[ac] = amax * ea + g * fabs(bias);
    for (int c = 0; c < ac; c++) {
        const double fca = psum[c] / div;
        const double eca = g * pabs[c] / fabs(div);
        if (fa > ea) {
            const double q = fca / fa;
            val[c] = q + bias;
            if (slack)
                slack[c] = (eca + fabs(q) * ea) / (fa - ea) + g * fabs(bias);
        } else if (fa <= -ea) { /* surely <= 0 (exactly 0 when every alpha is 0) */
            val[c] = bias;
            if (slack)
                slack[c] = g * fabs(bias);
        } else { /* the sign of Fa is lost in float32 rounding */
            val[c] = fa > 0.0 ? fca / fa + bias : bias;
            if (slack)
                slack[c] = ICT_SLACK_ANY;
        }
    }
}

void ict_oracle_pixel(const ic_image *src, const ic_kernel *k, const ic_params *p, int x, int y,
                      double *val, double *slack)
{
    ic_params def;
    if (!p) {
        default_params(&def);
        p = &def;
    }
    pixel(src, k, p, exact_bits(k, p), x, y, val, slack);
}

void ict_oracle_rows(const ic_image *src, const ic_kernel *k, const ic_params *p, int y0, int y1,
                     double *val, double *slack)
{
    ic_params def;
    if (!p) {
        default_params(&def);
        p = &def;
    }
    const int ebits = exact_bits(k, p);
    const size_t nch = (size_t)src->channels;
    const size_t w = (size_t)src->width;
    for (int y = y0; y < y1; y++) {
        for (int x = 0; x < src->width; x++) {
            size_t at = ((size_t)(y - y0) * w + (size_t)x) * nch;
            pixel(src, k, p, ebits, x, y, val + at, slack ? slack + at : NULL);
        }
    }
}
