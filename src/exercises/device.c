/*
 * device.c - the advanced tier's device-resident entries of the course
 * exercises (include/imgconv_course.h, "Advanced API"): ic_conv1d_device,
 * ic_matmul_device and ic_matmul_tile hand device pointers straight to the
 * CUDA kernels of conv1d_cuda.cu and matmul_cuda.cu, queued on the caller's
 * stream, so that the benchmark times the kernels alone through the public
 * header. A build without CUDA has them too: they fail with IC_ERR_NO_BACKEND.
 */
#include <stddef.h>

#include "core/error.h"
#ifdef IC_HAVE_CUDA
#include "exercises/conv1d_cuda.h"
#include "exercises/matmul_cuda.h"
#endif

#define IC_ADVANCED_API
#include "imgconv_course.h"

ic_status ic_conv1d_device(const void *d_in, void *d_out, size_t n, int u8, const float *d_k,
                           int klen, const ic_params *p, void *stream)
{
    ic_params def;
    if (!p) {
        ic_params_default(&def);
        p = &def;
    }
    if (!d_in || !d_out || !d_k || n == 0 || klen < 1 || klen % 2 == 0 || klen > IC_MAX_KERNEL_1D ||
        (unsigned)p->border > IC_BORDER_WRAP)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_conv1d_device: NULL pointer, empty signal, bad "
                                           "kernel length or border");
    if (n > IC_MAX_SIGNAL)
        return ic_fail(IC_ERR_TOO_LARGE, "ic_conv1d_device: %zu samples, over %zu", n,
                       IC_MAX_SIGNAL);
#ifdef IC_HAVE_CUDA
    char err[256] = "";
    const ic_status st = ic__conv1d_dev(d_in, d_out, (int)n, u8 != 0, d_k, klen, (int)p->border,
                                        p->border_value, p->bias, stream, err, sizeof err);
    return st == IC_OK ? IC_OK : ic_fail(st, "%s", err[0] ? err : ic_status_str(st));
#else
    (void)u8, (void)stream;
    return ic_fail(IC_ERR_NO_BACKEND, "ic_conv1d_device: this build has no CUDA");
#endif
}

#ifdef IC_HAVE_CUDA
static ic_mm_variant variant_of(ic_matmul_kernel k)
{
    return k == IC_MATMUL_NAIVE ? IC_MM_NAIVE : k == IC_MATMUL_TILED ? IC_MM_TILED : IC_MM_FAST;
}
#endif

ic_status ic_matmul_device(ic_matmul_kernel kernel, const float *dA, const float *dB, float *dC,
                           int M, int K, int N, void *stream)
{
    if ((unsigned)kernel > IC_MATMUL_FAST || !dA || !dB || !dC || M < 1 || K < 1 || N < 1)
        return ic_fail(IC_ERR_INVALID_ARG,
                       "ic_matmul_device: unknown kernel, NULL matrix or empty dimension");
#ifdef IC_HAVE_CUDA
    char err[256] = "";
    const ic_status st =
        ic__matmul_dev(variant_of(kernel), dA, dB, dC, M, K, N, stream, err, sizeof err);
    return st == IC_OK ? IC_OK : ic_fail(st, "%s", err[0] ? err : ic_status_str(st));
#else
    (void)stream;
    return ic_fail(IC_ERR_NO_BACKEND, "ic_matmul_device: this build has no CUDA");
#endif
}

const char *ic_matmul_tile(ic_matmul_kernel kernel, int M, int K, int N)
{
#ifdef IC_HAVE_CUDA
    if ((unsigned)kernel <= IC_MATMUL_FAST)
        return ic__matmul_shape(variant_of(kernel), M, K, N);
#else
    (void)kernel, (void)M, (void)K, (void)N;
#endif
    return "";
}
