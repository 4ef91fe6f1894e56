/*
 * test_conv1d.c - ic_conv1d_f32/u8 and ic_stencil1d on the CPU against the
 * float64 reference (tests/support/signal_oracle.c): seed 001's stencil
 * (radius 3, zero ghost cells), seed 002's 1D convolution with halo cells,
 * every border mode and both orientations worked out by hand, seeded random
 * signals of awkward lengths (around the tiles, kernels longer than the
 * signal), uint8 rounding, and argument errors. Also checks that "auto"
 * works and that "cuda" either works or answers IC_ERR_NO_BACKEND with a
 * reason (a build without CUDA, or CI's machine without a GPU).
 */
#include <stdio.h>

#include "signal_oracle.h"

int main(void)
{
    int f = ict_conv1d_suite("cpu", 0);
    float in[5] = {1, 2, 3, 4, 5}, out[5], k[3] = {1, 1, 1};
    const ic_status s = ic_conv1d_f32(in, out, 5, k, 3, NULL, NULL);
    /* NULL params are the defaults: mirror border, so out[0] = 2+1+2, out[4] = 4+5+4. */
    if (s != IC_OK || out[0] != 5 || out[2] != 9 || out[4] != 13) {
        printf("FAIL backend auto: %s %s\n", ic_status_str(s), ic_last_error());
        f++;
    }
    return f ? 1 : 0;
}
