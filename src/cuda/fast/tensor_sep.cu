/*
 * tensor_sep.cu - separable (rank-1) correlation on the tensor cores (issue
 * 17): both passes of K = col row^T as fp16 mma.sync in one kernel, the
 * tensor method's form for Gaussians and other rank-1 kernels of 8-bit
 * images. The shared-memory sep method (sep.cu) spends two fp32 FMAs a tap
 * on the CUDA cores; here the passes are banded matrix products as in
 * tensor.cu, so the work left is the fill, the store and a few matrix
 * instructions per output.
 *
 *   1. fill: the block's input (rows = 16 * (nrb - 1 + CS) rows: every row
 *      the column pass reads, halo included) as fp16 planes (tensor_impl.cuh);
 *   2. row pass: H = in (*) row for all of those rows, 16 x 16 blocks at a
 *      time: A = the input (ldmatrix), B = the banded row weights, which each
 *      lane computes once into registers (scaled so that |H| < 2^15, split
 *      into hi and lo halves). H (fp32 accumulators) is stored as two fp16
 *      planes, hi = fp16(H) and lo = fp16(H - hi): 22 bits together;
 *   3. column pass: out = col (*) H, for each 16 x 16 output tile and k step
 *      of 16 H rows: A = the banded column weights (registers, scaled near
 *      2^14, hi and lo), B = H read transposed by ldmatrix.trans; three
 *      products (col_hi H_hi, col_hi H_lo, col_lo H_hi: the fourth is below
 *      float32's rounding), fp32 accumulators;
 *   4. the sums, unscaled by an exact power of two, staged and stored as in
 *      tensor.cu.
 * Precision: every product of fp16 values is exact in fp32; the rounding is
 * float32's with H carried to 22 bits, in another order than the
 * reference's: the planner takes the method only for kernels that are not
 * tie-prone (as for the FFT and tensor.cu).
 *
 * Widths 3..31 (square kernels: ic_kernel_factor factors square kernels
 * only). Block: the tile of direct/sep (128 columns x 8*nrg rows x cb
 * channels); nrg even. Not for premultiplied alpha or 16-bit samples.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda/fast/tensor_impl.cuh"

namespace
{

using ict::geo_of;
using ict::hs_of;
using ict::hw_of;
using ict::split_of;
using ict::steps_of;

constexpr int HSH = icf::TW + 8; /* H row stride in halves (odd 16-byte units) */

/* K steps of 16 H rows a column pass of 16 output rows takes. */
__host__ __device__ constexpr int cs_of(int kh)
{
    return (16 + kh - 1 + 15) / 16;
}
/* Input and H rows of a block of nrg row groups. */
__host__ __device__ constexpr int rows_of(int kh, int nrg)
{
    return 16 * (nrg / 2 - 1 + cs_of(kh));
}

struct sparam {
    float row[IC_FAST_TENSOR_MAX_KW], col[IC_FAST_TENSOR_MAX_KW];
    float rscale, cscale, unscale; /* powers of two */
};

/* H = (v0, v1) of one row as hi and lo words. */
__device__ __forceinline__ void put_h(__half *hi, __half *lo, int at, float v0, float v1)
{
    const __half2 h = __floats2half2_rn(v0, v1);
    const float2 f = __half22float2(h);
    *reinterpret_cast<__half2 *>(hi + at) = h;
    *reinterpret_cast<__half2 *>(lo + at) = __floats2half2_rn(v0 - f.x, v1 - f.y);
}

/* Halves of the taps (build_taps) after the planes and H: row, column. */
__host__ __device__ constexpr int taps_halves(int ks, int cs)
{
    return 4 * ict::wl_of(ks) + 4 * ict::wl_of(cs);
}

