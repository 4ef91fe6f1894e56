/*
 * blur_ext.h - modulated prefix sums of a line extended by the border rule,
 * in closed form, for the `cuda` blur method (src/cuda/fast/blur.cu,
 * docs/design/blur.md#the-cuda-method); C host code (the tests) and CUDA
 * device code alike.
 *
 * With e_i the line's sample i extended by the border rule (any integer i)
 * and z = e^{j w}, F(m) = sum_{0 <= i < m} e_i z^i, and minus the sum over
 * m <= i < 0 when m < 0, so that F(b) - F(a) is the sum over [a, b) for any
 * a <= b. Past a constant or replicated edge the extension is a constant, a
 * geometric series; under wrap, mirror and reflect it is periodic (period n,
 * 2n-2, 2n), so F(m) is whole periods (a geometric series in z^P times one
 * period's sum) plus a partial period, and a mirrored range is the
 * conjugate of a forward range turned by the period's phase (the samples
 * are real). F(m) for any m then needs only the line's total F(n), its
 * first and last samples and its own prefix F(k) at one k in [0, n]
 * (ic_blur_ext_point), at O(log(|m| / n)) complex products (O(log |m|)
 * past a constant or replicated edge) and no sine or cosine.
 */
#ifndef IC_CORE_BLUR_EXT_H
#define IC_CORE_BLUR_EXT_H

#include <math.h>

#include "core/border.h"

typedef struct ic_blur_cplx {
    double re, im;
} ic_blur_cplx;

IC_HD ic_blur_cplx ic_blur_cmake(double re, double im)
{
    ic_blur_cplx z;
    z.re = re;
    z.im = im;
    return z;
}

IC_HD ic_blur_cplx ic_blur_cmul(ic_blur_cplx a, ic_blur_cplx b)
{
    return ic_blur_cmake(a.re * b.re - a.im * b.im, a.re * b.im + a.im * b.re);
}

IC_HD ic_blur_cplx ic_blur_cadd(ic_blur_cplx a, ic_blur_cplx b)
{
    return ic_blur_cmake(a.re + b.re, a.im + b.im);
}

IC_HD ic_blur_cplx ic_blur_csub(ic_blur_cplx a, ic_blur_cplx b)
{
    return ic_blur_cmake(a.re - b.re, a.im - b.im);
}

IC_HD ic_blur_cplx ic_blur_conj(ic_blur_cplx a)
{
    return ic_blur_cmake(a.re, -a.im);
}

/* e^{j w k}; k in long long: q periods of P samples may pass 2^31 */
IC_HD ic_blur_cplx ic_blur_cis(double w, long long k)
{
    const double t = w * (double)k;
    return ic_blur_cmake(cos(t), sin(t));
}

/* sum_{p=0}^{q-1} y^p for |y| = 1, and minus the sum over q..-1 when
 * q < 0; *yq = y^q. By doubling: log q products and no division, so y near
 * 1 loses nothing and y = 1 (a box) counts exactly. */
IC_HD ic_blur_cplx ic_blur_geo(ic_blur_cplx y, int q, ic_blur_cplx *yq)
{
    const int m = q < 0 ? -q : q;
    const ic_blur_cplx one = ic_blur_cmake(1.0, 0.0);
    ic_blur_cplx s = ic_blur_cmake(0.0, 0.0), yk = one; /* S_k and y^k, k the bits so far */
    int top = 0;
    while (top < 30 && (m >> (top + 1)) != 0)
        top++;
    for (int b = m ? top : -1; b >= 0; b--) {
        s = ic_blur_cadd(s, ic_blur_cmul(yk, s)); /* S_2k = S_k + y^k S_k */
        yk = ic_blur_cmul(yk, yk);
        if ((m >> b) & 1) { /* S_k+1 = 1 + y S_k */
            s = ic_blur_cadd(one, ic_blur_cmul(y, s));
            yk = ic_blur_cmul(y, yk);
        }
    }
    *yq = q < 0 ? ic_blur_conj(yk) : yk;
    if (q >= 0)
        return s;
    const ic_blur_cplx v = ic_blur_cmul(*yq, s); /* y^q S_m: the sum over q..-1 */
    return ic_blur_cmake(-v.re, -v.im);
}

/* The mode the closed form follows: a line of one sample repeats it under
 * every rule but constant. */
IC_HD int ic_blur_ext_mode(int n, int mode)
{
    return n == 1 && mode != IC_BORDER_CONSTANT ? IC_BORDER_REPLICATE : mode;
}

/* The period of a periodic extension, 0 for constant and replicate. */
IC_HD int ic_blur_ext_period(int n, int mode)
{
    switch (ic_blur_ext_mode(n, mode)) {
    case IC_BORDER_WRAP:
        return n;
    case IC_BORDER_REFLECT:
        return 2 * n;
    case IC_BORDER_MIRROR:
        return 2 * n - 2;
    default:
        return 0;
    }
}

/* The k in [0, n] whose line prefix F(k) ic_blur_ext_sum needs for F(m):
 * m itself on the line, the partial period's forward or mirrored end under
 * a periodic rule, 0 (none) past a constant or replicated edge. */
