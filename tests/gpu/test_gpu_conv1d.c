/*
 * test_gpu_conv1d.c - the CUDA 1D convolution and stencil (src/exercises/conv1d_cuda.cu,
 * seed 002's shared-memory tiles with halo cells) through ic_conv1d_f32/u8
 * and ic_stencil1d with backend "cuda": the same suite as test_conv1d (worked
 * examples, every border mode, awkward lengths around the 2048-output tile)
 * plus signals of up to 3 million samples and kernels up to IC_MAX_KERNEL_1D
 * taps, whose halos are wider than a block. Exits 77 (SKIPPED) when no CUDA
 * device is usable.
 */
#include <stdio.h>

#include "signal_oracle.h"

int main(void)
{
    float x = 1.0f, y = 0.0f;
    const ic_status s = ic_conv1d_f32(&x, &y, 1, &x, 1, NULL, "cuda");
    if (s == IC_ERR_NO_BACKEND) {
        printf("SKIPPED: %s\n", ic_last_error());
        return 77;
    }
    if (s != IC_OK || y != 1.0f) {
        printf("FAIL first call on cuda: %s: %s (y = %g)\n", ic_status_str(s), ic_last_error(),
               (double)y);
        return 1;
    }
    return ict_conv1d_suite("cuda", 1) ? 1 : 0;
}
