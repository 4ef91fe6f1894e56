/*
 * nvjpeg.cu - JPEG decode and encode on the GPU through nvJPEG (see nvjpeg.h).
 *
 * Decode: the headers of each stream are parsed on the host (a marker walk of
 * our own, then nvjpegJpegStreamParseHeader) to route it: 3-component 8-bit
 * YCbCr streams that end with an EOI marker go to nvJPEG, the hardware
 * decoder's batched API (nvjpegDecodeBatched on an NVJPEG_BACKEND_HARDWARE
 * handle, interleaved RGB output) for the baseline ones it accepts
 * (nvjpegDecodeBatchedSupported), nvjpegDecode on the default (hybrid)
 * handle for the others (progressive, ...); everything else - grey, CMYK,
 * RGB-coded (Adobe transform 0), 12-bit, lossless, cut files - is left to
 * the CPU codec, so that a cut or corrupt file gets libjpeg-turbo's message.
 * The handles are created with NVJPEG_FLAGS_BITSTREAM_STRICT (corrupt entropy
 * data fails instead of decoding to garbage) and interpolated chroma
 * upsampling when nvJPEG takes them; a stream nvJPEG fails on is retried on
 * the CPU by the caller.
 *
 * Encode: nvjpegEncodeImage from interleaved RGB with 4:2:0 subsampling, the
 * IJG quality scale and standard (not optimised) Huffman tables: what the CPU
 * writer (src/io/jpeg.c, jpeg_set_defaults) stores.
 *
 * Every CUDA and nvJPEG status is checked; a failure becomes IC_ERR_DEVICE
 * with the call named, or a route to the CPU codec. Nothing prints.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime.h>

#include "cuda/cuda_common.cuh" /* IC_CUDA_CHECK */
#include "cuda/codec/nvjpeg.h"

/* ---- device memory ------------------------------------------------------------ */

extern "C" ic_status ic_cuda_pitched_alloc(int device, size_t row_bytes, int height, uint8_t **p,
                                           size_t *pitch, char *err, size_t errlen)
{
    *p = NULL;
    *pitch = 0;
    IC_CUDA_CHECK(cudaSetDevice(device));
    void *q = NULL;
    IC_CUDA_CHECK(cudaMallocPitch(&q, pitch, row_bytes, (size_t)height));
    *p = (uint8_t *)q;
    return IC_OK;
}

extern "C" ic_status ic_cuda_stream_order(int device, void *waiter, void *after, char *err,
                                          size_t errlen)
{
    if (!waiter || !after || waiter == after)
        return IC_OK;
    IC_CUDA_CHECK(cudaSetDevice(device));
    cudaEvent_t ev;
    IC_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
    cudaError_t e = cudaEventRecord(ev, (cudaStream_t)after);
    if (e == cudaSuccess)
        e = cudaStreamWaitEvent((cudaStream_t)waiter, ev, 0);
    (void)cudaEventDestroy(ev); /* released once it completes; the wait holds its state */
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cudaStreamWaitEvent(order)", (int)e);
    return IC_OK;
}

extern "C" void ic_cuda_pitched_free(int device, void *p)
{
    if (!p)
        return;
    (void)cudaSetDevice(device);
    (void)cudaFree(p);
    (void)cudaGetLastError();
}

extern "C" ic_status ic_cuda_copy_rows(int device, void *dst, size_t dpitch, const void *src,
                                       size_t spitch, size_t row_bytes, int height, int to_device,
                                       void *stream, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t s = (cudaStream_t)stream;
    IC_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, row_bytes, (size_t)height,
                                    to_device ? cudaMemcpyHostToDevice : cudaMemcpyDeviceToHost,
                                    s));
    IC_CUDA_CHECK(cudaStreamSynchronize(s));
    return IC_OK;
}

extern "C" ic_status ic_cuda_stream_create(int device, void **stream, char *err, size_t errlen)
{
    *stream = NULL;
    IC_CUDA_CHECK(cudaSetDevice(device));
    cudaStream_t s = NULL;
    IC_CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    *stream = (void *)s;
    return IC_OK;
}

extern "C" void ic_cuda_stream_destroy(int device, void *stream)
{
    if (!stream)
        return;
    (void)cudaSetDevice(device);
    (void)cudaStreamSynchronize((cudaStream_t)stream);
    (void)cudaStreamDestroy((cudaStream_t)stream);
    (void)cudaGetLastError();
}

#ifndef IC_HAVE_NVJPEG

/* ---- built without nvJPEG: every JPEG takes the CPU codec ------------------------ */

extern "C" int ic_nvjpeg_built(void)
{
    return 0;
}

extern "C" ic_status ic_nvjpeg_open(ic_nvjpeg **nj, int device, int max_batch, char *err,
                                    size_t errlen)
{
    (void)device;
    (void)max_batch;
    *nj = NULL;
    if (err && errlen)
        snprintf(err, errlen, "built without nvJPEG");
    return IC_ERR_UNSUPPORTED;
}

extern "C" void ic_nvjpeg_close(ic_nvjpeg *nj)
{
    (void)nj;
}

extern "C" ic_nvjpeg_hw *ic_nvjpeg_hw_make(int device)
{
    (void)device;
    return NULL;
}

extern "C" void ic_nvjpeg_hw_give(ic_nvjpeg *nj, ic_nvjpeg_hw *hw)
{
    (void)nj;
    (void)hw;
}

extern "C" const char *ic_nvjpeg_engine(const ic_nvjpeg *nj)
{
    (void)nj;
    return "none";
}

extern "C" ic_status ic_nvjpeg_dec_make(ic_nvjpeg *nj, int lane, char *err, size_t errlen)
{
    (void)nj;
    (void)lane;
    if (err && errlen)
        snprintf(err, errlen, "built without nvJPEG");
    return IC_ERR_UNSUPPORTED;
}

