/*
 * tiled_in.cu - backend "cuda-tiled-in": the input-tile kernel of seed 003
 * Fig 7.12. A block of IC_CU_TILE_IN x IC_CU_TILE_IN (32x32) threads loads one
 * input sample each (border-mapped) into shared memory; after the barrier the
 * threads of the halo ring are switched off and the inner
 * (32 - kw + 1) x (32 - kh + 1) threads compute the output tile from shared
 * memory alone. Weights come from global memory through the read-only cache.
 *
 * Fallback: the output tile must be at least 2x2, so kernels wider or taller
 * than 31 run the cuda-global kernel (ic_cu_direct) instead.
 */
#include "cuda/cuda_common.cuh"

struct ic_cu_tiled_in {
    static constexpr int BX = IC_CU_TILE_IN, BY = IC_CU_TILE_IN;
    static constexpr bool kShared = true;
    int tc, tr; /* position in the output tile; outside [0, out) for halo threads */
    int ox, oy; /* the sample this thread loads, and computes when active */
    bool active;

    static int out_w(const ic_cuda_args &a)
    {
        return BX - a.kw + 1;
    }
    static int out_h(const ic_cuda_args &a)
    {
        return BY - a.kh + 1;
    }
    static bool fits(const ic_cuda_args &a)
    {
        return a.kw < BX && a.kh < BY;
    }
    static unsigned tiles_x(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.width, out_w(a));
    }
    static unsigned tiles_y(const ic_cuda_args &a)
    {
        return ic_cu_div_up(a.height, out_h(a));
    }
    static size_t smem_bytes(const ic_cuda_args &)
    {
        return (size_t)BX * BY * sizeof(float);
    }

    __device__ ic_cu_tiled_in(const ic_cuda_args &a, int bx, int by)
        : tc((int)threadIdx.x - (a.kw - 1) / 2), tr((int)threadIdx.y - (a.kh - 1) / 2),
          ox(bx * (BX - a.kw + 1) + tc), oy(by * (BY - a.kh + 1) + tr),
          active(tc >= 0 && tc < BX - a.kw + 1 && tr >= 0 && tr < BY - a.kh + 1 && ox < a.width &&
                 oy < a.height)
    {
    }

    template <class P> __device__ void load(const ic_cuda_args &, const P &in, float *s) const
    {
        s[threadIdx.y * BX + threadIdx.x] = in.fetch(ox, oy);
    }

    template <class P, class W>
    __device__ float sum(const ic_cuda_args &a, const P &, const W &w, const float *s) const
    {
        const float *t = s + tr * BX + tc;
        return ic_cu_dot(w, a.kw, a.kh, [&](int i, int j) { return t[j * BX + i]; });
    }
};

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    if (!ic_cu_tiled_in::fits(*a))
        return ic_cu_launch_fallback(a, "cuda-tiled-in kernel launch (direct fallback)", err,
                                     errlen);
    return ic_cu_launch<ic_cu_tiled_in>(*a, ic_cu_wglobal{a->w}, "cuda-tiled-in kernel launch", err,
                                        errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    if (!ic_cu_tiled_in::fits(*a))
        ic_cu_describe<ic_cu_direct>(*a,
                                     "cuda-tiled-in: kernel over 31 wide or tall leaves no output "
                                     "tile in a 32x32 block, direct kernel (fallback)",
                                     buf, buflen);
    else
        ic_cu_describe<ic_cu_tiled_in>(*a, "cuda-tiled-in: 32x32 input tiles in shared memory", buf,
                                       buflen);
}

static const ic_cuda_strategy strategy = {"cuda-tiled-in kernel", NULL, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_tiled_in, "cuda-tiled-in",
                     "CUDA, 32x32 blocks load the input tile with halo into shared memory, "
                     "halo threads idle; kernels over 31 wide/tall: cuda-global",
                     42, IC_CAP_PREMULTIPLY, strategy);
