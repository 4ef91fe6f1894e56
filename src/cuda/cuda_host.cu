/*
 * cuda_host.cu - the host side every CUDA strategy backend shares: probe,
 * per-context device state, pitched device images (cudaMallocPitch, seed 000)
 * reused across calls, synchronous cudaMemcpy2D upload/download, per-stage
 * timing with CUDA events, and error formatting ("cudaMalloc: out of memory").
 *
 * Device buffers are reused while the next job fits them (same or smaller);
 * a larger job frees and reallocates. A job for a part of the output rows
 * (ic_job.row0/row1, one device's share when an image is split across several
 * GPUs) always takes the banded pipeline of cuda_async.cu, whose bands already
 * carry their halo rows. Nothing here prints or exits.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_async.h"
#include "cuda/cuda_common.cuh"

/* A pitched device image: `pitch` bytes per row, `bytes` in all. */
struct ic_cuda_buf {
    uint8_t *p;
    size_t pitch;
    size_t bytes;
};

enum { IC_EV_START, IC_EV_UPLOADED, IC_EV_KERNEL, IC_EV_DONE, IC_EV_COUNT };

struct ic_cuda_state {
    int device;
    size_t smem_optin;
    ic_cuda_buf src, dst;
    float *w;
    size_t w_cap; /* floats */
    cudaEvent_t ev[IC_EV_COUNT];
    int n_ev;
    int transfer;         /* ic_context_options.transfer */
    size_t device_memory; /* ic_context_options.device_memory */
    ic_cuda_async *async; /* the banded pipeline's buffers (cuda_async.cu), made on first use */
    uint8_t *stage;       /* pinned staging of host sources for device destinations */
    size_t stage_cap;     /* its bytes (grown, kept across calls) */
    int opened;           /* cudaSetDevice succeeded: close has device resources to free */
};

extern "C" ic_status ic_cuda_fail(char *err, size_t errlen, const char *expr, int code)
{
    const cudaError_t e = (cudaError_t)code;
    (void)cudaGetLastError(); /* clear a non-sticky error so the context stays usable */
    if (err && errlen > 0) {
        const char *paren = strchr(expr, '(');
        const int n = paren ? (int)(paren - expr) : (int)strlen(expr);
        if (e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver)
            snprintf(err, errlen, "no GPU or CUDA driver found (%.*s: %s)", n, expr,
                     cudaGetErrorName(e));
        else
            snprintf(err, errlen, "%.*s: %s", n, expr, cudaGetErrorString(e));
    }
    return IC_ERR_DEVICE;
}

extern "C" int ic_cuda_probe(char *why, size_t whylen)
{
    int n = 0;
    const cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess) {
        /* the runtime's text for these ("driver version is insufficient")
         * hides that there is simply no GPU or driver */
        const int absent = e == cudaErrorNoDevice || e == cudaErrorInsufficientDriver;
        if (why && whylen > 0 && absent)
            snprintf(why, whylen, "no GPU or CUDA driver found (cudaGetDeviceCount: %s)",
                     cudaGetErrorName(e));
        else if (why && whylen > 0)
            snprintf(why, whylen, "no CUDA device: cudaGetDeviceCount: %s", cudaGetErrorString(e));
        (void)cudaGetLastError();
        return 0;
    }
    if (n <= 0) {
        if (why && whylen > 0)
            snprintf(why, whylen, "no CUDA device: cudaGetDeviceCount found none");
        return 0;
    }
    return 1;
}

extern "C" int ic__cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        (void)cudaGetLastError();
        return 0;
    }
    return n > 0 ? n : 0;
}

extern "C" const char *ic_cuda_module_loading(void)
{
    /* cuModuleGetLoadingMode through the runtime: no link against libcuda. */
    typedef int (*get_mode_fn)(int *mode);
    void *fn = NULL;
    cudaDriverEntryPointQueryResult q = cudaDriverEntryPointSymbolNotFound;
    if (cudaGetDriverEntryPointByVersion("cuModuleGetLoadingMode", &fn, 12000, cudaEnableDefault,
                                         &q) != cudaSuccess ||
        q != cudaDriverEntryPointSuccess || !fn) {
        (void)cudaGetLastError();
        return "unknown";
    }
    int mode = 0;
    if (((get_mode_fn)fn)(&mode) != 0)
        return "unknown";
    return mode == 2 ? "lazy" : mode == 1 ? "eager" : "unknown"; /* CU_MODULE_*_LOADING */
}