extern "C" int ic_nvjpeg_check(ic_nvjpeg *nj, int lane, const uint8_t *data, size_t len, int *w,
                               int *h)
{
    (void)nj;
    (void)lane;
    (void)data;
    (void)len;
    *w = *h = 0;
    return IC_NVJ_CPU;
}

extern "C" ic_status ic_nvjpeg_decode(ic_nvjpeg *nj, int lane, int n, const uint8_t *const *data,
                                      const size_t *len, const int *route, uint8_t *const *dst,
                                      const size_t *pitch, void *const *after, int *ok, char *err,
                                      size_t errlen)
{
    (void)nj;
    (void)lane;
    (void)data;
    (void)len;
    (void)route;
    (void)dst;
    (void)pitch;
    (void)after;
    for (int i = 0; i < n; i++)
        ok[i] = 0;
    if (err && errlen)
        snprintf(err, errlen, "built without nvJPEG");
    return IC_ERR_UNSUPPORTED;
}

extern "C" ic_status ic_nvjpeg_encode(ic_nvjpeg *nj, const uint8_t *src, size_t pitch, int w, int h,
                                      void *src_stream, int quality, uint8_t **buf, size_t *cap,
                                      size_t *len, char *err, size_t errlen)
{
    (void)nj;
    (void)src;
    (void)pitch;
    (void)w;
    (void)h;
    (void)src_stream;
    (void)quality;
    (void)buf;
    (void)cap;
    *len = 0;
    if (err && errlen)
        snprintf(err, errlen, "built without nvJPEG");
    return IC_ERR_UNSUPPORTED;
}

#else /* IC_HAVE_NVJPEG */

#include <nvjpeg.h>

/* Encoders that may run at once, each with its own state, stream and event. */
#define NVJ_LANES 16

/* A decoder lane: one batched decode at a time on the hardware decoder, with
 * its own state, stream parser, stream and scratch. Lane 0's state is the
 * hardware decoder open_hw makes; lanes 1.. are made by ic_nvjpeg_dec_make,
 * each on a HARDWARE handle of its own: two states on one handle decode
 * their batches one after the other (on the H200 two threads' batches of 16
 * HD files took 20 ms each against 10-12 ms for one thread's). */
typedef struct dec_lane {
    nvjpegHandle_t h;        /* lanes 1..: its own handle (lane 0: nj->hw; lane_handle) */
    nvjpegJpegState_t state; /* NULL: no hardware decoder on this lane (yet) */
    nvjpegJpegStream_t parse;
    int batch; /* batch size state was initialised for (0: needs initialising) */
    cudaStream_t s;
    const unsigned char **bdata;
    size_t *blen;
    nvjpegImage_t *bdst;
    int *bidx;
} dec_lane;

typedef struct enc_lane {
    nvjpegEncoderState_t st;
    nvjpegEncoderParams_t par;
    cudaStream_t s;
    cudaEvent_t ev;
    int quality; /* the quality par holds (0: not set) */
    int ready;   /* made: may be taken */
    int making;  /* being made by the caller that claimed it (outside the lock) */
    int busy;
} enc_lane;

struct ic_nvjpeg {
    int device;
    int max_batch;
    /* Hardware decoder (NULL when this GPU has none): batched API only. It is
     * the encoder's handle gpu itself when shared is set. Its states are the
     * decoder lanes'. */
    nvjpegHandle_t hw;
    int hw_tried; /* the hardware handle was asked for (open_hw) */
    dec_lane dl[IC_NVJ_DEC_LANES];
    /* The encoder's handle: a HARDWARE one that also decodes (shared), else
     * the DEFAULT one, which also does single-image decode and header parsing.
     * Every handle costs about 0.28 s to make (bench/results/startup.md), so
     * one serves both where the GPU has the engine. */
    nvjpegHandle_t gpu;
    int shared;
    nvjpegHandle_t hy; /* the hybrid decoder's own DEFAULT handle when gpu is shared */
    /* Its decoder state and stream parser (the hybrid decoder): made at the
     * first stream that needs them, since an encoder never does and a batch
     * whose files all take the hardware decoder or the CPU rarely does. */
    nvjpegJpegState_t gpu_state;
    nvjpegJpegStream_t gpu_parse;
    int hy_tried;        /* the hybrid decoder was asked for (open_hybrid) */
    int hy_ok;           /* ... and made */
    pthread_mutex_t hmu; /* one lane at a time uses the hybrid decoder's state and parser */
    enc_lane lane[NVJ_LANES];
    int lane_failed;    /* a further lane could not be made: use those there are */
    pthread_mutex_t mu; /* guards lane[].ready/making/busy and lane_failed */
    pthread_cond_t lane_free;
    pthread_mutex_t omu; /* guards hw_tried and hy_tried: a decoder's open waits under it,
                            never under mu (encodes go on meanwhile) */
    int sync_made;
};

static const char *nvj_str(nvjpegStatus_t s)
{
    switch (s) {
    case NVJPEG_STATUS_SUCCESS:
        return "success";
    case NVJPEG_STATUS_NOT_INITIALIZED:
        return "not initialised";
    case NVJPEG_STATUS_INVALID_PARAMETER:
        return "invalid parameter";
    case NVJPEG_STATUS_BAD_JPEG:
        return "bad JPEG";
    case NVJPEG_STATUS_JPEG_NOT_SUPPORTED:
        return "JPEG not supported";
    case NVJPEG_STATUS_ALLOCATOR_FAILURE:
        return "allocator failure";
    case NVJPEG_STATUS_EXECUTION_FAILED:
        return "execution failed";
    case NVJPEG_STATUS_ARCH_MISMATCH:
        return "architecture mismatch";
    case NVJPEG_STATUS_INTERNAL_ERROR:
        return "internal error";
    case NVJPEG_STATUS_IMPLEMENTATION_NOT_SUPPORTED:
        return "implementation not supported";
    case NVJPEG_STATUS_INCOMPLETE_BITSTREAM:
        return "incomplete bitstream";
    default:
        return "unknown nvJPEG status";
    }
}

