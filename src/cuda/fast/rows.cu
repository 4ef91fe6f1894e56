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
IC_ROWS_LAUNCH_R(extern template, 7, 3, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 0);
IC_ROWS_LAUNCH_R(extern template, 7, 1, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 3, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 1);
IC_ROWS_LAUNCH_R(extern template, 7, 1, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 3, 2);
IC_ROWS_LAUNCH_R(extern template, 7, 4, 2);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 3, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 4, 0);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 3, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 4, 1);
IC_ROWS_LAUNCH_R(extern template, 9, 1, 2);
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
    return soa || channels == 1 || channels == 3 || channels == 4;
}

extern "C" int ic_fast_rows_premultiplies(int channels, int soa)
{
    return !soa && channels == 4;
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
        return rows <= IC_FAST_RING_MAX_ROWS ? rows : 4;
    return ic_fast_rows_rolls(k, rank) ? 8 : 4;
}

/* rows_ring's rows a thread for an image (step samples a pixel, planes
 * planes): of the L up to 64 with L + K - 1 a multiple of K (K + 1, 2K + 1,
 * ...: the candidates table H calibrated when the loop ran whole turns of K
 * rows, d0feba3 to 630fcb9; it now reads L + K - 1 rows for any L, and these
 * picks stayed within 5% of every forced shape at 084234Z, H100), the one
 * that takes the fewest block times, whole waves of the launch (main and
 * side blocks) times the L + K - 1 input rows a thread. A wave is the blocks
 * that keep every SM issuing, IC_RING_FULL_WARPS warps an SM (or the
 * resident blocks, if fewer): blocks past them share the SM's issue and take
 * no less time than another wave. Table H at 45b0191 (H100, HD 7x7,
 * 256-thread blocks): 8 rows (391 main blocks, 1.6 waves) 0.0267 ms, 16
 * (207, one wave) 0.0198, 32 (115) 0.0234; on the H200 at 88f13aa 12 rows
 * (276 blocks with the side blocks, 1.2 waves) took 0.0278 against 16's
 * 0.0199. At a8833fa (H100, HD 5x5, 3 resident blocks of 8 warps), 16 rows
 * (243 blocks, 0.92 of a wave of 2 blocks an SM) took 0.0137 ms against 11
 * rows' 0.0145 (338 blocks, 0.85 of 3 resident blocks an SM but 1.3 of 2). */
#define IC_RING_FULL_WARPS 16
static int ring_rows(int width, int height, int step, int planes, int k, int sms)
{
    const int most = k == 5 ? IC_FAST_RING5_MAX_ROWS : IC_FAST_RING_MAX_ROWS;
    const int ty = icf_rows::ring_ty(k, step); /* warps a block (BX is a warp) */
    const int full = IC_RING_FULL_WARPS / ty, resident = icf_rows::ring_min_blocks(k, step);
    const long long slots =
        (long long)(sms > 0 ? sms : 1) * (full >= 1 && full < resident ? full : resident);
    long long best = -1;
    int pick = 1 + k;
    /* L + K - 1 a multiple of K (the calibrated candidates) */
    for (int L = 1 + k; L <= most; L += k) {
        icf_rows::rows_edges e;
        long long gy = 0;
        if (!icf_rows::rows_shape_of(width, height, step, k, L, &e, &gy, ty, 2))
            continue;
        const long long blocks = ((long long)e.main_bx + e.edge_bx) * gy * planes;
        const long long cost = (blocks + slots - 1) / slots * (L + k - 1);
        /* a tie goes to the larger L: fewer rows read in all (8K 9x9 at
         * c2090c1: 64 rows 0.189 ms against 28's 0.200, the same cost) */
        if (best < 0 || cost <= best) {
            best = cost;
            pick = L;
        }
    }
    return pick;
}

extern "C" int ic_fast_rows_shape(int width, int height, int channels, int soa, int k, int sms,
                                  int separable)
{
    /* Measured on the H100 (bench table H): a separable 5x5, 7x7 or 9x9 one
     * input row at a time (rows_ring), its rows by ring_rows (at 45b0191: HD
     * 7x7 0.0198 ms at 16 rows against 0.0242 at 2, 9x9 0.0283 against sep's
     * 0.0347; 8K 7x7 0.149 at 32 against 0.162 at 4, 9x9 0.193 against 0.226),
     * a 5x5 at up to IC_FAST_RING5_MAX_ROWS (at 886038b, the one-row loop: HD
     * 0.0134 ms at 16 rows against 0.0153 at 4 rows of 16 samples; 8K 0.0973
     * at 16 against 0.1061 at 4); a separable 3x3 wants 8 rows taken one input
     * row at a time (rows_roll) at every size (at 680e814: 8K 0.0774 ms
     * against 0.0809 at 4 and 0.0864 at 16, 720p 0.0080 against 0.0085 and
     * 0.0096, 480p 0.0075 against 0.0074 and 0.0086); the full sum of a 7x7 or
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
    const long long want = (long long)(sms > 0 ? sms : 1) * IC_FAST_ROWS_FILL;
    if (separable && k == 3)
        return 8;
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
    const int ty = ring ? icf_rows::ring_ty(a->kw, a->soa ? 1 : a->channels)
                        : icf_rows::by_of(a->kw); /* rows of threads a block */
    if (!a->w) {
        snprintf(err, errlen, "cuda fast rows: no device weights");
        return IC_ERR_INTERNAL;
    }
    if (!aligned || a->u16 || !ic_fast_rows_eligible(a->kw, a->kh, a->channels, a->soa) ||
        (a->premultiply && !ic_fast_rows_premultiplies(a->channels, a->soa)) || rank < 0 ||
        rank > IC_FAST_ROWS_MAX_RANK || (rank > 0 && (!row || !col)) ||
        (groups + ty - 1) / ty > IC_CU_MAX_GRID_Y)
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
