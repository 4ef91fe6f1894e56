/*
 * tiled_cached.cu - backend "cuda-tiled-cached": the cached-halo kernel of
 * seed 003 Fig 7.15. A block of IC_CU_TILE_CACHED x IC_CU_TILE_CACHED (32x32)
 * threads loads just its own 32x32 input samples into shared memory (no halo);
 * a tap inside that tile reads shared memory, a tap outside it (the halo, or
 * beyond the image) reads global memory through __ldg and the L1/L2 caches,
 * border-mapped by ic_border_map. Weights come from global memory through the
 * read-only cache.
 *
 * No fallback: shared memory use (4 KB) does not depend on the kernel size.
 */
#include "cuda/cuda_common.cuh"

struct ic_cu_tiled_cached {
    static constexpr int BX = IC_CU_TILE_CACHED, BY = IC_CU_TILE_CACHED;
    static constexpr bool kShared = true;
    int ox, oy;
    int vw, vh; /* the part of the tile inside the image */
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
        return (size_t)BX * BY * sizeof(float);
    }

    __device__ ic_cu_tiled_cached(const ic_cuda_args &a, int bx, int by)
        : ox(bx * BX + (int)threadIdx.x), oy(by * BY + (int)threadIdx.y),
          vw(min(BX, a.width - bx * BX)), vh(min(BY, a.height - by * BY)),
          active(ox < a.width && oy < a.height)
    {
    }

    /* Tile elements outside the image are left unwritten: sum() never reads them. */
    template <class P> __device__ void load(const ic_cuda_args &, const P &in, float *s) const
    {
        if (active)
            s[threadIdx.y * BX + threadIdx.x] = in.at(ox, oy);
    }

    template <class P, class W>
    __device__ float sum(const ic_cuda_args &a, const P &in, const W &w, const float *s) const
    {
        const int rx = (a.kw - 1) / 2, ry = (a.kh - 1) / 2;
        const int sx0 = (int)threadIdx.x - rx, sy0 = (int)threadIdx.y - ry;
        return ic_cu_dot(w, a.kw, a.kh, [&](int i, int j) {
            const int sx = sx0 + i, sy = sy0 + j;
            if ((unsigned)sx < (unsigned)vw && (unsigned)sy < (unsigned)vh)
                return s[sy * BX + sx];
            return in.template fetch<true>(ox - rx + i, oy - ry + j);
        });
    }
};

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    return ic_cu_launch<ic_cu_tiled_cached>(*a, ic_cu_wglobal{a->w},
                                            "cuda-tiled-cached kernel launch", err, errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    ic_cu_describe<ic_cu_tiled_cached>(*a,
                                       "cuda-tiled-cached: 32x32 tiles in shared memory, halo "
                                       "through the caches",
                                       buf, buflen);
}

static const ic_cuda_strategy strategy = {"cuda-tiled-cached kernel", NULL, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_tiled_cached, "cuda-tiled-cached",
                     "CUDA, 32x32 tiles without halo in shared memory, halo read through "
                     "L1/L2 with __ldg",
                     44, IC_CAP_PREMULTIPLY, strategy);
