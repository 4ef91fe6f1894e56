/*
 * cpu_blur.c - gaussian and box kernels of any size on the `cpu` backend, in
 * constant time per pixel whatever the radius (docs/design/blur.md).
 *
 * Both are separable: a horizontal pass from the image into a float image B,
 * then a vertical pass from B into the destination. Each pass slides a window
 * of 2r+1 samples along its line extended by the border rule (as the direct
 * sum reads it), starting from the first window folded onto the line, so
 * that neither the start nor the steps cost more with the radius:
 *  - box: a running sum (exact: integer samples summed in float64);
 *  - gaussian: g(i) ~ a0 + sum_k a_k cos(k theta i) on |i| <= r, fitted by
 *    least squares; each cosine term is the real part of a sliding complex sum
 *    Z(x) = sum_i e^{j w i} e(x+i), updated as Z(x+1) = e^{-j w} (Z(x) -
 *    e^{-j w r} e(x-r) + e^{j w (r+1)} e(x+r+1)) in float64. The number of
 *    terms is the fewest whose kernel error (L1) keeps the result within 0.1
 *    level of the exact FIR per pass, at the image's bit depth.
 * Sequences run 16 at a time in vector lanes: 16 rows of one channel in the
 * horizontal pass, 16 neighbouring columns in the vertical one.
 */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/blur_fit.h"
#include "core/border.h"
#include "core/error.h"
#include "core/image_internal.h"
#include "cpu/cpu_blur.h"

#define LANES 16
#define MAX_TERMS IC_BLUR_MAX_TERMS

typedef struct blur1d {
    int r;      /* radius: the window is 2r+1 samples */
    int nterms; /* cosine terms (0: a plain sum) */
    double a0;  /* weight of the plain sum */
    double a[MAX_TERMS];
    double rr[MAX_TERMS], ri[MAX_TERMS];   /* e^{-j w} */
    double cor[MAX_TERMS], coi[MAX_TERMS]; /* -e^{-j w r}: the sample leaving */
    double cnr[MAX_TERMS], cni[MAX_TERMS]; /* e^{j w (r+1)}: the sample entering */
    double *ctab, *stab; /* nterms x (2r+1): cos and sin of w (m - r), to start a window */
    double sum;          /* sum of the fitted weights (a constant border's weight) */
    double err;          /* L1 distance of the fitted weights from the exact ones */
    /* the first window folded onto the line (blur1d_fold): rows iu[j] weigh
     * i0[j] in the plain sum and icr + j ici in term k (k * ni + j) */
    int ni, *iu;
    double *i0, *icr, *ici;
    float *f0;      /* i0, icr, ici in float for the float32 slide */
    int real;       /* every ici is 0: starting skips the sines */
    int *mlo, *mhi; /* the row step x drops (position x-r) and takes (x+r+1) */
} blur1d;

/* ---- fitting ---------------------------------------------------------------- */

/* The shared fit (core/blur_fit.c) with the tables the sliding window needs. */
static int blur1d_make(blur1d *b, int n, double sigma, double box_weight, double tol)
{
    memset(b, 0, sizeof *b);
    ic_blur_fit f;
    if (!ic__blur_fit(&f, n, sigma, box_weight, tol))
        return 0;
    const int r = b->r = f.r, bk = b->nterms = f.nterms;
    b->a0 = f.a0;
    b->err = f.err;
    b->sum = b->a0 * n;
    if (!bk)
        return 1;
    b->ctab = malloc((size_t)bk * (size_t)n * 2 * sizeof *b->ctab);
    if (!b->ctab)
        return 0;
    b->stab = b->ctab + (size_t)bk * (size_t)n;
    for (int k = 0; k < bk; k++) {
        const double w = f.w[k];
        b->a[k] = f.a[k];
        b->rr[k] = cos(w);
        b->ri[k] = -sin(w);
        b->cor[k] = -cos(w * r);
        b->coi[k] = sin(w * r);
        b->cnr[k] = cos(w * (r + 1));
        b->cni[k] = sin(w * (r + 1));
        for (int m = 0; m < n; m++) {
            b->ctab[(size_t)k * n + m] = cos(w * (m - r));
            b->stab[(size_t)k * n + m] = sin(w * (m - r));
            b->sum += b->a[k] * b->ctab[(size_t)k * n + m];
        }
    }
    return 1;
}

static void blur1d_free(blur1d *b)
{
    free(b->ctab);
    free(b->iu);
    free(b->i0);
    free(b->f0);
    free(b->mlo);
    b->ctab = b->stab = NULL;
    b->iu = b->mlo = b->mhi = NULL;
    b->i0 = b->icr = b->ici = NULL;
    b->f0 = NULL;
}

/* dst = src's fit (the same kernel on the other axis), not yet folded. */
static int blur1d_copy(blur1d *dst, const blur1d *src)
{
    const size_t nt = (size_t)src->nterms * (size_t)(2 * src->r + 1) * 2;
    *dst = *src;
    dst->ctab = dst->stab = NULL;
    if (src->ctab) {
        dst->ctab = malloc(nt * sizeof *dst->ctab);
        if (!dst->ctab)
            return 0;
        memcpy(dst->ctab, src->ctab, nt * sizeof *dst->ctab);
        dst->stab = dst->ctab + (src->stab - src->ctab);
    }
    return 1;
}

