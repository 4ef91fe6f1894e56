/*
 * blur_fit.c - the weights of the constant-time blurs (docs/design/blur.md),
 * one computation for every backend that runs them: a gaussian's exact
 * weights over its support fitted by least squares with a constant and the
 * fewest cosines of one period that keep the L1 error within a tolerance.
 */
#include <math.h>
#include <string.h>
#include <stdlib.h>

#include "core/blur_fit.h"

/* Solves the n x n system m x = b (row-major, destroyed) by elimination with
 * partial pivoting; 0 when singular. */
static int solve(double *m, double *b, int n, double *x)
{
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int i = c + 1; i < n; i++)
            if (fabs(m[i * n + c]) > fabs(m[p * n + c]))
                p = i;
        if (!(fabs(m[p * n + c]) > 1e-300))
            return 0;
        if (p != c) {
            for (int j = 0; j < n; j++) {
                double t = m[c * n + j];
                m[c * n + j] = m[p * n + j];
                m[p * n + j] = t;
            }
            double t = b[c];
            b[c] = b[p];
            b[p] = t;
        }
        for (int i = c + 1; i < n; i++) {
            const double f = m[i * n + c] / m[c * n + c];
            for (int j = c; j < n; j++)
                m[i * n + j] -= f * m[c * n + j];
            b[i] -= f * b[c];
        }
    }
    for (int i = n - 1; i >= 0; i--) {
        double s = b[i];
        for (int j = i + 1; j < n; j++)
            s -= m[i * n + j] * x[j];
        x[i] = s / m[i * n + i];
    }
    return 1;
}

/* The exact weights: g[i] for i = 0..r of the normalised Gaussian over -r..r. */
static void gauss_half(int r, double sigma, double *g)
{
    double sum = 0.0;
    for (int i = 0; i <= r; i++) {
        g[i] = i == 0 ? 1.0 : exp(-((double)i * i) / (2.0 * sigma * sigma));
        sum += i == 0 ? g[i] : 2.0 * g[i];
    }
    for (int i = 0; i <= r; i++)
        g[i] /= sum;
}

/* phi[k] = cos(k t), k < n, by the Chebyshev recurrence (one libm call). */
static void cosines(double t, int n, double *phi)
{
    const double c = cos(t);
    phi[0] = 1.0;
    if (n > 1)
        phi[1] = c;
    for (int k = 2; k < n; k++)
        phi[k] = 2.0 * c * phi[k - 1] - phi[k - 2];
}

/* L1 distance from g (i = 0..r in steps of s, each standing for s weights,
 * twice but for 0) of 1 and cos(k theta i), k = 1..K, weighted by c. */
static double fit_error(int r, int s, const double *g, double theta, int K, const double *c)
{
    const int n = K + 1;
    double phi[IC_BLUR_MAX_TERMS + 1], err = 0.0;
    for (int i = 0; i <= r; i += s) {
        cosines(theta * i, n, phi);
        double v = c[0];
        for (int k = 1; k < n; k++)
            v += c[k] * phi[k];
        err += (i == 0 ? s : 2.0 * s) * fabs(v - g[i]);
    }
    return err;
}

/* Least-squares fit of g (i = 0..r in steps of s, as fit_error counts them)
 * by 1 and cos(k theta i), k = 1..K; returns fit_error and the coefficients
 * in c. */
static double fit_terms(int r, int s, const double *g, double theta, int K, double *c)
{
    const int n = K + 1;
    double m[(IC_BLUR_MAX_TERMS + 1) * (IC_BLUR_MAX_TERMS + 1)], b[IC_BLUR_MAX_TERMS + 1],
        phi[IC_BLUR_MAX_TERMS + 1];
    memset(m, 0, sizeof m);
    memset(b, 0, sizeof b);
    for (int i = 0; i <= r; i += s) {
        const double wt = i == 0 ? s : 2.0 * s;
        cosines(theta * i, n, phi);
        for (int p = 0; p < n; p++) {
            b[p] += wt * phi[p] * g[i];
            for (int q = 0; q < n; q++)
                m[p * n + q] += wt * phi[p] * phi[q];
        }
    }
    if (!solve(m, b, n, c))
        return INFINITY;
    return fit_error(r, s, g, theta, K, c);
}

int ic__blur_fit(ic_blur_fit *f, int n, double sigma, double box_weight, double tol)
{
    memset(f, 0, sizeof *f);
    f->r = (n - 1) / 2;
    const int r = f->r;
    if (sigma <= 0 || r == 0) {
        f->a0 = sigma <= 0 ? box_weight : 1.0;
        return 1;
    }
    double *g = malloc((size_t)(r + 1) * sizeof *g);
    if (!g)
        return 0;
    gauss_half(r, sigma, g);
    /* periods of 1.2 to 2 supports: long enough that the cosines need not
     * bend back inside the window, short enough that few terms fit it */
    static const double periods[] = {1.2, 1.35, 1.5, 1.65, 1.8, 2.0};
    double best = INFINITY, c[IC_BLUR_MAX_TERMS + 1], bc[IC_BLUR_MAX_TERMS + 1] = {0}, btheta = 0;
    int bk = 0;
    /* A wide bell is fitted on about 128 of its weights, each standing for
     * its neighbours: the bell and the cosines are smooth over many samples,
     * and the fit then costs the same at any sigma; the chosen fit's error
     * is then taken over every weight. */
    const int step = r >= 256 ? r / 128 : 1;
    /* r terms interpolate all r+1 weights */
    const int kmax = r < IC_BLUR_MAX_TERMS ? r : IC_BLUR_MAX_TERMS;
    for (int K = 1; K <= kmax && best > tol; K++)
        for (size_t p = 0; p < sizeof periods / sizeof periods[0]; p++) {
            const double theta = 2.0 * 3.14159265358979323846 / (periods[p] * n);
            const double e = fit_terms(r, step, g, theta, K, c);
            if (e < best) {
                best = e;
                bk = K;
                btheta = theta;
                memcpy(bc, c, sizeof c);
            }
        }
    if (isfinite(best) && step > 1)
        best = fit_error(r, 1, g, btheta, bk, bc);
    free(g);
    if (!isfinite(best))
        return 0;
    f->nterms = bk;
    f->a0 = bc[0];
    f->err = best;
    for (int k = 0; k < bk; k++) {
        f->a[k] = bc[k + 1];
        f->w[k] = (k + 1) * btheta;
    }
    return 1;
}

int ic__blur_fits(int blur, double sigma_x, double sigma_y, int kw, int kh)
{
    return blur == IC_BLUR_BOX ||
           (kw <= 2 * (int)ceil(4.0 * sigma_x) + 1 && kh <= 2 * (int)ceil(4.0 * sigma_y) + 1);
}
