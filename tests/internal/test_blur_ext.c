/*
 * test_blur_ext.c - the closed form of the `cuda` blur method's window ends
 * (src/core/blur_ext.h): F(m) = sum_{0 <= i < m} e_i e^{j w i} over a line
 * extended by the border rule, from the line's own prefix sums, must equal
 * the straightforward sum over the extended line (long double, the border
 * rule of tests/support/oracle.c) for every border mode, lines of 1 to 9
 * samples and a few longer ones, ends up to 400 times the line on either
 * side, and frequencies whose period's phase w P sits on or next to a
 * multiple of 2 pi. A box (w = 0) on integer samples must be exact. Windows
 * of radius r as the kernel forms them, e^{-j w x} (F(x+r+1) - F(x-r)),
 * must equal the direct window sums. A failing case prints its parameters.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/blur_ext.h"
#include "oracle.h" /* ict_border_map: the border rule, apart from the library */

#define MAXN 64
#define RMAX 3600 /* the largest radius: 400 times a line of 9 */
#define TOL 1e-13 /* of the sum of |e_i| over the range: a few float64 roundings per period */

static int failures;
static long cases;
static double worst;

static uint64_t rng = 0x9E3779B97F4A7C15ull;
static unsigned urand(unsigned top)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (unsigned)((rng >> 20) % (top + 1u));
}

/* One line, border and frequency: the line's own prefixes (as the kernel's
 * scan gives them) and the tables the direct sums read. */
typedef struct line_case {
    const double *e;
    int n;
    ic_border b;
    double v, w, emax;
    ic_blur_cplx pre[MAXN + 1];
    int lo; /* the tables hold the extended line and cos, sin of w t from t = lo */
    const double *ex;
    long double *cw, *sw;
} line_case;

static ic_blur_cplx closed(const line_case *lc, int m)
{
    const int n = lc->n, k = ic_blur_ext_point(m, n, lc->b);
    if (k < 0 || k > n) {
        printf("FAIL: border %s n %d m %d: point %d outside [0, %d]\n", ic_border_name(lc->b), n, m,
               k, n);
        failures++;
        return ic_blur_cmake(NAN, NAN);
    }
    const ic_blur_ext_term t = ic_blur_ext_term_make(lc->w, n, lc->b);
    return ic_blur_ext_sum(&t, m, n, lc->b, lc->pre[n], lc->pre[k], lc->e[0], lc->e[n - 1], lc->v);
}

static double sample(const line_case *lc, int i)
{
    return lc->ex[i - lc->lo];
}

static void compare(const line_case *lc, ic_blur_cplx c, long double dr, long double di, double tol,
                    const char *what, int at, int r)
{
    const double d = fmax(fabs((double)(c.re - dr)), fabs((double)(c.im - di)));
    cases++;
    if (tol > 0)
        worst = fmax(worst, d / tol);
    if (!(d <= tol)) {
        printf("FAIL: border %s n %d w %.17g %s %d (r %d): closed %.17g%+.17gj, direct "
               "%.17Lg%+.17Lgj\n",
               ic_border_name(lc->b), lc->n, lc->w, what, at, r, c.re, c.im, dr, di);
        failures++;
    }
}

/* F(m) for every m in [-far, far + n] (every step-th past the line) against
 * the direct sum, accumulated sample by sample outward from 0 in long double. */
static void check_ends(const line_case *lc, int far, int step)
{
    for (int dir = 1; dir >= -1; dir -= 2) {
        long double sr = 0, si = 0;
        const int last = dir > 0 ? far + lc->n : far;
        for (int a = 0; a <= last; a++) {
            const int m = dir * a;
            if (a > 0) { /* F(m) from F(m -+ 1): the sample at m-1, or minus the one at m */
                const int i = dir > 0 ? m - 1 : m;
                const long double f = sample(lc, i);
                sr += dir * f * lc->cw[i - lc->lo];
                si += dir * f * lc->sw[i - lc->lo];
            }
            if (m >= 0 && m <= lc->n ? 0 : a % step != 0)
                continue;
            const double tol = lc->w == 0.0 ? 0.0 : TOL * (a + lc->n + 1) * lc->emax;
            compare(lc, closed(lc, m), sr, si, tol, "end", m, 0);
        }
    }
}

/* the window of radius r at x from its two ends, e^{-j w x} (F(x+r+1) -
 * F(x-r)), as the kernel forms it, against the direct window sum */
