/*
 * io.c - image files: format detection, loading with channel forcing and
 * layout conversion, and atomic saving.
 *
 * Follows seed 004's Image(filename, channel_force, is_SoA): load a file with
 * its channels forced to 1..4, then lay it out interleaved (AoS) or planar
 * (SoA). The format of an input is taken from its magic bytes (P5/P6, the PNG
 * signature, the JPEG SOI marker, II*\0 / MM\0* for TIFF, RIFF....WEBP),
 * never from its name; the format of an output from the extension. Saving goes
 * through atomic.c: the file appears under its name only when complete, and a
 * failed or interrupted save leaves nothing. The same writers work into memory
 * (ic_image_encode, through open_memstream), and ic_bytes_save writes already
 * encoded bytes with the same atomic save (the GPU codec's output).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgconv.h"
#include "io/io_internal.h"

int ic_format_depth(ic_format f)
{
    switch (f) {
    case IC_FMT_PNM:
    case IC_FMT_PNG:
    case IC_FMT_TIFF:
        return 16;
    case IC_FMT_JPEG:
    case IC_FMT_WEBP:
        return 8;
    case IC_FMT_PFM:
    case IC_FMT_NPY:
        return 32;
    default:
        return 0;
    }
}

int ic_format_supported(ic_format f)
{
    switch (f) {
    case IC_FMT_PNM:
    case IC_FMT_PFM:
    case IC_FMT_NPY:
        return 1;
    case IC_FMT_PNG:
#ifdef IC_HAVE_PNG
        return 1;
#else
        return 0;
#endif
    case IC_FMT_JPEG:
#ifdef IC_HAVE_JPEG
        return 1;
#else
        return 0;
#endif
    case IC_FMT_TIFF:
#ifdef IC_HAVE_TIFF
        return 1;
#else
        return 0;
#endif
    case IC_FMT_WEBP:
#ifdef IC_HAVE_WEBP
        return 1;
#else
        return 0;
#endif
    case IC_FMT_UNKNOWN:
    default:
        return 0;
    }
}

const char *ic_format_name(ic_format f)
{
    switch (f) {
    case IC_FMT_PNM:
        return "pnm";
    case IC_FMT_PNG:
        return "png";
    case IC_FMT_JPEG:
        return "jpeg";
    case IC_FMT_TIFF:
        return "tiff";
    case IC_FMT_WEBP:
        return "webp";
    case IC_FMT_PFM:
        return "pfm";
    case IC_FMT_NPY:
        return "npy";
    case IC_FMT_UNKNOWN:
    default:
        return "unknown";
    }
}

/* The extension of the last path component, without the dot ("" if none). */
static const char *path_extension(const char *path)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *dot = strrchr(base, '.');
    return dot ? dot + 1 : "";
}

ic_format ic_format_from_path(const char *path)
{
    if (!path)
        return IC_FMT_UNKNOWN;
    const char *ext = path_extension(path);
    if (!strcasecmp(ext, "png"))
        return IC_FMT_PNG;
    if (!strcasecmp(ext, "jpg") || !strcasecmp(ext, "jpeg"))
        return IC_FMT_JPEG;
    if (!strcasecmp(ext, "pgm") || !strcasecmp(ext, "ppm") || !strcasecmp(ext, "pnm"))
        return IC_FMT_PNM;
    if (!strcasecmp(ext, "tif") || !strcasecmp(ext, "tiff"))
        return IC_FMT_TIFF;
    if (!strcasecmp(ext, "webp"))
        return IC_FMT_WEBP;
    if (!strcasecmp(ext, "pfm"))
        return IC_FMT_PFM;
    if (!strcasecmp(ext, "npy"))
        return IC_FMT_NPY;
    return IC_FMT_UNKNOWN;
}

