/*
 * rows_impl.cuh - the kernels and launch helpers of the `rows` method of the
 * cuda fast path (rows.cu holds its entry points and dispatches to the parts
 * rows_k*.cu, which instantiate these templates a kernel size and some ranks
 * each, or one channel step of them, so that they compile in parallel): small
 * square kernels (3, 5, 7, 9) straight from global memory with 16-byte loads,
 * no shared memory and no barriers.
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
 * it feeds (the separable path for small kernels). The whole window
 * stays in registers: indices are compile-time
 * constants, so nothing spills to local memory.
 *
 * The image's edges. The main grid covers the interior: the row groups
 * whose windows stay inside the image's rows and the chunks whose three loads
 * stay inside the row's written bytes. Extra blocks of the same launch (past
 * the main grid in x) take the rest as side items, half a chunk of one output
 * row each (rows_side): every chunk of the rows above and below the interior
 * groups, and the first and last chunk or two of the rows between. A side
 * item maps its window's columns and its K rows through ic_border_map, loads
 * the window byte by byte and sums it with the same products in the same
 * order as the main path, so an output does not depend on which path
 * computed it; a thread doing all K x K taps of an edge output cost about
 * half a small batch's instructions (docs/design/rows.md). Reads never touch
 * the pitch padding, so initcheck stays clean.
 *
 * ROWS (1, 2 or 4 output rows per thread; 8 for a separable 3x3, taken
 * one input row at a time by rows_roll) is chosen per image by
 * ic_fast_rows_shape: the most rows per thread (least re-reading and
 * conversion) that still gives every SM enough threads. A separable 5x5,
 * 7x7 or 9x9 takes rows_ring.cuh's form, 8 samples of as many rows a thread
 * as the planner gives (ring_rows in rows.cu).
 *
 * A separable 3x3 with bias 0 (the usual blur) runs in rows_fast's form
 * where its weights allow: the row vector divided by its centre tap and the
 * column vector multiplied by it, so that the horizontal pass starts from
 * the centre sample (2 products a sample, not 3) and no bias is added, a
 * sixth fewer instructions (docs/design/rows.md). The sums are the same
 * products rounded in another order (docs/definitions.md, "Accuracy":
 * within 1 level); a tie-prone kernel's exact factors take the form only
 * where every new weight is exact (rows_fast).
 *
 * Premultiplied alpha (a.premultiply, backend.h) on RGBA and grey + alpha
 * AoS rows (STEP 4 and 2): a thread's 16 samples are 4 or 8 whole pixels and
 * its halos whole pixels too (16c - STEP R), so each loaded row is
 * premultiplied in registers (colour times its pixel's alpha, the pixel's
 * last sample), the sums are FC and FA, and the store divides each colour
 * sum by its pixel's FA (one reciprocal a pixel: ic_cu_unpremultiply_px):
 * one pass, nothing but registers. Side items premultiply their windows the
 * same way. Other layouts with premultiplication take the generic kernel.
 * (Grey + alpha AoS took the shared-memory methods until 2026-11-26, the
 * rows kernels then having no 2-sample step.)
 */
#ifndef IC_CUDA_FAST_ROWS_IMPL_CUH
#define IC_CUDA_FAST_ROWS_IMPL_CUH

#include <cuda_runtime.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/border.h"
#include "core/kernel_internal.h"
#include "cuda/cuda_common.cuh"
#include "cuda/fast/fast.h"
#ifdef IC_RING_EXPERIMENT
#include <stdlib.h>
#endif

/* A named namespace (not an anonymous one): the parts' explicit
 * instantiations must link with rows.cu's extern declarations. */
