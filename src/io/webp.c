/*
 * webp.c - WebP files through libwebp, for untrusted input.
 *
 * Reading takes the whole file into memory (WebP is decoded from one buffer;
 * a file over the compressed-size cap is refused before it is read), asks
 * libwebp for the header's size and alpha flag, checks width*height against
 * max_pixels, and only then allocates the image and decodes straight into
 * it: RGB, or RGBA when the file has alpha. Animated WebP is refused. Writing
 * stores RGB or RGBA (grey is expanded, since WebP has no grey mode), lossy
 * at the given quality or lossless. The ICCP and EXIF chunks are read and
 * written through libwebpmux (an EXIF chunk that starts "Exif\0\0", as some
 * writers make it, loses that prefix on reading). Built only with
 * IC_HAVE_WEBP; otherwise io.c reports the format as not built in.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_WEBP

#include <sys/stat.h>
#include <webp/decode.h>
#include <webp/encode.h>
#include <webp/mux.h>

/* The largest side a WebP bitstream can hold. */
#define WEBP_MAX_SIDE 16383

/* Compressed bytes accepted for a given pixel limit: lossless WebP of noise
 * stays under ~4.3 bytes a pixel; anything far larger is not a sane file. */
static uint64_t file_cap(uint64_t max_pixels)
{
    return max_pixels * 8u + ((uint64_t)1 << 20);
}

