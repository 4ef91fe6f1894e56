/*
 * imgconv_gpu_codec.h - imgconv's GPU codec: JPEG files decoded into and
 * encoded from device memory with nvJPEG, so that only compressed bytes cross
 * the bus; other formats and cases go through the CPU codecs and are copied.
 * A companion of imgconv.h (which it includes), as zstd keeps zdict.h: the
 * core header covers what an image user needs, this one the GPU pipeline of
 * a batch (the CLI's --gpu-jpeg). Same conventions as imgconv.h: calls return
 * an ic_status, ic_last_error() says why one failed.
 */
#ifndef IMGCONV_GPU_CODEC_H
#define IMGCONV_GPU_CODEC_H

#include "imgconv.h"

#ifdef __cplusplus
extern "C" {
#endif

/* A GPU codec bound to the device of a CUDA context. It holds `slots` image
 * slots: slot i keeps the device image ic_gpu_codec_decode made for input i of a
 * batch, one output device image (ic_gpu_codec_output) and the encoded bytes
 * of ic_gpu_codec_encode, each reused by the next call on that slot. The slots are
 * the bound on device memory: at most 2 images per slot.
 *
 * Decoding: JPEG files with 3 components in 8-bit YCbCr are decoded by nvJPEG
 * - the GPU's hardware JPEG decoder (nvjpegDecodeBatched on the hardware
 * backend) where the GPU has one and the file is baseline, nvJPEG's default
 * hybrid decoder otherwise (progressive files, GPUs without the engine) - to
 * interleaved RGB in device memory. Everything else falls back to the CPU
 * decoder (libjpeg-turbo, libpng, ...; ic_image_decode) and is uploaded: grey
 * and CMYK/YCCK JPEGs, RGB-coded JPEGs, 12-bit and lossless JPEGs, files cut
 * before their end-of-image marker, files nvJPEG refuses, other formats, and
 * every file when the options ask for a channel count other than 3 or for
 * IC_SOA. A corrupt or cut file therefore fails with the CPU decoder's
 * message, as with ic_image_load. Decoded pixels differ from libjpeg-turbo's
 * by the IDCT and chroma upsampling rounding of nvJPEG (docs/gpu-jpeg.md,
 * "Pixels", gives the measured difference).
 *
 * Encoding (ic_gpu_codec_encode): a 3-channel interleaved device image saved as JPEG
 * is encoded by nvJPEG on the device (nvjpegEncodeImage) with the CPU
 * writer's choices: 4:2:0 chroma subsampling, the same quality scale
 * (ic_save_options.quality, default 92), standard Huffman tables, baseline,
 * and opts->metadata inserted as the CPU writer stores it (APP1 EXIF, APP2
 * ICC chunks, right after SOI and JFIF's APP0). Other cases (grey, alpha,
 * PNG/PNM output) are copied to the host and encoded by the CPU writer.
 *
 * Without nvJPEG in the build, or when nvJPEG will not open on the device,
 * the codec still works: every file takes the CPU path (ic_gpu_codec_engine()
 * says "cpu", followed by nvJPEG's reason in the second case).
 *
 * Streams: the device images of a slot carry that slot's own CUDA stream
 * (stream field), on which no codec work is queued: the filter may queue its
 * work there (images of different slots are filtered independently), and
 * ic_gpu_codec_encode waits for what is queued there when it is called.
 *
 * Threads: calls on different slots may run at the same time on different
 * threads (a batch pipeline: one thread decoding, one filtering, several
 * encoding; up to 16 nvJPEG encodes run at once, more wait). ic_gpu_codec_decode
 * calls run one at a time unless ic_gpu_codec_open_decoders allowed more; a
 * call that finds every decoder busy waits for one. The context given at
 * creation is not used after it. */
typedef struct ic_gpu_codec ic_gpu_codec;

/* One encoded file in memory (not owned). */
typedef struct ic_bytes {
    const uint8_t *data;
    size_t size;
} ic_bytes;

/* What ic_gpu_codec_decode did with one input. */
typedef struct ic_decode_result {
    ic_status status;   /* IC_OK, or the error ic_image_decode gives for the file */
    char error[256];    /* one line when status != IC_OK */
    const char *engine; /* "nvjpeg-hardware", "nvjpeg-hybrid" or "cpu" */
    /* When ic_gpu_codec_decode's opts->metadata is non-NULL: this file's ICC
     * profile and EXIF, as ic_image_load gives them, whichever engine decoded
     * it (opts->metadata itself is not written); free with ic_metadata_free. */
    ic_metadata metadata;
} ic_decode_result;

/* Creates a GPU codec with `slots` slots (1..1024) on the device of ctx, whose
 * backend must be a CUDA one. nvJPEG opens on a thread of the codec's own
 * (about 0.3 s): the call returns before, slots can be filled meanwhile, and
 * the first call that needs nvJPEG waits for it. Errors: IC_ERR_UNSUPPORTED (a CPU backend or a
 * context split over several devices), IC_ERR_INVALID_ARG, IC_ERR_DEVICE,
 * IC_ERR_NOMEM; ic_last_error() says why. */
ic_status ic_gpu_codec_create(ic_gpu_codec **codec, const ic_context *ctx, int slots);

/* Frees the codec and every device image and buffer its slots hold (NULL-safe). */
void ic_gpu_codec_free(ic_gpu_codec *codec);

/* The decoder baseline JPEGs get: "nvjpeg-hardware", "nvjpeg-hybrid", or
 * "cpu" when nvJPEG is not available ("cpu (nvJPEG: REASON)" when it is built
 * in but would not open). The string lives as long as the codec. The
 * hardware decoder is opened at the first ic_gpu_codec_decode of a JPEG (its
 * set-up is costly, and a codec used only to encode never needs it), unless
 * ic_gpu_codec_open_decoder made it ahead; asking for the engine before that
 * opens it (or waits for the one being made). */
const char *ic_gpu_codec_engine(const ic_gpu_codec *codec);

/* Starts making the hardware decoder now, on a thread of the codec's own,
 * beside nvJPEG's open (which makes the encoder), rather than at the first
 * ic_gpu_codec_decode or ic_gpu_codec_engine: for a caller that will decode
 * many files, so that its first decode finds the decoder (0.3-0.7 s to make)
 * ready sooner. Returns at once; encodes never wait for it, the first decode
 * or ic_gpu_codec_engine does. Call it right after ic_gpu_codec_create; a
 * second call, or a call without nvJPEG, does nothing (NULL-safe). */
void ic_gpu_codec_open_decoder(ic_gpu_codec *codec);

/* Lets up to n (1..4) ic_gpu_codec_decode calls decode at once, from
 * different threads on different slots: for a caller that keeps the
 * hardware JPEG decoder busy from several threads, since one call's batch
 * leaves the engines idle while its files are read and checked. Each further
 * decoder (a hardware decoder of its own, about 0.6 s) is made on a thread of the
 * codec's own once the first decoder exists, and used as soon as it is
 * made; until then the calls take turns. On a GPU without the hardware
 * decoder, or without nvJPEG, they always take turns. Returns at once; a
 * second call does nothing (NULL-safe). */
void ic_gpu_codec_open_decoders(ic_gpu_codec *codec, int n);

/* The encoder of 3-channel JPEG outputs: "nvjpeg" when ic_gpu_codec_encode encodes
 * them on the device, "cpu" when it copies them to the CPU writer. Waits for
 * nvJPEG's open (not for its decoders, which are made at their first use). */
const char *ic_gpu_codec_encoder(const ic_gpu_codec *codec);

/* Decodes n files (1 <= n <= slots) held in memory into device images:
 * out[i] (a device image owned by slot slots[i] - slot i when slots is NULL;
 * n distinct slots - valid until the next decode into that slot; do not free
 * it) with res[i] saying how it went. The JPEGs the
 * hardware decoder takes are decoded together in one batch. The images are
 * complete when the call returns (out[i].stream is the codec's stream of
 * slot slots[i]). A decode into a slot first waits, on the host, for the work
 * queued on that slot's stream (a filter or copy of the previous image still
 * running), and work queued there after the call runs after the decode.
 * opts as ic_image_load (NULL: defaults). Returns IC_OK when every
 * file was handled (each res[i].status says whether that file decoded), or an
 * error that concerns the whole call (IC_ERR_DEVICE, IC_ERR_INVALID_ARG);
 * a file that fails does not stop the others. */
ic_status ic_gpu_codec_decode(ic_gpu_codec *codec, int n, const ic_bytes *in, const int *slots,
                              const ic_load_options *opts, ic_image *out, ic_decode_result *res);

/* Gives a device image shaped like `like` (size, channels, layout) owned by
 * slot `slot`, for ic_convolve to write into; valid until the next call for
 * that slot. Errors: IC_ERR_INVALID_ARG, IC_ERR_DEVICE, IC_ERR_NOMEM. */
ic_status ic_gpu_codec_output(ic_gpu_codec *codec, int slot, const ic_image *like, ic_image *out);

/* Encodes a device image (any device image on the codec's device: a slot's,
 * or the caller's) as the file format of `name`'s extension, as ic_image_save
 * would write it. *out points at bytes owned by slot `slot`, valid until the
 * next encode on that slot; write them with ic_bytes_save. Errors as
 * ic_image_save, plus IC_ERR_DEVICE. */
ic_status ic_gpu_codec_encode(ic_gpu_codec *codec, int slot, const ic_image *img, const char *name,
                              const ic_save_options *opts, ic_bytes *out);

/* ---- deprecated names (imgconv.h, "Deprecated names"; docs/naming.md) ---- */
#if !defined(IC_NO_DEPRECATED)
static inline IC_DEPRECATED("use ic_gpu_codec_decode") ic_status
    ic_gpu_decode(ic_gpu_codec *codec, int n, const ic_bytes *in, const int *slots,
                  const ic_load_options *opts, ic_image *out, ic_decode_result *res)
{
    return ic_gpu_codec_decode(codec, n, in, slots, opts, out, res);
}

static inline IC_DEPRECATED("use ic_gpu_codec_encode") ic_status
    ic_gpu_encode(ic_gpu_codec *codec, int slot, const ic_image *img, const char *name,
                  const ic_save_options *opts, ic_bytes *out)
{
    return ic_gpu_codec_encode(codec, slot, img, name, opts, out);
}
#endif

#ifdef __cplusplus
}
#endif

#endif /* IMGCONV_GPU_CODEC_H */
