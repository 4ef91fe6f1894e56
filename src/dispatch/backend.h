/*
 * backend.h - the interface every backend implements (internal).
 *
 * The dispatcher (src/dispatch/) turns an ic_convolve() call into one or more
 * ic_job values that backends run. A job is always a *correlation* with
 * prepared float32 weights: the dispatcher flips the kernel for convolution and
 * folds the divisor in, so backends never deal with either. Alpha handling is
 * done by the dispatcher too; a backend filters every channel of the job.
 *
 * Besides 2D filtering a backend may carry the optional entries behind the
 * rest of the public API (1D convolution and stencil, matrix product, device
 * count); src/dispatch/signal.c and backends.c reach that work only through
 * them, so that no file of the dispatcher names a backend or includes its
 * headers.
 *
 * Adding a backend = one file defining a `const ic_backend` + one table entry in
 * src/dispatch/backends.c.
 */
#ifndef IC_CORE_BACKEND_H
#define IC_CORE_BACKEND_H

/* The contract uses the advanced tier's types (ic_tuning, ic_plan); that
 * section has its own include guard, so this works whatever came before. */
#ifndef IC_ADVANCED_API
#define IC_ADVANCED_API
#endif
#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* One filtering job (for explain(), dst is NULL). src and dst have the same width, height, channels and
 * layout (pitches may differ) and do not overlap.
 *
 * Device images (ic_image.memory == IC_MEM_DEVICE) reach only backends whose
 * caps include IC_CAP_DEVICE_IMAGES. When src or dst is a device image the
 * dispatcher does nothing to either image on the host, so such a job may
 * differ from the above in two ways that the backend must carry out on the
 * device: dst may have another layout than src (when dst is a device image),
 * and keep_alpha may be set. The backend returns after its work on the
 * images' streams has completed (include/imgconv.h, ic_convolve). */
typedef struct ic_job {
    const ic_image *src;
    ic_image *dst;
    const float *w; /* kw*kh correlation weights, row-major, divisor applied */
    int kw, kh;     /* odd, 1..IC_MAX_KERNEL */
    const ic_kernel
        *wk; /* the same weights as an ic_kernel (divisor 1), e.g. for ic_kernel_factor */
    ic_border border;
    float border_value; /* used by IC_BORDER_CONSTANT */
    float bias;         /* added to every sum before rounding */
    /* Output rows to compute: [row0, row1) of dst, with 0 <= row0 < row1 <=
     * height; row0 == row1 == 0 means all rows. Rows outside the range are
     * neither computed nor written (the input is still the whole src, so the
     * rows near the range read their neighbours as in a whole-image run).
     * Only GPU backends (is_gpu) ever receive a partial range: the dispatcher
     * uses it to split an image across several devices (src/dispatch/multi.c). */
    int row0, row1;
    /* Premultiplied alpha (docs/definitions.md, "Alpha"), set by the dispatcher only for
     * backends whose caps include IC_CAP_PREMULTIPLY and only for 2- and
     * 4-channel images. The last channel is alpha; with A = alpha sample and
     * C = colour sample (border value V standing in for both outside the image
     * under IC_BORDER_CONSTANT), the backend computes, in float32,
     *   FA = sum w * A,   FC = sum w * C * A   (C * A is exact in float32)
     *   colour = (FA > 0 ? FC / FA : 0) + bias,   alpha = FA + bias
     * then rounds and clamps as for every other sample. Backends without the
     * capability never see it set: the dispatcher runs the float64 reference
     * (src/dispatch/alpha.c) instead. */
    int premultiply;
    /* Set by the dispatcher only when src or dst is a device image (2- and
     * 4-channel images under IC_ALPHA_KEEP): the last channel of dst is a copy
     * of src's instead of filtered. For host images the dispatcher copies
     * alpha itself and leaves this 0. */
    int keep_alpha;
    /* The context's tuning knobs (include/imgconv.h, ic_tuning): never NULL
     * from the dispatcher; a backend reads the knobs it has, per job. */
    const ic_tuning *tuning;
    /* Set by ic_convolve_async only, for backends whose caps include
     * IC_CAP_ASYNC: src and dst are device images of one layout on the
     * backend's device; the backend queues the work on src's stream and
     * returns without waiting (no timing). */
    int async;
} ic_job;

