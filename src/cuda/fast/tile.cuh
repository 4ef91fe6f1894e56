/*
 * tile.cuh - the shared-memory tile of the fast path (direct.cu, sep.cu and the
 * tensor methods): block geometry, the tile fill (uint8 -> float once per input
 * sample, 4-byte loads, border mapping through ic_border_map only where the
 * window leaves the image) and the output store (ic_round_u8, packed or staged
 * so that global writes stay coalesced).
 *
 * Geometry. A block computes an output tile of IC_FAST_TW (128) pixels x
 * th = 8*nrg rows for cb channels (cb = 1 or all of them). Shared memory holds
 * the input tile planar, one float plane per channel:
 *   plane[c][q][col],  q in [0, th + kh - 1),  col in [0, sw)
 * where column col is image pixel x0 - pad + col, pad = cx rounded up to 4 so
 * that every thread's window starts 16-byte aligned, and row q is image row
 * y0 - cy + q. Keeping channels planar makes the compute code the same for 1..4
 * channels, AoS or SoA (only the fill and the store know the layout).
 * A warp owns one (channel, row group) item: lane l computes pixels
 * 4l..4l+3 of rows 8g..8g+7 of the tile (32 accumulators), reading 16-byte
 * vectors of consecutive lanes (conflict-free).
 *
 * Premultiplied alpha (a.premultiply, backend.h; the block then holds every
 * channel, cb = channels): the colour planes of the tile hold C * A, the alpha
 * plane A. For AoS the fill multiplies while it scatters (a 4-byte group is
 * one RGBA pixel or two GA pixels, so the alpha is in the same registers); an
 * SoA tile is multiplied in shared memory after the fill. The sums are then
 * FC and FA; before the store the alpha warps stage FA through shared memory
 * and the colour warps divide (unpremultiply), so the method stays one pass
 * with no buffer outside the block's shared memory.
 *
 * uint16 samples (a.u16): a run-time branch at the top of fill() and store(),
 * uniform over the launch, into fill16() / store16(): one sample per load and
 * store through the shared addressing of cuda_common.cuh, the block geometry,
 * the compute and the premultiplication unchanged. Not a template parameter,
 * so that the kernels are not instantiated twice (build time); the uint8 path
 * keeps its packed loads and stores and pays one uniform test. float32 jobs
 * could take the same branch (fill() and store() still take it), but the
 * direct and sep kernels are instantiated a second time for them
 * (direct_f32_*.cu, sep_f32_*.cu: the kernels' sample type T, tile_fill() and
 * tile_store()) with fill_f32() / store_f32(): inner tiles copied by
 * cp.async, edge tiles four samples a load (float4 where the source's base
 * and pitch are multiples of 16 bytes) with the border mapping only for the
 * groups that leave the image, and the stores of uint8
 * (float4 rows, AoS staged and copied out in 16-byte chunks). The tile holds
 * the same floats and the sums keep their order, so both give the same bits;
 * the uint8 instantiations are left as they were.
 */
#ifndef IC_CUDA_FAST_TILE_CUH
#define IC_CUDA_FAST_TILE_CUH

#include "cuda/cuda_common.cuh"
#include "cuda/fast/fast.h"

