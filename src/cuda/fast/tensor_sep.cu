/*
 * tensor_sep.cu - separable (rank-1) correlation on the tensor cores: both
 * passes of K = col row^T as fp16 mma.sync in one kernel, the
 * tensor method's form for Gaussians and other rank-1 kernels of 8-bit
 * images. The shared-memory sep method (sep.cu) spends two fp32 FMAs a tap
 * on the CUDA cores; here both passes are banded matrix products, and the
 * intermediate never leaves the registers: the row pass is computed
 * transposed, so that its accumulators are the column pass's A fragments
 * (an m16n8 accumulator pair is laid out as an m16k16 A operand).
 *
 * A warp owns 4 output tiles of 16 x 16 (as in tensor.cu), V = nrg / 2 of
 * them stacked in each of 4 / V columns. For each column and each chunk of
 * 16 rows of the row pass's output H (V + CS - 1 chunks cover the 16 V + K -
 * 1 rows the column's tiles read; chunk cc is chunk cc - v of tile v):
 *   1. row pass, transposed: H^T (16 columns x 16 rows, two m16n8 tiles) =
 *      sum over KS k steps of R^T (banded row weights, A) times in^T (B:
 *      ldmatrix of the fp16 planes, tensor_impl.cuh); weights scaled so that
 *      |H| < 2^15 and split into hi and lo halves, fp32 accumulators;
 *   2. H^T as fp16 A fragments, hi = fp16(H) and lo = fp16(H - hi): 22 bits;
 *   3. column pass: out^T (16 columns x 8 rows, for each 8-row half of each
 *      tile the chunk reaches) += H^T times V (B: the banded column weights,
 *      scaled near 2^14), three products (H_hi V_lo, H_lo V_hi, H_hi V_hi:
 *      the fourth is below float32's rounding).
 * The weight fragments of both passes are each lane's 16-byte entries of a
 * table warp 0 builds in shared memory once a block (from the padded taps),
 * loaded whole where they are used. Then the sums, unscaled by an exact
 * power of two, are staged and stored as in tensor.cu. Shared memory holds
 * the input planes, the taps and the table: as many blocks fit as for
 * tensor.cu.
 * Precision: every product of fp16 values is exact in fp32; the rounding is
 * float32's with H carried to 22 bits, in another order than the
 * reference's: the planner takes the method only for kernels that are not
 * tie-prone (as for the FFT and tensor.cu).
 *
 * Square kernels 3..31 (ic_kernel_factor factors square kernels only).
 * Block: the tile of direct/sep (128 columns x 8*nrg rows x cb channels);
 * nrg 2, 4 or 8, up to icf::MAX_THREADS threads (two blocks an SM), and the
 * big blocks of every channel, one an SM (ic_fast_tensor_sep_smem): 768
 * threads for 64 rows of RGB (IC_FAST_TSEP_BIG_THREADS), 512 for 32 rows of
 * RGBA or 64 of grey + alpha (IC_FAST_TSEP_BIG2_THREADS); the planner takes
 * them above 17x17 (plan.cu). Not for premultiplied alpha or 16-bit
 * samples.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda/fast/tensor_impl.cuh"

namespace
{

using ict::hs_of;
using ict::hw_of;
using ict::ks_of;
using ict::wl_of;

constexpr int SST = icf::TW + 4; /* staged row stride: the transposed stores hit 32 banks */

/* Chunks of 16 H rows a tile of 16 output rows reads. */
__host__ __device__ constexpr int cs_of(int k)
{
    return (16 + k - 1 + 15) / 16;
}
/* Input rows of a block of nrg row groups: every row its last tile reads. */
__host__ __device__ constexpr int rows_of(int k, int nrg)
{
    return 16 * (nrg / 2 - 1 + cs_of(k));
}
/* Halves after the planes: the taps (ict::build_taps), row and column,
 * then the lanes' fragments (16 bytes a lane: row pass KS x (hi, lo), column
 * pass CS x 2 row halves). */
__host__ __device__ constexpr int taps_halves(int ks, int cs)
{
    return 4 * wl_of(ks) + 4 * wl_of(cs) + (2 * ks + 2 * cs) * 32 * 8;
}

