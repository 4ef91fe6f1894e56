/*
 * sep_impl.cuh - the kernels and launch helpers of separable and low-rank
 * correlation, the fast path's method for kernels K = sum_{k<r} col_k row_k^T
 * (Gaussian, box, Sobel, Prewitt, Scharr: rank 1; unsharp mask, Laplacian:
 * rank 2). sep.cu holds the entry points and dispatches to the parts
 * sep_k*.cu, which instantiate these templates a few kernel sizes each so
 * that they compile in parallel.
 *
 * The kernels are factored on the host by
 * ic_kernel_factor (src/core/factor.c). The idea is cuda-samples'
 * convolutionSeparable; here both passes are fused in one kernel so that the
 * intermediate never touches device memory:
 *   1. the block's input tile (th + K - 1 rows, halo included) is converted to
 *      float once into shared memory (tile.cuh; T is the sample type its
 *      loads and stores are vectorised for: uint8_t, which also takes 16-bit
 *      and float32 jobs a sample at a time, or float);
 *   2. for each rank term: the row pass writes H = in (*) row_k for all
 *      th + K - 1 rows into a second shared buffer, then the column pass adds
 *      H (*) col_k for the block's th output rows into registers (each H row is
 *      read once per thread and used for up to 8 output rows). Rank 1 (every
 *      Gaussian, box and derivative kernel) needs no second buffer: a tile row
 *      is read by the one warp that filters it, so that warp writes H over the
 *      row it has just read (after a __syncwarp: its lanes' windows overlap).
 *      That halves the shared memory of a block (8K 15x15 RGB: 82 KB instead
 *      of 152), so two blocks share an SM where one did: the stop-22 profile
 *      found the kernel latency-bound at 18.75% occupancy, one block per SM;
 *   3. the sum of the r terms is rounded and stored once.
 * Work: r * (K * (th + K - 1) / th + K) multiply-adds per output instead of K^2.
 * Specialised per K (3..31 odd, square kernels); the vectors are a kernel
 * parameter (constant bank). Premultiplied alpha: both passes are linear, so
 * the C*A and A planes of the tile (tile.cuh) give FC and FA, divided
 * before the store.
 */
#ifndef IC_CUDA_FAST_SEP_IMPL_CUH
#define IC_CUDA_FAST_SEP_IMPL_CUH

#include <stdio.h>

#include "cuda/fast/tile.cuh"

/* A named namespace (not an anonymous one): the parts' explicit
 * instantiations must link with sep.cu's extern declarations. */
namespace icf_sep
{

using icf::R;
using icf::TW;

struct sep_param {
    float row[IC_FAST_SEP_MAX_RANK * IC_FAST_SEP_MAX_K];
    float col[IC_FAST_SEP_MAX_RANK * IC_FAST_SEP_MAX_K];
    int rank;
};

/* Floats of one channel's H buffer: none for rank 1 (H is written over the
 * input tile's rows, see the top). */
__host__ __device__ constexpr int hplane_of(int k, int nrg, int rank)
{
    return rank == 1 ? 0 : (R * nrg + k - 1) * TW + 4;
}

template <int K, class T>
__global__ void __launch_bounds__(icf::MAX_THREADS, icf::MIN_BLOCKS)
    fast_sep_kernel(const icf::targs t, const sep_param w)
{
    constexpr int cx = (K - 1) / 2;
    constexpr int OFF = icf::pad_of(K) - cx;
    constexpr int NV = icf::nvec_of(K);
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    /* H in place over the input rows (rank 1, stride sw) or in its own buffer (stride TW) */
    const bool inplace = w.rank == 1;
    float *hbuf = inplace ? smem : smem + t.cb * b.plane;
    const int hplane = inplace ? b.plane : hplane_of(K, t.nrg, w.rank);
    const int hstride = inplace ? b.sw : TW;
    icf::tile_fill<T>(t, b, smem);

    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nwarps = (int)(blockDim.x >> 5);
    const int ci = warp / t.nrg, rg = warp - ci * t.nrg;
    float acc[R][4];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int p = 0; p < 4; p++)
            acc[r][p] = 0.0f;

