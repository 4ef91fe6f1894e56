/*
 * cuda_common.cuh - device helpers shared by the CUDA strategy backends, so
 * that the kernels differ only in their memory strategy (STYLE: no copy-paste
 * variants).
 *
 * What is here:
 *  - launch-geometry constants of every strategy (the seeds' tile sizes);
 *  - sample addressing for AoS and SoA with a pitch (ic_cu_plane / ic_cu_store),
 *    uint8 or uint16 -> float on read, ic_round_u8 (core/border.h) or
 *    ic_cu_round_u16 on write; a plane either reads a channel as it is
 *    (ic_cu_src) or premultiplied by alpha;
 *  - the border-mapped fetch, which always goes through ic_border_map;
 *  - the inner product over a window (ic_cu_dot), templated on where the
 *    weights come from (ic_cu_wglobal here, a __constant__ array in
 *    strategies/const.cu);
 *  - ONE kernel template (ic_cu_conv_kernel) and ONE host launcher
 *    (ic_cu_launch, through cudaLaunchKernel), both templated on a strategy
 *    policy that says how a block loads its tile and how a thread reads a tap;
 *  - the basic strategy (ic_cu_direct: one thread per output sample, seed 003
 *    Fig 7.7/7.9, seed 004), which is also the documented fallback of the
 *    shared-memory strategies when their tile cannot fit;
 *  - the halo-tile geometry shared by cuda-tiled-out and cuda-tiled-halo.
 *
 * Channels: every thread computes ONE channel of one pixel; blockIdx.z is the
 * channel. For SoA that is one plane per grid layer (coalesced); for AoS the
 * same kernels read with a stride of `channels` bytes. This keeps a tile one
 * float per pixel (the largest kernel that fits in shared memory does not
 * depend on the channel count) and keeps AoS and SoA on one code path.
 *
 * Sample types: ic_cuda_args.u16 selects uint16 samples (IC_U16), f32 float32
 * ones (IC_F32: read as they are, stored unrounded). It is a
 * run-time branch in the plane's read and in ic_cu_store, uniform over a
 * launch, not a template parameter: templating every strategy (and the fast
 * path's tile kernels) on the sample type would double the instantiations and
 * the build time, while the branch costs one predictable test per load.
 *
 * Premultiplied alpha (ic_cuda_args.premultiply, backend.h): a block of a
 * colour channel runs its strategy twice, first on the alpha channel (FA),
 * then on the colour premultiplied while it is read (FC = sum w*C*A), and
 * stores FC / FA; alpha blocks run once as usual. The tile stays one float
 * per pixel, so the largest kernel a strategy's shared memory takes does not
 * change with premultiplication, and every strategy gets it through the
 * kernel template alone: loads and sums are templates over the plane type.
 *
 * A strategy S provides:
 *   BX, BY          block shape (threads)
 *   kShared         whether it loads a shared-memory tile (then a barrier follows)
 *   tiles_x/tiles_y grid size in blocks for a job (host)
 *   smem_bytes      dynamic shared memory per block for a job (host)
 *   S(a, bx, by)    per-thread geometry; sets ox, oy (output sample) and active
 *   load(a, in, s)  fills the shared tile (every thread of the block calls it)
 *   sum(a, in, w, s) the weighted sum for (ox, oy)
 * (load and sum are templates over the plane type of `in`).
 */
#ifndef IC_CUDA_COMMON_CUH
#define IC_CUDA_COMMON_CUH

#include <cuda_runtime.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/border.h"
#include "cuda/cuda_host.h"

/* ---- launch geometry ------------------------------------------------------ */
/* cuda-global / cuda-const and the fallback: 32x8 threads, one per output sample. */
#define IC_CU_DIRECT_BX 32
#define IC_CU_DIRECT_BY 8
/* cuda-tiled-in: IN_TILE_DIM of Fig 7.12; output tile = 32 - (k - 1). */
#define IC_CU_TILE_IN 32
/* cuda-tiled-out: TILE_WIDTH of seed 000 (output tile, block 16x16). */
#define IC_CU_TILE_OUT 16
/* cuda-tiled-cached: TILE_DIM of Fig 7.15. */
#define IC_CU_TILE_CACHED 32
/* cuda-tiled-halo: the 16x16 blocks of seed 002. */
#define IC_CU_TILE_HALO 16
/* Largest gridDim.y; taller grids are launched in several slices (a test
 * build may lower it to exercise the slicing). */