/* Folds the first window, positions -r..r of a line of N samples extended by
 * `border`, onto the line itself: sample u weighs the sum of h and of
 * e^{j w_k t} over every position t that reads it (the reflections and
 * wraps of a window wider than the line included), and the outside of a
 * constant border becomes row N. A line then starts in O(min(2r+1, N+1))
 * rows whatever the radius; the fold costs O(K r) once per pass. Also maps
 * the samples each step drops (position x-r) and takes (x+r+1). */
static int blur1d_fold(blur1d *b, int N, int border)
{
    const int r = b->r, K = b->nterms, win = 2 * r + 1;
    const size_t rows = (size_t)N + 1, planes = 1 + 2 * (size_t)K;
    double *acc = calloc(rows * planes, sizeof *acc);
    b->mlo = malloc(2 * (size_t)N * sizeof *b->mlo);
    b->iu = malloc(rows * sizeof *b->iu);
    if (!acc || !b->mlo || !b->iu) {
        free(acc);
        return 0;
    }
    b->mhi = b->mlo + N;
    for (int t = -r; t <= r; t++) {
        const int m = ic_border_map(t, N, border);
        const size_t u = m < 0 ? (size_t)N : (size_t)m;
        acc[u] += 1.0;
        for (int k = 0; k < K; k++) {
            acc[(1 + (size_t)k) * rows + u] += b->ctab[(size_t)k * win + (t + r)];
            acc[(1 + (size_t)K + k) * rows + u] += b->stab[(size_t)k * win + (t + r)];
        }
    }
    b->ni = 0;
    for (size_t u = 0; u < rows; u++)
        if (acc[u] != 0.0)
            b->iu[b->ni++] = (int)u;
    b->i0 = malloc((size_t)b->ni * planes * sizeof *b->i0);
    b->f0 = malloc((size_t)b->ni * planes * sizeof *b->f0);
    if (!b->i0 || !b->f0) {
        free(acc);
        return 0;
    }
    b->icr = b->i0 + b->ni;
    b->ici = b->icr + (size_t)K * b->ni;
    b->real = 1;
    for (int j = 0; j < b->ni; j++) {
        const size_t u = (size_t)b->iu[j];
        b->i0[j] = acc[u];
        for (int k = 0; k < K; k++) {
            b->icr[(size_t)k * b->ni + j] = acc[(1 + (size_t)k) * rows + u];
            b->ici[(size_t)k * b->ni + j] = acc[(1 + (size_t)K + k) * rows + u];
            /* an even map (mirror) cancels the sines: skip them when starting */
            if (fabs(b->ici[(size_t)k * b->ni + j]) > 1e-9)
                b->real = 0;
        }
    }
    free(acc);
    for (size_t i = 0; i < (size_t)b->ni * planes; i++)
        b->f0[i] = (float)b->i0[i];
    for (int x = 0; x < N; x++) {
        const int lo = ic_border_map(x - r, N, border), hi = ic_border_map(x + r + 1, N, border);
        b->mlo[x] = lo < 0 ? N : lo;
        b->mhi[x] = hi < 0 ? N : hi;
    }
    return 1;
}

/* ---- the sliding window ------------------------------------------------------ */

/* out[x*LANES + l] = sum_i h(i) e(x+i) in lane l for x < n: the first window
 * from the rows the fold names (row[b->iu[j]], LANES floats each), then each
 * step drops row[mlo[x]] and takes row[mhi[x]]. Inlined into one copy per
 * instruction set. */
static inline __attribute__((always_inline)) void
slide_body(const blur1d *b, const float *const *row, int n, float *out, size_t ostride, int use_fma)
{
#define MADD(x, y, z) (use_fma ? __builtin_fma((x), (y), (z)) : (x) * (y) + (z))
    const int K = b->nterms, ni = b->ni;
    double s[LANES], zr[MAX_TERMS][LANES], zi[MAX_TERMS][LANES];
    for (int l = 0; l < LANES; l++)
        s[l] = 0.0;
    for (int k = 0; k < K; k++)
        for (int l = 0; l < LANES; l++)
            zr[k][l] = zi[k][l] = 0.0;
    for (int j = 0; j < ni; j++) {
        const float *e = row[b->iu[j]];
        const double c0 = b->i0[j];
        for (int l = 0; l < LANES; l++)
            s[l] = MADD(c0, (double)e[l], s[l]);
        for (int k = 0; k < K; k++) {
            const double c = b->icr[(size_t)k * ni + j], sn = b->ici[(size_t)k * ni + j];
            for (int l = 0; l < LANES; l++) {
                zr[k][l] = MADD(c, (double)e[l], zr[k][l]);
                zi[k][l] = MADD(sn, (double)e[l], zi[k][l]);
            }
        }
    }
    const double a0 = b->a0;
    for (int x = 0;; x++) {
        double o[LANES];
        for (int l = 0; l < LANES; l++)
            o[l] = a0 * s[l];
        for (int k = 0; k < K; k++) {
            const double a = b->a[k];
            for (int l = 0; l < LANES; l++)
                o[l] = MADD(a, zr[k][l], o[l]);
        }
        for (int l = 0; l < LANES; l++)
            out[(size_t)x * ostride + l] = (float)o[l];
        if (x == n - 1)
            break;
        const float *eo = row[b->mlo[x]], *en = row[b->mhi[x]];
        for (int l = 0; l < LANES; l++)
            s[l] += (double)en[l] - (double)eo[l];
        for (int k = 0; k < K; k++) {
            const double cor = b->cor[k], coi = b->coi[k], cnr = b->cnr[k], cni = b->cni[k];
            const double rr = b->rr[k], ri = b->ri[k];
            for (int l = 0; l < LANES; l++) {
                const double fo = eo[l], fn = en[l];
                const double ur = MADD(cnr, fn, MADD(cor, fo, zr[k][l]));
                const double ui = MADD(cni, fn, MADD(coi, fo, zi[k][l]));
                zr[k][l] = MADD(rr, ur, -ri * ui);
                zi[k][l] = MADD(rr, ui, ri * ur);
            }
        }
    }
#undef MADD
}

