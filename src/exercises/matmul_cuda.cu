/*
 * matmul_cuda.cu - the CUDA matrix product behind ic_matmul and backend cuda-gemm:
 * seed 002's naive kernel (one thread per entry of C, A and B read from global
 * memory) and its shared-memory tiled kernel, for any M, K, N.
 *
 * The tiled kernel is ONE template, mm_tiled<BM, BN, BK, TM, TN>: a block
 * computes a BM x BN tile of C; for each step of BK along k it copies a BM x BK
 * tile of A and a BK x BN tile of B into shared memory (zeros past the edges of
 * the matrices, so no size has to be a multiple of a tile), synchronises, adds
 * the BK products to its accumulators, and synchronises again before the next
 * copy (seed 002's "sincronizzare -1-" and "-2-"). Each thread owns TM x TN
 * entries of the tile, spaced BM/TM rows and BN/TN columns apart so that a
 * warp reads consecutive shared-memory words. With <16,16,16,1,1> this is
 * exactly the seed's kernel (16x16 threads, one entry each); the larger shapes
 * add register blocking: a value read from shared memory feeds TM or TN
 * multiply-adds instead of one. A is kept transposed in shared memory (As[k][m],
 * one padding column against bank conflicts), so that both operands of the
 * inner loop are read along a row.
 *
 * Grids larger than the launch limits are walked by each block in strides,
 * so any shape that fits in device memory runs.
 */
#include <stdio.h>

#include "cuda/cuda_common.cuh"
#include "exercises/matmul_cuda.h"

