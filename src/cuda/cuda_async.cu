/*
 * cuda_async.cu - the asynchronous, banded host side of the CUDA strategy
 * backends: seed 004's "synchronous vs asynchronous loading" experiment made
 * into a pipeline (pinned staging, row bands with halos, several streams).
 *
 * An image of height H filtered with a kh-row kernel (ry = (kh-1)/2) is cut
 * into bands of output rows [y0, y1). Band b's source rows are [y0-ry, y1+ry):
 *  - for every border mode but CONSTANT, rows outside the image are mapped
 *    with ic_border_map on the host while staging, so the device band holds
 *    exactly the rows the kernel reads and its own vertical border logic never
 *    fires for the rows kept;
 *  - for CONSTANT (any float border value, which uint8 rows could not hold)
 *    the source rows are clipped to [0, H): inner bands get real image rows as
 *    halos, and the first and last band let the kernel's own constant border
 *    act above row 0 and below row H-1, which are the true image edges.
 * The kernel runs on the band as an image of (source rows) rows and only the
 * rows [y0, y1) come back. A band's source starts at y0 - ry rounded down to a
 * multiple of 16 rows (IC_AS_ROW_ALIGN, up to 15 more halo rows), so that
 * the kernel's tiles start on the rows they start on in the whole image: the
 * tensor methods group a column's taps in 16 rows from a tile's first row
 * (tensor_sep.cu). Every output sample therefore sums the same taps in the
 * same order as the whole-image sync path: results are identical. (Under a
 * device-memory limit too small for the extra rows, bands start at y0 - ry:
 * then only the tensor sep kernel's sums may differ in the last bit.)
 *
 * Pipeline: up to IC_CUDA_ASYNC_SLOTS slots, each a blocking CUDA stream with
 * its own pinned host buffers (cudaHostAlloc, kept and grown across calls) and
 * device band buffers. For band b on slot s = b % slots the host waits for
 * slot s's previous band, copies its output out of pinned memory, stages band
 * b into pinned memory, and enqueues upload, kernel and download on the
 * stream, so the CPU copies of one band overlap the transfers and kernels of
 * the others. For large pageable images the staging copies are the bottleneck
 * (one core copies about 10 GB/s), so each slot then gets its own host thread
 * taking bands slot, slot + slots, ...: the copies run in parallel.
 * A source or destination already in pinned memory (cudaHostAlloc'd by the
 * caller) is copied by DMA directly, with no staging copy.
 *
 * Row ranges (several GPUs, src/dispatch/multi.c): a job may ask for output
 * rows [row0, row1) only. The bands then cover that range alone, but every
 * coordinate above stays a whole-image one (H is the image height, halos are
 * mapped or clipped at the image's edges, not the range's), so a range gives
 * exactly the rows the whole image would, and nothing else of dst is written.
 *
 * Nothing here prints or exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_async.h"
#include "cuda/cuda_common.cuh"

/* Device band rows are padded to this many bytes. */
#define IC_AS_PITCH_ALIGN 256
/* Without a memory limit, bands of about this many bytes (at most 32 bands). */
#define IC_AS_BAND_BYTES ((size_t)2 << 20)
#define IC_AS_MAX_DEFAULT_BANDS 32
/* A band's first source row is a multiple of this (see the top). */
#define IC_AS_ROW_ALIGN 16
/* Pageable images at least this large are staged by one host thread per slot. */
#define IC_AS_THREADED_BYTES ((size_t)8 << 20)

enum { IC_AS_EV_START, IC_AS_EV_UP, IC_AS_EV_KERNEL, IC_AS_EV_DONE, IC_AS_EV_COUNT };

struct ic_as_slot {
    cudaStream_t stream;
    int has_stream;
    cudaEvent_t ev[IC_AS_EV_COUNT];
    int n_ev;
    uint8_t *d_in, *d_out; /* device band buffers, d_cap bytes each */
    size_t d_cap;
    uint8_t *h_in, *h_out; /* pinned staging buffers */
    size_t h_in_cap, h_out_cap;
    int busy;     /* work enqueued and not yet finished */
    int y0, rows; /* the band's output rows, for the flush */
    int staged;   /* output went to h_out (dst not pinned) */
};

