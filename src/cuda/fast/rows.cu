/*
 * rows.cu - the `rows` method of the cuda fast path: small square kernels
 * (3, 5, 7, 9) straight from global memory with 16-byte loads, no shared
 * memory and no barriers. This file holds the entry points (eligibility, the
 * rows-per-thread choice, the launch); the kernels and their launch helpers
 * are in rows_impl.cuh (and rows_ring.cuh: a separable 5x5..9x9 at 8 rows a
 * thread or more), instantiated by the parts rows_k*.cu and rows_ring_k*.cu
 * (a kernel size and some ranks each; for 7x7 and 9x9 one channel step of
 * them each) so that the build compiles them in parallel.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/fast/rows_ring.cuh"

IC_ROWS_LAUNCH_C(extern template, 3, 0);
IC_ROWS_LAUNCH_C(extern template, 3, 1);
IC_ROWS_LAUNCH_C(extern template, 3, 2);
IC_ROWS_LAUNCH_C(extern template, 5, 0);
IC_ROWS_LAUNCH_C(extern template, 5, 1);
IC_ROWS_LAUNCH_C(extern template, 5, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 1, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 2, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 3, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 1, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 2, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 3, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 1, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 2, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 3, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 2);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 2, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 3, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 4, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 2, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 3, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 4, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 2);
IC_ROWS_LAUNCH_R(extern template, 9, 2, 2);
IC_ROWS_LAUNCH_R(extern template, 9, 3, 2);
IC_ROWS_LAUNCH_R(extern template, 9, 4, 2);
IC_ROWS_LAUNCH_RING(extern template, 5);
IC_ROWS_LAUNCH_RING(extern template, 7);
IC_ROWS_LAUNCH_RING(extern template, 9);

using icf_rows::CHUNK;
using icf_rows::launch_k;

extern "C" int ic_fast_rows_eligible(int kw, int kh, int channels, int soa)
{
    if (kw != kh || (kw != 3 && kw != 5 && kw != 7 && kw != 9))
        return 0;
    return soa || (channels >= 1 && channels <= 4);
}

extern "C" int ic_fast_rows_premultiplies(int channels, int soa)
{
    return !soa && (channels == 2 || channels == 4);
}

extern "C" int ic_fast_rows_rolls(int k, int rank)
{
    return k == 3 && rank == 1;
}

extern "C" int ic_fast_rows_rings(int k, int rank, int rows)
{
    return rank == 1 && k > 3 && rows > 4;
}

extern "C" int ic_fast_rows_run(int k, int rank, int rows)
{
    if (rows == 1 || rows == 2 || rows == 4)
        return rows;
    if (ic_fast_rows_rings(k, rank, rows))
        return rows;
    return ic_fast_rows_rolls(k, rank) ? 8 : 4;
}

/* samples from which a separable 3x3 takes 4 rows a thread, not rows_roll's 8,
 * on a device whose measured copy bandwidth is under IC_ROWS3_X4_BPS bytes a
 * second (ic_fast_rows_shape): 8K RGB is 99.5M, 4K RGB 24.9M, HD RGB 6.2M */
#define IC_ROWS3_X4_SAMPLES (16LL << 20)
#define IC_ROWS3_X4_BPS 3.5e12

/* rows_ring's rows a thread for an image (step samples a pixel, planes
 * planes) on `sms` SMs, by the warps an SM its main blocks get (ring_grid:
 * blocks of 4 warps, handed out in order, so evenly): a 7x7 or 9x9 at full
 * residency in one wave (ring_warps) when that leaves a thread
 * IC_RING_SMALL_ROWS rows or more; else, for an image that small, at 6
 * warps an SM (7x7) or 4 (9x9), the rows a thread the latency of a row
 * wants; a 5x5 at 32 rows, or at 6 warps an SM where that gives fewer.
 * One wave beats fewer rows a thread where the image fills it; smaller images
 * want the latency hidden by rows instead (docs/design/rows.md). */
#define IC_RING_SMALL_ROWS 32
static int ring_rows(int width, int height, int step, int planes, int k, int sms)
{
    const long long n = (long long)height - 2 * (k / 2); /* interior output rows */
    icf_rows::rows_edges e;
    long long gy = 0;
    if (n < 1 || !icf_rows::rows_shape_of(width, height, step, k, 1, &e, &gy, 1, 2))
        return 4;
    const long long cw = icf_rows::ring_grid_of(e, planes).cw; /* warp columns */
    if (cw < 1)
        return 4;
    const int small = icf_rows::ring_rows_at(n, cw, planes, sms, k == 9 ? 4 : 6);
    if (k == 5)
        return small < IC_RING_SMALL_ROWS ? small : IC_RING_SMALL_ROWS;
    const int full = icf_rows::ring_rows_at(n, cw, planes, sms, icf_rows::ring_warps(k, step));
    return full >= IC_RING_SMALL_ROWS ? full : small;
}

