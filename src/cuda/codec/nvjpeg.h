/*
 * nvjpeg.h - JPEG decode and encode on the GPU through nvJPEG (internal).
 *
 * The public GPU codec (ic_gpu_codec, src/cuda/codec/gpu_codec.c) is built on
 * this: an ic_nvjpeg owns one device's nvJPEG handles (the hardware decoder
 * where the GPU has one, nvJPEG's default hybrid decoder always), the decoder
 * lanes (state, stream parser, stream) and the encoder lanes (state,
 * parameters, stream).
 * Decisions about what goes to the GPU are taken here from the JPEG headers
 * (ic_nvjpeg_check); what nvJPEG refuses is left to the caller's CPU codec.
 *
 * Each decoder lane decodes one batch at a time: lane 0 once the hardware
 * decoder is open, lanes 1.. once ic_nvjpeg_dec_make made them, so that
 * batches on different lanes decode at once (the caller gives each thread
 * its own lane). Up to 16 encodes run at once from any threads (each takes
 * an encoder lane: its own state, parameters, stream, event) and further
 * callers wait for a free one. The handles are thread-safe.
 *
 * Built in every CUDA build; without nvJPEG (IC_HAVE_NVJPEG undefined) the
 * codec functions report IC_ERR_UNSUPPORTED and ic_nvjpeg_check accepts
 * nothing, so every JPEG takes the CPU codec. The device memory helpers at the
 * end need only the CUDA runtime.
 */
#ifndef IC_CUDA_NVJPEG_H
#define IC_CUDA_NVJPEG_H

#include <stddef.h>
#include <stdint.h>

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ic_nvjpeg ic_nvjpeg;

/* Decoder lanes at most (batched decodes at once on one device). */
#define IC_NVJ_DEC_LANES 4

/* How ic_nvjpeg_check routes one JPEG stream. */
enum {
    IC_NVJ_CPU = 0,    /* not for nvJPEG: grey, CMYK/YCCK, 12-bit, lossless, odd sampling,
                        * no end-of-image marker after the first scan, unparseable */
    IC_NVJ_HYBRID = 1, /* 3-component, decoded by the GPU-hybrid decoder (progressive, ...) */
    IC_NVJ_HW = 2      /* 3-component baseline that the hardware decoder takes (batched) */
};

/* 1 when this build has nvJPEG. */
int ic_nvjpeg_built(void);

/* Opens nvJPEG on `device` for batches of up to max_batch streams and
 * returns once it can encode: the GPU-hybrid (default) handle and encoder
 * lane 0 made. The decoders are made where they are first needed, on the
 * calling thread: the hardware decoder (used when
 * nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE) succeeds on this GPU) at the first
 * ic_nvjpeg_check (or ic_nvjpeg_engine) unless one made apart was given
 * (ic_nvjpeg_hw_give), the hybrid decoder's state at the
 * first stream that needs it (one that cannot be made sends its streams to
 * the caller's CPU codec); nvJPEG's creations cost 0.1-0.4 s each. Encoder
 * lanes 2..4 are made when concurrent encodes first need them, outside the
 * lock the others use. Errors: IC_ERR_UNSUPPORTED (built without nvJPEG),
 * IC_ERR_DEVICE (a CUDA or nvJPEG call failed; err names it), IC_ERR_NOMEM. */
ic_status ic_nvjpeg_open(ic_nvjpeg **nj, int device, int max_batch, char *err, size_t errlen);

/* Releases everything (NULL-safe). */
void ic_nvjpeg_close(ic_nvjpeg *nj);

/* The hardware decoder made apart from an ic_nvjpeg, so that it can be made
 * on another thread while ic_nvjpeg_open makes the encoder, then handed
 * over. */
typedef struct ic_nvjpeg_hw ic_nvjpeg_hw;

/* Makes the hardware decoder's handle, state and stream parser on `device`
 * (0.3-0.7 s). Never fails as such: a GPU without the engine gives an empty
 * one (its streams then take the hybrid decoder); NULL only when out of
 * memory. */
ic_nvjpeg_hw *ic_nvjpeg_hw_make(int device);

/* nj takes hw as its hardware decoder, unless it has asked for one already
 * (hw is then freed); nj NULL: hw is freed. NULL-safe. */
void ic_nvjpeg_hw_give(ic_nvjpeg *nj, ic_nvjpeg_hw *hw);

/* "nvjpeg-hardware" or "nvjpeg-hybrid": the decoder baseline files get
 * (opens the hardware decoder if no header check did yet). */
const char *ic_nvjpeg_engine(const ic_nvjpeg *nj);