namespace icf
{

constexpr int TW = IC_FAST_TW;
constexpr int R = IC_FAST_R;
constexpr int MAX_THREADS = 384;
/* Blocks per SM the register budget is sized for: 65536 / (2 * 384) = 85 registers. */
constexpr int MIN_BLOCKS = 2;

/* Columns left of the tile that shared memory holds (>= cx, multiple of 4). */
__host__ __device__ constexpr int pad_of(int kw)
{
    return (((kw - 1) / 2) + 3) & ~3;
}
/* Shared-memory row stride in floats (4 spare columns for the last lane's vector window). */
__host__ __device__ constexpr int sw_of(int kw)
{
    return TW + 2 * pad_of(kw) + 4;
}
/* 16-byte vectors a window of kw taps for 4 outputs spans from an aligned start. */
__host__ __device__ constexpr int nvec_of(int kw)
{
    return (pad_of(kw) - (kw - 1) / 2 + 4 + kw - 1 + 3) / 4;
}
/* Floats of one channel plane of the input tile (rounded to 32 floats + 4 so
 * that the planes of a 3-channel scatter start on different banks). */
__host__ __device__ constexpr int plane_of(int kw, int kh, int nrg)
{
    return ((R * nrg + kh - 1) * sw_of(kw) + 31) / 32 * 32 + 4;
}

/* Launch arguments of a tile kernel (passed by value). */
struct targs {
    ic_cuda_args a;
    int cb, nrg; /* channels per block (1 or a.channels), row groups per block */
    int tiles_x, tiles_y;
    int cblocks; /* a.channels / cb */
    int vec_in;  /* 16 or 4: src base and pitch are multiples of it (wide loads); else 1 */
    int vec_out; /* dst base and pitch are multiples of 16: 16-byte stores */
    unsigned long long mcb, mtx; /* ic_cu_magic(cblocks), ic_cu_magic(tiles_x) */
};

/* What a block works on. */
struct tile {
    int c0;     /* first channel */
    int x0, y0; /* first output pixel of the tile */
    int xa, ya; /* image coordinates of shared element (0, 0) */
    int th, rows, sw, plane;
    bool inner; /* the whole input tile lies inside the image: no border mapping */
};

__device__ __forceinline__ tile block_tile(const targs &t)
{
    tile b;
    /* channel fastest: neighbours share L2 lines (divisions by the host's
     * reciprocals) */
    const unsigned id = blockIdx.x;
    const unsigned q = ic_cu_fast_div(id, (unsigned)t.cblocks, t.mcb);
    const int cbk = (int)(id - q * (unsigned)t.cblocks);
    const unsigned by_ = ic_cu_fast_div(q, (unsigned)t.tiles_x, t.mtx);
    const int bx = (int)(q - by_ * (unsigned)t.tiles_x), by = (int)by_;
    b.c0 = cbk * t.cb;
    b.x0 = bx * TW;
    b.y0 = by * R * t.nrg;
    b.th = R * t.nrg;
    b.rows = b.th + t.a.kh - 1;
    b.sw = sw_of(t.a.kw);
    b.plane = plane_of(t.a.kw, t.a.kh, t.nrg);
    b.xa = b.x0 - pad_of(t.a.kw);
    b.ya = b.y0 - (t.a.kh - 1) / 2;
    b.inner = b.xa >= 0 && b.xa + b.sw <= t.a.width && b.ya >= 0 && b.ya + b.rows <= t.a.height;
    return b;
}

/* ---- fill ------------------------------------------------------------------ */

/* Byte n (0..3) of w as a float, without the conversion unit (a quarter-rate
 * pipe on sm_90): 0x4B0000nn is the float 2^23 + nn. */
__device__ __forceinline__ float byte_f(unsigned w, int n)
{
    return __uint_as_float(__byte_perm(w, 0x4B000000u, 0x7540u | (unsigned)n)) - 8388608.0f;
}

/* Sample (px, y) of channel c of an image whose channel-interleave stride is C
 * (1 for a SoA plane), mapped by the border mode (core/border.h). */
template <int C>
__device__ __forceinline__ float fetch_mapped(const ic_cuda_args &a, const uint8_t *base, int px,
                                              int y, int c)
{
    const int mx = ic_border_map(px, a.width, a.border);
    const int my = ic_border_map(y, a.height, a.border);
    if (mx < 0 || my < 0)
        return a.border_value;
    return (float)__ldg(base + (size_t)my * a.src_pitch + (size_t)mx * C + c);
}

/* Writes the 4 samples v (tile-row samples s0..s0+3, counted from xa*C,
 * s0 % 4 == 0) into the channel planes: sample s goes to channel s % C,
 * column s / C. Consecutive lanes take consecutive groups, so the stores of a
 * warp are contiguous (C = 1: 16-byte vectors, C = 2: 8-byte) or nearly so.
 * PM (C = 2 or 4, whole pixels): colour samples are stored times their
 * pixel's alpha (C * A is exact in float32). */
template <int C, bool PM = false>
__device__ __forceinline__ void scatter4(float *row0, int plane, int s0, int c0, int cb,
                                         const float v[4])
{
    static_assert(!PM || C == 2 || C == 4, "premultiplied fill needs whole pixels");
    if constexpr (C == 1) {
        *reinterpret_cast<float4 *>(row0 + s0) = make_float4(v[0], v[1], v[2], v[3]);
    } else if constexpr (C == 2) {
        const int col = s0 / 2; /* bytes 0,2 are channel 0, bytes 1,3 channel 1 */
#pragma unroll
        for (int c = 0; c < 2; c++)
            if (c >= c0 && c < c0 + cb)
                *reinterpret_cast<float2 *>(row0 + (c - c0) * plane + col) =
                    (PM && c == 0) ? make_float2(v[0] * v[1], v[2] * v[3])
                                   : make_float2(v[c], v[c + 2]);
    } else if constexpr (C == 4) {
        const int col = s0 / 4;
#pragma unroll
        for (int c = 0; c < 4; c++)
            if (c >= c0 && c < c0 + cb)
                row0[(c - c0) * plane + col] = (PM && c < 3) ? v[c] * v[3] : v[c];
    } else {
        const int col0 = s0 / C, ph = s0 - col0 * C;
#pragma unroll
        for (int k = 0; k < 4; k++) {
            const int t = ph + k, c = t % C, col = col0 + t / C;
            if (c >= c0 && c < c0 + cb)
                row0[(c - c0) * plane + col] = v[k];
        }
    }
}

/* Samples s0..s0+3 of tile row q through the border mapping (edge groups). */
template <int C, bool PM>
__device__ __forceinline__ void put_mapped(const ic_cuda_args &a, const tile &b,
                                           const uint8_t *base, float *row0, int q, int s0, int c0,
                                           int cb)
{
    const int y = b.ya + q;
    float v[4];
#pragma unroll
    for (int k = 0; k < 4; k++) {
        const int s = s0 + k, px = s / C, c = s - px * C;
        v[k] = (c >= c0 && c < c0 + cb) ? fetch_mapped<C>(a, base, b.xa + px, y, c) : 0.0f;
    }
    scatter4<C, PM>(row0, b.plane, s0, c0, cb, v);
}

/* Fills the planes of channels [c0, c0+cb) of an image with interleave stride
 * C from `base` (pixel 0, row 0, channel 0 of that image or SoA plane).
 * A warp takes NH tile rows at a time; a lane loads 4-byte groups g = lane,
 * lane + 32, ... of all of them before it converts any, so that enough bytes
 * are in flight to cover the memory latency. */
template <int C, bool PM>
__device__ __forceinline__ void fill_layout(const targs &t, const tile &b, const uint8_t *base,
                                            float *smem, int c0, int cb)
{
    /* groups per lane for the widest tile row, and rows per batch: about 8
     * loads in flight per lane (one row per batch left each warp waiting for
     * memory once per row: the fill was latency-bound, docs/design/tiles.md) */
    constexpr int UG = (sw_of(IC_FAST_DIRECT_MAX_KW) * C / 4 + 31) / 32;
    constexpr int NH = UG >= 8 ? 1 : 8 / UG;
    const ic_cuda_args &a = t.a;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nwarps = (int)(blockDim.x >> 5);
    const int ng = b.sw * C / 4; /* 4-byte groups per tile row (xa*C is a multiple of 4) */
    const long start = (long)b.xa * C;
    const long rowbytes = (long)a.width * C;
    for (int q0 = warp; q0 < b.rows; q0 += NH * nwarps) {
        unsigned v[NH][UG];
        bool fast[NH][UG];
#pragma unroll
        for (int h = 0; h < NH; h++) {
            const int q = q0 + h * nwarps;
            const int y = b.ya + q;
            const bool yin = q < b.rows && y >= 0 && y < a.height;
            const uint8_t *row = base + (size_t)(yin ? y : 0) * a.src_pitch;
#pragma unroll
            for (int u = 0; u < UG; u++) {
                const int g = lane + 32 * u;
                const long byte0 = start + 4L * g;
                fast[h][u] = false;
                if (g < ng &&
                    (b.inner ? q < b.rows : (yin && byte0 >= 0 && byte0 + 4 <= rowbytes))) {
                    if (t.vec_in >= 4) {
                        v[h][u] = __ldg(reinterpret_cast<const unsigned *>(row + byte0));
                    } else {
                        const uint8_t *p = row + byte0;
                        v[h][u] = (unsigned)__ldg(p) | ((unsigned)__ldg(p + 1) << 8) |
                                  ((unsigned)__ldg(p + 2) << 16) | ((unsigned)__ldg(p + 3) << 24);
                    }
                    fast[h][u] = true;
                }
            }
        }
#pragma unroll
        for (int h = 0; h < NH; h++) {
            const int q = q0 + h * nwarps;
            if (q >= b.rows)
                break;
            float *row0 = smem + q * b.sw;
#pragma unroll
            for (int u = 0; u < UG; u++) {
                const int g = lane + 32 * u;
                if (g >= ng)
                    break;
                if (fast[h][u]) {
                    const float f[4] = {byte_f(v[h][u], 0), byte_f(v[h][u], 1), byte_f(v[h][u], 2),
                                        byte_f(v[h][u], 3)};
                    scatter4<C, PM>(row0, b.plane, 4 * g, c0, cb, f);
                }
            }
        }
    }
    if (b.inner)
        return;
    /* Edge blocks: the groups that leave the image, through the border mapping
     * (one rolled loop, so that the mapping code exists once). */
    for (int q = warp; q < b.rows; q += nwarps) {
        const int y = b.ya + q;
        const bool yin = y >= 0 && y < a.height;
        for (int g = lane; g < ng; g += 32) {
            const long byte0 = start + 4L * g;
            if (yin && byte0 >= 0 && byte0 + 4 <= rowbytes)
                continue; /* done above */
            put_mapped<C, PM>(a, b, base, smem + q * b.sw, q, 4 * g, c0, cb);
        }
    }
}

/* fill_layout<3> for an inner tile with 4-byte aligned rows (RGB AoS): a
 * thread takes whole 12-byte groups, 4 pixels, so each byte's channel and
 * column are compile-time constants: three 4-byte loads, twelve byte_f and
 * one 16-byte store per channel plane kept. The generic scatter needs a
 * modulo and a store per sample, about a fifth of a large sep kernel's
 * instructions. Threads are laid out as rpp rows of ng groups (sw / 4 groups
 * a row; the block has at least ng threads, fill() checks); a thread loads
 * the groups of up to RB of its rows before it converts any, so that several
 * loads are in flight. */
__device__ __forceinline__ void fill_rgb12(const targs &t, const tile &b, float *smem)
{
    constexpr int RB = 3; /* rows a thread loads before converting */
    const ic_cuda_args &a = t.a;
    const int ng = b.sw / 4; /* 12-byte groups per tile row (sw % 4 == 0) */
    const int rpp = (int)blockDim.x / ng;
    const int tid = (int)threadIdx.x, r0 = tid / ng, g = tid - r0 * ng;
    if (r0 >= rpp)
        return;
    const uint8_t *base = a.src + (long)b.xa * 3 + 12L * g;
    for (int q0 = r0; q0 < b.rows; q0 += RB * rpp) {
        unsigned v[RB][3];
#pragma unroll
        for (int h = 0; h < RB; h++) {
            const int q = q0 + h * rpp;
            if (q < b.rows) {
                const unsigned *p =
                    reinterpret_cast<const unsigned *>(base + (size_t)(b.ya + q) * a.src_pitch);
                v[h][0] = __ldg(p);
                v[h][1] = __ldg(p + 1);
                v[h][2] = __ldg(p + 2);
            }
        }
#pragma unroll
        for (int h = 0; h < RB; h++) {
            const int q = q0 + h * rpp;
            if (q >= b.rows)
                break;
            /* byte n of the group: pixel n / 3, channel n % 3 */
            float f[12];
#pragma unroll
            for (int n = 0; n < 12; n++)
                f[n] = byte_f(v[h][n / 4], n % 4);
            float *row0 = smem + q * b.sw + 4 * g;
#pragma unroll
            for (int c = 0; c < 3; c++)
                if (c >= b.c0 && c < b.c0 + t.cb)
                    *reinterpret_cast<float4 *>(row0 + (c - b.c0) * b.plane) =
                        make_float4(f[c], f[3 + c], f[6 + c], f[9 + c]);
        }
    }
}

/* Multiplies the colour planes of a filled SoA tile by its alpha plane (the
 * last; premultiplied blocks hold every channel). Holds barriers: every
 * thread of the block calls it. */
__device__ __forceinline__ void premultiply_planes(const targs &t, const tile &b, float *smem)
{
    __syncthreads(); /* the alpha plane is complete */
    const float *alpha = smem + (t.cb - 1) * b.plane;
    const int n = b.rows * b.sw;
    for (int i = (int)threadIdx.x; i < n; i += (int)blockDim.x) {
        const float av = alpha[i];
        for (int k = 0; k < t.cb - 1; k++)
            smem[k * b.plane + i] *= av;
    }
}

/* fill() for uint16 samples: tile element (col, q) of plane k is sample
 * (xa + col, ya + q) of channel c0 + k, border-mapped. A warp takes one tile
 * row at a time and its lanes consecutive elements in memory order (columns
 * of a plane for SoA, whole pixels for AoS), so that its loads stay contiguous. */
__device__ __forceinline__ void fill16(const targs &t, const tile &b, float *smem)
{
    const ic_cuda_args &a = t.a;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nwarps = (int)(blockDim.x >> 5);
    const int n = b.sw * t.cb;
    for (int q = warp; q < b.rows; q += nwarps) {
        const int my = ic_border_map(b.ya + q, a.height, a.border);
        for (int s = lane; s < n; s += 32) {
            const int k = a.soa ? s / b.sw : s % t.cb;
            const int col = a.soa ? s - k * b.sw : s / t.cb;
            const int mx = ic_border_map(b.xa + col, a.width, a.border);
            const size_t o = ic_cu_offset(a, a.src_pitch, b.c0 + k, mx, my);
            smem[k * b.plane + q * b.sw + col] =
                mx >= 0 && my >= 0 ? ic_cu_sample<true>(a.src, o, ic_cuda_shift(&a))
                                   : a.border_value;
        }
    }
    if (a.premultiply)
        premultiply_planes(t, b, smem);
}

/* Fills the block's input planes (premultiplied: see the top). May hold a
 * barrier: every thread of the block calls it. */
__device__ __forceinline__ void fill(const targs &t, const tile &b, float *smem)
{
    const ic_cuda_args &a = t.a;
    if (a.u16 || a.f32) {
        fill16(t, b, smem);
        return;
    }
    if (a.soa || a.channels == 1) {
        for (int k = 0; k < t.cb; k++) {
            const int c = b.c0 + k;
            const uint8_t *base = a.src + (a.soa ? (size_t)c * a.height * a.src_pitch : 0);
            fill_layout<1, false>(t, b, base, smem + k * b.plane, 0, 1);
        }
        if (a.premultiply)
            premultiply_planes(t, b, smem);
        return;
    }
    switch (a.channels) {
    case 2:
        if (a.premultiply)
            fill_layout<2, true>(t, b, a.src, smem, b.c0, t.cb);
        else
            fill_layout<2, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    case 3:
        if (b.inner && t.vec_in >= 4 && (int)blockDim.x >= b.sw / 4)
            fill_rgb12(t, b, smem);
        else
            fill_layout<3, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    default:
        if (a.premultiply)
            fill_layout<4, true>(t, b, a.src, smem, b.c0, t.cb);
        else
            fill_layout<4, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    }
}

/* ---- store ------------------------------------------------------------------ */

/* ic_round_u8 (core/border.h) without the conversion unit: clamp to [0, 255]
 * (NaN -> 0, as there), then adding 1.5 * 2^23 rounds to an integer with the
 * FADD's round-to-nearest-even and leaves it in the low byte of the bits. Same
 * results as ic_round_u8 for every float (the oracle tests hold it to that). */
__device__ __forceinline__ unsigned round_bits(float v)
{
    v = fminf(fmaxf(v, 0.0f), 255.0f);
    return __float_as_uint(v + 12582912.0f);
}

/* The low bytes of four words, packed little-endian. */
__device__ __forceinline__ unsigned pack4(unsigned a, unsigned b, unsigned c, unsigned d)
{
    return __byte_perm(__byte_perm(a, b, 0x0040u), __byte_perm(c, d, 0x0040u), 0x5410u);
}

/* Premultiplied blocks (every channel, alpha last): turns the colour sums
 * acc = FC into FC / FA (0 where FA <= 0) with FA of the same pixels, which
 * the alpha warps stage in shared memory past the area store() stages its
 * bytes in (th*TW*C bytes + th*TW floats fit in the input planes, C >= 2).
 * Holds barriers: every warp calls it, after its last read of the tile. */
__device__ __forceinline__ void unpremultiply(const targs &t, const tile &b, float *smem, int ci,
                                              int rg, float (&acc)[R][4])
{
    const int lane = (int)(threadIdx.x & 31);
    float *fa = smem + b.th * TW * t.a.channels / 4;
    __syncthreads(); /* every warp is done reading the input tile */
    if (ci == t.cb - 1) {
#pragma unroll
        for (int r = 0; r < R; r++)
            *reinterpret_cast<float4 *>(fa + (rg * R + r) * TW + 4 * lane) =
                make_float4(acc[r][0], acc[r][1], acc[r][2], acc[r][3]);
    }
    __syncthreads();
    if (ci == t.cb - 1)
        return;
#pragma unroll
    for (int r = 0; r < R; r++) {
        const float4 v = *reinterpret_cast<const float4 *>(fa + (rg * R + r) * TW + 4 * lane);
        const float d[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
        for (int p = 0; p < 4; p++)
            acc[r][p] = ic_cu_unpremultiply(acc[r][p], d[p]);
    }
}

/* store() for uint16 samples: one 2-byte store per sample (ic_cu_store). */
__device__ __forceinline__ void store16(const targs &t, const tile &b, int ci, int rg,
                                        const float (&acc)[R][4])
{
    const ic_cuda_args &a = t.a;
    const int x = b.x0 + 4 * (int)(threadIdx.x & 31);
#pragma unroll
    for (int r = 0; r < R; r++) {
        const int y = b.y0 + rg * R + r;
        if (y >= a.height)
            break;
#pragma unroll
        for (int p = 0; p < 4; p++)
            if (x + p < a.width)
                ic_cu_store(a, b.c0 + ci, x + p, y, acc[r][p]);
    }
}

/* acc[r][p]: rows rg*R + r, pixels 4*lane + p of channel b.c0 + ci. The smem
 * tile may be reused for staging: every warp must reach this call (it holds a
 * barrier, except for uint16, where no warp stages) and nothing may read the
 * tile afterwards. */
__device__ __forceinline__ void store(const targs &t, const tile &b, float *smem, int ci, int rg,
                                      float (&acc)[R][4])
{
    const ic_cuda_args &a = t.a;
    if (a.u16 || a.f32) {
        store16(t, b, ci, rg, acc);
        return;
    }
    const int lane = (int)(threadIdx.x & 31);
    const int c = b.c0 + ci;
    const int x = b.x0 + 4 * lane;
    const float bias = a.bias;
    if (a.soa || a.channels == 1 || t.cb == 1) {
        /* Planar (SoA plane or 1 channel): 4 bytes per row; strided for AoS cb == 1. */
        const int C = a.soa ? 1 : a.channels;
        uint8_t *base = a.dst + (a.soa ? (size_t)c * a.height * a.dst_pitch : (size_t)c);
        const bool packed = C == 1 && t.vec_out && x + 3 < a.width;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int y = b.y0 + rg * R + r;
            if (y >= a.height)
                break;
            uint8_t *row = base + (size_t)y * a.dst_pitch;
            unsigned o[4];
#pragma unroll
            for (int p = 0; p < 4; p++)
                o[p] = round_bits(acc[r][p] + bias);
            if (packed) {
                *reinterpret_cast<unsigned *>(row + x) = pack4(o[0], o[1], o[2], o[3]);
            } else {
#pragma unroll
                for (int p = 0; p < 4; p++)
                    if (x + p < a.width)
                        row[(size_t)(x + p) * C] = (uint8_t)o[p];
            }
        }
        return;
    }
    /* AoS, all channels in the block: interleave in shared memory, then copy
     * out whole rows with 16-byte stores. */
    const int C = a.channels;
    const int rb = TW * C; /* staged bytes per row */
    uint8_t *stage = reinterpret_cast<uint8_t *>(smem);
    __syncthreads(); /* every warp is done reading the input tile */
#pragma unroll
    for (int r = 0; r < R; r++)
#pragma unroll
        for (int p = 0; p < 4; p++)
            stage[(rg * R + r) * rb + (4 * lane + p) * C + ci] =
                (uint8_t)round_bits(acc[r][p] + bias);
    __syncthreads();
    const long rowbytes = (long)a.width * C;
    const long bx0 = (long)b.x0 * C;
    /* a thread's chunk k is fixed, its rows step by blockDim / nchunk (the
     * block, 32 * C * nrg threads, is a multiple of nchunk = 8 * C): one
     * division a thread instead of one a chunk */
    const int nchunk = rb / 16, tid = (int)threadIdx.x;
    const int r0 = tid / nchunk, k = tid - r0 * nchunk, rstep = (int)blockDim.x / nchunk;
    for (int r = r0; r < b.th; r += rstep) {
        const int y = b.y0 + r;
        if (y >= a.height)
            break;
        const long off = bx0 + 16L * k;
        if (off >= rowbytes)
            continue;
        uint8_t *dst = a.dst + (size_t)y * a.dst_pitch + off;
        const uint8_t *src = stage + r * rb + 16 * k;
        if (t.vec_out && off + 16 <= rowbytes) {
            *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(src);
        } else {
            for (int i = 0; i < 16 && off + i < rowbytes; i++)
                dst[i] = src[i];
        }
    }
}

/* ---- float32 tiles ----------------------------------------------------------- */

/* Asynchronous copies global -> shared (sm_80+): 4 bytes (through L1) or 16
 * (L2 only; both addresses 16-byte aligned), and the wait for this thread's. */
__device__ __forceinline__ void cp_async4(float *dst, const float *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async16(float *dst, const float *src)
{
    const unsigned d = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(d), "l"(src) : "memory");
}
__device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_all;\n" ::: "memory");
}