/* Channels the saved file will hold for an image of `channels` channels. */
static int saved_channels(const char *path, ic_format fmt, int channels)
{
    const char *ext = path_extension(path);
    switch (fmt) {
    case IC_FMT_PNG:
    case IC_FMT_TIFF:
    case IC_FMT_NPY:
        return channels;
    case IC_FMT_PFM:
        return channels <= 2 ? 1 : 3;
    case IC_FMT_WEBP:
        return channels == 2 || channels == 4 ? 4 : 3;
    case IC_FMT_PNM:
        if (!strcasecmp(ext, "pgm"))
            return 1;
        if (!strcasecmp(ext, "ppm"))
            return 3;
        return channels <= 2 ? 1 : 3;
    case IC_FMT_JPEG:
        return channels <= 2 ? 1 : 3;
    case IC_FMT_UNKNOWN:
    default:
        return 0;
    }
}

/* Format from the first bytes of a file. *pnm_kind receives the digit after
 * 'P' for Netpbm-looking files so that the other variants get a clear message. */
static ic_format detect_format(const uint8_t *b, size_t n, int *pnm_kind)
{
    static const uint8_t png_sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    *pnm_kind = 0;
    if (n >= 8 && memcmp(b, png_sig, 8) == 0)
        return IC_FMT_PNG;
    if (n >= 3 && b[0] == 0xFF && b[1] == 0xD8 && b[2] == 0xFF)
        return IC_FMT_JPEG;
    /* Classic TIFF (42) and BigTIFF (43), little- and big-endian. */
    if (n >= 4 && ((b[0] == 'I' && b[1] == 'I' && (b[2] == 42 || b[2] == 43) && b[3] == 0) ||
                   (b[0] == 'M' && b[1] == 'M' && b[2] == 0 && (b[3] == 42 || b[3] == 43))))
        return IC_FMT_TIFF;
    if (n >= 12 && memcmp(b, "RIFF", 4) == 0 && memcmp(b + 8, "WEBP", 4) == 0)
        return IC_FMT_WEBP;
    if (n >= 6 && memcmp(b, "\x93NUMPY", 6) == 0)
        return IC_FMT_NPY;
    if (n >= 3 && b[0] == 'P' && (b[1] == 'F' || b[1] == 'f') && isspace(b[2]))
        return IC_FMT_PFM;
    if (n >= 2 && b[0] == 'P' && b[1] >= '1' && b[1] <= '7') {
        *pnm_kind = b[1] - '0';
        return IC_FMT_PNM;
    }
    return IC_FMT_UNKNOWN;
}

/* The readers, by detected format: adding a format is adding its reader here
 * (and its magic bytes to detect_format). */
typedef ic_status (*reader_fn)(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                               char *err, size_t errlen);
static reader_fn reader_for(ic_format fmt)
{
    switch (fmt) {
    case IC_FMT_PNG:
        return ic_png_read;
    case IC_FMT_JPEG:
        return ic_jpeg_read;
    case IC_FMT_PNM:
        return ic_pnm_read;
    case IC_FMT_PFM:
        return ic_pfm_read;
    case IC_FMT_NPY:
        return ic_npy_read;
#ifdef IC_HAVE_TIFF
    case IC_FMT_TIFF:
        return ic_tiff_read;
#endif
#ifdef IC_HAVE_WEBP
    case IC_FMT_WEBP:
        return ic_webp_read;
#endif
    case IC_FMT_UNKNOWN:
    default:
        return NULL;
    }
}

/* Detects the format from the first bytes of f (a seekable stream at offset
 * 0) and runs its reader. */