static void slide_base(const blur1d *b, const float *const *row, int n, float *out, size_t ostride)
{
    slide_body(b, row, n, out, ostride, 0);
}

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>
#define AVX2 __attribute__((target("avx2,fma")))
#define PREFETCH 12 /* steps ahead */
#define F32_MAX_STEPS 16384

AVX2 static inline void load16(const float *e, __m256d v[4])
{
    for (int q = 0; q < 4; q++)
        v[q] = _mm256_cvtps_pd(_mm_loadu_ps(e + 4 * q));
}

/* slide_body in AVX2 intrinsics: the compiler's own vectorisation of it
 * shuffles the terms' real and imaginary parts between lanes. */
AVX2 static void slide_avx2(const blur1d *b, const float *const *row, int n, float *out,
                            size_t ostride)
{
    const int K = b->nterms, ni = b->ni;
    __m256d s[4], zr[MAX_TERMS][4], zi[MAX_TERMS][4], e[4], f[4];
    for (int q = 0; q < 4; q++) {
        s[q] = _mm256_setzero_pd();
        for (int k = 0; k < K; k++)
            zr[k][q] = zi[k][q] = _mm256_setzero_pd();
    }
    for (int j = 0; j < ni; j++) {
        load16(row[b->iu[j]], e);
        const __m256d c0 = _mm256_set1_pd(b->i0[j]);
        for (int q = 0; q < 4; q++)
            s[q] = _mm256_fmadd_pd(c0, e[q], s[q]);
        for (int k = 0; k < K; k++) {
            const __m256d c = _mm256_set1_pd(b->icr[(size_t)k * ni + j]);
            for (int q = 0; q < 4; q++)
                zr[k][q] = _mm256_fmadd_pd(c, e[q], zr[k][q]);
            if (b->real)
                continue;
            const __m256d sn = _mm256_set1_pd(b->ici[(size_t)k * ni + j]);
            for (int q = 0; q < 4; q++)
                zi[k][q] = _mm256_fmadd_pd(sn, e[q], zi[k][q]);
        }
    }
    const __m256d a0 = _mm256_set1_pd(b->a0);
    for (int x = 0;; x++) {
        float *o = out + (size_t)x * ostride;
        __m256d acc[4];
        for (int q = 0; q < 4; q++)
            acc[q] = _mm256_mul_pd(a0, s[q]);
        for (int k = 0; k < K; k++) {
            const __m256d a = _mm256_set1_pd(b->a[k]);
            for (int q = 0; q < 4; q++)
                acc[q] = _mm256_fmadd_pd(a, zr[k][q], acc[q]);
        }
        for (int q = 0; q < 4; q++)
            _mm_storeu_ps(o + 4 * q, _mm256_cvtpd_ps(acc[q]));
        if (x == n - 1)
            break;
        if (x + PREFETCH < n - 1) { /* rows of B lie far apart: fetch ahead */
            _mm_prefetch((const char *)row[b->mlo[x + PREFETCH]], _MM_HINT_T0);
            _mm_prefetch((const char *)row[b->mhi[x + PREFETCH]], _MM_HINT_T0);
        }
        load16(row[b->mlo[x]], e);
        load16(row[b->mhi[x]], f);
        for (int q = 0; q < 4; q++)
            s[q] = _mm256_add_pd(s[q], _mm256_sub_pd(f[q], e[q]));
        for (int k = 0; k < K; k++) {
            const __m256d cor = _mm256_set1_pd(b->cor[k]), coi = _mm256_set1_pd(b->coi[k]);
            const __m256d cnr = _mm256_set1_pd(b->cnr[k]), cni = _mm256_set1_pd(b->cni[k]);
            const __m256d rr = _mm256_set1_pd(b->rr[k]), ri = _mm256_set1_pd(b->ri[k]);
            for (int q = 0; q < 4; q++) {
                const __m256d ur = _mm256_fmadd_pd(cnr, f[q], _mm256_fmadd_pd(cor, e[q], zr[k][q]));
                const __m256d ui = _mm256_fmadd_pd(cni, f[q], _mm256_fmadd_pd(coi, e[q], zi[k][q]));
                zr[k][q] = _mm256_fmsub_pd(rr, ur, _mm256_mul_pd(ri, ui));
                zi[k][q] = _mm256_fmadd_pd(rr, ui, _mm256_mul_pd(ri, ur));
            }
        }
    }
}

