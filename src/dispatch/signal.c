/*
 * signal.c - the public 1D convolution, 1D stencil and matrix product
 * (ic_conv1d_f32, ic_conv1d_u8, ic_stencil1d, ic_matmul; seeds 001 and 002):
 * checks the arguments, prepares the correlation weights (flipped for
 * convolution, as the 2D dispatcher does) and sends the work to the CPU code
 * (src/exercises/conv1d.c, matmul.c) or the CUDA code (src/exercises/conv1d_cuda.cu,
 * matmul.cu). In a build without CUDA, or on a machine without a device, the
 * CUDA choices answer IC_ERR_NO_BACKEND with the reason.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "exercises/linalg.h"
#ifdef IC_HAVE_CUDA
#include "exercises/conv1d_cuda.h"
#include "cuda/cuda_host.h"
#include "exercises/matmul_cuda.h"
#endif

/* 1 when a CUDA device can run work now; otherwise 0 and the reason in why. */
static int cuda_usable(char *why, size_t whylen)
{
#ifdef IC_HAVE_CUDA
    return ic_cuda_probe(why, whylen);
#else
    snprintf(why, whylen, "this build of imgconv has no CUDA support");
    return 0;
#endif
}

/* Resolves backend (NULL, "auto", "cpu", "cuda") into *gpu. */
static ic_status pick_backend(const char *backend, int *gpu, char *err, size_t errlen)
{
    char why[160] = "";
    if (!backend || strcmp(backend, "auto") == 0) {
        *gpu = cuda_usable(why, sizeof why);
        return IC_OK;
    }
    if (strcmp(backend, "cpu") == 0) {
        *gpu = 0;
        return IC_OK;
    }
    if (strcmp(backend, "cuda") == 0) {
        if (!cuda_usable(why, sizeof why))
            return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "backend 'cuda' is not usable here: %s",
                       why);
        *gpu = 1;
        return IC_OK;
    }
    return ic_errf(err, errlen, IC_ERR_NO_BACKEND,
               "unknown 1D backend '%s' (expected cpu, cuda or auto)", backend);
}

static int overlaps(const void *a, size_t abytes, const void *b, size_t bbytes)
{
    const uintptr_t a0 = (uintptr_t)a, b0 = (uintptr_t)b;
    return a0 < b0 + bbytes && b0 < a0 + abytes;
}

/* Everything ic_conv1d_f32/u8 share: checks, weights, backend. */
static ic_status conv1d(const void *in, void *out, size_t n, int is_u8, const float *k, int klen,
                        const ic_params *p, const char *backend, char *err, size_t errlen)
{
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    if (!in || !out || !k)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "NULL signal or kernel");
    if (n == 0)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "empty signal");
    if (n > IC_MAX_SIGNAL)
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE, "signal of %zu samples is over the limit of %zu",
                   n, IC_MAX_SIGNAL);
    if (klen < 1 || klen > IC_MAX_KERNEL_1D || !(klen & 1))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "kernel length %d is not odd and within 1..%d",
                   klen, IC_MAX_KERNEL_1D);
    if ((unsigned)p->border > IC_BORDER_WRAP)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "unknown border mode %d", (int)p->border);
    if (!isfinite(p->border_value) || !isfinite(p->bias))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "border value or bias is not finite");
    const size_t bytes = n * (is_u8 ? 1u : sizeof(float));
    if (overlaps(in, bytes, out, bytes))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "input and output signals overlap");
    for (int t = 0; t < klen; t++)
        if (!isfinite(k[t]))
            return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "kernel weight %d is not finite", t);
    int gpu = 0;
    ic_status st = pick_backend(backend, &gpu, err, errlen);
    if (st != IC_OK)
        return st;

    /* correlation weights: convolution reads the kernel backwards */
    float *w = malloc((size_t)klen * sizeof *w);
    if (!w)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    for (int t = 0; t < klen; t++)
        w[t] = p->correlate ? k[t] : k[klen - 1 - t];
#ifdef IC_HAVE_CUDA
    if (gpu)
        st = ic__conv1d_cuda(in, out, (int)n, is_u8, w, klen, (int)p->border, p->border_value,
                             p->bias, err, errlen);
    else
#endif
    {
        (void)gpu;
        st = ic__conv1d_cpu(in, out, (int)n, is_u8, w, klen, (int)p->border, p->border_value,
                            p->bias);
        if (st == IC_ERR_NOMEM)
            ic_errf(err, errlen, st, "out of memory");
    }
    free(w);
    return st;
}

