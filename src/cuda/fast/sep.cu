/*
 * sep.cu - separable and low-rank correlation, the fast path's method for
 * kernels K = sum_{k<r} col_k row_k^T (Gaussian, box, Sobel, Prewitt, Scharr:
 * rank 1; unsharp mask, Laplacian: rank 2), factored on the host by
 * ic_kernel_factor (src/core/factor.c). The idea is cuda-samples'
 * convolutionSeparable; here both passes are fused in one kernel so that the
 * intermediate never touches device memory:
 *   1. the block's input tile (th + K - 1 rows, halo included) is converted to
 *      float once into shared memory (fast_tile.cuh);
 *   2. for each rank term: the row pass writes H = in (*) row_k for all
 *      th + K - 1 rows into a second shared buffer, then the column pass adds
 *      H (*) col_k for the block's th output rows into registers (each H row is
 *      read once per thread and used for up to 8 output rows);
 *   3. the sum of the r terms is rounded and stored once.
 * Work: r * (K * (th + K - 1) / th + K) multiply-adds per output instead of K^2.
 * Specialised per K (3..31 odd, square kernels); the vectors are a kernel
 * parameter (constant bank). Premultiplied alpha: both passes are linear, so
 * the C*A and A planes of the tile (fast_tile.cuh) give FC and FA, divided
 * before the store.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/fast/tile.cuh"

namespace {

using icf::R;
using icf::TW;

struct sep_param {
    float row[IC_FAST_SEP_MAX_RANK * IC_FAST_SEP_MAX_K];
    float col[IC_FAST_SEP_MAX_RANK * IC_FAST_SEP_MAX_K];
    int rank;
};

/* Floats of one channel's H buffer. */
__host__ __device__ constexpr int hplane_of(int k, int nrg) { return (R * nrg + k - 1) * TW + 4; }

template <int K>
__global__ void __launch_bounds__(icf::MAX_THREADS, icf::MIN_BLOCKS)
    fast_sep_kernel(const icf::targs t, const sep_param w)
{
    constexpr int cx = (K - 1) / 2;
    constexpr int OFF = icf::pad_of(K) - cx;
    constexpr int NV = icf::nvec_of(K);
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    float *hbuf = smem + t.cb * b.plane;
    const int hplane = hplane_of(K, t.nrg);
    icf::fill(t, b, smem);

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
        for (int it = warp; it < t.cb * b.rows; it += nwarps) {
            const int c = it / b.rows, q = it - c * b.rows;
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
            *reinterpret_cast<float4 *>(hbuf + c * hplane + q * TW + 4 * lane) =
                make_float4(h[0], h[1], h[2], h[3]);
        }
        __syncthreads();
        /* Column pass: H row q feeds output rows r = q - j. */
        float cw[K];
#pragma unroll
        for (int j = 0; j < K; j++)
            cw[j] = w.col[k * K + j];
        const float *hsrc = hbuf + ci * hplane + rg * R * TW + 4 * lane;
#pragma unroll
        for (int q = 0; q < R + K - 1; q++) {
            const float4 v = *reinterpret_cast<const float4 *>(hsrc + q * TW);
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
    icf::store(t, b, smem, ci, rg, acc);
}

template <int K>
ic_status launch_k(const icf::targs &t, const sep_param &p, size_t smem, char *err, size_t errlen)
{
    if constexpr (K > IC_FAST_SEP_MAX_K) {
        (void)t, (void)p, (void)smem;
        snprintf(err, errlen, "cuda fast sep: kernel larger than %d", IC_FAST_SEP_MAX_K);
        return IC_ERR_UNSUPPORTED;
    } else {
        if (t.a.kw == K)
            return icf::launch_tiles(fast_sep_kernel<K>, t, p, smem, "cuda fast sep kernel", err,
                                     errlen);
        return launch_k<K + 2>(t, p, smem, err, errlen);
    }
}

} // namespace

extern "C" size_t ic_fast_sep_smem(int k, int cb, int nrg)
{
    if (k < 3 || k > IC_FAST_SEP_MAX_K || !(k & 1) || cb < 1 || nrg < 1 ||
        cb * nrg * 32 > icf::MAX_THREADS)
        return 0;
    return (size_t)cb * ((size_t)icf::plane_of(k, k, nrg) + (size_t)hplane_of(k, nrg)) *
           sizeof(float);
}

extern "C" ic_status ic_fast_sep_launch(const ic_cuda_args *a, const float *row, const float *col,
                                        int rank, const ic_fast_plan *p, char *err, size_t errlen)
{
    const size_t smem = a->kw == a->kh ? ic_fast_sep_smem(a->kw, p->cb, p->nrg) : 0;
    if (smem == 0 || smem > a->smem_optin || rank < 1 || rank > IC_FAST_SEP_MAX_RANK) {
        snprintf(err, errlen, "cuda fast sep: cannot take a %dx%d rank-%d kernel", a->kw, a->kh,
                 rank);
        return IC_ERR_UNSUPPORTED;
    }
    if (a->premultiply && p->cb != a->channels) {
        snprintf(err, errlen, "cuda fast sep: premultiplied alpha needs every channel per block");
        return IC_ERR_INTERNAL;
    }
    sep_param w;
    memset(&w, 0, sizeof w);
    const int K = a->kw;
    for (int k = 0; k < rank; k++)
        for (int i = 0; i < K; i++) {
            w.row[k * K + i] = row[(size_t)k * K + i];
            w.col[k * K + i] = col[(size_t)k * K + i];
        }
    w.rank = rank;
    const icf::targs t = icf::make_targs(a, p);
    return launch_k<3>(t, w, smem, err, errlen);
}
