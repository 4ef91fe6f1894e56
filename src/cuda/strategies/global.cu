/*
 * global.cu - backend "cuda-global": the basic 2D convolution kernel of
 * seed 003 Fig 7.7 and seed 004's global-memory kernel. One thread per output
 * sample (block 32x8, one channel per grid layer); weights and image both read
 * from global memory; windows that leave the image go through ic_border_map.
 * The kernel itself is ic_cu_direct in cuda_common.cuh.
 */
#include "cuda/cuda_common.cuh"

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    return ic_cu_launch<ic_cu_direct>(*a, ic_cu_wglobal{a->w}, "cuda-global kernel launch", err,
                                      errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    ic_cu_describe<ic_cu_direct>(*a, "cuda-global: one thread per output sample, global weights",
                                 buf, buflen);
}

static const ic_cuda_strategy strategy = {"cuda-global kernel", NULL, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_global, "cuda-global",
                     "CUDA, one thread per output sample, image and weights in global memory", 40,
                     IC_CAP_PREMULTIPLY, strategy);