struct ic_cuda_async {
    ic_as_slot slot[IC_CUDA_ASYNC_SLOTS];
    float *w;
    size_t w_cap; /* floats */
};

/* ---- the plan ------------------------------------------------------------ */

/* Geometry shared by plan and run. */
struct ic_as_geom {
    int H, ry, planes, constant;
    int y_first, y_end; /* the output rows computed: [y_first, y_end) of [0, H) */
    size_t row_bytes, dpitch, wbytes;
};

/* Geometry of a job described by a, computing output rows [y_first, y_end). */
static ic_as_geom geom_of(const ic_cuda_args *a, int y_first, int y_end)
{
    ic_as_geom g;
    g.H = a->height;
    g.y_first = y_first;
    g.y_end = y_end;
    g.ry = (a->kh - 1) / 2;
    g.planes = a->soa ? a->channels : 1;
    g.constant = a->border == IC_BORDER_CONSTANT;
    g.row_bytes = ((size_t)a->width * (size_t)(a->soa ? 1 : a->channels)) << ic_cuda_shift(a);
    g.dpitch = (g.row_bytes + IC_AS_PITCH_ALIGN - 1) / IC_AS_PITCH_ALIGN * IC_AS_PITCH_ALIGN;
    g.wbytes = (size_t)a->kw * (size_t)a->kh * sizeof(float);
    return g;
}

/* i rounded down to a multiple of al (i may be negative). */
static int band_top(int i, int al)
{
    return i >= 0 ? i / al * al : -((-i + al - 1) / al * al);
}

/* Source rows of the tallest band of bh output rows. */
static size_t band_src_rows(const ic_as_geom &g, int bh, int al)
{
    const size_t r = (size_t)bh + 2u * (size_t)g.ry + (size_t)(al - 1);
    return g.constant && r > (size_t)g.H ? (size_t)g.H : r;
}

/* Device bytes of one slot (source and destination band). */
static size_t slot_bytes(const ic_as_geom &g, int bh, int al)
{
    return 2u * (size_t)g.planes * band_src_rows(g, bh, al) * g.dpitch;
}

/* The plan for geometry g: bands over the g.y_end - g.y_first output rows,
 * their first source rows multiples of al. */
static ic_status plan_geom_al(const ic_as_geom &g, size_t device_memory, int al,
                              ic_cuda_band_plan *plan, char *err, size_t errlen)
{
    const int n_out = g.y_end - g.y_first; /* >= 1, checked by the callers */
    plan->min_bytes = slot_bytes(g, 1, al) + g.wbytes;
    plan->row_align = al;
    /* All products below stay far under 2^63: rows <= 2^20 + 254, pitch <= 2^22 + 256. */
    const size_t out_bytes = g.row_bytes * (size_t)n_out * (size_t)g.planes;
    size_t nb = out_bytes / IC_AS_BAND_BYTES;
    nb = nb < 1 ? 1 : nb > IC_AS_MAX_DEFAULT_BANDS ? IC_AS_MAX_DEFAULT_BANDS : nb;
    int bh = (int)(((size_t)n_out + nb - 1) / nb);
    if (bh < 2 * g.ry) /* halos would cost more than the band itself */
        bh = 2 * g.ry < n_out ? 2 * g.ry : n_out;
    int slots = IC_CUDA_ASYNC_SLOTS;
    if (device_memory > 0) {
        int found = 0;
        for (int k = IC_CUDA_ASYNC_SLOTS; k >= 1 && !found && device_memory > g.wbytes; k--) {
            size_t max_src =
                (device_memory - g.wbytes) / (size_t)k / (2u * (size_t)g.planes * g.dpitch);
            if (max_src > (size_t)IC_MAX_DIM * 2)
                max_src = (size_t)IC_MAX_DIM * 2;
            const long long bh_max = g.constant && max_src >= (size_t)g.H
                                         ? (long long)g.H
                                         : (long long)max_src - 2LL * g.ry - (al - 1);
            if (bh_max >= 1) {
                if (bh > bh_max)
                    bh = (int)bh_max;
                slots = k;
                found = 1;
            }
        }
        if (!found) {
            snprintf(err, errlen,
                     "device memory limit of %zu bytes is too small: one band of one row "
                     "needs %zu bytes",
                     device_memory, plan->min_bytes);
            return IC_ERR_TOO_LARGE;
        }
    }
    const int bands = (n_out + bh - 1) / bh;
    if (slots > bands)
        slots = bands;
    plan->slots = slots;
    plan->band_rows = bh;
    plan->bands = bands;
    plan->dev_pitch = g.dpitch;
    plan->dev_bytes = (size_t)slots * slot_bytes(g, bh, al) + g.wbytes;
    return IC_OK;
}