/* slide_avx2 with float32 state, 8 lanes a vector: for 8-bit samples only,
 * where the rotation's rounding (2^-24 of the window sum a step) stays far
 * below a level over any row; 16-bit samples keep float64. K is a constant
 * in each copy, so the terms unroll and their state stays in registers. */
AVX2 static inline __attribute__((always_inline)) void slide_f32_body(const blur1d *b,
                                                                      const float *const *row,
                                                                      int n, float *out,
                                                                      size_t ostride, const int K)
{
    const int ni = b->ni;
    __m256 s[2], zr[MAX_TERMS][2], zi[MAX_TERMS][2], e[2], f[2];
    /* the step's constants, broadcast once: cor, coi, cnr, cni, rr, ri, a */
    __m256 kc[MAX_TERMS][7];
    for (int k = 0; k < K; k++) {
        const double c[7] = {b->cor[k], b->coi[k], b->cnr[k], b->cni[k],
                             b->rr[k],  b->ri[k],  b->a[k]};
        for (int i = 0; i < 7; i++)
            kc[k][i] = _mm256_set1_ps((float)c[i]);
    }
    for (int q = 0; q < 2; q++) {
        s[q] = _mm256_setzero_ps();
        for (int k = 0; k < K; k++)
            zr[k][q] = zi[k][q] = _mm256_setzero_ps();
    }
    const float *f0 = b->f0, *fr = f0 + ni, *fi = fr + (size_t)K * ni;
    for (int j = 0; j < ni; j++) {
        const __m256 c0 = _mm256_set1_ps(f0[j]);
        for (int q = 0; q < 2; q++) {
            e[q] = _mm256_loadu_ps(row[b->iu[j]] + 8 * q);
            s[q] = _mm256_fmadd_ps(c0, e[q], s[q]);
        }
        for (int k = 0; k < K; k++) {
            const __m256 c = _mm256_set1_ps(fr[(size_t)k * ni + j]);
            for (int q = 0; q < 2; q++)
                zr[k][q] = _mm256_fmadd_ps(c, e[q], zr[k][q]);
            if (b->real)
                continue;
            const __m256 sn = _mm256_set1_ps(fi[(size_t)k * ni + j]);
            for (int q = 0; q < 2; q++)
                zi[k][q] = _mm256_fmadd_ps(sn, e[q], zi[k][q]);
        }
    }
    const __m256 a0 = _mm256_set1_ps((float)b->a0);
    const int *mlo = b->mlo, *mhi = b->mhi;
    for (int x = 0;; x++) {
        float *o = out + (size_t)x * ostride;
        for (int q = 0; q < 2; q++) {
            __m256 acc = _mm256_mul_ps(a0, s[q]);
            for (int k = 0; k < K; k++)
                acc = _mm256_fmadd_ps(kc[k][6], zr[k][q], acc);
            _mm256_storeu_ps(o + 8 * q, acc);
        }
        if (x == n - 1)
            break;
        if (x + PREFETCH < n - 1) { /* rows of B lie far apart: fetch ahead */
            _mm_prefetch((const char *)row[mlo[x + PREFETCH]], _MM_HINT_T0);
            _mm_prefetch((const char *)row[mhi[x + PREFETCH]], _MM_HINT_T0);
        }
        const float *eo = row[mlo[x]], *en = row[mhi[x]];
        for (int q = 0; q < 2; q++) {
            e[q] = _mm256_loadu_ps(eo + 8 * q);
            f[q] = _mm256_loadu_ps(en + 8 * q);
            s[q] = _mm256_add_ps(s[q], _mm256_sub_ps(f[q], e[q]));
        }
        for (int k = 0; k < K; k++)
            for (int q = 0; q < 2; q++) {
                const __m256 ur =
                    _mm256_fmadd_ps(kc[k][2], f[q], _mm256_fmadd_ps(kc[k][0], e[q], zr[k][q]));
                const __m256 ui =
                    _mm256_fmadd_ps(kc[k][3], f[q], _mm256_fmadd_ps(kc[k][1], e[q], zi[k][q]));
                zr[k][q] = _mm256_fmsub_ps(kc[k][4], ur, _mm256_mul_ps(kc[k][5], ui));
                zi[k][q] = _mm256_fmadd_ps(kc[k][4], ui, _mm256_mul_ps(kc[k][5], ur));
            }
    }
}

AVX2 static void slide_avx2_f32(const blur1d *b, const float *const *row, int n, float *out,
                                size_t ostride)
{
    switch (b->nterms) { /* the term counts the fit gives at 8 bits */
    case 0:
        slide_f32_body(b, row, n, out, ostride, 0);
        break;
    case 3:
        slide_f32_body(b, row, n, out, ostride, 3);
        break;
    case 4:
        slide_f32_body(b, row, n, out, ostride, 4);
        break;
    case 5:
        slide_f32_body(b, row, n, out, ostride, 5);
        break;
    default:
        slide_f32_body(b, row, n, out, ostride, b->nterms);
    }
}

/* ext[q * qstride + x * LANES + l] = sample m = x * cs + q of row b[l], for
 * the m of the whole 16-byte blocks of [0, n): the 16 rows' blocks transposed
 * by four rounds of byte interleaves (a perfect shuffle each), then one
 * column of 16 samples converted at a time. Returns the first m left. */
