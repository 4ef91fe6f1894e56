/* kernel_internal.h - helpers shared by kernel.c (matrix text, files) and
 * kernels_named.c (NAME[:ARGS] generators), and the weights test the
 * backends' planners share (ic__weights_dyadic); not public. */
#ifndef IC_CORE_KERNEL_INTERNAL_H
#define IC_CORE_KERNEL_INTERNAL_H

#include <stddef.h>

#include "core/error.h"
#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Result of ic__kernel_number(). */
enum {
    IC_NUM_OK = 0,
    IC_NUM_SYNTAX,   /* not a decimal number */
    IC_NUM_NONFINITE /* "nan", "inf", or out of double range ("1e999") */
};

/* Parses the n bytes at s (no NUL needed) as a whole decimal number:
 * [+-] digits [. digits] [e [+-] digits] (".5" and "5." too). The C locale's
 * '.' is the decimal point whatever the process locale. */
int ic__kernel_number(const char *s, size_t n, double *out);

/* Writes the n bytes at s into dst as a quoted, printable token ('abc',
 * non-printable bytes as \xNN, long tokens cut with "..."). */
void ic__kernel_quote(char *dst, size_t dstlen, const char *s, size_t n);

/* ic_kernel_create with a reason in err on failure; name set to "WxH matrix". */
ic_status ic__kernel_make(ic_kernel *k, int width, int height, const float *coef, double divisor,
                          char *err, size_t errlen);

/* Builds the named kernel in the n bytes at text ("gaussian:5", "sobel-x").
 * Returns IC_ERR_KERNEL with a reason for an unknown name or bad arguments. */
ic_status ic__kernel_named(ic_kernel *k, const char *text, size_t n, char *err, size_t errlen);

/* 1 when every weight w[0..n) times scale (a power of two) is an integer:
 * 65536 for a kernel's weights (integer kernels over a power of two, box and
 * binomial kernels...), 2^20 for factors. Sums of such weights over integer
 * samples are exact in float32 and land exactly on .5 often; the oracle
 * rounds those ties to even, which only an exact computation reproduces, so
 * the backends keep such kernels off inexact methods (cpu.c, plan.cu, and
 * the rows kernels' rows_fast form). */
int ic__weights_dyadic(const float *w, size_t n, float scale);

#ifdef __cplusplus
}
#endif

#endif
