/*
 * tensor.cu - direct 2D correlation on the tensor cores: the fast
 * path's method for large full-rank kernels of 8-bit images, where the FFT
 * was the best before.
 *
 * One row i of the kernel applied to a band of 16 output rows and 16 output
 * columns is a matrix product: out[m][n] += sum_c in[m + i][c] * T_i[c][n]
 * with the banded (Toeplitz) T_i[c][n] = w[i][c - n], c over the 16 + kw - 1
 * input columns rounded up to 16 * KS (widths 3..9 and 19..25: each 8-column
 * half its own window of 8 + kw - 1, one k step fewer; ks_of and split_of).
 * Each product is KS x 2 mma.sync m16n8k16 (fp16 inputs, fp32 accumulators)
 * per half of the weights:
 *   - the samples are integers 0..255, exact in fp16;
 *   - each weight, scaled by a power of two so that the largest is near
 *     2^14, is split into hi = fp16(w) and lo = fp16(w - hi), so hi + lo
 *     carries 22 bits and both run through the same accumulators; products
 *     of fp16 values are exact in fp32, so the sums have float32's rounding
 *     (in another order than the reference's; the oracle tests allow for
 *     that as they do for the FFT), and the scale is undone exactly before
 *     the store;
 *   - the useful share of the work is kw / (16 * KS): 31 / 48 at 31 wide.
 *
 * Block: the tile of direct/sep (tile.cuh): 128 output columns x 8*nrg rows
 * x cb channels, 32*cb*nrg threads. Its input is read straight into fp16
 * planes for ldmatrix (fill_h16: every layout and border mode; a float tile
 * converted afterwards took 208 KB a block at 8K 31x31 RGB and left one
 * block per SM). Each warp owns 4 output tiles of 16 x 16 of one channel;
 * for each kernel row and k step it loads that step's weight fragments (8
 * registers) once and applies them to its 4 tiles. The sums are staged in
 * shared memory (over the planes) in the layout icf::store expects and
 * stored by it (rounding, bias, packed stores).
 *
 * Weights in shared memory: per kernel row, the padded row twice (the
 * second shifted by one sample) for hi and for lo, so that every pair of
 * taps a lane needs (two consecutive k of one n) is one aligned 32-bit word:
 * lane (g = lane / 4, t = lane % 4) reads copy g & 1, at word offsets that
 * are compile-time constants per (k step, n half).
 *
 * Not for premultiplied alpha (the tile then holds C * A / 255 products, not
 * integers) nor 16-bit samples (not exact in fp16): the planner keeps those
 * on the other methods. Needs sm_80 or later (mma.sync m16n8k16).
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
using ict::wl_of;

/* Weights: words between the two copies (so that the two copies' lanes use
 * different banks), words per kernel row. */
__host__ __device__ constexpr int cw_of(int ks)
{
    return wl_of(ks) / 2 + 16;
}
__host__ __device__ constexpr int wrow_of(int ks)
{
    return 4 * cw_of(ks);
}

struct tparam {
    float scale, unscale; /* 2^s and 2^-s */
};

/* Halves of one fp16 plane. */
__host__ __device__ constexpr int hplane_of(int ks, int kh, int nrg)
{
    return (icf::R * nrg + kh - 1) * hs_of(ks);
}
/* Bytes of the fp16 planes, of the weights after them (the staged sums
 * reuse the planes once every warp is done with them). */
__host__ __device__ constexpr size_t planes_bytes(int ks, int kh, int cb, int nrg)
{
    return (size_t)cb * hplane_of(ks, kh, nrg) * 2;
}
__host__ __device__ constexpr size_t weights_bytes(int ks, int kh)
{
    return (size_t)kh * wrow_of(ks) * 4;
}

/* 80 registers a thread: two blocks of 384 threads (or three of 256) per SM,
 * as many warps as the shared memory allows; the tensor pipe needs them to
 * cover each warp's issue latency. */
template <int KS, bool SPLIT>
__global__ void __launch_bounds__(icf::MAX_THREADS, 2)
    fast_tensor_kernel(const icf::targs t, const tparam p)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    const int kw = t.a.kw, kh = t.a.kh;
    constexpr int GS = SPLIT ? KS + 1 : KS; /* the tile's geometry */
    constexpr int HS = hs_of(GS), WL = wl_of(KS), CW = cw_of(KS), WROW = wrow_of(KS);
    const int hplane = hplane_of(GS, kh, t.nrg);
    __half *h16 = reinterpret_cast<__half *>(smem);
    __half *wsm = h16 + (size_t)t.cb * hplane;

    const int sh = ict::shift_of(kw);
    const ict::planes P = {h16, HS, hplane, b.rows, b.xa, b.ya};
    ict::fill_h16<hw_of(GS)>(t, b, P);
    /* the weights, scaled, as hi and lo halves in their two copies: copy cp
     * holds tap idx + cp - WOFF - sh at index idx */
    for (int e = (int)threadIdx.x; e < kh * 2 * WL; e += (int)blockDim.x) {
        const int i = e / (2 * WL), rem = e - i * 2 * WL, cp = rem / WL, idx = rem - cp * WL;
        const int j = idx + cp - ict::WOFF - sh;
        const float v = j >= 0 && j < kw ? t.a.w[i * kw + j] * p.scale : 0.0f;
        __half hi, lo;
        ict::split_h(v, hi, lo);
        __half *row = wsm + (size_t)i * 2 * WROW; /* halves: 2 per word */
        row[2 * cp * CW + idx] = hi;
        row[2 * (2 * CW + cp * CW) + idx] = lo;
    }
    __syncthreads();

    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const ict::warp_tiles wt(warp, t.nrg);
    const int ci = wt.ci;
    const int g = lane >> 2, tq = lane & 3;
    uint32_t abase[4];