static ic_status read_native(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                             char *err, size_t errlen)
{
    uint8_t magic[16];
    size_t n = fread(magic, 1, sizeof magic, f);
    if (n == 0 && ferror(f)) {
        return ic_errf(err, errlen, IC_ERR_IO, "read error: %s", strerror(errno));
    }
    if (n == 0) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "empty file");
    }
    int pnm_kind = 0;
    ic_format fmt = detect_format(magic, n, &pnm_kind);
    reader_fn read = reader_for(fmt);
    if (!read && fmt != IC_FMT_UNKNOWN) { /* tiff.c / webp.c left out of this build */
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without %s support",
                       fmt == IC_FMT_TIFF ? "TIFF" : "WebP");
    }
    if (!read && n >= 3 && magic[0] == 'P' && (magic[1] == 'F' || magic[1] == 'f') &&
        magic[2] == '4') { /* PF4: the four-channel variant */
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "PFM: PF4 (four channels) is not supported (PF and Pf only)");
    }
    if (!read) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "not a PNG/JPEG/TIFF/WebP/PNM file");
    }
    if (fmt == IC_FMT_PNM && pnm_kind != 5 && pnm_kind != 6) {
        return ic_errf(err, errlen, IC_ERR_FORMAT,
                       "Netpbm P%d is not supported (only binary PGM P5 and PPM P6)", pnm_kind);
    }
    if (fseek(f, 0, SEEK_SET) != 0) {
        return ic_errf(err, errlen, IC_ERR_IO, "cannot seek: %s", strerror(errno));
    }
    return read(f, img, lim, meta, err, errlen);
}

/* Converts an owned AoS image to `channels` channels in place of *img. */
static ic_status force_channels(ic_image *img, int channels)
{
    ic_image out;
    ic_status st = ic_image_create_type(&out, img->width, img->height, channels, IC_AOS, img->type);
    if (st != IC_OK)
        return st;
    for (int y = 0; y < img->height; y++)
        ic_io_convert_row_type(out.data + (size_t)y * out.pitch, channels,
                               img->data + (size_t)y * img->pitch, img->channels, img->width,
                               img->type);
    ic_image_free(img);
    *img = out;
    return IC_OK;
}

/* Checks the options and fills the effective limits. */
static ic_status load_setup(ic_load_options *o, const ic_load_options *opts, ic_io_limits *lim,
                            ic_io_hook *hook, char *errbuf, size_t errlen)
{
    memset(o, 0, sizeof *o);
    memset(hook, 0, sizeof *hook);
    memset(lim, 0, sizeof *lim);
    if (opts)
        *o = *opts;
    if (o->channels < 0 || o->channels > 4) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "channels must be 0 (as stored) or 1..4, not %d", o->channels);
    }
    if (o->layout != IC_AOS && o->layout != IC_SOA) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "unknown layout %d", (int)o->layout);
    }
    if (o->threads < 0) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "threads must be 0 or more (0 and 1: one thread), not %d", o->threads);
    }
    if (o->metadata)
        memset(o->metadata, 0, sizeof *o->metadata);
    lim->max_pixels = o->max_pixels ? o->max_pixels : IC_DEFAULT_MAX_PIXELS;
    lim->max_memory = o->max_memory ? o->max_memory : ic_max_memory_default();
    /* The copy made after decoding: forced channels (4 at most), or the layout
     * clone with the stored channels (4 at most: the conservative bound). */
    lim->convert_channels = o->channels ? o->channels : (o->layout != IC_AOS ? 4 : 0);
    lim->accept_damaged = o->accept_damaged;
    lim->damaged = o->damaged;
    lim->threads = o->threads;
    if (o->damaged)
        *o->damaged = 0;
    if (o->header_ok) {
        hook->fn = o->header_ok;
        hook->user = o->header_ok_user;
        lim->hook = hook;
    }
    return IC_OK;
}