/* Reads all of f into *buf (malloc'd). */
static ic_status slurp(FILE *f, uint64_t cap, uint8_t **buf, size_t *len, char *err, size_t errlen)
{
    *buf = NULL;
    *len = 0;
    struct stat sb;
    size_t size = 1u << 16;
    if (fstat(fileno(f), &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        if ((uint64_t)sb.st_size > cap) {
            return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                           "WebP file of %lld bytes is over the %llu-byte limit",
                           (long long)sb.st_size, (unsigned long long)cap);
        }
        size = (size_t)sb.st_size + 1; /* +1: see EOF without growing */
    }
    uint8_t *p = malloc(size);
    if (!p) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    size_t n = 0;
    for (;;) {
        n += fread(p + n, 1, size - n, f);
        if (n < size)
            break;
        if ((uint64_t)size >= cap) {
            free(p);
            return ic_errf(err, errlen, IC_ERR_TOO_LARGE, "WebP data over the %llu-byte limit",
                           (unsigned long long)cap);
        }
        size_t bigger = size * 2 > cap ? (size_t)cap : size * 2;
        uint8_t *q = realloc(p, bigger);
        if (!q) {
            free(p);
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        p = q;
        size = bigger;
    }
    if (ferror(f)) {
        free(p);
        return ic_errf(err, errlen, IC_ERR_IO, "read error: %s", strerror(errno ? errno : EIO));
    }
    *buf = p;
    *len = n;
    return IC_OK;
}

/* One line for a libwebp decoding status. */
static ic_status decode_failure(VP8StatusCode s, char *err, size_t errlen)
{
    switch (s) {
    case VP8_STATUS_NOT_ENOUGH_DATA:
        return ic_errf(err, errlen, IC_ERR_FORMAT, "truncated WebP data");
    case VP8_STATUS_OUT_OF_MEMORY:
        return ic_errf(err, errlen, IC_ERR_NOMEM, "WebP: out of memory");
    case VP8_STATUS_UNSUPPORTED_FEATURE:
        return ic_errf(err, errlen, IC_ERR_FORMAT, "WebP: unsupported feature");
    default:
        return ic_errf(err, errlen, IC_ERR_FORMAT, "WebP: corrupt data (libwebp status %d)",
                       (int)s);
    }
}

/* The ICCP and EXIF chunks of a whole file. */
static ic_status webp_get_metadata(const uint8_t *data, size_t len, ic_metadata *meta)
{
    const WebPData whole = {data, len};
    WebPMux *mux = WebPMuxCreate(&whole, 0);
    if (!mux)
        return IC_OK; /* the image decoded: metadata it cannot parse is dropped */
    WebPData c = {NULL, 0};
    ic_status st = IC_OK;
    if (WebPMuxGetChunk(mux, "ICCP", &c) == WEBP_MUX_OK)
        st = ic_io_meta_copy(&meta->icc, &meta->icc_size, c.bytes, c.size);
    if (st == IC_OK && WebPMuxGetChunk(mux, "EXIF", &c) == WEBP_MUX_OK) {
        if (c.size > 6 && memcmp(c.bytes, "Exif\0\0", 6) == 0) {
            c.bytes += 6;
            c.size -= 6;
        }
        st = ic_io_meta_copy(&meta->exif, &meta->exif_size, c.bytes, c.size);
    }
    WebPMuxDelete(mux);
    return st;
}

/* Writes bitstream with meta's chunks added (VP8X container), or as it is. */
static ic_status webp_put(FILE *f, const uint8_t *bits, size_t n, const ic_metadata *meta,
                          char *err, size_t errlen)
{
    WebPData out = {bits, n};
    WebPData assembled = {NULL, 0};
    WebPMux *mux = NULL;
    if (meta) {
        const WebPData image = {bits, n};
        const WebPData icc = {meta->icc, meta->icc_size}, exif = {meta->exif, meta->exif_size};
        mux = WebPMuxCreate(&image, 0);
        int ok = mux != NULL;
        if (ok && meta->icc)
            ok = WebPMuxSetChunk(mux, "ICCP", &icc, 0) == WEBP_MUX_OK;
        if (ok && meta->exif)
            ok = WebPMuxSetChunk(mux, "EXIF", &exif, 0) == WEBP_MUX_OK;
        if (ok)
            ok = WebPMuxAssemble(mux, &assembled) == WEBP_MUX_OK;
        if (!ok) {
            WebPMuxDelete(mux);
            WebPDataClear(&assembled);
            return ic_errf(err, errlen, IC_ERR_NOMEM,
                           "WebP: cannot add the ICC profile or EXIF chunk");
        }
        out = assembled;
    }
    ic_status st = IC_OK;
    if (fwrite(out.bytes, 1, out.size, f) != out.size) {
        ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
        st = IC_ERR_IO;
    }
    WebPDataClear(&assembled);
    WebPMuxDelete(mux);
    return st;
}

ic_status ic_webp_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    uint8_t *data = NULL;
    size_t len = 0;
    ic_status st = slurp(f, file_cap(lim->max_pixels), &data, &len, err, errlen);
    if (st != IC_OK)
        return st;
    WebPDecoderConfig cfg;
    if (!WebPInitDecoderConfig(&cfg)) {
        free(data);
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "WebP: library version mismatch");
    }
    VP8StatusCode vs = WebPGetFeatures(data, len, &cfg.input);
    if (vs != VP8_STATUS_OK) {
        free(data);
        return decode_failure(vs, err, errlen);
    }
    if (cfg.input.has_animation) {
        free(data);
        return ic_errf(err, errlen, IC_ERR_FORMAT, "animated WebP is not supported");
    }
    const int channels = cfg.input.has_alpha ? 4 : 3;
    st = ic_io_check_dims((uint64_t)(cfg.input.width > 0 ? cfg.input.width : 0),
                          (uint64_t)(cfg.input.height > 0 ? cfg.input.height : 0), channels, lim,
                          err, errlen);
    if (st == IC_OK) {
        st = ic_image_create(img, cfg.input.width, cfg.input.height, channels, IC_AOS);
        if (st != IC_OK)
            ic_errf(err, errlen, st, "cannot allocate a %dx%d image: %s", cfg.input.width,
                    cfg.input.height, ic_status_str(st));
    }
    if (st == IC_OK) {
        cfg.output.colorspace = img->channels == 4 ? MODE_RGBA : MODE_RGB;
        cfg.output.is_external_memory = 1;
        cfg.output.u.RGBA.rgba = img->data;
        cfg.output.u.RGBA.stride = (int)img->pitch;
        cfg.output.u.RGBA.size = img->pitch * (size_t)img->height;
        vs = WebPDecode(data, len, &cfg);
        if (vs != VP8_STATUS_OK)
            st = decode_failure(vs, err, errlen);
        WebPFreeDecBuffer(&cfg.output);
    }
    if (st == IC_OK && meta && webp_get_metadata(data, len, meta) != IC_OK) {
        ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        st = IC_ERR_NOMEM;
    }
    free(data);
    if (st != IC_OK)
        ic_image_free(img);
    return st;
}

