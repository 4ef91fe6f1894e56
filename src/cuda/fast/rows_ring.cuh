/*
 * rows_ring.cuh - the `rows` method's form for a separable (rank-1) 5x5, 7x7
 * or 9x9 with many rows a thread: rows_roll's one input row at a
 * time, with a thread's rows a launch parameter and half a chunk (8 samples)
 * a thread, so that K - 1 open rows of sums fit the registers.
 *
 * rows_chunk at 4 rows redoes each input row's horizontal pass for every
 * row group that reads it: (4 + K - 1) / 4 input rows an output row,
 * nearly half of a 9x9's instructions. Here a thread takes L output rows (a
 * launch parameter) of 8 samples: it loads and converts each of the L + K - 1
 * input rows once, adds its horizontal pass to the K output rows it feeds,
 * and rounds, packs and stores an output row as soon as its last input row
 * is in. The open rows are a shift register:
 * at input row r, slot j holds output row r - j's sum of its first j input
 * rows, and each FMA writes its sum one slot down, so the rows move with no
 * move instruction and the loop is one input row long (two, unrolled). The
 * products and their order are add_row's, so an output equals rows_side's
 * (the edges) and rows_chunk's bit for bit.
 *
 * The loop is one input row, not a turn of K rows unrolled: the unrolled
 * turn's larger loop stalled on instruction fetch (docs/design/rows.md).
 *
 * The interior and side items are rows_shape_of's with two threads a chunk:
 * a chunk's interior loads [16c - 16, 16c + 32) hold both halves' windows
 * (five 8-byte words around each half; halos up to 16 samples), and the
 * side items are the same as every rows launch's. The grid is one
 * dimension, the main blocks first (ring_grid), and every warp runs L + K -
 * 1 rows: the rows a thread set the warps each SM gets, which
 * ic_fast_rows_shape chooses (rows.cu).
 */
#ifndef IC_CUDA_FAST_ROWS_RING_CUH
#define IC_CUDA_FAST_ROWS_RING_CUH

#include "cuda/fast/rows_impl.cuh"
#ifdef IC_RING_EXPERIMENT
#include <stdlib.h>
#include <string.h>
#endif

namespace icf_rows
{

constexpr int RING_W = CHUNK / 2; /* output samples a thread */
/* Input rows prefetched into L1 ahead: six measured faster than two or
 * four on the 1D grid (docs/design/rows.md). */
constexpr int RING_PREFETCH = 6;

/* Warps an SM for a k x k kernel of `step` samples a pixel (the launch
 * bounds: the registers a thread): a 5x5 24 (80 registers); a 7x7, and a
 * 9x9 of 1 or 3 samples, 20 at 96 registers (the most warps whose
 * registers hold the one-row loop without spills); an RGBA or grey + alpha
 * 9x9 16 at 128 (at 96 they spill). A block is RING_TY warps (ring_grid);
 * the measurements are in docs/design/rows.md. */
__host__ __device__ constexpr int ring_warps(int k, int step)
{
    return k <= 5 ? 24 : k == 7 || (step != 4 && step != 2) ? 20 : 16;
}

/* The 8-byte words around sample s0 of an input row that hold a thread's
 * window (three for halos up to 8 samples, else five): loaded a row ahead
 * of their conversion, f[q] = sample s0 - H + q as float. */
template <int H> struct ring_words {
    static constexpr int N = H <= 8 ? 3 : 5;
    static constexpr int LO = 8 * (N / 2); /* bytes before s0 the first word starts */
    uint2 v[N];
};
template <int H> __device__ __forceinline__ void ring_load(const uint8_t *p, ring_words<H> &w)
{
#pragma unroll
    for (int i = 0; i < ring_words<H>::N; i++)
        w.v[i] = __ldg(reinterpret_cast<const uint2 *>(p - ring_words<H>::LO) + i);
}
template <int H>
__device__ __forceinline__ void ring_convert(const ring_words<H> &w, float (&f)[RING_W + 2 * H])
{
#pragma unroll
    for (int q = 0; q < RING_W + 2 * H; q++) {
        const int b = q - H + ring_words<H>::LO; /* byte of the words */
        f[q] = word_byte((b & 4) ? w.v[b >> 3].y : w.v[b >> 3].x, b);
    }
}

/* Output samples s0..s0+7 of rows y0..y0+L-1 of plane bz (an interior half
 * chunk of an interior row group), one input row at a time. */
template <int K, int STEP, bool BIAS>
__device__ __forceinline__ void rows_ring(const ic_cuda_args &a, const rows_w<K, 1> &w, int s0,
                                          int y0, int L, unsigned bz)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP;
    static_assert(H <= CHUNK, "halo wider than a chunk");
    const int nr = L + K - 1; /* input rows */
    const size_t plane_in = a.soa ? (size_t)bz * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)bz * a.height * a.dst_pitch : 0;
    const uint8_t *in = a.src + plane_in + (size_t)(y0 - R) * a.src_pitch + s0;
    uint8_t *out = a.dst + plane_out + (size_t)y0 * a.dst_pitch + s0;

    /* at input row r, acc[j] (1 <= j < K) holds output row r - j's sum of
     * its first j input rows; the rows before row 0 fill slots no output
     * row stores. A row's words are loaded while the row before is summed
     * (the last row loads itself again), hiding the load's latency */
    float acc[K][RING_W];
    zero_sums(acc);
    ring_words<H> cur;
    ring_load<H>(in, cur);
    /* running row pointers (a row's address by a multiply cost ~20
     * instructions a row pair): `next` is row min(r + 1, nr - 1), `dst`
     * output row `done` once it is 0 or more */
    const size_t ip = a.src_pitch, op = a.dst_pitch;
    const uint8_t *next = in + ip; /* nr >= K > 1 */
    uint8_t *dst = out;