static ic_status nvj_fail(char *err, size_t errlen, const char *call, nvjpegStatus_t s)
{
    if (err && errlen)
        snprintf(err, errlen, "%s: %s (nvJPEG status %d)", call, nvj_str(s), (int)s);
    (void)cudaGetLastError();
    return s == NVJPEG_STATUS_ALLOCATOR_FAILURE ? IC_ERR_NOMEM : IC_ERR_DEVICE;
}

#define NVJ_CHECK(call)                                                                            \
    do {                                                                                           \
        const nvjpegStatus_t nvj_s_ = (call);                                                      \
        if (nvj_s_ != NVJPEG_STATUS_SUCCESS)                                                       \
            return nvj_fail(err, errlen, #call, nvj_s_);                                           \
    } while (0)

extern "C" int ic_nvjpeg_built(void)
{
    return 1;
}

/* Handle flags, most wanted first: strict bitstream checking (corrupt data
 * fails instead of decoding to garbage) and interpolated chroma upsampling
 * (libjpeg-turbo's "fancy" upsampling is a triangle filter, not replication);
 * an nvJPEG that refuses a flag gets the next combination. */
#ifndef NVJPEG_FLAGS_BITSTREAM_STRICT
#define NVJPEG_FLAGS_BITSTREAM_STRICT 0
#endif
#ifndef NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION
#define NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION 0
#endif
static const unsigned int kHandleFlags[] = {
    NVJPEG_FLAGS_BITSTREAM_STRICT | NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
    NVJPEG_FLAGS_BITSTREAM_STRICT, NVJPEG_FLAGS_UPSAMPLING_WITH_INTERPOLATION,
    NVJPEG_FLAGS_DEFAULT};

static nvjpegStatus_t create_handle(nvjpegBackend_t backend, nvjpegHandle_t *h)
{
    nvjpegStatus_t s = NVJPEG_STATUS_NOT_INITIALIZED;
    for (size_t i = 0; i < sizeof kHandleFlags / sizeof *kHandleFlags; i++) {
        *h = NULL;
        s = nvjpegCreateEx(backend, NULL, NULL, kHandleFlags[i], h);
        if (s == NVJPEG_STATUS_SUCCESS)
            return s;
    }
    *h = NULL;
    return s;
}

/* Releases what lane l holds (any part of it may be missing) and zeroes it. */
static void free_lane(enc_lane *l)
{
    if (l->s)
        (void)cudaStreamSynchronize(l->s);
    if (l->par)
        (void)nvjpegEncoderParamsDestroy(l->par);
    if (l->st)
        (void)nvjpegEncoderStateDestroy(l->st);
    if (l->ev)
        (void)cudaEventDestroy(l->ev);
    if (l->s)
        (void)cudaStreamDestroy(l->s);
    memset(l, 0, sizeof *l);
}

/* Releases what decoder lane l holds (any part may be missing) and zeroes it;
 * its stream is idle. */
static void free_dec_lane(dec_lane *l)
{
    if (l->parse)
        (void)nvjpegJpegStreamDestroy(l->parse);
    if (l->state)
        (void)nvjpegJpegStateDestroy(l->state);
    if (l->h)
        (void)nvjpegDestroy(l->h);
    if (l->s)
        (void)cudaStreamDestroy(l->s);
    free(l->bdata);
    free(l->blen);
    free(l->bdst);
    free(l->bidx);
    memset(l, 0, sizeof *l);
}

/* Decoder lane l's stream and scratch for batches of max_batch. */
static ic_status make_dec_scratch(dec_lane *l, int max_batch, char *err, size_t errlen)
{
    const size_t m = (size_t)max_batch;
    l->bdata = (const unsigned char **)calloc(m, sizeof *l->bdata);
    l->blen = (size_t *)calloc(m, sizeof *l->blen);
    l->bdst = (nvjpegImage_t *)calloc(m, sizeof *l->bdst);
    l->bidx = (int *)calloc(m, sizeof *l->bidx);
    if (!l->bdata || !l->blen || !l->bdst || !l->bidx) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    IC_CUDA_CHECK(cudaStreamCreateWithFlags(&l->s, cudaStreamNonBlocking));
    return IC_OK;
}

extern "C" void ic_nvjpeg_close(ic_nvjpeg *nj)
{
    if (!nj)
        return;
    /* Best effort: close cannot report. */
    (void)cudaSetDevice(nj->device);
    for (int i = 0; i < IC_NVJ_DEC_LANES; i++)
        if (nj->dl[i].s)
            (void)cudaStreamSynchronize(nj->dl[i].s);
    for (int i = 0; i < NVJ_LANES; i++)
        free_lane(&nj->lane[i]);
    if (nj->sync_made) {
        pthread_mutex_destroy(&nj->mu);
        pthread_mutex_destroy(&nj->omu);
        pthread_mutex_destroy(&nj->hmu);
        pthread_cond_destroy(&nj->lane_free);
    }
    /* states before the handles they were made on (gpu may be hw) */
    if (nj->gpu_parse)
        (void)nvjpegJpegStreamDestroy(nj->gpu_parse);
    if (nj->gpu_state)
        (void)nvjpegJpegStateDestroy(nj->gpu_state);
    for (int i = 0; i < IC_NVJ_DEC_LANES; i++)
        free_dec_lane(&nj->dl[i]);
    if (nj->hy)
        (void)nvjpegDestroy(nj->hy);
    if (nj->hw && nj->hw != nj->gpu)
        (void)nvjpegDestroy(nj->hw);
    if (nj->gpu)
        (void)nvjpegDestroy(nj->gpu);
    (void)cudaGetLastError();
    free(nj);
}

/* Creates encoder lane l (stream, event, state, parameters). */
static ic_status make_lane(ic_nvjpeg *nj, enc_lane *l, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(nj->device));
    IC_CUDA_CHECK(cudaStreamCreateWithFlags(&l->s, cudaStreamNonBlocking));
    IC_CUDA_CHECK(cudaEventCreateWithFlags(&l->ev, cudaEventDisableTiming));
    NVJ_CHECK(nvjpegEncoderStateCreate(nj->gpu, &l->st, l->s));
    NVJ_CHECK(nvjpegEncoderParamsCreate(nj->gpu, &l->par, l->s));
    NVJ_CHECK(nvjpegEncoderParamsSetSamplingFactors(l->par, NVJPEG_CSS_420, l->s));
    NVJ_CHECK(nvjpegEncoderParamsSetOptimizedHuffman(l->par, 0, l->s));
    NVJ_CHECK(nvjpegEncoderParamsSetEncoding(l->par, NVJPEG_ENCODING_BASELINE_DCT, l->s));
    return IC_OK;
}