    for (int k = 0; k < w.rank; k++) {
        __syncthreads(); /* tile filled / previous column pass done with H */
        /* Row pass over every tile row of every channel of the block. */
        float rw[K];
#pragma unroll
        for (int i = 0; i < K; i++)
            rw[i] = w.row[k * K + i];
        /* items it = warp, warp + nwarps, ... of the cb * rows (channel,
         * row) pairs; c and q follow it without a division per item */
        int c = warp / b.rows, q = warp - c * b.rows;
        for (int it = warp; it < t.cb * b.rows; it += nwarps) {
            const float *src = smem + c * b.plane + q * b.sw + 4 * lane;
            float win[4 * NV];
#pragma unroll
            for (int m = 0; m < NV; m++) {
                const float4 v = *reinterpret_cast<const float4 *>(src + 4 * m);
                win[4 * m] = v.x;
                win[4 * m + 1] = v.y;
                win[4 * m + 2] = v.z;
                win[4 * m + 3] = v.w;
            }
            float h[4] = {0.0f, 0.0f, 0.0f, 0.0f};
#pragma unroll
            for (int i = 0; i < K; i++)
#pragma unroll
                for (int p = 0; p < 4; p++)
                    h[p] = fmaf(rw[i], win[OFF + p + i], h[p]);
            /* in place: every lane has read its window (which overlaps the
             * next lanes' outputs) before any lane writes; `it` is uniform
             * over the warp, so all 32 lanes reach this */
            __syncwarp();
            *reinterpret_cast<float4 *>(hbuf + c * hplane + q * hstride + 4 * lane) =
                make_float4(h[0], h[1], h[2], h[3]);
            for (q += nwarps; q >= b.rows; q -= b.rows)
                c++;
        }
        __syncthreads();
        /* Column pass: H row q feeds output rows r = q - j. */
        float cw[K];
#pragma unroll
        for (int j = 0; j < K; j++)
            cw[j] = w.col[k * K + j];
        const float *hsrc = hbuf + ci * hplane + rg * R * hstride + 4 * lane;
#pragma unroll
        for (int q = 0; q < R + K - 1; q++) {
            const float4 v = *reinterpret_cast<const float4 *>(hsrc + q * hstride);
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int j = q - r;
                if (j >= 0 && j < K) {
                    acc[r][0] = fmaf(cw[j], v.x, acc[r][0]);
                    acc[r][1] = fmaf(cw[j], v.y, acc[r][1]);
                    acc[r][2] = fmaf(cw[j], v.z, acc[r][2]);
                    acc[r][3] = fmaf(cw[j], v.w, acc[r][3]);
                }
            }
        }
    }
    if (t.a.premultiply) /* uniform: every warp reaches the barriers */
        icf::unpremultiply(t, b, smem, ci, rg, acc);
    icf::tile_store<T>(t, b, smem, ci, rg, acc);
}

/* Launches the kernel for kw among K..HI (odd; HI <= IC_FAST_SEP_MAX_K): a
 * size past HI (past what this instantiation covers) is unsupported. */
template <int K, int HI, class T>
ic_status launch_k(const icf::targs &t, const sep_param &p, size_t smem, char *err, size_t errlen)
{
    if constexpr (K > HI || K > IC_FAST_SEP_MAX_K) {
        (void)t, (void)p, (void)smem;
        snprintf(err, errlen, "cuda fast sep: kernel larger than %d", IC_FAST_SEP_MAX_K);
        return IC_ERR_UNSUPPORTED;
    } else {
        if (t.a.kw == K)
            return icf::launch_tiles(fast_sep_kernel<K, T>, t, p, smem, "cuda fast sep kernel", err,
                                     errlen);
        return launch_k<K + 2, HI, T>(t, p, smem, err, errlen);
    }
}

} // namespace icf_sep

/* Names the launch of the sizes LO..HI (odd) for samples T (tile.cuh) that a
 * part instantiates (PREFIX `template`) and sep.cu declares (PREFIX `extern
 * template`, so that it instantiates none). */
#define IC_SEP_LAUNCH_K(PREFIX, LO, HI, T)                                                         \
    PREFIX ic_status icf_sep::launch_k<LO, HI, T>(                                                 \
        const icf::targs &t, const icf_sep::sep_param &p, size_t smem, char *err, size_t errlen)

#endif
