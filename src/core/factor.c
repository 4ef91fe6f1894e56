/*
 * factor.c - separable decomposition of a kernel: K = sum_r col_r * row_r^T.
 *
 * A rank-r kernel applied as r pairs of 1D passes costs 2*r*K multiply-adds per
 * pixel instead of K^2 (the separable idea behind cuda-samples'
 * convolutionSeparable and libvips' convsep). We take the SVD of the effective
 * weights by one-sided Jacobi (Hestenes) in float64, which is simple, accurate
 * for small matrices (kernels are at most 255x255) and needs no LAPACK, then
 * keep the smallest rank whose reconstruction, computed from the float32
 * vectors the backends will actually use, is within tol * max|K| of K.
 * Singular values are split symmetrically: both vectors carry sqrt(sigma).
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "imgconv.h"

#define JACOBI_MAX_SWEEPS 60
#define JACOBI_EPS 1e-15
#define JACOBI_NOISE 1e-12

/* One-sided Jacobi on the m x n column-major matrix a (m >= n is not needed,
 * but fewer columns is faster): rotates column pairs until they are orthogonal,
 * accumulating the rotations in v (n x n, column-major, starts as identity).
 * Afterwards column c of a is sigma_c * u_c and sv[c] = sigma_c. */
static void jacobi_svd(double *a, int m, int n, double *v, double *sv)
{
    for (int c = 0; c < n; c++)
        for (int r = 0; r < n; r++)
            v[(size_t)c * n + r] = r == c;
    for (int sweep = 0; sweep < JACOBI_MAX_SWEEPS; sweep++) {
        /* Squared column norms, refreshed each sweep and updated per rotation
         * (alpha' = alpha - t*gamma, beta' = beta + t*gamma), so that a pair
         * costs one dot product instead of three. */
        for (int c = 0; c < n; c++) {
            const double *ac = a + (size_t)c * m;
            double s = 0;
            for (int r = 0; r < m; r++)
                s += ac[r] * ac[r];
            sv[c] = s;
        }
        /* Columns below JACOBI_NOISE * ||K|| are rounding noise (what is left
         * of a column whose content was rotated away): rotating them moves
         * nothing above 1e-12 relative, far below the float32 vectors we
         * return, and noise pairs would otherwise keep the sweeps going on
         * rank-deficient kernels (most of them: Gaussian, box, unsharp). */
        double fro2 = 0;
        for (int c = 0; c < n; c++)
            fro2 += sv[c];
        const double negligible = JACOBI_NOISE * JACOBI_NOISE * fro2;
        int rotated = 0;
        for (int p = 0; p < n - 1; p++) {
            for (int q = p + 1; q < n; q++) {
                double *ap = a + (size_t)p * m, *aq = a + (size_t)q * m;
                const double alpha = sv[p], beta = sv[q];
                if (alpha <= negligible || beta <= negligible)
                    continue;
                double gamma = 0;
                for (int r = 0; r < m; r++)
                    gamma += ap[r] * aq[r];
                if (gamma == 0.0 || fabs(gamma) <= JACOBI_EPS * sqrt(alpha) * sqrt(beta))
                    continue;
                rotated = 1;
                const double zeta = (beta - alpha) / (2.0 * gamma);
                const double t = (zeta >= 0 ? 1.0 : -1.0) / (fabs(zeta) + hypot(1.0, zeta));
                const double cs = 1.0 / sqrt(1.0 + t * t), sn = cs * t;
                for (int r = 0; r < m; r++) {
                    const double x = ap[r], y = aq[r];
                    ap[r] = cs * x - sn * y;
                    aq[r] = sn * x + cs * y;
                }
                double *vp = v + (size_t)p * n, *vq = v + (size_t)q * n;
                for (int r = 0; r < n; r++) {
                    const double x = vp[r], y = vq[r];
                    vp[r] = cs * x - sn * y;
                    vq[r] = sn * x + cs * y;
                }
                sv[p] = fmax(alpha - t * gamma, 0.0);
                sv[q] = fmax(beta + t * gamma, 0.0);
            }
        }
        if (!rotated)
            break;
    }
    for (int c = 0; c < n; c++) {
        double s = 0;
        for (int r = 0; r < m; r++)
            s += a[(size_t)c * m + r] * a[(size_t)c * m + r];
        sv[c] = sqrt(s);
    }
}