extern "C" void ic_cuda_close(void *state)
{
    ic_cuda_state *st = (ic_cuda_state *)state;
    if (!st)
        return;
    if (!st->opened) { /* the device was never set (e.g. an ordinal that does not exist) */
        free(st);
        return;
    }
    /* Errors are ignored here: close cannot report, and freeing is best effort. */
    (void)cudaSetDevice(st->device);
    (void)cudaFree(st->src.p);
    (void)cudaFree(st->dst.p);
    (void)cudaFree(st->w);
    ic_cuda_async_free(st->async);
    (void)cudaFreeHost(st->stage);
    for (int i = 0; i < st->n_ev; i++)
        (void)cudaEventDestroy(st->ev[i]);
    (void)cudaGetLastError();
    free(st);
}

static ic_status open_device(ic_cuda_state *st, char *err, size_t errlen)
{
    int n = 0;
    IC_CUDA_CHECK(cudaGetDeviceCount(&n));
    if (st->device >= n) {
        snprintf(err, errlen, "CUDA device %d does not exist (this machine has %d)", st->device, n);
        return IC_ERR_DEVICE;
    }
    IC_CUDA_CHECK(cudaSetDevice(st->device));
    st->opened = 1;
    IC_CUDA_CHECK(cudaFree(0)); /* creates the context now, so that open reports failures */
    int optin = 0;
    IC_CUDA_CHECK(
        cudaDeviceGetAttribute(&optin, cudaDevAttrMaxSharedMemoryPerBlockOptin, st->device));
    st->smem_optin = optin > 0 ? (size_t)optin : (size_t)IC_CU_SMEM_DEFAULT;
    for (; st->n_ev < IC_EV_COUNT; st->n_ev++)
        IC_CUDA_CHECK(cudaEventCreate(&st->ev[st->n_ev]));
    return IC_OK;
}

extern "C" ic_status ic_cuda_open(void **state, const ic_context_options *opts, char *err,
                                  size_t errlen)
{
    if (!state)
        return IC_ERR_INVALID_ARG;
    *state = NULL;
    const int device = opts ? opts->device : 0;
    if (device < 0) {
        snprintf(err, errlen, "negative CUDA device number %d", device);
        return IC_ERR_INVALID_ARG;
    }
    ic_cuda_state *st = (ic_cuda_state *)calloc(1, sizeof *st);
    if (!st) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    st->device = device;
    st->transfer = opts ? opts->transfer : IC_TRANSFER_AUTO;
    st->device_memory = opts ? opts->device_memory : 0;
    if (st->transfer != IC_TRANSFER_AUTO && st->transfer != IC_TRANSFER_SYNC &&
        st->transfer != IC_TRANSFER_ASYNC) {
        snprintf(err, errlen, "unknown transfer mode %d", st->transfer);
        free(st);
        return IC_ERR_INVALID_ARG;
    }
    const ic_status s = open_device(st, err, errlen);
    if (s != IC_OK) {
        ic_cuda_close(st);
        return s;
    }
    *state = st;
    return IC_OK;
}

/* Makes b hold at least rows x row_bytes; reuses it when it already does. */
static ic_status ensure_buf(ic_cuda_buf *b, size_t row_bytes, size_t rows, char *err, size_t errlen)
{
    if (b->p && b->pitch >= row_bytes && b->bytes / b->pitch >= rows)
        return IC_OK;
    (void)cudaFree(b->p); /* free first: never hold old and new at once */
    memset(b, 0, sizeof *b);
    uint8_t *p = NULL;
    size_t pitch = 0;
    IC_CUDA_CHECK(cudaMallocPitch((void **)&p, &pitch, row_bytes, rows));
    if (rows > SIZE_MAX / pitch) { /* cannot happen for an allocation that succeeded */
        (void)cudaFree(p);
        snprintf(err, errlen, "device image size overflows");
        return IC_ERR_TOO_LARGE;
    }
    b->p = p;
    b->pitch = pitch;
    b->bytes = pitch * rows;
    return IC_OK;
}