template <int KS, bool SPLIT, int CS>
__global__ void __launch_bounds__(icf::MAX_THREADS, 2)
    fast_tsep_kernel(const icf::targs t, const __grid_constant__ sparam p)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    const int k = t.a.kw; /* == kh */
    constexpr int GS = SPLIT ? KS + 1 : KS, HS = hs_of(GS), NH = SPLIT ? 1 : 2;
    const int nrb = t.nrg / 2, rbn = nrb - 1 + CS, rows = 16 * rbn;
    const int hplane = rows * HS, qplane = rows * HSH;
    __half *h16 = reinterpret_cast<__half *>(smem);
    __half *hq = h16 + (size_t)t.cb * hplane; /* channel c: hi at 2c * qplane, lo after it */
    constexpr int WLR = ict::wl_of(KS), WLC = ict::wl_of(CS);
    __half *rtaps = hq + (size_t)t.cb * 2 * qplane, *ctaps = rtaps + 4 * WLR;

    const ict::planes P = {h16, HS, hplane, hw_of(GS), rows, b.xa, b.ya};
    ict::fill_h16<hw_of(GS)>(t, b, P);
    ict::build_taps(p.row, k, p.rscale, rtaps, WLR);
    ict::build_taps(p.col, k, p.cscale, ctaps, WLC);
    __syncthreads(); /* planes and taps complete */

    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nw = (int)(blockDim.x >> 5);
    const int g = lane >> 2, tq = lane & 3;
    const int sh = ict::shift_of(k);
    {
        /* row pass: B fragments of step ks, n half nh: taps j0, j0 + 1 and
         * j0 + 8, j0 + 9, j0 = 16 ks + 2 tq - 8 nh - g - sh */
        uint32_t bh[KS][NH][2], bl[KS][NH][2];
#pragma unroll
        for (int ks = 0; ks < KS; ks++)
#pragma unroll
            for (int nh = 0; nh < NH; nh++) {
                const int j0 = 16 * ks + 2 * tq - 8 * nh - g - sh;
                ict::taps_word(rtaps, WLR, j0, bh[ks][nh][0], bl[ks][nh][0]);
                ict::taps_word(rtaps, WLR, j0 + 8, bh[ks][nh][1], bl[ks][nh][1]);
            }
        const int per = rbn * 8; /* 16 x 16 blocks of a channel */
        for (int it = warp; it < t.cb * per; it += nw) {
            const int ci = it / per, rem = it - ci * per, rb = rem >> 3, cbk = rem & 7;
            const uint32_t a0 =
                ict::smem_addr(h16 + (size_t)ci * hplane + (16 * rb + (lane & 15)) * HS + 16 * cbk +
                               (lane >> 4) * 8);
            float acc[2][4];
#pragma unroll
            for (int nh = 0; nh < 2; nh++)
#pragma unroll
                for (int v = 0; v < 4; v++)
                    acc[nh][v] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                if constexpr (SPLIT) {
#pragma unroll
                    for (int nh = 0; nh < 2; nh++) {
                        uint32_t a[4];
                        ict::ldsm_x4(a, a0 + (uint32_t)((16 * ks + 8 * nh) * 2));
                        ict::mma16816(acc[nh], a, bl[ks][0][0], bl[ks][0][1]);
                        ict::mma16816(acc[nh], a, bh[ks][0][0], bh[ks][0][1]);
                    }
                } else {
                    uint32_t a[4];
                    ict::ldsm_x4(a, a0 + (uint32_t)(16 * ks * 2));
#pragma unroll
                    for (int nh = 0; nh < 2; nh++) {
                        ict::mma16816(acc[nh], a, bl[ks][nh][0], bl[ks][nh][1]);
                        ict::mma16816(acc[nh], a, bh[ks][nh][0], bh[ks][nh][1]);
                    }
                }
            }
            __half *hi = hq + (size_t)ci * 2 * qplane, *lo = hi + qplane;
#pragma unroll
            for (int nh = 0; nh < 2; nh++) {
                const int at = (16 * rb + g) * HSH + 16 * cbk + 8 * nh + 2 * tq;
                put_h(hi, lo, at, acc[nh][0], acc[nh][1]);
                put_h(hi, lo, at + 8 * HSH, acc[nh][2], acc[nh][3]);
            }
        }
    }
    /* column pass: A fragments of step cs: a0 = a3 taps d0, d0 + 1, a1 taps
     * d0 - 8, d0 - 7, a2 taps d0 + 8, d0 + 9, d0 = 16 cs + 2 tq - g */
    uint32_t ah[CS][3], al[CS][3];
#pragma unroll
    for (int cs = 0; cs < CS; cs++) {
        const int d0 = 16 * cs + 2 * tq - g;
        ict::taps_word(ctaps, WLC, d0, ah[cs][0], al[cs][0]);
        ict::taps_word(ctaps, WLC, d0 - 8, ah[cs][1], al[cs][1]);
        ict::taps_word(ctaps, WLC, d0 + 8, ah[cs][2], al[cs][2]);
    }
    __syncthreads(); /* H complete */
    const int ci = warp / t.nrg, rg = warp - ci * t.nrg;
    float acc[4][2][4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
#pragma unroll
        for (int nh = 0; nh < 2; nh++)
#pragma unroll
            for (int v = 0; v < 4; v++)
                acc[j][nh][v] = 0.0f;
        const int tt = rg * 4 + j;
        const uint32_t h0 =
            ict::smem_addr(hq + (size_t)ci * 2 * qplane + (16 * (tt % nrb) + (lane & 15)) * HSH +
                           16 * (tt / nrb) + (lane >> 4) * 8);
#pragma unroll
        for (int cs = 0; cs < CS; cs++) {
            uint32_t hh[4], hl[4];
            ict::ldsm_x4_trans(hh, h0 + (uint32_t)(16 * cs * HSH * 2));
            ict::ldsm_x4_trans(hl, h0 + (uint32_t)((qplane + 16 * cs * HSH) * 2));
            const uint32_t Ah[4] = {ah[cs][0], ah[cs][1], ah[cs][2], ah[cs][0]};
            const uint32_t Al[4] = {al[cs][0], al[cs][1], al[cs][2], al[cs][0]};
#pragma unroll
            for (int nh = 0; nh < 2; nh++) {
                ict::mma16816(acc[j][nh], Al, hh[2 * nh], hh[2 * nh + 1]);
                ict::mma16816(acc[j][nh], Ah, hl[2 * nh], hl[2 * nh + 1]);
                ict::mma16816(acc[j][nh], Ah, hh[2 * nh], hh[2 * nh + 1]);
            }
        }
    }
    ict::stage_store(t, b, smem, ci, rg, acc, p.unscale);
}