namespace icf_rows
{

constexpr int CHUNK = 16; /* output samples per thread: one uint4 store */
constexpr int SIDE = 8;   /* output samples per side item (rows_side): half a chunk */
constexpr int BX = 32, BY = 8;

/* Rows of threads a block of the one-image rows kernels for a k x k
 * kernel: 4 up to 5x5 (128-thread blocks: smaller images spread over more
 * SMs, and rows_roll's 72 registers still give 7 blocks, 28 warps, an SM,
 * where 256-thread blocks at 80 registers gave 3, 24 warps), BY from 7x7
 * (a block's row groups share their K - 1 halo rows in L1, which the
 * larger kernels gain more from than from spreading). The batch keeps BY. */
__host__ __device__ constexpr int by_of(int k)
{
    return k <= 5 ? 4 : BY;
}

/* Weights by value (kernel parameter space = constant bank, broadcast):
 * the full K x K for RANK 0, else RANK pairs of row and column vectors. */
template <int K, int RANK> struct rows_w {
    float v[RANK == 0 ? K * K : 1];
    float row[RANK == 0 ? 1 : RANK][K];
    float col[RANK == 0 ? 1 : RANK][K];
    int fast; /* rows_fast: a separable 3x3's row centred on 1, bias 0 */
};

/* Byte b of q (word_byte: byte b & 3 of w) as a float, exactly: the byte as
 * the low mantissa bits of 2^23 (one byte permute), less 2^23 (one add).
 * Both run on the integer and FMA pipes; I2F runs on the conversion pipe, a
 * quarter of the rate, which the rows kernels' conversions (in and out)
 * saturated. */
__device__ __forceinline__ float word_byte(unsigned w, int b)
{
    return __int_as_float((int)__byte_perm(w, 0x4bu, 0x4550u + (unsigned)(b & 3))) - 8388608.0f;
}
__device__ __forceinline__ float byte_of(const uint4 &q, int b)
{
    return word_byte(b < 4 ? q.x : b < 8 ? q.y : b < 12 ? q.z : q.w, b);
}

/* Which threads of rows_kernel take the fast path: row group g (g <
 * groups) covers the ROWS output rows from min(y_first + ROWS*g, y_last),
 * whose windows stay inside the image's rows (y_first = r, y_last = height
 * - r - ROWS: the last group may overlap the one before it, and its threads
 * then write the same values twice rather than leave up to ROWS-1 rows to
 * the slow side items), and chunk c (samples 16c..16c+15) loads only inside
 * the row's written bytes when c_first <= c < c_end (else it is a side
 * chunk). */
struct rows_span {
    int groups;          /* interior row groups (0 when height - 2r < ROWS) */
    int y_first, y_last; /* first output row of group g: min(y_first + ROWS*g, y_last) */
    int c_first, c_end;  /* interior chunks [c_first, c_end) */
};

__host__ __device__ inline rows_span rows_interior(int height, int nsamp, int r, int halo, int ROWS)
{
    rows_span sp;
    sp.y_first = r;
    sp.y_last = height - r - ROWS;
    sp.groups = sp.y_last >= sp.y_first ? (height - 2 * r + ROWS - 1) / ROWS : 0;
    sp.c_first = halo > 0 ? 1 : 0;              /* the left side load stays in the row */
    sp.c_end = (nsamp - 2 * CHUNK) / CHUNK + 1; /* 16c + 32 <= nsamp */
    if (nsamp - 2 * CHUNK < 0 || sp.c_end < sp.c_first)
        sp.c_end = sp.c_first;
    return sp;
}

/* The grid of a rows launch (per plane): the main blocks cover the interior
 * chunks of the interior row groups; the side blocks that follow them in x
 * take half a chunk of one output row per thread (rows_side): every chunk of
 * the rows above and below the interior groups (n_top rows from row 0, the
 * rest from bot_start), then the side chunks of the rows between, n_items
 * chunks in all. */
struct rows_edges {
    rows_span sp;
    int chunks;        /* chunks per row: ceil(nsamp / CHUNK) */
    int n_top;         /* rows above the interior groups (all rows when there are none) */
    int bot_start;     /* first row below them */
    long long n_band;  /* chunks of the rows above and below: rows x chunks */
    long long n_items; /* chunks: n_band + the side chunks of the rows between */
    unsigned main_bx;  /* blocks in x of the main grid; the side blocks follow */
    unsigned edge_bx;  /* side blocks per grid row */
};

/* Blocks of 256 threads per SM of the rows kernels (rows_body's minimum:
 * 64 registers at 4, 80 at 3, 128 at 2; the batched kernels take these).
 * rows_roll at 64 registers spilled and ran slower than at 80. */
template <int K, int ROWS> constexpr int rows_min_blocks()
{
    return ROWS > 4 ? 3 : ROWS == 4 ? (K >= 5 ? 2 : 4) : (K >= 7 ? 3 : 4);
}

/* The one-image kernel's blocks an SM, of BX * by_of(K) threads: as many
 * registers as rows_min_blocks' 256-thread blocks, but 72 for rows_roll (7
 * blocks of 128). */
template <int K, int ROWS> constexpr int rows_kernel_blocks()
{
    return ROWS > 4 ? 7 : rows_min_blocks<K, ROWS>() * (BY / by_of(K));
}

/* Premultiplied RGBA and grey + alpha (STEP 4 and 2, AoS): the colour
 * samples of a window of whole pixels (NW samples) times their pixel's
 * alpha, its last sample. */
template <int STEP, int NW>
__device__ __forceinline__ void premultiply_window(float (&f)[NW], bool premultiply)
{
    if constexpr (STEP == 2 || STEP == 4) {
        static_assert(NW % STEP == 0, "a window of whole pixels");
        if (premultiply) {
#pragma unroll
            for (int p = 0; p < NW / STEP; p++)
#pragma unroll
                for (int k = 0; k < STEP - 1; k++)
                    f[STEP * p + k] *= f[STEP * p + STEP - 1];
        }
    }
}

/* N rows of W sums, set to zero (rows_chunk, rows_side, rows_ring). */
template <int N, int W> __device__ __forceinline__ void zero_sums(float (&acc)[N][W])
{
#pragma unroll
    for (int o = 0; o < N; o++)
#pragma unroll
        for (int t = 0; t < W; t++)
            acc[o][t] = 0.0f;
}

/* The horizontal pass of row vector v at output sample t of a window f.
 * FAST (rows_fast's weights: the centre tap is 1): the centre sample is the
 * first partial sum, K - 1 products instead of K. */
template <int K, int STEP, int NW, bool FAST = false>
__device__ __forceinline__ float row_pass(const float (&v)[K], const float (&f)[NW], int t)
{
    constexpr int R = K / 2;
    float h = FAST ? f[t + R * STEP] : 0.0f;
#pragma unroll
    for (int i = 0; i < K; i++)
        if (!FAST || i != R)
            h = fmaf(v[i], f[t + i * STEP], h);
    return h;
}

/* Adds input row r of a thread's window, f[q] = sample s0 - H + q (W + 2H
 * samples, H = R * STEP), to its N output rows of W samples each: output
 * row o takes it as kernel row r - o. Premultiplied RGBA: the colour samples
 * are first multiplied by their pixel's alpha (the window is whole pixels).
 * The one arithmetic of both paths (rows_chunk: N = ROWS, W = CHUNK;
 * rows_side: N = 1, W = SIDE, r = the kernel row; rows_roll does the same
 * products in the same order), so an output is the same bit for bit
 * whichever path computes it. */
template <int K, int STEP, int RANK, int N, int W, bool FAST = false>
__device__ __forceinline__ void add_row(float (&acc)[N][W], float (&f)[W + 2 * (K / 2) * STEP],
                                        const rows_w<K, RANK> &w, int r, bool premultiply)
{
    premultiply_window<STEP>(f, premultiply);
    if (RANK == 0) {
#pragma unroll
        for (int o = 0; o < N; o++) {
            const int j = r - o; /* kernel row this input row is for output row o */
            if (j < 0 || j >= K)
                continue;
#pragma unroll
            for (int i = 0; i < K; i++) {
                const float wt = w.v[(RANK == 0 ? j * K + i : 0)];
#pragma unroll
                for (int t = 0; t < W; t++)
                    acc[o][t] = fmaf(wt, f[t + i * STEP], acc[o][t]);
            }
        }
    } else {
        /* separable: the row pass once per input row and sample, shared by
         * every output row it feeds, then the column weights (one partial
         * sum live at a time: a register array for the row pass spilled) */
#pragma unroll
        for (int q = 0; q < (RANK == 0 ? 1 : RANK); q++)
#pragma unroll
            for (int t = 0; t < W; t++) {
                const float h = row_pass<K, STEP, W + 2 * (K / 2) * STEP, FAST>(w.row[q], f, t);
#pragma unroll
                for (int o = 0; o < N; o++) {
                    const int j = r - o;
                    if (j >= 0 && j < K)
                        acc[o][t] = fmaf(w.col[q][j], h, acc[o][t]);
                }
            }
    }
}

/* Premultiplied RGBA and grey + alpha: colour = FC / FA (0 where FA <= 0)
 * in a row of W samples of whole pixels. */
template <int STEP, int W>
__device__ __forceinline__ void unpremultiply_row(float (&acc)[W], bool premultiply)
{
    if constexpr (STEP == 2 || STEP == 4) {
        if (premultiply) {
#pragma unroll
            for (int p = 0; p < W / STEP; p++)
                ic_cu_unpremultiply_px<STEP - 1>(&acc[STEP * p], acc[STEP * p + STEP - 1]);
        }
    }
}

/* The loads of one input row of an interior chunk at `row` (sample s0):
 * the 16 samples above the chunk's outputs and the 16 on either side. */
struct row_loads {
    uint4 lft, mid, rgt;
};

template <int H> __device__ __forceinline__ row_loads load_row(const uint8_t *row)
{
    row_loads l;
    l.mid = __ldg(reinterpret_cast<const uint4 *>(row));
    l.lft = l.rgt = l.mid;
    if (H > 0) {
        l.lft = __ldg(reinterpret_cast<const uint4 *>(row - CHUNK));
        l.rgt = __ldg(reinterpret_cast<const uint4 *>(row + CHUNK));
    }
    return l;
}

/* f[q] = sample s0 - H + q of a loaded row, as float. */
template <int H>
__device__ __forceinline__ void row_window(const row_loads &l, float (&f)[CHUNK + 2 * H])
{
#pragma unroll
    for (int q = 0; q < CHUNK + 2 * H; q++) {
        const int b = q - H; /* byte offset from s0 */
        f[q] = b < 0       ? byte_of(l.lft, b + CHUNK)
               : b < CHUNK ? byte_of(l.mid, b)
                           : byte_of(l.rgt, b - CHUNK);
    }
}

/* Four sums rounded and packed into one word, the first in the low byte.
 * BIAS false: the bias is 0 and not added (a sum plus 0 rounds as the sum:
 * only -0 becomes +0, and both round to 0), one add an output fewer. */
template <bool BIAS = true>
__device__ __forceinline__ unsigned pack_word(const float (&v)[4], float bias)
{
    unsigned w = 0;
#pragma unroll
    for (int b = 0; b < 4; b++)
        w |= (unsigned)ic_round_u8(BIAS ? v[b] + bias : v[b]) << (8 * b);
    return w;
}

/* A chunk's 16 output bytes (four packed words) stored at out. The rows
 * kernels' stores are streaming (st.global.cs, evict first): nothing reads
 * them back, and the input rows that the next row groups read again as
 * their halo stay in L2. */
__device__ __forceinline__ void store_words(uint8_t *out, const unsigned (&v)[CHUNK / 4])
{
    __stcs(reinterpret_cast<uint4 *>(out), make_uint4(v[0], v[1], v[2], v[3]));
}

/* One output row of a chunk (its 16 sums) rounded and stored at out. */
template <bool BIAS = true>
__device__ __forceinline__ void store_chunk(const float (&acc)[CHUNK], float bias, uint8_t *out)
{
    unsigned v[CHUNK / 4];
#pragma unroll
    for (int q = 0; q < CHUNK / 4; q++)
        v[q] = pack_word<BIAS>(*reinterpret_cast<const float(*)[4]>(&acc[4 * q]), bias);
    store_words(out, v);
}

/* Output samples s0..s0+15 of rows y0..y0+ROWS-1 of plane bz, an interior
 * chunk of an interior row group: three 16-byte loads per input row and one
 * 16-byte store per output row. (Mapping the rows of the groups at the top
 * and bottom here instead of in rows_side made ptxas spill the 3x3 kernels
 * at their 64 registers.) */
template <int K, int STEP, int RANK, int ROWS, bool FAST = false>
__device__ __forceinline__ void rows_chunk(const ic_cuda_args &a, const rows_w<K, RANK> &w, int s0,
                                           int y0, unsigned bz)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP; /* halo samples on each side, <= 16 */
    static_assert(H <= CHUNK, "halo wider than one side load");
    const size_t plane_in = a.soa ? (size_t)bz * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)bz * a.height * a.dst_pitch : 0;
    const uint8_t *src = a.src + plane_in;
    uint8_t *dst = a.dst + plane_out;

    float acc[ROWS][CHUNK];
    zero_sums(acc);
    {
        /* the input rows past the first two into L2 at once: a prefetch
         * holds no register, and it hides some of the rows' latency */
        const uint8_t *p = src + (size_t)(y0 - R + 2) * a.src_pitch + s0;
#pragma unroll
        for (int r = 2; r < ROWS + K - 1; r++, p += a.src_pitch)
            asm volatile("prefetch.global.L2 [%0];" ::"l"(p) : "memory");
    }

