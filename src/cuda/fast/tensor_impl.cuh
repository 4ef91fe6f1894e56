/*
 * tensor_impl.cuh - what the two tensor-core kernels share (tensor.cu: the
 * full K x K sum; tensor_sep.cu: the two passes of a rank-1 kernel): the
 * fp16 input planes and their fill, the mma.sync and ldmatrix wrappers, the
 * banded weight fragments, the staging of the sums for icf::store.
 *
 * Input planes. A block's input is held as one fp16 plane per channel of
 * `rows` rows and hw_of(ks) columns (+8 halves of row padding, so that the 8
 * rows of an ldmatrix fall on different 16-byte slots). Element (q, c) is
 * sample (xa + c, ya + q) with xa = x0 - pad_of(kw), the float tile's
 * 4-aligned origin (tile.cuh), so that a row starts on a 4-byte boundary of
 * the image for every channel count and the fill can load whole words. The
 * window of output column n then starts at plane column n + sh, sh =
 * pad_of(kw) - (kw - 1) / 2 in 0..3: the weight fragments carry that shift
 * (tap j of output n sits at column n + sh + j).
 *
 * Samples are integers 0..255 (and a constant border's value, an integer
 * within 2048: the planner checks), exact in fp16. A byte b becomes the fp16
 * 1024 + b by placing it under the exponent bits 0x64 (one byte_perm for
 * two samples) and 1024 is subtracted in pairs (one HSUB2).
 */
#ifndef IC_CUDA_FAST_TENSOR_IMPL_CUH
#define IC_CUDA_FAST_TENSOR_IMPL_CUH

#include <math.h>

#include <cuda_fp16.h>

#include "cuda/fast/tile.cuh"

namespace ict
{

/* fp16 plane columns for ks k steps of 16 columns past a 16-column block
 * (the 8 column blocks of a tile), and the row stride in halves. */
__host__ __device__ constexpr int hw_of(int ks)
{
    return icf::TW + 16 * (ks - 1);
}
__host__ __device__ constexpr int hs_of(int ks)
{
    return hw_of(ks) + 8;
}
/* The shift of a width's windows in the planes (see the top). */
__host__ __device__ constexpr int shift_of(int kw)
{
    return icf::pad_of(kw) - (kw - 1) / 2;
}
/* K steps of 16 plane columns that cover the windows of 16 outputs (or,
 * split, of each 8-column half on its own: kw 3..9 take 1 step instead of 2,
 * kw 19..25 2 instead of 3). */
__host__ __device__ constexpr int ks_of(int kw)
{
    return (16 + kw - 1 + shift_of(kw) + 15) / 16;
}
__host__ __device__ constexpr int ks_split_of(int kw)
{
    return (8 + kw - 1 + shift_of(kw) + 15) / 16;
}
__host__ __device__ constexpr bool split_of(int kw)
{
    return ks_split_of(kw) < ks_of(kw);
}
/* K steps run, and the k steps whose geometry the planes have (a split
 * launch's last half reaches 8 columns further: one step more). */
__host__ __device__ constexpr int steps_of(int kw)
{
    return split_of(kw) ? ks_split_of(kw) : ks_of(kw);
}
__host__ __device__ constexpr int geo_of(int kw)
{
    return split_of(kw) ? ks_split_of(kw) + 1 : ks_of(kw);
}

/* Banded weights: index of tap 0 in a padded row, and halves of a padded
 * row (taps -20 .. 16 ks + 3 of a row's fragments). */
constexpr int WOFF = 20;
__host__ __device__ constexpr int wl_of(int ks)
{
    return 16 * ks + 24;
}

constexpr int SS = icf::TW + 8; /* row stride (floats) of the staged sums */

__host__ __device__ constexpr size_t stage_bytes(int cb, int nrg)
{
    return (size_t)cb * icf::R * nrg * SS * sizeof(float);
}

/* A power of two 2^s with m * 2^s in [2^(top-1), 2^top) (1 for m = 0): the
 * weights' scale before their split into fp16 halves (host). */
static inline float scale_to(double m, int top)
{
    int e = 0;
    if (m > 0)
        (void)frexp(m, &e); /* m = f * 2^e, f in [0.5, 1) */
    return ldexpf(1.0f, top - e);
}

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

__device__ __forceinline__ void ldsm_x4(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void ldsm_x4_trans(uint32_t (&r)[4], uint32_t addr)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(addr));
}

