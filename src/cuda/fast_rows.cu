/*
 * fast_rows.cu - the `rows` method of the cuda fast path: small square kernels
 * (3, 5, 7, 9) straight from global memory with 16-byte loads, no shared
 * memory and no barriers.
 *
 * A row of an AoS image is a run of width*channels samples in which a
 * horizontal tap is `channels` samples away; an SoA plane is the same with a
 * step of 1. Each thread owns 16 consecutive samples of ROWS output rows. For
 * each of the ROWS+K-1 input rows it needs, it loads the 16 samples above its
 * outputs plus the 16 on either side (three aligned uint4 loads; the side
 * loads hit L1, as neighbouring threads load the same lines), converts the
 * bytes it needs to float once, and adds that row's contribution to every
 * output row it touches. Weights travel as a kernel parameter (constant bank,
 * broadcast). With RANK > 0 the kernel is applied as RANK pairs of 1D passes:
 * each input row's horizontal pass is done once and shared by the output rows
 * it feeds (issue 4's separable path for small kernels). The whole window
 * stays in registers: indices are compile-time
 * constants, so nothing spills to local memory.
 *
 * Threads whose window would leave the image or the rows' written bytes (the
 * image edges, a row tail shorter than 16 samples) take the generic path:
 * every tap mapped with ic_border_map, one sample at a time. Reads never touch
 * the pitch padding, so initcheck stays clean.
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "core/border.h"
#include "cuda/cuda_common.cuh"
#include "cuda/fast.h"

namespace {

constexpr int ROWS = 4;    /* output rows per thread */
constexpr int CHUNK = 16;  /* output samples per thread: one uint4 store */
constexpr int BX = 32, BY = 8;

/* Weights by value (kernel parameter space = constant bank, broadcast):
 * the full K x K for RANK 0, else RANK pairs of row and column vectors. */
template <int K, int RANK> struct rows_w {
    float v[RANK == 0 ? K * K : 1];
    float row[RANK == 0 ? 1 : RANK][K];
    float col[RANK == 0 ? 1 : RANK][K];
};

__device__ __forceinline__ float byte_of(const uint4 &q, int b)
{
    const unsigned w = b < 4 ? q.x : b < 8 ? q.y : b < 12 ? q.z : q.w;
    return (float)((w >> (8 * (b & 3))) & 0xffu);
}

/* Generic path for one thread's chunk: every tap through ic_border_map, the
 * full weights read from global memory (a.w; the separable variant's vectors
 * would round differently from the interior, but both are within the oracle's
 * float tolerance: they compute the same sum). */
template <int K>
__device__ void rows_generic(const ic_cuda_args &a, const uint8_t *src,
                             uint8_t *dst, int step, int nsamp, int s0, int y0)
{
    constexpr int R = K / 2;
    for (int o = 0; o < ROWS; o++) {
        const int y = y0 + o;
        if (y >= a.height)
            return;
        for (int t = 0; t < CHUNK; t++) {
            const int s = s0 + t;
            if (s >= nsamp)
                break;
            const int x = s / step, c = s - x * step;
            float acc = 0.0f;
            for (int j = 0; j < K; j++) {
                const int sy = ic_border_map(y + j - R, a.height, a.border);
                for (int i = 0; i < K; i++) {
                    const int sx = ic_border_map(x + i - R, a.width, a.border);
                    const float v = (sx < 0 || sy < 0)
                                        ? a.border_value
                                        : (float)src[(size_t)sy * a.src_pitch + (size_t)sx * step + c];
                    acc += a.w[j * K + i] * v;
                }
            }
            dst[(size_t)y * a.dst_pitch + s] = ic_round_u8(acc + a.bias);
        }
    }
}