/* plan_geom_al aligned to IC_AS_ROW_ALIGN, or unaligned where only that fits
 * the device-memory limit. */
static ic_status plan_geom(const ic_as_geom &g, size_t device_memory, ic_cuda_band_plan *plan,
                           char *err, size_t errlen)
{
    ic_status s = plan_geom_al(g, device_memory, IC_AS_ROW_ALIGN, plan, err, errlen);
    if (s == IC_ERR_TOO_LARGE)
        return plan_geom_al(g, device_memory, 1, plan, err, errlen);
    /* the smallest limit that works is the unaligned plan's */
    plan->min_bytes = slot_bytes(g, 1, 1) + g.wbytes;
    return s;
}

static int args_valid(const ic_cuda_args *a)
{
    return a && a->width >= 1 && a->height >= 1 && a->width <= IC_MAX_DIM &&
           a->height <= IC_MAX_DIM && a->channels >= 1 && a->channels <= 4 && a->kh >= 1 &&
           a->kw >= 1;
}

extern "C" ic_status ic_cuda_async_plan(const ic_cuda_args *a, size_t device_memory,
                                        ic_cuda_band_plan *plan, char *err, size_t errlen)
{
    if (!args_valid(a) || !plan)
        return IC_ERR_INVALID_ARG;
    return plan_geom(geom_of(a, 0, a->height), device_memory, plan, err, errlen);
}

extern "C" ic_status ic_cuda_async_plan_rows(const ic_cuda_args *a, int row0, int row1,
                                             size_t device_memory, ic_cuda_band_plan *plan,
                                             char *err, size_t errlen)
{
    if (!args_valid(a) || !plan || row0 < 0 || row1 <= row0 || row1 > a->height)
        return IC_ERR_INVALID_ARG;
    return plan_geom(geom_of(a, row0, row1), device_memory, plan, err, errlen);
}

/* ---- buffers -------------------------------------------------------------- */

static void free_slot_device(ic_as_slot *sl)
{
    (void)cudaFree(sl->d_in);
    (void)cudaFree(sl->d_out);
    sl->d_in = sl->d_out = NULL;
    sl->d_cap = 0;
}

extern "C" void ic_cuda_async_free(ic_cuda_async *as)
{
    if (!as)
        return;
    for (int i = 0; i < IC_CUDA_ASYNC_SLOTS; i++) {
        ic_as_slot *sl = &as->slot[i];
        if (sl->has_stream)
            (void)cudaStreamSynchronize(sl->stream);
        free_slot_device(sl);
        (void)cudaFreeHost(sl->h_in);
        (void)cudaFreeHost(sl->h_out);
        for (int e = 0; e < sl->n_ev; e++)
            (void)cudaEventDestroy(sl->ev[e]);
        if (sl->has_stream)
            (void)cudaStreamDestroy(sl->stream);
    }
    (void)cudaFree(as->w);
    (void)cudaGetLastError();
    free(as);
}

extern "C" ic_status ic_cuda_ensure_pinned(uint8_t **p, size_t *cap, size_t n, char *err,
                                           size_t errlen)
{
    if (*p && *cap >= n)
        return IC_OK;
    (void)cudaFreeHost(*p);
    *p = NULL;
    *cap = 0;
    void *q = NULL;
    IC_CUDA_CHECK(cudaHostAlloc(&q, n, cudaHostAllocDefault));
    *p = (uint8_t *)q;
    *cap = n;
    return IC_OK;
}