/* ic_nvjpeg_open makes only what an encoder needs, the default handle and
 * encoder lane 0 (each nvJPEG handle or state creation costs 0.1-0.4 s, more
 * while other threads load the CPU), and returns. The hardware decoder is
 * made at the first header check (ic_nvjpeg_check, ic_nvjpeg_engine), the
 * hybrid decoder at the first stream that needs it, each on the calling
 * thread: an encode-only user pays for neither, and a batch decides whether
 * its decoders are worth their second (tools/cli_batch.c). Making them on
 * threads of their own from the open cost a batch whose CPU workers had
 * already decoded every file as long again at the end, joining them. */

/* The hardware decoder's parts, made apart (ic_nvjpeg_hw_make) or in place. */
struct ic_nvjpeg_hw {
    int device;
    nvjpegHandle_t h;
    nvjpegJpegState_t state;
    nvjpegJpegStream_t parse;
};

static void hw_destroy(ic_nvjpeg_hw *hw)
{
    (void)cudaSetDevice(hw->device);
    if (hw->parse)
        (void)nvjpegJpegStreamDestroy(hw->parse);
    if (hw->state)
        (void)nvjpegJpegStateDestroy(hw->state);
    if (hw->h)
        (void)nvjpegDestroy(hw->h);
    hw->h = NULL;
    hw->state = NULL;
    hw->parse = NULL;
    (void)cudaGetLastError();
}

/* Makes the hardware decoder's handle, state and stream parser, or leaves
 * them NULL (a GPU without the engine refuses the backend: every stream then
 * takes the hybrid decoder). */
static void hw_parts(int device, ic_nvjpeg_hw *hw)
{
    memset(hw, 0, sizeof *hw);
    hw->device = device;
    (void)cudaSetDevice(device);
    if (create_handle(NVJPEG_BACKEND_HARDWARE, &hw->h) == NVJPEG_STATUS_SUCCESS &&
        (nvjpegJpegStateCreate(hw->h, &hw->state) != NVJPEG_STATUS_SUCCESS ||
         nvjpegJpegStreamCreate(hw->h, &hw->parse) != NVJPEG_STATUS_SUCCESS))
        hw_destroy(hw);
    (void)cudaGetLastError();
}

/* nj's hardware decoder from its parts (under nj->omu). */
static void hw_take(ic_nvjpeg *nj, const ic_nvjpeg_hw *hw)
{
    nj->hw = hw->h;
    nj->dl[0].state = hw->state;
    nj->dl[0].parse = hw->parse;
    nj->hw_tried = 1;
}

/* Makes nj's hardware decoder in place: a state and parser on the shared
 * handle, else a handle of its own. Runs once, in open_hw. */
static void make_hw(ic_nvjpeg *nj)
{
    ic_nvjpeg_hw hw;
    if (!nj->shared) {
        hw_parts(nj->device, &hw);
        hw_take(nj, &hw);
        return;
    }
    memset(&hw, 0, sizeof hw);
    (void)cudaSetDevice(nj->device);
    if (nvjpegJpegStateCreate(nj->gpu, &hw.state) == NVJPEG_STATUS_SUCCESS &&
        nvjpegJpegStreamCreate(nj->gpu, &hw.parse) == NVJPEG_STATUS_SUCCESS) {
        hw.h = nj->gpu;
    } else if (hw.state) {
        (void)nvjpegJpegStateDestroy(hw.state);
        hw.state = NULL;
    }
    (void)cudaGetLastError();
    hw_take(nj, &hw);
}

extern "C" ic_nvjpeg_hw *ic_nvjpeg_hw_make(int device)
{
    ic_nvjpeg_hw *hw = (ic_nvjpeg_hw *)calloc(1, sizeof *hw);
    if (hw)
        hw_parts(device, hw);
    return hw;
}

extern "C" void ic_nvjpeg_hw_give(ic_nvjpeg *nj, ic_nvjpeg_hw *hw)
{
    if (!hw)
        return;
    int taken = 0;
    if (nj) {
        pthread_mutex_lock(&nj->omu);
        if (!nj->hw_tried && !nj->shared) { /* a shared handle makes only a state */
            hw_take(nj, hw);
            taken = 1;
        }
        pthread_mutex_unlock(&nj->omu);
    }
    if (!taken)
        hw_destroy(hw);
    free(hw);
}

/* The handle of the hybrid decoder: gpu, or its own when gpu is the shared
 * HARDWARE handle (NULL until make_hybrid made it). */
static nvjpegHandle_t hy_handle(const ic_nvjpeg *nj)
{
    return nj->shared ? nj->hy : nj->gpu;
}

/* Makes the hybrid decoder's state and stream parser on the default handle,
 * or leaves them NULL (its streams then go to the caller's CPU codec). Runs
 * once, in open_hybrid. */
