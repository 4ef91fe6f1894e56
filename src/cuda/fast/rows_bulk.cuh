/*
 * rows_bulk.cuh - the `rows` method's form for a separable 3x3 with many rows
 * a thread on sm_90 and later (issue 17): rows_roll's arithmetic, its input
 * rows brought into shared memory by the copy engine (cp.async.bulk, one
 * row segment a copy, completing on an mbarrier) several rows ahead.
 *
 * rows_roll (rows_impl.cuh) streams a column of 8 output rows a thread
 * from global memory; its loads wait in registers, so at 80 registers and
 * 28 warps an SM ptxas keeps only a row or two of them in flight and the 8K
 * 3x3 reached 69% of DRAM's bandwidth, 1.15x of a copy of its bytes (ncu at
 * 8421d22; an L2 prefetch four rows on took it from 0.0797 to 0.0775 ms).
 * Here a warp owns a strip of 32 chunks (512 samples) and L output rows
 * (a launch parameter): its lane 0 copies each input row's segment (the
 * strip and 16 bytes on either side) into a ring of BULK_STAGES slots, and
 * the warp sums a row from shared memory while the next ones are on their
 * way, so the bytes in flight no longer depend on registers. A slot is
 * refilled as soon as every lane has read it (__syncwarp); each slot's
 * mbarrier counts its copy's bytes, and its phase tells the warp that the
 * row it waits for is in.
 *
 * Outputs: the shift register of rows_ring (rows_ring.cuh), 16 samples a
 * thread, the same products in the same order as add_row, so an output is
 * the same bit for bit as rows_chunk's, rows_roll's and rows_side's. The
 * side items (the rows above and below the interior, and the side chunks)
 * are rows_side_fast's, in side blocks after the main blocks of a
 * one-dimensional grid, as in ring_kernel.
 */
#ifndef IC_CUDA_FAST_ROWS_BULK_CUH
#define IC_CUDA_FAST_ROWS_BULK_CUH

#include "cuda/fast/rows_ring.cuh"

namespace icf_rows
{

/* Row slots a warp; every issued copy is waited for before the warp ends. */
#ifndef IC_BULK_STAGES
#define IC_BULK_STAGES 4
#endif
constexpr int BULK_STAGES = IC_BULK_STAGES;
#ifndef IC_BULK_UNROLL
#define IC_BULK_UNROLL 1
#endif
constexpr int BULK_UNROLL = IC_BULK_UNROLL;
static_assert((BULK_STAGES & (BULK_STAGES - 1)) == 0, "stages: a power of two");
constexpr int BULK_TY = RING_TY;                   /* warps a block */
constexpr int BULK_STRIP = BX;                     /* chunks a warp: one a lane */
constexpr int BULK_SEG = (BULK_STRIP + 2) * CHUNK; /* a slot: the strip and a chunk each side */
/* Blocks an SM: rows_roll's registers (72 a thread at 128 threads). */
constexpr int BULK_BLOCKS = 7;

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ unsigned smem_u32(const void *p)
{
    return (unsigned)__cvta_generic_to_shared(p);
}

/* Copies `bytes` (a multiple of 16) from src to the slot dst, both 16-byte
 * aligned, and arms the slot's barrier to expect them. */
__device__ __forceinline__ void bulk_row(void *dst, const void *src, unsigned bytes, uint64_t *bar)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_u32(bar)),
                 "r"(bytes)
                 : "memory");
    asm volatile(
        "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::
            "r"(smem_u32(dst)),
        "l"(src), "r"(bytes), "r"(smem_u32(bar))
        : "memory");
}

/* Waits until the barrier's phase `parity` has completed. */
__device__ __forceinline__ void bulk_wait(uint64_t *bar, unsigned parity)
{
    unsigned done = 0;
    do {
        asm volatile("{\n\t.reg .pred p;\n\t"
                     "mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n\t"
                     "selp.u32 %0, 1, 0, p;\n\t}"
                     : "=r"(done)
                     : "r"(smem_u32(bar)), "r"(parity)
                     : "memory");
    } while (!done);
}

/* Output samples of chunks c0..c0+nl-1 (one a lane; nl <= 32) of rows
 * y0..y0+L-1 of plane bz, an interior strip of an interior row band, one
 * input row at a time from the warp's slots buf (bar: their barriers). */