struct sparam {
    float row[IC_FAST_TENSOR_MAX_KW], col[IC_FAST_TENSOR_MAX_KW];
    float rscale, cscale, unscale; /* powers of two */
};

/* (v0, v1) as an fp16 pair hi and the pair of what is left, lo. */
__device__ __forceinline__ void split2(float v0, float v1, uint32_t &hi, uint32_t &lo)
{
    const __half2 h = __floats2half2_rn(v0, v1);
    const float2 f = __half22float2(h);
    const __half2 l = __floats2half2_rn(v0 - f.x, v1 - f.y);
    hi = *reinterpret_cast<const uint32_t *>(&h);
    lo = *reinterpret_cast<const uint32_t *>(&l);
}

template <int KS, int CS, int V, int NT = icf::MAX_THREADS>
__global__ void __launch_bounds__(NT, NT > icf::MAX_THREADS ? 1 : 2)
    fast_tsep_kernel(const icf::targs t, const __grid_constant__ sparam p)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    const int k = t.a.kw; /* == kh */
    constexpr int HS = hs_of(KS), WLR = wl_of(KS), WLC = wl_of(CS);
    const int nrb = t.nrg / 2, rows = 16 * (nrb - 1 + CS);
    const int hplane = rows * HS;
    __half *h16 = reinterpret_cast<__half *>(smem);
    __half *rtaps = h16 + (size_t)t.cb * hplane, *ctaps = rtaps + 4 * WLR;
    uint4 *rq = reinterpret_cast<uint4 *>(ctaps + 4 * WLC); /* [KS][hi, lo][lane] */
    uint4 *cq = rq + KS * 2 * 32;                           /* [CS][row half][lane] */

    const ict::planes P = {h16, HS, hplane, rows, b.xa, b.ya};
    ict::fill_h16<hw_of(KS)>(t, b, P);
    ict::build_taps(p.row, k, p.rscale, rtaps, WLR);
    ict::build_taps(p.col, k, p.cscale, ctaps, WLC);
    __syncthreads(); /* taps complete */

    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int g = lane >> 2, tq = lane & 3;
    if (warp == 0) {
        /* each lane's fragments, once for the block: loaded whole (16 bytes)
         * where they are used, instead of held in registers */
        const int sh = ict::shift_of(k);
        /* row pass A = R^T of step ks: R^T[m][kk] = row[16 ks + kk - m -
         * sh]; a0 = a3 taps j, j + 1, a1 taps j - 8.., a2 taps j + 8.., j =
         * 16 ks + 2 tq - g - sh */
#pragma unroll
        for (int ks = 0; ks < KS; ks++) {
            const int j = 16 * ks + 2 * tq - g - sh;
            uint32_t h[3], l[3];
            ict::taps_word(rtaps, WLR, j, h[0], l[0]);
            ict::taps_word(rtaps, WLR, j - 8, h[1], l[1]);
            ict::taps_word(rtaps, WLR, j + 8, h[2], l[2]);
            rq[(2 * ks) * 32 + lane] = make_uint4(h[0], h[1], h[2], h[0]);
            rq[(2 * ks + 1) * 32 + lane] = make_uint4(l[0], l[1], l[2], l[0]);
        }
        /* column pass B = V of chunk c into row half nb: V[kk][n] = col[16 c
         * + kk - 8 nb - n]: b0 taps d, d + 1, b1 taps d + 8.., d = 16 c + 2 tq
         * - 8 nb - g; (hi b0, hi b1, lo b0, lo b1) */
#pragma unroll
        for (int c = 0; c < CS; c++)
#pragma unroll
            for (int nb = 0; nb < 2; nb++) {
                const int d = 16 * c + 2 * tq - 8 * nb - g;
                uint32_t h[2], l[2];
                ict::taps_word(ctaps, WLC, d, h[0], l[0]);
                ict::taps_word(ctaps, WLC, d + 8, h[1], l[1]);
                cq[(2 * c + nb) * 32 + lane] = make_uint4(h[0], h[1], l[0], l[1]);
            }
    }
    __syncthreads(); /* planes and fragments complete */
    const ict::warp_tiles wt(warp, t.nrg);
    const int ci = wt.ci;
    /* the warp's tiles j = col * V + v: V = nrg / 2 tiles stacked in each of
     * 4 / V columns; a column's tiles share its H chunks (chunk cc is chunk
     * cc - v of tile v), so a column computes V + CS - 1 chunks, not V * CS */
    float acc[4][2][4];
    ict::zero_acc(acc);
