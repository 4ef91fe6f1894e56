/*
 * direct.cu - direct 2D correlation, the fast path's method for small and
 * medium full-rank kernels: the entry points (shared memory of a
 * tile, the launch). The kernels and their launch helpers are in
 * direct_impl.cuh, instantiated by direct_sq3_7.cu, direct_sq9.cu and
 * direct_w*.cu (uint8_t tiles, which also take 16-bit jobs), and by
 * direct_f32_*.cu (float tiles, for float32 jobs: tile.cuh), so that the build
 * compiles them in parallel (each takes minutes in ptxas); the launch below
 * switches on the sample type and the size to the part holding it.
 */
#include <stdio.h>

#include "cuda/fast/direct_impl.cuh"

/* The parts, for each tile sample type: the fully unrolled squares, then
 * the widths with a run-time height, odd 1..31 (IC_FAST_DIRECT_MAX_KW) in
 * three ranges. */
static_assert(IC_FAST_DIRECT_MAX_KW == 31, "the direct_w*.cu parts cover widths 1..31");
#define IC_DIRECT_PARTS(T)                                                                         \
    IC_DIRECT_LAUNCH_ONE(extern template, 3, 3, T);                                                \
    IC_DIRECT_LAUNCH_ONE(extern template, 5, 5, T);                                                \
    IC_DIRECT_LAUNCH_ONE(extern template, 7, 7, T);                                                \
    IC_DIRECT_LAUNCH_ONE(extern template, 9, 9, T);                                                \
    IC_DIRECT_LAUNCH_KW(extern template, 1, 15, T);                                                \
    IC_DIRECT_LAUNCH_KW(extern template, 17, 23, T);                                               \
    IC_DIRECT_LAUNCH_KW(extern template, 25, 31, T)
IC_DIRECT_PARTS(uint8_t);
IC_DIRECT_PARTS(float);

using icf_direct::launch_kw;
using icf_direct::launch_one;

extern "C" size_t ic_fast_direct_smem(int kw, int kh, int cb, int nrg)
{
    if (kw < 1 || kh < 1 || kw > IC_FAST_DIRECT_MAX_KW || kh > IC_FAST_DIRECT_MAX_KH || cb < 1 ||
        nrg < 1 || cb * nrg * 32 > icf::MAX_THREADS)
        return 0;
    return (size_t)cb * (size_t)icf::plane_of(kw, kh, nrg) * sizeof(float);
}

/* The part holding the kernel of the job's size, with tiles of T samples. */
template <class T>
static ic_status launch_typed(const icf::targs &t, const float *w, size_t smem, char *err,
                              size_t errlen)
{
    const ic_cuda_args &a = t.a;
    if (a.kw == a.kh) {
        switch (a.kw) {
        case 3:
            return launch_one<3, 3, T>(t, w, smem, err, errlen);
        case 5:
            return launch_one<5, 5, T>(t, w, smem, err, errlen);
        case 7:
            return launch_one<7, 7, T>(t, w, smem, err, errlen);
        case 9:
            return launch_one<9, 9, T>(t, w, smem, err, errlen);
        default:
            break;
        }
    }
    if (a.kw <= 15)
        return launch_kw<1, 15, T>(t, w, smem, err, errlen);
    if (a.kw <= 23)
        return launch_kw<17, 23, T>(t, w, smem, err, errlen);
    return launch_kw<25, 31, T>(t, w, smem, err, errlen);
}

extern "C" ic_status ic_fast_direct_launch(const ic_cuda_args *a, const float *w,
                                           const ic_fast_plan *p, char *err, size_t errlen)
{
    const size_t smem = ic_fast_direct_smem(a->kw, a->kh, p->cb, p->nrg);
    if (smem == 0 || smem > a->smem_optin) {
        snprintf(err, errlen, "cuda fast direct: %dx%d kernel does not fit the tile", a->kw, a->kh);
        return IC_ERR_UNSUPPORTED;
    }
    if (a->premultiply && p->cb != a->channels) {
        snprintf(err, errlen,
                 "cuda fast direct: premultiplied alpha needs every channel per block");
        return IC_ERR_INTERNAL;
    }
    const icf::targs t = icf::make_targs(a, p);
    if (a->f32)
        return launch_typed<float>(t, w, smem, err, errlen);
    return launch_typed<uint8_t>(t, w, smem, err, errlen);
}
