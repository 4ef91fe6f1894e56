/*
 * matmul.c - the CPU reference matrix product behind ic_matmul("cpu"): the
 * textbook triple loop of seed 002, in i-k-j order so that the innermost loop
 * walks rows of B and C contiguously (and vectorises); every C entry still
 * sums its K products in increasing k, like the CUDA kernels.
 */
#include <stddef.h>
#include <string.h>

#include "exercises/linalg.h"

const char *const ic__matmul_cpu_variants[] = {"cpu", NULL};

ic_status ic__matmul_cpu(int variant, const float *A, const float *B, float *C, int M, int K, int N,
                         char *err, size_t errlen)
{
    (void)variant;
    (void)err;
    (void)errlen;
    for (int i = 0; i < M; i++) {
        float *c = C + (size_t)i * (size_t)N;
        memset(c, 0, (size_t)N * sizeof *c);
        for (int k = 0; k < K; k++) {
            const float a = A[(size_t)i * (size_t)K + (size_t)k];
            const float *b = B + (size_t)k * (size_t)N;
            for (int j = 0; j < N; j++)
                c[j] += a * b[j];
        }
    }
    return IC_OK;
}