#pragma unroll
    for (int r = 0; r < ROWS + K - 1; r++) {
        float f[CHUNK + 2 * H]; /* f[q] = sample s0 - H + q */
        row_window<H>(load_row<H>(src + (size_t)(y0 - R + r) * a.src_pitch + s0), f);
        add_row<K, STEP, RANK, ROWS, CHUNK, FAST>(acc, f, w, r, a.premultiply);
    }

#pragma unroll
    for (int o = 0; o < ROWS; o++) {
        unpremultiply_row<STEP>(acc[o], a.premultiply);
        store_chunk<!FAST>(acc[o], a.bias, dst + (size_t)(y0 + o) * a.dst_pitch + s0);
    }
}

/* rows_chunk for a separable kernel (rank 1) and more rows per thread
 * (ROWS 8): the rows are taken one at a time, top to bottom. Each
 * input row's horizontal pass is added to the K output rows it feeds, and an
 * output row's samples are rounded and packed four at a time as soon as its
 * last input row is in, so about K - 1 rows of sums are live, not ROWS
 * (rows_chunk's 4 rows are its limit), while every input row is loaded and
 * converted once for the ROWS output rows: (ROWS + K - 1) / ROWS input rows
 * an output row against 1.5 at 4 rows for a 3x3 (72 registers, 7 blocks
 * of 128 an SM, rows_kernel_blocks). 16 rows measured slower than 8 at every
 * size, fewer threads hiding the loads' latency. The products and their
 * order are add_row's, so outputs equal rows_chunk's and rows_side's bit for
 * bit. */