/* fill_f32_layout for an inner tile (no border mapping) without
 * premultiplication: every sample is copied straight into its plane by an
 * asynchronous copy (a 16-byte one for each 4-sample group of a planar row
 * where vec_in is 16), so the whole tile is in flight at once without
 * holding registers; the loads of fill_f32_layout kept 32 bytes a lane in
 * flight. Consecutive lanes take consecutive samples of a row (coalesced). */
template <int C>
__device__ __forceinline__ void fill_f32_async(const targs &t, const tile &b, const uint8_t *base,
                                               float *smem, int c0, int cb)
{
    const ic_cuda_args &a = t.a;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nwarps = (int)(blockDim.x >> 5);
    const long start = (long)b.xa * C;
    for (int q = warp; q < b.rows; q += nwarps) {
        const float *row =
            reinterpret_cast<const float *>(base + (size_t)(b.ya + q) * a.src_pitch) + start;
        float *row0 = smem + q * b.sw;
        if (C == 1 && t.vec_in >= 16) {
            for (int g = lane; g < b.sw / 4; g += 32)
                cp_async16(row0 + 4 * g, row + 4 * g);
            continue;
        }
        for (int s = lane; s < b.sw * C; s += 32) {
            const int px = s / C, c = s - px * C;
            if (c >= c0 && c < c0 + cb)
                cp_async4(row0 + (c - c0) * b.plane + px, row + s);
        }
    }
    cp_async_wait();
}