template <int KS, bool SPLIT, int CS>
ic_status launch_ks(const icf::targs &t, const sparam &p, size_t smem, char *err, size_t errlen)
{
    return icf::launch_tiles(fast_tsep_kernel<KS, SPLIT, CS>, t, p, smem,
                             "cuda fast tensor sep kernel", err, errlen);
}

/* A power of two 2^s with m * 2^s in [2^(top-1), 2^top) (1 for m = 0). */
float scale_to(double m, int top)
{
    int e = 0;
    if (m > 0)
        (void)frexp(m, &e); /* m = f * 2^e, f in [0.5, 1) */
    return ldexpf(1.0f, top - e);
}

} // namespace

extern "C" size_t ic_fast_tensor_sep_smem(int k, int cb, int nrg)
{
    if (k < 3 || k > IC_FAST_TENSOR_MAX_KW || cb < 1 || nrg < 2 || (nrg & 1) ||
        cb * nrg * 32 > icf::MAX_THREADS)
        return 0;
    const size_t rows = (size_t)rows_of(k, nrg);
    const size_t in = ((size_t)cb * rows * (hs_of(geo_of(k)) + 2 * HSH) +
                       (size_t)taps_halves(steps_of(k), cs_of(k))) *
                      2;
    return in > ict::stage_bytes(cb, nrg) ? in : ict::stage_bytes(cb, nrg);
}

extern "C" ic_status ic_fast_tensor_sep_launch(const ic_cuda_args *a, const float *row,
                                               const float *col, const ic_fast_plan *p, char *err,
                                               size_t errlen)
{
    const size_t smem = a->kw == a->kh ? ic_fast_tensor_sep_smem(a->kw, p->cb, p->nrg) : 0;
    if (smem == 0 || smem > a->smem_optin || a->u16 || a->premultiply || !row || !col) {
        snprintf(err, errlen, "cuda fast tensor: cannot take a %dx%d rank-1 kernel on this job",
                 a->kw, a->kh);
        return IC_ERR_UNSUPPORTED;
    }
    const int k = a->kw;
    sparam sp;
    memset(&sp, 0, sizeof sp);
    double rsum = 0, cmax = 0;
    for (int i = 0; i < k; i++) {
        sp.row[i] = row[i];
        sp.col[i] = col[i];
        rsum += fabs((double)row[i]);
        cmax = fmax(cmax, fabs((double)col[i]));
    }
    /* |H| <= rsum * max |sample| * rscale < 2^15 (fp16's largest is 65504);
     * the samples are bytes or a constant border's value (within 2048) */
    const double smax = fmax(255.0, fabs((double)a->border_value));
    sp.rscale = scale_to(rsum * smax, 15);
    sp.cscale = scale_to(cmax, 14);
    sp.unscale = 1.0f / (sp.rscale * sp.cscale); /* exact: powers of two */
    const icf::targs t = icf::make_targs(a, p);
    /* the classes of tensor.cu's widths, each with its column steps */
    static_assert(cs_of(17) == 2 && cs_of(18) == 3 && steps_of(9) == 1 && split_of(9) &&
                      !split_of(10) && steps_of(17) == 2 && split_of(18) && steps_of(25) == 2 &&
                      !split_of(26) && steps_of(IC_FAST_TENSOR_MAX_KW) == 3 &&
                      cs_of(IC_FAST_TENSOR_MAX_KW) == 3,
                  "the launches below cover widths 3..31");
    if (k <= 9)
        return launch_ks<1, true, 2>(t, sp, smem, err, errlen);
    if (k <= 17)
        return launch_ks<2, false, 2>(t, sp, smem, err, errlen);
    if (k <= 25)
        return launch_ks<2, true, 3>(t, sp, smem, err, errlen);
    return launch_ks<3, false, 3>(t, sp, smem, err, errlen);
}