/* Reads f and converts the result as o asks. */
static ic_status load_stream(ic_image *img, FILE *f, const ic_load_options *o,
                             const ic_io_limits *lim, char *errbuf, size_t errlen)
{
    ic_image raw;
    memset(&raw, 0, sizeof raw);
    ic_status st = read_native(f, &raw, lim, o->metadata, errbuf, errlen);
    if (st != IC_OK) {
        ic_metadata_free(o->metadata);
        return st;
    }

    if (o->eight_bit && raw.type != IC_U8) { /* asked for 8 bits: round(v / 257), round(v * 255) */
        ic_image low;
        st = ic_image_create(&low, raw.width, raw.height, raw.channels, IC_AOS);
        if (st == IC_OK)
            st = ic_image_copy(&low, &raw);
        ic_image_free(&raw);
        if (st != IC_OK) {
            ic_image_free(&low);
            ic_metadata_free(o->metadata);
            return ic_errf(errbuf, errlen, st, "cannot convert to 8 bits: %s", ic_status_str(st));
        }
        raw = low;
    }
    if (o->channels != 0 && o->channels != raw.channels) {
        st = force_channels(&raw, o->channels);
        if (st != IC_OK) {
            ic_image_free(&raw);
            ic_metadata_free(o->metadata);
            return ic_errf(errbuf, errlen, st, "cannot convert to %d channels: %s", o->channels,
                           ic_status_str(st));
        }
    }
    if (o->layout != raw.layout) {
        st = ic_image_clone(img, &raw, o->layout);
        ic_image_free(&raw);
        if (st != IC_OK) {
            memset(img, 0, sizeof *img);
            ic_metadata_free(o->metadata);
            return ic_errf(errbuf, errlen, st, "cannot convert the layout: %s", ic_status_str(st));
        }
        return IC_OK;
    }
    *img = raw;
    return IC_OK;
}

static ic_status image_decode(ic_image *img, const void *data, size_t size,
                              const ic_load_options *opts, char *errbuf, size_t errlen)
{
    if (img)
        memset(img, 0, sizeof *img);
    if (!img || (!data && size)) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no image or data given");
    }
    ic_load_options o;
    ic_io_limits lim;
    ic_io_hook hook;
    ic_status st = load_setup(&o, opts, &lim, &hook, errbuf, errlen);
    if (st != IC_OK)
        return st;
    if (size == 0) {
        return ic_errf(errbuf, errlen, IC_ERR_FORMAT, "empty file");
    }
    /* The readers take a stream; a read-only memory stream never writes. */
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f) {
        return ic_errf(errbuf, errlen, errno == ENOMEM ? IC_ERR_NOMEM : IC_ERR_IO,
                       "cannot open a memory stream: %s", strerror(errno));
    }
    lim.bytes = data;
    lim.nbytes = size;
    st = load_stream(img, f, &o, &lim, errbuf, errlen);
    fclose(f);
    return st;
}

static ic_status image_probe(const void *data, size_t size, const ic_load_options *opts, int *width,
                             int *height, char *errbuf, size_t errlen)
{
    if (!data || !width || !height) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no data or size given");
    }
    *width = *height = 0;
    /* The limits only: nothing of the caller's is written. */
    ic_load_options asked;
    memset(&asked, 0, sizeof asked);
    if (opts) {
        asked = *opts;
        asked.metadata = NULL;
        asked.damaged = NULL;
        asked.header_ok = NULL;
    }
    ic_load_options o;
    ic_io_limits lim;
    ic_io_hook hook;
    ic_status st = load_setup(&o, &asked, &lim, &hook, errbuf, errlen);
    if (st != IC_OK)
        return st;
    if (size == 0) {
        return ic_errf(errbuf, errlen, IC_ERR_FORMAT, "empty file");
    }
    hook.stop = 1;
    lim.hook = &hook;
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f) {
        return ic_errf(errbuf, errlen, errno == ENOMEM ? IC_ERR_NOMEM : IC_ERR_IO,
                       "cannot open a memory stream: %s", strerror(errno));
    }
    ic_image raw;
    memset(&raw, 0, sizeof raw);
    st = read_native(f, &raw, &lim, NULL, errbuf, errlen);
    fclose(f);
    ic_image_free(&raw);
    if (hook.fired) {
        *width = hook.width;
        *height = hook.height;
        errbuf[0] = '\0';
        return IC_OK;
    }
    return st;
}

/* Opens path for reading without ever blocking: a FIFO would wait for a
 * writer in open(2), so it is opened non-blocking and refused, as is every
 * file that is not a regular one. */