/* fill_layout for float32 samples: the planes of channels [c0, c0+cb) of an
 * image with interleave stride C from `base` (pixel 0, row 0, channel 0 of
 * that image or SoA plane).
 * A warp takes a tile row at a time; a lane loads two of its 4-sample groups
 * g = lane, lane + 32, ... (one float4 each where vec_in is 16, else four
 * floats) before it scatters them: four spilled at the 80 registers of two
 * blocks an SM. Groups that leave the image go through the border mapping a
 * sample at a time. */
template <int C, bool PM>
__device__ __forceinline__ void fill_f32_layout(const targs &t, const tile &b, const uint8_t *base,
                                                float *smem, int c0, int cb)
{
    /* groups per lane for the widest tile row, loaded UB at a time */
    constexpr int UG = (sw_of(IC_FAST_DIRECT_MAX_KW) * C / 4 + 31) / 32;
    constexpr int UB = UG < 2 ? UG : 2;
    const ic_cuda_args &a = t.a;
    const int warp = (int)(threadIdx.x >> 5), lane = (int)(threadIdx.x & 31);
    const int nwarps = (int)(blockDim.x >> 5);
    const int ng = b.sw * C / 4; /* groups per tile row (xa*C is a multiple of 4) */
    const long start = (long)b.xa * C;
    const long rowsamples = (long)a.width * C;
    const bool wide = t.vec_in >= 16;
#if __CUDA_ARCH__ >= 800
    if constexpr (!PM) {
        if (b.inner) {
            fill_f32_async<C>(t, b, base, smem, c0, cb);
            return;
        }
    }
#endif
    for (int q = warp; q < b.rows; q += nwarps) {
        const int y = b.ya + q;
        const bool yin = y >= 0 && y < a.height;
        const float *row =
            reinterpret_cast<const float *>(base + (size_t)(yin ? y : 0) * a.src_pitch);
#pragma unroll
        for (int u0 = 0; u0 < UG; u0 += UB) {
            float4 v[UB];
            bool in[UB];
#pragma unroll
            for (int u = 0; u < UB; u++) {
                const int g = lane + 32 * (u0 + u);
                const long s0 = start + 4L * g;
                in[u] =
                    u0 + u < UG && g < ng && (b.inner || (yin && s0 >= 0 && s0 + 4 <= rowsamples));
                if (in[u]) {
                    const float *p = row + s0;
                    v[u] = wide ? __ldg(reinterpret_cast<const float4 *>(p))
                                : make_float4(__ldg(p), __ldg(p + 1), __ldg(p + 2), __ldg(p + 3));
                }
            }
#pragma unroll
            for (int u = 0; u < UB; u++) {
                if (in[u]) {
                    const float f[4] = {v[u].x, v[u].y, v[u].z, v[u].w};
                    scatter4<C, PM>(smem + q * b.sw, b.plane, 4 * (lane + 32 * (u0 + u)), c0, cb,
                                    f);
                }
            }
        }
    }
    if (b.inner)
        return;
    /* edge blocks: the groups that leave the image, a sample at a time */
    for (int q = warp; q < b.rows; q += nwarps) {
        const int y = b.ya + q;
        const int my = ic_border_map(y, a.height, a.border);
        const float *row =
            reinterpret_cast<const float *>(base + (size_t)(my < 0 ? 0 : my) * a.src_pitch);
        for (int g = lane; g < ng; g += 32) {
            const long s0 = start + 4L * g;
            if (y >= 0 && y < a.height && s0 >= 0 && s0 + 4 <= rowsamples)
                continue; /* done above */
            float f[4];
#pragma unroll
            for (int k = 0; k < 4; k++) {
                const int s = 4 * g + k, px = s / C, c = s - px * C;
                const int mx = ic_border_map(b.xa + px, a.width, a.border);
                f[k] = c < c0 || c >= c0 + cb ? 0.0f
                       : mx < 0 || my < 0     ? a.border_value
                                              : __ldg(row + (size_t)mx * C + c);
            }
            scatter4<C, PM>(smem + q * b.sw, b.plane, 4 * g, c0, cb, f);
        }
    }
}