/* Capabilities a backend declares in ic_backend.caps. */
#define IC_CAP_PREMULTIPLY 1u   /* runs ic_job.premultiply jobs itself */
#define IC_CAP_DEVICE_IMAGES 2u /* accepts ic_image with memory == IC_MEM_DEVICE */
#define IC_CAP_U16 4u           /* accepts IC_U16 images (src and dst both IC_U16) */
#define IC_CAP_ASYNC 8u         /* runs ic_job.async jobs (ic_convolve_async) */
#define IC_CAP_F32 16u          /* accepts IC_F32 images: sums stored unrounded */
/* Runs blurs by their shape (ic_job.wk->blur, sigma_x, sigma_y), including
 * those past IC_MAX_KERNEL, whose jobs have w NULL and kw, kh up to IC_MAX_BLUR. */
#define IC_CAP_BLUR 32u

/* The pointwise work of the device chain engine (src/dispatch/chain_device.c),
 * which runs every weighted sum of a chain as a float32 device-to-device job
 * on the backend and the rest through these. Float planes are device memory:
 * plane c of an image of h rows starts at base + c * h * pitch (pitch in
 * bytes). Every entry makes `device` current, queues its work on `stream` (a
 * cudaStream_t, NULL: the legacy default stream), checks every CUDA call and
 * launch, and on failure writes one line into err. */
typedef struct ic_chain_ops {
    /* n bytes of device memory (*p NULL on failure). */
    ic_status (*alloc)(int device, size_t n, void **p, char *err, size_t errlen);
    void (*release)(int device, void *p); /* NULL-safe */
    /* rows x row_bytes from src to dst, either in host or device memory
     * (unified addressing tells which), returning after the copy completed. */
    ic_status (*copy)(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
                      size_t row_bytes, size_t rows, void *stream, char *err, size_t errlen);
    /* The channels of a device image (any type and layout) as float planes;
     * with premul the last channel is alpha: colour * a and a, a = alpha /
     * ic_sample_max. */
    ic_status (*load)(const ic_image *src, float *planes, size_t pitch, int premul, void *stream,
                      char *err, size_t errlen);
    /* a = sqrt(a^2 + b^2) summed in float64 (b not NULL), else a = |a|, over
     * n planes of width x height. */
    ic_status (*combine)(int device, float *a, const float *b, size_t pitch, int width, int height,
                         int n, void *stream, char *err, size_t errlen);
    /* The planes into a device image of dst's type and layout: divided back
     * when premul (colour / a where a > 0, else 0; alpha max * a), plus bias
     * (0 for the last plane when keep_alpha: the source's alpha, unfiltered),
     * rounded and clamped as ic_convolve stores (float32 as it is). */
    ic_status (*store)(const float *planes, size_t pitch, const ic_image *dst, float bias,
                       int premul, int keep_alpha, void *stream, char *err, size_t errlen);
} ic_chain_ops;

