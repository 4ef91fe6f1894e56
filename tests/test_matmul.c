/*
 * test_matmul.c - ic_matmul("cpu"), the reference matrix product, against the
 * float64 product (tests/support/signal_oracle.c): a worked 2x3 by 3x2
 * example, seed 002's square products in 16x16 tiles and sizes that are not
 * multiples of the tile (integer entries, exact), seeded random awkward
 * shapes, and argument errors. Also checks that "auto" works and that the
 * CUDA variants either work or answer IC_ERR_NO_BACKEND with a reason.
 */
#include <stdio.h>

#include "signal_oracle.h"

int main(void)
{
    int f = ict_matmul_suite("cpu", 0);
    const float A[4] = {1, 2, 3, 4}, B[4] = {0, 1, 1, 0};
    const char *variants[] = {NULL, "auto", "cuda-naive", "cuda-tiled", "cuda"};
    for (size_t i = 0; i < sizeof variants / sizeof variants[0]; i++) {
        float C[4] = {0, 0, 0, 0};
        const ic_status s = ic_matmul(A, B, C, 2, 2, 2, variants[i]);
        const int auto_pick = i < 2;
        if (s == IC_OK ? (C[0] != 2 || C[1] != 1 || C[2] != 4 || C[3] != 3)
                       : (auto_pick || s != IC_ERR_NO_BACKEND || !ic_last_error()[0])) {
            printf("FAIL variant %s: %s '%s', C = %g %g %g %g\n",
                   variants[i] ? variants[i] : "NULL", ic_status_str(s), ic_last_error(),
                   (double)C[0], (double)C[1], (double)C[2], (double)C[3]);
            f++;
        }
    }
    return f ? 1 : 0;
}