extern "C" int ic_fast_rows_shape(int width, int height, int channels, int soa, int k, int sms,
                                  double copy_bps, int separable)
{
    /* Rows a thread, as measured (docs/design/rows.md): a separable 5x5,
     * 7x7 or 9x9 one input row at a time (rows_ring), its rows by ring_rows;
     * a separable 3x3 8 rows one input row at a time (rows_roll), but 4
     * where 8 rows give an SM under 4 warps; the full sum of a 7x7 or 9x9 2
     * (4 rows hold too many accumulators), but a full 9x9 1 where 2 rows
     * would not fill the SMs (1 is never far off, 2 can be); a full 3x3 or
     * 5x5 4 rows when the image fills the SMs, else 2. */
    const long long nsamp = (long long)width * (soa ? 1 : channels);
    const long long planes = soa ? channels : 1;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    const long long nsm = sms > 0 ? sms : 1;
    const long long want = nsm * IC_FAST_ROWS_FILL;
    if (separable && k == 3) {
        /* 4 rows where 8 would leave an SM under 4 warps (480p), and from
         * IC_ROWS3_X4_SAMPLES on pixels without alpha where the measured copy
         * bandwidth is under IC_ROWS3_X4_BPS: on slower memory the 4-row
         * kernel wins on large images, on faster memory 8 rows do
         * (docs/design/rows.md). Pixels with alpha keep 8: the 4-row kernels
         * spill there (plan.cu). */
        if (nsamp * height * planes >= IC_ROWS3_X4_SAMPLES && copy_bps < IC_ROWS3_X4_BPS &&
            !ic_fast_rows_premultiplies(channels, soa))
            return 4;
        return chunks * ((height + 7) / 8) * planes >= nsm * 128 ? 8 : 4;
    }
    if (separable && k >= 5)
        return ring_rows(width, height, soa ? 1 : channels, (int)planes, k, sms);
    if (!separable && k >= 9)
        return chunks * ((height + 1) / 2) * planes >= want ? 2 : 1;
    if (!separable && k >= 7)
        return 2;
    return chunks * ((height + 3) / 4) * planes >= want ? 4 : 2;
}

extern "C" ic_status ic_fast_rows_launch(const ic_cuda_args *a, const float *w, const float *row,
                                         const float *col, int rank, int rows, char *err,
                                         size_t errlen)
{
    /* 16-byte loads and stores need aligned rows (cudaMallocPitch gives them;
     * a caller's device pointer may not) of uint8 samples (the planner never
     * gives this method 16-bit jobs, plan.cu): otherwise the generic kernel. */
    const int aligned = ((uintptr_t)a->src % 16 == 0) && ((uintptr_t)a->dst % 16 == 0) &&
                        a->src_pitch % 16 == 0 && a->dst_pitch % 16 == 0;
    rows = ic_fast_rows_run(a->kw, rank, rows);
    const int ring = ic_fast_rows_rings(a->kw, rank, rows);
    const long long groups = ((long long)a->height + rows - 1) / rows;
    const int ty = icf_rows::by_of(a->kw); /* rows of threads a block (the ring's grid is 1D) */
    if (!a->w) {
        snprintf(err, errlen, "cuda fast rows: no device weights");
        return IC_ERR_INTERNAL;
    }
    if (!aligned || a->u16 || a->f32 || !ic_fast_rows_eligible(a->kw, a->kh, a->channels, a->soa) ||
        (a->premultiply && !ic_fast_rows_premultiplies(a->channels, a->soa)) || rank < 0 ||
        rank > IC_FAST_ROWS_MAX_RANK || (rank > 0 && (!row || !col)) ||
        (!ring && (groups + ty - 1) / ty > IC_CU_MAX_GRID_Y))
        return ic_cu_launch_fallback(a, "cuda fast global kernel", err, errlen);
    if (ring)
        return a->kw == 5   ? icf_rows::launch_ring<5>(a, row, col, rows, err, errlen)
               : a->kw == 7 ? icf_rows::launch_ring<7>(a, row, col, rows, err, errlen)
                            : icf_rows::launch_ring<9>(a, row, col, rows, err, errlen);
    switch (a->kw) {
    case 3:
        return launch_k<3>(a, w, row, col, rank, rows, err, errlen);
    case 5:
        return launch_k<5>(a, w, row, col, rank, rows, err, errlen);
    case 7:
        return launch_k<7>(a, w, row, col, rank, rows, err, errlen);
    default:
        return launch_k<9>(a, w, row, col, rank, rows, err, errlen);
    }
}