template <int K, int STEP, int RANK>
__global__ void __launch_bounds__(BX *BY, K >= 5 ? 2 : 4) rows_kernel(ic_cuda_args a, rows_w<K, RANK> w)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP; /* halo samples on each side, <= 16 */
    static_assert(H <= CHUNK, "halo wider than one side load");
    const int step = a.soa ? 1 : a.channels;
    const int nsamp = a.width * step;
    const int s0 = (blockIdx.x * BX + threadIdx.x) * CHUNK;
    const int y0 = (blockIdx.y * BY + threadIdx.y) * ROWS;
    if (s0 >= nsamp || y0 >= a.height)
        return;
    const size_t plane_in = a.soa ? (size_t)blockIdx.z * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)blockIdx.z * a.height * a.dst_pitch : 0;
    const uint8_t *src = a.src + plane_in;
    uint8_t *dst = a.dst + plane_out;

    const bool inside = (H == 0 || s0 >= CHUNK) && s0 + 2 * CHUNK <= nsamp && y0 >= R &&
                        y0 + ROWS - 1 + R < a.height;
    if (!inside) {
        rows_generic<K>(a, src, dst, step, nsamp, s0, y0);
        return;
    }

    float acc[ROWS][CHUNK];
#pragma unroll
    for (int o = 0; o < ROWS; o++)
#pragma unroll
        for (int t = 0; t < CHUNK; t++)
            acc[o][t] = 0.0f;

#pragma unroll
    for (int r = 0; r < ROWS + K - 1; r++) {
        const uint8_t *row = src + (size_t)(y0 - R + r) * a.src_pitch + s0;
        const uint4 mid = __ldg(reinterpret_cast<const uint4 *>(row));
        uint4 lft = mid, rgt = mid;
        if (H > 0) {
            lft = __ldg(reinterpret_cast<const uint4 *>(row - CHUNK));
            rgt = __ldg(reinterpret_cast<const uint4 *>(row + CHUNK));
        }
        /* f[q] = sample s0 - H + q */
        float f[CHUNK + 2 * H];
#pragma unroll
        for (int q = 0; q < CHUNK + 2 * H; q++) {
            const int b = q - H; /* byte offset from s0 */
            f[q] = b < 0 ? byte_of(lft, b + CHUNK) : b < CHUNK ? byte_of(mid, b) : byte_of(rgt, b - CHUNK);
        }
        if (RANK == 0) {
#pragma unroll
            for (int o = 0; o < ROWS; o++) {
                const int j = r - o; /* kernel row this input row is for output row o */
                if (j < 0 || j >= K)
                    continue;
#pragma unroll
                for (int i = 0; i < K; i++) {
                    const float wt = w.v[(RANK == 0 ? j * K + i : 0)];
#pragma unroll
                    for (int t = 0; t < CHUNK; t++)
                        acc[o][t] = fmaf(wt, f[t + i * STEP], acc[o][t]);
                }
            }
        } else {
            /* separable: the row pass once per input row, shared by every
             * output row it feeds, then the column weights */
#pragma unroll
            for (int q = 0; q < (RANK == 0 ? 1 : RANK); q++) {
                float h[CHUNK];
#pragma unroll
                for (int t = 0; t < CHUNK; t++) {
                    h[t] = 0.0f;
#pragma unroll
                    for (int i = 0; i < K; i++)
                        h[t] = fmaf(w.row[q][i], f[t + i * STEP], h[t]);
                }
#pragma unroll
                for (int o = 0; o < ROWS; o++) {
                    const int j = r - o;
                    if (j < 0 || j >= K)
                        continue;
#pragma unroll
                    for (int t = 0; t < CHUNK; t++)
                        acc[o][t] = fmaf(w.col[q][j], h[t], acc[o][t]);
                }
            }
        }
    }

#pragma unroll
    for (int o = 0; o < ROWS; o++) {
        unsigned v[4];
#pragma unroll
        for (int q = 0; q < 4; q++) {
            v[q] = 0;
#pragma unroll
            for (int b = 0; b < 4; b++)
                v[q] |= (unsigned)ic_round_u8(acc[o][4 * q + b] + a.bias) << (8 * b);
        }
        *reinterpret_cast<uint4 *>(dst + (size_t)(y0 + o) * a.dst_pitch + s0) =
            make_uint4(v[0], v[1], v[2], v[3]);
    }
}