#ifndef IC_CU_MAX_GRID_Y
#define IC_CU_MAX_GRID_Y 65535
#endif
/* Dynamic shared memory a block gets without cudaFuncSetAttribute. */
#define IC_CU_SMEM_DEFAULT (48 * 1024)
/* Capacity of cuda-const's __constant__ weight array: 16384 floats = 64 KB,
 * all of constant memory (kernels up to 127x127; larger use global weights). */
#define IC_CU_CONST_WEIGHTS 16384

/* Checks a CUDA runtime call; on failure writes "<call>: <reason>" into the
 * caller's `err`/`errlen` (which must be in scope) and returns IC_ERR_DEVICE. */
#define IC_CUDA_CHECK(call)                                                                        \
    do {                                                                                           \
        const cudaError_t ic_cu_e_ = (call);                                                       \
        if (ic_cu_e_ != cudaSuccess)                                                               \
            return ic_cuda_fail(err, errlen, #call, (int)ic_cu_e_);                                \
    } while (0)

/* ---- samples -------------------------------------------------------------- */

/* n / d for a 32-bit n and a divisor d the host knows, m = ic_cu_magic(d):
 * the high 64 bits of m * n with m = ceil(2^64 / d) are exact for every
 * 32-bit n (Lemire, Kaser and Kurz, "Faster remainder by direct
 * computation", 2019); d = 1 has no 64-bit m and gives n. Instead of the ~20
 * instructions of a division by a run-time value, which held a large share
 * of a small batch's stalls. */
__host__ __device__ inline unsigned long long ic_cu_magic(unsigned d)
{
    return d > 1 ? ~0ull / d + 1 : 0;
}
__device__ __forceinline__ unsigned ic_cu_fast_div(unsigned n, unsigned d, unsigned long long m)
{
    return d > 1 ? (unsigned)__umul64hi(m, (unsigned long long)n) : n;
}

/* Byte offset of sample (x, y) of channel c in an image of the job's shape
 * (samples of 1 << ic_cuda_shift(&a) bytes). */
__device__ __forceinline__ size_t ic_cu_offset(const ic_cuda_args &a, size_t pitch, int c, int x,
                                               int y)
{
    const int sh = ic_cuda_shift(&a);
    if (a.soa)
        return ((size_t)c * (size_t)a.height + (size_t)y) * pitch + ((size_t)x << sh);
    return (size_t)y * pitch + (((size_t)x * (size_t)a.channels + (size_t)c) << sh);
}

/* Sample at byte offset o of an image of the job's type (shift: 0 uint8, 1
 * uint16, 2 float32), as a float (LDG: through the read-only data cache). */
template <bool LDG>
__device__ __forceinline__ float ic_cu_sample(const uint8_t *base, size_t o, int shift)
{
    if (shift == 2) {
        const float *p = reinterpret_cast<const float *>(base + o);
        return LDG ? __ldg(p) : *p;
    }
    if (shift == 1) {
        const uint16_t *p = reinterpret_cast<const uint16_t *>(base + o);
        return LDG ? (float)__ldg(p) : (float)*p;
    }
    return LDG ? (float)__ldg(base + o) : (float)base[o];
}

/* ic_round_u8's rule (core/border.h) for uint16: clamp to [0, 65535] (NaN ->
 * 0), round to nearest, ties to even. */
__device__ __forceinline__ unsigned short ic_cu_round_u16(float v)
{
    v = fminf(fmaxf(v, 0.0f), 65535.0f);
    return (unsigned short)__float2int_rn(v);
}

/* One channel of the source image as a plane: base, pitch and the distance
 * between neighbouring pixels (1 for SoA, channels for AoS). PM: every sample
 * is read premultiplied, C * A with A the pixel's alpha (last channel; exact in
 * float32), and outside the image under a constant border V * V (the border
 * value stands for colour and alpha alike). */
template <bool PM> struct ic_cu_plane {
    const uint8_t *base;
    const uint8_t *alpha; /* PM: the alpha channel (same offsets as base), else unused */
    size_t pitch;
    int xs; /* bytes from one pixel to the next */
    int w, h, border;
    float border_value;
    int shift; /* sample bytes as a shift: 0 uint8, 1 uint16, 2 float32 */

    __device__ ic_cu_plane(const ic_cuda_args &a, int c)
        : base(a.src + ic_cu_offset(a, a.src_pitch, c, 0, 0)),
          alpha(a.src + ic_cu_offset(a, a.src_pitch, a.channels - 1, 0, 0)), pitch(a.src_pitch),
          xs((a.soa ? 1 : a.channels) << ic_cuda_shift(&a)), w(a.width), h(a.height),
          border(a.border), border_value(PM ? a.border_value * a.border_value : a.border_value),
          shift(ic_cuda_shift(&a))
    {
    }

    /* Sample inside the image; LDG reads through the read-only data cache. */
    template <bool LDG = false> __device__ __forceinline__ float at(int x, int y) const
    {
        const size_t o = (size_t)y * pitch + (size_t)x * (size_t)xs;
        const float v = ic_cu_sample<LDG>(base, o, shift);
        if constexpr (PM)
            return v * ic_cu_sample<LDG>(alpha, o, shift);
        return v;
    }

    /* Sample at any coordinate, mapped by the border mode (core/border.h). */
    template <bool LDG = false> __device__ __forceinline__ float fetch(int x, int y) const
    {
        const int mx = ic_border_map(x, w, border);
        const int my = ic_border_map(y, h, border);
        if (mx < 0 || my < 0)
            return border_value;
        return at<LDG>(mx, my);
    }
};

/* A channel read as it is. */
using ic_cu_src = ic_cu_plane<false>;

/* Writes bias + sum as a sample of the job's type (round half even, clamp;
 * float32 as it is). */
__device__ __forceinline__ void ic_cu_store(const ic_cuda_args &a, int c, int x, int y, float sum)
{
    uint8_t *p = a.dst + ic_cu_offset(a, a.dst_pitch, c, x, y);
    if (a.f32)
        *reinterpret_cast<float *>(p) = sum + a.bias;
    else if (a.u16)
        *reinterpret_cast<uint16_t *>(p) = ic_cu_round_u16(sum + a.bias);
    else
        *p = ic_round_u8(sum + a.bias);
}

/* Premultiplied colour back from its sums (backend.h): FC / FA, 0 where
 * FA <= 0 (also NaN). The same at 16 bits: colour and alpha are both read in
 * levels of the type, so FC / FA is in colour levels. The division is IEEE (correctly rounded), not
 * __fdividef: on opaque windows with exact sums (dyadic weights summing to 1,
 * FA = 255) FC / FA is then exactly the RGB sum, ties included, so opaque
 * RGBA gives the RGB colour. */
__device__ __forceinline__ float ic_cu_unpremultiply(float fc, float fa)
{
    return fa > 0.0f ? fc / fa : 0.0f;
}

/* ic_cu_unpremultiply of a pixel's NC colour sums c[0..NC-1], one
 * reciprocal for them all. The compiler's IEEE division is, behind its range
 * check (FCHK, else a slow-path call): r = MUFU.RCP(FA) refined once, q = FC
 * r, then q + (FC - q FA) r; here the reciprocal and its refinement are
 * shared and each colour takes the last three steps, the same operations on
 * the same values, so each quotient is the division's while FA lies in
 * [2^-100, 2^100] (the range check's fast side for any colour sum that does
 * not round to 0 or saturate either way). Other FA (0, negative, NaN,
 * extreme) take ic_cu_unpremultiply. One reciprocal a pixel, not three
 * divisions with their checks and branches. */
template <int NC> __device__ __forceinline__ void ic_cu_unpremultiply_px(float *c, float fa)
{
    /* FA's bits in [2^-100, 2^100]: positive, normal, neither tiny nor huge */
    if (__float_as_uint(fa) - 0x0D800000u > 0x71800000u - 0x0D800000u) {
#pragma unroll
        for (int k = 0; k < NC; k++)
            c[k] = ic_cu_unpremultiply(c[k], fa);
        return;
    }
    float r;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(fa));
    r = fmaf(r, fmaf(-fa, r, 1.0f), r);
#pragma unroll
    for (int k = 0; k < NC; k++) {
        const float q = c[k] * r;
        c[k] = fmaf(r, fmaf(-fa, q, c[k]), q);
    }
}