template <int K, int STEP, bool BIAS>
__device__ __forceinline__ void rows_bulk(const ic_cuda_args &a, const rows_w<K, 1> &w, int c0,
                                          int nl, int y0, int L, unsigned bz,
                                          uint8_t (*buf)[BULK_SEG], uint64_t *bar)
{
    constexpr int R = K / 2;
    constexpr int H = R * STEP;
    static_assert(H <= CHUNK, "halo wider than a chunk");
    const int lane = (int)threadIdx.x;
    const int nr = L + K - 1; /* input rows */
    const size_t ip = a.src_pitch, op = a.dst_pitch;
    const size_t plane_in = a.soa ? (size_t)bz * a.height * ip : 0;
    const size_t plane_out = a.soa ? (size_t)bz * a.height * op : 0;
    /* the segment of input row 0: from a chunk before the strip to one after */
    const uint8_t *in = a.src + plane_in + (size_t)(y0 - R) * ip + (size_t)(c0 - 1) * CHUNK;
    uint8_t *dst = a.dst + plane_out + (size_t)y0 * op + (size_t)(c0 + lane) * CHUNK;
    const unsigned bytes = (unsigned)(nl + 2) * CHUNK;
    const bool active = lane < nl;

    if (lane == 0) {
        for (int s = 0; s < BULK_STAGES; s++)
            asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_u32(&bar[s]))
                         : "memory");
        asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
        for (int s = 0; s < BULK_STAGES && s < nr; s++)
            bulk_row(buf[s], in + (size_t)s * ip, bytes, &bar[s]);
    }
    __syncwarp();

    /* at input row r, acc[j] (1 <= j < K) holds output row r - j's sum of
     * its first j input rows (rows_ring's shift register) */
    float acc[K][CHUNK];
    zero_sums(acc);
#pragma unroll BULK_UNROLL
    for (int r = 0; r < nr; r++) {
        const int slot = r & (BULK_STAGES - 1);
        bulk_wait(&bar[slot], (unsigned)(r / BULK_STAGES) & 1u);
        row_loads l;
        l.lft = l.mid = l.rgt = make_uint4(0, 0, 0, 0);
        if (active) {
            const uint4 *q = reinterpret_cast<const uint4 *>(buf[slot] + lane * CHUNK);
            l.lft = q[0];
            l.mid = q[1];
            l.rgt = q[2];
        }
        /* every lane has its row: lane 0 refills the slot with row r + S
         * (the proxy fence orders the lanes' reads before the copy's writes) */
        __syncwarp();
        if (lane == 0 && r + BULK_STAGES < nr) {
            asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
            bulk_row(buf[slot], in + (size_t)(r + BULK_STAGES) * ip, bytes, &bar[slot]);
        }
        float f[CHUNK + 2 * H];
        row_window<H>(l, f);
        premultiply_window<STEP>(f, a.premultiply);
        float fin[CHUNK];
#pragma unroll
        for (int t = 0; t < CHUNK; t++) {
            const float h = row_pass<K, STEP>(w.row[0], f, t);
            fin[t] = fmaf(w.col[0][K - 1], h, acc[K - 1][t]);
#pragma unroll
            for (int j = K - 2; j >= 0; j--)
                acc[j + 1][t] = fmaf(w.col[0][j], h, j == 0 ? 0.0f : acc[j][t]);
        }
        if (r >= K - 1) { /* output row r - (K - 1) is complete */
            unpremultiply_row<STEP>(fin, a.premultiply);
            unsigned v[CHUNK / 4];
#pragma unroll
            for (int q = 0; q < CHUNK / 4; q++)
                v[q] = pack_word<BIAS>(*reinterpret_cast<const float(*)[4]>(&fin[4 * q]), a.bias);
            if (active)
                store_words(dst, v);
            dst += op;
        }
    }
}
#endif

/* One dimension of blocks of BULK_TY warps: the main blocks (warp i: strip
 * i % cw of row band i / cw % groups of plane i / (cw * groups)), then the
 * side blocks, as ring_grid (whose layout this is, with 32 chunks a warp). */