#pragma unroll 2
    for (int r = 0; r < nr; r++) {
        if (r + RING_PREFETCH < nr)
            asm volatile("prefetch.global.L1 [%0];" ::"l"(next + (RING_PREFETCH - 1) * ip));
        float f[RING_W + 2 * H];
        ring_words<H> nxt;
        ring_load<H>(next, nxt);
        if (r + 2 < nr)
            next += ip;
        ring_convert<H>(cur, f);
        cur = nxt;
        premultiply_window<STEP>(f, a.premultiply);
        float fin[RING_W];
#pragma unroll
        for (int t = 0; t < RING_W; t++) {
            const float h = row_pass<K, STEP>(w.row[0], f, t);
            fin[t] = fmaf(w.col[0][K - 1], h, acc[K - 1][t]);
            /* output row r - j takes it as kernel row j, into slot j + 1 */
#pragma unroll
            for (int j = K - 2; j >= 0; j--)
                acc[j + 1][t] = fmaf(w.col[0][j], h, j == 0 ? 0.0f : acc[j][t]);
        }
        const int done = r - (K - 1); /* the output row this input row completes */
        unpremultiply_row<STEP>(fin, a.premultiply);
        const unsigned lo = pack_word<BIAS>(*reinterpret_cast<const float(*)[4]>(&fin[0]), a.bias);
        const unsigned hi = pack_word<BIAS>(*reinterpret_cast<const float(*)[4]>(&fin[4]), a.bias);
        if (done >= 0) {
            __stcs(reinterpret_cast<uint2 *>(dst), make_uint2(lo, hi));
            dst += op;
        }
    }
}

/* The grid of a ring launch: one dimension of blocks of RING_TY warps, the
 * main blocks first and then the side blocks, so that the block scheduler,
 * which hands blocks out in order, spreads the main blocks (nearly all the
 * work) evenly over the SMs: the side blocks of a 2D grid, one column of
 * them a grid row, landed on some SMs beside their main blocks and not on
 * others, which left those SMs the slowest (docs/design/rows.md). Main
 * warp i is warp column i % cw (32 threads: 16 chunks) of row group i / cw
 * % groups of plane i / (cw * groups); side block j of a plane takes the
 * side items of rows_side_block's block (main_bx + j, 0). */
constexpr int RING_TY = 4; /* warps a block */
struct ring_grid {
    int cw;         /* warp columns */
    int groups;     /* row groups of the interior (rows_span's groups) */
    int planes;     /* planes (SoA channels, else 1) */
    long long main; /* main blocks, all planes */
    long long side; /* side blocks a plane */
};
inline ring_grid ring_grid_of(const rows_edges &e, int planes)
{
    ring_grid g;
    const rows_span &sp = e.sp;
    g.cw = (2 * (sp.c_end - sp.c_first) + BX - 1) / BX;
    g.groups = sp.groups;
    g.planes = planes;
    g.main = ((long long)g.cw * g.groups * planes + RING_TY - 1) / RING_TY;
    g.side = (e.n_items * (CHUNK / SIDE) + BX * RING_TY - 1) / (BX * RING_TY);
    return g;
}

/* The rows a thread that give `w` warps an SM on `sms` SMs to n interior
 * output rows of cw warp columns and `planes` planes, in one wave (the
 * planner's rule, ring_rows in rows.cu, and the calibration hook below). */
inline int ring_rows_at(long long n, long long cw, int planes, int sms, int w)
{
    long long g = (long long)(sms > 0 ? sms : 1) * w / (cw * planes); /* row groups */
    g = g < 1 ? 1 : g > n ? n : g;
    return (int)((n + g - 1) / g);
}