/* A backend. open/close may be NULL for stateless backends (state is NULL). */
typedef struct ic_backend {
    const char *name;
    const char *summary; /* one line: what it keeps where */
    int is_gpu;
    int rank; /* preference of `auto` among usable backends: higher wins */
    /* 1 when usable on this machine; otherwise 0 and a reason in why. */
    int (*probe)(char *why, size_t whylen);
    /* Creates per-context state (device buffers, thread pool...). */
    ic_status (*open)(void **state, const ic_context_options *opts, char *err, size_t errlen);
    void (*close)(void *state);
    /* Runs one job. On failure writes one line into err. t is never NULL; the
     * backend fills upload/kernel/download (total is set by the dispatcher). */
    ic_status (*run)(void *state, const ic_job *job, ic_timing *t, char *err, size_t errlen);
    /* Optional: describes in plain text how run() would process this job (the
     * plan: method, rank, tile shape, predicted time). NULL: nothing to say. */
    ic_status (*explain)(void *state, const ic_job *job, char *buf, size_t buflen);
    unsigned caps; /* IC_CAP_* flags (0: plain host images, no premultiply) */
    /* Optional: host bytes run() allocates for this job besides src and dst,
     * when it is more than a few rows (the memory budget counts it; see
     * ic_convolve_bytes). job->dst may be NULL. NULL: nothing worth counting. */
    uint64_t (*host_bytes)(const ic_job *job);

    /* Optional entries (NULL: the backend does not do that work). */

    /* 1D correlation behind ic_conv1d_f32/u8 and ic_stencil1d (the stencil is
     * the correlation with all-one weights, so it needs no entry of its own):
     *   out[i] = bias + sum_{t<klen} w[t] * in[map(i + t - (klen-1)/2)], i < n,
     * summed in float32 in increasing t, map as ic_border_map (border_value
     * outside under IC_BORDER_CONSTANT). in and out: n float32 samples, or n
     * uint8 samples when is_u8 (rounded and clamped as ic_convolve does); host
     * memory, checked by the caller (1 <= n <= IC_MAX_SIGNAL, klen odd and
     * 1..IC_MAX_KERNEL_1D, no overlap). Synchronous. On failure one line in err. */
    ic_status (*conv1d)(const void *in, void *out, int n, int is_u8, const float *w, int klen,
                        int border, float border_value, float bias, char *err, size_t errlen);
    /* Matrix product behind ic_matmul: the names ic_matmul accepts for this
     * backend's kernels (NULL-terminated; the one equal to the backend's name
     * is what "auto" runs), and the product C = A * B (row-major host
     * matrices, A M x K, B K x N, every C entry summed in increasing k) by the
     * kernel matmul_variants[variant]. Arguments checked by the caller. */
    const char *const *matmul_variants;
    ic_status (*matmul)(int variant, const float *A, const float *B, float *C, int M, int K, int N,
                        char *err, size_t errlen);
    /* Devices of this kind visible to the process (ic_cuda_device_count), 0
     * when there are none or the driver cannot say. Never aborts, needs no
     * probe first. */
    int (*device_count)(void);
    /* Optional: fills *plan (zeroed by the caller, backend and predictions
     * set) with what run() would do for this job (dst is NULL), under
     * job->tuning: the numbers explain() prints. NULL: no planner. */
    ic_status (*plan)(void *state, const ic_job *job, ic_plan *plan, char *err, size_t errlen);
    /* Optional: filters n >= 1 jobs together (ic_convolve_batch and
     * ic_convolve_batch_async). The dispatcher calls it only for a uniform
     * batch: every src and dst a device image on the context's device, all of
     * one layout, sample type and channel count, each job validated as
     * ic_convolve validates one, with the same weights, border, bias and
     * alpha flags (premultiply as run() gets it; never keep_alpha) and the same
     * async flag. Sizes, pitches and streams may differ. The work goes on
     * jobs[0].src's stream; with async 0 that stream first waits for every
     * other image's stream and the call returns after the work has completed,
     * with async 1 it returns at once. *taken = 0 (and IC_OK) when the backend
     * declines the batch without queueing anything (the dispatcher then runs
     * the jobs one by one); 1 otherwise. On failure one line in err and
     * *failed = the index of the job it concerns, or -1 for the whole batch. */
    ic_status (*run_batch)(void *state, const ic_job *jobs, int n, int *taken, int *failed,
                           char *err, size_t errlen);
    /* Optional: the device chain engine's pointwise work (above); set by GPU
     * backends that filter float32 device images. NULL: chains, magnitudes
     * and |sum| that do not reduce to one job run in the host engine. */
    const ic_chain_ops *chain_ops;
} ic_backend;

#ifdef __cplusplus
}
#endif

#endif /* IC_CORE_BACKEND_H */
