/*
 * tiff.c - TIFF files through libtiff, for untrusted input.
 *
 * Reading takes the first image (directory) of the file. 8- and 16-bit
 * (unsigned) contiguous strips of grey, grey+alpha, RGB and RGBA are read row
 * by row as stored, 16-bit ones into IC_U16 images;
 * everything else libtiff can render (palettes, other bit depths, tiles,
 * planar data, YCbCr/old-JPEG, CMYK, other orientations) goes through its
 * RGBA interface and comes back as 8-bit grey/RGB with alpha when the file has
 * one. Associated (premultiplied) alpha is divided back out, since imgconv
 * images carry straight alpha. width*height is checked against max_pixels
 * after the directory is read, before any pixel memory is allocated; libtiff's
 * own allocations are capped per call, and its errors and warnings go to a
 * per-call handler (never stderr), the first error becoming the one-line
 * message. Writing stores 1..4 channels at 8 or 16 bits (the image's type) in
 * deflate-compressed strips
 * with the horizontal predictor (LZW or none when the codec is missing),
 * alpha marked unassociated. The ICC profile (tag 34675) is read and written;
 * EXIF, a sub-directory in TIFF rather than a block, is not carried. Built
 * only with IC_HAVE_TIFF; otherwise io.c reports the format as not built in.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_TIFF

#include <stdarg.h>
#include <sys/types.h>
#include <tiffio.h>

/* The stream and what libtiff reported, for one open file. */
typedef struct tiff_io {
    FILE *f;
    int sys_errno;  /* a read/write error of the stream */
    int short_read; /* a read stopped at the end of the data */
    off_t end;      /* writing: the end of the data written so far */
    char msg[200];  /* libtiff's first error */
} tiff_io;

static tmsize_t read_proc(thandle_t h, void *buf, tmsize_t n)
{
    tiff_io *io = (tiff_io *)h;
    size_t got = fread(buf, 1, (size_t)n, io->f);
    if (got < (size_t)n && ferror(io->f))
        io->sys_errno = errno ? errno : EIO;
    else if (got < (size_t)n)
        io->short_read = 1;
    return (tmsize_t)got;
}

static tmsize_t write_proc(thandle_t h, void *buf, tmsize_t n)
{
    tiff_io *io = (tiff_io *)h;
    size_t put = fwrite(buf, 1, (size_t)n, io->f);
    if (put < (size_t)n)
        io->sys_errno = errno ? errno : EIO;
    const off_t pos = ftello(io->f);
    if (pos > io->end)
        io->end = pos;
    return (tmsize_t)put;
}

static toff_t seek_proc(thandle_t h, toff_t off, int whence)
{
    tiff_io *io = (tiff_io *)h;
    if (off > (toff_t)INT64_MAX || fseeko(io->f, (off_t)off, whence) != 0)
        return (toff_t)-1;
    return (toff_t)ftello(io->f);
}

static int close_proc(thandle_t h)
{
    (void)h; /* io.c owns the stream */
    return 0;
}

/* By seeking, so that it works on fmemopen'd buffers (ic_image_decode) too. */
static toff_t size_proc(thandle_t h)
{
    tiff_io *io = (tiff_io *)h;
    const off_t here = ftello(io->f);
    if (here < 0 || fseeko(io->f, 0, SEEK_END) != 0)
        return 0;
    const off_t end = ftello(io->f);
    if (fseeko(io->f, here, SEEK_SET) != 0 || end < 0)
        return 0;
    return (toff_t)end;
}

static int map_proc(thandle_t h, void **base, toff_t *size)
{
    (void)h;
    (void)base;
    (void)size;
    return 0; /* no memory mapping: every read goes through read_proc */
}

static void unmap_proc(thandle_t h, void *base, toff_t size)
{
    (void)h;
    (void)base;
    (void)size;
}

