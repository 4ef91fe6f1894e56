/*
 * fast_rows.cu - the `rows` method of the cuda fast path: small square kernels
 * (3, 5, 7, 9) straight from global memory with 16-byte loads, no shared
 * memory, no barriers and one launch.
 *
 * A row of an AoS image is a run of width*channels samples in which a
 * horizontal tap is `channels` samples away; an SoA plane is the same with a
 * step of 1. Each thread owns 16 consecutive samples of ROWS output rows
 * (ROWS = 1, 2 or 4, chosen per image so that small images still give every
 * SM enough threads: ic_fast_rows_shape). For each of the ROWS+K-1 input rows
 * it needs, it loads the 16 samples above its outputs plus the 16 on either
 * side (three aligned uint4 loads; the side loads hit L1, as neighbouring
 * threads load the same lines), converts the bytes it needs to float once,
 * and adds that row's contribution to every output row it touches. Weights
 * travel as a kernel parameter (constant bank, broadcast). With RANK > 0 the
 * kernel is applied as RANK pairs of 1D passes: each input row's horizontal
 * pass is done once and shared by the output rows it feeds (issue 4's
 * separable path for small kernels). The whole window stays in registers:
 * indices are compile-time constants, so nothing spills to local memory.
 *
 * Threads whose window would leave the image or the row's written bytes (the
 * image edges, a row tail shorter than 16 samples) fill the same window by
 * gathering: every sample through ic_border_map, bytes outside the written
 * row never read (so initcheck stays clean). They then share the arithmetic
 * with the others and store byte by byte where the row ends. (Earlier
 * versions sent these outputs to a second kernel: one more launch, which is
 * most of the time of a small image.)
 */
#include <cuda_runtime.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/border.h"
#include "cuda/cuda_common.cuh"
#include "cuda/fast.h"

namespace {

constexpr int CHUNK = 16; /* output samples per thread: one uint4 store */
constexpr int BX = 32, BY = 8;

/* Weights by value (kernel parameter space = constant bank, broadcast):
 * the full K x K for RANK 0, else RANK pairs of row and column vectors. */
template <int K, int RANK> struct rows_w {
    float v[RANK == 0 ? K * K : 1];
    float row[RANK == 0 ? 1 : RANK][K];
    float col[RANK == 0 ? 1 : RANK][K];
};

/* Blocks per SM the register budget should allow: accumulators + window +
 * about 24 for addresses and loop state (more for the separable passes,
 * whose partial sums the scheduler keeps in flight), 64K registers per SM.
 * Checked with -Xptxas -v: no variant spills. */
template <int K, int STEP, int RANK, int ROWS> struct rows_occ {
    static constexpr int regs =
        ROWS * CHUNK + CHUNK + 2 * (K / 2) * STEP + 24 + (RANK > 0 ? 16 + 8 * RANK : 0);
    static constexpr int blocks = 65536 / (BX * BY * regs) < 1 ? 1 : 65536 / (BX * BY * regs);
};

__device__ __forceinline__ float byte_of(const uint4 &q, int b)
{
    const unsigned w = b < 4 ? q.x : b < 8 ? q.y : b < 12 ? q.z : q.w;
    return (float)((w >> (8 * (b & 3))) & 0xffu);
}

/* Sample s (any integer: outside [0, nsamp) it is border-mapped by pixel) of
 * source row sy (-1: a constant-border row). */
template <int STEP>
__device__ __noinline__ float gather(const uint8_t *row, int s, int nsamp, const ic_cuda_args &a)
{
    if (!row)
        return a.border_value;
    if (s >= 0 && s < nsamp)
        return (float)row[s];
    const int x = s >= 0 ? s / STEP : -((STEP - 1 - s) / STEP); /* floor(s / STEP) */
    const int c = s - x * STEP;
    const int sx = ic_border_map(x, a.width, a.border);
    return sx < 0 ? a.border_value : (float)row[sx * STEP + c];
}

template <int K, int STEP, int RANK, int ROWS>
__global__ void __launch_bounds__(BX *BY, (rows_occ<K, STEP, RANK, ROWS>::blocks))
    rows_kernel(ic_cuda_args a, rows_w<K, RANK> w)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP; /* halo samples on each side, <= 16 */
    static_assert(H <= CHUNK, "halo wider than one side load");
    const int nsamp = a.width * STEP; /* STEP is the channel count (AoS) or 1 (SoA) */
    const int s0 = (blockIdx.x * BX + threadIdx.x) * CHUNK;
    const int y0 = (blockIdx.y * BY + threadIdx.y) * ROWS;
    if (s0 >= nsamp || y0 >= a.height)
        return;
    const size_t plane_in = a.soa ? (size_t)blockIdx.z * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)blockIdx.z * a.height * a.dst_pitch : 0;
    const uint8_t *src = a.src + plane_in;
    uint8_t *dst = a.dst + plane_out;
    /* every load of the fast path inside the image's rows and written bytes */
    const bool inner = s0 >= CHUNK && s0 + 2 * CHUNK <= nsamp && y0 >= R &&
                       y0 + ROWS - 1 + R < a.height;

    float acc[ROWS][CHUNK];