static const char *encode_error(WebPEncodingError e)
{
    switch (e) {
    case VP8_ENC_ERROR_OUT_OF_MEMORY:
    case VP8_ENC_ERROR_BITSTREAM_OUT_OF_MEMORY:
        return "out of memory";
    case VP8_ENC_ERROR_BAD_DIMENSION:
        return "bad dimensions";
    case VP8_ENC_ERROR_PARTITION0_OVERFLOW:
    case VP8_ENC_ERROR_PARTITION_OVERFLOW:
        return "partition overflow (image too complex for this quality)";
    case VP8_ENC_ERROR_FILE_TOO_BIG:
        return "file too big";
    default:
        return "encoder failure";
    }
}

ic_status ic_webp_write(FILE *f, const ic_image *img, int out_ch, int quality, int lossless,
                        const ic_metadata *meta, char *err, size_t errlen)
{
    if (out_ch != 3 && out_ch != 4) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "WebP stores 3 or 4 channels, not %d", out_ch);
    }
    if (img->width > WEBP_MAX_SIDE || img->height > WEBP_MAX_SIDE) {
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "WebP holds at most %d pixels per side, not %dx%d", WEBP_MAX_SIDE,
                       img->width, img->height);
    }
    WebPConfig cfg;
    WebPPicture pic;
    if (!WebPConfigInit(&cfg) || !WebPPictureInit(&pic)) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "WebP: library version mismatch");
    }
    cfg.lossless = lossless ? 1 : 0;
    cfg.quality = (float)quality;
    if (lossless) {
        /* quality is the effort here; keep the exact colour under alpha 0 */
        cfg.quality = 75.0f;
        cfg.exact = 1;
    }
    pic.use_argb = cfg.lossless;
    pic.width = img->width;
    pic.height = img->height;

    /* The import wants rows of out_ch samples: convert only when the image differs. */
    const uint8_t *rows = img->data;
    size_t stride = img->pitch;
    uint8_t *conv = NULL;
    if (out_ch != img->channels) {
        stride = (size_t)img->width * (size_t)out_ch;
        conv = malloc(stride * (size_t)img->height);
        if (!conv) {
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        for (int y = 0; y < img->height; y++)
            ic_io_convert_row(conv + (size_t)y * stride, out_ch, img->data + (size_t)y * img->pitch,
                              img->channels, img->width);
        rows = conv;
    }
    ic_status st = IC_OK;
    const int imported = out_ch == 4 ? WebPPictureImportRGBA(&pic, rows, (int)stride)
                                     : WebPPictureImportRGB(&pic, rows, (int)stride);
    free(conv);
    WebPMemoryWriter w;
    WebPMemoryWriterInit(&w);
    if (!imported) {
        ic_errf(err, errlen, IC_ERR_NOMEM, "WebP: out of memory");
        st = IC_ERR_NOMEM;
    } else {
        pic.writer = WebPMemoryWrite;
        pic.custom_ptr = &w;
        if (!WebPValidateConfig(&cfg)) {
            ic_errf(err, errlen, IC_ERR_INVALID_ARG, "WebP: invalid encoder settings");
            st = IC_ERR_INVALID_ARG;
        } else if (!WebPEncode(&cfg, &pic)) {
            ic_errf(err, errlen, IC_ERR_INTERNAL, "WebP: %s", encode_error(pic.error_code));
            st = pic.error_code == VP8_ENC_ERROR_OUT_OF_MEMORY ? IC_ERR_NOMEM : IC_ERR_INTERNAL;
        } else {
            st = webp_put(f, w.mem, w.size, meta, err, errlen);
        }
    }
    WebPMemoryWriterClear(&w);
    WebPPictureFree(&pic);
    return st;
}

#endif /* IC_HAVE_WEBP */
