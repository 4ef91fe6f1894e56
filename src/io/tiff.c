/*
 * tiff.c - TIFF files through libtiff, for untrusted input.
 *
 * Reading takes the first image (directory) of the file. 8- and 16-bit
 * (unsigned) contiguous strips of grey, grey+alpha, RGB and RGBA are read row
 * by row as stored, 16-bit ones into IC_U16 images, and so are 32-bit IEEE
 * float ones, into IC_F32 images (other float layouts are refused);
 * everything else libtiff can render (palettes, other bit depths, tiles,
 * planar data, YCbCr/old-JPEG, CMYK) goes through its
 * RGBA interface and comes back as 8-bit grey/RGB with alpha when the file has
 * one. Associated (premultiplied) alpha is divided back out, since imgconv
 * images carry straight alpha. width*height is checked against max_pixels
 * after the directory is read, before any pixel memory is allocated; libtiff's
 * own allocations are capped per call, and its errors and warnings go to a
 * per-call handler (never stderr), the first error becoming the one-line
 * message. Writing stores 1..4 channels at 8 or 16 bits or as 32-bit floats
 * (the image's type) in deflate-compressed strips
 * with the horizontal predictor (the floating-point one for floats; LZW or
 * none when the codec is missing),
 * alpha marked unassociated. The ICC profile (tag 34675) is read and written.
 * EXIF, a sub-directory of typed tags in TIFF rather than a block, is
 * gathered from the file into a block on reading and set tag by tag through
 * libtiff on writing (the EXIF section below). The orientation tag is kept,
 * not applied: rows come as stored, and the tag travels in the EXIF block
 * (docs/definitions.md#metadata). Built
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
    int writing;    /* 1: SEEK_END means `end` */
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
    if (whence == SEEK_END && io->writing) {
        /* The end of the data, not of the stream: a memory stream
         * (open_memstream) ends where the last write ended, which is inside
         * the file after libtiff has gone back to write a directory. */
        off += (toff_t)io->end;
        whence = SEEK_SET;
    }
    if (off > (toff_t)INT64_MAX)
        return (toff_t)-1;
    /* A seek flushes what stdio holds: on a full disk the write error shows
     * here, and libtiff would only say "Maximum TIFF file size exceeded". */
    const off_t pos = fseeko(io->f, (off_t)off, whence) == 0 ? ftello(io->f) : -1;
    if (pos < 0 && io->writing && !io->sys_errno)
        io->sys_errno = errno ? errno : EIO;
    return pos < 0 ? (toff_t)-1 : (toff_t)pos;
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

/* Removes the first occurrence of `cut` from s. */
static void cut_out(char *s, const char *cut)
{
    char *at = strstr(s, cut);
    if (at)
        memmove(at, at + strlen(cut), strlen(at + strlen(cut)) + 1);
}