static void make_hybrid(ic_nvjpeg *nj)
{
    (void)cudaSetDevice(nj->device);
    if (nj->shared && create_handle(NVJPEG_BACKEND_DEFAULT, &nj->hy) != NVJPEG_STATUS_SUCCESS)
        nj->hy = NULL;
    const nvjpegHandle_t h = hy_handle(nj);
    if (h && nvjpegJpegStateCreate(h, &nj->gpu_state) == NVJPEG_STATUS_SUCCESS &&
        nvjpegJpegStreamCreate(h, &nj->gpu_parse) == NVJPEG_STATUS_SUCCESS) {
        nj->hy_ok = 1;
    } else {
        if (nj->gpu_state)
            (void)nvjpegJpegStateDestroy(nj->gpu_state);
        nj->gpu_state = NULL;
        nj->gpu_parse = NULL;
    }
    (void)cudaGetLastError();
}

static ic_status open_all(ic_nvjpeg *nj, char *err, size_t errlen)
{
    int n = 0;
    IC_CUDA_CHECK(cudaGetDeviceCount(&n));
    if (nj->device >= n) {
        snprintf(err, errlen, "CUDA device %d does not exist (this machine has %d)", nj->device, n);
        return IC_ERR_DEVICE;
    }
    IC_CUDA_CHECK(cudaSetDevice(nj->device));
    if (pthread_mutex_init(&nj->mu, NULL) != 0)
        return IC_ERR_NOMEM;
    if (pthread_mutex_init(&nj->omu, NULL) != 0) {
        pthread_mutex_destroy(&nj->mu);
        return IC_ERR_NOMEM;
    }
    if (pthread_mutex_init(&nj->hmu, NULL) != 0) {
        pthread_mutex_destroy(&nj->mu);
        pthread_mutex_destroy(&nj->omu);
        return IC_ERR_NOMEM;
    }
    if (pthread_cond_init(&nj->lane_free, NULL) != 0) {
        pthread_mutex_destroy(&nj->mu);
        pthread_mutex_destroy(&nj->omu);
        pthread_mutex_destroy(&nj->hmu);
        return IC_ERR_NOMEM;
    }
    nj->sync_made = 1;
    ic_status ls = make_dec_scratch(&nj->dl[0], nj->max_batch, err, errlen);
    if (ls != IC_OK)
        return ls;
    /* One HARDWARE handle for the encoder and the hardware decoder where the
     * GPU has the engine (IC_NVJPEG_HANDLES=two: a DEFAULT one for the
     * encoder and a second for the decoder, to compare). Lane 0 now (its
     * failure fails the open); the others when concurrent encodes first ask
     * for them (ic_nvjpeg_encode). */
    const char *handles = getenv("IC_NVJPEG_HANDLES");
    ic_status st = IC_ERR_DEVICE;
    if (!(handles && !strcmp(handles, "two")) &&
        create_handle(NVJPEG_BACKEND_HARDWARE, &nj->gpu) == NVJPEG_STATUS_SUCCESS) {
        nj->shared = 1;
        st = make_lane(nj, &nj->lane[0], err, errlen);
        if (st != IC_OK) { /* an encoder the hardware handle will not give: DEFAULT */
            free_lane(&nj->lane[0]);
            (void)nvjpegDestroy(nj->gpu);
            nj->gpu = NULL;
            nj->shared = 0;
        }
    }
    (void)cudaGetLastError();
    if (!nj->shared) {
        NVJ_CHECK(create_handle(NVJPEG_BACKEND_DEFAULT, &nj->gpu));
        st = make_lane(nj, &nj->lane[0], err, errlen);
    }
    nj->lane[0].ready = st == IC_OK;
    return st;
}

/* The hardware decoder, made once (under nj->omu). */
static void open_hw(ic_nvjpeg *nj)
{
    pthread_mutex_lock(&nj->omu);
    if (!nj->hw_tried) {
        nj->hw_tried = 1;
        make_hw(nj);
    }
    pthread_mutex_unlock(&nj->omu);
}

/* The hybrid decoder, made once (under nj->omu); 1 when it is there. */
static int open_hybrid(ic_nvjpeg *nj)
{
    pthread_mutex_lock(&nj->omu);
    if (!nj->hy_tried) {
        nj->hy_tried = 1;
        make_hybrid(nj);
    }
    const int ok = nj->hy_ok;
    pthread_mutex_unlock(&nj->omu);
    return ok;
}

extern "C" ic_status ic_nvjpeg_open(ic_nvjpeg **out, int device, int max_batch, char *err,
                                    size_t errlen)
{
    *out = NULL;
    if (device < 0 || max_batch < 1) {
        snprintf(err, errlen, "bad device %d or batch size %d", device, max_batch);
        return IC_ERR_INVALID_ARG;
    }
    ic_nvjpeg *nj = (ic_nvjpeg *)calloc(1, sizeof *nj);
    if (!nj) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    nj->device = device;
    nj->max_batch = max_batch;
    const ic_status st = open_all(nj, err, errlen);
    if (st != IC_OK) {
        ic_nvjpeg_close(nj);
        return st;
    }
    *out = nj;
    return IC_OK;
}

extern "C" const char *ic_nvjpeg_engine(const ic_nvjpeg *nj)
{
    if (!nj)
        return "nvjpeg-hybrid";
    open_hw((ic_nvjpeg *)nj); /* the answer needs the lazily opened handle */
    return nj->hw ? "nvjpeg-hardware" : "nvjpeg-hybrid";
}

extern "C" ic_status ic_nvjpeg_dec_make(ic_nvjpeg *nj, int lane, char *err, size_t errlen)
{
    if (!nj || lane < 1 || lane >= IC_NVJ_DEC_LANES || nj->dl[lane].s) {
        snprintf(err, errlen, "bad decoder lane %d", lane);
        return IC_ERR_INVALID_ARG;
    }
    open_hw(nj);
    if (!nj->hw) {
        snprintf(err, errlen, "no hardware decoder");
        return IC_ERR_UNSUPPORTED;
    }
    IC_CUDA_CHECK(cudaSetDevice(nj->device));
    dec_lane l;
    memset(&l, 0, sizeof l);
    ic_status st = make_dec_scratch(&l, nj->max_batch, err, errlen);
    nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
    if (st == IC_OK &&
        (s = create_handle(NVJPEG_BACKEND_HARDWARE, &l.h)) == NVJPEG_STATUS_SUCCESS &&
        (s = nvjpegJpegStateCreate(l.h, &l.state)) == NVJPEG_STATUS_SUCCESS)
        s = nvjpegJpegStreamCreate(l.h, &l.parse);
    if (st == IC_OK && s != NVJPEG_STATUS_SUCCESS)
        st = nvj_fail(err, errlen, "nvJPEG hardware decoder (lane)", s);
    if (st != IC_OK) {
        free_dec_lane(&l);
        (void)cudaGetLastError();
        return st;
    }
    nj->dl[lane] = l;
    return IC_OK;
}