__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                         uint32_t b1)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 800
    asm("mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
        "{%8, %9}, {%0, %1, %2, %3};"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
#else
    (void)c, (void)a, (void)b0, (void)b1;
    __trap(); /* the planner never takes the tensor methods below sm_80 */
#endif
}

/* A warp's accumulators, 4 tiles x 2 n8 halves x the 4 floats of an m16n8
 * fragment, set to zero. */
__device__ __forceinline__ void zero_acc(float (&acc)[4][2][4])
{
#pragma unroll
    for (int j = 0; j < 4; j++)
#pragma unroll
        for (int h = 0; h < 2; h++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                acc[j][h][e] = 0.0f;
}

/* Two fp16 values as the 32-bit word of a fragment (lo in the low half). */
__device__ __forceinline__ uint32_t pack_h2(__half lo, __half hi)
{
    return (uint32_t)__half_as_ushort(lo) | ((uint32_t)__half_as_ushort(hi) << 16);
}

/* Weight v split into hi = fp16(v) and lo = fp16(v - hi). */
__device__ __forceinline__ void split_h(float v, __half &hi, __half &lo)
{
    hi = __float2half_rn(v);
    lo = __float2half_rn(v - __half2float(hi));
}

/* Banded weights for fragments built in shared memory: four arrays of wl
 * halves, (hi, lo) x copy cp, where element idx of copy cp is tap
 * idx + cp - WOFF of w[0..n) times scale (0 outside), hi = fp16 of it and lo
 * = fp16 of the rest. A pair of taps (j, j + 1) is then one aligned word of
 * copy (j + WOFF) & 1: taps_word. Every thread of the block calls build_taps
 * (the caller syncs before reading). */
__device__ __forceinline__ void build_taps(const float *w, int n, float scale, __half *dst, int wl)
{
    for (int e = (int)threadIdx.x; e < 2 * wl; e += (int)blockDim.x) {
        const int cp = e / wl, idx = e - cp * wl, j = idx + cp - WOFF;
        __half hi, lo;
        split_h(j >= 0 && j < n ? w[j] * scale : 0.0f, hi, lo);
        dst[e] = hi;
        dst[2 * wl + e] = lo;
    }
}
/* Taps (j, j + 1) from build_taps' arrays: hi and lo words. */
__device__ __forceinline__ void taps_word(const __half *src, int wl, int j, uint32_t &hi,
                                          uint32_t &lo)
{
    const int cp = (j + WOFF) & 1, idx = cp * wl + j + WOFF - cp;
    hi = *reinterpret_cast<const uint32_t *>(src + idx);
    lo = *reinterpret_cast<const uint32_t *>(src + 2 * wl + idx);
}

/* Two bytes of the words w0 (selector bytes 0..3) and w1 (4..7) as an exact
 * half2: byte_perm selector nibble 0 picks the low half's byte, nibble 2 the
 * high half's (nibbles 1 and 3 are masked off). */
__device__ __forceinline__ uint32_t bytes_h2(unsigned w0, unsigned w1, unsigned sel)
{
    const unsigned bits = (__byte_perm(w0, w1, sel) & 0x00FF00FFu) | 0x64006400u;
    const unsigned k1024 = 0x64006400u;
    const __half2 h = __hsub2(*reinterpret_cast<const __half2 *>(&bits),
                              *reinterpret_cast<const __half2 *>(&k1024));
    return *reinterpret_cast<const uint32_t *>(&h);
}

/* The 4C bytes w[0..C) of 4 pixels of C interleaved channels (C = 2, 3, 4)
 * into planes 0..cb-1 (channels c0..) of a plane row, 4 halves each:
 * channel c of pixel p is byte pC + c, and each pair of pixels (0, 1), (2, 3)
 * has its two bytes in one word or two adjacent ones (one byte_perm). */
template <int C>
__device__ __forceinline__ void put_px4(__half *row, int plane, const unsigned (&w)[C], int c0,
                                        int cb)
{
#pragma unroll
    for (int c = 0; c < C; c++)
        if (c >= c0 && c < c0 + cb) {
            uint32_t h[2];
#pragma unroll
            for (int pr = 0; pr < 2; pr++) {
                const int b0 = 2 * pr * C + c, b1 = b0 + C, wi = b0 / 4;
                const unsigned sel =
                    0x3030u | (unsigned)(b0 - 4 * wi) | ((unsigned)(b1 - 4 * wi) << 8);
                h[pr] = bytes_h2(w[wi], wi + 1 < C ? w[wi + 1] : 0u, sel);
            }
            *reinterpret_cast<uint2 *>(row + (size_t)(c - c0) * plane) = make_uint2(h[0], h[1]);
        }
}

/* The planes of a block (their columns: the fill's HW). */
struct planes {
    __half *h;     /* element (0, 0) of plane 0 */
    int hs, plane; /* row and plane strides (halves) */
    int rows;      /* rows filled */
    int xa, ya;    /* image coordinates of element (0, 0) */
};

/* Sample (xa + c, ya + q) of channel ch (interleave stride C), border-mapped,
 * as fp16. */
template <int C>
__device__ __forceinline__ __half mapped_h(const ic_cuda_args &a, const uint8_t *base, int x, int y,
                                           int ch)
{
    return __float2half_rn(icf::fetch_mapped<C>(a, base, x, y, ch));
}

/* Fills planes 0..cb-1 (channels c0.. of an image with interleave stride C
 * from `base`, pixel 0 of row 0 of that image or SoA plane). A thread takes
 * groups of G 4-byte words (12 bytes = 4 pixels for C = 3, else one word:
 * 4 / C pixels) of NB (row, group) items before it converts any, so that
 * several loads are in flight (the byte-wise fill left the tensor kernels
 * latency-bound: docs/design/tensor.md#the-full-sum). Groups that leave the image go sample by
 * sample through the border mapping. */
template <int C, int HW>
__device__ __forceinline__ void fill_planes(const icf::targs &t, const planes &P,
                                            const uint8_t *base, __half *h0, int c0, int cb)
{
    constexpr int G = C == 3 ? 3 : 1;  /* words a group */
    constexpr int PP = 4 * G / C;      /* pixels a group */
    constexpr int NG = HW / PP;        /* groups a row */
    constexpr int NB = G == 3 ? 3 : 6; /* items a thread loads at once */
    const ic_cuda_args &a = t.a;
    const long rowbytes = (long)a.width * C;
    const int nt = (int)blockDim.x, n = P.rows * NG;
    for (int e0 = (int)threadIdx.x; e0 < n; e0 += NB * nt) {
        unsigned v[NB][G];
        bool in[NB];
#pragma unroll
        for (int i = 0; i < NB; i++) {
            const int e = e0 + i * nt, q = e / NG, gi = e - q * NG;
            const int y = P.ya + q;
            const long byte0 = (long)(P.xa + gi * PP) * C;
            in[i] = e < n && y >= 0 && y < a.height && byte0 >= 0 && byte0 + 4 * G <= rowbytes;
            if (in[i]) {
                const uint8_t *p = base + (size_t)y * a.src_pitch + byte0;
#pragma unroll
                for (int k = 0; k < G; k++) {
                    if (t.vec_in >= 4)
                        v[i][k] = __ldg(reinterpret_cast<const unsigned *>(p) + k);
                    else
                        v[i][k] = (unsigned)__ldg(p + 4 * k) |
                                  ((unsigned)__ldg(p + 4 * k + 1) << 8) |
                                  ((unsigned)__ldg(p + 4 * k + 2) << 16) |
                                  ((unsigned)__ldg(p + 4 * k + 3) << 24);
                }
            }
        }
#pragma unroll
        for (int i = 0; i < NB; i++) {
            const int e = e0 + i * nt, q = e / NG, gi = e - q * NG;
            if (e >= n)
                break;
            __half *row = h0 + (size_t)q * P.hs + gi * PP;
            if (in[i]) {
                if constexpr (C == 1) {
                    /* bytes 0..3: columns 0..3 */
                    *reinterpret_cast<uint2 *>(row) =
                        make_uint2(bytes_h2(v[i][0], 0, 0x3120u), bytes_h2(v[i][0], 0, 0x3332u));
                } else if constexpr (C == 3) {
                    put_px4<C>(row, P.plane, v[i], c0, cb);
                } else if constexpr (C == 2) {
                    /* bytes 0, 2: channel 0; 1, 3: channel 1 */
#pragma unroll
                    for (int c = 0; c < 2; c++)
                        if (c >= c0 && c < c0 + cb)
                            *reinterpret_cast<uint32_t *>(row + (size_t)(c - c0) * P.plane) =
                                bytes_h2(v[i][0], 0, c == 0 ? 0x3230u : 0x3331u);
                } else {
                    /* one pixel: byte c is channel c */
#pragma unroll
                    for (int c = 0; c < 4; c++)
                        if (c >= c0 && c < c0 + cb)
                            row[(size_t)(c - c0) * P.plane] = __ushort_as_half(
                                (unsigned short)(bytes_h2(v[i][0], 0, 0x3330u + (unsigned)c) &
                                                 0xFFFFu));
                }
            } else {
                for (int px = 0; px < PP; px++)
                    for (int c = c0; c < c0 + cb; c++)
                        row[(size_t)(c - c0) * P.plane + px] =
                            mapped_h<C>(a, base, P.xa + gi * PP + px, P.ya + q, c);
            }
        }
    }
}

/* fill_planes<C> (C = 2, 3, 4 interleaved channels) for a block whose planes
 * lie inside the image, with 4-aligned rows (AoS, the common case): threads
 * laid out as rpp rows of NG groups of 4 pixels (4C bytes), each loading the
 * groups of RB of its rows before it converts any, no bounds checks and no
 * division per group (as tile.cuh's fill_rgb12 for the float tile). RGBA
 * takes 2 rows at a time, not 4: 16 words in flight a thread (and fill_planes
 * for C = 2 and 4 in words of 2 and 1 pixels, not 4) left the rank-1 tensor
 * kernels' RGB compute spilling (ptxas, 8K 15x15 and 21x21 shapes). */
template <int C, int HW>
__device__ __forceinline__ void fill_aos_h16(const icf::targs &t, const planes &P, int c0, int cb)
{
    constexpr int NG = HW / 4, RB = C == 4 ? 2 : 4;
    const ic_cuda_args &a = t.a;
    const int rpp = (int)blockDim.x / NG;
    const int tid = (int)threadIdx.x, r0 = tid / NG, gi = tid - r0 * NG;
    if (r0 >= rpp)
        return;
    /* row pointers advanced by additions (no multiply a row) */
    const size_t step = (size_t)rpp * a.src_pitch;
    const uint8_t *src = a.src + (size_t)(P.ya + r0) * a.src_pitch + (size_t)P.xa * C + 4 * C * gi;
    __half *dst = P.h + (size_t)r0 * P.hs + 4 * gi;
    const int dstep = rpp * P.hs;
    for (int q0 = r0; q0 < P.rows; q0 += RB * rpp) {
        unsigned v[RB][C];
        const uint8_t *p = src;
#pragma unroll
        for (int h = 0; h < RB; h++) {
            if (q0 + h * rpp < P.rows) {
                const unsigned *w = reinterpret_cast<const unsigned *>(p);
#pragma unroll
                for (int k = 0; k < C; k++)
                    v[h][k] = __ldg(w + k);
            }
            p += step;
        }
        src = p;
#pragma unroll
        for (int h = 0; h < RB; h++) {
            if (q0 + h * rpp >= P.rows)
                break;
            put_px4<C>(dst + h * dstep, P.plane, v[h], c0, cb);
        }
        dst += RB * dstep;
    }
}

/* The planes of an AoS block of C interleaved channels: inner (inside the
 * image, 4-aligned rows) by fill_aos_h16, else by fill_planes. */
template <int C, int HW>
__device__ __forceinline__ void fill_interleaved(const icf::targs &t, const icf::tile &b,
                                                 const planes &P, bool inner)
{
    if (inner)
        fill_aos_h16<C, HW>(t, P, b.c0, t.cb);
    else
        fill_planes<C, HW>(t, P, t.a.src, P.h, b.c0, t.cb);
}

/* Fills every plane of the block (channels b.c0 .. b.c0 + cb - 1). */
template <int HW>
__device__ __forceinline__ void fill_h16(const icf::targs &t, const icf::tile &b, const planes &P)
{
    const ic_cuda_args &a = t.a;
    if (a.soa || a.channels == 1) {
        for (int k = 0; k < t.cb; k++) {
            const int c = b.c0 + k;
            const uint8_t *base = a.src + (a.soa ? (size_t)c * a.height * a.src_pitch : (size_t)0);
            fill_planes<1, HW>(t, P, base, P.h + (size_t)k * P.plane, 0, 1);
        }
        return;
    }
    const bool inner = t.vec_in >= 4 && P.xa >= 0 && P.xa + HW <= a.width && P.ya >= 0 &&
                       P.ya + P.rows <= a.height && (int)blockDim.x >= HW / 4;
    switch (a.channels) {
    case 2:
        fill_interleaved<2, HW>(t, b, P, inner);
        break;
    case 3:
        fill_interleaved<3, HW>(t, b, P, inner);
        break;
    default:
        fill_interleaved<4, HW>(t, b, P, inner);
        break;
    }
}

/* A warp's share of the block: channel ci, row group rg, and its 16 x 16
 * output tiles tt = rg * 4 + j (j < 4) at rows 16 * (tt % nrb), columns
 * 16 * (tt / nrb), nrb = nrg / 2 (nrg a power of two: shifts, no division). */
struct warp_tiles {
    int ci, rg, lnrb;
    __device__ __forceinline__ warp_tiles(int warp, int nrg)
    {
        const int lnrg = __ffs(nrg) - 1;
        ci = warp >> lnrg;
        rg = warp & (nrg - 1);
        lnrb = lnrg - 1;
    }
    __device__ __forceinline__ int row0(int j) const
    {
        return 16 * ((rg * 4 + j) & ((1 << lnrb) - 1));
    }
    __device__ __forceinline__ int col0(int j) const
    {
        return 16 * ((rg * 4 + j) >> lnrb);
    }
};

/* The staged sums (bias added) of an AoS block of every one of its C
 * channels (C = 2, 3, 4), C planes of th rows of stride S, stored straight
 * as bytes: a thread takes 4 pixels of a row (C float4 loads, 4C roundings,
 * C 4-byte words stored where the row allows: one 16-byte store for RGBA,
 * one 8-byte for 2 channels, where dst and its pitch allow), instead of
 * icf::store's byte-wise interleave through shared memory (a fifth of the
 * tensor sep kernel's instructions). dst and its
 * pitch are 4-aligned (the caller checks). */
template <int S, int C>
__device__ __forceinline__ void store_aos(const icf::targs &t, const icf::tile &b, const float *st)
{
    const ic_cuda_args &a = t.a;
    for (int it = (int)threadIdx.x; it < b.th * (icf::TW / 4); it += (int)blockDim.x) {
        const int r = it / (icf::TW / 4), qd = it - r * (icf::TW / 4);
        const int y = b.y0 + r, x = b.x0 + 4 * qd;
        if (y >= a.height || x >= a.width)
            continue;
        const int o = r * S + 4 * qd;
        unsigned u[4 * C]; /* sample p * C + c: pixel p, channel c */
#pragma unroll
        for (int c = 0; c < C; c++) {
            const float4 v = *reinterpret_cast<const float4 *>(st + (size_t)c * b.th * S + o);
            u[c] = icf::round_bits(v.x);
            u[C + c] = icf::round_bits(v.y);
            u[2 * C + c] = icf::round_bits(v.z);
            u[3 * C + c] = icf::round_bits(v.w);
        }
        uint8_t *dst = a.dst + (size_t)y * a.dst_pitch + (size_t)x * C;
        if (x + 3 < a.width) {
            unsigned wd[C];
#pragma unroll
            for (int i = 0; i < C; i++)
                wd[i] = icf::pack4(u[4 * i], u[4 * i + 1], u[4 * i + 2], u[4 * i + 3]);
            /* x is a multiple of 4: 16 or 8 bytes from a 16-aligned row */
            if constexpr (C == 4) {
                if (t.vec_out) {
                    *reinterpret_cast<uint4 *>(dst) = make_uint4(wd[0], wd[1], wd[2], wd[3]);
                    continue;
                }
            } else if constexpr (C == 2) {
                if (t.vec_out) {
                    *reinterpret_cast<uint2 *>(dst) = make_uint2(wd[0], wd[1]);
                    continue;
                }
            }
#pragma unroll
            for (int i = 0; i < C; i++)
                reinterpret_cast<unsigned *>(dst)[i] = wd[i];
        } else {
            const int n = C * (a.width - x);
#pragma unroll
            for (int i = 0; i < 4 * C; i++)
                if (i < n)
                    dst[i] = (uint8_t)u[i];
        }
    }
}

/* Stages a warp's sums through shared memory into the layout icf::store
 * takes, and stores them: acc[j] holds 16 x 16 output tile tt = rg * 4 + j
 * of channel ci (rows 16 * (tt % nrb), columns 16 * (tt / nrb)) as two
 * m16n8 accumulator fragments, times unscale. TRANS false: fragment nh is
 * columns 8 nh.. of rows 0..15 (D[row][col]); true: fragment nb is rows
 * 8 nb.. of columns 0..15 (D[col][row], tensor_sep.cu's column pass). S:
 * row stride (floats) of the staged rows, a multiple of 4 within SS. Every
 * warp calls it once every warp is done reading the block's shared memory
 * (it syncs first). */
template <bool TRANS, int S>
__device__ __forceinline__ void stage_store(const icf::targs &t, const icf::tile &b, float *smem,
                                            const warp_tiles &w, const float (&acc)[4][2][4],
                                            float unscale)
{
    static_assert(S % 4 == 0 && S >= icf::TW && S <= SS, "stage stride");
    const int lane = (int)(threadIdx.x & 31), g = lane >> 2, tq = lane & 3;
    const int ci = w.ci, rg = w.rg;
    /* AoS blocks of every channel (2..4) store by store_aos, the bias added
     * here (icf::store adds it itself) */
    const bool aos = !t.a.soa && t.a.channels >= 2 && t.cb == t.a.channels &&
                     (((uintptr_t)t.a.dst | t.a.dst_pitch) & 3) == 0;
    const float bias = aos ? t.a.bias : 0.0f;
    __syncthreads();
    float *st = smem + (size_t)ci * b.th * S;
#pragma unroll
    for (int j = 0; j < 4; j++) {
        const int r0 = w.row0(j), c0 = w.col0(j);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const float(&d)[4] = acc[j][h];
            if constexpr (TRANS) {
                float *o = st + (r0 + 8 * h + 2 * tq) * S + c0 + g;
                o[0] = fmaf(d[0], unscale, bias);
                o[S] = fmaf(d[1], unscale, bias);
                o[8] = fmaf(d[2], unscale, bias);
                o[S + 8] = fmaf(d[3], unscale, bias);
            } else {
                float *o = st + (r0 + g) * S + c0 + 8 * h + 2 * tq;
                *reinterpret_cast<float2 *>(o) =
                    make_float2(fmaf(d[0], unscale, bias), fmaf(d[1], unscale, bias));
                *reinterpret_cast<float2 *>(o + 8 * S) =
                    make_float2(fmaf(d[2], unscale, bias), fmaf(d[3], unscale, bias));
            }
        }
    }
    __syncthreads();
    if (aos) {
        if (t.a.channels == 2)
            store_aos<S, 2>(t, b, smem);
        else if (t.a.channels == 3)
            store_aos<S, 3>(t, b, smem);
        else
            store_aos<S, 4>(t, b, smem);
        return;
    }
    float out[icf::R][4];
#pragma unroll
    for (int r = 0; r < icf::R; r++) {
        const float4 v = *reinterpret_cast<const float4 *>(st + (rg * icf::R + r) * S + 4 * lane);
        out[r][0] = v.x;
        out[r][1] = v.y;
        out[r][2] = v.z;
        out[r][3] = v.w;
    }
    icf::store(t, b, smem, ci, rg, out); /* (syncs before it reuses shared memory) */
}

} // namespace ict

#endif /* IC_CUDA_FAST_TENSOR_IMPL_CUH */