ic_status ic_conv1d_f32(const float *in, float *out, size_t n, const float *k, int klen,
                        const ic_params *p, const char *backend)
{
    char err[256] = "";
    return ic_fail_msg(conv1d(in, out, n, 0, k, klen, p, backend, err, sizeof err), err);
}

ic_status ic_conv1d_u8(const uint8_t *in, uint8_t *out, size_t n, const float *k, int klen,
                       const ic_params *p, const char *backend)
{
    char err[256] = "";
    return ic_fail_msg(conv1d(in, out, n, 1, k, klen, p, backend, err, sizeof err), err);
}

static ic_status stencil1d(const float *in, float *out, size_t n, int radius, const ic_params *p,
                           const char *backend, char *err, size_t errlen)
{
    if (radius < 0 || radius > (IC_MAX_KERNEL_1D - 1) / 2)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "stencil radius %d is not within 0..%d", radius,
                   (IC_MAX_KERNEL_1D - 1) / 2);
    const int klen = 2 * radius + 1;
    float *ones = malloc((size_t)klen * sizeof *ones);
    if (!ones)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    for (int t = 0; t < klen; t++)
        ones[t] = 1.0f;
    /* The seed's stencil has zero ghost cells whatever ic_params_default says. */
    ic_params ghost;
    if (!p) {
        ic_params_default(&ghost);
        ghost.border = IC_BORDER_CONSTANT;
        p = &ghost;
    }
    const ic_status st = conv1d(in, out, n, 0, ones, klen, p, backend, err, errlen);
    free(ones);
    return st;
}

ic_status ic_stencil1d(const float *in, float *out, size_t n, int radius, const ic_params *p,
                       const char *backend)
{
    char err[256] = "";
    return ic_fail_msg(stencil1d(in, out, n, radius, p, backend, err, sizeof err), err);
}

static ic_status matmul(const float *A, const float *B, float *C, int M, int K, int N,
                        const char *variant, char *err, size_t errlen)
{
    if (!A || !B || !C)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "NULL matrix");
    if (M < 1 || K < 1 || N < 1)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                   "matrix sizes %d x %d by %d x %d: all must be >= 1", M, K, K, N);
    const size_t fs = sizeof(float);
    const size_t na = (size_t)M * (size_t)K, nb = (size_t)K * (size_t)N, nc = (size_t)M * (size_t)N;
    if (na > SIZE_MAX / fs || nb > SIZE_MAX / fs || nc > SIZE_MAX / fs)
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE, "matrix sizes overflow");
    if (overlaps(C, nc * fs, A, na * fs) || overlaps(C, nc * fs, B, nb * fs))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "C overlaps A or B");

    char why[160] = "";
    const char *v = variant;
    if (!v || strcmp(v, "auto") == 0)
        v = cuda_usable(why, sizeof why) ? "cuda" : "cpu";
    if (strcmp(v, "cpu") == 0) {
        ic__matmul_cpu(A, B, C, M, K, N);
        return IC_OK;
    }
    const int known =
        strcmp(v, "cuda-naive") == 0 || strcmp(v, "cuda-tiled") == 0 || strcmp(v, "cuda") == 0;
    if (!known)
        return ic_errf(
            err, errlen, IC_ERR_NO_BACKEND,
            "unknown matmul variant '%s' (expected cpu, cuda-naive, cuda-tiled, cuda or auto)", v);
    if (!cuda_usable(why, sizeof why))
        return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "matmul variant '%s' is not usable here: %s", v,
                   why);
#ifdef IC_HAVE_CUDA
    const ic_mm_variant mv = strcmp(v, "cuda-naive") == 0   ? IC_MM_NAIVE
                             : strcmp(v, "cuda-tiled") == 0 ? IC_MM_TILED
                                                            : IC_MM_FAST;
    return ic__matmul_cuda(mv, A, B, C, M, K, N, err, errlen);
#else
    return ic_errf(err, errlen, IC_ERR_INTERNAL, "no CUDA in this build");
#endif
}

ic_status ic_matmul(const float *A, const float *B, float *C, int M, int K, int N,
                    const char *variant)
{
    char err[256] = "";
    return ic_fail_msg(matmul(A, B, C, M, K, N, variant, err, sizeof err), err);
}