/* A host source of at least this many bytes goes to a device destination
 * through the context's pinned staging (upload_staged). */
#define IC_CUDA_STAGE_MIN_BYTES ((size_t)256 << 10)
/* ... in chunks of about this many bytes, each one's DMA overlapping the
 * next one's copy into pinned memory. */
#define IC_CUDA_STAGE_CHUNK ((size_t)1 << 20)

/* Uploads `rows` rows of row_bytes from pageable host memory (src, spitch)
 * to the device (dst, dpitch) on `stream`: each chunk of rows is copied into
 * the context's pinned staging buffer by this thread, then sent by DMA while
 * the next chunk is copied. A pageable cudaMemcpy2DAsync of a pitched HD
 * image took several times a memcpy with four contexts uploading at once
 * (the batch's device route), where the staged copy runs near memcpy speed. The staging
 * buffer holds the whole image (no chunk is overwritten before the caller's
 * synchronisation at the end of the call), allocated on first use and grown.
 * Returns IC_OK, or an error from the allocation or the copies. */
static ic_status upload_staged(ic_cuda_state *st, uint8_t *dst, size_t dpitch, const uint8_t *src,
                               size_t spitch, size_t row_bytes, size_t rows, cudaStream_t stream,
                               char *err, size_t errlen)
{
    /* the previous call's copies are complete (it synchronised) */
    const ic_status r =
        ic_cuda_ensure_pinned(&st->stage, &st->stage_cap, row_bytes * rows, err, errlen);
    if (r != IC_OK)
        return r;
    size_t chunk_rows = IC_CUDA_STAGE_CHUNK / (row_bytes ? row_bytes : 1);
    if (chunk_rows < 1)
        chunk_rows = 1;
    for (size_t r0 = 0; r0 < rows; r0 += chunk_rows) {
        const size_t n = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
        uint8_t *s = st->stage + r0 * row_bytes;
        if (spitch == row_bytes) {
            memcpy(s, src + r0 * spitch, n * row_bytes);
        } else {
            for (size_t r = 0; r < n; r++)
                memcpy(s + r * row_bytes, src + (r0 + r) * spitch, row_bytes);
        }
        IC_CUDA_CHECK(cudaMemcpy2DAsync(dst + r0 * dpitch, dpitch, s, row_bytes, row_bytes, n,
                                        cudaMemcpyHostToDevice, stream));
    }
    return IC_OK;
}

static ic_status ensure_weights(ic_cuda_state *st, size_t n, char *err, size_t errlen)
{
    if (st->w && st->w_cap >= n)
        return IC_OK;
    (void)cudaFree(st->w);
    st->w = NULL;
    st->w_cap = 0;
    float *w = NULL;
    IC_CUDA_CHECK(cudaMalloc((void **)&w, n * sizeof(float)));
    st->w = w;
    st->w_cap = n;
    return IC_OK;
}

/* Where the kernels read a sample type whole: uint16 and float32 samples of a
 * device image must be aligned to their size (host images are copied into
 * aligned buffers). */
static int aligned_for_type(const ic_image *im)
{
    const size_t es = ic_sample_size(im->type);
    return im->memory != IC_MEM_DEVICE || ((uintptr_t)im->data % es == 0 && im->pitch % es == 0);
}

/* The source side of a job: what both run and explain need. */
static int src_valid(const ic_job *job)
{
    const ic_image *s = job->src;
    /* a blur past IC_MAX_KERNEL comes by its shape alone (w NULL) */
    const int max = job->w ? IC_MAX_KERNEL : IC_MAX_BLUR;
    return s && s->data && (job->w || (job->wk && job->wk->blur)) && s->width >= 1 &&
           s->height >= 1 && s->width <= IC_MAX_DIM && s->height <= IC_MAX_DIM &&
           s->channels >= 1 && s->channels <= 4 && (s->layout == IC_AOS || s->layout == IC_SOA) &&
           ic_sample_size(s->type) != 0 && s->pitch >= ic_image_row_bytes(s) &&
           aligned_for_type(s) && job->kw >= 1 && job->kh >= 1 && (job->kw & 1) && (job->kh & 1) &&
           job->kw <= max && job->kh <= max &&
           (!job->premultiply || s->channels == 2 || s->channels == 4);
}