template <int K, int STEP, int RANK>
ic_status launch(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                 char *err, size_t errlen)
{
    rows_w<K, RANK> p;
    memset(&p, 0, sizeof p);
    if (RANK == 0)
        for (int i = 0; i < K * K; i++)
            p.v[i] = w[i];
    for (int q = 0; q < RANK; q++)
        for (int i = 0; i < K; i++) {
            p.row[q][i] = row[q * K + i];
            p.col[q][i] = col[q * K + i];
        }
    const int step = a->soa ? 1 : a->channels;
    const long long nsamp = (long long)a->width * step;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    const long long groups = (a->height + ROWS - 1) / ROWS;
    const dim3 block(BX, BY);
    const dim3 grid((unsigned)((chunks + BX - 1) / BX), (unsigned)((groups + BY - 1) / BY),
                    a->soa ? (unsigned)a->channels : 1u);
    rows_kernel<K, STEP, RANK><<<grid, block, 0, (cudaStream_t)a->stream>>>(*a, p);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cuda fast rows kernel launch", (int)e);
    return IC_OK;
}

template <int K, int RANK>
ic_status launch_c(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   char *err, size_t errlen)
{
    switch (a->soa ? 1 : a->channels) {
    case 1:
        return launch<K, 1, RANK>(a, w, row, col, err, errlen);
    case 3:
        return launch<K, 3, RANK>(a, w, row, col, err, errlen);
    default:
        return launch<K, 4, RANK>(a, w, row, col, err, errlen);
    }
}

template <int K>
ic_status launch_k(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   int rank, char *err, size_t errlen)
{
    switch (rank) {
    case 0:
        return launch_c<K, 0>(a, w, row, col, err, errlen);
    case 1:
        return launch_c<K, 1>(a, w, row, col, err, errlen);
    default:
        return launch_c<K, 2>(a, w, row, col, err, errlen);
    }
}

} // namespace

extern "C" int ic_fast_rows_eligible(int kw, int kh, int channels, int soa)
{
    if (kw != kh || (kw != 3 && kw != 5 && kw != 7 && kw != 9))
        return 0;
    return soa || channels == 1 || channels == 3 || channels == 4;
}

extern "C" ic_status ic_fast_rows_launch(const ic_cuda_args *a, const float *w, const float *row,
                                         const float *col, int rank, char *err, size_t errlen)
{
    /* 16-byte loads and stores need aligned rows (cudaMallocPitch gives them;
     * a caller's device pointer may not): otherwise the generic kernel. The
     * generic path inside the kernel reads the full weights from a->w. */
    const int aligned = ((uintptr_t)a->src % 16 == 0) && ((uintptr_t)a->dst % 16 == 0) &&
                        a->src_pitch % 16 == 0 && a->dst_pitch % 16 == 0;
    const long long groups = ((long long)a->height + ROWS - 1) / ROWS;
    if (!a->w) {
        snprintf(err, errlen, "cuda fast rows: no device weights");
        return IC_ERR_INTERNAL;
    }
    if (!aligned || !ic_fast_rows_eligible(a->kw, a->kh, a->channels, a->soa) || rank < 0 ||
        rank > IC_FAST_ROWS_MAX_RANK || (rank > 0 && (!row || !col)) ||
        (groups + BY - 1) / BY > IC_CU_MAX_GRID_Y)
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    switch (a->kw) {
    case 3:
        return launch_k<3>(a, w, row, col, rank, err, errlen);
    case 5:
        return launch_k<5>(a, w, row, col, rank, err, errlen);
    case 7:
        return launch_k<7>(a, w, row, col, rank, err, errlen);
    default:
        return launch_k<9>(a, w, row, col, rank, err, errlen);
    }
}