static int on_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t;
    (void)module;
    tiff_io *io = user;
    if (io && !io->msg[0]) {
        vsnprintf(io->msg, sizeof io->msg, fmt, ap);
        /* Some messages start with the handle's name ("tiff: ..."): drop it. */
        if (!strncmp(io->msg, "tiff: ", 6))
            memmove(io->msg, io->msg + 6, strlen(io->msg + 6) + 1);
    }
    return 1; /* handled: libtiff's global handler (stderr) is not called */
}

static int on_warning(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t;
    (void)user;
    (void)module;
    (void)fmt;
    (void)ap;
    return 1; /* silenced: the library never prints */
}

/* Opens f through libtiff with the per-call handlers; NULL on failure. */
static TIFF *tiff_open(tiff_io *io, const char *mode, uint64_t max_pixels)
{
    TIFFOpenOptions *opts = TIFFOpenOptionsAlloc();
    if (!opts)
        return NULL;
    TIFFOpenOptionsSetErrorHandlerExtR(opts, on_error, io);
    TIFFOpenOptionsSetWarningHandlerExtR(opts, on_warning, io);
    /* One allocation inside libtiff (a strip, a tag array) never needs more
     * than the largest image allowed at 16 bytes a pixel. */
    const uint64_t cap = max_pixels * 16u + ((uint64_t)16 << 20);
    TIFFOpenOptionsSetMaxSingleMemAlloc(opts,
                                        (tmsize_t)(cap > (uint64_t)INT64_MAX ? INT64_MAX : cap));
    TIFF *t = TIFFClientOpenExt("tiff", mode, (thandle_t)io, read_proc, write_proc, seek_proc,
                                close_proc, size_proc, map_proc, unmap_proc, opts);
    TIFFOpenOptionsFree(opts);
    return t;
}

/* The status and message for a libtiff failure while `doing` something. */
static ic_status tiff_failure(const tiff_io *io, const char *doing, char *err, size_t errlen)
{
    if (io->sys_errno) {
        return ic_errf(err, errlen, IC_ERR_IO, "%s error: %s", doing, strerror(io->sys_errno));
    }
    /* A directory or strip past the end of the data: libtiff says "Seek error"
     * or fails a read; the usual cause is a cut file. */
    if (io->short_read || strstr(io->msg, "Seek error") || strstr(io->msg, "Can not read TIFF"))
        return ic_errf(err, errlen, IC_ERR_FORMAT, "truncated TIFF data (%s)",
                       io->msg[0] ? io->msg : "short read");
    if (io->msg[0])
        return ic_errf(err, errlen, IC_ERR_FORMAT, "TIFF: %s", io->msg);
    return ic_errf(err, errlen, IC_ERR_FORMAT, "TIFF: corrupt or truncated data");
}

/* Straight alpha from premultiplied: c = round(c * max / a), 0 where a = 0. */
#define UNPREMULTIPLY_ROW(NAME, T, MAX)                                                            \
    static void NAME(T *row, int channels, int width)                                              \
    {                                                                                              \
        for (int x = 0; x < width; x++) {                                                          \
            T *p = row + (size_t)x * (size_t)channels;                                             \
            const uint64_t a = p[channels - 1];                                                    \
            for (int c = 0; c < channels - 1; c++) {                                               \
                if (a == 0)                                                                        \
                    p[c] = 0;                                                                      \
                else {                                                                             \
                    const uint64_t v = (p[c] * (uint64_t)MAX + a / 2) / a;                         \
                    p[c] = (T)(v > MAX ? MAX : v);                                                 \
                }                                                                                  \
            }                                                                                      \
        }                                                                                          \
    }
UNPREMULTIPLY_ROW(unpremultiply_row8, uint8_t, 255u)
UNPREMULTIPLY_ROW(unpremultiply_row16, uint16_t, 65535u)

/* 8- or 16-bit contiguous strips of grey/RGB (+ one alpha), top-left: read as
 * stored (libtiff hands 16-bit samples over in host byte order). */