/* ---- weights and the inner product ---------------------------------------- */

/* Weights in global memory, read through the read-only cache (seed 000's
 * `const __restrict__` mask). Every thread of a warp reads the same weight. */
struct ic_cu_wglobal {
    const float *__restrict__ p;
    __device__ __forceinline__ float operator[](int i) const
    {
        return __ldg(p + i);
    }
};

/* sum_{j,i} w[j*kw + i] * tap(i, j), row-major, in float32: the correlation
 * of one output sample; tap(i, j) is the input under weight (i, j). */
template <class W, class Tap>
__device__ __forceinline__ float ic_cu_dot(const W &w, int kw, int kh, const Tap &tap)
{
    float acc = 0.0f;
    for (int j = 0; j < kh; j++) {
        const int row = j * kw;
#pragma unroll 4
        for (int i = 0; i < kw; i++)
            acc = fmaf(w[row + i], tap(i, j), acc);
    }
    return acc;
}

/* ---- the kernel and its launcher -------------------------------------------- */

/* The dynamic shared memory of a block (size given at launch). */
extern __shared__ float ic_cu_smem[];

namespace
{ /* one copy per translation unit: no cross-file kernel aliasing */

/* One pass of strategy s over plane `in`: the tile load (every thread loads,
 * even those with no output) and the sum of the thread's sample (0 when it
 * has none). Every thread of the block must call it. */
template <class S, class P, class W>
__device__ __forceinline__ float ic_cu_pass(const ic_cuda_args &a, const S &s, const P &in,
                                            const W &w)
{
    if constexpr (S::kShared) {
        s.load(a, in, ic_cu_smem);
        __syncthreads();
    }
    return s.active ? s.sum(a, in, w, ic_cu_smem) : 0.0f;
}

/* The work of one block: output block (bx, by) of plane c under strategy S,
 * a premultiplied colour plane in two passes. ic_cu_conv_kernel runs it for
 * its own block; the batched generic launch (fast/batch.cu) for the block of
 * the one-image launch that each of its blocks stands for. */
template <class S, class W>
__device__ __forceinline__ void ic_cu_conv_block(const ic_cuda_args &a, int bx, int by, int c,
                                                 const W &w)
{
    const S s(a, bx, by);
    if (a.premultiply && c < a.channels - 1) { /* a colour block (block-uniform) */
        const float fa = ic_cu_pass(a, s, ic_cu_src(a, a.channels - 1), w);
        if constexpr (S::kShared)
            __syncthreads(); /* every thread is done with the alpha tile */
        const float fc = ic_cu_pass(a, s, ic_cu_plane<true>(a, c), w);
        if (s.active)
            ic_cu_store(a, c, s.ox, s.oy, ic_cu_unpremultiply(fc, fa));
        return;
    }
    const float v = ic_cu_pass(a, s, ic_cu_src(a, c), w);
    if (s.active)
        ic_cu_store(a, c, s.ox, s.oy, v);
}

template <class S, class W>
__global__ void __launch_bounds__(S::BX *S::BY) ic_cu_conv_kernel(const ic_cuda_args a, const W w)
{
    ic_cu_conv_block<S>(a, (int)blockIdx.x, a.block_y0 + (int)blockIdx.y, (int)blockIdx.z, w);
}

} // namespace