/* rows_roll's prefetch distance, in rows: 4, measured faster than 2 with
 * the distance built as a constant (a run-time distance adds instructions
 * and changes the answer; docs/design/rows.md). -DIC_ROLL_PREFETCH=N
 * builds another distance for a comparison. */
#ifndef IC_ROLL_PREFETCH
#define IC_ROLL_PREFETCH 4
#endif
constexpr int ROLL_PREFETCH = IC_ROLL_PREFETCH;

template <int K, int STEP, int ROWS, bool FAST = false>
__device__ __forceinline__ void rows_roll(const ic_cuda_args &a, const rows_w<K, 1> &w, int s0,
                                          int y0, unsigned bz)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP;
    constexpr int NR = ROWS + K - 1; /* input rows */
    const size_t plane_in = a.soa ? (size_t)bz * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)bz * a.height * a.dst_pitch : 0;
    const uint8_t *in = a.src + plane_in + (size_t)(y0 - R) * a.src_pitch + s0;
    uint8_t *out = a.dst + plane_out + (size_t)y0 * a.dst_pitch + s0;

    float acc[K][CHUNK]; /* output row o's open sums in slot o % K */
#pragma unroll
    for (int r = 0; r < NR; r++) {
        /* the row PREFETCH rows on into L2: a prefetch holds no register,
         * where ptxas keeps only a row or two of loads in flight at 80
         * registers, and the 3x3 otherwise waits on its loads */
        if (r + ROLL_PREFETCH < NR)
            asm volatile(
                "prefetch.global.L2 [%0];" ::"l"(in + (size_t)(r + ROLL_PREFETCH) * a.src_pitch));
        float f[CHUNK + 2 * H];
        row_window<H>(load_row<H>(in + (size_t)r * a.src_pitch), f);
        premultiply_window<STEP>(f, a.premultiply);
        const int done = r - (K - 1); /* the output row this input row completes */
        unsigned word[CHUNK / 4];
#pragma unroll
        for (int q = 0; q < CHUNK / 4; q++) { /* 4 samples (an RGBA pixel) at a time */
            float fin[4];
#pragma unroll
            for (int b = 0; b < 4; b++) {
                const int t = 4 * q + b;
                const float h = row_pass<K, STEP, CHUNK + 2 * H, FAST>(w.row[0], f, t);
#pragma unroll
                for (int j = 0; j < K; j++) { /* output row r - j takes it as kernel row j */
                    const int o = r - j;
                    if (o < 0 || o >= ROWS)
                        continue;
                    const float v = fmaf(w.col[0][j], h, j == 0 ? 0.0f : acc[o % K][t]);
                    if (j == K - 1)
                        fin[b] = v;
                    else
                        acc[o % K][t] = v;
                }
            }
            if (done >= 0) { /* finished: round and pack at once, so few sums stay live */
                unpremultiply_row<STEP>(fin, a.premultiply);
                word[q] = pack_word<!FAST>(fin, a.bias);
            }
        }
        if (done >= 0)
            store_words(out + (size_t)done * a.dst_pitch, word);
    }
}