#pragma unroll
    for (int o = 0; o < ROWS; o++)
#pragma unroll
        for (int t = 0; t < CHUNK; t++)
            acc[o][t] = 0.0f;

#pragma unroll
    for (int r = 0; r < ROWS + K - 1; r++) {
        /* f[q] = sample s0 - H + q of input row y0 - R + r */
        float f[CHUNK + 2 * H];
        if (inner) {
            const uint8_t *row = src + (size_t)(y0 - R + r) * a.src_pitch + s0;
            const uint4 mid = __ldg(reinterpret_cast<const uint4 *>(row));
            const uint4 lft = __ldg(reinterpret_cast<const uint4 *>(row - CHUNK));
            const uint4 rgt = __ldg(reinterpret_cast<const uint4 *>(row + CHUNK));
#pragma unroll
            for (int q = 0; q < CHUNK + 2 * H; q++) {
                const int b = q - H; /* byte offset from s0 */
                f[q] = b < 0 ? byte_of(lft, b + CHUNK) : b < CHUNK ? byte_of(mid, b) : byte_of(rgt, b - CHUNK);
            }
        } else {
            /* a rolled loop into a local array (edge threads only): fully
             * unrolled, the border logic would multiply the code size */
            const int sy = ic_border_map(y0 - R + r, a.height, a.border);
            const uint8_t *row = sy < 0 ? nullptr : src + (size_t)sy * a.src_pitch;
            float g[CHUNK + 2 * H];
#pragma unroll 1
            for (int q = 0; q < CHUNK + 2 * H; q++)
                g[q] = gather<STEP>(row, s0 - H + q, nsamp, a);
#pragma unroll
            for (int q = 0; q < CHUNK + 2 * H; q++)
                f[q] = g[q];
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
            /* separable: the row pass once per input row and sample, shared by
             * every output row it feeds, then the column weights (one partial
             * sum live at a time: no register array for the row pass) */
#pragma unroll
            for (int q = 0; q < (RANK == 0 ? 1 : RANK); q++)
#pragma unroll
                for (int t = 0; t < CHUNK; t++) {
                    float h = 0.0f;
#pragma unroll
                    for (int i = 0; i < K; i++)
                        h = fmaf(w.row[q][i], f[t + i * STEP], h);
#pragma unroll
                    for (int o = 0; o < ROWS; o++) {
                        const int j = r - o;
                        if (j >= 0 && j < K)
                            acc[o][t] = fmaf(w.col[q][j], h, acc[o][t]);
                    }
                }
        }
    }

    const int n = nsamp - s0 < CHUNK ? nsamp - s0 : CHUNK;
#pragma unroll
    for (int o = 0; o < ROWS; o++) {
        if (y0 + o >= a.height)
            break;
        uint8_t *out = dst + (size_t)(y0 + o) * a.dst_pitch + s0;
        if (n == CHUNK) {
            unsigned v[4];
#pragma unroll
            for (int q = 0; q < 4; q++) {
                v[q] = 0;
#pragma unroll
                for (int b = 0; b < 4; b++)
                    v[q] |= (unsigned)ic_round_u8(acc[o][4 * q + b] + a.bias) << (8 * b);
            }
            *reinterpret_cast<uint4 *>(out) = make_uint4(v[0], v[1], v[2], v[3]);
        } else {
#pragma unroll
            for (int t = 0; t < CHUNK; t++)
                if (t < n)
                    out[t] = ic_round_u8(acc[o][t] + a.bias);
        }
    }
}