/* What the marker walk learns before nvJPEG sees the stream. */
typedef struct jpeg_walk {
    int jfif, adobe, adobe_transform;
    int ncomp, ids[4];
    int has_eoi; /* an EOI marker follows the first scan */
} jpeg_walk;

/* Walks the marker segments up to the first SOS, then looks for EOI after
 * it. Returns 0 when the structure is broken (the CPU decoder reports it). */
static int walk_markers(const uint8_t *d, size_t n, jpeg_walk *w)
{
    memset(w, 0, sizeof *w);
    if (n < 4 || d[0] != 0xFF || d[1] != 0xD8)
        return 0;
    size_t p = 2;
    for (;;) {
        while (p < n && d[p] == 0xFF && p + 1 < n && d[p + 1] == 0xFF)
            p++; /* fill bytes */
        if (p + 4 > n || d[p] != 0xFF)
            return 0;
        const uint8_t m = d[p + 1];
        if (m == 0x01 || (m >= 0xD0 && m <= 0xD7)) {
            p += 2;
            continue;
        }
        if (m == 0xD8 || m == 0xD9)
            return 0; /* SOI again or EOI before any scan */
        const size_t seg = ((size_t)d[p + 2] << 8) | d[p + 3];
        if (seg < 2 || p + 2 + seg > n)
            return 0;
        const uint8_t *s = d + p + 4;
        const size_t sl = seg - 2;
        if (m == 0xE0 && sl >= 5 && memcmp(s, "JFIF\0", 5) == 0)
            w->jfif = 1;
        if (m == 0xEE && sl >= 12 && memcmp(s, "Adobe", 5) == 0) {
            w->adobe = 1;
            w->adobe_transform = s[11];
        }
        if ((m >= 0xC0 && m <= 0xCF) && m != 0xC4 && m != 0xC8 && m != 0xCC && sl >= 6) {
            w->ncomp = s[5];
            for (int c = 0; c < w->ncomp && c < 4 && 6 + 3 * (size_t)c < sl; c++)
                w->ids[c] = s[6 + 3 * c];
        }
        if (m == 0xDA) {
            p += 2 + seg;
            break;
        }
        p += 2 + seg;
    }
    /* After the first SOS: entropy-coded data, in which 0xFF is followed by
     * 0x00 (a stuffed byte), 0xFF (fill), RST0..7 in sequence, EOI (the end),
     * or the marker segments allowed between scans (DHT, DQT, DRI, DNL, COM,
     * APPn, SOS) with a length that fits. Anything else is a marker that
     * libjpeg reports as corrupt data ("premature end of data segment",
     * "found marker instead of RST"), which nvJPEG may decode without a word:
     * has_eoi stays 0 and the file goes to the CPU decoder, whose message and
     * exit code the CLI then gives. */
    int next_rst = 0;
    for (size_t q = p; q + 1 < n; q++) {
        const uint8_t *f = (const uint8_t *)memchr(d + q, 0xFF, n - 1 - q);
        if (!f)
            break;
        q = (size_t)(f - d);
        const uint8_t m = d[q + 1];
        if (m == 0x00)
            continue;
        if (m == 0xFF)
            continue; /* fill: the next 0xFF may start the marker */
        if (m >= 0xD0 && m <= 0xD7) {
            if (m != 0xD0 + next_rst)
                return 1; /* RST out of sequence */
            next_rst = (next_rst + 1) & 7;
            q++;
            continue;
        }
        if (m == 0xD9) {
            w->has_eoi = 1;
            break;
        }
        const int between_scans = m == 0xC4 || m == 0xDB || m == 0xDD || m == 0xDC || m == 0xFE ||
                                  (m >= 0xE0 && m <= 0xEF) || m == 0xDA;
        if (!between_scans || q + 4 > n)
            return 1;
        const size_t seg = ((size_t)d[q + 2] << 8) | d[q + 3];
        if (seg < 2 || q + 2 + seg > n)
            return 1;
        next_rst = 0; /* restart numbering begins again with each scan */
        q += 1 + seg; /* the loop's q++ lands on the byte after the segment */
    }
    return 1;
}

/* libjpeg-turbo's colour space guess for 3 components (jdapimin.c): RGB
 * when Adobe says transform 0 without JFIF, or the component ids are R G B. */
static int coded_as_rgb(const jpeg_walk *w)
{
    if (w->jfif)
        return 0;
    if (w->adobe)
        return w->adobe_transform == 0;
    return w->ids[0] == 'R' && w->ids[1] == 'G' && w->ids[2] == 'B';
}

/* The handle decoder lane l decodes and parses on. */
static nvjpegHandle_t lane_handle(const ic_nvjpeg *nj, const dec_lane *l)
{
    return l->h ? l->h : nj->hw;
}

/* The route of a stream parsed with js on handle hnd (IC_NVJ_CPU when the
 * headers are not for nvJPEG); hw: the hardware decoder may take it. */