static int stored_as_is(TIFF *t, uint16_t spp, uint16_t bps, uint16_t photo)
{
    uint16_t planar = PLANARCONFIG_CONTIG, orient = ORIENTATION_TOPLEFT;
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    TIFFGetFieldDefaulted(t, TIFFTAG_ORIENTATION, &orient);
    uint16_t format = SAMPLEFORMAT_UINT;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
    if ((bps != 8 && bps != 16) || format != SAMPLEFORMAT_UINT || planar != PLANARCONFIG_CONTIG ||
        orient != ORIENTATION_TOPLEFT || TIFFIsTiled(t))
        return 0;
    return (photo == PHOTOMETRIC_MINISBLACK && (spp == 1 || spp == 2)) ||
           (photo == PHOTOMETRIC_RGB && (spp == 3 || spp == 4));
}

/* Whether the extra sample of a 2- or 4-sample image is premultiplied alpha. */
static int associated_alpha(TIFF *t)
{
    uint16_t n = 0;
    uint16_t *kinds = NULL;
    return TIFFGetField(t, TIFFTAG_EXTRASAMPLES, &n, &kinds) && n >= 1 && kinds &&
           kinds[0] == EXTRASAMPLE_ASSOCALPHA;
}

static ic_status read_rows(TIFF *t, tiff_io *io, ic_image *img, char *err, size_t errlen)
{
    if (TIFFScanlineSize64(t) !=
        (uint64_t)img->width * (uint64_t)img->channels * (uint64_t)ic_sample_size(img->type)) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "TIFF: unexpected row size");
    }
    const int assoc = (img->channels == 2 || img->channels == 4) && associated_alpha(t);
    for (int y = 0; y < img->height; y++) {
        uint8_t *row = img->data + (size_t)y * img->pitch;
        if (TIFFReadScanline(t, row, (uint32_t)y, 0) < 0)
            return tiff_failure(io, "read", err, errlen);
        if (assoc && img->type == IC_U16)
            unpremultiply_row16((uint16_t *)(void *)row, img->channels, img->width);
        else if (assoc)
            unpremultiply_row8(row, img->channels, img->width);
    }
    return IC_OK;
}

/* Everything else, through libtiff's RGBA rendering (premultiplied alpha). */
static ic_status read_rgba(TIFF *t, tiff_io *io, ic_image *img, uint32_t w, uint32_t h,
                           const ic_io_limits *lim, char *err, size_t errlen)
{
    char emsg[1024] = "";
    if (!TIFFRGBAImageOK(t, emsg)) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "TIFF: %s",
                       emsg[0] ? emsg : "unsupported image layout");
    }
    TIFFRGBAImage ri;
    if (!TIFFRGBAImageBegin(&ri, t, 0, emsg)) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "TIFF: %s",
                       emsg[0] ? emsg : "cannot read this image");
    }
    const int grey =
        ri.photometric == PHOTOMETRIC_MINISBLACK || ri.photometric == PHOTOMETRIC_MINISWHITE;
    const int alpha = ri.alpha != 0;
    const int channels = (grey ? 1 : 3) + alpha;
    /* The budget covers the image and libtiff's 4-byte RGBA raster beside it. */
    ic_status st = ic_io_check_dims(w, h, channels + 4, lim, err, errlen);
    if (st != IC_OK) {
        TIFFRGBAImageEnd(&ri);
        return st;
    }
    st = ic_image_create(img, (int)w, (int)h, channels, IC_AOS);
    uint32_t *raster = st == IC_OK ? malloc((size_t)w * (size_t)h * sizeof *raster) : NULL;
    if (st != IC_OK || !raster) {
        TIFFRGBAImageEnd(&ri);
        ic_errf(err, errlen, IC_ERR_NOMEM, "cannot allocate a %ux%u image", (unsigned)w,
                (unsigned)h);
        return st != IC_OK ? st : IC_ERR_NOMEM;
    }
    ri.req_orientation = ORIENTATION_TOPLEFT;
    const int ok = TIFFRGBAImageGet(&ri, raster, w, h);
    TIFFRGBAImageEnd(&ri);
    if (!ok) {
        free(raster);
        return tiff_failure(io, "read", err, errlen);
    }
    for (uint32_t y = 0; y < h; y++) {
        uint8_t *d = img->data + (size_t)y * img->pitch;
        const uint32_t *s = raster + (size_t)y * w;
        for (uint32_t x = 0; x < w; x++, d += channels) {
            d[0] = (uint8_t)TIFFGetR(s[x]);
            if (!grey) {
                d[1] = (uint8_t)TIFFGetG(s[x]);
                d[2] = (uint8_t)TIFFGetB(s[x]);
            }
            if (alpha)
                d[channels - 1] = (uint8_t)TIFFGetA(s[x]);
        }
        if (alpha)
            unpremultiply_row8(img->data + (size_t)y * img->pitch, channels, (int)w);
    }
    free(raster);
    return IC_OK;
}

