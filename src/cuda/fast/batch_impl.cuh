/*
 * batch_impl.cuh - the batched launches of the cuda fast path:
 * many images filtered by one kernel launch per method. The host side
 * (batch.cu) lays the images' blocks end to end in a one-dimensional grid and
 * gives each launch a small table, one batch_img per image: its pointers,
 * pitches and size, and the index of its first block. A batch of up to
 * PARAM_CAP images passes its table in the launches' parameters (tab_par:
 * the constant bank, no upload); a larger one uploads it to device memory
 * (tab_dev). A block finds its image by one division where every image of
 * the launch has the same number of blocks (the usual batch of one size),
 * else by a binary search over the first-block indices (every thread of the
 * block reads the same entries: constant-cache hits, or L1 hits in the
 * uploaded table), turns its offset into the (x, y, plane) block index that
 * the one-image launch would have given it (divisions by the image's grid
 * width and height as multiplications by reciprocals the host computed),
 * and does exactly that block's work: rows_body (rows_impl.cuh) for the rows
 * method, the one-thread-per-sample body of cuda_common.cuh for the generic
 * method. Where the table lives changes nothing else. So every output
 * sample is computed by the same instructions, in the same order, as by the
 * one-image launch: the batch equals the image-by-image loop bit for bit.
 *
 * The rows images of a batch take up to two launches: one for the images
 * whose own plan keeps the full K x K sum (ROWS0 rows per thread: the count
 * does not change any result) and, when the kernel factors, one for those
 * whose plan takes the separable passes of rank RANK at 4 rows per thread
 * (a separable 3x3 at 8, rows_roll)
 * (the per-image planner decides per image size, plan.cu). Each kernel
 * carries one body (one kernel with both took the compile time of both
 * for each of its instantiations, and its registers were bounded by the
 * larger one). The kernels of one kernel size and channel step are
 * instantiated by one part file, batch_rows_k<K>_s<STEP>.cu, so that the
 * build compiles them in parallel.
 */
#ifndef IC_CUDA_FAST_BATCH_IMPL_CUH
#define IC_CUDA_FAST_BATCH_IMPL_CUH

#include <type_traits>

#include "cuda/fast/rows_impl.cuh"