/* Launches strategy S with weights w over the whole job on stream a.stream:
 * grid (tiles_x, tiles_y, channels), sliced along y when taller than the grid
 * limit. `what` names the kernel in error messages. */
template <class S, class W>
static ic_status ic_cu_launch(ic_cuda_args a, const W &w, const char *what, char *err,
                              size_t errlen)
{
    const size_t smem = S::smem_bytes(a);
    if (smem > IC_CU_SMEM_DEFAULT)
        IC_CUDA_CHECK(cudaFuncSetAttribute(ic_cu_conv_kernel<S, W>,
                                           cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem));
    const unsigned tx = S::tiles_x(a), ty = S::tiles_y(a);
    const dim3 block(S::BX, S::BY, 1);
    void *args[] = {&a, (void *)&w};
    for (unsigned y0 = 0; y0 < ty; y0 += IC_CU_MAX_GRID_Y) {
        const unsigned gy = ty - y0 < IC_CU_MAX_GRID_Y ? ty - y0 : IC_CU_MAX_GRID_Y;
        a.block_y0 = (int)y0;
        const cudaError_t e =
            cudaLaunchKernel(ic_cu_conv_kernel<S, W>, dim3(tx, gy, (unsigned)a.channels), block,
                             args, smem, (cudaStream_t)a.stream);
        (void)cudaGetLastError(); /* the launch's error is e; leave none behind */
        if (e != cudaSuccess)
            return ic_cuda_fail(err, errlen, what, (int)e);
    }
    return IC_OK;
}