/* any_layout: dst may have another layout than src (a device dst, converted
 * on the device). */
static int dst_valid(const ic_job *job, int any_layout)
{
    const ic_image *s = job->src, *d = job->dst;
    return d && d->data && d->width == s->width && d->height == s->height &&
           d->channels == s->channels && d->type == s->type &&
           (any_layout || d->layout == s->layout) && (d->layout == IC_AOS || d->layout == IC_SOA) &&
           d->pitch >= ic_image_row_bytes(d) && aligned_for_type(d);
}

/* The kernel arguments of a job, device pointers left NULL. */
static ic_cuda_args job_args(const ic_cuda_state *st, const ic_job *job)
{
    ic_cuda_args a;
    memset(&a, 0, sizeof a);
    a.width = job->src->width;
    a.height = job->src->height;
    a.channels = job->src->channels;
    a.soa = job->src->layout == IC_SOA;
    a.u16 = job->src->type == IC_U16;
    a.f32 = job->src->type == IC_F32;
    a.kw = job->kw;
    a.kh = job->kh;
    a.border = (int)job->border;
    a.border_value = job->border_value;
    a.bias = job->bias;
    a.premultiply = job->premultiply;
    a.smem_optin = st->smem_optin;
    return a;
}

extern "C" ic_status ic_cuda_explain(void *state, const ic_job *job, const ic_cuda_strategy *s,
                                     char *buf, size_t buflen)
{
    const ic_cuda_state *st = (const ic_cuda_state *)state;
    if (!st || !job || !s || !buf || buflen == 0 || !src_valid(job))
        return IC_ERR_INVALID_ARG;
    const ic_cuda_args a = job_args(st, job);
    s->describe(&a, buf, buflen);
    return IC_OK;
}

extern "C" ic_status ic_cuda_plan(void *state, const ic_job *job, ic_plan *plan, char *err,
                                  size_t errlen)
{
    const ic_cuda_state *st = (const ic_cuda_state *)state;
    if (!st || !job || !plan || !src_valid(job))
        return IC_ERR_INVALID_ARG;
    const ic_cuda_args a = job_args(st, job);
    ic_cuda_band_plan bp;
    memset(&bp, 0, sizeof bp);
    char none[8];
    (void)ic_cuda_async_plan(&a, 1, &bp, none, sizeof none); /* sets min_bytes even so */
    plan->device_min_bytes = bp.min_bytes;
    /* host images take the band pipeline as ic_cuda_run decides */
    const ic_image *src = job->src;
    const size_t bytes = ic_image_row_bytes(src) * (size_t)src->height *
                         (size_t)(src->layout == IC_SOA ? src->channels : 1);
    if (src->memory == IC_MEM_HOST &&
        (st->transfer == IC_TRANSFER_ASYNC || st->device_memory > 0 ||
         (st->transfer == IC_TRANSFER_AUTO && bytes >= IC_CUDA_AUTO_ASYNC_BYTES))) {
        const ic_status s = ic_cuda_async_plan(&a, st->device_memory, &bp, err, errlen);
        if (s != IC_OK)
            return s;
        plan->bands = bp.bands;
        plan->band_rows = bp.band_rows;
        plan->streams = bp.slots;
    }
    return IC_OK;
}

static ic_status elapsed(float *ms, cudaEvent_t a, cudaEvent_t b, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaEventElapsedTime(ms, a, b));
    return IC_OK;
}

/* ---- device images -------------------------------------------------------- */

/* One image as the channel-copy kernel sees it (device memory). */
struct ic_cu_view {
    uint8_t *p;
    size_t pitch;
    int soa;
};

/* Byte offset of sample (x, y, c), samples of 1 << shift bytes. */
__device__ __forceinline__ size_t view_at(const ic_cu_view &v, int x, int y, int c, int height,
                                          int channels, int shift)
{
    return v.soa ? ((size_t)c * (size_t)height + (size_t)y) * v.pitch + ((size_t)x << shift)
                 : (size_t)y * v.pitch + (((size_t)x * (size_t)channels + (size_t)c) << shift);
}