/* Output samples s0..s0+SIDE-1 (those < nsamp) of row y of plane bz, half a
 * chunk whose window leaves the image or the row's written bytes. The
 * window's columns are mapped first (ic_border_map; -1 under a constant
 * border outside), then for each tap row, in order, its mapped row's window
 * is loaded byte by byte (the loads independent of each other) and summed by
 * rows_chunk's own add_row. So an output is the same bit for bit whichever
 * path computes it, which the banded and row-range paths (cuda_async.cu)
 * rely on: a band's top rows are side items where the whole image's are not
 * (test_gpu_async checks it). Mapping each column between the loads made
 * every load wait for the one before, and whole-chunk items became the
 * launch's tail at small sizes. */
template <int K, int STEP, int RANK, bool PREFETCH = false, int MODE = -1, bool FAST = false>
__device__ __forceinline__ void rows_side(const ic_cuda_args &a, const rows_w<K, RANK> &w, int s0,
                                          int y, unsigned bz, int nsamp)
{
    /* the border mode: MODE when it is one, a constant the maps fold, else
     * the launch's. rows_ring's side blocks take IC_BORDER_REPLICATE's form
     * for a replicate launch: a run-time mode makes each column map run
     * every mode's arithmetic, integer divisions included */
    const int border = MODE >= 0 ? MODE : a.border;
    constexpr int R = K / 2;
    constexpr int H = R * STEP;
    constexpr int NW = SIDE + 2 * H; /* window samples */
    const size_t plane_in = a.soa ? (size_t)bz * a.height * a.src_pitch : 0;
    const size_t plane_out = a.soa ? (size_t)bz * a.height * a.dst_pitch : 0;
    int xo[NW]; /* window sample q: its byte in a row, or -1 */
#pragma unroll
    for (int q = 0; q < NW; q++) {
        const int u = s0 + q; /* sample s0 - H + q, shifted by H = R pixels */
        const int mx = ic_border_map(u / STEP - R, a.width, border);
        xo[q] = mx < 0 ? -1 : mx * STEP + u % STEP;
    }
    if (PREFETCH) {
        /* every tap row's window into L1 first (the lines of its first and
         * last bytes), so that the rows' loads below need not each wait for
         * memory (ptxas issues a 3x3 item's last loads after its first
         * conversions). Issued before the column maps it was slower. */
        const int b_lo = xo[0] < 0 ? 0 : xo[0], b_hi = xo[NW - 1] < 0 ? 0 : xo[NW - 1];
#pragma unroll
        for (int j = 0; j < K; j++) {
            const int my = ic_border_map(y - R + j, a.height, border);
            const uint8_t *row = a.src + plane_in + (size_t)(my < 0 ? 0 : my) * a.src_pitch;
            asm volatile("prefetch.global.L1 [%0];" ::"l"(row + b_lo));
            asm volatile("prefetch.global.L1 [%0];" ::"l"(row + b_hi));
        }
    }
    float acc[1][SIDE];
    zero_sums(acc);
#pragma unroll
    for (int j = 0; j < K; j++) { /* tap row j: input row y - R + j */
        const int my = ic_border_map(y - R + j, a.height, border);
        const uint8_t *row = a.src + plane_in + (size_t)(my < 0 ? 0 : my) * a.src_pitch;
        float f[NW]; /* f[q] = sample s0 - H + q */
#pragma unroll
        for (int q = 0; q < NW; q++)
            f[q] = my < 0 || xo[q] < 0 ? a.border_value : (float)__ldg(row + xo[q]);
        add_row<K, STEP, RANK, 1, SIDE, FAST>(acc, f, w, j, a.premultiply);
    }
    unpremultiply_row<STEP>(acc[0], a.premultiply);
    uint8_t *out = a.dst + plane_out + (size_t)y * a.dst_pitch + s0;
#pragma unroll
    for (int t = 0; t < SIDE; t++)
        if (s0 + t < nsamp)
            out[t] = ic_round_u8(FAST ? acc[0][t] : acc[0][t] + a.bias);
}