AVX2 static int gather_u8_avx2(const uint8_t *const *b, int n, int cs, float *ext, size_t qstride)
{
    int m0 = 0;
    for (; m0 + 16 <= n; m0 += 16) {
        __m128i r[16], t[16];
        for (int l = 0; l < 16; l++)
            r[l] = _mm_loadu_si128((const __m128i *)(const void *)(b[l] + m0));
        for (int round = 0; round < 4; round++) {
            for (int i = 0; i < 8; i++) {
                t[2 * i] = _mm_unpacklo_epi8(r[i], r[i + 8]);
                t[2 * i + 1] = _mm_unpackhi_epi8(r[i], r[i + 8]);
            }
            memcpy(r, t, sizeof r);
        }
        for (int j = 0; j < 16; j++) { /* r[j] holds sample m0 + j of the 16 rows */
            const int m = m0 + j, x = m / cs;
            float *e = ext + (size_t)(m - x * cs) * qstride + (size_t)x * LANES;
            _mm256_storeu_ps(e, _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(r[j])));
            _mm256_storeu_ps(e + 8,
                             _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_srli_si128(r[j], 8))));
        }
    }
    return m0;
}

/* A row of LANES sums scaled, biased, clamped and rounded (ties to even)
 * into LANES 8-bit samples; NaN becomes 0 (max returns its second operand). */
AVX2 static void finish_u8_avx2(const float *o, uint8_t *d, float sc, float bias, float top)
{
    __m256i v[2];
    for (int q = 0; q < 2; q++) {
        __m256 w = _mm256_add_ps(_mm256_mul_ps(_mm256_loadu_ps(o + 8 * q), _mm256_set1_ps(sc)),
                                 _mm256_set1_ps(bias));
        w = _mm256_min_ps(_mm256_max_ps(w, _mm256_setzero_ps()), _mm256_set1_ps(top));
        v[q] = _mm256_cvtps_epi32(w);
    }
    const __m256i h = _mm256_permute4x64_epi64(_mm256_packus_epi32(v[0], v[1]), 0xD8);
    _mm_storeu_si128((__m128i *)(void *)d,
                     _mm_packus_epi16(_mm256_castsi256_si128(h), _mm256_extracti128_si256(h, 1)));
}
#endif

typedef void (*slide_fn)(const blur1d *, const float *const *, int, float *, size_t);

/* ---- the two passes -------------------------------------------------------- */

typedef struct blur_plan {
    const ic_job *job;
    blur1d bx, by;
    slide_fn slide;
    int avx; /* AVX2 + FMA loops */
    int W, H, C;
    int planes; /* planes of B: channels for a planar image (no premultiply), else 1 */
    int bw;     /* floats in a row of B */
    int premul; /* colour multiplied by alpha going in, divided coming out */
    /* planes x strips of LANES floats x H rows: a strip's column is contiguous,
     * so the vertical pass streams it instead of striding across rows */
    float *B;
    int strips;
    float *crow;  /* a row of B beyond a constant border: the border value through bx */
    double scale; /* applied to the vertical sums (a box's 1/(w*h)) */
    double maxval;
    /* per worker */
    float **ext;        /* C x (W + 1) x LANES floats: a band's lines, each then the border value */
    const float ***ptr; /* max(W, H) + 1 row pointers */
    float **out;        /* strips x LANES x LANES floats, or H x LANES */
} blur_plan;

static double sample_at(const ic_image *im, const uint8_t *p)
{
    return im->type == IC_U16 ? (double)*(const uint16_t *)(const void *)p : (double)*p;
}

/* Writes a band's rows, T[i * LANES + l] for column i of B and row y0 + l,
 * into plane p of B: one LANES x LANES transpose per strip. */
static void band_store(const blur_plan *pl, const float *T, int p, int y0, int rows)
{
    for (int st = 0; st < pl->strips; st++) {
        float *d = pl->B + (((size_t)p * pl->strips + (size_t)st) * pl->H + (size_t)y0) * LANES;
        const float *t = T + (size_t)st * LANES * LANES;
        for (int l = 0; l < rows; l++)
            for (int m = 0; m < LANES; m++)
                d[l * LANES + m] = t[m * LANES + l];
    }
}

/* The horizontal pass of LANES rows (task = band), a channel at a time: lane l
 * holds row y0 + l, so that the band's output is whole blocks of B. */
