/*
 * direct_impl.cuh - the kernels and launch helpers of direct 2D correlation,
 * the fast path's method for small and medium full-rank kernels.
 * direct.cu holds the entry points and dispatches to the parts
 * direct_sq*.cu and direct_w*.cu, which instantiate these templates a few
 * kernel sizes each so that they compile in parallel.
 *
 * The seeds' tiled kernels (seed 003 Fig
 * 7.12/7.15, seed 000) load one input sample per thread and compute one output;
 * here each thread computes 4 x 8 outputs and reuses every input window from
 * registers:
 *   - the tile is converted to float once per input sample (tile.cuh; T is the
 *     sample type its loads and stores are vectorised for: uint8_t, which
 *     also takes 16-bit and float32 jobs a sample at a time, or float);
 *   - a thread reads its window of an input row as 16-byte vectors, then applies
 *     it to up to 8 output rows (kh rows of weights), so shared-memory traffic
 *     per multiply-add falls to ~1/(4*kh);
 *   - weights are a kernel parameter: they sit in the constant bank and, with
 *     kw and kh compile-time (3x3, 5x5, 7x7, 9x9 fully unrolled), every FFMA takes
 *     its weight straight from it; other sizes are specialised on kw with kh a
 *     run-time loop (weights then come through LDC, once per row of weights).
 * Sums run in the reference order (kernel rows outer, columns inner) in float32.
 * Premultiplied alpha: the tile holds C*A and A (tile.cuh), the sums are
 * FC and FA, divided before the store.
 */
#ifndef IC_CUDA_FAST_DIRECT_IMPL_CUH
#define IC_CUDA_FAST_DIRECT_IMPL_CUH

#include <stdio.h>

#include "cuda/fast/tile.cuh"

/* A named namespace (not an anonymous one): the parts' explicit
 * instantiations must link with direct.cu's extern declarations. */
namespace icf_direct
{

using icf::R;

/* Weights by value (kernel parameter space, up to 32 KB on sm_70+). */
template <int N> struct wparam {
    float v[N];
};

/* Accumulates the tile rows of item (plane, rg) for one lane into acc. */
template <int KW, int KH>
__device__ __forceinline__ void direct_rows(const float *plane, int sw, int lane, const float *w,
                                            int kh, float (&acc)[R][4])
{
    constexpr int cx = (KW - 1) / 2;
    constexpr int OFF = icf::pad_of(KW) - cx;
    constexpr int NV = icf::nvec_of(KW);
    const float *base = plane + 4 * lane;
    if constexpr (KH > 0) {
        /* Every input row q feeds output rows r = q - j: read once, use KH times. */
#pragma unroll
        for (int q = 0; q < R + KH - 1; q++) {
            float win[4 * NV];
#pragma unroll
            for (int m = 0; m < NV; m++) {
                const float4 v = *reinterpret_cast<const float4 *>(base + q * sw + 4 * m);
                win[4 * m] = v.x;
                win[4 * m + 1] = v.y;
                win[4 * m + 2] = v.z;
                win[4 * m + 3] = v.w;
            }
#pragma unroll
            for (int r = 0; r < R; r++) {
                const int j = q - r;
                if (j >= 0 && j < KH) {
#pragma unroll
                    for (int i = 0; i < KW; i++)
#pragma unroll
                        for (int p = 0; p < 4; p++)
                            acc[r][p] = fmaf(w[j * KW + i], win[OFF + p + i], acc[r][p]);
                }
            }
        }
    } else {
        /* Run-time kernel height: one row of weights in registers, applied to
         * the 8 output rows (their windows come from rows r + j). */
        for (int j = 0; j < kh; j++) {
            float wr[KW];
#pragma unroll
            for (int i = 0; i < KW; i++)
                wr[i] = w[j * KW + i];
#pragma unroll
            for (int r = 0; r < R; r++) {
                float win[4 * NV];
#pragma unroll
                for (int m = 0; m < NV; m++) {
                    const float4 v = *reinterpret_cast<const float4 *>(base + (r + j) * sw + 4 * m);
                    win[4 * m] = v.x;
                    win[4 * m + 1] = v.y;
                    win[4 * m + 2] = v.z;
                    win[4 * m + 3] = v.w;
                }
#pragma unroll
                for (int i = 0; i < KW; i++)
#pragma unroll
                    for (int p = 0; p < 4; p++)
                        acc[r][p] = fmaf(wr[i], win[OFF + p + i], acc[r][p]);
            }
        }
    }
}

template <int KW, int KH> using direct_w = wparam<KW *(KH > 0 ? KH : IC_FAST_DIRECT_MAX_KH)>;

/* The fully unrolled 9x9 body needs more than the 80 registers of two
 * 384-thread blocks per SM (it spilled); it gets one block's worth. */
template <int KW, int KH, class T>
__global__ void __launch_bounds__(icf::MAX_THREADS, (KH > 0 && KW >= 9) ? 1 : icf::MIN_BLOCKS)
    fast_direct_kernel(const icf::targs t, const direct_w<KW, KH> w)
{
    extern __shared__ float4 smem4[];
    float *smem = reinterpret_cast<float *>(smem4);
    const icf::tile b = icf::block_tile(t);
    icf::tile_fill<T>(t, b, smem);
    __syncthreads();
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int ci = warp / t.nrg, rg = warp - ci * t.nrg;
    float acc[R][4];
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int p = 0; p < 4; p++)
            acc[r][p] = 0.0f;
    direct_rows<KW, KH>(smem + ci * b.plane + rg * R * b.sw, b.sw, lane, w.v, t.a.kh, acc);
    if (t.a.premultiply) /* uniform: every warp reaches the barriers */
        icf::unpremultiply(t, b, smem, ci, rg, acc);
    icf::tile_store<T>(t, b, smem, ci, rg, acc);
}