/* fill() for float32 jobs (the float instantiations of the kernels). */
__device__ __forceinline__ void fill_f32(const targs &t, const tile &b, float *smem)
{
    const ic_cuda_args &a = t.a;
    if (a.soa || a.channels == 1) {
        for (int k = 0; k < t.cb; k++) {
            const int c = b.c0 + k;
            const uint8_t *base = a.src + (a.soa ? (size_t)c * a.height * a.src_pitch : 0);
            fill_f32_layout<1, false>(t, b, base, smem + k * b.plane, 0, 1);
        }
        if (a.premultiply)
            premultiply_planes(t, b, smem);
        return;
    }
    switch (a.channels) {
    case 2:
        if (a.premultiply)
            fill_f32_layout<2, true>(t, b, a.src, smem, b.c0, t.cb);
        else
            fill_f32_layout<2, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    case 3:
        fill_f32_layout<3, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    default:
        if (a.premultiply)
            fill_f32_layout<4, true>(t, b, a.src, smem, b.c0, t.cb);
        else
            fill_f32_layout<4, false>(t, b, a.src, smem, b.c0, t.cb);
        break;
    }
}

/* Where 16-byte chunk k of a staged float32 row of C channels sits: for
 * C = 2 and 4 its index with bits 3..5 folded into bits 0..2, a permutation
 * within each aligned group of 8 chunks (a staged row is 32*C chunks). A
 * warp stages one channel of 128 pixels, floats 4*C apart: unswizzled, 2 and
 * 4 channels put 8 and 16 lanes on one bank, swizzled 4 (3 channels: 4
 * unswizzled, 8 swizzled); the copy-out's 8-chunk phases still read 8
 * distinct chunks of one 128-byte group. */