#pragma unroll
    for (int col = 0; col < 4 / V; col++) {
        /* B = in^T by ldmatrix: matrices (rows 0-7 | 8-15) x (columns 0-7 |
         * 8-15) give b0, b1 of H rows 0-7, then of rows 8-15 */
        const uint32_t base = ict::smem_addr(
            h16 + (size_t)ci * hplane + (wt.row0(col * V) + (lane & 7) + ((lane >> 4) << 3)) * HS +
            wt.col0(col * V) + ((lane >> 3) & 1) * 8);
#pragma unroll
        for (int cc = 0; cc < V + CS - 1; cc++) {
            float h[2][4];
#pragma unroll
            for (int nb = 0; nb < 2; nb++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    h[nb][e] = 0.0f;
#pragma unroll
            for (int ks = 0; ks < KS; ks++) {
                uint32_t bb[4];
                ict::ldsm_x4(bb, base + (uint32_t)((16 * cc * HS + 16 * ks) * 2));
                const uint4 qh = rq[(2 * ks) * 32 + lane], ql = rq[(2 * ks + 1) * 32 + lane];
                const uint32_t ah[4] = {qh.x, qh.y, qh.z, qh.w};
                const uint32_t al[4] = {ql.x, ql.y, ql.z, ql.w};
#pragma unroll
                for (int nb = 0; nb < 2; nb++) {
                    ict::mma16816(h[nb], al, bb[2 * nb], bb[2 * nb + 1]);
                    ict::mma16816(h[nb], ah, bb[2 * nb], bb[2 * nb + 1]);
                }
            }
            /* H^T as A: a0 (columns g, H rows 2 tq..) a1 (columns g + 8)
             * from rows 0-7, a2 a3 from rows 8-15 */
            uint32_t hh[4], hl[4];
            split2(h[0][0], h[0][1], hh[0], hl[0]);
            split2(h[0][2], h[0][3], hh[1], hl[1]);
            split2(h[1][0], h[1][1], hh[2], hl[2]);
            split2(h[1][2], h[1][3], hh[3], hl[3]);
            /* column pass into output rows 8 nb.. of each tile v the chunk
             * reaches: V[kk][n] = col[16 c + kk - 8 nb - n], c = cc - v,
             * skipped where the chunk is past that half's taps */
#pragma unroll
            for (int v = 0; v < V; v++) {
                const int c = cc - v;
                if (c < 0 || c >= CS)
                    continue;
#pragma unroll
                for (int nb = 0; nb < 2; nb++) {
                    if (16 * c - 8 * nb - 7 >= k)
                        continue;
                    const uint4 w = cq[(2 * c + nb) * 32 + lane];
                    float(&d)[4] = acc[col * V + v][nb];
                    ict::mma16816(d, hh, w.z, w.w);
                    ict::mma16816(d, hl, w.x, w.y);
                    ict::mma16816(d, hh, w.x, w.y);
                }
            }
        }
    }
    ict::stage_store<true, SST>(t, b, smem, wt, acc, p.unscale);
}

template <int KS, int CS, int V>
ic_status launch_v(const icf::targs &t, const sparam &p, size_t smem, char *err, size_t errlen)
{
    /* the big blocks (ic_fast_tensor_sep_smem): 512 threads (4 channels x 4
     * row groups, 2 x 8) or 768 (3 x 8), one an SM */
    const int threads = 32 * t.cb * t.nrg;
    if constexpr (V >= 2) {
        if (threads == IC_FAST_TSEP_BIG2_THREADS)
            return icf::launch_tiles(fast_tsep_kernel<KS, CS, V, IC_FAST_TSEP_BIG2_THREADS>, t, p,
                                     smem, "cuda fast tensor sep kernel", err, errlen);
    }
    if constexpr (V == 4) {
        if (threads == IC_FAST_TSEP_BIG_THREADS)
            return icf::launch_tiles(fast_tsep_kernel<KS, CS, V, IC_FAST_TSEP_BIG_THREADS>, t, p,
                                     smem, "cuda fast tensor sep kernel", err, errlen);
    }
    return icf::launch_tiles(fast_tsep_kernel<KS, CS, V>, t, p, smem, "cuda fast tensor sep kernel",
                             err, errlen);
}

