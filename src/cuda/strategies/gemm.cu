/*
 * gemm.cu - backend "cuda-gemm": 2D convolution lowered to a matrix
 * product, as cuDNN once did ("im2col"), on seed 002's tiled matrix product.
 *
 * For each channel plane, the image is taken in chunks of P pixels (whole rows,
 * or pieces of one row when a single row is too long); a chunk becomes a
 * column matrix Col (kw*kh x P, row-major): row t holds, for every pixel of the
 * chunk, the input sample under weight t = j*kw + i of its window, fetched
 * through ic_border_map (cuda_common.cuh's ic_cu_src::fetch), so the border
 * rules are applied while the matrix is built. The correlation of the chunk is
 * then the product w * Col (w the 1 x kw*kh row of weights), done by the tiled
 * kernel of matmul_cuda.cu (its single-row tile shape), and a last kernel adds the
 * bias and rounds to uint8 (ic_cu_store). Keeping Col tap-major (one row per
 * weight) lets every block of the im2col kernel work on one tap and one image
 * row, so no thread divides to find its pixel and both the reads of the image
 * and the writes of Col are contiguous; the product reads Col row by row.
 *
 * Col has kw*kh times as many entries as the image: that memory traffic is the
 * price this lowering pays, and what the benchmark's memory-levels table
 * shows. Chunks keep Col under IC_GEMM_COL_FLOATS floats (256 MB), so an 8K
 * image with a 15x15 kernel runs in 114 chunks of 38 rows per channel instead
 * of needing 30 GB.
 *
 * Upload, download, device images, timing and the banded asynchronous path are
 * the shared host side of the strategy backends (cuda_host.cu, cuda_async.cu).
 * Col and the product row are allocated per launch, stream-ordered
 * (cudaMallocAsync, within the timed kernel stage): ic_cuda_strategy has no
 * per-context slot for them.
 */
#include <stdio.h>

#include "cuda/cuda_common.cuh"
#include "exercises/matmul_cuda.h"

/* Largest column matrix, in floats (256 MB). */
#define IC_GEMM_COL_FLOATS ((size_t)64 << 20)

namespace
{

constexpr int kMaxThreads = 256;
constexpr unsigned kMaxGridY = 65535u;

/* One chunk of one plane: `rows` rows from y0, columns [x0, x0 + xlen) of
 * each: whole rows (x0 = 0, xlen = width), or a piece of a single row. */
struct chunk {
    int c, y0, rows, x0, xlen;
};

/* How a plane is cut: rows per chunk and pixels per row piece. */
struct chunk_plan {
    int rows; /* rows per chunk (1 when rows are cut into pieces) */
    int xlen; /* pixels per piece (width when rows are whole) */
};

chunk_plan plan_chunks(const ic_cuda_args &a)
{
    const size_t kk = (size_t)a.kw * (size_t)a.kh;
    const size_t row = (size_t)a.width * kk;
    chunk_plan p;
    if (row <= IC_GEMM_COL_FLOATS) {
        size_t rows = IC_GEMM_COL_FLOATS / row;
        rows = rows < (size_t)a.height ? rows : (size_t)a.height;
        p.rows = (int)(rows < kMaxGridY ? rows : kMaxGridY);
        p.xlen = a.width;
    } else {
        p.rows = 1;
        p.xlen = (int)(IC_GEMM_COL_FLOATS / kk); /* >= 1032: kk <= 255*255 */
    }
    return p;
}

/* Col[t][r*xlen + xi] = the sample under weight t of pixel (x0+xi, y0+r).
 * Grid: x along the row piece, y = chunk row r, z = tap t. */
__global__ void __launch_bounds__(kMaxThreads)
    im2col(const ic_cuda_args a, const chunk ch, float *__restrict__ col)
{
    const ic_cu_src in(a, ch.c);
    const int t = (int)blockIdx.z, r = (int)blockIdx.y;
    const int j = t / a.kw, i = t - j * a.kw;
    const int y = ch.y0 + r + j - (a.kh - 1) / 2;
    const int x = ch.x0 + i - (a.kw - 1) / 2;
    float *out = col + (size_t)t * ((size_t)ch.rows * ch.xlen) + (size_t)r * ch.xlen;
    for (int xi = (int)(blockIdx.x * blockDim.x + threadIdx.x); xi < ch.xlen;
         xi += (int)(gridDim.x * blockDim.x))
        out[xi] = in.fetch<true>(x + xi, y);
}

/* dst(x0+xi, y0+r) = round(bias + prod[r*xlen + xi]). Grid: x along the row
 * piece, y = chunk row r. */
__global__ void __launch_bounds__(kMaxThreads)
    store_chunk(const ic_cuda_args a, const chunk ch, const float *__restrict__ prod)
{
    const int r = (int)blockIdx.y;
    const float *in = prod + (size_t)r * ch.xlen;
    for (int xi = (int)(blockIdx.x * blockDim.x + threadIdx.x); xi < ch.xlen;
         xi += (int)(gridDim.x * blockDim.x))
        ic_cu_store(a, ch.c, ch.x0 + xi, ch.y0 + r, in[xi]);
}

/* Threads per block for a row piece of xlen pixels: whole warps, at most 256. */
int block_threads(int xlen)
{
    const int t = (xlen + 31) / 32 * 32;
    return t < kMaxThreads ? t : kMaxThreads;
}

/* The scratch of one launch, stream-ordered on the launch's stream (bands of
 * the asynchronous path run on several streams); plain cudaMalloc where the
 * device has no stream-ordered allocator. Freed on every path. */
struct gemm_bufs {
    cudaStream_t stream;
    bool async = true;
    float *col = nullptr, *prod = nullptr;