/* The work of side block (bx, by, bz), bx >= e.main_bx, of a rows launch
 * with blocks of TY rows of threads: half a chunk of one output row a
 * thread (rows_side). */
template <int K, int STEP, int RANK, int TY, bool PREFETCH = false, int MODE = -1,
          bool FAST = false>
__device__ __forceinline__ void rows_side_block(const ic_cuda_args &a, const rows_w<K, RANK> &w,
                                                const rows_edges &e, unsigned bx, unsigned by,
                                                unsigned bz)
{
    const rows_span &sp = e.sp;
    long long i =
        ((long long)by * e.edge_bx + (bx - e.main_bx)) * (BX * TY) + threadIdx.y * BX + threadIdx.x;
    if (i >= e.n_items * (CHUNK / SIDE))
        return;
    const int half = (int)(i % (CHUNK / SIDE));
    i /= CHUNK / SIDE;
    int y, c;
    if (i < e.n_band) { /* whole rows: above, then below */
        const int row = (int)(i / e.chunks);
        c = (int)(i - (long long)row * e.chunks);
        y = row < e.n_top ? row : e.bot_start + (row - e.n_top);
    } else { /* the side chunks of the rows between */
        const long long j = i - e.n_band;
        const int left = sp.c_first, per_row = left + (e.chunks - sp.c_end);
        const int row = (int)(j / per_row), k = (int)(j - (long long)row * per_row);
        y = e.n_top + row;
        c = k < left ? k : sp.c_end + (k - left);
    }
    rows_side<K, STEP, RANK, PREFETCH, MODE, FAST>(a, w, c * CHUNK + half * SIDE, y, bz,
                                                   a.width * (a.soa ? 1 : a.channels));
}

/* rows_side_block with the rows' lines prefetched first and, for a
 * replicate launch (the default border), the border mode folded into the
 * maps: the side items of the one-image rows kernel and of rows_ring. */
template <int K, int STEP, int RANK, int TY, bool FAST = false>
__device__ __forceinline__ void rows_side_fast(const ic_cuda_args &a, const rows_w<K, RANK> &w,
                                               const rows_edges &e, unsigned bx, unsigned by,
                                               unsigned bz)
{
    if (a.border == IC_BORDER_REPLICATE)
        rows_side_block<K, STEP, RANK, TY, true, IC_BORDER_REPLICATE, FAST>(a, w, e, bx, by, bz);
    else
        rows_side_block<K, STEP, RANK, TY, true, -1, FAST>(a, w, e, bx, by, bz);
}

/* The work of block (bx, by, bz) of a rows launch over image a: rows_kernel
 * passes its blockIdx, the batched launch (batch_impl.cuh) the block's place
 * in its image. TY rows of threads a block (by_of; the batch keeps BY). */
template <int K, int STEP, int RANK, int ROWS, int TY = by_of(K), bool FOLD = true,
          bool FAST = false>
