/*
 * blur.cu - the `cuda` fast path's blur method: gaussian and box kernels of
 * any size in constant time per sample whatever the radius, the same
 * mathematics as the cpu backend (src/cpu/cpu_blur.c, docs/design/blur.md)
 * with the weights of the one shared fit (core/blur_fit.c):
 *   h(m) = a0 + sum_k a_k cos(w_k m),  m = -r..r.
 * With e_i the line's sample i extended by the border rule (any integer i),
 * each pass takes complex-modulated prefix sums
 *   F_k(m) = sum_{0<=i<m} e_i e^{j w_k i}   (w_0 = 0: the plain sum),
 * so that the window of output x is F_k(x+r+1) - F_k(x-r), turned back by
 * e^{-j w_k x}; all in float64 (a box: integer sums, exact). The prefix
 * sums run over the line itself, and a window end past it is summed in
 * closed form from them (core/blur_ext.h), so the work does not grow with r;
 * the walk along the outputs reads the extension a step at a time, with no
 * division past the line.
 * The prefix sums are blocked (reduce, then scan): S threads of a block split
 * a line into S runs, add their runs, scan the S totals in shared memory,
 * then each walks its share of the outputs from two prefixes it completes
 * itself. The row pass takes one line a block (S = 256); the
 * column pass 16 neighbouring columns a block, adjacent threads on adjacent
 * columns (coalesced), S = 32 runs each. Row pass -> float planes B, column
 * pass -> float planes V, then one pass per pixel rounds (or divides by
 * alpha, or stores float32) into the destination.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/blur_ext.h"
#include "core/blur_fit.h"
#include "core/border.h"
#include "cuda/cuda_common.cuh"
#include "cuda/fast/fast.h"

static_assert(IC_FAST_BLUR_MIN_SIDE == IC_BLUR_CUDA_MIN_SIDE,
              "auto's cost model (core/blur_fit.h) must know where the plan takes the blur");

#define MAXT (IC_BLUR_MAX_TERMS + 1) /* the plain sum and the cosines */
#define ROW_RUNS 256                 /* threads (runs) a line in the row pass */
/* columns a block in the column pass, and threads (runs) a column: 16
 * columns are 64-byte loads a half warp; 32 runs halve each thread's chain
 * against 16 and fill an H200 on HD (360 blocks of 512 for RGB) */
#define COL_LINES 16
#define COL_RUNS 32
static_assert(ROW_RUNS <= COL_LINES * COL_RUNS, "blur_pass's launch bounds hold both passes");
static_assert(COL_RUNS >= MAXT, "a block scans one term a thread row");
/* Scratch larger than this many bytes beyond the job's own is given back. */
#define SCRATCH_SLACK ((size_t)256 << 20)

/* One pass: n samples a line, radius r, nt terms. */
struct blur_pass_args {
    int n, r, nt;
    int border;
    double cv[4];               /* the constant border's value, per plane */
    double c[MAXT];             /* a0, a_1.. */
    double w[MAXT];             /* 0, w_1.. */
    double cw[MAXT], sw[MAXT];  /* cos w, sin w: a step's rotation */
    ic_blur_ext_term ext[MAXT]; /* the closed form's phases (core/blur_ext.h) */
    double scale;               /* applied to every output */
};

/* The row pass reads the image (premultiplied colour when asked). */
struct row_src {
    const uint8_t *p;
    size_t pitch;
    int width, height, channels, soa, shift, premul;
    __device__ double sample(int c, int y, int x) const
    {
        const uint8_t *q = soa ? p + ((size_t)c * height + y) * pitch + ((size_t)x << shift)
                               : p + (size_t)y * pitch + (((size_t)x * channels + c) << shift);
        if (shift == 0)
            return (double)*q;
        if (shift == 1)
            return (double)*(const uint16_t *)q;
        return (double)*(const float *)q;
    }
    /* line y of plane c, sample x */
    __device__ double at(int c, int y, int x) const
    {
        const double v = sample(c, y, x);
        return premul && c != channels - 1 ? v * sample(channels - 1, y, x) : v;
    }
};