static void hpass_task(void *arg, int task, int worker)
{
    blur_plan *pl = arg;
    const ic_job *job = pl->job;
    const ic_image *src = job->src;
    const int W = pl->W, C = pl->C;
    const size_t ss = ic_sample_size(src->type);
    const int y0 = task * LANES, rows = pl->H - y0 < LANES ? pl->H - y0 : LANES;
    float *ext = pl->ext[worker], *T = pl->out[worker];
    const float **ptr = pl->ptr[worker];
    const float v = job->border_value;
    /* AoS steps by C samples, SoA by 1 within plane q */
    const size_t step = src->layout == IC_AOS ? (size_t)C * ss : ss;
    const int bstep = pl->planes == 1 ? C : 1;
    const int plain = src->type == IC_U8 && !pl->premul;
    const size_t qstride = ((size_t)W + 1) * LANES; /* floats from one channel's line to the next */
    /* lanes past the last row repeat row y0, never stored */
#define LANE_ROW(l) (y0 + ((l) < rows ? (l) : 0))
    int done = 0; /* samples of each row already in ext */
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    if (plain && pl->avx && src->layout == IC_AOS) { /* every channel in one sweep */
        const uint8_t *b[LANES];
        for (int l = 0; l < LANES; l++)
            b[l] = ic_image_at(src, 0, LANE_ROW(l), 0);
        done = gather_u8_avx2(b, W * C, C, ext, qstride);
        for (int m = done; m < W * C; m++)
            for (int l = 0; l < LANES; l++)
                ext[(size_t)(m % C) * qstride + (size_t)(m / C) * LANES + l] = (float)b[l][m];
        done = W * C;
    }
#endif
    for (int q = 0; q < C; q++) {
        float *eq = ext + (size_t)q * qstride;
        const uint8_t *base[LANES], *abase[LANES];
        const int mul = pl->premul && q != C - 1;
        for (int t = 0; t <= W; t++)
            ptr[t] = eq + (size_t)t * LANES;
        for (int l = 0; l < LANES; l++) {
            base[l] = ic_image_at(src, 0, LANE_ROW(l), q);
            abase[l] = ic_image_at(src, 0, LANE_ROW(l), C - 1);
        }
        int x0 = done ? W : 0;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
        if (plain && pl->avx && src->layout == IC_SOA)
            x0 = gather_u8_avx2(base, W, 1, eq, 0);
#endif
        for (int x = x0; plain && x < W; x++) {
            float *e = eq + (size_t)x * LANES;
            const size_t off = (size_t)x * step;
            for (int l = 0; l < LANES; l++)
                e[l] = (float)base[l][off];
        }
        for (int x = 0; !plain && x < W; x++) {
            float *e = eq + (size_t)x * LANES;
            const size_t off = (size_t)x * step;
            for (int l = 0; l < LANES; l++)
                if (src->type == IC_U8)
                    e[l] = (float)base[l][off] * (mul ? (float)abase[l][off] : 1.0f);
                else
                    e[l] = (float)sample_at(src, base[l] + off) *
                           (mul ? (float)sample_at(src, abase[l] + off) : 1.0f);
        }
        for (int l = 0; l < LANES; l++) /* the outside of a constant border */
            eq[(size_t)W * LANES + l] = mul ? v * v : v;
        const int col = pl->planes == 1 ? q : 0;
        pl->slide(&pl->bx, ptr, W, T + (size_t)col * LANES, (size_t)bstep * LANES);
        if (pl->planes > 1)
            band_store(pl, T, q, y0, rows);
    }
#undef LANE_ROW
    if (pl->planes == 1)
        band_store(pl, T, 0, y0, rows);
}

/* Nearest, ties to even (the default rounding mode), without a libm call
 * (rint is one below SSE4.1); v in [0, 65535]. */
static inline double round_even(double v)
{
    const double big = 6755399441055744.0; /* 1.5 * 2^52: adding it drops the fraction */
    return (v + big) - big;
}

/* round_even in float, v in [0, 65535] */
static inline float round_evenf(float v)
{
    const float big = 12582912.0f; /* 1.5 * 2^23 */
    return (v + big) - big;
}

static void store_sample(const ic_image *dst, uint8_t *p, double v, double maxval)
{
    v = v > 0.0 ? v : 0.0; /* NaN fails the test and becomes 0 */
    v = v < maxval ? v : maxval;
    if (dst->type == IC_U16)
        *(uint16_t *)(void *)p = (uint16_t)round_even(v);
    else
        *p = (uint8_t)round_even(v);
}

/* The vertical pass of one strip of LANES floats of one plane of B. */
static void vpass_task(void *arg, int task, int worker)
{
    blur_plan *pl = arg;
    const ic_job *job = pl->job;
    const ic_image *dst = job->dst;
    const int H = pl->H, C = pl->C;
    const int strips = (pl->bw + LANES - 1) / LANES;
    const int p = task / strips, c0 = (task % strips) * LANES;
    const float **ptr = pl->ptr[worker];
    float *out = pl->out[worker];
    const float *strip = pl->B + ((size_t)p * pl->strips + (size_t)(c0 / LANES)) * H * LANES;
    for (int y = 0; y < H; y++)
        ptr[y] = strip + (size_t)y * LANES;
    ptr[H] = pl->crow + c0;
    pl->slide(&pl->by, ptr, H, out, LANES);
    const int cnt = pl->bw - c0 < LANES ? pl->bw - c0 : LANES;
    /* float is enough here: its rounding is under 0.01 level at 16 bits */
    const float sc = (float)pl->scale, bias = (float)job->bias, top = (float)pl->maxval;
    const int contiguous = pl->planes > 1 || dst->layout == IC_AOS;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    if (pl->avx && contiguous && dst->type == IC_U8 && !pl->premul && cnt == LANES) {
        for (int y = 0; y < H; y++)
            finish_u8_avx2(out + (size_t)y * LANES,
                           ic_image_at(dst, 0, y, pl->planes > 1 ? p : 0) + c0, sc, bias, top);
        return;
    }
#endif
    for (int y = 0; y < H; y++) {
        float *o = out + (size_t)y * LANES;
        for (int l = 0; l < LANES; l++)
            o[l] *= sc;
        if (pl->premul) /* strips hold whole pixels: LANES is a multiple of C */
            for (int l = 0; l < cnt; l += C) {
                const float a = o[l + C - 1];
                for (int q = 0; q < C - 1; q++)
                    o[l + q] = a > 0 ? o[l + q] / a : 0.0f;
            }
        for (int l = 0; l < LANES; l++) { /* biased, clamped; NaN fails `> 0` */
            const float v = o[l] + bias, w = v > 0.0f ? v : 0.0f;
            o[l] = round_evenf(w < top ? w : top);
        }
        if (contiguous && dst->type == IC_U8) {
            uint8_t *d = ic_image_at(dst, 0, y, pl->planes > 1 ? p : 0) + c0;
            for (int l = 0; l < cnt; l++)
                d[l] = (uint8_t)(int)o[l];
        } else if (contiguous) {
            uint16_t *d = (uint16_t *)(void *)ic_image_at(dst, 0, y, pl->planes > 1 ? p : 0) + c0;
            for (int l = 0; l < cnt; l++)
                d[l] = (uint16_t)(int)o[l];
        } else {
            for (int l = 0; l < cnt; l++)
                store_sample(dst, ic_image_at(dst, (c0 + l) / C, y, (c0 + l) % C), o[l], top);
        }
    }
}