#pragma unroll
    for (int j = 0; j < 4; j++) {
        abase[j] = ict::smem_addr(h16 + (size_t)ci * hplane + (wt.row0(j) + (lane & 15)) * HS +
                                  wt.col0(j) + (lane >> 4) * 8);
    }
    /* taps (j0, j0 + 1), j0 = 16 ks + 2 tq - 8 nh - g - sh, of step ks and
     * n half nh: an aligned word (index j0 + WOFF + sh - cp) of copy cp = g & 1 */
    const uint32_t *wl =
        reinterpret_cast<const uint32_t *>(wsm) + tq + (ict::WOFF - g - (g & 1)) / 2 + (g & 1) * CW;
    float acc[4][2][4];
    ict::zero_acc(acc);
#pragma unroll 1
    for (int i = 0; i < kh; i++) {
        const uint32_t *wr = wl + i * WROW;
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            /* this k step's weight fragments: n halves x (hi, lo) x 2 (split:
             * the same for both halves, each on its own window) */
            uint32_t bh[2][2], bl[2][2];
#pragma unroll
            for (int nh = 0; nh < (SPLIT ? 1 : 2); nh++) {
                bh[nh][0] = wr[8 * ks - 4 * nh];
                bh[nh][1] = wr[8 * ks - 4 * nh + 4];
                bl[nh][0] = wr[2 * CW + 8 * ks - 4 * nh];
                bl[nh][1] = wr[2 * CW + 8 * ks - 4 * nh + 4];
            }
#pragma unroll
            for (int j = 0; j < 4; j++) {
                if constexpr (SPLIT) {
#pragma unroll
                    for (int nh = 0; nh < 2; nh++) {
                        uint32_t a[4];
                        ict::ldsm_x4(a, abase[j] + (uint32_t)((i * HS + 16 * ks + 8 * nh) * 2));
                        ict::mma16816(acc[j][nh], a, bl[0][0], bl[0][1]);
                        ict::mma16816(acc[j][nh], a, bh[0][0], bh[0][1]);
                    }
                } else {
                    uint32_t a[4];
                    ict::ldsm_x4(a, abase[j] + (uint32_t)((i * HS + 16 * ks) * 2));
#pragma unroll
                    for (int nh = 0; nh < 2; nh++) {
                        ict::mma16816(acc[j][nh], a, bl[nh][0], bl[nh][1]);
                        ict::mma16816(acc[j][nh], a, bh[nh][0], bh[nh][1]);
                    }
                }
            }
        }
    }
    /* over the planes, once every warp is done with them */
    ict::stage_store<false, ict::SS>(t, b, smem, wt, acc, p.unscale);
}

template <int KS, bool SPLIT>
ic_status launch_ks(const icf::targs &t, const tparam &p, size_t smem, char *err, size_t errlen)
{
    return icf::launch_tiles(fast_tensor_kernel<KS, SPLIT>, t, p, smem, "cuda fast tensor kernel",
                             err, errlen);
}

} // namespace

extern "C" size_t ic_fast_tensor_smem(int kw, int kh, int cb, int nrg)
{
    if (kw < 3 || kh < 1 || kw > IC_FAST_TENSOR_MAX_KW || kh > IC_FAST_DIRECT_MAX_KH || cb < 1 ||
        nrg < 2 || (nrg & 1) || cb * nrg * 32 > icf::MAX_THREADS)
        return 0;
    const size_t in = planes_bytes(geo_of(kw), kh, cb, nrg) + weights_bytes(steps_of(kw), kh);
    return in > ict::stage_bytes(cb, nrg) ? in : ict::stage_bytes(cb, nrg);
}

extern "C" ic_status ic_fast_tensor_launch(const ic_cuda_args *a, const float *w,
                                           const ic_fast_plan *p, char *err, size_t errlen)
{
    const size_t smem = ic_fast_tensor_smem(a->kw, a->kh, p->cb, p->nrg);
    if (smem == 0 || smem > a->smem_optin || a->u16 || a->f32 || a->premultiply || !a->w) {
        snprintf(err, errlen, "cuda fast tensor: cannot take a %dx%d kernel on this job", a->kw,
                 a->kh);
        return IC_ERR_UNSUPPORTED;
    }
    /* the largest weight scaled into [2^13, 2^14): lo stays a normal fp16
     * for every weight within 2^-10 of it, and sums of 255 * 2^14 * 63 * 31
     * stay far inside float32's range */
    float wmax = 0;
    for (int i = 0; i < a->kw * a->kh; i++)
        wmax = fmaxf(wmax, fabsf(w[i]));
    tparam tp;
    tp.scale = ict::scale_to(wmax, 14);
    tp.unscale = 1.0f / tp.scale; /* exact: a power of two */
    const icf::targs t = icf::make_targs(a, p);
    /* the instantiation of this width's k steps and split (the geometry
     * ic_fast_tensor_smem sized): split 1 (3..9) or 2 (19..25), whole 2
     * (11..17) or 3 (27..31) */
    static_assert(steps_of(3) == 1 && split_of(3) && steps_of(IC_FAST_TENSOR_MAX_KW) == 3 &&
                      !split_of(IC_FAST_TENSOR_MAX_KW),
                  "the launches below cover widths 3..31");
    const int ks = steps_of(a->kw);
    if (split_of(a->kw))
        return ks == 1 ? launch_ks<1, true>(t, tp, smem, err, errlen)
                       : launch_ks<2, true>(t, tp, smem, err, errlen);
    return ks == 2 ? launch_ks<2, false>(t, tp, smem, err, errlen)
                   : launch_ks<3, false>(t, tp, smem, err, errlen);
}

extern "C" int ic_fast_tensor_ksteps(int kw)
{
    return steps_of(kw);
}