    explicit gemm_bufs(cudaStream_t s) : stream(s)
    {
    }
    cudaError_t alloc(float **p, size_t floats)
    {
        if (async) {
            const cudaError_t e = cudaMallocAsync((void **)p, floats * sizeof(float), stream);
            if (e != cudaErrorNotSupported)
                return e;
            (void)cudaGetLastError();
            async = false;
        }
        return cudaMalloc((void **)p, floats * sizeof(float));
    }
    void release(float *p)
    {
        if (p)
            (void)(async ? cudaFreeAsync(p, stream) : cudaFree(p));
    }
    ~gemm_bufs()
    {
        release(col);
        release(prod);
    }
};

ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    const int kk = a->kw * a->kh;
    const chunk_plan plan = plan_chunks(*a);
    const size_t per = (size_t)plan.rows * (size_t)plan.xlen; /* <= IC_GEMM_COL_FLOATS / kk */
    const cudaStream_t stream = (cudaStream_t)a->stream;
    gemm_bufs d(stream);
    IC_CUDA_CHECK(d.alloc(&d.col, per * (size_t)kk));
    IC_CUDA_CHECK(d.alloc(&d.prod, per));
    for (int c = 0; c < a->channels; c++)
        for (int y0 = 0; y0 < a->height; y0 += plan.rows)
            for (int x0 = 0; x0 < a->width; x0 += plan.xlen) {
                const int rows = a->height - y0 < plan.rows ? a->height - y0 : plan.rows;
                const int xlen = a->width - x0 < plan.xlen ? a->width - x0 : plan.xlen;
                const chunk ch = {c, y0, rows, x0, xlen};
                const int threads = block_threads(xlen);
                const unsigned bx = (unsigned)((xlen + threads - 1) / threads);
                im2col<<<dim3(bx, (unsigned)rows, (unsigned)kk), threads, 0, stream>>>(*a, ch,
                                                                                       d.col);
                cudaError_t e = cudaGetLastError();
                if (e != cudaSuccess)
                    return ic_cuda_fail(err, errlen, "cuda-gemm im2col launch", (int)e);
                const ic_status s = ic__matmul_dev(IC_MM_FAST, a->w, d.col, d.prod, 1, kk,
                                                   rows * xlen, a->stream, err, errlen);
                if (s != IC_OK)
                    return s;
                store_chunk<<<dim3(bx, (unsigned)rows), threads, 0, stream>>>(*a, ch, d.prod);
                e = cudaGetLastError();
                if (e != cudaSuccess)
                    return ic_cuda_fail(err, errlen, "cuda-gemm store launch", (int)e);
            }
    /* faults inside the kernels surface at the caller's synchronisation,
     * named after the strategy */
    return IC_OK;
}

/* The plan, for --explain. */
void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    const int kk = a->kw * a->kh;
    const chunk_plan plan = plan_chunks(*a);
    const size_t per = (size_t)plan.rows * (size_t)plan.xlen;
    const size_t chunks = (size_t)((a->height + plan.rows - 1) / plan.rows) *
                          (size_t)((a->width + plan.xlen - 1) / plan.xlen);
    snprintf(buf, buflen,
             "cuda-gemm: im2col + matrix product; %dx%d correlation, %dx%d %s x%d: per channel "
             "%zu chunk(s) of %d row(s) x %d pixels, each a %d x %zu column matrix (%.1f MB) "
             "multiplied by the 1 x %d weights (%s)\n",
             a->kw, a->kh, a->width, a->height, a->soa ? "SoA" : "AoS", a->channels, chunks,
             plan.rows, plan.xlen, kk, per, (double)per * kk * sizeof(float) / 1e6, kk,
             ic__matmul_shape(IC_MM_FAST, 1, kk, (int)per));
}

const ic_cuda_strategy strategy = {"cuda-gemm (im2col + tiled matmul)", NULL, launch, describe};

} // namespace

IC_CU_DEFINE_BACKEND(ic_backend_cuda_gemm, "cuda-gemm",
                     "CUDA, convolution as a matrix product: im2col column matrix in global "
                     "memory times the weights, tiled shared-memory matmul",
                     30, 0, strategy);