__device__ __forceinline__ void rows_body(const ic_cuda_args &a, const rows_w<K, RANK> &w,
                                          const rows_edges &e, unsigned bx, unsigned by,
                                          unsigned bz)
{
    const rows_span &sp = e.sp;
    if (bx >= e.main_bx) { /* a side block (block-uniform branch) */
        /* FOLD (the one-image kernel): rows_side_fast, as rows_ring's side
         * items, faster for one image; the batch keeps the plain side items,
         * which measured faster there (docs/design/rows.md) */
        if (FOLD)
            rows_side_fast<K, STEP, RANK, TY, FAST>(a, w, e, bx, by, bz);
        else
            rows_side_block<K, STEP, RANK, TY, false, -1, FAST>(a, w, e, bx, by, bz);
        return;
    }
    const int c = sp.c_first + (int)(bx * BX + threadIdx.x);
    const int g = (int)(by * TY + threadIdx.y);
    if (c >= sp.c_end || g >= sp.groups)
        return;
    const int y0 = min(sp.y_first + g * ROWS, sp.y_last);
    if constexpr (ROWS > 4) {
        static_assert(RANK == 1, "many rows per thread: rank 1 only");
        rows_roll<K, STEP, ROWS, FAST>(a, w, c * CHUNK, y0, bz);
    } else
        rows_chunk<K, STEP, RANK, ROWS, FAST>(a, w, c * CHUNK, y0, bz);
}

/* FAST: the weights took rows_fast's form (w.fast; its own kernel, for a
 * separable 3x3 only: as a branch inside one kernel, ptxas kept the
 * weights in uniform registers and reloaded them, 520 ULDC in the RGB
 * rows_roll loop). */
template <int K, int STEP, int RANK, int ROWS, bool FAST = false>
__global__ void __launch_bounds__(BX *by_of(K), (rows_kernel_blocks<K, ROWS>()))
    rows_kernel(ic_cuda_args a, rows_w<K, RANK> w, rows_edges e)
{
    rows_body<K, STEP, RANK, ROWS, by_of(K), true, FAST>(a, w, e, blockIdx.x, blockIdx.y,
                                                         blockIdx.z);
}

/* The weights of a launch: the full K x K (rank 0) or rank pairs of vectors. */
template <int K, int RANK>
inline void rows_weights(rows_w<K, RANK> *p, const float *w, const float *row, const float *col)
{
    memset(p, 0, sizeof *p);
    if (RANK == 0)
        for (int i = 0; i < K * K; i++)
            p->v[i] = w[i];
    for (int q = 0; q < RANK; q++)
        for (int i = 0; i < K; i++) {
            p->row[q][i] = row[q * K + i];
            p->col[q][i] = col[q * K + i];
        }
}

/* A separable 3x3 with bias 0 (the usual blur) in rows_fast form: the row
 * vector divided by its centre tap (which row_pass<FAST> then takes as 1:
 * 2 products a sample, not 3) and the column vector times it, so that the
 * sums are the same products' in another rounding. Taken where that is safe:
 * a centre no smaller than 2^-10 of the row's largest tap, finite normal
 * results, and, where both vectors are dyadic (a tie-prone kernel's exact
 * factors), only if every new weight is exact, so its sums stay exact.
 * Else w->fast stays 0 and the launch runs the plain sums. */
template <int K, int RANK> inline void rows_fast(rows_w<K, RANK> *p, float bias)
{
    p->fast = 0;
    if constexpr (K == 3 && RANK == 1) {
        const float c = p->row[0][1];
        float big = 0.0f;
        for (int i = 0; i < K; i++)
            big = fmaxf(big, fabsf(p->row[0][i]));
        if (bias != 0.0f || !(fabsf(c) >= ldexpf(big, -10)) || !isfinite(big) || c == 0.0f)
            return;
        float row[K], col[K];
        bool exact = true, ok = true;
        for (int i = 0; i < K; i++) {
            row[i] = i == 1 ? 1.0f : p->row[0][i] / c;
            col[i] = p->col[0][i] * c;
            exact = exact && (double)row[i] * c == (double)p->row[0][i] &&
                    (double)col[i] == (double)p->col[0][i] * c;
            ok = ok && isfinite(row[i]) && isfinite(col[i]) &&
                 (col[i] == 0.0f || fabsf(col[i]) >= FLT_MIN) &&
                 (row[i] == 0.0f || fabsf(row[i]) >= FLT_MIN);
        }
        /* dyadic factors (2^20, as the planner tests them, plan.cu) */
        if (!ok || (!exact && ic__weights_dyadic(p->row[0], K, 1048576.0f) &&
                    ic__weights_dyadic(p->col[0], K, 1048576.0f)))
            return;
        for (int i = 0; i < K; i++) {
            p->row[0][i] = row[i];
            p->col[0][i] = col[i];
        }
        p->fast = 1;
    }
}

/* The launch shape of a rows launch over a width x height image (samples
 * STEP per pixel, K x K kernel, ROWS rows per thread): the interior span,
 * main blocks in x over the interior chunks, grid rows over the interior row
 * groups (one when there are none: tiny images), side blocks per grid row,
 * for blocks of ty rows of threads (0: by_of(k)) and tpc threads a chunk
 * (rows_ring: 2). 0 when the grid is too wide. */
