/*
 * batch.cu - the batched launches of the cuda fast path: the
 * descriptor table of a batch, its upload, and one launch per method - the
 * rows kernels of batch_impl.cuh (the full-sum images and the separable ones
 * apart; instantiated per kernel size and channel step by
 * batch_rows_k*_s*.cu) and the generic one-thread-per-sample kernel below,
 * which runs cuda_common.cuh's ic_cu_conv_block (ic_cu_conv_kernel's body) for each block's
 * image. plan.cu decides which images take which launch (their own plans).
 *
 * A batch of up to icf_batch::PARAM_CAP images passes each launch its part
 * of the table as a kernel parameter (copied at the launch: nothing to keep
 * or wait for). A larger one uploads it: the table lives in one of SLOTS
 * pinned host buffers and its device twin; the slot is reused only after the
 * event recorded behind its launches has completed, so an asynchronous batch
 * never waits for itself and never overwrites a table a queued launch still
 * reads (whatever the streams).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(extern template, 3, 1);
IC_BATCH_ROWS(extern template, 3, 2);
IC_BATCH_ROWS(extern template, 3, 3);
IC_BATCH_ROWS(extern template, 3, 4);
IC_BATCH_ROWS(extern template, 5, 1);
IC_BATCH_ROWS(extern template, 5, 2);
IC_BATCH_ROWS(extern template, 5, 3);
IC_BATCH_ROWS(extern template, 5, 4);
IC_BATCH_ROWS(extern template, 7, 1);
IC_BATCH_ROWS(extern template, 7, 2);
IC_BATCH_ROWS(extern template, 7, 3);
IC_BATCH_ROWS(extern template, 7, 4);
IC_BATCH_ROWS(extern template, 9, 1);
IC_BATCH_ROWS(extern template, 9, 2);
IC_BATCH_ROWS(extern template, 9, 3);
IC_BATCH_ROWS(extern template, 9, 4);

using icf_batch::batch_img;
using icf_batch::batch_tab;

namespace
{

constexpr int SLOTS = 4;
constexpr long long MAX_BLOCKS = 0x7fffffffLL;

/* The generic method for the images of tab: each block does the work of block
 * (bx, by) of plane bz of the one-image launch (ic_cu_conv_block with the
 * ic_cu_direct strategy: 32 x 8 threads, one output sample each). */
template <class TAB>
__global__ void __launch_bounds__(IC_CU_DIRECT_BX *IC_CU_DIRECT_BY)
    batch_global_kernel(const ic_cuda_args base, const __grid_constant__ TAB tab)
{
    const long long b = blockIdx.x;
    const batch_img &d = tab.at(icf_batch::batch_find(tab, b));
    const ic_cuda_args a = icf_batch::batch_args(base, d);
    unsigned bx, by, bz;
    icf_batch::batch_block(d, b, &bx, &by, &bz);
    ic_cu_conv_block<ic_cu_direct>(a, (int)bx, (int)by, (int)bz, ic_cu_wglobal{a.w});
}

/* The generic launch of the images of t, `blocks` blocks in all. */
ic_status global_launch(const ic_cuda_args *base, const batch_tab &t, long long blocks, char *err,
                        size_t errlen)
{
    const dim3 block(IC_CU_DIRECT_BX, IC_CU_DIRECT_BY);
    const cudaStream_t stream = (cudaStream_t)base->stream;
    return icf_batch::launch_with_table(
        t,
        [&](const auto &tab) {
            batch_global_kernel<std::decay_t<decltype(tab)>>
                <<<(unsigned)blocks, block, 0, stream>>>(*base, tab);
        },
        "cuda fast batched global kernel launch", err, errlen);
}

} // namespace

struct ic_fast_batch {
    struct slot {
        batch_img *host; /* pinned */
        batch_img *dev;
        int cap;          /* images both hold */
        cudaEvent_t done; /* recorded behind the slot's last launches */
        int pending;      /* done has been recorded */
    } s[SLOTS];
    int next;
    int params; /* the driver takes tables in kernel parameters (CUDA 12.1) */
};

extern "C" void ic_fast_batch_free(ic_fast_batch *b)
{
    if (!b)
        return;
    for (int i = 0; i < SLOTS; i++) {
        if (b->s[i].done) {
            (void)cudaEventSynchronize(b->s[i].done);
            (void)cudaEventDestroy(b->s[i].done);
        }
        (void)cudaFreeHost(b->s[i].host);
        (void)cudaFree(b->s[i].dev);
    }
    (void)cudaGetLastError();
    free(b);
}