/* Planes of float (plane, line, i): rows of `width` floats, `height` a plane. */
struct float_planes {
    float *p;
    int width, height;
    int transposed; /* 1: line = column x, i = row y (the column pass) */
    __device__ size_t index(int c, int line, int i) const
    {
        return transposed ? ((size_t)c * height + i) * width + line
                          : ((size_t)c * height + line) * width + i;
    }
    __device__ double at(int c, int line, int i) const
    {
        return (double)p[index(c, line, i)];
    }
    __device__ void put(int c, int line, int i, double v) const
    {
        p[index(c, line, i)] = (float)v;
    }
};

/* The sample a walker at position p reads (core/blur_ext.h): the line's
 * sample, or the constant border's value. */
template <class Src>
__device__ __forceinline__ double ext(const Src &s, const blur_pass_args &a, int c, int line, int p)
{
    const int j = ic_blur_walk_sample(p, a.n, a.border);
    return j < 0 ? a.cv[c] : s.at(c, line, j);
}

/* e^{j w k}. One copy, called: sincos inlines a long path for huge
 * arguments, and inlined a term at a time into every instantiation it made
 * most of this file's compile time. */
static __device__ __noinline__ double2 cis(double w, double k)
{
    double2 z;
    sincos(w * k, &z.y, &z.x);
    return z;
}

/* F(m) of one term past the line, from F(n) = T and F(k) = h at the point
 * ic_blur_ext_point names (core/blur_ext.h); called, not inlined, for the
 * same reason as cis. */
static __device__ __noinline__ double2 ext_end(const ic_blur_ext_term k, int m, int n, int mode,
                                               double2 T, double2 h, double xf, double xl, double v)
{
    const ic_blur_cplx f = ic_blur_ext_sum(&k, m, n, mode, ic_blur_cmake(T.x, T.y),
                                           ic_blur_cmake(h.x, h.y), xf, xl, v);
    return make_double2(f.re, f.im);
}

/* acc[t] += sum_{u0 <= i < u1} e_i e^{j w_t i}, 0 <= u0, u1 <= n. */
template <int NT, class Src>
__device__ void add_run(const Src &s, const blur_pass_args &a, int c, int line, int u0, int u1,
                        double2 *acc)
{
    if (u1 <= u0)
        return;
    double2 z[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        z[t] = cis(a.w[t], u0);
    for (int u = u0; u < u1; u++) {
        const double e = s.at(c, line, u);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            acc[t].x = fma(e, z[t].x, acc[t].x);
            acc[t].y = fma(e, z[t].y, acc[t].y);
            const double zx = z[t].x * a.cw[t] - z[t].y * a.sw[t];
            z[t].y = fma(z[t].x, a.sw[t], z[t].y * a.cw[t]);
            z[t].x = zx;
        }
    }
}

/* g = F(p), 0 <= p <= n, from the scanned run prefixes pre (NT x S x LX,
 * this thread's line): the prefix of p's run plus the run up to p, or the
 * next run's prefix less the rest of the run when p lies in its second half. */