inline int rows_shape_of(int width, int height, int step, int k, int rows, rows_edges *e,
                         long long *grid_y, int ty = 0, int tpc = 1)
{
    const long long nsamp = (long long)width * step;
    memset(e, 0, sizeof *e);
    e->sp = rows_interior(height, (int)nsamp, k / 2, (k / 2) * step, rows);
    const rows_span &sp = e->sp;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    const bool inner = sp.groups > 0;
    e->chunks = (int)chunks;
    e->n_top = inner ? k / 2 : height;
    e->bot_start = inner ? height - k / 2 : height;
    const long long mid_rows = e->bot_start - e->n_top;
    e->n_band = (e->n_top + (height - e->bot_start)) * chunks;
    e->n_items = e->n_band + mid_rows * (sp.c_first + (chunks - sp.c_end));
    const long long main_bx = inner ? ((sp.c_end - sp.c_first) * tpc + BX - 1) / BX : 0;
    const int by = ty > 0 ? ty : by_of(k);
    *grid_y = inner ? (sp.groups + by - 1) / by : 1;
    const long long side_blocks = (e->n_items * (CHUNK / SIDE) + BX * by - 1) / (BX * by);
    const long long edge_bx = (side_blocks + *grid_y - 1) / *grid_y;
    if (main_bx + edge_bx > 0x7fffffffLL)
        return 0;
    e->main_bx = (unsigned)main_bx;
    e->edge_bx = (unsigned)edge_bx;
    return 1;
}

#ifdef IC_RING_EXPERIMENT
/* The calibration hook IC_RING_PART=main|side (built only with
 * -DIC_RING_EXPERIMENT): a rows or rows_ring launch of only its main (1) or
 * only its side blocks (2); 0 all of them. */
inline int ring_part(void)
{
    const char *v = getenv("IC_RING_PART");
    return !v ? 0 : !strcmp(v, "main") ? 1 : !strcmp(v, "side") ? 2 : 0;
}
#endif

template <int K, int STEP, int RANK, int ROWS>
ic_status launch(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                 char *err, size_t errlen)
{
    rows_w<K, RANK> p;
    rows_weights<K, RANK>(&p, w, row, col);
    rows_fast(&p, a->bias);
    rows_edges e;
    long long grid_y = 0;
    if (!rows_shape_of(a->width, a->height, STEP, K, ROWS, &e, &grid_y))
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
#ifdef IC_RING_EXPERIMENT
    if (ring_part() == 1) /* the main blocks only */
        e.edge_bx = 0;
    if (ring_part() == 2) /* the side blocks only */
        e.main_bx = 0;
#endif
    const dim3 block(BX, by_of(K));
    const dim3 grid(e.main_bx + e.edge_bx, (unsigned)grid_y, a->soa ? (unsigned)a->channels : 1u);
    const cudaStream_t stream = (cudaStream_t)a->stream;
    if constexpr (K == 3 && RANK == 1) {
        if (p.fast)
            rows_kernel<K, STEP, RANK, ROWS, true><<<grid, block, 0, stream>>>(*a, p, e);
        else
            rows_kernel<K, STEP, RANK, ROWS><<<grid, block, 0, stream>>>(*a, p, e);
    } else
        rows_kernel<K, STEP, RANK, ROWS><<<grid, block, 0, stream>>>(*a, p, e);
    const cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cuda fast rows kernel launch", (int)ce);
    return IC_OK;
}

template <int K, int STEP, int RANK>
ic_status launch_r(const ic_cuda_args *a, const float *w, const float *row, const float *col,
                   int rows, char *err, size_t errlen)
{
    if constexpr (K == 3 && RANK == 1) /* rows_roll: a separable 3x3 only */
        if (rows == 8)
            return launch<K, STEP, RANK, 8>(a, w, row, col, err, errlen);
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
    case 2:
        return launch_r<K, 2, RANK>(a, w, row, col, rows, err, errlen);
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

} // namespace icf_rows

/* Names the launch of one (kernel size, rank) pair: a part file writes
 * IC_ROWS_LAUNCH_C(template, K, RANK); to instantiate it (and the kernels
 * below it) there, rows.cu IC_ROWS_LAUNCH_C(extern template, K, RANK); for
 * every pair so that it instantiates none. */
#define IC_ROWS_LAUNCH_C(PREFIX, K, RANK)                                                          \
    PREFIX ic_status icf_rows::launch_c<K, RANK>(const ic_cuda_args *a, const float *w,            \
                                                 const float *row, const float *col, int rows,     \
                                                 char *err, size_t errlen)

/* The same for one channel step of a pair, where its kernels are too slow to
 * compile in one part: parts write IC_ROWS_LAUNCH_R(template, K, STEP, RANK)
 * for steps 1, 2, 3 and 4, and rows.cu declares those extern in place of the
 * pair's IC_ROWS_LAUNCH_C (its launch_c is then rows.cu's, a host switch). */
#define IC_ROWS_LAUNCH_R(PREFIX, K, STEP, RANK)                                                    \
    PREFIX ic_status icf_rows::launch_r<K, STEP, RANK>(const ic_cuda_args *a, const float *w,      \
                                                       const float *row, const float *col,         \
                                                       int rows, char *err, size_t errlen)

#endif
