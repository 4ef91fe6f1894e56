/*
 * tiled_out.cu - backend "cuda-tiled-out": seed 000's output-tile kernel
 * with "2-batch loading", generalised to any kernel size. A block of
 * IC_CU_TILE_OUT x IC_CU_TILE_OUT (16x16) threads computes a 16x16 output
 * tile; its (16 + kw - 1) x (16 + kh - 1) input tile is loaded in
 * ceil(area / 256) batches: batch b has thread t load tile element
 * dest = t + 256*b at (dest % tile_width, dest / tile_width), border-mapped.
 * Weights come from global memory through the read-only cache.
 *
 * Fallback: when the tile exceeds the device's per-block shared memory
 * (227 KB on sm_90: square kernels of 227x227 and more), the cuda-global
 * kernel (ic_cu_direct) runs instead.
 */
#include "cuda/cuda_common.cuh"

struct ic_cu_tiled_out : ic_cu_halo_tile<IC_CU_TILE_OUT> {
    __device__ ic_cu_tiled_out(const ic_cuda_args &a, int bx, int by)
        : ic_cu_halo_tile<IC_CU_TILE_OUT>(a, bx, by)
    {
    }

    template <class P> __device__ void load(const ic_cuda_args &, const P &in, float *s) const
    {
        const int n = tw * th;
        for (int dest = (int)threadIdx.y * BX + (int)threadIdx.x; dest < n; dest += BX * BY)
            s[dest] = in.fetch(x0 + dest % tw, y0 + dest / tw);
    }
};

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    if (!ic_cu_tiled_out::fits(*a))
        return ic_cu_launch_fallback(a, "cuda-tiled-out kernel launch (direct fallback)", err,
                                     errlen);
    return ic_cu_launch<ic_cu_tiled_out>(*a, ic_cu_wglobal{a->w}, "cuda-tiled-out kernel launch",
                                         err, errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    if (!ic_cu_tiled_out::fits(*a))
        ic_cu_describe<ic_cu_direct>(*a,
                                     "cuda-tiled-out: input tile over the shared memory per "
                                     "block, direct kernel (fallback)",
                                     buf, buflen);
    else
        ic_cu_describe<ic_cu_tiled_out>(*a,
                                        "cuda-tiled-out: 16x16 output tiles, input tile loaded "
                                        "in batches of 256",
                                        buf, buflen);
}

static const ic_cuda_strategy strategy = {"cuda-tiled-out kernel", NULL, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_tiled_out, "cuda-tiled-out",
                     "CUDA, 16x16 output tiles, input tile with halo loaded into shared memory "
                     "in batches; tiles over the shared memory: cuda-global",
                     43, IC_CAP_PREMULTIPLY, strategy);
