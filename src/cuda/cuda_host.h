/*
 * cuda_host.h - host side shared by the CUDA strategy backends (internal).
 *
 * Every CUDA strategy backend (cuda-global, cuda-const, cuda-tiled-*) has the
 * same host side: a per-context device state (device ordinal, pitched source
 * and destination buffers reused across calls, a device copy of the weights,
 * CUDA events), synchronous cudaMemcpy2D upload/download (seed 000's pitched
 * images), per-stage timing with events, and one probe. A strategy only says
 * how to launch its kernel on the device images (ic_cuda_strategy).
 *
 * C-callable, so that C code can read it; the definitions live in cuda_host.cu.
 */
#ifndef IC_CUDA_HOST_H
#define IC_CUDA_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One filtering job as the kernels see it: device images and parameters.
 * Passed by value to every kernel. Sample (x, y, c) of an image lives at
 *   AoS: base + y*pitch + (x*channels + c) * S
 *   SoA: base + (c*height + y)*pitch + x * S      (planes stacked, device pitch)
 * with S = 1 byte (IC_U8), 2 (IC_U16, u16 = 1) or 4 (IC_F32, f32 = 1),
 * pitches in bytes, like ic_image_at() on the host. */
typedef struct ic_cuda_args {
    const uint8_t *src;
    size_t src_pitch;
    uint8_t *dst;
    size_t dst_pitch;
    const float *w;     /* device copy of the kw*kh correlation weights */
    int width, height;  /* >= 1 */
    int channels;       /* 1..4 */
    int soa;            /* 1 for IC_SOA, 0 for IC_AOS */
    int u16;            /* 1 for IC_U16 samples (src and dst), 0 for IC_U8: the shift from
                           * sample index to byte offset; every kernel branches on it
                           * uniformly in its loads and stores (cuda_common.cuh) */
    int f32;            /* 1 for IC_F32 samples (u16 is then 0): 4-byte floats read as
                           * they are and stored unrounded and unclamped */
    int kw, kh;         /* odd, 1..IC_MAX_KERNEL */
    int border;         /* ic_border */
    float border_value; /* for IC_BORDER_CONSTANT */
    float bias;         /* added to every sum before rounding */
    int premultiply;    /* ic_job.premultiply: the last channel is alpha; colour samples are
                           * filtered premultiplied (backend.h), alpha as it is */
    int block_y0;       /* first block row of this launch (grids taller than 65535) */
    size_t smem_optin;  /* largest dynamic shared memory a block may ask for on this device */
    void *stream;       /* cudaStream_t the launches go to; NULL = the default stream */
    void *user;         /* host only: the strategy's per-call context (ic_cuda_run's user),
                           * carried into every band of the async pipeline, whose worker
                           * threads call the hooks too; kernels ignore it */
} ic_cuda_args;

/* log2 of the bytes of one sample of a job: 0, 1 (u16) or 2 (f32); host and
 * device code alike. */
#if defined(__CUDACC__)
#define IC_CUDA_HOST_DEVICE __host__ __device__
#else
#define IC_CUDA_HOST_DEVICE
#endif
static inline IC_CUDA_HOST_DEVICE int ic_cuda_shift(const ic_cuda_args *a)
{
    return a->f32 ? 2 : a->u16;
}

/* What a strategy backend adds to the common host side. */
typedef struct ic_cuda_strategy {
    const char *kernel_name; /* for error messages: "cuda-global kernel" */
    /* Optional (may be NULL): puts the host weights w (kw*kh floats) where the
     * kernels read them, e.g. __constant__ memory; timed as part of the upload. */
    ic_status (*prepare)(const ic_cuda_args *a, const float *w, char *err, size_t errlen);
    /* Launches the kernel(s) on stream a->stream (NULL: the default stream);
     * checks the launch. */
    ic_status (*launch)(const ic_cuda_args *a, char *err, size_t errlen);
    /* Writes the plan for a job (kernel, geometry, fallback) as one line. The
     * device pointers of a are NULL here. */
    void (*describe)(const ic_cuda_args *a, char *buf, size_t buflen);
} ic_cuda_strategy;