__device__ __forceinline__ int swizzle4(int k, int C)
{
    return C & 1 ? k : k ^ ((k >> 3) & 7);
}

/* store() for float32 jobs: sums plus bias unrounded (as ic_cu_store), planar
 * rows as one float4 where aligned, AoS rows of every channel interleaved in
 * shared memory (th*TW*C floats, chunks placed by swizzle4: the input planes
 * hold th*sw > th*TW each; the barrier below keeps them clear of
 * unpremultiply's FA) and copied out in 16-byte chunks. Every warp must reach
 * it (it holds barriers). */
__device__ __forceinline__ void store_f32(const targs &t, const tile &b, float *smem, int ci,
                                          int rg, const float (&acc)[R][4])
{
    const ic_cuda_args &a = t.a;
    const int lane = (int)(threadIdx.x & 31);
    const int c = b.c0 + ci;
    const int x = b.x0 + 4 * lane;
    const float bias = a.bias;
    if (a.soa || a.channels == 1 || t.cb == 1) {
        const int C = a.soa ? 1 : a.channels;
        uint8_t *base = a.dst + (a.soa ? (size_t)c * a.height * a.dst_pitch : (size_t)c * 4);
        const bool packed = C == 1 && t.vec_out && x + 3 < a.width;
#pragma unroll
        for (int r = 0; r < R; r++) {
            const int y = b.y0 + rg * R + r;
            if (y >= a.height)
                break;
            float *row = reinterpret_cast<float *>(base + (size_t)y * a.dst_pitch);
            if (packed) {
                *reinterpret_cast<float4 *>(row + x) = make_float4(
                    acc[r][0] + bias, acc[r][1] + bias, acc[r][2] + bias, acc[r][3] + bias);
            } else {
#pragma unroll
                for (int p = 0; p < 4; p++)
                    if (x + p < a.width)
                        row[(size_t)(x + p) * C] = acc[r][p] + bias;
            }
        }
        return;
    }
    const int C = a.channels;
    const int rs = TW * C; /* staged floats per row */
    __syncthreads();       /* every warp is done reading the input tile */
#pragma unroll
    for (int p = 0; p < 4; p++) {
        const int o = (4 * lane + p) * C + ci; /* the sample's float in its row */
        const int so = 4 * swizzle4(o >> 2, C) + (o & 3);
#pragma unroll
        for (int r = 0; r < R; r++)
            smem[(rg * R + r) * rs + so] = acc[r][p] + bias;
    }
    __syncthreads();
    const long rowsamples = (long)a.width * C;
    const long sx0 = (long)b.x0 * C;
    /* chunk k of 4 floats fixed a thread, rows stepping by blockDim / nchunk
     * (the block, 32 * C * nrg threads, is a multiple of nchunk = 32 * C) */
    const int nchunk = rs / 4, tid = (int)threadIdx.x;
    const int r0 = tid / nchunk, k = tid - r0 * nchunk, rstep = (int)blockDim.x / nchunk;
    for (int r = r0; r < b.th; r += rstep) {
        const int y = b.y0 + r;
        if (y >= a.height)
            break;
        const long s = sx0 + 4L * k;
        if (s >= rowsamples)
            continue;
        float *dst = reinterpret_cast<float *>(a.dst + (size_t)y * a.dst_pitch) + s;
        const float *src = smem + r * rs + 4 * swizzle4(k, C);
        if (t.vec_out && s + 4 <= rowsamples) {
            *reinterpret_cast<float4 *>(dst) = *reinterpret_cast<const float4 *>(src);
        } else {
            for (int i = 0; i < 4 && s + i < rowsamples; i++)
                dst[i] = src[i];
        }
    }
}