namespace
{

constexpr int kNaiveBlock = 16; /* seed 002's BLOCK_SIZE */
constexpr unsigned kMaxGridX = 0x7fffffffu;
constexpr unsigned kMaxGridY = 65535u;

__global__ void __launch_bounds__(kNaiveBlock *kNaiveBlock)
    mm_naive(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M,
             int K, int N)
{
    for (long long row = (long long)blockIdx.y * kNaiveBlock + threadIdx.y; row < M;
         row += (long long)gridDim.y * kNaiveBlock)
        for (long long col = (long long)blockIdx.x * kNaiveBlock + threadIdx.x; col < N;
             col += (long long)gridDim.x * kNaiveBlock) {
            float val = 0.0f;
            for (int k = 0; k < K; k++)
                val = fmaf(A[row * K + k], B[(long long)k * N + col], val);
            C[row * N + col] = val;
        }
}

/* Shapes with one entry per thread are memory-bound: ask for enough resident
 * blocks (registers <= 128) to keep many loads in flight. */
template <int BM, int BN, int BK, int TM, int TN>
__global__ void __launch_bounds__((BM / TM) * (BN / TN),
                                  TM *TN == 1 ? 512 / ((BM / TM) * (BN / TN)) : 1)
    mm_tiled(const float *__restrict__ A, const float *__restrict__ B, float *__restrict__ C, int M,
             int K, int N)
{
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    static_assert(BM % TM == 0 && BN % TN == 0, "tile must split evenly between threads");
    __shared__ float As[BK][BM + 1];
    __shared__ float Bs[BK][BN];
    const int tid = (int)threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;
    const long long tiles_m = (M + BM - 1) / BM, tiles_n = (N + BN - 1) / BN;

    for (long long tm = blockIdx.y; tm < tiles_m; tm += gridDim.y)
        for (long long tn = blockIdx.x; tn < tiles_n; tn += gridDim.x) {
            const long long m0 = tm * BM, n0 = tn * BN;
            float acc[TM][TN];
#pragma unroll
            for (int i = 0; i < TM; i++)
#pragma unroll
                for (int j = 0; j < TN; j++)
                    acc[i][j] = 0.0f;

            for (int k0 = 0; k0 < K; k0 += BK) {
                /* copy the tiles; consecutive threads take consecutive k of A
                 * and consecutive n of B, i.e. contiguous global addresses */
#pragma unroll
                for (int l = 0; l < (BM * BK + NT - 1) / NT; l++) {
                    const int e = tid + l * NT;
                    if ((BM * BK) % NT == 0 || e < BM * BK) {
                        const int m = e / BK, k = e % BK;
                        const long long gm = m0 + m;
                        const int gk = k0 + k;
                        As[k][m] = (gm < M && gk < K) ? A[gm * K + gk] : 0.0f;
                    }
                }
#pragma unroll
                for (int l = 0; l < (BK * BN + NT - 1) / NT; l++) {
                    const int e = tid + l * NT;
                    if ((BK * BN) % NT == 0 || e < BK * BN) {
                        const int k = e / BN, n = e % BN;
                        const int gk = k0 + k;
                        const long long gn = n0 + n;
                        Bs[k][n] = (gk < K && gn < N) ? B[(long long)gk * N + gn] : 0.0f;
                    }
                }
                __syncthreads();
#pragma unroll
                for (int kk = 0; kk < BK; kk++) {
                    float a[TM], b[TN];
#pragma unroll
                    for (int i = 0; i < TM; i++)
                        a[i] = As[kk][ty + i * TY];
#pragma unroll
                    for (int j = 0; j < TN; j++)
                        b[j] = Bs[kk][tx + j * TX];
#pragma unroll
                    for (int i = 0; i < TM; i++)
#pragma unroll
                        for (int j = 0; j < TN; j++)
                            acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
                }
                __syncthreads();
            }

#pragma unroll
            for (int i = 0; i < TM; i++) {
                const long long gm = m0 + ty + i * TY;
#pragma unroll
                for (int j = 0; j < TN; j++) {
                    const long long gn = n0 + tx + j * TX;
                    if (gm < M && gn < N)
                        C[gm * N + gn] = acc[i][j];
                }
            }
        }
}

/* One tile shape: its template parameters as values, and its launcher. */
struct mm_shape {
    const char *name;
    int bm, bn, threads;
    void (*kernel)(const float *, const float *, float *, int, int, int);
};

template <int BM, int BN, int BK, int TM, int TN> mm_shape shape(const char *name)
{
    return mm_shape{name, BM, BN, (BM / TM) * (BN / TN), mm_tiled<BM, BN, BK, TM, TN>};
}

/* seed 002's tile */
const mm_shape kSeed = shape<16, 16, 16, 1, 1>("16x16x16 tile, 1 entry per thread (seed 002)");
/* large products: 64 accumulators per thread */
const mm_shape kLarge = shape<128, 128, 8, 8, 8>("128x128x8 tile, 8x8 entries per thread");
/* medium products */
const mm_shape kMedium = shape<64, 64, 8, 4, 4>("64x64x8 tile, 4x4 entries per thread");
/* a single column (matrix times vector): one warp copies a 32-wide row
 * segment of A per step, each thread owns one row */
const mm_shape kColumn = shape<128, 1, 32, 1, 1>("128x1x32 tile, 1 entry per thread (column)");
/* a single row (cuda-gemm's weights times its tap-major column matrix): each
 * step copies 16 rows of 128 consecutive B entries, each thread owns one column */
const mm_shape kRow = shape<1, 128, 16, 1, 1>("1x128x16 tile, 1 entry per thread (row)");

const mm_shape *pick(ic_mm_variant v, int M, int N)
{
    if (v == IC_MM_TILED)
        return &kSeed;
    if (M == 1)
        return &kRow;
    if (N == 1)
        return &kColumn;
    if (M >= 128 && N >= 128)
        return &kLarge;
    if (M >= 64 && N >= 64)
        return &kMedium;
    return &kSeed;
}

unsigned grid_dim(long long tiles, unsigned limit)
{
    return tiles < (long long)limit ? (unsigned)tiles : limit;
}

} // namespace

extern "C" const char *ic__matmul_shape(ic_mm_variant v, int M, int K, int N)
{
    (void)K;
    if (v == IC_MM_NAIVE)
        return "16x16 threads, 1 entry per thread, no shared memory (seed 002)";
    return pick(v, M, N)->name;
}