void ic_factors_free(ic_factors *f)
{
    if (!f)
        return;
    free(f->row);
    free(f->col);
    memset(f, 0, sizeof *f);
}

static int kernel_ok(const ic_kernel *k)
{
    return k && k->coef && k->width >= 1 && k->height >= 1 && k->width <= IC_MAX_KERNEL &&
           k->height <= IC_MAX_KERNEL && isfinite(k->divisor) && k->divisor != 0.0;
}

/* Flips a term's sign so that the largest-magnitude entry of its row vector is
 * positive: the same kernel always gives the same vectors. */
static void canonical_sign(float *row, int w, float *col, int h)
{
    int best = 0;
    for (int i = 1; i < w; i++)
        if (fabsf(row[i]) > fabsf(row[best]))
            best = i;
    if (row[best] >= 0)
        return;
    for (int i = 0; i < w; i++)
        row[i] = -row[i];
    for (int j = 0; j < h; j++)
        col[j] = -col[j];
}

/* The rank-1 fast path (Gaussian, box, derivative kernels): with (r, c) the
 * largest entry, K = K[:,c] K[r,:] / K[r,c] exactly when K has rank 1. The
 * scale is split so that both vectors get the same 2-norm, as the SVD's
 * sqrt(sigma) split would. Returns 1 (f filled, rank 1) when within limit. */
static int try_rank1(const double *K, int W, int H, double limit, ic_factors *f)
{
    int br = 0, bc = 0;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++)
            if (fabs(K[(size_t)j * W + i]) > fabs(K[(size_t)br * W + bc])) {
                br = j;
                bc = i;
            }
    const double pivot = K[(size_t)br * W + bc]; /* nonzero: K is not all zero */
    double nrow = 0, ncol = 0;
    for (int i = 0; i < W; i++)
        nrow += K[(size_t)br * W + i] * K[(size_t)br * W + i];
    for (int j = 0; j < H; j++)
        ncol += K[(size_t)j * W + bc] * K[(size_t)j * W + bc];
    const double a = sqrt(sqrt(nrow) / (sqrt(ncol) * fabs(pivot))), b = 1.0 / (pivot * a);
    for (int j = 0; j < H; j++)
        f->col[j] = (float)(K[(size_t)j * W + bc] * a);
    for (int i = 0; i < W; i++)
        f->row[i] = (float)(K[(size_t)br * W + i] * b);
    canonical_sign(f->row, W, f->col, H);
    double err = 0;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const double e = fabs(K[(size_t)j * W + i] - (double)f->col[j] * (double)f->row[i]);
            err = e > err ? e : err;
        }
    if (err > limit)
        return 0;
    f->rank = 1;
    f->max_err = err;
    return 1;
}

