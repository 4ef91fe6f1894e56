/*
 * test_gpu_matmul.c - the CUDA matrix products (src/exercises/matmul_cuda.cu) through
 * ic_matmul: seed 002's naive kernel ("cuda-naive"), its 16x16 shared-memory
 * tiles ("cuda-tiled") and the register-blocked tiles ("cuda"), each through
 * the suite of test_matmul plus large and degenerate shapes (one column, one
 * row, K = 1, more row tiles than a grid holds). Exits 77 (SKIPPED) when no
 * CUDA device is usable.
 */
#include <stdio.h>

#include "signal_oracle.h"

int main(void)
{
    const float A = 2.0f, B = 3.0f;
    float C = 0.0f;
    const ic_status s = ic_matmul(&A, &B, &C, 1, 1, 1, "cuda");
    if (s == IC_ERR_NO_BACKEND) {
        printf("SKIPPED: %s\n", ic_last_error());
        return 77;
    }
    if (s != IC_OK || C != 6.0f) {
        printf("FAIL first call on cuda: %s: %s (C = %g)\n", ic_status_str(s), ic_last_error(),
               (double)C);
        return 1;
    }
    int f = 0;
    f += ict_matmul_suite("cuda-naive", 1);
    f += ict_matmul_suite("cuda-tiled", 1);
    f += ict_matmul_suite("cuda", 1);
    return f ? 1 : 0;
}