template <int NT, class Src>
__device__ void prefix_at(const Src &src, const blur_pass_args &a, int c, int line,
                          const double2 *pre, int run, int p, double2 *g)
{
    const int S = blockDim.y, LX = blockDim.x, lx = threadIdx.x;
    int j = min(p / run, S - 1);
    const bool back = j + 1 < S && p - j * run > run / 2;
    j += back;
#pragma unroll
    for (int t = 0; t < NT; t++)
        g[t] = pre[((size_t)t * S + j) * LX + lx];
    if (!back) {
        add_run<NT>(src, a, c, line, j * run, p, g);
        return;
    }
    double2 d[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        d[t] = make_double2(0.0, 0.0);
    add_run<NT>(src, a, c, line, p, min(a.n, j * run), d);
#pragma unroll
    for (int t = 0; t < NT; t++) {
        g[t].x -= d[t].x;
        g[t].y -= d[t].y;
    }
}

/* g = F(m) for a window end m anywhere: the line's prefix at the point the
 * closed form names, then the closed form when m lies past the line. tot:
 * the line's totals (NT x LX). */
template <int NT, class Src>
__device__ __forceinline__ void window_end(const Src &src, const blur_pass_args &a, int c, int line,
                                           const double2 *pre, const double2 *tot, int run, int m,
                                           double2 *g)
{
    const int n = a.n;
    prefix_at<NT>(src, a, c, line, pre, run, ic_blur_ext_point(m, n, a.border), g);
    if (m >= 0 && m <= n)
        return;
    const double xf = src.at(c, line, 0), xl = src.at(c, line, n - 1);
#pragma unroll
    for (int t = 0; t < NT; t++)
        g[t] = ext_end(a.ext[t], m, n, a.border, tot[t * blockDim.x + threadIdx.x], g[t], xf, xl,
                       a.cv[c]);
}

/* One pass over lines: blockDim = (LX lines, S runs); line blockIdx.x*LX +
 * threadIdx.x of plane blockIdx.y. Shared: NT x S x LX run prefixes, then
 * NT x LX line totals. */
template <int NT, class Src>
__global__ void __launch_bounds__(COL_LINES *COL_RUNS)
    blur_pass(Src src, float_planes out, blur_pass_args a, int nlines)
{
    extern __shared__ double2 pre[];
    const int LX = blockDim.x, S = blockDim.y, lx = threadIdx.x, s = threadIdx.y;
    const int line = blockIdx.x * LX + lx, c = blockIdx.y;
    const bool live = line < nlines;
    const int n = a.n, run = (n + S - 1) / S;
    double2 *tot = pre + (size_t)NT * S * LX;
    double2 acc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++)
        acc[t] = make_double2(0.0, 0.0);
    if (live)
        add_run<NT>(src, a, c, line, s * run, min(n, (s + 1) * run), acc);
#pragma unroll
    for (int t = 0; t < NT; t++)
        pre[((size_t)t * S + s) * LX + lx] = acc[t];
    __syncthreads();
    if (s < NT) { /* term s of this line: exclusive scan of the S run totals */
        double2 sum = make_double2(0.0, 0.0);
        for (int q = 0; q < S; q++) {
            double2 *p = &pre[((size_t)s * S + q) * LX + lx];
            const double2 v = *p;
            *p = sum;
            sum.x += v.x;
            sum.y += v.y;
        }
        tot[s * LX + lx] = sum;
    }
    __syncthreads();
    if (!live)
        return;
    const int per = (n + S - 1) / S, x0 = s * per, x1 = min(n, x0 + per);
    if (x0 >= x1)
        return;
    /* F at the two ends of x0's window, x0 - r and x0 + r + 1 */
    double2 ga[NT], gb[NT];
    const int pa = x0 - a.r, pb = x0 + a.r + 1;
    window_end<NT>(src, a, c, line, pre, tot, run, pa, ga);
    window_end<NT>(src, a, c, line, pre, tot, run, pb, gb);
    /* walkers at the sample each step drops (x - r) and takes (x + r + 1) */
    const int P = ic_blur_ext_period(n, a.border);
    int wa = ic_blur_walk_start(pa, n, a.border), wb = ic_blur_walk_start(pb, n, a.border);
    double2 za[NT], zb[NT], zc[NT];
#pragma unroll
    for (int t = 0; t < NT; t++) {
        za[t] = cis(a.w[t], pa);
        zb[t] = cis(a.w[t], pb);
        zc[t] = cis(-a.w[t], x0);
    }
    for (int x = x0; x < x1; x++) {
        double v = 0.0;
#pragma unroll
        for (int t = 0; t < NT; t++) { /* Re(zc (gb - ga)) */
            const double dx = gb[t].x - ga[t].x, dy = gb[t].y - ga[t].y;
            v = fma(a.c[t], zc[t].x * dx - zc[t].y * dy, v);
        }
        out.put(c, line, x, v * a.scale);
        if (x + 1 == x1)
            break;
        const double ea = ext(src, a, c, line, wa), eb = ext(src, a, c, line, wb);
        wa = ic_blur_walk_next(wa, P);
        wb = ic_blur_walk_next(wb, P);
#pragma unroll
        for (int t = 0; t < NT; t++) {
            ga[t].x = fma(ea, za[t].x, ga[t].x);
            ga[t].y = fma(ea, za[t].y, ga[t].y);
            gb[t].x = fma(eb, zb[t].x, gb[t].x);
            gb[t].y = fma(eb, zb[t].y, gb[t].y);
            const double sx = a.cw[t], sy = a.sw[t];
            double tx = za[t].x * sx - za[t].y * sy;
            za[t].y = fma(za[t].x, sy, za[t].y * sx);
            za[t].x = tx;
            tx = zb[t].x * sx - zb[t].y * sy;
            zb[t].y = fma(zb[t].x, sy, zb[t].y * sx);
            zb[t].x = tx;
            tx = zc[t].x * sx + zc[t].y * sy; /* times e^{-j w} */
            zc[t].y = fma(-zc[t].x, sy, zc[t].y * sx);
            zc[t].x = tx;
        }
    }
}