/* A slot able to hold n images, free of queued readers. */
static ic_status take_slot(ic_fast_batch *b, int n, ic_fast_batch::slot **out, char *err,
                           size_t errlen)
{
    ic_fast_batch::slot *sl = &b->s[b->next];
    b->next = (b->next + 1) % SLOTS;
    if (sl->pending) {
        IC_CUDA_CHECK(cudaEventSynchronize(sl->done));
        sl->pending = 0;
    }
    if (!sl->done)
        IC_CUDA_CHECK(cudaEventCreateWithFlags(&sl->done, cudaEventDisableTiming));
    if (sl->cap < n) {
        (void)cudaFreeHost(sl->host);
        (void)cudaFree(sl->dev);
        sl->host = NULL;
        sl->dev = NULL;
        sl->cap = 0;
        const int cap = n < 64 ? 64 : n;
        IC_CUDA_CHECK(cudaMallocHost((void **)&sl->host, (size_t)cap * sizeof(batch_img)));
        IC_CUDA_CHECK(cudaMalloc((void **)&sl->dev, (size_t)cap * sizeof(batch_img)));
        sl->cap = cap;
    }
    *out = sl;
    return IC_OK;
}

/* The pointers, pitches and size of image `it` in its table entry. */
static void set_image(batch_img *d, const ic_fast_batch_item *it)
{
    d->mbx = ic_cu_magic(d->bx);
    d->mby = ic_cu_magic(d->by);
    d->src = it->src;
    d->dst = it->dst;
    d->src_pitch = it->src_pitch;
    d->dst_pitch = it->dst_pitch;
    d->width = it->width;
    d->height = it->height;
}

/* Image `it` as the next entry d of a rows launch at `rows` rows per thread
 * with *blocks blocks so far; 0 when its grid is too large for the rows
 * kernel (ic_fast_rows_launch sends such an image to the generic one). */
static int rows_entry(batch_img *d, const ic_fast_batch_item *it, int step, int k, int rows,
                      int planes, long long *blocks)
{
    long long grid_y = 0;
    memset(d, 0, sizeof *d);
    if (!icf_rows::rows_shape_of(it->width, it->height, step, k, rows, &d->e, &grid_y,
                                 icf_rows::BY) ||
        grid_y > IC_CU_MAX_GRID_Y)
        return 0;
    d->bx = d->e.main_bx + d->e.edge_bx;
    d->by = (unsigned)grid_y;
    d->first = *blocks;
    *blocks += (long long)d->bx * d->by * planes;
    set_image(d, it);
    return 1;
}

/* The blocks of every one of the n images of a launch of `blocks` blocks
 * when they all have the same number, else 0. */
static unsigned uniform_blocks(const batch_img *t, int n, long long blocks)
{
    if (n <= 0 || blocks % n != 0)
        return 0;
    const long long nb = blocks / n;
    for (int i = 0; i < n; i++)
        if (t[i].first != (long long)i * nb)
            return 0;
    return (unsigned)nb;
}

/* The rows launch of the images of t, of one rank (0: the full sum), at
 * `rows` rows per thread, for kernel size k. */
static ic_status rows_launch_k(int k, const ic_cuda_args *base, const float *w, const float *row,
                               const float *col, int rank, int rows, const batch_tab &t,
                               long long blocks, char *err, size_t errlen)
{
    switch (k) {
    case 3:
        return icf_batch::rows_launch<3>(base, w, row, col, rank, rows, t, (unsigned)blocks, err,
                                         errlen);
    case 5:
        return icf_batch::rows_launch<5>(base, w, row, col, rank, rows, t, (unsigned)blocks, err,
                                         errlen);
    case 7:
        return icf_batch::rows_launch<7>(base, w, row, col, rank, rows, t, (unsigned)blocks, err,
                                         errlen);
    default:
        return icf_batch::rows_launch<9>(base, w, row, col, rank, rows, t, (unsigned)blocks, err,
                                         errlen);
    }
}

/* The batch's ic_fast_batch, created on first use. */
static ic_status batch_state(ic_fast_batch **bp, char *err, size_t errlen)
{
    if (*bp)
        return IC_OK;
    ic_fast_batch *b = (ic_fast_batch *)calloc(1, sizeof(ic_fast_batch));
    if (!b) {
        snprintf(err, errlen, "cuda fast batch: out of memory");
        return IC_ERR_NOMEM;
    }
    int driver = 0;
    b->params =
        IC_BATCH_PARAM_CAP > 0 && cudaDriverGetVersion(&driver) == cudaSuccess && driver >= 12010;
    *bp = b;
    return IC_OK;
}