extern "C" ic_status ic__matmul_dev(ic_mm_variant v, const float *dA, const float *dB, float *dC,
                                    int M, int K, int N, void *stream, char *err, size_t errlen)
{
    if (!dA || !dB || !dC || M < 1 || K < 1 || N < 1 ||
        (v != IC_MM_NAIVE && v != IC_MM_TILED && v != IC_MM_FAST)) {
        snprintf(err, errlen, "invalid matrix product launch (%d x %d by %d x %d)", M, K, K, N);
        return IC_ERR_INVALID_ARG;
    }
    const cudaStream_t s = (cudaStream_t)stream;
    if (v == IC_MM_NAIVE) {
        const dim3 block(kNaiveBlock, kNaiveBlock);
        const dim3 grid(grid_dim((N + kNaiveBlock - 1) / kNaiveBlock, kMaxGridX),
                        grid_dim((M + kNaiveBlock - 1) / kNaiveBlock, kMaxGridY));
        mm_naive<<<grid, block, 0, s>>>(dA, dB, dC, M, K, N);
    } else {
        const mm_shape *sh = pick(v, M, N);
        const dim3 grid(grid_dim(((long long)N + sh->bn - 1) / sh->bn, kMaxGridX),
                        grid_dim(((long long)M + sh->bm - 1) / sh->bm, kMaxGridY));
        sh->kernel<<<grid, sh->threads, 0, s>>>(dA, dB, dC, M, K, N);
    }
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, "matmul kernel launch", (int)e);
    return IC_OK;
}

/* The device buffers of one host-to-host call, freed on every path. */
struct mm_bufs {
    float *a = nullptr, *b = nullptr, *c = nullptr;
    ~mm_bufs()
    {
        (void)cudaFree(a);
        (void)cudaFree(b);
        (void)cudaFree(c);
    }
};

extern "C" const char *const ic__matmul_cuda_variants[] = {"cuda-naive", "cuda-tiled", "cuda",
                                                           NULL};

extern "C" ic_status ic__matmul_cuda(int variant, const float *A, const float *B, float *C, int M,
                                     int K, int N, char *err, size_t errlen)
{
    const ic_mm_variant v = (ic_mm_variant)variant;
    if (!A || !B || !C || M < 1 || K < 1 || N < 1) {
        snprintf(err, errlen, "invalid matrix product (%d x %d by %d x %d)", M, K, K, N);
        return IC_ERR_INVALID_ARG;
    }
    const size_t fs = sizeof(float);
    const size_t na = (size_t)M * (size_t)K, nb = (size_t)K * (size_t)N, nc = (size_t)M * (size_t)N;
    if (na > SIZE_MAX / fs || nb > SIZE_MAX / fs || nc > SIZE_MAX / fs) {
        snprintf(err, errlen, "matrix sizes overflow");
        return IC_ERR_TOO_LARGE;
    }
    mm_bufs d;
    IC_CUDA_CHECK(cudaMalloc((void **)&d.a, na * fs));
    IC_CUDA_CHECK(cudaMalloc((void **)&d.b, nb * fs));
    IC_CUDA_CHECK(cudaMalloc((void **)&d.c, nc * fs));
    IC_CUDA_CHECK(cudaMemcpy(d.a, A, na * fs, cudaMemcpyHostToDevice));
    IC_CUDA_CHECK(cudaMemcpy(d.b, B, nb * fs, cudaMemcpyHostToDevice));
    const ic_status s = ic__matmul_dev(v, d.a, d.b, d.c, M, K, N, NULL, err, errlen);
    if (s != IC_OK)
        return s;
    const cudaError_t ke = cudaStreamSynchronize(0);
    if (ke != cudaSuccess)
        return ic_cuda_fail(err, errlen, "matmul kernel", (int)ke);
    IC_CUDA_CHECK(cudaMemcpy(C, d.c, nc * fs, cudaMemcpyDeviceToHost));
    return IC_OK;
}