/* dst(x, y, c) = src(x, y, c) for channels [c0, c0 + nc), any two layouts,
 * samples of 1 << shift bytes (uint8, uint16, float32): the layout conversion
 * and the kept alpha channel of device images. */
__global__ void ic_cu_copy_channels(ic_cu_view dst, ic_cu_view src, int width, int height,
                                    int channels, int c0, int shift, size_t n)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int x = (int)(i % (size_t)width);
        const size_t r = i / (size_t)width;
        const int y = (int)(r % (size_t)height), c = c0 + (int)(r / (size_t)height);
        uint8_t *d = dst.p + view_at(dst, x, y, c, height, channels, shift);
        const uint8_t *s = src.p + view_at(src, x, y, c, height, channels, shift);
        if (shift == 2)
            *reinterpret_cast<float *>(d) = *reinterpret_cast<const float *>(s);
        else if (shift == 1)
            *reinterpret_cast<uint16_t *>(d) = *reinterpret_cast<const uint16_t *>(s);
        else
            *d = *s;
    }
}

static ic_status copy_channels(ic_cu_view dst, ic_cu_view src, const ic_image *im, int c0, int nc,
                               cudaStream_t stream, char *err, size_t errlen)
{
    const size_t n = (size_t)im->width * (size_t)im->height * (size_t)nc;
    const size_t want = (n + 255) / 256;
    const unsigned blocks = (unsigned)(want < 65535u * 16u ? want : 65535u * 16u);
    ic_cu_copy_channels<<<blocks, 256, 0, stream>>>(dst, src, im->width, im->height, im->channels,
                                                    c0,
                                                    im->type == IC_F32   ? 2
                                                    : im->type == IC_U16 ? 1
                                                                         : 0,
                                                    n);
    IC_CUDA_CHECK(cudaGetLastError());
    return IC_OK;
}

/* A device image must live on the context's device: its ordinal and, as far
 * as the driver can tell, its pointer. */
static ic_status check_device_image(const ic_image *im, const char *which, int device, char *err,
                                    size_t errlen)
{
    if (im->device != device) {
        snprintf(err, errlen, "the %s image is on CUDA device %d but the context runs on device %d",
                 which, im->device, device);
        return IC_ERR_INVALID_ARG;
    }
    cudaPointerAttributes at;
    const cudaError_t e = cudaPointerGetAttributes(&at, im->data);
    if (e != cudaSuccess || (at.type != cudaMemoryTypeDevice && at.type != cudaMemoryTypeManaged)) {
        (void)cudaGetLastError();
        snprintf(err, errlen,
                 "the %s image says IC_MEM_DEVICE but its data is not CUDA device memory", which);
        return IC_ERR_INVALID_ARG;
    }
    if (at.device != device) {
        snprintf(err, errlen, "the %s image's memory is on CUDA device %d, not device %d", which,
                 at.device, device);
        return IC_ERR_INVALID_ARG;
    }
    return IC_OK;
}

/* The stream a job's work is ordered on: the source's when it is a device
 * image, else the destination's, else the legacy default stream. When both
 * are device images on different streams, the work also waits for what was
 * queued on the destination's stream before the call. */
static ic_status job_stream(ic_cuda_state *st, const ic_job *job, cudaStream_t *out, char *err,
                            size_t errlen)
{
    const ic_image *s = job->src, *d = job->dst;
    const int ds = s->memory == IC_MEM_DEVICE, dd = d->memory == IC_MEM_DEVICE;
    *out = ds ? (cudaStream_t)s->stream : dd ? (cudaStream_t)d->stream : (cudaStream_t)0;
    if (ds && dd && s->stream != d->stream) {
        IC_CUDA_CHECK(cudaEventRecord(st->ev[IC_EV_START], (cudaStream_t)d->stream));
        IC_CUDA_CHECK(cudaStreamWaitEvent(*out, st->ev[IC_EV_START], 0));
    }
    return IC_OK;
}