inline ring_grid bulk_grid_of(const rows_edges &e, int planes)
{
    ring_grid g = ring_grid_of(e, planes);
    g.cw = (e.sp.c_end - e.sp.c_first + BULK_STRIP - 1) / BULK_STRIP;
    g.main = ((long long)g.cw * g.groups * planes + BULK_TY - 1) / BULK_TY;
    return g;
}

template <int K, int STEP>
__global__ void __launch_bounds__(BX *BULK_TY, BULK_BLOCKS)
    bulk_kernel(ic_cuda_args a, rows_w<K, 1> w, rows_edges e, ring_grid rg, int L)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    __shared__ alignas(128) uint8_t buf[BULK_TY][BULK_STAGES][BULK_SEG];
    __shared__ uint64_t bar[BULK_TY][BULK_STAGES];
    const long long b = blockIdx.x;
    const rows_span &sp = e.sp;
    if (b >= rg.main) { /* a side block (block-uniform branch) */
        const long long j = b - rg.main;
        const unsigned bx = e.main_bx + (unsigned)(j % rg.side), bz = (unsigned)(j / rg.side);
        rows_side_fast<K, STEP, 1, BULK_TY>(a, w, e, bx, 0, bz);
        return;
    }
    const long long wi = b * BULK_TY + threadIdx.y; /* the warp (warp-uniform from here) */
    const long long per_plane = (long long)rg.cw * rg.groups;
    const int bz = (int)(wi / per_plane);
    if (bz >= rg.planes)
        return;
    const int rest = (int)(wi - bz * per_plane);
    const int g = rest / rg.cw;
    const int c0 = sp.c_first + (rest - g * rg.cw) * BULK_STRIP;
    const int nl = min(BULK_STRIP, sp.c_end - c0);
    const int y0 = min(sp.y_first + g * L, sp.y_last);
    if (a.bias != 0.0f)
        rows_bulk<K, STEP, true>(a, w, c0, nl, y0, L, (unsigned)bz, buf[threadIdx.y],
                                 bar[threadIdx.y]);
    else
        rows_bulk<K, STEP, false>(a, w, c0, nl, y0, L, (unsigned)bz, buf[threadIdx.y],
                                  bar[threadIdx.y]);
#else
    __trap(); /* the host launches it only on compute capability 9 and later */
#endif
}

template <int K, int STEP>
ic_status launch_bulk_s(const ic_cuda_args *a, const float *row, const float *col, int rows,
                        char *err, size_t errlen)
{
    rows_w<K, 1> p;
    rows_weights<K, 1>(&p, nullptr, row, col);
    rows_edges e;
    long long grid_y = 0;
    const int planes = a->soa ? a->channels : 1;
    if (!rows_shape_of(a->width, a->height, STEP, K, rows, &e, &grid_y, 1, 1))
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    const ring_grid rg = bulk_grid_of(e, planes);
    const long long blocks = rg.main + rg.side * planes;
    if (blocks > 0x7fffffffLL)
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    bulk_kernel<K, STEP>
        <<<(unsigned)blocks, dim3(BX, BULK_TY), 0, (cudaStream_t)a->stream>>>(*a, p, e, rg, rows);
    const cudaError_t ce = cudaGetLastError();
    if (ce != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cuda fast rows kernel launch", (int)ce);
    return IC_OK;
}

/* The launch of a rank-1 K x K at `rows` rows a warp, for the image's step. */
template <int K>
ic_status launch_bulk(const ic_cuda_args *a, const float *row, const float *col, int rows,
                      char *err, size_t errlen)
{
    switch (a->soa ? 1 : a->channels) {
    case 1:
        return launch_bulk_s<K, 1>(a, row, col, rows, err, errlen);
    case 3:
        return launch_bulk_s<K, 3>(a, row, col, rows, err, errlen);
    default:
        return launch_bulk_s<K, 4>(a, row, col, rows, err, errlen);
    }
}

} // namespace icf_rows

/* As IC_ROWS_LAUNCH_C, for launch_bulk: rows_bulk_k3.cu instantiates it,
 * rows.cu declares it extern. */
#define IC_ROWS_LAUNCH_BULK(PREFIX, K)                                                             \
    PREFIX ic_status icf_rows::launch_bulk<K>(const ic_cuda_args *a, const float *row,             \
                                              const float *col, int rows, char *err,               \
                                              size_t errlen)

#endif
