/*
 * sep.cu - separable and low-rank correlation, the fast path's method for
 * kernels K = sum_{k<r} col_k row_k^T factored on the host by
 * ic_kernel_factor (src/core/factor.c): the entry points (shared memory of a
 * tile, the launch). The fused row + column kernels and their launch helper
 * are in sep_impl.cuh, instantiated by sep_k*.cu (uint8_t tiles, which also
 * take 16-bit jobs) and sep_f32_k*.cu (float tiles, for float32 jobs:
 * tile.cuh) so that the build compiles the kernel sizes in parallel (each
 * takes minutes in ptxas); the launch below switches on the sample type and
 * the size to the part holding it.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/fast/sep_impl.cuh"

/* The parts, for each tile sample type: sizes 3..31 (IC_FAST_SEP_MAX_K, odd)
 * in four ranges. */
static_assert(IC_FAST_SEP_MAX_K == 31, "the sep_k*.cu parts cover sizes 3..31");
#define IC_SEP_PARTS(T)                                                                            \
    IC_SEP_LAUNCH_K(extern template, 3, 13, T);                                                    \
    IC_SEP_LAUNCH_K(extern template, 15, 21, T);                                                   \
    IC_SEP_LAUNCH_K(extern template, 23, 27, T);                                                   \
    IC_SEP_LAUNCH_K(extern template, 29, 31, T)
IC_SEP_PARTS(uint8_t);
IC_SEP_PARTS(float);

using icf_sep::hplane_of;
using icf_sep::launch_k;
using icf_sep::sep_param;

extern "C" size_t ic_fast_sep_smem(int k, int cb, int nrg, int rank)
{
    if (k < 3 || k > IC_FAST_SEP_MAX_K || !(k & 1) || cb < 1 || nrg < 1 ||
        cb * nrg * 32 > icf::MAX_THREADS || rank < 1 || rank > IC_FAST_SEP_MAX_RANK)
        return 0;
    return (size_t)cb * ((size_t)icf::plane_of(k, k, nrg) + (size_t)hplane_of(k, nrg, rank)) *
           sizeof(float);
}

/* The part holding the kernel of the job's size, with tiles of T samples. */
template <class T>
static ic_status launch_typed(const icf::targs &t, const sep_param &w, size_t smem, char *err,
                              size_t errlen)
{
    const int K = t.a.kw;
    if (K <= 13)
        return launch_k<3, 13, T>(t, w, smem, err, errlen);
    if (K <= 21)
        return launch_k<15, 21, T>(t, w, smem, err, errlen);
    if (K <= 27)
        return launch_k<23, 27, T>(t, w, smem, err, errlen);
    return launch_k<29, 31, T>(t, w, smem, err, errlen);
}

extern "C" ic_status ic_fast_sep_launch(const ic_cuda_args *a, const float *row, const float *col,
                                        int rank, const ic_fast_plan *p, char *err, size_t errlen)
{
    const size_t smem = a->kw == a->kh ? ic_fast_sep_smem(a->kw, p->cb, p->nrg, rank) : 0;
    if (smem == 0 || smem > a->smem_optin) {
        snprintf(err, errlen, "cuda fast sep: cannot take a %dx%d rank-%d kernel", a->kw, a->kh,
                 rank);
        return IC_ERR_UNSUPPORTED;
    }
    if (a->premultiply && p->cb != a->channels) {
        snprintf(err, errlen, "cuda fast sep: premultiplied alpha needs every channel per block");
        return IC_ERR_INTERNAL;
    }
    sep_param w;
    memset(&w, 0, sizeof w);
    const int K = a->kw;
    for (int k = 0; k < rank; k++)
        for (int i = 0; i < K; i++) {
            w.row[k * K + i] = row[(size_t)k * K + i];
            w.col[k * K + i] = col[(size_t)k * K + i];
        }
    w.rank = rank;
    const icf::targs t = icf::make_targs(a, p);
    if (a->f32)
        return launch_typed<float>(t, w, smem, err, errlen);
    return launch_typed<uint8_t>(t, w, smem, err, errlen);
}