static ic_status open_regular(const char *path, FILE **out, char *errbuf, size_t errlen)
{
    *out = NULL;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        return ic_errf(errbuf, errlen, IC_ERR_IO, "cannot open: %s", strerror(errno));
    }
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        const int saved = errno;
        close(fd);
        return ic_errf(errbuf, errlen, IC_ERR_IO, "cannot read: %s", strerror(saved));
    }
    if (!S_ISREG(sb.st_mode)) {
        close(fd);
        if (S_ISDIR(sb.st_mode))
            return ic_errf(errbuf, errlen, IC_ERR_IO, "cannot read: %s", strerror(EISDIR));
        return ic_errf(errbuf, errlen, IC_ERR_IO, "not a regular file (a FIFO, device or socket)");
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return ic_errf(errbuf, errlen, IC_ERR_NOMEM, "cannot open: %s", strerror(errno));
    }
    *out = f;
    return IC_OK;
}

static ic_status image_load(ic_image *img, const char *path, const ic_load_options *opts,
                            char *errbuf, size_t errlen)
{
    if (!img || !path) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no image or path given");
    }
    memset(img, 0, sizeof *img);
    ic_load_options o;
    ic_io_limits lim;
    ic_io_hook hook;
    ic_status st = load_setup(&o, opts, &lim, &hook, errbuf, errlen);
    if (st != IC_OK)
        return st;

    FILE *f;
    st = open_regular(path, &f, errbuf, errlen);
    if (st != IC_OK)
        return st;
    st = load_stream(img, f, &o, &lim, errbuf, errlen);
    fclose(f);
    return st;
}

/* ---- atomic save ----------------------------------------------------------- */

static ic_status write_format(FILE *f, const ic_image *aos, ic_format fmt, int out_ch,
                              const ic_save_options *o, char *err, size_t errlen)
{
    /* What the output can hold: a profile of the right colour space, EXIF. */
    ic_metadata fit = {0};
    const ic_metadata *m = o->metadata;
    if (m && ic_io_icc_fits(m, out_ch)) {
        fit.icc = m->icc;
        fit.icc_size = m->icc_size;
    }
    if (m && m->exif && m->exif_size <= IC_MAX_METADATA) {
        fit.exif = m->exif;
        fit.exif_size = m->exif_size;
    }
    const ic_metadata *meta = fit.icc || fit.exif ? &fit : NULL;
    switch (fmt) {
#ifdef IC_HAVE_TIFF
    case IC_FMT_TIFF:
        return ic_tiff_write(f, aos, out_ch, o->compression ? o->compression : 6, meta, err,
                             errlen);
#endif
#ifdef IC_HAVE_WEBP
    case IC_FMT_WEBP:
        return ic_webp_write(f, aos, out_ch, o->quality, o->lossless, meta, err, errlen);
#endif
    case IC_FMT_PNG:
        return ic_png_write(f, aos, out_ch, o->compression ? o->compression : IC_PNG_DEFAULT_LEVEL,
                            o->threads, meta, err, errlen);
    case IC_FMT_JPEG: {
        ic_jpeg_strips strips;
        memset(&strips, 0, sizeof strips);
        strips.threads = o->threads;
        return ic_jpeg_write(f, aos, out_ch, o->quality, meta, &strips, err, errlen);
    }
    case IC_FMT_PNM:
        return ic_pnm_write(f, aos, out_ch, err, errlen);
    case IC_FMT_PFM:
        return ic_pfm_write(f, aos, out_ch, err, errlen);
    case IC_FMT_NPY:
        return ic_npy_write(f, aos, err, errlen);
    case IC_FMT_UNKNOWN:
    default:
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "unknown output format");
    }
}

static int image_valid(const ic_image *img)
{
    if (!img->data || img->width <= 0 || img->height <= 0 || img->width > IC_MAX_DIM ||
        img->height > IC_MAX_DIM || img->channels < 1 || img->channels > 4 ||
        ic_sample_size(img->type) == 0 || (img->layout != IC_AOS && img->layout != IC_SOA))
        return 0;
    return img->pitch >= ic_image_row_bytes(img);
}

/* Writes the output of fill() to path so that the file appears under its name
 * only when complete (atomic.c): a failure leaves no partial file behind. */
