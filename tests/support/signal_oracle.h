/*
 * signal_oracle.h - float64 references and the test suites of the 1D
 * convolution, the 1D stencil and the matrix product (issue 7; seeds 001 and
 * 002). tests/test_conv1d.c and tests/test_matmul.c run the suites on the CPU,
 * tests/gpu/test_gpu_conv1d.c and test_gpu_matmul.c run the same suites on the
 * CUDA code with larger cases.
 *
 * The references follow the formulas in include/imgconv_course.h literally, one
 * output at a time in float64, with the test suite's own border mapping
 * (ict_border_map, oracle.h) rather than the library's.
 *
 * Acceptance: a float32 result may differ from the float64 value by the
 * rounding of a float32 sum, bounded by (terms + 2) * 2^-23 * (sum of the
 * magnitudes of the terms); a uint8 result must equal the rounding of some
 * value within that bound (so only a value on a rounding boundary may go either
 * way). Integer-valued worked examples must match exactly.
 */
#ifndef ICT_SIGNAL_ORACLE_H
#define ICT_SIGNAL_ORACLE_H

#include <stdint.h>

#include "imgconv_course.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The float64 value of output i of the 1D convolution of x (n samples) with k
 * (klen weights) under p (never NULL); *mag (may be NULL) receives
 * |bias| + sum |k[j] * sample|, the scale of the float32 rounding error. */
double ict_conv1d_at(const double *x, int n, const float *k, int klen, const ic_params *p, int i,
                     double *mag);

/* The float64 product C = A * B (row-major) and, per entry, the sum of
 * |A[i][k] * B[k][j]| into mag (may be NULL). */
void ict_matmul_ref(const float *A, const float *B, int M, int K, int N, double *C, double *mag);

/* Largest float32 rounding error accepted for a sum of `terms` terms whose
 * magnitudes add up to mag. */
double ict_sum_tolerance(int terms, double mag);

/* Runs the 1D suite on `backend` ("cpu" or "cuda"): the seeds' worked examples,
 * hand-computed border and orientation cases, seeded random cases of awkward
 * lengths (float32 and uint8), the stencil, and argument errors. big != 0 adds
 * long signals and long kernels (the GPU runs). IC_TEST_QUICK=1 in the
 * environment runs fewer and smaller cases (for compute-sanitizer). Returns the
 * number of failures (each printed with its seed and parameters). */
int ict_conv1d_suite(const char *backend, int big);

/* Runs the matrix product suite on `variant` ("cpu", "cuda-naive",
 * "cuda-tiled", "cuda"): a worked example, the seed's square tiles (exact),
 * random awkward shapes against the float64 product, and argument errors.
 * big != 0 adds large and degenerate shapes (not with IC_TEST_QUICK=1).
 * Returns the number of failures. */
int ict_matmul_suite(const char *variant, int big);

#ifdef __cplusplus
}
#endif

#endif /* ICT_SIGNAL_ORACLE_H */