static int parse_route(nvjpegHandle_t hnd, nvjpegJpegStream_t js, int hw, const uint8_t *data,
                       size_t len, int *w, int *h)
{
    if (nvjpegJpegStreamParseHeader(hnd, data, len, js) != NVJPEG_STATUS_SUCCESS)
        return IC_NVJ_CPU;
    nvjpegJpegEncoding_t enc;
    unsigned int ncomp = 0, prec = 0, fw = 0, fh = 0;
    nvjpegChromaSubsampling_t css;
    if (nvjpegJpegStreamGetJpegEncoding(js, &enc) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamGetComponentsNum(js, &ncomp) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamGetSamplePrecision(js, &prec) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamGetChromaSubsampling(js, &css) != NVJPEG_STATUS_SUCCESS ||
        nvjpegJpegStreamGetFrameDimensions(js, &fw, &fh) != NVJPEG_STATUS_SUCCESS)
        return IC_NVJ_CPU;
    if (ncomp != 3 || prec != 8 || css == NVJPEG_CSS_UNKNOWN || css == NVJPEG_CSS_GRAY || fw == 0 ||
        fh == 0 || fw > IC_MAX_DIM || fh > IC_MAX_DIM ||
        (enc != NVJPEG_ENCODING_BASELINE_DCT &&
         enc != NVJPEG_ENCODING_EXTENDED_SEQUENTIAL_DCT_HUFFMAN &&
         enc != NVJPEG_ENCODING_PROGRESSIVE_DCT_HUFFMAN))
        return IC_NVJ_CPU;
    *w = (int)fw;
    *h = (int)fh;
    int unsupported = 1;
    if (hw && nvjpegDecodeBatchedSupported(hnd, js, &unsupported) == NVJPEG_STATUS_SUCCESS &&
        unsupported == 0) /* 0 means the hardware decoder takes it */
        return IC_NVJ_HW;
    return IC_NVJ_HYBRID;
}

extern "C" int ic_nvjpeg_check(ic_nvjpeg *nj, int lane, const uint8_t *data, size_t len, int *w,
                               int *h)
{
    *w = *h = 0;
    jpeg_walk jw;
    if (!nj || lane < 0 || lane >= IC_NVJ_DEC_LANES || !walk_markers(data, len, &jw) ||
        !jw.has_eoi || jw.ncomp != 3 || coded_as_rgb(&jw))
        return IC_NVJ_CPU;
    open_hw(nj);
    (void)cudaSetDevice(nj->device);
    const dec_lane *l = &nj->dl[lane];
    if (l->state) /* a hardware decoder: the lane's own parser */
        return parse_route(lane_handle(nj, l), l->parse, 1, data, len, w, h);
    if (!open_hybrid(nj))
        return IC_NVJ_CPU;
    pthread_mutex_lock(&nj->hmu);
    const int r = parse_route(hy_handle(nj), nj->gpu_parse, 0, data, len, w, h);
    pthread_mutex_unlock(&nj->hmu);
    return r;
}

/* One stream on the default handle, on stream cs; 1 when decoded. */
static int decode_one(ic_nvjpeg *nj, cudaStream_t cs, const uint8_t *data, size_t len, uint8_t *dst,
                      size_t pitch)
{
    if (!open_hybrid(nj))
        return 0;
    nvjpegImage_t out;
    memset(&out, 0, sizeof out);
    out.channel[0] = dst;
    out.pitch[0] = pitch;
    pthread_mutex_lock(&nj->hmu);
    const nvjpegStatus_t s =
        nvjpegDecode(hy_handle(nj), nj->gpu_state, data, len, NVJPEG_OUTPUT_RGBI, &out, cs);
    const int ok = s == NVJPEG_STATUS_SUCCESS && cudaStreamSynchronize(cs) == cudaSuccess;
    pthread_mutex_unlock(&nj->hmu);
    if (!ok)
        (void)cudaGetLastError();
    return ok;
}

extern "C" ic_status ic_nvjpeg_decode(ic_nvjpeg *nj, int lane, int n, const uint8_t *const *data,
                                      const size_t *len, const int *route, uint8_t *const *dst,
                                      const size_t *pitch, void *const *after, int *ok, char *err,
                                      size_t errlen)
{
    for (int i = 0; i < n; i++)
        ok[i] = 0;
    if (!nj || n < 0 || n > nj->max_batch || lane < 0 || lane >= IC_NVJ_DEC_LANES ||
        !nj->dl[lane].s) {
        snprintf(err, errlen, "bad nvJPEG batch of %d on lane %d", n, lane);
        return IC_ERR_INVALID_ARG;
    }
    dec_lane *l = &nj->dl[lane];
    const nvjpegHandle_t hh = lane_handle(nj, l);
    IC_CUDA_CHECK(cudaSetDevice(nj->device));
    /* A host wait, not a stream wait: the hardware batched decoder has been
     * seen to write its outputs without waiting for earlier work on its
     * stream (H100), so nothing queued may still use a destination. */
    for (int i = 0; after && i < n; i++)
        if (after[i] && route[i] != IC_NVJ_CPU && (i == 0 || after[i] != after[i - 1]))
            IC_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)after[i]));
    /* The hardware decoder's share, in one batched call. */
    int nb = 0;
    for (int i = 0; i < n; i++)
        if (route[i] == IC_NVJ_HW && l->state) {
            l->bdata[nb] = data[i];
            l->blen[nb] = len[i];
            memset(&l->bdst[nb], 0, sizeof l->bdst[nb]);
            l->bdst[nb].channel[0] = dst[i];
            l->bdst[nb].pitch[0] = pitch[i];
            l->bidx[nb] = i;
            nb++;
        }
    int batch_ok = 0;
    if (nb > 0) {
        nvjpegStatus_t s = NVJPEG_STATUS_SUCCESS;
        if (l->batch != nb) {
            s = nvjpegDecodeBatchedInitialize(hh, l->state, nb, 1, NVJPEG_OUTPUT_RGBI);
            l->batch = s == NVJPEG_STATUS_SUCCESS ? nb : 0;
        }
        if (s == NVJPEG_STATUS_SUCCESS)
            s = nvjpegDecodeBatched(hh, l->state, l->bdata, l->blen, l->bdst, l->s);
        if (s == NVJPEG_STATUS_SUCCESS) {
            IC_CUDA_CHECK(cudaStreamSynchronize(l->s));
            batch_ok = 1;
            for (int b = 0; b < nb; b++)
                ok[l->bidx[b]] = IC_NVJ_HW;
        } else {
            /* One bad stream fails the batch: reinitialise next time and
             * retry each stream alone below, to find the bad ones. */
            (void)cudaGetLastError();
            l->batch = 0;
        }
    }
    for (int i = 0; i < n; i++) {
        if (route[i] == IC_NVJ_CPU || ok[i])
            continue;
        if (route[i] == IC_NVJ_HW && batch_ok)
            continue;
        ok[i] = decode_one(nj, l->s, data[i], len[i], dst[i], pitch[i]) ? IC_NVJ_HYBRID : 0;
    }
    /* A failed stream must not have broken the device for the others. */
    const cudaError_t e = cudaStreamSynchronize(l->s);
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, "cudaStreamSynchronize(decode)", (int)e);
    /* Work the caller queues on a destination's stream runs after the
     * decode, whether or not it also waits on the host. */
    for (int i = 0; after && i < n; i++)
        if (ok[i] && after[i]) {
            const ic_status st = ic_cuda_stream_order(nj->device, after[i], l->s, err, errlen);
            if (st != IC_OK)
                return st;
        }
    return IC_OK;
}

