/*
 * const.cu - backend "cuda-const": seed 003 Fig 7.9 and seed 004's
 * constant-memory kernel. The same one-thread-per-output-sample kernel as
 * cuda-global (ic_cu_direct), with the weights in __constant__ memory, copied
 * there with cudaMemcpyToSymbol; every thread of a warp reads the same weight,
 * which the constant cache broadcasts.
 *
 * The __constant__ array lives here and only here (without relocatable device
 * code a __constant__ symbol belongs to one translation unit). It holds
 * IC_CU_CONST_WEIGHTS = 16384 floats, the whole 64 KB of constant memory:
 * kernels up to 127x127 (any W x H with W*H <= 16384). Larger kernels fall
 * back to the same kernel with the weights in global memory.
 */
#include "cuda/cuda_common.cuh"

static __constant__ float ic_const_w[IC_CU_CONST_WEIGHTS];

/* Weights from constant memory. */
struct ic_cu_wconst {
    __device__ __forceinline__ float operator[](int i) const
    {
        return ic_const_w[i];
    }
};

static bool fits(const ic_cuda_args *a)
{
    return (size_t)a->kw * (size_t)a->kh <= IC_CU_CONST_WEIGHTS;
}

static ic_status prepare(const ic_cuda_args *a, const float *w, char *err, size_t errlen)
{
    if (fits(a))
        IC_CUDA_CHECK(cudaMemcpyToSymbolAsync(ic_const_w, w,
                                              (size_t)a->kw * (size_t)a->kh * sizeof *w, 0,
                                              cudaMemcpyHostToDevice, (cudaStream_t)a->stream));
    return IC_OK;
}

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    if (fits(a))
        return ic_cu_launch<ic_cu_direct>(*a, ic_cu_wconst{}, "cuda-const kernel launch", err,
                                          errlen);
    return ic_cu_launch_fallback(a, "cuda-const kernel launch (global weights)", err, errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    ic_cu_describe<ic_cu_direct>(*a,
                                 fits(a) ? "cuda-const: one thread per output sample, weights in "
                                           "__constant__ memory"
                                         : "cuda-const: over 16384 weights, weights in global "
                                           "memory (fallback)",
                                 buf, buflen);
}

static const ic_cuda_strategy strategy = {"cuda-const kernel", prepare, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_const, "cuda-const",
                     "CUDA, one thread per output sample, weights in __constant__ memory "
                     "(over 16384 weights: as cuda-global)",
                     41, IC_CAP_PREMULTIPLY, strategy);