ic_status ic_kernel_factor(const ic_kernel *k, double tol, int max_rank, ic_factors *f)
{
    if (!f)
        return ic_fail(IC_ERR_INVALID_ARG, "no factors to fill (NULL)");
    memset(f, 0, sizeof *f);
    if (!kernel_ok(k) || !(tol >= 0.0) || !isfinite(tol) || max_rank < 0)
        return ic_fail(IC_ERR_INVALID_ARG, "invalid kernel, negative or non-finite tolerance, or "
                                           "negative rank");
    if (tol == 0.0)
        tol = 1e-6;

    const int W = k->width, H = k->height;
    const size_t n = (size_t)W * (size_t)H; /* <= 255^2 */
    int cap = W < H ? W : H;
    if (max_rank > 0 && max_rank < cap)
        cap = max_rank;

    /* K (row-major, float64), the residual of the reconstruction so far, and
     * the SVD work: the Jacobi matrix has min(W,H) columns of max(W,H). */
    const int tall = H >= W; /* columns of K are the Jacobi columns */
    const int jm = tall ? H : W, jn = tall ? W : H;
    double *K = malloc(n * sizeof *K);
    double *res = malloc(n * sizeof *res);
    double *a = malloc(n * sizeof *a);
    double *v = malloc((size_t)jn * (size_t)jn * sizeof *v);
    double *sv = malloc((size_t)jn * sizeof *sv);
    int *order = malloc((size_t)jn * sizeof *order);
    f->row = malloc((size_t)cap * (size_t)W * sizeof *f->row);
    f->col = malloc((size_t)cap * (size_t)H * sizeof *f->col);
    ic_status st = IC_OK;
    if (!K || !res || !a || !v || !sv || !order || !f->row || !f->col) {
        st = ic_fail(IC_ERR_NOMEM, "out of memory factoring a %dx%d kernel", W, H);
        goto done;
    }
    f->width = W;
    f->height = H;

    double maxabs = 0;
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const double x = (double)k->coef[(size_t)j * W + i] / k->divisor;
            K[(size_t)j * W + i] = x;
            res[(size_t)j * W + i] = x;
            maxabs = fabs(x) > maxabs ? fabs(x) : maxabs;
        }
    const double limit = tol * maxabs;

    if (maxabs == 0.0) { /* the zero kernel: one zero term is exact */
        memset(f->row, 0, (size_t)W * sizeof *f->row);
        memset(f->col, 0, (size_t)H * sizeof *f->col);
        f->rank = 1;
        f->max_err = 0;
        goto done;
    }

    if (W == 1 || H == 1) { /* a single row or column is its own rank-1 factor */
        for (int i = 0; i < W; i++)
            f->row[i] = H == 1 ? (float)K[i] : 1.0f;
        for (int j = 0; j < H; j++)
            f->col[j] = H > 1 ? (float)K[j] : 1.0f; /* W == 1 here */
        f->max_err = 0;
        for (size_t t = 0; t < n; t++) {
            const double e = fabs(K[t] - (double)(H == 1 ? f->row[t] : f->col[t]));
            f->max_err = e > f->max_err ? e : f->max_err;
        }
        f->rank = f->max_err <= limit;
        goto done;
    }

    if (try_rank1(K, W, H, limit, f))
        goto done;

    /* Jacobi on K / maxabs (keeps the dot products away from under/overflow),
     * column-major: a[c*jm + r] = K(r, c) for tall kernels, K^T otherwise. */
    for (int j = 0; j < H; j++)
        for (int i = 0; i < W; i++) {
            const double x = K[(size_t)j * W + i] / maxabs;
            if (tall)
                a[(size_t)i * jm + j] = x;
            else
                a[(size_t)j * jm + i] = x;
        }
    jacobi_svd(a, jm, jn, v, sv);
    for (int c = 0; c < jn; c++)
        order[c] = c;
    for (int c = 1; c < jn; c++) { /* insertion sort, descending sigma */
        int x = order[c], d = c;
        while (d > 0 && sv[order[d - 1]] < sv[x]) {
            order[d] = order[d - 1];
            d--;
        }
        order[d] = x;
    }

    double err = 0;
    for (int r = 0; r < cap; r++) {
        const int c = order[r];
        const double sigma = sv[c] * maxabs;
        const double s = sqrt(sigma);
        float *row = f->row + (size_t)r * W, *col = f->col + (size_t)r * H;
        /* u_c = a_c / sigma_c (length jm), v_c (length jn). */
        for (int t = 0; t < jm; t++) {
            const double u = sv[c] > 0 ? a[(size_t)c * jm + t] / sv[c] : 0.0;
            if (tall)
                col[t] = (float)(s * u);
            else
                row[t] = (float)(s * u);
        }
        for (int t = 0; t < jn; t++) {
            const double vv = v[(size_t)c * jn + t];
            if (tall)
                row[t] = (float)(s * vv);
            else
                col[t] = (float)(s * vv);
        }
        canonical_sign(row, W, col, H);
        err = 0;
        for (int j = 0; j < H; j++)
            for (int i = 0; i < W; i++) {
                double *e = &res[(size_t)j * W + i];
                *e -= (double)col[j] * (double)row[i];
                err = fabs(*e) > err ? fabs(*e) : err;
            }
        if (err <= limit) {
            f->rank = r + 1;
            break;
        }
    }
    f->max_err = err;

done:
    free(K);
    free(res);
    free(a);
    free(v);
    free(sv);
    free(order);
    if (st != IC_OK || f->rank == 0) {
        double e = f->max_err;
        int w = f->width, h = f->height;
        ic_factors_free(f);
        if (st == IC_OK) { /* no rank <= cap fits: report the best error seen */
            f->width = w;
            f->height = h;
            f->max_err = e;
        }
    }
    return st;
}