/* Streams, events and buffers of `slots` slots for a plan; under a memory
 * limit every device buffer is released before anything grows, so that old
 * and new never add up past the limit. */
static ic_status ensure_slots(ic_cuda_async *as, const ic_as_geom &g, const ic_cuda_band_plan &pl,
                              size_t device_memory, char *err, size_t errlen)
{
    const size_t src_rows = band_src_rows(g, pl.band_rows, pl.row_align);
    const size_t d_need = (size_t)g.planes * src_rows * g.dpitch;
    const size_t hin_need = (size_t)g.planes * src_rows * g.row_bytes;
    const size_t hout_need = (size_t)g.planes * (size_t)pl.band_rows * g.row_bytes;
    int grow = 0;
    for (int i = 0; i < pl.slots; i++)
        grow |= as->slot[i].d_cap < d_need;
    if (grow && device_memory > 0)
        for (int i = 0; i < IC_CUDA_ASYNC_SLOTS; i++)
            free_slot_device(&as->slot[i]);
    for (int i = 0; i < pl.slots; i++) {
        ic_as_slot *sl = &as->slot[i];
        if (!sl->has_stream) {
            IC_CUDA_CHECK(cudaStreamCreate(&sl->stream)); /* blocking: orders with stream 0 */
            sl->has_stream = 1;
        }
        for (; sl->n_ev < IC_AS_EV_COUNT; sl->n_ev++)
            IC_CUDA_CHECK(cudaEventCreate(&sl->ev[sl->n_ev]));
        if (sl->d_cap < d_need) {
            free_slot_device(sl);
            IC_CUDA_CHECK(cudaMalloc((void **)&sl->d_in, d_need));
            IC_CUDA_CHECK(cudaMalloc((void **)&sl->d_out, d_need));
            sl->d_cap = d_need;
        }
        ic_status r = ic_cuda_ensure_pinned(&sl->h_in, &sl->h_in_cap, hin_need, err, errlen);
        if (r == IC_OK)
            r = ic_cuda_ensure_pinned(&sl->h_out, &sl->h_out_cap, hout_need, err, errlen);
        if (r != IC_OK)
            return r;
    }
    return IC_OK;
}