static void check_window(const line_case *lc, int r, int x)
{
    long double sr = 0, si = 0;
    for (int t = -r; t <= r; t++) {
        const long double f = sample(lc, x + t);
        sr += f * lc->cw[t - lc->lo];
        si += f * lc->sw[t - lc->lo];
    }
    const ic_blur_cplx d = ic_blur_csub(closed(lc, x + r + 1), closed(lc, x - r));
    const ic_blur_cplx g = ic_blur_cmul(ic_blur_cis(-lc->w, x), d);
    const double tol = lc->w == 0.0 ? 0.0 : TOL * (2.0 * r + lc->n + 1) * lc->emax;
    compare(lc, g, sr, si, tol, "window at x", x, r);
}

/* The walker (ic_blur_walk_*) against the oracle's border rule, from every
 * start in [-3P - 2, 3P + n] over 4P + 2n + 4 steps. */
static void check_walk(int n, ic_border b)
{
    const int P = ic_blur_ext_period(n, b), span = 3 * (P ? P : n) + 2;
    for (int i0 = -span; i0 <= span + n; i0++) {
        int p = ic_blur_walk_start(i0, n, b);
        for (int i = i0; i < i0 + 4 * span + 2 * n; i++) {
            const int got = ic_blur_walk_sample(p, n, b), want = ict_border_map(i, n, b);
            cases++;
            if (got != want) {
                printf("FAIL: border %s n %d: the walk from %d reads %d at %d, the rule %d\n",
                       ic_border_name(b), n, i0, got, i, want);
                failures++;
                return;
            }
            p = ic_blur_walk_next(p, P);
        }
    }
}

int main(void)
{
    const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                 IC_BORDER_REFLECT, IC_BORDER_WRAP};
    const int lines[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 17, 31, 64};
    const int radii[] = {0, 1, 3, 20, 150, 1500, RMAX};
    const double v = 40000.0, emax = 65535.0;
    for (size_t li = 0; li < sizeof lines / sizeof lines[0]; li++) {
        const int n = lines[li];
        double e[MAXN];
        for (int i = 0; i < n; i++) /* integers: a box's sums are exact */
            e[i] = (double)urand(65535);
        for (int bi = 0; bi < 5; bi++) {
            const ic_border b = borders[bi];
            check_walk(n, b);
            const int P = n == 1 ? 1 : b == IC_BORDER_MIRROR ? 2 * n - 2 : 2 * n;
            /* the fit's frequencies (2 pi / T, T 1.2 to 2 supports) and
             * others; w P on a multiple of 2 pi and one ulp-ish off it */
            const double two_pi = 6.283185307179586;
            const double ws[] = {
                0.0, 0.0021, 0.37, 2.9, two_pi / P, 3 * two_pi / P, two_pi / P + 1e-12, -0.75};
            const int far = 400 * n + 3, lo = -(far > RMAX ? far : RMAX) - 1;
            const size_t nt = (size_t)(2 * -lo + n + 1);
            double *ex = malloc(nt * sizeof *ex);
            long double *tab = malloc(2 * nt * sizeof *tab);
            if (!ex || !tab) {
                printf("FAIL: out of memory\n");
                return 1;
            }
            for (size_t i = 0; i < nt; i++) { /* the oracle's rule walks: once per line */
                const int u = ict_border_map(lo + (int)i, n, b);
                ex[i] = u < 0 ? v : e[u];
            }
            for (size_t wi = 0; wi < sizeof ws / sizeof ws[0]; wi++) {
                line_case lc = {e, n, b, v, ws[wi], emax, {{0, 0}}, lo, ex, tab, tab + nt};
                for (size_t i = 0; i < nt; i++) {
                    const long double t = (long double)lc.w * (lo + (long)i);
                    lc.cw[i] = cosl(t);
                    lc.sw[i] = sinl(t);
                }
                for (int k = 0; k < n; k++)
                    lc.pre[k + 1] = ic_blur_cadd(
                        lc.pre[k], ic_blur_cmake(e[k] * cos(lc.w * k), e[k] * sin(lc.w * k)));
                check_ends(&lc, far, far > 4000 ? 7 : 1); /* 7, a prime: every phase */
                for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++)
                    for (int x = 0; x<n; x += n> 9 ? 5 : 1)
                        check_window(&lc, radii[ri], x);
            }
            free(ex);
            free(tab);
        }
    }
    printf("closed-form extension: %ld cases, largest difference %.3g of the tolerance (w = 0: "
           "compared for equality)\n",
           cases, worst);
    if (failures)
        printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