/* The destination from V: premultiplied colour divided by alpha, bias,
 * rounding (or float32 as it is), in the destination's layout. */
__global__ void blur_store(const float *V, ic_cuda_args a)
{
    const size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= (size_t)a.width * a.height)
        return;
    const int x = (int)(i % (size_t)a.width), y = (int)(i / (size_t)a.width);
    const int C = a.channels, shift = ic_cuda_shift(&a);
    const size_t plane = (size_t)a.width * a.height;
    const float alpha = V[(size_t)(C - 1) * plane + (size_t)y * a.width + x];
    for (int c = 0; c < C; c++) {
        float v = V[(size_t)c * plane + (size_t)y * a.width + x];
        if (a.premultiply && c != C - 1)
            v = alpha > 0.0f ? v / alpha : 0.0f;
        v += a.bias;
        uint8_t *q = a.soa ? a.dst + ((size_t)c * a.height + y) * a.dst_pitch + ((size_t)x << shift)
                           : a.dst + (size_t)y * a.dst_pitch + (((size_t)x * C + c) << shift);
        if (a.f32)
            *(float *)q = v;
        else if (a.u16)
            *(uint16_t *)q = (uint16_t)rintf(fminf(fmaxf(v, 0.0f), 65535.0f));
        else
            *q = ic_round_u8(v);
    }
}

/* ---- host ------------------------------------------------------------------------- */

struct ic_fast_blur {
    float *buf; /* B then V: two planes sets of width x height x channels floats */
    size_t cap; /* bytes */
    /* the last fits, kept: a fit of a wide support takes milliseconds */
    int fit_n[2];
    double fit_sigma[2], fit_tol[2], fit_box[2];
    ic_blur_fit fit[2];
};

extern "C" void ic_fast_blur_free(ic_fast_blur *b)
{
    if (!b)
        return;
    (void)cudaFree(b->buf);
    (void)cudaGetLastError();
    free(b);
}

/* The tolerance of a fit (L1 of the weights): a tenth of a level. */
static double fit_tol(const ic_cuda_args *a)
{
    return a->u16 || a->f32 ? 0.1 / 65535.0 : 0.1 / 255.0;
}

static int fit_cached(ic_fast_blur *b, int slot, int n, double sigma, double box, double tol,
                      ic_blur_fit *out)
{
    if (b->fit_n[slot] == n && b->fit_sigma[slot] == sigma && b->fit_tol[slot] == tol &&
        b->fit_box[slot] == box) {
        *out = b->fit[slot];
        return 1;
    }
    if (!ic__blur_fit(out, n, sigma, box, tol))
        return 0;
    b->fit_n[slot] = n;
    b->fit_sigma[slot] = sigma;
    b->fit_tol[slot] = tol;
    b->fit_box[slot] = box;
    b->fit[slot] = *out;
    return 1;
}