/* The fill and the store of a kernel whose tiles take samples of type T:
 * uint8_t (uint16 through fill16 / store16) or float (float32 jobs). */
template <class T>
__device__ __forceinline__ void tile_fill(const targs &t, const tile &b, float *smem)
{
    if constexpr (sizeof(T) == sizeof(float))
        fill_f32(t, b, smem);
    else
        fill(t, b, smem);
}
template <class T>
__device__ __forceinline__ void tile_store(const targs &t, const tile &b, float *smem, int ci,
                                           int rg, float (&acc)[R][4])
{
    if constexpr (sizeof(T) == sizeof(float))
        store_f32(t, b, smem, ci, rg, acc);
    else
        store(t, b, smem, ci, rg, acc);
}

/* ---- host side ---------------------------------------------------------------- */

/* Fills the launch arguments of a tile kernel for plan p. */
static inline targs make_targs(const ic_cuda_args *a, const ic_fast_plan *p)
{
    targs t;
    t.a = *a;
    t.cb = p->cb;
    t.nrg = p->nrg;
    t.tiles_x = (a->width + TW - 1) / TW;
    t.tiles_y = (a->height + R * p->nrg - 1) / (R * p->nrg);
    t.cblocks = a->channels / p->cb;
    t.vec_in = ((uintptr_t)a->src % 16 == 0 && a->src_pitch % 16 == 0) ? 16
               : ((uintptr_t)a->src % 4 == 0 && a->src_pitch % 4 == 0) ? 4
                                                                       : 1;
    t.vec_out = ((uintptr_t)a->dst % 16 == 0) && (a->dst_pitch % 16 == 0);
    t.mcb = ic_cu_magic((unsigned)t.cblocks);
    t.mtx = ic_cu_magic((unsigned)t.tiles_x);
    return t;
}

/* Blocks of a tile launch (fits in an int: at most 2^13 * 2^17 * 4). */
static inline unsigned tile_blocks(const targs &t)
{
    return (unsigned)t.tiles_x * (unsigned)t.tiles_y * (unsigned)t.cblocks;
}

/* Launches kernel k (a __global__ taking (targs, P)) over the tiles. */
template <class Kern, class Param>
static ic_status launch_tiles(Kern k, const targs &t, const Param &w, size_t smem, const char *what,
                              char *err, size_t errlen)
{
    if (smem > IC_CU_SMEM_DEFAULT)
        IC_CUDA_CHECK(
            cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    k<<<tile_blocks(t), 32 * t.cb * t.nrg, smem, (cudaStream_t)t.a.stream>>>(t, w);
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, what, (int)e);
    return IC_OK;
}

} // namespace icf

#endif /* IC_CUDA_FAST_TILE_CUH */