typedef ic_status (*fill_fn)(FILE *f, const void *arg, char *err, size_t errlen);

static ic_status save_atomic(const char *path, int no_replace, fill_fn fill, const void *arg,
                             char *errbuf, size_t errlen)
{
    /* Written where nobody sees it, published only when complete (atomic.c). */
    ic_out_file out;
    ic_status st = ic_out_open(&out, path, no_replace, errbuf, errlen);
    if (st != IC_OK)
        return st;
    st = fill(out.f, arg, errbuf, errlen);
    if (st == IC_OK)
        st = ic_out_commit(&out, errbuf, errlen);
    else
        ic_out_abort(&out);
    return st;
}

/* An image ready for a format writer. */
typedef struct encode_job {
    const ic_image *aos;
    ic_format fmt;
    int out_ch;
    ic_save_options o; /* the effective options (defaults filled in) */
} encode_job;

static ic_status fill_image(FILE *f, const void *arg, char *err, size_t errlen)
{
    const encode_job *j = arg;
    return write_format(f, j->aos, j->fmt, j->out_ch, &j->o, err, errlen);
}

/* Checks img and the options, picks the format from `path` (a file name or
 * just ".ext") and makes *aos_copy when img is planar. */
static ic_status prepare_encode(const ic_image *img, const char *path, const ic_save_options *opts,
                                encode_job *j, ic_image *aos_copy, char *errbuf, size_t errlen)
{
    memset(aos_copy, 0, sizeof *aos_copy);
    if (!img || !path || !path[0]) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no image or path given");
    }
    if (img->memory != IC_MEM_HOST) {
        return ic_errf(errbuf, errlen, IC_ERR_UNSUPPORTED,
                       "the image is in device memory: copy it to the host first (or encode it "
                       "with ic_gpu_codec_encode)");
    }
    if (!image_valid(img)) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "invalid image (size, channels, layout or pitch)");
    }
    memset(&j->o, 0, sizeof j->o);
    if (opts)
        j->o = *opts;
    if (j->o.quality == 0)
        j->o.quality = 92;
    if (j->o.quality < 1 || j->o.quality > 100) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "quality must be 1..100, not %d",
                       j->o.quality);
    }
    if (j->o.threads < 0) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "threads must be 0 or more (0 and 1: one thread), not %d", j->o.threads);
    }
    if (j->o.compression < 0 || j->o.compression > 9) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG,
                       "compression must be 1..9 (0: the default), not %d", j->o.compression);
    }
    ic_format fmt = ic_format_from_path(path);
    if (fmt == IC_FMT_UNKNOWN) {
        return ic_errf(errbuf, errlen, IC_ERR_UNSUPPORTED,
                       "unknown output format \".%s\" (use .png, .jpg, .jpeg, .tif, .tiff, .webp, "
                       ".pgm, .ppm, .pnm, .pfm or .npy)",
                       path_extension(path));
    }
    if (!ic_format_supported(fmt)) {
        return ic_errf(errbuf, errlen, IC_ERR_UNSUPPORTED, "built without %s support",
                       ic_format_name(fmt));
    }
    j->fmt = fmt;
    j->out_ch = saved_channels(path, fmt, img->channels);
    j->aos = img;
    /* Writers take interleaved rows; planar images are converted first, and
     * so are 16-bit images for 8-bit formats (round(v / 257)), float ones for
     * integer formats (PNG, PNM: 16 bits; JPEG, WebP: 8) and everything for
     * PFM (to float); TIFF and npy keep every type. */
    ic_sample_type type = ic_format_depth(fmt) >= 16 ? img->type : IC_U8;
    if (fmt == IC_FMT_PFM)
        type = IC_F32;
    else if (type == IC_F32 && fmt != IC_FMT_TIFF && fmt != IC_FMT_NPY)
        type = IC_U16;
    if (img->layout != IC_AOS || type != img->type) {
        ic_status st =
            ic_image_create_type(aos_copy, img->width, img->height, img->channels, IC_AOS, type);
        if (st == IC_OK)
            st = ic_image_copy(aos_copy, img);
        if (st != IC_OK) {
            ic_image_free(aos_copy);
            return ic_errf(errbuf, errlen, st, "cannot convert the layout or depth: %s",
                           ic_status_str(st));
        }
        j->aos = aos_copy;
    }
    return IC_OK;
}