/* ---- entry points ------------------------------------------------------------ */

static int blur_fits(const ic_job *job)
{
    const ic_kernel *k = job->wk;
    return ic__blur_fits(k->blur, k->sigma_x, k->sigma_y, job->kw, job->kh);
}

int ic_cpu_blur_wanted(const ic_job *job, int forced_fir)
{
    const ic_kernel *k = job->wk;
    if (!k || !k->blur)
        return 0;
    if (!job->w)
        return 1;
    if (forced_fir || !blur_fits(job))
        return 0;
    /* measured: the separable FIR is cheaper below these summed sizes */
    const int taps = job->kw + job->kh;
    return k->blur == IC_BLUR_BOX ? taps > CPU_BLUR_BOX_TAPS : taps > CPU_BLUR_GAUSS_TAPS;
}

static void plan_free(blur_plan *pl, int workers)
{
    blur1d_free(&pl->bx);
    blur1d_free(&pl->by);
    free(pl->B);
    free(pl->crow);
    for (int i = 0; pl->ext && i < workers; i++) {
        free(pl->ext[i]);
        free((void *)pl->ptr[i]);
        free(pl->out[i]);
    }
    free(pl->ext);
    free((void *)pl->ptr);
    free(pl->out);
}

ic_status ic_cpu_blur_run(cpu_pool *pool, int nthreads, int isa_avx, const ic_job *job, char *err,
                          size_t errlen)
{
    const ic_kernel *k = job->wk;
    const ic_image *src = job->src;
    blur_plan pl;
    memset(&pl, 0, sizeof pl);
    pl.job = job;
    pl.W = src->width;
    pl.H = src->height;
    pl.C = src->channels;
    pl.premul = job->premultiply;
    pl.planes = src->layout == IC_SOA && !pl.premul ? pl.C : 1;
    pl.bw = pl.planes > 1 ? pl.W : pl.W * pl.C;
    pl.maxval = src->type == IC_U16 ? 65535.0 : 255.0;
    pl.slide = slide_base;
#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
    pl.avx = isa_avx;
    if (isa_avx)
        pl.slide = slide_avx2;
    /* float32 drifts by about 2^-24 of the window sum a step: fine over
     * rows up to F32_MAX_STEPS, well under a level at 8 bits */
    if (isa_avx && src->type == IC_U8 && !pl.premul && pl.W + job->kw < F32_MAX_STEPS &&
        pl.H + job->kh < F32_MAX_STEPS)
        pl.slide = slide_avx2_f32;
#else
    (void)isa_avx;
#endif
    /* samples x alpha reach maxval^2 under premultiplication */
    const double top = pl.premul ? pl.maxval * pl.maxval : pl.maxval;
    const int box = k->blur == IC_BLUR_BOX;
    if (!blur_fits(job))
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "cpu: %s is wider than 2*ceil(4 sigma)+1, too wide for its sigma to run "
                       "as sliding sums (leave the size out: 2*ceil(3 sigma)+1)",
                       k->name);
    /* a box sums exactly in float while maxval * width < 2^24: divide once at the end */
    const int box_sums = box && top * job->kw < 16777216.0;
    const int workers = nthreads < 1 ? 1 : nthreads;
    ic_status st = IC_ERR_NOMEM;
    /* a square gaussian fits once: the fit costs O(r) a candidate */
    const int same = !box && job->kw == job->kh && k->sigma_x == k->sigma_y;
    if (!blur1d_make(&pl.bx, job->kw, box ? 0 : k->sigma_x, box_sums ? 1.0 : 1.0 / job->kw,
                     0.1 / pl.maxval) ||
        !(same
              ? blur1d_copy(&pl.by, &pl.bx)
              : blur1d_make(&pl.by, job->kh, box ? 0 : k->sigma_y, 1.0 / job->kh, 0.1 / pl.maxval)))
        goto done;
    pl.scale = box_sums ? 1.0 / job->kw : 1.0;
    if (!blur1d_fold(&pl.bx, pl.W, job->border) || !blur1d_fold(&pl.by, pl.H, job->border))
        goto done;
    pl.strips = (pl.bw + LANES - 1) / LANES;
    const size_t bn = (size_t)pl.planes * pl.strips * pl.H * LANES;
    pl.B = malloc(bn * sizeof *pl.B); /* every block is written, the columns past the image as 0 */
    if (pl.B) /* B is written end to end: 4 KiB faults cost a quarter of a 12 MP blur */
        ic__huge_pages(pl.B, bn * sizeof *pl.B);
    pl.crow = malloc(((size_t)pl.bw + LANES) * sizeof *pl.crow);
    pl.ext = calloc((size_t)workers, sizeof *pl.ext);
    pl.ptr = calloc((size_t)workers, sizeof *pl.ptr);
    pl.out = calloc((size_t)workers, sizeof *pl.out);
    if (!pl.B || !pl.crow || !pl.ext || !pl.ptr || !pl.out)
        goto done;
    const int omax = pl.W > pl.H ? pl.W : pl.H;
    const size_t tn = (size_t)pl.strips * LANES * LANES, vn = (size_t)pl.H * LANES;
    for (int i = 0; i < workers; i++) {
        pl.ext[i] = malloc((size_t)pl.C * ((size_t)pl.W + 1) * LANES * sizeof(float));
        pl.ptr[i] = malloc(((size_t)omax + 1) * sizeof(float *));
        /* zeroed: the columns of the last strip past the image stay 0 */
        pl.out[i] = calloc(tn > vn ? tn : vn, sizeof(float));
        if (!pl.ext[i] || !pl.ptr[i] || !pl.out[i])
            goto done;
    }
    {
        /* outside a constant border every row is the value V (V*V for colour
         * under premultiplication), and so is its horizontal blur times bx.sum */
        const double v = job->border_value;
        for (int i = 0; i < pl.bw + LANES; i++) {
            const int colour = pl.premul && (i % pl.C) != pl.C - 1;
            pl.crow[i] = (float)((colour ? v * v : v) * pl.bx.sum);
        }
    }
    const int bands = (pl.H + LANES - 1) / LANES;
    ic_cpu_pool_run(pool, hpass_task, &pl, bands, workers < bands ? workers : bands);
    const int strips = pl.planes * ((pl.bw + LANES - 1) / LANES);
    ic_cpu_pool_run(pool, vpass_task, &pl, strips, workers < strips ? workers : strips);
    st = IC_OK;
