/*
 * tiled_halo.cu - backend "cuda-tiled-halo": seed 002's 2D convolution
 * with shared memory. A block of IC_CU_TILE_HALO x IC_CU_TILE_HALO (16x16)
 * threads computes a 16x16 output tile; its input tile with a halo of
 * rx = (kw-1)/2 columns and ry = (kh-1)/2 rows each side is loaded in five
 * separate parts, as in the seed: 1. upper halo (with both corners), 2. lower
 * halo (with both corners), 3. left halo, 4. right halo, 5. centre (one
 * sample per thread). The seed has thread (tx, ty) with ty < RAD load upper
 * halo row ty; here every part is a rectangle that thread (tx, ty) walks in
 * steps of 16 (rows ty, ty+16, ...; columns tx, tx+16, ...), so the corners
 * and halos stay right when the radius exceeds the block (any kernel up to
 * the fallback limit). Halo samples outside the image are border-mapped.
 * Weights come from global memory through the read-only cache.
 *
 * Fallback: when the tile exceeds the device's per-block shared memory
 * (227 KB on sm_90: square kernels of 227x227 and more), the cuda-global
 * kernel (ic_cu_direct) runs instead.
 */
#include "cuda/cuda_common.cuh"

struct ic_cu_tiled_halo : ic_cu_halo_tile<IC_CU_TILE_HALO> {
    __device__ ic_cu_tiled_halo(const ic_cuda_args &a, int bx, int by)
        : ic_cu_halo_tile<IC_CU_TILE_HALO>(a, bx, by)
    {
    }

    template <class P> __device__ void load(const ic_cuda_args &a, const P &in, float *s) const
    {
        const int rx = (a.kw - 1) / 2, ry = (a.kh - 1) / 2, T = IC_CU_TILE_HALO;
        load_rect(in, s, 0, 0, ry, tw);      /* 1. upper halo and corners */
        load_rect(in, s, ry + T, 0, ry, tw); /* 2. lower halo and corners */
        load_rect(in, s, ry, 0, T, rx);      /* 3. left halo */
        load_rect(in, s, ry, rx + T, T, rx); /* 4. right halo */
        load_rect(in, s, ry, rx, T, T);      /* 5. centre */
    }
};

static ic_status launch(const ic_cuda_args *a, char *err, size_t errlen)
{
    if (!ic_cu_tiled_halo::fits(*a))
        return ic_cu_launch_fallback(a, "cuda-tiled-halo kernel launch (direct fallback)", err,
                                     errlen);
    return ic_cu_launch<ic_cu_tiled_halo>(*a, ic_cu_wglobal{a->w}, "cuda-tiled-halo kernel launch",
                                          err, errlen);
}

static void describe(const ic_cuda_args *a, char *buf, size_t buflen)
{
    if (!ic_cu_tiled_halo::fits(*a))
        ic_cu_describe<ic_cu_direct>(*a,
                                     "cuda-tiled-halo: input tile over the shared memory per "
                                     "block, direct kernel (fallback)",
                                     buf, buflen);
    else
        ic_cu_describe<ic_cu_tiled_halo>(*a,
                                         "cuda-tiled-halo: 16x16 output tiles, halos and centre "
                                         "loaded separately",
                                         buf, buflen);
}

static const ic_cuda_strategy strategy = {"cuda-tiled-halo kernel", NULL, launch, describe};

IC_CU_DEFINE_BACKEND(ic_backend_cuda_tiled_halo, "cuda-tiled-halo",
                     "CUDA, 16x16 output tiles, upper/lower/left/right halos and centre "
                     "loaded into shared memory separately; tiles over the shared "
                     "memory: cuda-global",
                     45, IC_CAP_PREMULTIPLY, strategy);