static ic_status image_save(const ic_image *img, const char *path, const ic_save_options *opts,
                            char *errbuf, size_t errlen)
{
    encode_job j;
    ic_image aos_copy;
    ic_status st = prepare_encode(img, path, opts, &j, &aos_copy, errbuf, errlen);
    if (st == IC_OK)
        st = save_atomic(path, j.o.no_replace, fill_image, &j, errbuf, errlen);
    ic_image_free(&aos_copy);
    return st;
}

static ic_status image_encode(const ic_image *img, const char *name, const ic_save_options *opts,
                              uint8_t **data, size_t *size, char *errbuf, size_t errlen)
{
    if (!data || !size) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no output buffer given");
    }
    *data = NULL;
    *size = 0;
    encode_job j;
    ic_image aos_copy;
    ic_status st = prepare_encode(img, name, opts, &j, &aos_copy, errbuf, errlen);
    if (st != IC_OK)
        return st;
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) {
        ic_image_free(&aos_copy);
        return ic_errf(errbuf, errlen, IC_ERR_NOMEM, "out of memory");
    }
    st = fill_image(f, &j, errbuf, errlen);
    if (fclose(f) != 0 && st == IC_OK)
        st = ic_errf(errbuf, errlen, IC_ERR_NOMEM, "out of memory");
    ic_image_free(&aos_copy);
    if (st != IC_OK) {
        free(buf);
        return st;
    }
    *data = (uint8_t *)buf;
    *size = n;
    return IC_OK;
}

typedef struct byte_span {
    const void *data;
    size_t size;
} byte_span;

static ic_status fill_bytes(FILE *f, const void *arg, char *err, size_t errlen)
{
    const byte_span *b = arg;
    if (b->size > 0 && fwrite(b->data, 1, b->size, f) != b->size) {
        return ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
    }
    return IC_OK;
}

static ic_status save_bytes(const char *path, const void *data, size_t size,
                            const ic_save_options *opts, char *errbuf, size_t errlen)
{
    if (!path || !path[0] || (!data && size > 0)) {
        return ic_errf(errbuf, errlen, IC_ERR_INVALID_ARG, "no data or path given");
    }
    const byte_span b = {data, size};
    errno = 0;
    return save_atomic(path, opts && opts->no_replace, fill_bytes, &b, errbuf, errlen);
}

/* ---- the public calls: the message of a failure goes to ic_last_error() ---- */

ic_status ic_image_decode(ic_image *img, const void *data, size_t size, const ic_load_options *opts)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(image_decode(img, data, size, opts, err, sizeof err), err);
}

ic_status ic_image_load(ic_image *img, const char *path, const ic_load_options *opts)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(image_load(img, path, opts, err, sizeof err), err);
}

ic_status ic_image_probe(const void *data, size_t size, const ic_load_options *opts, int *width,
                         int *height)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(image_probe(data, size, opts, width, height, err, sizeof err), err);
}

ic_status ic_image_save(const ic_image *img, const char *path, const ic_save_options *opts)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(image_save(img, path, opts, err, sizeof err), err);
}

ic_status ic_image_encode(const ic_image *img, const char *name, const ic_save_options *opts,
                          uint8_t **data, size_t *size)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(image_encode(img, name, opts, data, size, err, sizeof err), err);
}

ic_status ic_bytes_save(const char *path, const void *data, size_t size)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(save_bytes(path, data, size, NULL, err, sizeof err), err);
}

ic_status ic_bytes_save_opts(const char *path, const void *data, size_t size,
                             const ic_save_options *opts)
{
    char err[IC_IO_ERRLEN] = "";
    return ic_fail_msg(save_bytes(path, data, size, opts, err, sizeof err), err);
}