template <int KW, int KH, class T>
ic_status launch_one(const icf::targs &t, const float *w, size_t smem, char *err, size_t errlen)
{
    direct_w<KW, KH> p;
    const int n = t.a.kw * t.a.kh;
    for (int i = 0; i < n; i++)
        p.v[i] = w[i];
    for (int i = n; i < (int)(sizeof p.v / sizeof p.v[0]); i++)
        p.v[i] = 0.0f;
    return icf::launch_tiles(fast_direct_kernel<KW, KH, T>, t, p, smem, "cuda fast direct kernel",
                             err, errlen);
}

/* kw-specialised launch with run-time kh (kw odd, KW..HI; HI <= 31): a
 * width past HI (past what this instantiation covers) is unsupported. */
template <int KW, int HI, class T>
ic_status launch_kw(const icf::targs &t, const float *w, size_t smem, char *err, size_t errlen)
{
    if constexpr (KW > HI || KW > IC_FAST_DIRECT_MAX_KW) {
        (void)t, (void)w, (void)smem;
        snprintf(err, errlen, "cuda fast direct: kernel wider than %d", IC_FAST_DIRECT_MAX_KW);
        return IC_ERR_UNSUPPORTED;
    } else {
        if (t.a.kw == KW)
            return launch_one<KW, 0, T>(t, w, smem, err, errlen);
        return launch_kw<KW + 2, HI, T>(t, w, smem, err, errlen);
    }
}

} // namespace icf_direct

/* Name the launches a part instantiates (PREFIX `template`) and direct.cu
 * declares (PREFIX `extern template`, so that it instantiates none): one
 * square size, or the widths LO..HI (odd) with a run-time height, for
 * samples T (tile.cuh). */
#define IC_DIRECT_LAUNCH_ONE(PREFIX, KW, KH, T)                                                    \
    PREFIX ic_status icf_direct::launch_one<KW, KH, T>(const icf::targs &t, const float *w,        \
                                                       size_t smem, char *err, size_t errlen)
#define IC_DIRECT_LAUNCH_KW(PREFIX, LO, HI, T)                                                     \
    PREFIX ic_status icf_direct::launch_kw<LO, HI, T>(const icf::targs &t, const float *w,         \
                                                      size_t smem, char *err, size_t errlen)

#endif
