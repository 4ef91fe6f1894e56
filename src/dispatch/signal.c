/*
 * signal.c - the public 1D convolution, 1D stencil and matrix product
 * (ic_conv1d_f32, ic_conv1d_u8, ic_stencil1d, ic_matmul; seeds 001 and 002):
 * checks the arguments, prepares the correlation weights (flipped for
 * convolution, as the 2D dispatcher does) and sends the work to a backend of
 * the table (src/dispatch/backends.c) through its optional conv1d or matmul
 * entry (src/dispatch/backend.h). The names callers may give are those of the
 * backends carrying the entry (and, for the matrix product, the names of
 * their kernels); a backend that is not usable here answers IC_ERR_NO_BACKEND
 * with the reason.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dispatch/dispatch.h"
#include "imgconv_course.h"

static int has_conv1d(const ic_backend *b)
{
    return b->conv1d != NULL;
}

static int has_matmul(const ic_backend *b)
{
    return b->matmul != NULL && b->matmul_variants != NULL;
}

/* "a, b, c or auto": every name a caller may give, for messages. With
 * variants, the matmul kernel names of each backend, else the backends'. */
static void names_with(int (*has)(const ic_backend *), int variants, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < ic_backend_count(); i++) {
        const ic_backend *b = ic__backend_at(i);
        if (!has(b))
            continue;
        const char *one[] = {b->name, NULL};
        for (const char *const *v = variants ? b->matmul_variants : one; *v && o < len; v++) {
            const int w = snprintf(buf + o, len - o, "%s%s", o ? ", " : "", *v);
            if (w < 0)
                break;
            o += (size_t)w;
        }
    }
    if (o < len)
        snprintf(buf + o, len - o, " or auto");
}

/* Resolves backend (NULL, "auto" or the name of a backend with a conv1d
 * entry) into the backend that runs the 1D correlation. */
static ic_status pick_backend(const char *backend, const ic_backend **be, char *err, size_t errlen)
{
    if (!backend || strcmp(backend, "auto") == 0) {
        *be = ic__backend_best(has_conv1d);
        if (!*be)
            return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "no usable 1D backend");
        return IC_OK;
    }
    int usable = 0;
    const char *why = "";
    const ic_backend *b = ic__backend_find(backend, &usable, &why);
    if (!b || !has_conv1d(b)) {
        char names[256];
        names_with(has_conv1d, 0, names, sizeof names);
        return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "unknown 1D backend '%s' (expected %s)",
                       backend, names);
    }
    if (!usable)
        return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "backend '%s' is not usable here: %s",
                       backend, why);
    *be = b;
    return IC_OK;
}

/* Resolves variant (NULL, "auto" or a kernel name of a backend with a matmul
 * entry) into that backend and the kernel's index in its matmul_variants. */
static ic_status pick_matmul(const char *variant, const ic_backend **be, int *index, char *err,
                             size_t errlen)
{
    const ic_backend *b = NULL;
    int k = 0;
    if (!variant || strcmp(variant, "auto") == 0) {
        /* the usable backend of highest rank, with the kernel named after it */
        b = ic__backend_best(has_matmul);
        if (!b)
            return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "no usable matmul backend");
        for (int v = 0; b->matmul_variants[v]; v++)
            if (strcmp(b->matmul_variants[v], b->name) == 0)
                k = v;
        *be = b;
        *index = k;
        return IC_OK;
    }
    for (int i = 0; i < ic_backend_count() && !b; i++) {
        const ic_backend *c = ic__backend_at(i);
        for (int v = 0; has_matmul(c) && c->matmul_variants[v] && !b; v++)
            if (strcmp(c->matmul_variants[v], variant) == 0) {
                b = c;
                k = v;
            }
    }
    if (!b) {
        char names[256];
        names_with(has_matmul, 1, names, sizeof names);
        return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "unknown matmul variant '%s' (expected %s)",
                       variant, names);
    }
    int usable = 0;
    const char *why = "";
    ic__backend_find(b->name, &usable, &why);
    if (!usable)
        return ic_errf(err, errlen, IC_ERR_NO_BACKEND, "matmul variant '%s' is not usable here: %s",
                       variant, why);
    *be = b;
    *index = k;
    return IC_OK;
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
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                       "signal of %zu samples is over the limit of %zu", n, IC_MAX_SIGNAL);
    if (klen < 1 || klen > IC_MAX_KERNEL_1D || !(klen & 1))
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG,
                       "kernel length %d is not odd and within 1..%d", klen, IC_MAX_KERNEL_1D);
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
    const ic_backend *be = NULL;
    ic_status st = pick_backend(backend, &be, err, errlen);
    if (st != IC_OK)
        return st;

    /* correlation weights: convolution reads the kernel backwards */
    float *w = malloc((size_t)klen * sizeof *w);
    if (!w)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    for (int t = 0; t < klen; t++)
        w[t] = p->correlate ? k[t] : k[klen - 1 - t];
    st = be->conv1d(in, out, (int)n, is_u8, w, klen, (int)p->border, p->border_value, p->bias, err,
                    errlen);
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
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "stencil radius %d is not within 0..%d",
                       radius, (IC_MAX_KERNEL_1D - 1) / 2);
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

    const ic_backend *be = NULL;
    int k = 0;
    const ic_status st = pick_matmul(variant, &be, &k, err, errlen);
    if (st != IC_OK)
        return st;
    return be->matmul(k, A, B, C, M, K, N, err, errlen);
}

ic_status ic_matmul(const float *A, const float *B, float *C, int M, int K, int N,
                    const char *variant)
{
    char err[256] = "";
    return ic_fail_msg(matmul(A, B, C, M, K, N, variant, err, sizeof err), err);
}
