/*
 * border.h - border index mapping and sample rounding, shared by every backend
 * (C host code and CUDA device code alike), so that no kernel variant carries
 * its own copy of the boundary rules.
 *
 * ic_border_map(i, n, mode) maps any integer coordinate i onto [0, n) following
 * the border mode, or returns -1 for IC_BORDER_CONSTANT outside the image.
 * Reflections are periodic, so they stay right when the kernel is larger than
 * the image (seed 004's padding tables are the n >= 2 case).
 */
#ifndef IC_CORE_BORDER_H
#define IC_CORE_BORDER_H

#include "imgconv.h"

#if defined(__CUDACC__)
#define IC_HD __host__ __device__ __forceinline__
#else
#define IC_HD static inline
#endif

/* Non-negative remainder of a by m (m > 0). */
IC_HD int ic_mod(int a, int m)
{
    int r = a % m;
    return r < 0 ? r + m : r;
}

IC_HD int ic_border_map(int i, int n, int mode)
{
    if (i >= 0 && i < n)
        return i;
    switch (mode) {
    case IC_BORDER_REPLICATE:
        return i < 0 ? 0 : n - 1;
    case IC_BORDER_MIRROR: { /* reflect-101: period 2n-2, edge not repeated */
        if (n == 1)
            return 0;
        int p = ic_mod(i, 2 * n - 2);
        return p < n ? p : 2 * n - 2 - p;
    }
    case IC_BORDER_REFLECT: { /* symmetric: period 2n, edge repeated */
        int p = ic_mod(i, 2 * n);
        return p < n ? p : 2 * n - 1 - p;
    }
    case IC_BORDER_WRAP:
        return ic_mod(i, n);
    default: /* IC_BORDER_CONSTANT */
        return -1;
    }
}

/* Rounds a float32 sum to a uint8 sample: nearest, ties to even, then clamps
 * to [0, 255]; NaN becomes 0. */
#if defined(__CUDACC__)
__host__ __device__ __forceinline__ unsigned char ic_round_u8(float v)
{
#if defined(__CUDA_ARCH__)
    /* one saturating conversion (F2IP on sm_90, in place of two clamps and
     * F2I): nearest, ties to even, clamped to [0, 255], NaN to 0, as the
     * rule says for NaN, infinities, ties, -0 and values past either end
     * (test_gpu_diff checks it against the CPU's rounding) */
    unsigned r;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(v));
    return (unsigned char)r;
#else
    v = fminf(fmaxf(v, 0.0f), 255.0f); /* fmaxf(NaN, 0) == 0 */
    return (unsigned char)rintf(v);
#endif
}
#else
#include <math.h>
static inline unsigned char ic_round_u8(float v)
{
    /* comparisons, not fminf/fmaxf: without SSE4 those are libm calls that
     * cost most of a scalar sample; NaN fails `v > 0` and becomes 0 as well */
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (unsigned char)rintf(v); /* default rounding mode: ties to even */
}

/* ic_round_u8's rule for IC_U16 samples: nearest, ties to even, clamped to
 * [0, 65535]; NaN becomes 0. */
static inline unsigned short ic_round_u16(float v)
{
    v = v > 0.0f ? v : 0.0f;
    v = v < 65535.0f ? v : 65535.0f;
    return (unsigned short)rintf(v);
}
#endif

#endif /* IC_CORE_BORDER_H */