ic_status ic_tiff_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen)
{
    memset(img, 0, sizeof *img);
    tiff_io io;
    memset(&io, 0, sizeof io);
    io.f = f;
    TIFF *t = tiff_open(&io, "rm", lim->max_pixels);
    if (!t)
        return tiff_failure(&io, "read", err, errlen);
    uint32_t w = 0, h = 0;
    uint16_t spp = 1, bps = 1, photo = 0;
    TIFFGetField(t, TIFFTAG_IMAGEWIDTH, &w);
    TIFFGetField(t, TIFFTAG_IMAGELENGTH, &h);
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLESPERPIXEL, &spp);
    TIFFGetFieldDefaulted(t, TIFFTAG_BITSPERSAMPLE, &bps);
    const int has_photo = TIFFGetField(t, TIFFTAG_PHOTOMETRIC, &photo);
    const int as_is = has_photo && stored_as_is(t, spp, bps, photo);
    const ic_sample_type type = bps == 16 ? IC_U16 : IC_U8;
    uint16_t format = SAMPLEFORMAT_UINT;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
    /* Images hold integer samples: a float TIFF is refused in so many words
     * (libtiff's RGBA reader would only say it cannot handle its bit depth). */
    ic_status st = format == SAMPLEFORMAT_IEEEFP
                       ? ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                                 "TIFF: %u-bit float samples are not supported (8- and 16-bit "
                                 "integer samples only)",
                                 (unsigned)bps)
                       : ic_io_check_dims_type(w, h, as_is ? spp : 0, type, lim, err, errlen);
    if (st == IC_OK) {
        if (as_is) {
            st = ic_image_create_type(img, (int)w, (int)h, spp, IC_AOS, type);
            if (st != IC_OK)
                ic_errf(err, errlen, st, "cannot allocate a %ux%u image: %s", (unsigned)w,
                        (unsigned)h, ic_status_str(st));
            else
                st = read_rows(t, &io, img, err, errlen);
        } else {
            st = read_rgba(t, &io, img, w, h, lim, err, errlen);
        }
    }
    uint32_t icc_len = 0;
    void *icc = NULL;
    if (st == IC_OK && meta && TIFFGetField(t, TIFFTAG_ICCPROFILE, &icc_len, &icc) && icc)
        st = ic_io_meta_copy(&meta->icc, &meta->icc_size, icc, icc_len);
    TIFFClose(t);
    if (st != IC_OK)
        ic_image_free(img);
    return st;
}

