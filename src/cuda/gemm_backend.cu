/*
 * gemm_backend.cu - backend "cuda-gemm": 2D convolution lowered to a matrix
 * product, as cuDNN once did ("im2col"), on seed 002's tiled matrix product.
 *
 * For each channel plane, the pixels are taken in chunks of P; a chunk becomes
 * a column matrix Col (P x kw*kh, row-major): row p holds the kw*kh input
 * samples under the kernel window of pixel p, in the weights' row-major order,
 * each fetched through ic_border_map (cuda_common.cuh's ic_cu_src::fetch) so
 * the border rules are applied while the matrix is built. The correlation of
 * the chunk is then the product Col * w (w the kw*kh x 1 weight column), done
 * by the tiled kernel of matmul.cu (its single-column tile shape), and a last
 * kernel adds the bias and rounds to uint8 (ic_cu_store). Col has kw*kh times
 * as many entries as the image: that memory traffic is the price this lowering
 * pays, and what the benchmark's memory-levels table shows. Chunks keep Col
 * under IC_GEMM_COL_FLOATS floats (256 MB), so an 8K image with a 15x15 kernel
 * runs in about 120 chunks per channel instead of needing 30 GB.
 *
 * Upload, download, device images, timing and the banded asynchronous path are
 * the shared host side of the strategy backends (cuda_host.cu, cuda_async.cu).
 * Col and the product column are allocated per launch, stream-ordered
 * (cudaMallocAsync, within the timed kernel stage): ic_cuda_strategy has no
 * per-context slot for them.
 */
#include <stdio.h>

#include "cuda/cuda_common.cuh"
#include "cuda/matmul.h"

/* Largest column matrix, in floats (256 MB). */
#define IC_GEMM_COL_FLOATS ((size_t)64 << 20)

namespace {

constexpr int kThreads = 256;
constexpr unsigned kMaxBlocks = 65535u * 16u;

/* One chunk of one plane: `count` pixels starting at pixel (x0, y0) in
 * row-major order (a chunk may span rows and end mid-row). */
struct chunk {
    int c, x0, y0, count;
};

/* Pixel `row` of the chunk as image coordinates. */
__device__ __forceinline__ void chunk_pixel(const ic_cuda_args &a, const chunk &ch, int row, int &x,
                                            int &y)
{
    const int q = ch.x0 + row; /* < width + count, fits in an int */
    y = ch.y0 + q / a.width;
    x = q % a.width;
}

/* Col[row][j*kw + i] = sample under weight (i, j) of the window of pixel row. */
__global__ void __launch_bounds__(kThreads)
    im2col(const ic_cuda_args a, const chunk ch, float *__restrict__ col)
{
    const ic_cu_src in(a, ch.c);
    const int kk = a.kw * a.kh, rx = (a.kw - 1) / 2, ry = (a.kh - 1) / 2;
    const int total = ch.count * kk; /* <= IC_GEMM_COL_FLOATS */
    for (int e = (int)(blockIdx.x * blockDim.x + threadIdx.x); e < total;
         e += (int)(gridDim.x * blockDim.x)) {
        const int row = e / kk, t = e - row * kk;
        const int j = t / a.kw, i = t - j * a.kw;
        int x, y;
        chunk_pixel(a, ch, row, x, y);
        col[e] = in.fetch<true>(x + i - rx, y + j - ry);
    }
}

/* dst(pixel row) = round(bias + prod[row]). */
__global__ void __launch_bounds__(kThreads)
    store_chunk(const ic_cuda_args a, const chunk ch, const float *__restrict__ prod)
{
    for (int row = (int)(blockIdx.x * blockDim.x + threadIdx.x); row < ch.count;
         row += (int)(gridDim.x * blockDim.x)) {
        int x, y;
        chunk_pixel(a, ch, row, x, y);
        ic_cu_store(a, ch.c, x, y, prod[row]);
    }
}

unsigned blocks_for(long long n)
{
    const long long b = (n + kThreads - 1) / kThreads;
    return b < (long long)kMaxBlocks ? (unsigned)b : kMaxBlocks;
}

/* Pixels per chunk for this job. */
int chunk_pixels(const ic_cuda_args &a)
{
    const size_t kk = (size_t)a.kw * (size_t)a.kh;
    const size_t plane = (size_t)a.width * (size_t)a.height;
    size_t p = IC_GEMM_COL_FLOATS / kk; /* >= 1032: kk <= 255*255 */
    return (int)(plane < p ? plane : p);
}

/* The scratch of one launch, stream-ordered on the launch's stream (bands of
 * the asynchronous path run on several streams); plain cudaMalloc where the
 * device has no stream-ordered allocator. Freed on every path. */
struct gemm_bufs {
    cudaStream_t stream;
    bool async = true;
    float *col = nullptr, *prod = nullptr;

    explicit gemm_bufs(cudaStream_t s) : stream(s) {}
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
    const int per = chunk_pixels(*a);
    const cudaStream_t stream = (cudaStream_t)a->stream;
    gemm_bufs d(stream);
    IC_CUDA_CHECK(d.alloc(&d.col, (size_t)per * (size_t)kk));
    IC_CUDA_CHECK(d.alloc(&d.prod, (size_t)per));
    const size_t plane = (size_t)a->width * (size_t)a->height;
    for (int c = 0; c < a->channels; c++)
        for (size_t p0 = 0; p0 < plane; p0 += (size_t)per) {
            const size_t left = plane - p0;
            const chunk ch = {c, (int)(p0 % (size_t)a->width), (int)(p0 / (size_t)a->width),
                              (int)(left < (size_t)per ? left : (size_t)per)};
            im2col<<<blocks_for((long long)ch.count * kk), kThreads, 0, stream>>>(*a, ch, d.col);
            cudaError_t e = cudaGetLastError();
            if (e != cudaSuccess)
                return ic_cuda_fail(err, errlen, "cuda-gemm im2col launch", (int)e);
            const ic_status s = ic__matmul_dev(IC_MM_FAST, d.col, a->w, d.prod, ch.count, kk, 1,
                                               a->stream, err, errlen);
            if (s != IC_OK)
                return s;
            store_chunk<<<blocks_for(ch.count), kThreads, 0, stream>>>(*a, ch, d.prod);
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
    const int per = chunk_pixels(*a);
    const size_t plane = (size_t)a->width * (size_t)a->height;
    const size_t chunks = (plane + (size_t)per - 1) / (size_t)per;
    snprintf(buf, buflen,
             "cuda-gemm: im2col + matrix product; %dx%d correlation, %dx%d %s x%d: per channel "
             "%zu chunk(s) of up to %d pixels, each a %d x %d column matrix (%.1f MB) times the "
             "%d x 1 weights (%s)\n",
             a->kw, a->kh, a->width, a->height, a->soa ? "SoA" : "AoS", a->channels, chunks, per,
             per, kk, (double)per * kk * sizeof(float) / 1e6, kk,
             ic__matmul_shape(IC_MM_FAST, per, kk, 1));
}

const ic_cuda_strategy strategy = {"cuda-gemm (im2col + tiled matmul)", NULL, launch, describe};

} // namespace

IC_CU_DEFINE_BACKEND(ic_backend_cuda_gemm, "cuda-gemm",
                     "CUDA, convolution as a matrix product: im2col column matrix in global "
                     "memory times the weights, tiled shared-memory matmul",
                     30, strategy);