static int on_error(TIFF *t, void *user, const char *module, const char *fmt, va_list ap)
{
    (void)t;
    (void)module;
    tiff_io *io = user;
    char m[sizeof io->msg];
    vsnprintf(m, sizeof m, fmt, ap);
    /* libtiff reports some tags it skips (a custom tag of an unknown type,
     * an 8-byte value in a classic TIFF) as errors, though the read goes on:
     * warnings, not the failure. */
    if (strstr(m, "not read from file") || strstr(m, "unknown tag type") ||
        strstr(m, "won't be written to file"))
        return 1;
    if (io && !io->msg[0]) {
        /* Some messages start with the handle's name ("tiff: ..."): drop it. */
        snprintf(io->msg, sizeof io->msg, "%s", strncmp(m, "tiff: ", 6) ? m : m + 6);
        /* Strips read whole leave libtiff's row at (uint32_t)-1: no row. */
        cut_out(io->msg, " at scanline 4294967295");
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

/* The same for float samples: c / a, 0 where a is not > 0. */
static void unpremultiply_rowf(float *row, int channels, int width)
{
    for (int x = 0; x < width; x++) {
        float *p = row + (size_t)x * (size_t)channels;
        const float a = p[channels - 1];
        for (int c = 0; c < channels - 1; c++)
            p[c] = a > 0.0f ? p[c] / a : 0.0f;
    }
}

/* 8- or 16-bit contiguous strips of grey/RGB (+ one alpha), top-left: read as
 * stored (libtiff hands 16-bit samples over in host byte order). */
static int stored_as_is(TIFF *t, uint16_t spp, uint16_t bps, uint16_t photo)
{
    uint16_t planar = PLANARCONFIG_CONTIG;
    TIFFGetFieldDefaulted(t, TIFFTAG_PLANARCONFIG, &planar);
    uint16_t format = SAMPLEFORMAT_UINT;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
    const int uint_ok = (bps == 8 || bps == 16) && format == SAMPLEFORMAT_UINT;
    const int float_ok = bps == 32 && format == SAMPLEFORMAT_IEEEFP;
    if ((!uint_ok && !float_ok) || planar != PLANARCONFIG_CONTIG || TIFFIsTiled(t))
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
        if (assoc && img->type == IC_F32)
            unpremultiply_rowf((float *)(void *)row, img->channels, img->width);
        else if (assoc && img->type == IC_U16)
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
    /* The rows as stored: the orientation is carried in the EXIF block, not
     * applied (docs/definitions.md#metadata). */
    ri.req_orientation = ri.orientation;
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

/* ---- EXIF ---------------------------------------------------------------------
 *
 * imgconv carries EXIF as one block, a little TIFF structure (ic_metadata).
 * A TIFF file keeps the same tags in its own first directory (IFD0: Make,
 * Model, Orientation, ...) and in the EXIF directory that tag 34665 points
 * to. Reading gathers them from the file's bytes (classic TIFF only) into a
 * new block; writing sets the block's tags through libtiff, which knows their
 * types. Every count and offset is checked against the file or block before
 * anything is read, and the values gathered are bounded by EXIF_MAX in all,
 * so that a hostile directory can neither read outside the data nor make
 * anything large be allocated. */

#define EXIF_MAX 65527u   /* bytes of a block made here: what one JPEG APP1 holds */
#define EXIF_MAX_TAGS 256 /* entries kept per directory */
#define TAG_ORIENTATION 0x0112u
#define TAG_EXIF_IFD 0x8769u

/* The IFD0 tags that belong to EXIF (EXIF 2.3, 4.6.3 "TIFF tags" as cameras
 * write them), ascending. The image's structure (size, samples, strips) is
 * never taken from or given to a block. */
static const uint16_t ifd0_tags[] = {
    0x010E, /* ImageDescription */
    0x010F, /* Make */
    0x0110, /* Model */
    0x0112, /* Orientation */
    0x011A, /* XResolution */
    0x011B, /* YResolution */
    0x0128, /* ResolutionUnit */
    0x0131, /* Software */
    0x0132, /* DateTime */
    0x013B, /* Artist */
    0x8298, /* Copyright */
};

/* Bytes of one value of TIFF types 1..12 (0: a type not carried). */
static unsigned type_size(unsigned type)
{
    static const unsigned size[13] = {0, 1, 1, 2, 4, 8, 1, 1, 2, 4, 8, 4, 8};
    return type < 13 ? size[type] : 0;
}

/* Where directory bytes come from: the file being read or a block. */
typedef struct exif_src {
    FILE *f;            /* NULL: mem */
    const uint8_t *mem; /* size bytes */
    uint64_t size;
    int le; /* little-endian ("II") */
} exif_src;

static int src_read(const exif_src *s, uint64_t off, void *buf, size_t n)
{
    if (off > s->size || n > s->size - off)
        return 0;
    if (!s->f) {
        memcpy(buf, s->mem + off, n);
        return 1;
    }
    return fseeko(s->f, (off_t)off, SEEK_SET) == 0 && fread(buf, 1, n, s->f) == n;
}

static unsigned get16(const uint8_t *p, int le)
{
    return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t get32(const uint8_t *p, int le)
{
    return le ? (uint32_t)get16(p, 1) | (uint32_t)get16(p + 2, 1) << 16
              : (uint32_t)get16(p, 0) << 16 | (uint32_t)get16(p + 2, 0);
}

static void put16(uint8_t *p, unsigned v, int le)
{
    p[le ? 0 : 1] = (uint8_t)v;
    p[le ? 1 : 0] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v, int le)
{
    put16(p + (le ? 0 : 2), v & 0xFFFFu, le);
    put16(p + (le ? 2 : 0), v >> 16, le);
}

/* One directory entry with its value bytes (in the source's byte order). */
typedef struct exif_tag {
    uint16_t tag, type;
    uint32_t count;
    uint8_t *val; /* count * type_size(type) bytes, malloc'd */
} exif_tag;

typedef struct exif_dir {
    exif_tag e[EXIF_MAX_TAGS];
    int n;
} exif_dir;

static void dir_free(exif_dir *d)
{
    for (int i = 0; i < d->n; i++)
        free(d->e[i].val);
    d->n = 0;
}

static size_t tag_bytes(const exif_tag *e)
{
    return (size_t)e->count * type_size(e->type);
}

static int is_ifd0_tag(unsigned tag)
{
    for (size_t i = 0; i < sizeof ifd0_tags / sizeof ifd0_tags[0]; i++)
        if (ifd0_tags[i] == tag)
            return 1;
    return 0;
}

/* Tags of the EXIF directory that are not carried: the maker note (private
 * data whose offsets point into the file it came from), and pointers to
 * further directories (interoperability, GPS, EXIF) that are not gathered. */
static int is_skipped_exif_tag(unsigned tag)
{
    return tag == 0x927C || tag == 0xA005 || tag == 0x8825 || tag == TAG_EXIF_IFD;
}

/* Gathers the entries of the directory at `off` that `exif` selects (0: the
 * IFD0 tags above, 1: the EXIF directory's own) into d, ascending, while
 * *budget (bytes of the block still free) allows; *sub receives the EXIF
 * directory's offset when IFD0 points to one. An entry whose value lies
 * outside the data, or that the budget cannot take, is left out. Returns 0
 * when the directory itself cannot be read. */
static int gather(const exif_src *s, uint64_t off, int exif, exif_dir *d, size_t *budget,
                  uint64_t *sub)
{
    uint8_t b[12];
    if (!src_read(s, off, b, 2))
        return 0;
    const unsigned count = get16(b, s->le);
    for (unsigned i = 0; i < count; i++) {
        if (!src_read(s, off + 2 + (uint64_t)i * 12, b, 12))
            return 0;
        const unsigned tag = get16(b, s->le), type = get16(b + 2, s->le);
        const uint32_t n = get32(b + 4, s->le);
        if (!exif && tag == TAG_EXIF_IFD && (type == 4 || type == 13) && n == 1 && sub) {
            *sub = get32(b + 8, s->le);
            continue;
        }
        if (exif ? is_skipped_exif_tag(tag) : !is_ifd0_tag(tag))
            continue;
        const uint64_t len = (uint64_t)n * type_size(type);
        /* Each entry costs its 12 bytes and a padding byte besides its value. */
        if (len == 0 || len + 13 > *budget || d->n == EXIF_MAX_TAGS)
            continue;
        int at = d->n;
        while (at > 0 && d->e[at - 1].tag >= tag)
            at--;
        if (at < d->n && d->e[at].tag == tag)
            continue; /* a repeated tag: the first is kept */
        uint8_t *val = malloc((size_t)len);
        if (!val)
            return 0;
        if (len <= 4)
            memcpy(val, b + 8, (size_t)len);
        else if (!src_read(s, get32(b + 8, s->le), val, (size_t)len)) {
            free(val);
            continue;
        }
        memmove(d->e + at + 1, d->e + at, (size_t)(d->n - at) * sizeof d->e[0]);
        d->e[at] = (exif_tag){(uint16_t)tag, (uint16_t)type, n, val};
        d->n++;
        *budget -= (size_t)len + 13;
    }
    return 1;
}

/* Reads the header of s: byte order and the first directory's offset.
 * Returns 0 for anything but classic TIFF (BigTIFF's EXIF is not carried). */
static int src_header(exif_src *s, uint64_t *ifd0)
{
    uint8_t h[8];
    if (!src_read(s, 0, h, 8))
        return 0;
    if (h[0] == 'I' && h[1] == 'I')
        s->le = 1;
    else if (h[0] == 'M' && h[1] == 'M')
        s->le = 0;
    else
        return 0;
    if (get16(h + 2, s->le) != 42)
        return 0;
    *ifd0 = get32(h + 4, s->le);
    return 1;
}

/* Gathers the IFD0 tags and the EXIF directory of s into ifd0 and ex.
 * Returns 0 (both empty) when IFD0 cannot be read. An EXIF directory that
 * cannot be read is left out. */
static int gather_all(exif_src *s, exif_dir *ifd0, exif_dir *ex)
{
    ifd0->n = ex->n = 0;
    uint64_t off0 = 0, sub = 0;
    size_t budget = EXIF_MAX - 8 - 2 * 6 - 12; /* header, two directories' ends, the pointer */
    if (!src_header(s, &off0) || !gather(s, off0, 0, ifd0, &budget, &sub)) {
        dir_free(ifd0);
        return 0;
    }
    if (sub && !gather(s, sub, 1, ex, &budget, NULL))
        dir_free(ex);
    return 1;
}

/* Writes one directory of d at `at` in blob b (values after its entries,
 * each at an even offset), with a last entry pointing to `next_dir` when it
 * is nonzero. Returns the offset past it. */
static size_t put_dir(uint8_t *b, size_t at, const exif_dir *d, uint32_t next_dir, int le)
{
    const unsigned n = (unsigned)d->n + (next_dir != 0);
    put16(b + at, n, le);
    size_t val = at + 2 + (size_t)n * 12 + 4;
    for (int i = 0; i < d->n; i++) {
        const exif_tag *e = &d->e[i];
        uint8_t *p = b + at + 2 + (size_t)i * 12;
        const size_t len = tag_bytes(e);
        put16(p, e->tag, le);
        put16(p + 2, e->type, le);
        put32(p + 4, e->count, le);
        memset(p + 8, 0, 4);
        if (len <= 4) {
            memcpy(p + 8, e->val, len);
        } else {
            put32(p + 8, (uint32_t)val, le);
            memcpy(b + val, e->val, len);
            val += len + (len & 1);
        }
    }
    if (next_dir) {
        uint8_t *p = b + at + 2 + (size_t)d->n * 12;
        put16(p, TAG_EXIF_IFD, le);
        put16(p + 2, 4, le);
        put32(p + 4, 1, le);
        put32(p + 8, next_dir, le);
    }
    put32(b + at + 2 + (size_t)n * 12, 0, le); /* no next directory */
    return val;
}

static size_t dir_size(const exif_dir *d, int pointer)
{
    size_t n = 2 + (size_t)(d->n + pointer) * 12 + 4;
    for (int i = 0; i < d->n; i++) {
        const size_t len = tag_bytes(&d->e[i]);
        n += len > 4 ? len + (len & 1) : 0;
    }
    return n;
}

/* Whether IFD0 says something about the camera or the picture (beyond the
 * resolution every TIFF has): only then is a block made. */
static int worth_a_block(const exif_dir *ifd0, const exif_dir *ex, int le)
{
    if (ex->n > 0)
        return 1;
    for (int i = 0; i < ifd0->n; i++) {
        const exif_tag *e = &ifd0->e[i];
        if (e->tag == 0x010F || e->tag == 0x0110 || e->tag == 0x0132 || e->tag == 0x013B ||
            e->tag == 0x8298)
            return 1;
        if (e->tag == TAG_ORIENTATION && e->type == 3 && e->count == 1 && get16(e->val, le) != 1)
            return 1;
    }
    return 0;
}

/* The EXIF block of the TIFF file f into meta->exif; left empty when the
 * file has no EXIF worth carrying or its IFD0 cannot be read. */
static ic_status read_exif(FILE *f, uint64_t size, ic_metadata *meta)
{
    exif_src s = {f, NULL, size, 1};
    exif_dir *d = malloc(2 * sizeof *d);
    if (!d)
        return IC_ERR_NOMEM;
    exif_dir *ifd0 = &d[0], *ex = &d[1];
    ic_status st = IC_OK;
    if (gather_all(&s, ifd0, ex) && worth_a_block(ifd0, ex, s.le)) {
        const size_t n0 = dir_size(ifd0, ex->n > 0);
        const size_t n = 8 + n0 + (ex->n > 0 ? dir_size(ex, 0) : 0);
        uint8_t *b = calloc(1, n);
        if (!b) {
            st = IC_ERR_NOMEM;
        } else {
            memcpy(b, s.le ? "II*\0" : "MM\0*", 4);
            put32(b + 4, 8, s.le);
            const size_t end0 = put_dir(b, 8, ifd0, ex->n > 0 ? (uint32_t)(8 + n0) : 0, s.le);
            if (ex->n > 0)
                put_dir(b, end0, ex, 0, s.le);
            meta->exif = b;
            meta->exif_size = n;
        }
    }
    dir_free(ifd0);
    dir_free(ex);
    free(d);
    return st;
}

/* One value of e (index i) as an integer / a real; the caller has checked
 * the type's family. */
static int64_t val_int(const exif_tag *e, uint32_t i, int le)
{
    const uint8_t *p = e->val + (size_t)i * type_size(e->type);
    switch (e->type) {
    case TIFF_SBYTE:
        return (int8_t)p[0];
    case TIFF_SHORT:
        return get16(p, le);
    case TIFF_SSHORT:
        return (int16_t)get16(p, le);
    case TIFF_LONG:
        return get32(p, le);
    case TIFF_SLONG:
        return (int32_t)get32(p, le);
    default: /* BYTE, UNDEFINED */
        return p[0];
    }
}

static double val_real(const exif_tag *e, uint32_t i, int le)
{
    const uint8_t *p = e->val + (size_t)i * type_size(e->type);
    switch (e->type) {
    case TIFF_RATIONAL:
    case TIFF_SRATIONAL: {
        const uint32_t num = get32(p, le), den = get32(p + 4, le);
        if (e->type == TIFF_SRATIONAL)
            return den ? (double)(int32_t)num / (double)(int32_t)den : 0.0;
        return den ? (double)num / (double)den : 0.0;
    }
    case TIFF_FLOAT: {
        const uint32_t bits = get32(p, le);
        float v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    case TIFF_DOUBLE: {
        const uint64_t bits = le ? (uint64_t)get32(p + 4, 1) << 32 | get32(p, 1)
                                 : (uint64_t)get32(p, 0) << 32 | get32(p + 4, 0);
        double v;
        memcpy(&v, &bits, sizeof v);
        return v;
    }
    default:
        return (double)val_int(e, i, le);
    }
}

static int is_int_type(unsigned t)
{
    return t == TIFF_BYTE || t == TIFF_UNDEFINED || t == TIFF_SBYTE || t == TIFF_SHORT ||
           t == TIFF_SSHORT || t == TIFF_LONG || t == TIFF_SLONG;
}

static int is_real_type(unsigned t)
{
    return t == TIFF_RATIONAL || t == TIFF_SRATIONAL || t == TIFF_FLOAT || t == TIFF_DOUBLE;
}

/* Sets tag e of the current directory through libtiff, converted to the type
 * libtiff keeps for it (TIFFFieldSetGetSize: the size of its integers, float
 * or double for rationals). Tags libtiff does not know, values of another
 * kind (text for a number), and counts the field does not take are left out.
 * Returns whether the tag was set. */
static int set_tag(TIFF *t, const exif_tag *e, int le)
{
    const TIFFField *fip = TIFFFindField(t, e->tag, TIFF_ANY);
    if (!fip || TIFFFieldIsAnonymous(fip))
        return 0;
    const TIFFDataType ft = TIFFFieldDataType(fip);
    const int pass = TIFFFieldPassCount(fip), wc = TIFFFieldWriteCount(fip);
    if (ft == TIFF_ASCII) {
        if (e->type != TIFF_ASCII || pass)
            return 0;
        char *s = malloc((size_t)e->count + 1);
        if (!s)
            return 0;
        memcpy(s, e->val, e->count);
        s[e->count] = '\0';
        const int ok = TIFFSetField(t, e->tag, s);
        free(s);
        return ok;
    }
    const int real = is_real_type((unsigned)ft);
    const int size = TIFFFieldSetGetSize(fip);
    if ((!real && !is_int_type((unsigned)ft)) || (real && size != 4 && size != 8) ||
        (!real && size != 1 && size != 2 && size != 4 && size != 8) ||
        !(is_int_type(e->type) || (real && is_real_type(e->type))))
        return 0;
    uint32_t n = e->count;
    if (!pass) {
        if (wc < 1 || (uint32_t)wc > n)
            return 0; /* TIFF_VARIABLE/TIFF_SPP without a count, or too few values */
        n = (uint32_t)wc;
    } else if (wc != TIFF_VARIABLE2 && n > 65535) {
        return 0;
    }
    if (!pass && n == 1) { /* one value, passed as such (promoted) */
        if (real)
            return TIFFSetField(t, e->tag, val_real(e, 0, le));
        const int64_t v = val_int(e, 0, le);
        if (size <= 2)
            return TIFFSetField(t, e->tag, (int)v);
        if (size == 4)
            return TIFFSetField(t, e->tag, (uint32_t)v);
        return TIFFSetField(t, e->tag, (uint64_t)v);
    }
    uint8_t *arr = malloc((size_t)n * (size_t)size);
    if (!arr)
        return 0;
    for (uint32_t i = 0; i < n; i++) {
        uint8_t *p = arr + (size_t)i * (size_t)size;
        if (real && size == 4) {
            const float v = (float)val_real(e, i, le);
            memcpy(p, &v, 4);
        } else if (real) {
            const double v = val_real(e, i, le);
            memcpy(p, &v, 8);
        } else {
            const int64_t v = val_int(e, i, le);
            const uint8_t v8 = (uint8_t)v;
            const uint16_t v16 = (uint16_t)v;
            const uint32_t v32 = (uint32_t)v;
            const uint64_t v64 = (uint64_t)v;
            memcpy(p,
                   size == 1   ? (const void *)&v8
                   : size == 2 ? (const void *)&v16
                   : size == 4 ? (const void *)&v32
                               : (const void *)&v64,
                   (size_t)size);
        }
    }
    int ok;
    if (!pass)
        ok = TIFFSetField(t, e->tag, arr);
    else if (wc == TIFF_VARIABLE2)
        ok = TIFFSetField(t, e->tag, n, arr);
    else
        ok = TIFFSetField(t, e->tag, (int)n, arr);
    free(arr);
    return ok;
}

/* Parses meta's EXIF block into its IFD0 tags and EXIF directory (both
 * empty when it is not a TIFF structure). */
static int parse_block(const ic_metadata *meta, exif_dir *ifd0, exif_dir *ex, int *le)
{
    ifd0->n = ex->n = 0;
    if (!meta || !meta->exif || meta->exif_size < 8)
        return 0;
    exif_src s = {NULL, meta->exif, meta->exif_size, 1};
    const int ok = gather_all(&s, ifd0, ex);
    *le = s.le;
    return ok;
}

/* Writes the EXIF directory of ex (when it has a tag libtiff can set) before
 * the image's, and gives its offset in *off (0: none). Leaves t ready for the
 * image directory. */
static int write_exif_dir(TIFF *t, tiff_io *io, const exif_dir *ex, int le, uint64_t *off)
{
    *off = 0;
    if (ex->n == 0)
        return 1;
    if (TIFFCreateEXIFDirectory(t) != 0)
        return 0;
    int set = 0;
    for (int i = 0; i < ex->n; i++)
        set += set_tag(t, &ex->e[i], le);
    io->msg[0] = '\0'; /* a tag refused above is no failure of the write */
    int ok = !set || TIFFWriteCustomDirectory(t, off);
    TIFFFreeDirectory(t);
    TIFFCreateDirectory(t);
    return ok;
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
    const ic_sample_type type = bps == 32 ? IC_F32 : bps == 16 ? IC_U16 : IC_U8;
    uint16_t format = SAMPLEFORMAT_UINT;
    TIFFGetFieldDefaulted(t, TIFFTAG_SAMPLEFORMAT, &format);
    /* Float samples other than 32-bit contiguous strips are refused in so many
     * words (libtiff's RGBA reader would only say it cannot handle them). */
    ic_status st = format == SAMPLEFORMAT_IEEEFP && !as_is
                       ? ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                                 "TIFF: %u-bit float samples in this layout are not supported "
                                 "(32-bit float grey or RGB, optional alpha, in strips only)",
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
    const uint64_t size = (uint64_t)size_proc(&io);
    TIFFClose(t);
    if (st == IC_OK && meta)
        st = read_exif(f, size, meta);
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
    io.writing = 1;
    io.end = ftello(f) > 0 ? ftello(f) : 0;
    TIFF *t = tiff_open(&io, "w", (uint64_t)IC_MAX_DIM * IC_MAX_DIM);
    if (!t)
        return tiff_failure(&io, "write", err, errlen);
    /* EXIF: its directory first (libtiff writes it before the image's, whose
     * tag 34665 then points to it), its IFD0 tags with the image's. */
    exif_dir *d = malloc(2 * sizeof *d);
    if (!d) {
        TIFFClose(t);
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    int le = 1;
    uint64_t exif_off = 0;
    parse_block(meta, &d[0], &d[1], &le);
    const int exif_ok = write_exif_dir(t, &io, &d[1], le, &exif_off);
    const int orientation = ic_metadata_orientation(meta);
    uint16_t compression = COMPRESSION_NONE;
    if (TIFFIsCODECConfigured(COMPRESSION_ADOBE_DEFLATE))
        compression = COMPRESSION_ADOBE_DEFLATE;
    else if (TIFFIsCODECConfigured(COMPRESSION_LZW))
        compression = COMPRESSION_LZW;
    const uint16_t alpha_kind[1] = {EXTRASAMPLE_UNASSALPHA};
    int ok =
        TIFFSetField(t, TIFFTAG_IMAGEWIDTH, (uint32_t)img->width) &&
        TIFFSetField(t, TIFFTAG_IMAGELENGTH, (uint32_t)img->height) &&
        TIFFSetField(t, TIFFTAG_SAMPLESPERPIXEL, (uint16_t)out_ch) &&
        TIFFSetField(t, TIFFTAG_BITSPERSAMPLE, (uint16_t)(8 * ic_sample_size(img->type))) &&
        TIFFSetField(t, TIFFTAG_SAMPLEFORMAT,
                     (uint16_t)(img->type == IC_F32 ? SAMPLEFORMAT_IEEEFP : SAMPLEFORMAT_UINT)) &&
        TIFFSetField(t, TIFFTAG_PHOTOMETRIC,
                     (uint16_t)(out_ch >= 3 ? PHOTOMETRIC_RGB : PHOTOMETRIC_MINISBLACK)) &&
        TIFFSetField(t, TIFFTAG_PLANARCONFIG, (uint16_t)PLANARCONFIG_CONTIG) &&
        TIFFSetField(t, TIFFTAG_ORIENTATION,
                     (uint16_t)(orientation ? orientation : ORIENTATION_TOPLEFT)) &&
        TIFFSetField(t, TIFFTAG_COMPRESSION, compression);
    if (ok && compression != COMPRESSION_NONE)
        ok = TIFFSetField(
            t, TIFFTAG_PREDICTOR,
            (uint16_t)(img->type == IC_F32 ? PREDICTOR_FLOATINGPOINT : PREDICTOR_HORIZONTAL));
    if (ok && compression == COMPRESSION_ADOBE_DEFLATE)
        ok = TIFFSetField(t, TIFFTAG_ZIPQUALITY, level);
    if (ok && (out_ch == 2 || out_ch == 4))
        ok = TIFFSetField(t, TIFFTAG_EXTRASAMPLES, (uint16_t)1, alpha_kind);
    if (ok && meta && meta->icc)
        ok = TIFFSetField(t, TIFFTAG_ICCPROFILE, (uint32_t)meta->icc_size, meta->icc);
    if (ok && exif_ok) {
        /* Best effort: a tag libtiff refuses is left out, and its complaint
         * is not the message of a later failure. */
        for (int i = 0; i < d[0].n; i++)
            if (d[0].e[i].tag != TAG_ORIENTATION)
                set_tag(t, &d[0].e[i], le);
        if (exif_off)
            TIFFSetField(t, TIFFTAG_EXIFIFD, exif_off);
        io.msg[0] = '\0';
    }
    dir_free(&d[0]);
    dir_free(&d[1]);
    free(d);
    if (!exif_ok)
        ok = 0;
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