ic_status ic_tiff_write(FILE *f, const ic_image *img, int out_ch, int level,
                        const ic_metadata *meta, char *err, size_t errlen)
{
    if (out_ch < 1 || out_ch > 4) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "TIFF stores 1..4 channels, not %d", out_ch);
    }
    tiff_io io;
    memset(&io, 0, sizeof io);
    io.f = f;
    TIFF *t = tiff_open(&io, "w", (uint64_t)IC_MAX_DIM * IC_MAX_DIM);
    if (!t)
        return tiff_failure(&io, "write", err, errlen);
    uint16_t compression = COMPRESSION_NONE;
    if (TIFFIsCODECConfigured(COMPRESSION_ADOBE_DEFLATE))
        compression = COMPRESSION_ADOBE_DEFLATE;
    else if (TIFFIsCODECConfigured(COMPRESSION_LZW))
        compression = COMPRESSION_LZW;
    const uint16_t alpha_kind[1] = {EXTRASAMPLE_UNASSALPHA};
    int ok = TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)img->width) &&
             TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)img->height) &&
             TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)out_ch) &&
             TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, (uint16_t)(8 * ic_sample_size(img->type))) &&
             TIFFSetField(t, TIFFTAG_SAMPLEFORMAT, (uint16_t)SAMPLEFORMAT_UINT) &&
             TIFFSetField(t, TIFFTAG_PHOTOMETRIC,
                          (uint16_t)(out_ch >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)) &&
             TIFFSetField(t, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG) &&
             TIFFSetField(t, TIFFTAG_ORIENTATION, (uint16_t)ORIENTATION_TOPLEFT) &&
             TIFFSetField(t, TIFFTAG_COMPRESSION, compression);
    if (ok && compression != COMPRESSION_NONE)
        ok = TIFFSetField(t, TIFFTAG_PREDICTOR, (uint16_t)PREDICTOR_HORIZONTAL);
    if (ok && compression == COMPRESSION_ADOBE_DEFLATE)
        ok = TIFFSetField(t, TIFFTAG_ZIPQUALITY, level);
    if (ok && (out_ch == 2 || out_ch == 4))
        ok = TIFFSetField(t, TIFFTAG_EXTRASAMPLES, (uint16_t)1, alpha_kind);
    if (ok && meta && meta->icc)
        ok = TIFFSetField(t, TIFFTAG_ICCPROFILE, (uint32_t)meta->icc_size, meta->icc);
    if (ok)
        ok = TIFFSetField(t, TIFFTAG_ROWSPERSTRIP, TIFFDefaultStripSize(t, 0));
    /* libtiff's predictor rewrites the row it is given: always pass a copy. */
    const size_t row = (size_t)img->width * (size_t)out_ch * ic_sample_size(img->type);
    uint8_t *buf = ok ? malloc(row) : NULL;
    ic_status st = IC_OK;
    if (!ok) {
        st = tiff_failure(&io, "write", err, errlen);
    } else if (!buf) {
        ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        st = IC_ERR_NOMEM;
    }
    for (int y = 0; st == IC_OK && y < img->height; y++) {
        const uint8_t *src = img->data + (size_t)y * img->pitch;
        if (out_ch != img->channels)
            ic_io_convert_row_type(buf, out_ch, src, img->channels, img->width, img->type);
        else
            memcpy(buf, src, row);
        if (TIFFWriteScanline(t, buf, (uint32_t)y, 0) < 0)
            st = tiff_failure(&io, "write", err, errlen);
    }
    if (st == IC_OK && !TIFFWriteDirectory(t))
        st = tiff_failure(&io, "write", err, errlen);
    TIFFClose(t);
    /* libtiff ends by patching the header: leave the stream at the end of the
     * data, where a memory stream (ic_image_encode) takes its size from. */
    if (st == IC_OK && fseeko(f, io.end, SEEK_SET) != 0)
        io.sys_errno = errno ? errno : EIO;
    if (st == IC_OK && io.sys_errno)
        st = tiff_failure(&io, "write", err, errlen);
    free(buf);
    return st;
}

#endif /* IC_HAVE_TIFF */