/* One encode on lane l (owned by this thread until it is released). */
static ic_status encode_on(ic_nvjpeg *nj, enc_lane *l, const uint8_t *src, size_t pitch, int w,
                           int h, void *src_stream, int quality, uint8_t **buf, size_t *cap,
                           size_t *len, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(nj->device));
    /* Order after the work that produced src, on its stream. */
    IC_CUDA_CHECK(cudaEventRecord(l->ev, (cudaStream_t)src_stream));
    IC_CUDA_CHECK(cudaStreamWaitEvent(l->s, l->ev, 0));
    if (l->quality != quality) {
        NVJ_CHECK(nvjpegEncoderParamsSetQuality(l->par, quality, l->s));
        l->quality = quality;
    }
    nvjpegImage_t in;
    memset(&in, 0, sizeof in);
    in.channel[0] = (unsigned char *)src;
    in.pitch[0] = pitch;
    NVJ_CHECK(nvjpegEncodeImage(nj->gpu, l->st, l->par, &in, NVJPEG_INPUT_RGBI, w, h, l->s));
    size_t n = 0;
    NVJ_CHECK(nvjpegEncodeRetrieveBitstream(nj->gpu, l->st, NULL, &n, l->s));
    IC_CUDA_CHECK(cudaStreamSynchronize(l->s));
    if (n == 0) {
        snprintf(err, errlen, "nvjpegEncodeRetrieveBitstream: empty bitstream");
        return IC_ERR_DEVICE;
    }
    if (*cap < n) {
        uint8_t *nb = (uint8_t *)realloc(*buf, n);
        if (!nb) {
            snprintf(err, errlen, "out of memory for %zu encoded bytes", n);
            return IC_ERR_NOMEM;
        }
        *buf = nb;
        *cap = n;
    }
    NVJ_CHECK(nvjpegEncodeRetrieveBitstream(nj->gpu, l->st, *buf, &n, l->s));
    IC_CUDA_CHECK(cudaStreamSynchronize(l->s));
    *len = n;
    return IC_OK;
}

extern "C" ic_status ic_nvjpeg_encode(ic_nvjpeg *nj, const uint8_t *src, size_t pitch, int w, int h,
                                      void *src_stream, int quality, uint8_t **buf, size_t *cap,
                                      size_t *len, char *err, size_t errlen)
{
    *len = 0;
    if (!nj || !src || w < 1 || h < 1 || quality < 1 || quality > 100) {
        snprintf(err, errlen, "bad nvJPEG encode request");
        return IC_ERR_INVALID_ARG;
    }
    /* Take a free lane: up to NVJ_LANES encodes run at once. When all are
     * busy and there is room, this caller makes one more (0.2 s: outside the
     * lock, so that the other lanes are taken and given back meanwhile); a
     * lane that cannot be made is released, and callers wait for the lanes
     * there are. */
    pthread_mutex_lock(&nj->mu);
    enc_lane *l = NULL;
    for (;;) {
        for (int i = 0; i < NVJ_LANES && !l; i++)
            if (nj->lane[i].ready && !nj->lane[i].busy)
                l = &nj->lane[i];
        if (l)
            break;
        enc_lane *nl = NULL;
        for (int i = 0; i < NVJ_LANES && !nl && !nj->lane_failed; i++)
            if (!nj->lane[i].ready && !nj->lane[i].making)
                nl = &nj->lane[i];
        if (nl) {
            nl->making = 1;
            pthread_mutex_unlock(&nj->mu);
            enc_lane made; /* made here, published under the lock */
            memset(&made, 0, sizeof made);
            char e2[128];
            const ic_status ms = make_lane(nj, &made, e2, sizeof e2);
            if (ms != IC_OK) {
                free_lane(&made);
                (void)cudaGetLastError();
            }
            pthread_mutex_lock(&nj->mu);
            nl->making = 0;
            if (ms == IC_OK) {
                *nl = made;
                nl->ready = 1;
                l = nl;
                break;
            }
            nj->lane_failed = 1;
            pthread_cond_broadcast(&nj->lane_free);
            continue;
        }
        pthread_cond_wait(&nj->lane_free, &nj->mu);
    }
    l->busy = 1;
    pthread_mutex_unlock(&nj->mu);
    const ic_status st =
        encode_on(nj, l, src, pitch, w, h, src_stream, quality, buf, cap, len, err, errlen);
    if (st != IC_OK)
        (void)cudaStreamSynchronize(l->s); /* leave the lane idle for the next caller */
    pthread_mutex_lock(&nj->mu);
    l->busy = 0;
    pthread_cond_signal(&nj->lane_free);
    pthread_mutex_unlock(&nj->mu);
    return st;
}

#endif /* IC_HAVE_NVJPEG */