IC_HD int ic_blur_ext_point(int m, int n, int mode)
{
    if (m >= 0 && m <= n)
        return m;
    const int P = ic_blur_ext_period(n, mode);
    if (!P)
        return 0;
    const int s = ic_mod(m, P);
    if (s <= n)
        return s;
    return ic_blur_ext_mode(n, mode) == IC_BORDER_REFLECT ? 2 * n - s : 2 * n - 1 - s;
}

/* The phases one term's closed form reads, for a line of n under `mode`:
 * computed once a pass, so that a window end takes no sine or cosine. */
typedef struct ic_blur_ext_term {
    ic_blur_cplx y1; /* e^{j w} */
    ic_blur_cplx yn; /* e^{j w n} */
    ic_blur_cplx yp; /* e^{j w P} */
    ic_blur_cplx zr; /* e^{j w (2n-1)} (reflect), e^{j w (2n-2)} (mirror) */
    ic_blur_cplx zl; /* e^{j w (n-1)} */
} ic_blur_ext_term;

IC_HD ic_blur_ext_term ic_blur_ext_term_make(double w, int n, int mode)
{
    ic_blur_ext_term k;
    mode = ic_blur_ext_mode(n, mode);
    k.y1 = ic_blur_cis(w, 1);
    k.yn = ic_blur_cis(w, n);
    k.yp = ic_blur_cis(w, ic_blur_ext_period(n, mode));
    k.zr = ic_blur_cis(w, 2 * (long long)n - (mode == IC_BORDER_REFLECT ? 1 : 2));
    k.zl = ic_blur_cis(w, n - 1);
    return k;
}

/* F(m) of the line extended by `mode` for z = e^{j w}, k its phases
 * (ic_blur_ext_term_make): T = F(n), the line's total; h = F(k) at
 * ic_blur_ext_point(m, n, mode); xf, xl its first and last samples; v the
 * value outside a constant border. */
IC_HD ic_blur_cplx ic_blur_ext_sum(const ic_blur_ext_term *k, int m, int n, int mode,
                                   ic_blur_cplx T, ic_blur_cplx h, double xf, double xl, double v)
{
    if (m >= 0 && m <= n)
        return h;
    mode = ic_blur_ext_mode(n, mode);
    const int P = ic_blur_ext_period(n, mode);
    ic_blur_cplx yq;
    if (!P) { /* c z^i summed from the edge: a geometric series */
        const double c = mode == IC_BORDER_REPLICATE ? (m < 0 ? xf : xl) : v;
        if (m < 0) {
            const ic_blur_cplx g = ic_blur_geo(k->y1, m, &yq);
            return ic_blur_cmake(c * g.re, c * g.im);
        }
        const ic_blur_cplx g = ic_blur_cmul(k->yn, ic_blur_geo(k->y1, m - n, &yq));
        return ic_blur_cmake(T.re + c * g.re, T.im + c * g.im);
    }
    const int s = ic_mod(m, P), q = (m - s) / P;
    ic_blur_cplx per = T, part = h;  /* the sums over [0, P) and [0, s) */
    if (mode == IC_BORDER_REFLECT) { /* i in [n, 2n) reads 2n-1-i */
        per = ic_blur_cadd(T, ic_blur_cmul(k->zr, ic_blur_conj(T)));
        if (s > n)
            part = ic_blur_cadd(T, ic_blur_cmul(k->zr, ic_blur_conj(ic_blur_csub(T, h))));
    } else if (mode == IC_BORDER_MIRROR) { /* i in [n, 2n-2) reads 2n-2-i */
        const ic_blur_cplx tm =
            ic_blur_cmake(T.re - xl * k->zl.re, T.im - xl * k->zl.im); /* [0, n-1) */
        per = ic_blur_cadd(T, ic_blur_cmul(k->zr, ic_blur_conj(ic_blur_cmake(tm.re - xf, tm.im))));
        if (s > n)
            part = ic_blur_cadd(T, ic_blur_cmul(k->zr, ic_blur_conj(ic_blur_csub(tm, h))));
    }
    const ic_blur_cplx g = ic_blur_geo(k->yp, q, &yq);
    return ic_blur_cadd(ic_blur_cmul(g, per), ic_blur_cmul(yq, part));
}

/* A walk along the extended line, one position a step, without the
 * division ic_border_map takes past the line: the walker keeps i mod P
 * under a periodic rule, i itself under constant and replicate. */
IC_HD int ic_blur_walk_start(int i, int n, int mode)
{
    const int P = ic_blur_ext_period(n, mode);
    return P ? ic_mod(i, P) : i;
}

/* The walker one position on; P = ic_blur_ext_period(n, mode). */
IC_HD int ic_blur_walk_next(int p, int P)
{
    return P && p + 1 == P ? 0 : p + 1;
}

/* The sample the walker's position reads, ic_border_map of its i: -1
 * outside a constant border. */
IC_HD int ic_blur_walk_sample(int p, int n, int mode)
{
    if (p >= 0 && p < n)
        return p;
    switch (ic_blur_ext_mode(n, mode)) {
    case IC_BORDER_REPLICATE:
        return p < 0 ? 0 : n - 1;
    case IC_BORDER_MIRROR:
        return 2 * n - 2 - p;
    case IC_BORDER_REFLECT:
        return 2 * n - 1 - p;
    default: /* IC_BORDER_CONSTANT; wrap's positions all lie on the line */
        return -1;
    }
}

#endif /* IC_CORE_BLUR_EXT_H */