template <int K, int STEP, int WARPS = ring_warps(K, STEP)>
__global__ void __launch_bounds__(BX *RING_TY, WARPS / RING_TY)
    ring_kernel(ic_cuda_args a, rows_w<K, 1> w, rows_edges e, ring_grid rg, int L)
{
    const long long b = blockIdx.x;
    const rows_span &sp = e.sp;
    if (b >= rg.main) { /* a side block (block-uniform branch) */
        const long long j = b - rg.main;
        const unsigned bx = e.main_bx + (unsigned)(j % rg.side), bz = (unsigned)(j / rg.side);
        rows_side_fast<K, STEP, 1, RING_TY>(a, w, e, bx, 0, bz);
        return;
    }
    const long long wi = b * RING_TY + threadIdx.y; /* the warp */
    const long long per_plane = (long long)rg.cw * rg.groups;
    const int bz = (int)(wi / per_plane);
    if (bz >= rg.planes)
        return;
    const int rest = (int)(wi - bz * per_plane);
    const int g = rest / rg.cw;
    const int x = (rest - g * rg.cw) * BX + (int)threadIdx.x; /* two threads a chunk */
    const int c = sp.c_first + (x >> 1);
    if (c >= sp.c_end)
        return;
    const int y0 = min(sp.y_first + g * L, sp.y_last);
    /* a bias of 0 (the usual) takes a loop without the bias add (a
     * uniform branch outside the loop: a branch a row cost ~5%) */
    if (a.bias != 0.0f)
        rows_ring<K, STEP, true>(a, w, c * CHUNK + (x & 1) * RING_W, y0, L, (unsigned)bz);
    else
        rows_ring<K, STEP, false>(a, w, c * CHUNK + (x & 1) * RING_W, y0, L, (unsigned)bz);
}

template <int K, int STEP>
ic_status launch_ring_s(const ic_cuda_args *a, const float *row, const float *col, int rows,
                        char *err, size_t errlen)
{
    rows_w<K, 1> p;
    rows_weights<K, 1>(&p, nullptr, row, col);
    rows_edges e;
    long long grid_y = 0;
    const int planes = a->soa ? a->channels : 1;
    if (!rows_shape_of(a->width, a->height, STEP, K, rows, &e, &grid_y, 1, 2))
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    ring_grid rg = ring_grid_of(e, planes);
#ifdef IC_RING_EXPERIMENT
    /* calibration hooks, built only with -DIC_RING_EXPERIMENT: IC_RING_WPS=w
     * sets the rows a thread for w warps an SM, IC_RING_PART=main|side
     * launches only those blocks (the sweeps of ring-sweeps-*.tar.gz) */
    if (getenv("IC_RING_WPS") && rg.groups > 0) {
        int sms = 0;
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
        rows =
            ring_rows_at(a->height - 2 * (K / 2), rg.cw, planes, sms, atoi(getenv("IC_RING_WPS")));
        if (!rows_shape_of(a->width, a->height, STEP, K, rows, &e, &grid_y, 1, 2))
            return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
        rg = ring_grid_of(e, planes);
    }
    if (ring_part() == 1)
        rg.side = 0;
    if (ring_part() == 2)
        rg.main = 0;
#endif
    const long long blocks = rg.main + rg.side * planes;
    if (blocks > 0x7fffffffLL)
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    ring_kernel<K, STEP>
        <<<(unsigned)blocks, dim3(BX, RING_TY), 0, (cudaStream_t)a->stream>>>(*a, p, e, rg, rows);
    const cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cuda fast rows kernel launch", (int)ce);
    return IC_OK;
}

/* The launch of a rank-1 K x K at `rows` rows a thread, for the image's step. */
template <int K>
ic_status launch_ring(const ic_cuda_args *a, const float *row, const float *col, int rows,
                      char *err, size_t errlen)
{
    switch (a->soa ? 1 : a->channels) {
    case 1:
        return launch_ring_s<K, 1>(a, row, col, rows, err, errlen);
    case 2:
        return launch_ring_s<K, 2>(a, row, col, rows, err, errlen);
    case 3:
        return launch_ring_s<K, 3>(a, row, col, rows, err, errlen);
    default:
        return launch_ring_s<K, 4>(a, row, col, rows, err, errlen);
    }
}

} // namespace icf_rows

/* As IC_ROWS_LAUNCH_C, for launch_ring: the parts rows_ring_k*.cu
 * instantiate it, rows.cu declares it extern. */
#define IC_ROWS_LAUNCH_RING(PREFIX, K)                                                             \
    PREFIX ic_status icf_rows::launch_ring<K>(const ic_cuda_args *a, const float *row,             \
                                              const float *col, int rows, char *err,               \
                                              size_t errlen)

#endif