/* Backend probe shared by all CUDA backends: usable iff cudaGetDeviceCount
 * reports at least one device. Never aborts, also without a driver. */
int ic_cuda_probe(char *why, size_t whylen);

/* ic_cuda_device_count() as the CUDA backends count: cudaGetDeviceCount, or 0
 * when it fails (no driver, no device). Never aborts. The `cuda` backend's
 * device_count entry, behind the public ic_cuda_device_count() (the backend
 * table, src/dispatch/backends.c), which is 0 in a build without CUDA. */
int ic__cuda_device_count(void);

/* How this process's CUDA modules are loaded: "lazy" (kernels loaded when
 * first launched: CUDA_MODULE_LOADING=LAZY, the default since CUDA 12.2),
 * "eager" (every kernel of every module at context creation) or "unknown"
 * (the driver cannot say). Asks the driver (cuModuleGetLoadingMode), so call
 * it only after the runtime is initialised. For --explain. */
const char *ic_cuda_module_loading(void);

/* Creates the per-context state on opts->device (0 when opts is NULL). */
ic_status ic_cuda_open(void **state, const ic_context_options *opts, char *err, size_t errlen);

/* Releases every device buffer and event of a state (NULL-safe). */
void ic_cuda_close(void *state);

/* Runs one job: upload (cudaMemcpy2D + strategy prepare), strategy launch,
 * download, each stage timed with CUDA events into *t. user reaches the
 * strategy's hooks as a->user (on whichever thread calls them). A job for a
 * row range (job->row0/row1 not both 0 and not the whole image) runs through
 * the banded pipeline (cuda_async.h) and writes only those rows of dst. */
ic_status ic_cuda_run(void *state, const ic_job *job, const ic_cuda_strategy *s, void *user,
                      ic_timing *t, char *err, size_t errlen);

/* ic_cuda_run for a strategy that needs every row of the image at once (the
 * fast path's blur): never the banded pipeline; a row range or a
 * device_memory limit is refused with IC_ERR_UNSUPPORTED. job->w may be
 * NULL for a blur by its shape (job->wk->blur, kw and kh up to IC_MAX_BLUR). */
ic_status ic_cuda_run_whole(void *state, const ic_job *job, const ic_cuda_strategy *s, void *user,
                            ic_timing *t, char *err, size_t errlen);
/* Describes how ic_cuda_run would run the job (job->dst may be NULL). */
ic_status ic_cuda_explain(void *state, const ic_job *job, const ic_cuda_strategy *s, char *buf,
                          size_t buflen);

/* Fills the band pipeline's part of *plan for the job (the strategy
 * backends' plan hook): device_min_bytes, and bands, band_rows and streams
 * when a host image takes the pipeline (job->dst may be NULL). */
ic_status ic_cuda_plan(void *state, const ic_job *job, ic_plan *plan, char *err, size_t errlen);

/* Formats "<call>: <CUDA error string>" into err, where <call> is the text of
 * `expr` up to its first '(' ("cudaMalloc(&p, n)" -> "cudaMalloc"), clears the
 * runtime's last error and returns IC_ERR_DEVICE. code is a cudaError_t. */
ic_status ic_cuda_fail(char *err, size_t errlen, const char *expr, int code);

/* The strategy backends (one per file in src/cuda/strategies/). */
extern const ic_backend ic_backend_cuda_global;
extern const ic_backend ic_backend_cuda_const;
extern const ic_backend ic_backend_cuda_tiled_in;
extern const ic_backend ic_backend_cuda_tiled_out;
extern const ic_backend ic_backend_cuda_tiled_cached;
extern const ic_backend ic_backend_cuda_tiled_halo;

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_HOST_H */