/* whole: the strategy needs every row of the image at once (never bands). */
static ic_status run_job(void *state, const ic_job *job, const ic_cuda_strategy *s, void *user,
                         ic_timing *t, int whole, char *err, size_t errlen)
{
    ic_cuda_state *st = (ic_cuda_state *)state;
    if (!st || !job || !s || !t)
        return IC_ERR_INVALID_ARG;
    const ic_image *src = job->src;
    ic_image *dst = job->dst;
    const int dev_src = src && src->memory == IC_MEM_DEVICE;
    const int dev_dst = dst && dst->memory == IC_MEM_DEVICE;
    /* Only a device dst may take another layout (backend.h): converted here. */
    const int convert = dev_dst && src && dst->layout != src->layout;
    if (!src_valid(job) || !dst_valid(job, convert)) {
        snprintf(err, errlen, "invalid job for %s", s->kernel_name);
        return IC_ERR_INVALID_ARG;
    }
    /* Both layouts are `rows` rows of `row_bytes` (SoA: the planes stacked). */
    const size_t row_bytes = ic_image_row_bytes(src);
    const size_t rows = (size_t)src->height * (src->layout == IC_SOA ? (size_t)src->channels : 1u);
    const size_t nw = job->w ? (size_t)job->kw * (size_t)job->kh : 1u;
    /* A range other than "all rows" goes through the bands (see the top). */
    const int ranged = job->row0 != 0 || job->row1 != 0;
    if (ranged && (job->row0 < 0 || job->row1 <= job->row0 || job->row1 > src->height)) {
        snprintf(err, errlen, "invalid output row range [%d, %d) of %d rows for %s", job->row0,
                 job->row1, src->height, s->kernel_name);
        return IC_ERR_INVALID_ARG;
    }
    const int partial = ranged && (job->row0 != 0 || job->row1 != src->height);
    const int on_device = dev_src || dev_dst;
    if (on_device && partial) {
        snprintf(err, errlen, "%s: device images cannot be filtered by row ranges", s->kernel_name);
        return IC_ERR_UNSUPPORTED;
    }
    if (whole && (partial || st->device_memory > 0)) {
        snprintf(err, errlen,
                 "%s: needs the whole image on one device (no row ranges, no device_memory "
                 "limit)",
                 s->kernel_name);
        return IC_ERR_UNSUPPORTED;
    }
    if (on_device && st->device_memory > 0 && (!dev_src || !dev_dst || convert)) {
        snprintf(err, errlen,
                 "%s: a device_memory limit covers host images and device images of one layout "
                 "only (this job would need a whole-image device buffer)",
                 s->kernel_name);
        return IC_ERR_UNSUPPORTED;
    }

    IC_CUDA_CHECK(cudaSetDevice(st->device));
    ic_status r = IC_OK;
    if (dev_src && (r = check_device_image(src, "source", st->device, err, errlen)) != IC_OK)
        return r;
    if (dev_dst && (r = check_device_image(dst, "destination", st->device, err, errlen)) != IC_OK)
        return r;
    if (!on_device && !whole &&
        (st->transfer == IC_TRANSFER_ASYNC || st->device_memory > 0 || partial ||
         (st->transfer == IC_TRANSFER_AUTO && rows * row_bytes >= IC_CUDA_AUTO_ASYNC_BYTES))) {
        ic_cuda_args ta = job_args(st, job);
        ta.user = user;
        return ic_cuda_async_run(&st->async, st->device_memory, &ta, job, s, t, err, errlen);
    }
    /* Device buffers only for what is not already on the device in src's layout. */
    if (!dev_src)
        r = ensure_buf(&st->src, row_bytes, rows, err, errlen);
    if (r == IC_OK && (!dev_dst || convert))
        r = ensure_buf(&st->dst, row_bytes, rows, err, errlen);
    if (r == IC_OK)
        r = ensure_weights(st, nw, err, errlen);
    if (r != IC_OK)
        return r;
    cudaStream_t stream = 0;
    if ((r = job_stream(st, job, &stream, err, errlen)) != IC_OK)
        return r;

    ic_cuda_args a = job_args(st, job);
    a.user = user;
    a.src = dev_src ? src->data : st->src.p;
    a.src_pitch = dev_src ? src->pitch : st->src.pitch;
    a.dst = dev_dst && !convert ? dst->data : st->dst.p;
    a.dst_pitch = dev_dst && !convert ? dst->pitch : st->dst.pitch;
    a.w = st->w;
    a.stream = (void *)stream;

    cudaEvent_t *ev = st->ev;
    IC_CUDA_CHECK(cudaEventRecord(ev[IC_EV_START], stream));
    if (!dev_src && dev_dst && rows * row_bytes >= IC_CUDA_STAGE_MIN_BYTES &&
        !ic_cuda_is_pinned(src->data)) { /* pinned sources go by DMA directly, as before */
        r = upload_staged(st, st->src.p, st->src.pitch, src->data, src->pitch, row_bytes, rows,
                          stream, err, errlen);
        if (r != IC_OK)
            return r;
    } else if (!dev_src) {
        IC_CUDA_CHECK(cudaMemcpy2DAsync(st->src.p, st->src.pitch, src->data, src->pitch, row_bytes,
                                        rows, cudaMemcpyHostToDevice, stream));
    }
    if (job->w)
        IC_CUDA_CHECK(
            cudaMemcpyAsync(st->w, job->w, nw * sizeof(float), cudaMemcpyHostToDevice, stream));
    if (s->prepare && (r = s->prepare(&a, job->w, err, errlen)) != IC_OK)
        return r;
    IC_CUDA_CHECK(cudaEventRecord(ev[IC_EV_UPLOADED], stream));
    if ((r = s->launch(&a, err, errlen)) != IC_OK)
        return r;
    /* Device destinations: layout conversion and the kept alpha channel, on the stream. */
    const ic_cu_view src_v = {(uint8_t *)a.src, a.src_pitch, src->layout == IC_SOA};
    const ic_cu_view out_v = {a.dst, a.dst_pitch, src->layout == IC_SOA};
    const ic_cu_view dst_v = {dev_dst ? dst->data : a.dst, dev_dst ? dst->pitch : a.dst_pitch,
                              (dev_dst ? dst->layout : src->layout) == IC_SOA};
    if (convert &&
        (r = copy_channels(dst_v, out_v, src, 0, src->channels, stream, err, errlen)) != IC_OK)
        return r;
    if (job->keep_alpha &&
        (r = copy_channels(dst_v, src_v, src, src->channels - 1, 1, stream, err, errlen)) != IC_OK)
        return r;
    IC_CUDA_CHECK(cudaEventRecord(ev[IC_EV_KERNEL], stream));
    /* Faults inside the kernel surface here: name the kernel, not the copy. */
    const cudaError_t ke = cudaEventSynchronize(ev[IC_EV_KERNEL]);
    if (ke != cudaSuccess)
        return ic_cuda_fail(err, errlen, s->kernel_name, (int)ke);
    if (!dev_dst)
        IC_CUDA_CHECK(cudaMemcpy2DAsync(dst->data, dst->pitch, st->dst.p, st->dst.pitch, row_bytes,
                                        rows, cudaMemcpyDeviceToHost, stream));
    IC_CUDA_CHECK(cudaEventRecord(ev[IC_EV_DONE], stream));
    /* Completion on return (include/imgconv.h): the caller may use dst at once. */
    IC_CUDA_CHECK(cudaEventSynchronize(ev[IC_EV_DONE]));

    float up = 0, k = 0, down = 0;
    if ((r = elapsed(&up, ev[IC_EV_START], ev[IC_EV_UPLOADED], err, errlen)) != IC_OK ||
        (r = elapsed(&k, ev[IC_EV_UPLOADED], ev[IC_EV_KERNEL], err, errlen)) != IC_OK ||
        (r = elapsed(&down, ev[IC_EV_KERNEL], ev[IC_EV_DONE], err, errlen)) != IC_OK)
        return r;
    t->upload_ms = up;
    t->kernel_ms = k;
    t->download_ms = down;
    return IC_OK;
}

extern "C" ic_status ic_cuda_run(void *state, const ic_job *job, const ic_cuda_strategy *s,
                                 void *user, ic_timing *t, char *err, size_t errlen)
{
    return run_job(state, job, s, user, t, 0, err, errlen);
}

extern "C" ic_status ic_cuda_run_whole(void *state, const ic_job *job, const ic_cuda_strategy *s,
                                       void *user, ic_timing *t, char *err, size_t errlen)
{
    return run_job(state, job, s, user, t, 1, err, errlen);
}