static inline unsigned ic_cu_div_up(int n, int d)
{
    return (unsigned)((n + d - 1) / d);
}

/* ---- the direct strategy (seed 003 Fig 7.7 / 7.9, seed 004) --------------------- */

/* One thread per output sample, every tap read from global memory (through
 * the read-only cache); border handling only for windows that leave the image. */
struct ic_cu_direct {
    static constexpr int BX = IC_CU_DIRECT_BX, BY = IC_CU_DIRECT_BY;
    static constexpr bool kShared = false;
    int ox, oy;
    bool active;

    static unsigned tiles_x(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.width, BX);
    }
    static unsigned tiles_y(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.height, BY);
    }
    static size_t smem_bytes(const ic_cuda_args &)
    {
        return 0;
    }

    __device__ ic_cu_direct(const ic_cuda_args &a, int bx, int by)
        : ox(bx * BX + (int)threadIdx.x), oy(by * BY + (int)threadIdx.y),
          active(ox < a.width && oy < a.height)
    {
    }

    template <class P> __device__ void load(const ic_cuda_args &, const P &, float *) const
    {
    }

    template <class P, class W>
    __device__ float sum(const ic_cuda_args &a, const P &in, const W &w, const float *) const
    {
        const int x0 = ox - (a.kw - 1) / 2, y0 = oy - (a.kh - 1) / 2;
        if (x0 >= 0 && y0 >= 0 && x0 + a.kw <= a.width && y0 + a.kh <= a.height)
            return ic_cu_dot(w, a.kw, a.kh,
                             [&](int i, int j) { return in.template at<true>(x0 + i, y0 + j); });
        return ic_cu_dot(w, a.kw, a.kh,
                         [&](int i, int j) { return in.template fetch<true>(x0 + i, y0 + j); });
    }
};

/* The fallback of the shared-memory strategies when their tile does not fit
 * (a template only so that files that do not use it do not build its kernel). */
template <class S = ic_cu_direct>
static ic_status ic_cu_launch_fallback(const ic_cuda_args *a, const char *what, char *err,
                                       size_t errlen)
{
    return ic_cu_launch<S>(*a, ic_cu_wglobal{a->w}, what, err, errlen);
}

/* Writes a one-line plan for strategy S: `what` (kernel and why), then the
 * launch shape. */
template <class S>
static void ic_cu_describe(const ic_cuda_args &a, const char *what, char *buf, size_t buflen)
{
    snprintf(buf, buflen,
             "%s; %dx%d correlation, %dx%d %s x%d: grid %ux%ux%d blocks of %dx%d threads, "
             "%zu bytes of shared memory per block\n",
             what, a.kw, a.kh, a.width, a.height, a.soa ? "SoA" : "AoS", a.channels, S::tiles_x(a),
             S::tiles_y(a), a.channels, S::BX, S::BY, S::smem_bytes(a));
}

/* Defines backend `sym` (name, summary, auto rank, IC_CAP_* caps) on top of
 * the shared host side (cuda_host.cu) and the file's ic_cuda_strategy
 * `strategy`. Every strategy takes device images and uint16 samples (the
 * shared loads and stores above), so those caps are added here. No host_bytes
 * and none of the optional entries (1D, matmul, device count, chain_ops: the
 * `cuda` backend's, fast/plan.cu). */