extern "C" ic_status ic_fast_batch_launch(ic_fast_batch **bp, const ic_cuda_args *base,
                                          const float *w, const float *row, const float *col,
                                          int sms, const ic_fast_batch_item *items, int n,
                                          int *launched, char *err, size_t errlen)
{
    *launched = 0;
    if (n <= 0)
        return IC_OK;
    const int k = base->kw;
    const int step = base->soa ? 1 : base->channels;
    const int planes_rows = base->soa ? base->channels : 1;
    int *method = (int *)malloc((size_t)n * sizeof(int)); /* 1: rows, 0: global */
    batch_img *tab = (batch_img *)calloc((size_t)n, sizeof(batch_img));
    if (!method || !tab) {
        free(method);
        free(tab);
        snprintf(err, errlen, "cuda fast batch: out of memory");
        return IC_ERR_NOMEM;
    }
    /* Rows per thread of the full-sum images: ic_fast_rows_shape's rule over
     * the whole batch (enough threads for every SM at 4 rows, else 2). */
    int ranks = 0;
    long long work = 0;
    for (int i = 0; i < n; i++) {
        method[i] = items[i].method == IC_FAST_ROWS;
        if (!method[i])
            continue;
        if (items[i].rank > 0)
            ranks = items[i].rank;
        else
            work += ((long long)items[i].width * step + icf_rows::CHUNK - 1) / icf_rows::CHUNK *
                    ((items[i].height + 3) / 4) * planes_rows;
    }
    const int rows0 = k == 3 && work >= (long long)(sms > 0 ? sms : 1) * IC_FAST_ROWS_FILL ? 4 : 2;
    /* rows per thread of the separable images: 4, a separable 3x3 8
     * (rows_roll), as ic_fast_rows_shape gives each image */
    const int rows1 = ic_fast_rows_rolls(k, ranks) ? 8 : 4;
    /* the table: the full-sum rows images, the separable ones, the others;
     * the blocks of each launch end to end from 0 */
    int nf = 0, ns = 0;
    long long blocks_f = 0, blocks_s = 0, blocks_g = 0;
    for (int sep = 0; sep < 2; sep++)
        for (int i = 0; i < n; i++) {
            if (!method[i] || (items[i].rank > 0) != sep)
                continue;
            if (!rows_entry(&tab[nf + ns], &items[i], step, k, sep ? rows1 : rows0, planes_rows,
                            sep ? &blocks_s : &blocks_f))
                method[i] = 0; /* as ic_fast_rows_launch: the generic kernel */
            else if (sep)
                ns++;
            else
                nf++;
        }
    const int nr = nf + ns;
    int ng = 0;
    for (int i = 0; i < n; i++) {
        if (method[i])
            continue;
        batch_img &d = tab[nr + ng];
        memset(&d, 0, sizeof d);
        d.bx = ic_cu_div_up(items[i].width, IC_CU_DIRECT_BX);
        d.by = ic_cu_div_up(items[i].height, IC_CU_DIRECT_BY);
        d.first = blocks_g;
        blocks_g += (long long)d.bx * d.by * base->channels;
        set_image(&d, &items[i]);
        ng++;
    }
    free(method);
    if (blocks_f > MAX_BLOCKS || blocks_s > MAX_BLOCKS || blocks_g > MAX_BLOCKS) {
        free(tab);
        return IC_OK; /* declined: the caller runs the images one by one */
    }
    ic_status s = batch_state(bp, err, errlen);
    if (s != IC_OK) {
        free(tab);
        return s;
    }
    const cudaStream_t stream = (cudaStream_t)base->stream;
    /* the launches' tables: in their parameters, else uploaded to a slot */
    const batch_img *host = tab, *dev = NULL;
    ic_fast_batch::slot *sl = NULL;
    if (!(*bp)->params || n > icf_batch::PARAM_CAP) {
        s = take_slot(*bp, n, &sl, err, errlen);
        if (s == IC_OK)
            memcpy(sl->host, tab, (size_t)n * sizeof(batch_img));
        free(tab);
        tab = NULL;
        if (s != IC_OK)
            return s;
        host = sl->host;
        dev = sl->dev;
    }
    *launched = 1; /* from here on something may be queued */
    if (sl)
        IC_CUDA_CHECK(cudaMemcpyAsync(sl->dev, sl->host, (size_t)n * sizeof(batch_img),
                                      cudaMemcpyHostToDevice, stream));
    const batch_tab tf = {host, dev, nf, uniform_blocks(host, nf, blocks_f)},
                    ts = {host + nf, dev ? dev + nf : NULL, ns,
                          uniform_blocks(host + nf, ns, blocks_s)},
                    tg = {host + nr, dev ? dev + nr : NULL, ng,
                          uniform_blocks(host + nr, ng, blocks_g)};
    if (nf > 0)
        s = rows_launch_k(k, base, w, row, col, 0, rows0, tf, blocks_f, err, errlen);
    if (s == IC_OK && ns > 0)
        s = rows_launch_k(k, base, w, row, col, ranks, rows1, ts, blocks_s, err, errlen);
    if (s == IC_OK && ng > 0)
        s = global_launch(base, tg, blocks_g, err, errlen);
    free(tab); /* NULL, or copied into the launches' parameters */
    if (!sl)
        return s;
    /* behind whatever was queued, so that the slot waits for it */
    const cudaError_t re = cudaEventRecord(sl->done, stream);
    if (re == cudaSuccess)
        sl->pending = 1;
    else if (s == IC_OK)
        s = ic_cuda_fail(err, errlen, "cudaEventRecord", (int)re);
    return s;
}