/* The instantiation for the block's tile height: V = nrg / 2 tiles a column. */
template <int KS, int CS>
ic_status launch_ks(const icf::targs &t, const sparam &p, size_t smem, char *err, size_t errlen)
{
    return t.nrg == 8   ? launch_v<KS, CS, 4>(t, p, smem, err, errlen)
           : t.nrg == 4 ? launch_v<KS, CS, 2>(t, p, smem, err, errlen)
                        : launch_v<KS, CS, 1>(t, p, smem, err, errlen);
}

} // namespace

extern "C" size_t ic_fast_tensor_sep_smem(int k, int cb, int nrg)
{
    /* blocks of up to icf::MAX_THREADS, two an SM; and the big blocks of
     * 2 or 4 row-group pairs (V >= 2) in 512 or 768 threads (4 channels x 4
     * row groups, 2 x 8, 3 x 8), one an SM: their rows share more of their
     * halo, which outweighs the second block's overlap below 8K (the
     * planner's rule, plan.cu) */
    const int threads = 32 * cb * nrg;
    const bool big =
        nrg >= 4 && (threads == IC_FAST_TSEP_BIG_THREADS || threads == IC_FAST_TSEP_BIG2_THREADS);
    if (k < 3 || k > IC_FAST_TENSOR_MAX_KW || cb < 1 || (nrg != 2 && nrg != 4 && nrg != 8) ||
        (threads > icf::MAX_THREADS && !big))
        return 0;
    const size_t in =
        ((size_t)cb * rows_of(k, nrg) * hs_of(ks_of(k)) + (size_t)taps_halves(ks_of(k), cs_of(k))) *
        2;
    return in > ict::stage_bytes(cb, nrg) ? in : ict::stage_bytes(cb, nrg);
}

extern "C" double ic_fast_tensor_sep_macs(int k)
{
    /* a 16 x 16 tile: CS chunks x KS steps x 4 m16n8k16 (2 row halves, hi
     * and lo) in the row pass, CS x 2 x 3 in the column pass (an upper
     * bound: chunks past a half's taps are skipped) */
    return (32.0 * ks_of(k) + 48.0) * cs_of(k);
}

extern "C" ic_status ic_fast_tensor_sep_launch(const ic_cuda_args *a, const float *row,
                                               const float *col, const ic_fast_plan *p, char *err,
                                               size_t errlen)
{
    const size_t smem = a->kw == a->kh ? ic_fast_tensor_sep_smem(a->kw, p->cb, p->nrg) : 0;
    if (smem == 0 || smem > a->smem_optin || a->u16 || a->f32 || a->premultiply || !row || !col) {
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
    sp.rscale = ict::scale_to(rsum * smax, 15);
    sp.cscale = ict::scale_to(cmax, 14);
    sp.unscale = 1.0f / (sp.rscale * sp.cscale); /* exact: powers of two */
    const icf::targs t = icf::make_targs(a, p);
    /* k steps of the row pass (16 + k - 1 + shift columns), chunks of the
     * column pass (16 + k - 1 rows) */
    static_assert(ks_of(3) == 2 && ks_of(17) == 2 && ks_of(18) == 3 && cs_of(17) == 2 &&
                      cs_of(18) == 3 && ks_of(IC_FAST_TENSOR_MAX_KW) == 3 &&
                      cs_of(IC_FAST_TENSOR_MAX_KW) == 3,
                  "the launches below cover sizes 3..31");
    if (k <= 17)
        return launch_ks<2, 2>(t, sp, smem, err, errlen);
    return launch_ks<3, 3>(t, sp, smem, err, errlen);
}