/* sum_{m=-r}^{r} h(m): the weight of a constant line. */
static double fit_sum(const ic_blur_fit *f)
{
    double s = f->a0 * (2.0 * f->r + 1.0);
    for (int k = 0; k < f->nterms; k++) /* the Dirichlet kernel */
        s += f->a[k] * sin(f->w[k] * (f->r + 0.5)) / sin(f->w[k] * 0.5);
    return s;
}

static void pass_args(const ic_blur_fit *f, int n, const ic_cuda_args *a, double scale,
                      blur_pass_args *p)
{
    memset(p, 0, sizeof *p);
    p->n = n;
    p->r = f->r;
    p->nt = f->nterms + 1;
    p->border = a->border;
    p->c[0] = f->a0;
    for (int k = 0; k < f->nterms; k++) {
        p->c[k + 1] = f->a[k];
        p->w[k + 1] = f->w[k];
    }
    for (int t = 0; t < p->nt; t++) {
        p->cw[t] = cos(p->w[t]);
        p->sw[t] = sin(p->w[t]);
        p->ext[t] = ic_blur_ext_term_make(p->w[t], n, p->border);
    }
    p->scale = scale;
}

template <int NT, class Src>
static ic_status launch_nt(const Src &src, const float_planes &out, const blur_pass_args &p,
                           int nlines, dim3 block, int planes, cudaStream_t stream, char *err,
                           size_t errlen)
{
    const size_t smem = (size_t)NT * block.x * (block.y + 1) * sizeof(double2); /* and totals */
    IC_CUDA_CHECK(cudaFuncSetAttribute(blur_pass<NT, Src>,
                                       cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const dim3 grid((unsigned)((nlines + block.x - 1) / block.x), (unsigned)planes);
    blur_pass<NT, Src><<<grid, block, smem, stream>>>(src, out, p, nlines);
    IC_CUDA_CHECK(cudaGetLastError());
    return IC_OK;
}

template <class Src>
static ic_status launch_pass(const Src &src, const float_planes &out, const blur_pass_args &p,
                             int nlines, dim3 block, int planes, cudaStream_t stream, char *err,
                             size_t errlen)
{
    switch (p.nt) {
#define IC_BLUR_NT(n)                                                                              \
    case n:                                                                                        \
        return launch_nt<n>(src, out, p, nlines, block, planes, stream, err, errlen);
        IC_BLUR_NT(1)
        IC_BLUR_NT(2)
        IC_BLUR_NT(3)
        IC_BLUR_NT(4)
        IC_BLUR_NT(5)
        IC_BLUR_NT(6)
        IC_BLUR_NT(7)
        IC_BLUR_NT(8)
        IC_BLUR_NT(9)
        IC_BLUR_NT(10)
        IC_BLUR_NT(11)
#undef IC_BLUR_NT
    default:
        snprintf(err, errlen, "cuda blur: %d terms (at most %d)", p.nt, MAXT);
        return IC_ERR_INTERNAL;
    }
}

extern "C" int ic_fast_blur_eligible(const ic_kernel *wk, int kw, int kh)
{
    return wk && wk->blur && ic__blur_fits(wk->blur, wk->sigma_x, wk->sigma_y, kw, kh);
}

extern "C" int ic_fast_blur_terms(const ic_kernel *wk, int kw, int kh, int deep, int *tx, int *ty)
{
    *tx = *ty = 0;
    if (!ic_fast_blur_eligible(wk, kw, kh))
        return 0;
    if (wk->blur == IC_BLUR_BOX)
        return 1;
    const double tol = deep ? 0.1 / 65535.0 : 0.1 / 255.0;
    ic_blur_fit fx, fy;
    if (!ic__blur_fit(&fx, kw, wk->sigma_x, 0, tol) || !ic__blur_fit(&fy, kh, wk->sigma_y, 0, tol))
        return 0;
    *tx = fx.nterms;
    *ty = fy.nterms;
    return 1;
}

extern "C" ic_status ic_fast_blur_launch(ic_fast_blur **bp, const ic_cuda_args *a,
                                         const ic_kernel *wk, char *err, size_t errlen)
{
    if (!ic_fast_blur_eligible(wk, a->kw, a->kh)) {
        snprintf(err, errlen,
                 "cuda: %s is wider than 2*ceil(4 sigma)+1, too wide for its sigma to run as "
                 "prefix sums (leave the size out: 2*ceil(3 sigma)+1)",
                 wk ? wk->name : "the kernel");
        return IC_ERR_UNSUPPORTED;
    }
    if (!*bp && !(*bp = (ic_fast_blur *)calloc(1, sizeof **bp))) {
        snprintf(err, errlen, "cuda blur: out of memory");
        return IC_ERR_NOMEM;
    }
    ic_fast_blur *b = *bp;
    const int W = a->width, H = a->height, C = a->channels;
    const size_t plane = (size_t)W * H * C, need = 2 * plane * sizeof(float);
    if (b->cap < need || b->cap > need + SCRATCH_SLACK) {
        (void)cudaFree(b->buf);
        b->buf = NULL;
        b->cap = 0;
        float *p = NULL;
        IC_CUDA_CHECK(cudaMalloc((void **)&p, need));
        b->buf = p;
        b->cap = need;
    }
    const int box = wk->blur == IC_BLUR_BOX;
    const double tol = fit_tol(a);
    /* a box sums exactly while maxval * width < 2^24 in B: divide once at the end */
    const double maxval = a->u16 ? 65535.0 : 255.0;
    const double top = a->f32 ? INFINITY : a->premultiply ? maxval * maxval : maxval;
    const int box_sums = box && top * a->kw < 16777216.0;
    ic_blur_fit fx, fy;
    if (!fit_cached(b, 0, a->kw, box ? 0 : wk->sigma_x, box_sums ? 1.0 : 1.0 / a->kw, tol, &fx) ||
        !fit_cached(b, 1, a->kh, box ? 0 : wk->sigma_y, 1.0 / a->kh, tol, &fy)) {
        snprintf(err, errlen, "cuda blur: fitting %s failed (out of memory)", wk->name);
        return IC_ERR_NOMEM;
    }
    cudaStream_t stream = (cudaStream_t)a->stream;
    float *B = b->buf, *V = b->buf + plane;

    row_src rs = {a->src, a->src_pitch, W, H, C, a->soa, ic_cuda_shift(a), a->premultiply};
    blur_pass_args px, py;
    pass_args(&fx, W, a, 1.0, &px);
    pass_args(&fy, H, a, box_sums ? 1.0 / a->kw : 1.0, &py);
    const double v = a->border_value, hs = fit_sum(&fx);
    for (int c = 0; c < C && c < 4; c++) {
        const double vc = a->premultiply && c != C - 1 ? v * v : v;
        px.cv[c] = vc;
        py.cv[c] = vc * hs; /* a row past a constant border, through the row pass */
    }
    const float_planes bout = {B, W, H, 0};
    ic_status s = launch_pass(rs, bout, px, H, dim3(1, ROW_RUNS), C, stream, err, errlen);
    if (s != IC_OK)
        return s;
    const float_planes bin = {B, W, H, 1}, vout = {V, W, H, 1};
    s = launch_pass(bin, vout, py, W, dim3(COL_LINES, COL_RUNS), C, stream, err, errlen);
    if (s != IC_OK)
        return s;
    const size_t pixels = (size_t)W * H;
    blur_store<<<(unsigned)((pixels + 255) / 256), 256, 0, stream>>>(V, *a);
    IC_CUDA_CHECK(cudaGetLastError());
    return IC_OK;
}
