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
 * Table H on the H100 (104244Z; warps an SM forced in 103535Z): 8K 7x7 and
 * 9x9 in one wave (149 rows) 0.0984 and 0.1282 ms against 0.1061 and
 * 0.1420 at 64 rows; HD 7x7 at 6 warps an SM (32 rows) 0.0141 against
 * 0.0154 at 4 (49 rows) and 0.0180 at 64; HD 9x9 at 4 (49 rows) 0.0216
 * against 0.0243 at 32 rows; a 5x5 at 32 rows: 8K 0.0926 against 0.0958 in
 * one wave, HD 0.0123 against 0.0127 at 24 rows. */
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
    /* Measured on the H100 (bench table H): a separable 5x5, 7x7 or 9x9 one
     * input row at a time (rows_ring), its rows by ring_rows (at 45b0191: HD
     * 7x7 0.0198 ms at 16 rows against 0.0242 at 2, 9x9 0.0283 against sep's
     * 0.0347; 8K 7x7 0.149 at 32 against 0.162 at 4, 9x9 0.193 against 0.226;
     * at 886038b a 5x5: HD 0.0134 ms at 16 rows against 0.0153 at 4 rows of
     * 16 samples, 8K 0.0973 at 16 against 0.1061 at 4); a separable 3x3
     * wants 8 rows taken one input row at a time (rows_roll) at every size
     * (at 680e814: 8K 0.0774 ms against 0.0809 at 4 and 0.0864 at 16, 720p
     * 0.0080 against 0.0085 and 0.0096, 480p 0.0075 against 0.0074 and
     * 0.0086), but 4 where 8 rows give an SM under 4 warps: once the side
     * items prefetched their rows, 480p at 4 rows took 0.0061 ms against
     * 0.0064 at 8 (table H, H100, 123043Z; 0.0061 against 0.0061 at
     * 121438Z), 720p at 8 0.0071 against 0.0073; the full sum of a 7x7 or
     * 9x9 2 (4 rows hold too many accumulators: 8K 0.256 and 0.432 ms against
     * 0.272 and 0.455 at 680e814), but a full 9x9 1 where 2 rows would not
     * fill the SMs (HD: 0.0394 ms at 1 row against 0.0416 at 2 in
     * peers-20261125T222019Z, 0.0391 against 0.0386 in -210829Z: 1 is never
     * more than 2% off, 2 was 6% off); a full 3x3 or 5x5 4 rows when the image
     * fills the SMs, else 2 (full 5x5 at 680e814: 8K 0.146 ms at 4 against
     * 0.157 at 2, HD 0.0188 against 0.0164). */
    const long long nsamp = (long long)width * (soa ? 1 : channels);
    const long long planes = soa ? channels : 1;
    const long long chunks = (nsamp + CHUNK - 1) / CHUNK;
    const long long nsm = sms > 0 ? sms : 1;
    const long long want = nsm * IC_FAST_ROWS_FILL;
    if (separable && k == 3) {
        /* 4 rows where 8 would leave an SM under 4 warps (480p), and from
         * IC_ROWS3_X4_SAMPLES on pixels without alpha where the measured copy
         * bandwidth is under IC_ROWS3_X4_BPS: with rows_fast's weights
         * (rows_impl.cuh) the H100's (2.9 TB/s) 8K RGB 3x3 took 0.0755 ms at
         * 4 rows against 0.0784 at 8 (4K 0.0239 against 0.0240, HD 0.0094
         * against 0.0092; table H, 20261126T210533Z, two runs each; before
         * rows_fast 8K 0.0779 against 0.0777), the H200's (4.1 TB/s) 0.0638
         * against 0.0603 (211414Z); once the 4 rows prefetched their input
         * rows (rows_chunk), the H100's 8K 0.0746 against 0.0784 and 4K
         * 0.0236 against 0.0242, HD 0.0095 against 0.0094 (214417Z). Pixels
         * with alpha keep 8: the 4-row kernels spill there (plan.cu). */
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
     * gives this method 16-bit jobs, fast_plan.cu): otherwise the generic kernel. */
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
    if (!aligned || a->u16 || !ic_fast_rows_eligible(a->kw, a->kh, a->channels, a->soa) ||
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