done:
    plan_free(&pl, workers);
    if (st != IC_OK)
        ic_errf(err, errlen, st, "cpu: out of memory for a %dx%d blur", job->kw, job->kh);
    return st;
}

int ic_cpu_blur_terms(const ic_job *job, int *tx, int *ty)
{
    const ic_kernel *k = job->wk;
    const double maxval = job->src->type == IC_U16 ? 65535.0 : 255.0;
    blur1d bx, by;
    int ok = k->blur == IC_BLUR_GAUSSIAN && blur1d_make(&bx, job->kw, k->sigma_x, 0, 0.1 / maxval);
    if (ok) {
        ok = blur1d_make(&by, job->kh, k->sigma_y, 0, 0.1 / maxval);
        *tx = bx.nterms;
        *ty = ok ? by.nterms : 0;
        blur1d_free(&bx);
        if (ok)
            blur1d_free(&by);
    }
    if (!ok)
        *tx = *ty = 0;
    return ok;
}

int ic__cpu_blur_fold_sums(const double *e, int n, int r, int nw, const double *w, int border,
                           double v, double *s, double *z)
{
    blur1d b;
    memset(&b, 0, sizeof b);
    b.r = r;
    b.nterms = nw < MAX_TERMS ? nw : MAX_TERMS;
    const int win = 2 * r + 1;
    b.ctab = malloc(((size_t)b.nterms * win * 2 + 1) * sizeof *b.ctab);
    if (!b.ctab)
        return 0;
    b.stab = b.ctab + (size_t)b.nterms * win;
    for (int k = 0; k < b.nterms; k++)
        for (int m = 0; m < win; m++) {
            b.ctab[(size_t)k * win + m] = cos(w[k] * (m - r));
            b.stab[(size_t)k * win + m] = sin(w[k] * (m - r));
        }
    const int ok = blur1d_fold(&b, n, border);
    for (int k = 0; ok && k < b.nterms; k++) {
        z[2 * k] = z[2 * k + 1] = 0.0;
        for (int j = 0; j < b.ni; j++) {
            const double f = b.iu[j] == n ? v : e[b.iu[j]];
            z[2 * k] += b.icr[(size_t)k * b.ni + j] * f;
            z[2 * k + 1] += b.ici[(size_t)k * b.ni + j] * f;
        }
    }
    if (ok) {
        s[0] = 0.0;
        for (int j = 0; j < b.ni; j++)
            s[0] += b.i0[j] * (b.iu[j] == n ? v : e[b.iu[j]]);
        for (int x = 0; x + 1 < n; x++)
            s[x + 1] = s[x] - (b.mlo[x] == n ? v : e[b.mlo[x]]) + (b.mhi[x] == n ? v : e[b.mhi[x]]);
    }
    blur1d_free(&b);
    return ok;
}