namespace icf_batch
{

/* One image of a batched launch, as the blocks read it. */
struct batch_img {
    const uint8_t *src;
    uint8_t *dst;
    size_t src_pitch, dst_pitch;
    long long first; /* index of the image's first block in its launch */
    int width, height;
    unsigned bx, by;             /* blocks per grid row and grid rows of its own launch */
    unsigned long long mbx, mby; /* ic_cu_magic(bx), ic_cu_magic(by) */
    icf_rows::rows_edges e;      /* rows: where its edge outputs are */
};

/* Images whose table a launch carries in its parameters (tab_par); a larger
 * batch uploads its table (tab_dev). 64 entries of 128 bytes: 8208 bytes,
 * about 8.7 KB with the shared arguments and 9x9 weights, which needs CUDA 12.1 and
 * sm_70 or later (up to 32764 bytes of parameters; 4 KB before):
 * CMakeLists.txt sets IC_BATCH_PARAM_CAP=0 (the upload for every batch) for
 * older compilers or architectures, and batch.cu asks the driver for 12.1. */
#ifndef IC_BATCH_PARAM_CAP
#define IC_BATCH_PARAM_CAP 64
#endif
constexpr int PARAM_CAP = IC_BATCH_PARAM_CAP;
#if IC_BATCH_PARAM_CAP > 0 && defined(__CUDA_ARCH__) && __CUDA_ARCH__ < 700
#error "batched tables in kernel parameters need sm_70 or later: build with IC_BATCH_PARAM_CAP=0"
#endif

/* Where a launch's blocks read its table: one kernel body for both, each
 * source a kernel parameter (__grid_constant__, so that the body may take
 * the address of an entry without a local copy of the parameter). */

/* The table in device memory, uploaded by the host: n entries at t; nb > 0
 * when every image has nb blocks (mnb = ic_cu_magic(nb)). */
struct tab_dev {
    const batch_img *t;
    int n;
    unsigned nb;
    unsigned long long mnb;
    __device__ __forceinline__ long long first(int i) const
    {
        return __ldg(&t[i].first);
    }
    __device__ __forceinline__ const batch_img &at(int i) const
    {
        return t[i];
    }
};

/* The table in the parameters themselves: n <= CAP entries (constant-bank
 * loads). */
template <int CAP> struct tab_par {
    int n;
    unsigned nb; /* as tab_dev's */
    unsigned long long mnb;
    batch_img t[CAP];
    __device__ __forceinline__ long long first(int i) const
    {
        return t[i].first;
    }
    __device__ __forceinline__ const batch_img &at(int i) const
    {
        return t[i];
    }
};

/* A launch's table as the host hands it over: dev, when the table was
 * uploaded there; else the n entries at host go into the parameters (n <=
 * PARAM_CAP). */
struct batch_tab {
    const batch_img *host;
    const batch_img *dev;
    int n;
    unsigned nb; /* blocks of every image when they are equal, else 0 */
};

#if IC_BATCH_PARAM_CAP > 0
using tab_cap = tab_par<PARAM_CAP>;
static_assert(sizeof(tab_cap) + sizeof(ic_cuda_args) + sizeof(icf_rows::rows_w<9, 0>) <= 32764,
              "a batched launch's parameters exceed CUDA's 32764 bytes");

/* The parameter table of t (t.n <= PARAM_CAP); the unused entries zero. */
inline void tab_fill(tab_cap *p, const batch_tab &t)
{
    memset(p, 0, sizeof *p);
    p->n = t.n;
    p->nb = t.nb;
    p->mnb = ic_cu_magic(t.nb);
    memcpy(p->t, t.host, (size_t)t.n * sizeof(batch_img));
}
#endif

/* Calls launch(table) with t's table where it lives (the uploaded copy,
 * else a parameter copy), then checks the launch; `what` names it. */
template <class L>
ic_status launch_with_table(const batch_tab &t, L launch, const char *what, char *err,
                            size_t errlen)
{
    if (t.dev) {
        launch(tab_dev{t.dev, t.n, t.nb, ic_cu_magic(t.nb)});
    } else {
#if IC_BATCH_PARAM_CAP > 0
        tab_cap tp;
        tab_fill(&tp, t);
        launch(tp);
#else
        return ic_cuda_fail(err, errlen, what, (int)cudaErrorInvalidValue); /* no table */
#endif
    }
    const cudaError_t ce = cudaGetLastError();
    return ce != cudaSuccess ? ic_cuda_fail(err, errlen, what, (int)ce) : IC_OK;
}

/* The image block b belongs to: the last one whose first block is <= b. */
template <class TAB> __device__ __forceinline__ int batch_find(const TAB &t, long long b)
{
    if (t.nb) /* every image t.nb blocks */
        return (int)ic_cu_fast_div((unsigned)b, t.nb, t.mnb);
    int lo = 0, hi = t.n - 1;
    while (lo < hi) {
        const int mid = (lo + hi + 1) >> 1;
        if (t.first(mid) <= b)
            lo = mid;
        else
            hi = mid - 1;
    }
    return lo;
}

/* The one-image arguments of image d: the batch's shared ones with its
 * pointers, pitches and size. */
__device__ __forceinline__ ic_cuda_args batch_args(const ic_cuda_args &base, const batch_img &d)
{
    ic_cuda_args a = base;
    a.src = d.src;
    a.dst = d.dst;
    a.src_pitch = d.src_pitch;
    a.dst_pitch = d.dst_pitch;
    a.width = d.width;
    a.height = d.height;
    a.block_y0 = 0;
    return a;
}

/* Block b's place in its image's own grid. */
__device__ __forceinline__ void batch_block(const batch_img &d, long long b, unsigned *bx,
                                            unsigned *by, unsigned *bz)
{
    const unsigned local = (unsigned)(b - d.first);
    const unsigned rest = ic_cu_fast_div(local, d.bx, d.mbx);
    *bx = local - rest * d.bx;
    *bz = ic_cu_fast_div(rest, d.by, d.mby);
    *by = rest - *bz * d.by;
}

/* Blocks per SM of a batched rows kernel: those of its body, one fewer for
 * RGBA (the image's arguments live in registers here, not in the parameter
 * bank: at the one-image kernel's 64 registers the RGBA bodies spilled
 * 1.2-2.4 KB per thread, ptxas -v). Its blocks keep BY rows of threads
 * (128-thread blocks double the blocks, each finding its image, which
 * measured slower on a batch of small images). */
template <int K, int STEP, int ROWS> constexpr int batch_min_blocks()
{
    return (STEP == 4 ? -1 : 0) + icf_rows::rows_min_blocks<K, ROWS>();
}

template <int K, int STEP, int RANK, int ROWS, class TAB, bool FAST = false>
__global__ void __launch_bounds__(icf_rows::BX *icf_rows::BY, (batch_min_blocks<K, STEP, ROWS>()))
    batch_rows_kernel(const ic_cuda_args base, const icf_rows::rows_w<K, RANK> w,
                      const __grid_constant__ TAB tab)
{
    const long long b = blockIdx.x;
    const batch_img &d = tab.at(batch_find(tab, b));
    const ic_cuda_args a = batch_args(base, d);
    unsigned bx, by, bz;
    batch_block(d, b, &bx, &by, &bz);
    icf_rows::rows_body<K, STEP, RANK, ROWS, icf_rows::BY, false, FAST>(a, w, d.e, bx, by, bz);
}

/* One rows launch of a batch: the images of t, `blocks` blocks in all. */
template <int K, int STEP, int RANK, int ROWS>
ic_status rows_go(const ic_cuda_args *base, const float *w, const float *row, const float *col,
                  const batch_tab &t, unsigned blocks, char *err, size_t errlen)
{
    icf_rows::rows_w<K, RANK> p;
    icf_rows::rows_weights<K, RANK>(&p, w, row, col);
    icf_rows::rows_fast(&p, base->bias);
    const dim3 block(icf_rows::BX, icf_rows::BY);
    const cudaStream_t stream = (cudaStream_t)base->stream;
    return launch_with_table(
        t,
        [&](const auto &tab) {
            using TAB = std::decay_t<decltype(tab)>;
            /* rows_fast's weights: their own kernel (rows_kernel) */
            if constexpr (K == 3 && RANK == 1) {
                if (p.fast) {
                    batch_rows_kernel<K, STEP, RANK, ROWS, TAB, true>
                        <<<blocks, block, 0, stream>>>(*base, p, tab);
                    return;
                }
            }
            batch_rows_kernel<K, STEP, RANK, ROWS, TAB>
                <<<blocks, block, 0, stream>>>(*base, p, tab);
        },
        "cuda fast batched rows kernel launch", err, errlen);
}

/* The rows launch of channel step STEP (instantiated by the part files):
 * rank 0, the full sum at `rows` rows per thread (4 only for 3x3, else 2);
 * else the separable passes of that rank at 4, or for a separable 3x3 at
 * `rows` (8: rows_roll). */
template <int K, int STEP>
ic_status rows_go_s(const ic_cuda_args *base, const float *w, const float *row, const float *col,
                    int rank, int rows, const batch_tab &t, unsigned blocks, char *err,
                    size_t errlen)
{
    switch (rank) {
    case 0:
        if constexpr (K == 3)
            if (rows == 4)
                return rows_go<K, STEP, 0, 4>(base, w, row, col, t, blocks, err, errlen);
        return rows_go<K, STEP, 0, 2>(base, w, row, col, t, blocks, err, errlen);
    case 1:
        if constexpr (K == 3)
            if (rows == 8)
                return rows_go<K, STEP, 1, 8>(base, w, row, col, t, blocks, err, errlen);
        return rows_go<K, STEP, 1, 4>(base, w, row, col, t, blocks, err, errlen);
    default:
        return rows_go<K, STEP, 2, 4>(base, w, row, col, t, blocks, err, errlen);
    }
}

/* The rows launch for kernel size K over n images of one rank (see
 * rows_go_s). */
template <int K>
ic_status rows_launch(const ic_cuda_args *base, const float *w, const float *row, const float *col,
                      int rank, int rows, const batch_tab &t, unsigned blocks, char *err,
                      size_t errlen)
{
    switch (base->soa ? 1 : base->channels) {
    case 1:
        return rows_go_s<K, 1>(base, w, row, col, rank, rows, t, blocks, err, errlen);
    case 2:
        return rows_go_s<K, 2>(base, w, row, col, rank, rows, t, blocks, err, errlen);
    case 3:
        return rows_go_s<K, 3>(base, w, row, col, rank, rows, t, blocks, err, errlen);
    default:
        return rows_go_s<K, 4>(base, w, row, col, rank, rows, t, blocks, err, errlen);
    }
}

} // namespace icf_batch

/* Names the batched rows launches of one kernel size and channel step: a
 * part file writes IC_BATCH_ROWS(template, K, STEP); to instantiate them,
 * batch.cu IC_BATCH_ROWS(extern template, K, STEP); for every pair. */
#define IC_BATCH_ROWS(PREFIX, K, STEP)                                                             \
    PREFIX ic_status icf_batch::rows_go_s<K, STEP>(                                                \
        const ic_cuda_args *base, const float *w, const float *row, const float *col, int rank,    \
        int rows, const icf_batch::batch_tab &t, unsigned blocks, char *err, size_t errlen)

#endif