template <int K, int STEP, int RANK, int ROWS>
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
    const long long nsamp = (long long)a->width * STEP;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    const long long groups = (a->height + ROWS - 1) / ROWS;
    const dim3 block(BX, BY);
    const dim3 grid((unsigned)((chunks + BX - 1) / BX), (unsigned)((groups + BY - 1) / BY),
                    a->soa ? (unsigned)a->channels : 1u);
    rows_kernel<K, STEP, RANK, ROWS><<<grid, block, 0, (cudaStream_t)a->stream>>>(*a, p);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cuda fast rows kernel launch", (int)e);
    return IC_OK;
}

template <int K, int STEP, int RANK>
ic_status launch_r(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   int rows, char *err, size_t errlen)
{
    switch (rows) {
    case 1:
        return launch<K, STEP, RANK, 1>(a, w, row, col, err, errlen);
    case 2:
        return launch<K, STEP, RANK, 2>(a, w, row, col, err, errlen);
    default:
        return launch<K, STEP, RANK, 4>(a, w, row, col, err, errlen);
    }
}

template <int K, int RANK>
ic_status launch_c(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   int rows, char *err, size_t errlen)
{
    switch (a->soa ? 1 : a->channels) {
    case 1:
        return launch_r<K, 1, RANK>(a, w, row, col, rows, err, errlen);
    case 3:
        return launch_r<K, 3, RANK>(a, w, row, col, rows, err, errlen);
    default:
        return launch_r<K, 4, RANK>(a, w, row, col, rows, err, errlen);
    }
}

template <int K>
ic_status launch_k(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   int rank, int rows, char *err, size_t errlen)
{
    switch (rank) {
    case 0:
        return launch_c<K, 0>(a, w, row, col, rows, err, errlen);
    case 1:
        return launch_c<K, 1>(a, w, row, col, rows, err, errlen);
    default:
        return launch_c<K, 2>(a, w, row, col, rows, err, errlen);
    }
}

} // namespace

extern "C" int ic_fast_rows_eligible(int kw, int kh, int channels, int soa)
{
    if (kw != kh || (kw != 3 && kw != 5 && kw != 7 && kw != 9))
        return 0;
    return soa || channels == 1 || channels == 3 || channels == 4;
}

extern "C" int ic_fast_rows_shape(int width, int height, int channels, int soa, int k, int sms)
{
    /* IC_FAST_ROWS_SHAPE=1|2|4 overrides (benchmark calibration only) */
    const char *e = getenv("IC_FAST_ROWS_SHAPE");
    if (e && (!strcmp(e, "1") || !strcmp(e, "2") || !strcmp(e, "4")))
        return atoi(e);
    const long long nsamp = (long long)width * (soa ? 1 : channels);
    const long long planes = soa ? channels : 1;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    /* the most rows per thread (least re-reading and conversion) that still
     * gives every SM IC_FAST_ROWS_FILL threads */
    const long long want = (long long)(sms > 0 ? sms : 1) * IC_FAST_ROWS_FILL;
    (void)k;
    for (int rows = 4; rows > 1; rows /= 2)
        if (chunks * ((height + rows - 1) / rows) * planes >= want)
            return rows;
    return 1;
}

extern "C" ic_status ic_fast_rows_launch(const ic_cuda_args *a, const float *w, const float *row,
                                         const float *col, int rank, int rows, char *err,
                                         size_t errlen)
{
    /* 16-byte loads and stores need aligned rows (cudaMallocPitch gives them;
     * a caller's device pointer may not): otherwise the generic kernel. */
    const int aligned = ((uintptr_t)a->src % 16 == 0) && ((uintptr_t)a->dst % 16 == 0) &&
                        a->src_pitch % 16 == 0 && a->dst_pitch % 16 == 0;
    if (rows != 1 && rows != 2 && rows != 4)
        rows = 4;
    const long long groups = ((long long)a->height + rows - 1) / rows;
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
        return launch_k<3>(a, w, row, col, rank, rows, err, errlen);
    case 5:
        return launch_k<5>(a, w, row, col, rank, rows, err, errlen);
    case 7:
        return launch_k<7>(a, w, row, col, rank, rows, err, errlen);
    default:
        return launch_k<9>(a, w, row, col, rank, rows, err, errlen);
    }
}
