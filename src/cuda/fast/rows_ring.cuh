/*
 * rows_ring.cuh - the `rows` method's form for a separable (rank-1) 5x5, 7x7
 * or 9x9 with many rows a thread (issue 17): rows_roll's one input row at a
 * time, with a thread's rows a launch parameter and half a chunk (8 samples)
 * a thread, so that K - 1 open rows of sums fit the registers.
 *
 * rows_chunk at 4 rows redoes each input row's horizontal pass for every
 * row group that reads it: (4 + K - 1) / 4 input rows an output row, 27 of
 * the 9x9's 58 instructions an output (SASS at 8421d22). Here a thread takes
 * L output rows (a launch parameter, up to 64) of 8 samples: it loads and
 * converts each of the L + K - 1 input rows once, adds its horizontal pass
 * to the K output rows it feeds, and rounds, packs and stores an output row
 * as soon as its last input row is in. The open rows are a shift register:
 * at input row r, slot j holds output row r - j's sum of its first j input
 * rows, and each FMA writes its sum one slot down, so the rows move with no
 * move instruction and the loop is one input row long (two, unrolled). The
 * products and their order are add_row's, so an output equals rows_side's
 * (the edges) and rows_chunk's bit for bit. SASS of the RGB kernels at
 * 886038b (bias 0): 156, 200 and 248 instructions an input row of 8
 * outputs for 5x5, 7x7, 9x9 (rows_chunk at 4 rows: 41 and 58 an output for
 * 7x7 and 9x9).
 *
 * A turn of K rows unrolled, each row's sums in slot o % K (d0feba3 to
 * 630fcb9), had the same instructions a row in 14-40 KB of loop, and the
 * launches stalled on instruction fetch (ncu at d70e1fb: HD 5x5 3.21 warps
 * an issue, 8K 9x9 1.68); the loop of 3-9 KB took the 8K 9x9 from 0.191 to
 * 0.163 ms and the 7x7 from 0.133 to 0.125 (table H, H100, 084234Z).
 *
 * The grid is rows_shape_of's with two threads a chunk: a chunk's interior
 * loads [16c - 16, 16c + 32) hold both halves' windows (five 8-byte words
 * around each half; halos up to 16 samples), and the side items are the
 * same as every rows launch's. A block's threads run long (L + K - 1 rows
 * each), so a launch that spills a few blocks past a full wave costs a
 * whole block's time: ic_fast_rows_shape picks L by the waves (rows.cu).
 */
#ifndef IC_CUDA_FAST_ROWS_RING_CUH
#define IC_CUDA_FAST_ROWS_RING_CUH

#include "cuda/fast/rows_impl.cuh"

namespace icf_rows
{

constexpr int RING_W = CHUNK / 2; /* output samples a thread */
/* Input rows prefetched into L1 ahead. Table H on the H200 at 88f13aa
 * (8K 5x5, 7x7, 9x9 at 32 rows): L1 two rows ahead 0.1155, 0.1650, 0.2096
 * ms; L2 four ahead 0.1174, 0.1680, 0.2131; L1 four ahead 0.1170, 0.1677,
 * 0.2124; none 0.1310, 0.1942, 0.2414. */
constexpr int RING_PREFETCH = 2;

/* Rows of BX threads a block, and blocks an SM, for a k x k kernel of
 * `step` samples a pixel: a 5x5 3 blocks of 256 (80 registers); a 7x7, and
 * a 9x9 of 1 or 3 samples, 5 blocks of 128 at 96 registers (20 warps an SM
 * against 16 at 128: 8K 7x7 at 42 rows 0.1443 -> 0.1400 ms, table H at
 * ab353d1; the one-row loop holds the RGB ones without spills; 6 blocks at
 * 80 registers took 8K 7x7 from 0.124 to 0.128 ms, H200, 084945Z); an RGBA
 * 9x9 2 blocks of 256 at 128 (at 96 it spills 152 bytes). */
__host__ __device__ constexpr int ring_ty(int k, int step)
{
    return k == 7 || (k == 9 && step != 4) ? 4 : BY;
}
__host__ __device__ constexpr int ring_min_blocks(int k, int step)
{
    return k <= 5 ? 3 : ring_ty(k, step) == 4 ? 5 : 2;
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
     * (the last row loads itself again): 8K 7x7 0.125 ms against 0.138,
     * HD 5x5 0.0134 against 0.0150, table H at 084234Z */
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
        static_assert(RING_PREFETCH == 2, "the prefetch is the row after next");
        if (r + RING_PREFETCH < nr)
            asm volatile("prefetch.global.L1 [%0];" ::"l"(next + ip));
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

template <int K, int STEP, int TY = ring_ty(K, STEP), int MINB = ring_min_blocks(K, STEP)>
__global__ void __launch_bounds__(BX *TY, MINB)
    ring_kernel(ic_cuda_args a, rows_w<K, 1> w, rows_edges e, int L)
{
    if (blockIdx.x >= e.main_bx) { /* a side block (block-uniform branch) */
        rows_side_block<K, STEP, 1, TY>(a, w, e, blockIdx.x, blockIdx.y, blockIdx.z);
        return;
    }
    const rows_span &sp = e.sp;
    const int x = (int)(blockIdx.x * BX + threadIdx.x); /* two threads a chunk */
    const int c = sp.c_first + (x >> 1);
    const int g = (int)(blockIdx.y * TY + threadIdx.y);
    if (c >= sp.c_end || g >= sp.groups)
        return;
    const int y0 = min(sp.y_first + g * L, sp.y_last);
    /* a bias of 0 (the usual) takes a loop without the bias add (a
     * uniform branch outside the loop: a branch a row cost ~5%, 923efee) */
    if (a.bias != 0.0f)
        rows_ring<K, STEP, true>(a, w, c * CHUNK + (x & 1) * RING_W, y0, L, blockIdx.z);
    else
        rows_ring<K, STEP, false>(a, w, c * CHUNK + (x & 1) * RING_W, y0, L, blockIdx.z);
}

template <int K, int STEP>
ic_status launch_ring_s(const ic_cuda_args *a, const float *row, const float *col, int rows,
                        char *err, size_t errlen)
{
    rows_w<K, 1> p;
    rows_weights<K, 1>(&p, nullptr, row, col);
    rows_edges e;
    long long grid_y = 0;
    constexpr int ty = ring_ty(K, STEP);
    if (!rows_shape_of(a->width, a->height, STEP, K, rows, &e, &grid_y, ty, 2))
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    const dim3 block(BX, ty);
    const dim3 grid(e.main_bx + e.edge_bx, (unsigned)grid_y, a->soa ? (unsigned)a->channels : 1u);
    ring_kernel<K, STEP><<<grid, block, 0, (cudaStream_t)a->stream>>>(*a, p, e, rows);
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