extern "C" int ic_cuda_is_pinned(const void *p)
{
    cudaPointerAttributes at;
    if (cudaPointerGetAttributes(&at, p) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return at.type == cudaMemoryTypeHost;
}

/* ---- the pipeline ----------------------------------------------------------- */

struct ic_as_run {
    ic_cuda_async *as;
    const ic_as_geom *g;
    const ic_cuda_band_plan *pl;
    const ic_cuda_args *tmpl;
    const ic_job *job;
    const ic_cuda_strategy *s;
    int src_pinned, dst_pinned;
    int failed; /* set (atomically) by a worker that failed: the others stop */
};

static const uint8_t *host_row(const ic_image *im, int plane, int y)
{
    return im->data + ((size_t)plane * (size_t)im->height + (size_t)y) * im->pitch;
}

/* Waits for a slot's band, adds its stage times, copies its output to dst. */
static ic_status finish_slot(ic_as_run *R, ic_as_slot *sl, double acc[3], char *err, size_t errlen)
{
    if (!sl->busy)
        return IC_OK;
    sl->busy = 0;
    const cudaError_t e = cudaStreamSynchronize(sl->stream);
    if (e != cudaSuccess) /* a kernel fault surfaces here: name the kernel */
        return ic_cuda_fail(err, errlen, R->s->kernel_name, (int)e);
    float up = 0, k = 0, down = 0;
    IC_CUDA_CHECK(cudaEventElapsedTime(&up, sl->ev[IC_AS_EV_START], sl->ev[IC_AS_EV_UP]));
    IC_CUDA_CHECK(cudaEventElapsedTime(&k, sl->ev[IC_AS_EV_UP], sl->ev[IC_AS_EV_KERNEL]));
    IC_CUDA_CHECK(cudaEventElapsedTime(&down, sl->ev[IC_AS_EV_KERNEL], sl->ev[IC_AS_EV_DONE]));
    acc[0] += up;
    acc[1] += k;
    acc[2] += down;
    if (sl->staged) {
        const ic_as_geom &g = *R->g;
        ic_image *dst = R->job->dst;
        for (int p = 0; p < g.planes; p++)
            for (int r = 0; r < sl->rows; r++)
                memcpy((uint8_t *)host_row(dst, p, sl->y0 + r),
                       sl->h_out + ((size_t)p * (size_t)sl->rows + (size_t)r) * g.row_bytes,
                       g.row_bytes);
    }
    return IC_OK;
}

/* Stages and enqueues band [y0, y1) on slot sl. */
static ic_status enqueue_band(ic_as_run *R, ic_as_slot *sl, int y0, int y1, char *err,
                              size_t errlen)
{
    const ic_as_geom &g = *R->g;
    const ic_image *src = R->job->src;
    ic_image *dst = R->job->dst;
    /* y0 - ry rounded down to a multiple of the plan's alignment (see the top) */
    const int s0 = g.constant && y0 - g.ry < 0 ? 0 : band_top(y0 - g.ry, R->pl->row_align);
    const int s1 = g.constant && y1 + g.ry > g.H ? g.H : y1 + g.ry;
    const size_t hb = (size_t)(s1 - s0);
    const cudaStream_t st = sl->stream;

    IC_CUDA_CHECK(cudaEventRecord(sl->ev[IC_AS_EV_START], st));
    if (R->src_pinned) {
        const int a0 = s0 < 0 ? 0 : s0, a1 = s1 > g.H ? g.H : s1;
        for (int p = 0; p < g.planes; p++) {
            uint8_t *dp = sl->d_in + (size_t)p * hb * g.dpitch;
            IC_CUDA_CHECK(cudaMemcpy2DAsync(dp + (size_t)(a0 - s0) * g.dpitch, g.dpitch,
                                            host_row(src, p, a0), src->pitch, g.row_bytes,
                                            (size_t)(a1 - a0), cudaMemcpyHostToDevice, st));
            for (int r = s0; r < s1; r++) /* halo rows outside the image (mapped) */
                if (r < 0 || r >= g.H)
                    IC_CUDA_CHECK(
                        cudaMemcpyAsync(dp + (size_t)(r - s0) * g.dpitch,
                                        host_row(src, p, ic_border_map(r, g.H, R->tmpl->border)),
                                        g.row_bytes, cudaMemcpyHostToDevice, st));
        }
    } else {
        for (int p = 0; p < g.planes; p++)
            for (int r = s0; r < s1; r++)
                memcpy(sl->h_in + ((size_t)p * hb + (size_t)(r - s0)) * g.row_bytes,
                       host_row(src, p, ic_border_map(r, g.H, R->tmpl->border)), g.row_bytes);
        IC_CUDA_CHECK(cudaMemcpy2DAsync(sl->d_in, g.dpitch, sl->h_in, g.row_bytes, g.row_bytes,
                                        hb * (size_t)g.planes, cudaMemcpyHostToDevice, st));
    }
    IC_CUDA_CHECK(cudaEventRecord(sl->ev[IC_AS_EV_UP], st));

    ic_cuda_args a = *R->tmpl;
    a.src = sl->d_in;
    a.src_pitch = g.dpitch;
    a.dst = sl->d_out;
    a.dst_pitch = g.dpitch;
    a.w = R->as->w;
    a.height = (int)hb;
    a.stream = (void *)st;
    const ic_status r = R->s->launch(&a, err, errlen);
    if (r != IC_OK)
        return r;
    IC_CUDA_CHECK(cudaEventRecord(sl->ev[IC_AS_EV_KERNEL], st));

    const size_t n = (size_t)(y1 - y0), o0 = (size_t)(y0 - s0);
    for (int p = 0; p < g.planes; p++) {
        const uint8_t *dp = sl->d_out + ((size_t)p * hb + o0) * g.dpitch;
        if (R->dst_pinned)
            IC_CUDA_CHECK(cudaMemcpy2DAsync((uint8_t *)host_row(dst, p, y0), dst->pitch, dp,
                                            g.dpitch, g.row_bytes, n, cudaMemcpyDeviceToHost, st));
        else
            IC_CUDA_CHECK(cudaMemcpy2DAsync(sl->h_out + (size_t)p * n * g.row_bytes, g.row_bytes,
                                            dp, g.dpitch, g.row_bytes, n, cudaMemcpyDeviceToHost,
                                            st));
    }
    IC_CUDA_CHECK(cudaEventRecord(sl->ev[IC_AS_EV_DONE], st));
    sl->busy = 1;
    sl->y0 = y0;
    sl->rows = (int)n;
    sl->staged = !R->dst_pinned;
    return IC_OK;
}

/* Bands b = first, first + step, ... on slots chosen by pick(b): one thread's
 * share of the pipeline. acc gets the stage times. */
static ic_status run_share(ic_as_run *R, int first, int step, int fixed_slot, double acc[3],
                           char *err, size_t errlen)
{
    const ic_cuda_band_plan &pl = *R->pl;
    ic_status r = IC_OK;
    int last = -1;
    for (int b = first; b < pl.bands && r == IC_OK; b += step) {
        if (__atomic_load_n(&R->failed, __ATOMIC_RELAXED))
            break;
        const int si = fixed_slot >= 0 ? fixed_slot : b % pl.slots;
        ic_as_slot *sl = &R->as->slot[si];
        const int y0 = R->g->y_first + b * pl.band_rows; /* < y_end: b < bands */
        const int y1 = pl.band_rows < R->g->y_end - y0 ? y0 + pl.band_rows : R->g->y_end;
        r = finish_slot(R, sl, acc, err, errlen);
        if (r == IC_OK)
            r = enqueue_band(R, sl, y0, y1, err, errlen);
        last = si;
    }
    if (fixed_slot >= 0) {
        if (r == IC_OK && last >= 0)
            r = finish_slot(R, &R->as->slot[last], acc, err, errlen);
    } else {
        for (int i = 0; i < pl.slots && r == IC_OK; i++)
            r = finish_slot(R, &R->as->slot[(pl.bands + i) % pl.slots], acc, err, errlen);
    }
    if (r != IC_OK)
        __atomic_store_n(&R->failed, 1, __ATOMIC_RELAXED);
    return r;
}

/* One host thread per slot, for pageable images: the staging copies of
 * several bands then run in parallel on the CPU while the GPU works. */
struct ic_as_worker {
    ic_as_run *R;
    int index, device;
    ic_status r;
    double acc[3];
    char err[256];
};

static void *worker_main(void *p)
{
    ic_as_worker *w = (ic_as_worker *)p;
    const cudaError_t e = cudaSetDevice(w->device);
    if (e != cudaSuccess) {
        w->r = ic_cuda_fail(w->err, sizeof w->err, "cudaSetDevice", (int)e);
        __atomic_store_n(&w->R->failed, 1, __ATOMIC_RELAXED);
        return NULL;
    }
    w->r = run_share(w->R, w->index, w->R->pl->slots, w->index, w->acc, w->err, sizeof w->err);
    return NULL;
}

static ic_status run_bands(ic_as_run *R, double acc[3], char *err, size_t errlen)
{
    const ic_cuda_band_plan &pl = *R->pl;
    const ic_as_geom &g = *R->g;
    const size_t bytes = g.row_bytes * (size_t)(g.y_end - g.y_first) * (size_t)g.planes;
    int device = 0;
    if (pl.slots < 2 || (R->src_pinned && R->dst_pinned) || bytes < IC_AS_THREADED_BYTES ||
        cudaGetDevice(&device) != cudaSuccess)
        return run_share(R, 0, 1, -1, acc, err, errlen);
    ic_as_worker w[IC_CUDA_ASYNC_SLOTS];
    pthread_t th[IC_CUDA_ASYNC_SLOTS];
    int started[IC_CUDA_ASYNC_SLOTS] = {0};
    for (int i = 0; i < pl.slots; i++) {
        memset(&w[i], 0, sizeof w[i]);
        w[i].R = R;
        w[i].index = i;
        w[i].device = device;
        if (i > 0)
            started[i] = pthread_create(&th[i], NULL, worker_main, &w[i]) == 0;
        if (i > 0 && !started[i]) /* no thread: this share runs on the caller, below */
            worker_main(&w[i]);
    }
    worker_main(&w[0]);
    ic_status r = IC_OK;
    for (int i = 0; i < pl.slots; i++) {
        if (i > 0 && started[i])
            pthread_join(th[i], NULL);
        for (int j = 0; j < 3; j++)
            acc[j] += w[i].acc[j];
        if (r == IC_OK && w[i].r != IC_OK) {
            r = w[i].r;
            snprintf(err, errlen, "%s", w[i].err);
        }
    }
    return r;
}

extern "C" ic_status ic_cuda_async_run(ic_cuda_async **asp, size_t device_memory,
                                       const ic_cuda_args *a, const ic_job *job,
                                       const ic_cuda_strategy *s, ic_timing *t, char *err,
                                       size_t errlen)
{
    if (!asp || !a || !job || !s || !t || !job->dst || !args_valid(a))
        return IC_ERR_INVALID_ARG;
    const int whole = job->row0 == 0 && job->row1 == 0;
    const int y_first = whole ? 0 : job->row0, y_end = whole ? a->height : job->row1;
    if (y_first < 0 || y_end <= y_first || y_end > a->height) {
        snprintf(err, errlen, "invalid output row range [%d, %d) of %d rows", job->row0, job->row1,
                 a->height);
        return IC_ERR_INVALID_ARG;
    }
    const ic_as_geom g = geom_of(a, y_first, y_end);
    ic_cuda_band_plan pl;
    ic_status r = plan_geom(g, device_memory, &pl, err, errlen);
    if (r != IC_OK)
        return r;
    if (!*asp) {
        *asp = (ic_cuda_async *)calloc(1, sizeof **asp);
        if (!*asp) {
            snprintf(err, errlen, "out of memory");
            return IC_ERR_NOMEM;
        }
    }
    ic_cuda_async *as = *asp;
    if ((r = ensure_slots(as, g, pl, device_memory, err, errlen)) != IC_OK)
        return r;
    const size_t nw = (size_t)a->kw * (size_t)a->kh;
    if (!as->w || as->w_cap < nw) {
        (void)cudaFree(as->w);
        as->w = NULL;
        as->w_cap = 0;
        IC_CUDA_CHECK(cudaMalloc((void **)&as->w, nw * sizeof(float)));
        as->w_cap = nw;
    }
    IC_CUDA_CHECK(cudaMemcpy(as->w, job->w, nw * sizeof(float), cudaMemcpyHostToDevice));
    if (s->prepare) {
        ic_cuda_args pa = *a;
        pa.w = as->w;
        if ((r = s->prepare(&pa, job->w, err, errlen)) != IC_OK)
            return r;
    }
    /* The weights are in place before any band's kernel (the slots' streams
     * are blocking streams, ordered after stream 0 anyway). */
    IC_CUDA_CHECK(cudaStreamSynchronize(0));

    ic_as_run R;
    R.as = as;
    R.g = &g;
    R.pl = &pl;
    R.tmpl = a;
    R.job = job;
    R.s = s;
    R.src_pinned = ic_cuda_is_pinned(job->src->data);
    R.dst_pinned = ic_cuda_is_pinned(job->dst->data);
    R.failed = 0;
    double acc[3] = {0, 0, 0};
    r = run_bands(&R, acc, err, errlen);
    if (r != IC_OK) { /* leave no copy in flight into buffers the caller may free */
        for (int i = 0; i < IC_CUDA_ASYNC_SLOTS; i++)
            if (as->slot[i].has_stream) {
                (void)cudaStreamSynchronize(as->slot[i].stream);
                as->slot[i].busy = 0;
            }
        (void)cudaGetLastError();
        return r;
    }
    t->upload_ms = acc[0];
    t->kernel_ms = acc[1];
    t->download_ms = acc[2];
    return IC_OK;
}