#define IC_CU_DEFINE_BACKEND(sym, name, summary, rank, caps, strategy)                             \
    static ic_status sym##_run(void *state, const ic_job *job, ic_timing *t, char *err,            \
                               size_t errlen)                                                      \
    {                                                                                              \
        return ic_cuda_run(state, job, &(strategy), NULL, t, err, errlen);                         \
    }                                                                                              \
    static ic_status sym##_explain(void *state, const ic_job *job, char *buf, size_t buflen)       \
    {                                                                                              \
        return ic_cuda_explain(state, job, &(strategy), buf, buflen);                              \
    }                                                                                              \
    extern "C" const ic_backend sym = {name,                                                       \
                                       summary,                                                    \
                                       1,                                                          \
                                       rank,                                                       \
                                       ic_cuda_probe,                                              \
                                       ic_cuda_open,                                               \
                                       ic_cuda_close,                                              \
                                       sym##_run,                                                  \
                                       sym##_explain,                                              \
                                       (caps) | IC_CAP_DEVICE_IMAGES | IC_CAP_U16,                 \
                                       NULL /* host_bytes */,                                      \
                                       NULL /* conv1d */,                                          \
                                       NULL /* matmul_variants */,                                 \
                                       NULL /* matmul */,                                          \
                                       NULL /* device_count */,                                    \
                                       ic_cuda_plan,                                               \
                                       NULL /* run_batch */,                                       \
                                       NULL /* chain_ops */}

/* ---- the halo tile of cuda-tiled-out and cuda-tiled-halo ---------------------- */

/* Block = T x T output samples; shared memory holds their input window, the
 * (T + kw - 1) x (T + kh - 1) tile including the halo, border-mapped on load.
 * How the tile is loaded is the strategy's (derived struct's) business. */
template <int T> struct ic_cu_halo_tile {
    static constexpr int BX = T, BY = T;
    static constexpr bool kShared = true;
    int x0, y0; /* image coordinates of tile element (0, 0) */
    int tw, th; /* tile width and height */
    int ox, oy;
    bool active;

    static unsigned tiles_x(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.width, T);
    }
    static unsigned tiles_y(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.height, T);
    }
    static size_t smem_bytes(const ic_cuda_args &a)
    {
        return (size_t)(T + a.kw - 1) * (size_t)(T + a.kh - 1) * sizeof(float);
    }
    /* Whether the tile fits the device's shared memory (else: fallback). */
    static bool fits(const ic_cuda_args &a)
    {
        return smem_bytes(a) <= a.smem_optin;
    }

    __device__ ic_cu_halo_tile(const ic_cuda_args &a, int bx, int by)
        : x0(bx * T - (a.kw - 1) / 2), y0(by * T - (a.kh - 1) / 2), tw(T + a.kw - 1),
          th(T + a.kh - 1), ox(bx * T + (int)threadIdx.x), oy(by * T + (int)threadIdx.y),
          active(ox < a.width && oy < a.height)
    {
    }

    /* Loads the tile rectangle rows [r0, r0+rh) x cols [c0, c0+rw): thread
     * (tx, ty) takes rows ty, ty+T, ... and cols tx, tx+T, ... of it. */
    template <class P>
    __device__ void load_rect(const P &in, float *s, int r0, int c0, int rh, int rw) const
    {
        for (int r = (int)threadIdx.y; r < rh; r += T)
            for (int c = (int)threadIdx.x; c < rw; c += T)
                s[(r0 + r) * tw + c0 + c] = in.fetch(x0 + c0 + c, y0 + r0 + r);
    }

    template <class P, class W>
    __device__ float sum(const ic_cuda_args &a, const P &, const W &w, const float *s) const
    {
        const float *t = s + (int)threadIdx.y * tw + (int)threadIdx.x;
        return ic_cu_dot(w, a.kw, a.kh, [&](int i, int j) { return t[j * tw + i]; });
    }
};

#endif /* IC_CUDA_COMMON_CUH */