/* Makes decoder lane `lane` (1..IC_NVJ_DEC_LANES-1, not made yet, used by no
 * other thread) once the hardware decoder is open (opened first if need be):
 * a HARDWARE handle, state and stream parser of its own (states on one handle
 * decode in turn), a stream, scratch; about 0.6 s. Errors:
 * IC_ERR_UNSUPPORTED (no hardware decoder: a lane would add nothing, since
 * the hybrid decoder's one state is shared), IC_ERR_INVALID_ARG,
 * IC_ERR_DEVICE, IC_ERR_NOMEM; the lane is then not usable. */
ic_status ic_nvjpeg_dec_make(ic_nvjpeg *nj, int lane, char *err, size_t errlen);

/* Reads the headers of one JPEG stream with decoder lane `lane`'s parser
 * (lane 0 always exists) and returns its route (IC_NVJ_*), with the image
 * size in *w, *h when the route is not IC_NVJ_CPU. Never fails: anything
 * unexpected routes to the CPU, whose decoder then gives the same message
 * as a host load. */
int ic_nvjpeg_check(ic_nvjpeg *nj, int lane, const uint8_t *data, size_t len, int *w, int *h);

/* Decodes on decoder lane `lane` (the one that checked them) n streams
 * (routes from ic_nvjpeg_check, none IC_NVJ_CPU; n <= max_batch) to
 * interleaved RGB in the device buffers dst[i] (rows pitch[i] bytes apart, at
 * least 3*width). after[i] (a cudaStream_t; NULL: none) is the stream whose
 * queued work may still use dst[i]: the decoder writes dst[i] only once that
 * work is done (a host wait: the hardware decoder does not wait for its own
 * stream's earlier work), and work queued on after[i] from the return on runs
 * after the decode (an event recorded after it). The IC_NVJ_HW streams go
 * through one nvjpegDecodeBatched call; if it fails they are retried one by
 * one on the hybrid decoder. ok[i] says which decoder produced stream i
 * (IC_NVJ_HW or IC_NVJ_HYBRID), or is 0 when nvJPEG refused it (the caller
 * decodes it on the CPU). The lane's stream is synchronised before
 * returning; the hybrid decoder's one state serves the lanes in turn. Returns
 * IC_OK, or IC_ERR_DEVICE when the device itself failed (err says how;
 * nothing is usable then). */
ic_status ic_nvjpeg_decode(ic_nvjpeg *nj, int lane, int n, const uint8_t *const *data,
                           const size_t *len, const int *route, uint8_t *const *dst,
                           const size_t *pitch, void *const *after, int *ok, char *err,
                           size_t errlen);

/* Encodes a w x h interleaved RGB device image (rows `pitch` bytes apart,
 * produced on cudaStream_t src_stream, NULL: the default stream; the encode
 * waits for the work queued there when it is called) as a JPEG of
 * `quality` (1..100) with 4:2:0 chroma subsampling and standard Huffman
 * tables, as libjpeg's jpeg_set_defaults does for the CPU writer. The bytes go
 * to *buf (grown with realloc; *cap its size), *len their count. Errors:
 * IC_ERR_UNSUPPORTED (no nvJPEG), IC_ERR_DEVICE, IC_ERR_NOMEM. */
ic_status ic_nvjpeg_encode(ic_nvjpeg *nj, const uint8_t *src, size_t pitch, int w, int h,
                           void *src_stream, int quality, uint8_t **buf, size_t *cap, size_t *len,
                           char *err, size_t errlen);

/* ---- device memory (CUDA runtime only) -------------------------------------- */

/* cudaMallocPitch of `height` rows of `row_bytes` on `device`. */
ic_status ic_cuda_pitched_alloc(int device, size_t row_bytes, int height, uint8_t **p,
                                size_t *pitch, char *err, size_t errlen);

/* A non-blocking CUDA stream on `device` (*stream is a cudaStream_t). */
ic_status ic_cuda_stream_create(int device, void **stream, char *err, size_t errlen);

/* Waits for and destroys a stream (NULL-safe, errors ignored). */
void ic_cuda_stream_destroy(int device, void *stream);

/* Makes cudaStream_t waiter wait for the work queued on cudaStream_t `after`
 * so far (an event recorded there); nothing when either is NULL or they are
 * the same stream. */
ic_status ic_cuda_stream_order(int device, void *waiter, void *after, char *err, size_t errlen);

/* cudaFree on `device` (NULL-safe, errors ignored). */
void ic_cuda_pitched_free(int device, void *p);

/* 2D copy of `height` rows of `row_bytes` between host and device
 * (to_device: 1 host->device, 0 device->host) on cudaStream_t stream, waited
 * for before returning. */
ic_status ic_cuda_copy_rows(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
                            size_t row_bytes, int height, int to_device, void *stream, char *err,
                            size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_NVJPEG_H */
