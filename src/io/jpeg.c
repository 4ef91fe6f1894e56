/*
 * jpeg.c - JPEG files through libjpeg(-turbo).
 *
 * Reading gives grey (1 channel) or RGB (3 channels); CMYK/YCCK files are
 * converted to RGB (Adobe's inverted CMYK included). libjpeg's fatal errors
 * longjmp back here and become one-line messages; the warnings that mean the
 * pixels are incomplete or corrupt ("Premature end of JPEG file", bad Huffman
 * codes, ...) are promoted to errors, so a cut file fails instead of decoding
 * with a grey bottom. width*height is checked against the pixel limit, and
 * the decoded bytes against the memory limit, after the header and before
 * decompressing, and progressive files are limited in their
 * number of scans; a large baseline file with restart markers is decoded
 * in parts between them on several threads when the load offers threads
 * (jpeg_restart.c). Writing stores grey or RGB at a quality of 1..100; an
 * image of 1 MP or more, when threads are offered, is coded in strips on
 * several threads and joined with restart markers (see "writing in strips").
 * Built only with IC_HAVE_JPEG; otherwise every entry point reports
 * IC_ERR_UNSUPPORTED. (No seed figure: seed 004 loads files through a library.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/image_internal.h"
#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_JPEG

#include <pthread.h>
#include <stdatomic.h>

#include "io/jpeg_internal.h"
/* after jpeglib.h (jpeg_internal.h): jerror.h reads its configuration */
#include <jerror.h>

/* Progressive JPEGs with thousands of scans decode very slowly; real files use
 * about ten. The limit follows libjpeg-turbo's own recommendation. */
#define JPEG_MAX_SCANS 500

typedef ic_jpeg_err jpeg_err;

static void on_error_exit(j_common_ptr cinfo)
{
    jpeg_err *e = (jpeg_err *)cinfo->err;
    if (cinfo->err->msg_code == JWRN_JPEG_EOF)
        e->truncated = 1;
    if (cinfo->err->msg_code == JERR_OUT_OF_MEMORY)
        e->nomem = 1;
    char buf[JMSG_LENGTH_MAX];
    cinfo->err->format_message(cinfo, buf);
    snprintf(e->msg, sizeof e->msg, "%s", buf);
    longjmp(e->jump, 1);
}

/* The library never prints: the default would write to stderr. */
static void on_output_message(j_common_ptr cinfo)
{
    (void)cinfo;
}

/* The warnings that mean the pixels are damaged fail the read, as a PNG with
 * a bad CRC does, unless the load accepts damaged data; other warnings are
 * harmless (an unknown JFIF version, ...). */
static void on_emit_message(j_common_ptr cinfo, int level)
{
    if (level >= 0)
        return; /* trace messages */
    jpeg_err *e = (jpeg_err *)cinfo->err;
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_EXTRANEOUS_DATA:
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
        if (!e->accept_damaged)
            on_error_exit(cinfo); /* does not return */
        e->damaged = 1;
        cinfo->err->num_warnings++;
        break;
    default:
        cinfo->err->num_warnings++;
        break;
    }
}

static void on_progress(j_common_ptr cinfo)
{
    if (!cinfo->is_decompressor)
        return;
    j_decompress_ptr d = (j_decompress_ptr)cinfo;
    if (d->input_scan_number > JPEG_MAX_SCANS) {
        jpeg_err *e = (jpeg_err *)cinfo->err;
        snprintf(e->msg, sizeof e->msg, "more than %d progressive scans", JPEG_MAX_SCANS);
        longjmp(e->jump, 1);
    }
}

/* The error manager of every libjpeg call here: errors longjmp to e->jump,
 * nothing is printed, and lim's policy on damaged data (NULL: refuse it)
 * applies. Every JPEG decoder calls it, so they all give the same verdict. */
void ic_jpeg_err_init(ic_jpeg_err *e, const ic_io_limits *lim)
{
    memset(e, 0, sizeof *e);
    e->accept_damaged = lim && lim->accept_damaged;
    jpeg_std_error(&e->pub);
    e->pub.error_exit = on_error_exit;
    e->pub.output_message = on_output_message;
    e->pub.emit_message = on_emit_message;
}

static ic_status jpeg_failure(const jpeg_err *e, FILE *f, const char *verb, char *err,
                              size_t errlen)
{
    if (ferror(f)) {
        return ic_errf(err, errlen, IC_ERR_IO, "%s error: %s", verb, strerror(errno ? errno : EIO));
    }
    if (e->nomem) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "JPEG: %s", e->msg);
    }
    if (e->truncated) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "truncated JPEG data (premature end of file)");
    }
    return ic_errf(err, errlen, *verb == 'w' ? IC_ERR_IO : IC_ERR_FORMAT, "JPEG: %s", e->msg);
}

/* CMYK as decoded -> RGB. Adobe writes CMYK inverted (0 = full ink). */
static void cmyk_to_rgb(uint8_t *dst, const uint8_t *src, int width, int inverted)
{
    for (int x = 0; x < width; x++, src += 4, dst += 3) {
        unsigned k = inverted ? src[3] : 255u - src[3];
        for (int c = 0; c < 3; c++) {
            unsigned v = inverted ? src[c] : 255u - src[c];
            dst[c] = (uint8_t)((v * k + 127u) / 255u);
        }
    }
}

/* "Exif\0\0", which starts the APP1 segment that holds EXIF. */
static const uint8_t exif_id[6] = {'E', 'x', 'i', 'f', 0, 0};

/* The ICC profile (APP2 chunks, joined by libjpeg-turbo) and the EXIF APP1
 * block of a header read with those markers saved. */
static ic_status jpeg_get_metadata(struct jpeg_decompress_struct *cinfo, ic_metadata *meta)
{
    JOCTET *icc = NULL;
    unsigned int icc_len = 0;
    ic_status st = IC_OK;
    if (jpeg_read_icc_profile(cinfo, &icc, &icc_len) && icc)
        st = ic_io_meta_copy(&meta->icc, &meta->icc_size, icc, icc_len);
    free(icc);
    for (jpeg_saved_marker_ptr m = cinfo->marker_list; st == IC_OK && m; m = m->next)
        if (m->marker == JPEG_APP0 + 1 && m->data_length > sizeof exif_id &&
            memcmp(m->data, exif_id, sizeof exif_id) == 0) {
            st = ic_io_meta_copy(&meta->exif, &meta->exif_size, m->data + sizeof exif_id,
                                 m->data_length - sizeof exif_id);
            break;
        }
    return st;
}

/* The entropy-coded data after the header, decoded with the coefficients
 * thrown away (ic_jpeg_check): a single-scan file is skipped through
 * (jpeg_skip_scanlines runs the Huffman decoder over every MCU with a NULL
 * block: no IDCT, upsampling or colour conversion) but for its last row, a
 * multi-scan one is read into libjpeg's coefficient buffers by
 * jpeg_start_decompress, as for decoding. The native colour space and plain
 * upsampling keep libjpeg's skip on its simplest path. Called inside
 * jpeg_decode's setjmp. */
static ic_status jpeg_skim(struct jpeg_decompress_struct *cinfo, uint8_t **row_out, char *err,
                           size_t errlen)
{
    cinfo->out_color_space = cinfo->jpeg_color_space;
    cinfo->do_fancy_upsampling = FALSE;
    cinfo->dct_method = JDCT_IFAST;
    (void)jpeg_start_decompress(cinfo);
    uint8_t *row = malloc((size_t)cinfo->output_width * (size_t)cinfo->output_components);
    if (!row)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    *row_out = row;
    /* Never to the end: a skip that reaches the last row decodes nothing. */
    if (cinfo->output_height > 1)
        (void)jpeg_skip_scanlines(cinfo, cinfo->output_height - 1);
    while (cinfo->output_scanline < cinfo->output_height) {
        JSAMPROW r = row;
        if (jpeg_read_scanlines(cinfo, &r, 1) != 1)
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "truncated JPEG data (premature end of file)");
    }
    (void)jpeg_finish_decompress(cinfo);
    return IC_OK;
}

static ic_status jpeg_decode(struct jpeg_decompress_struct *cinfo, jpeg_err *je, FILE *f,
                             ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                             uint8_t **buf_out, char *err, size_t errlen)
{
    if (setjmp(je->jump))
        return jpeg_failure(je, f, "read", err, errlen);

    jpeg_create_decompress(cinfo);
    /* jpeg_create_decompress clears everything but err and client_data. */
    cinfo->progress = cinfo->client_data;
    jpeg_stdio_src(cinfo, f);
    if (meta) {
        jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
        jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
    }
    (void)jpeg_read_header(cinfo, TRUE);
    if (meta && jpeg_get_metadata(cinfo, meta) != IC_OK) {
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    /* The decoded image, plus the whole-image coefficient buffers (2 bytes a
     * sample and component) libjpeg keeps for progressive files. */
    const int out_ch = cinfo->jpeg_color_space == JCS_GRAYSCALE ? 1 : 3;
    const int work_ch = cinfo->progressive_mode ? 2 * cinfo->num_components : 0;
    ic_status st = ic_io_check_dims(cinfo->image_width, cinfo->image_height, out_ch + work_ch, lim,
                                    err, errlen);
    if (st != IC_OK)
        return st;
    if (!img) /* ic_jpeg_check */
        return jpeg_skim(cinfo, buf_out, err, errlen);

    int cmyk = 0;
    switch (cinfo->jpeg_color_space) {
    case JCS_GRAYSCALE:
        cinfo->out_color_space = JCS_GRAYSCALE;
        break;
    case JCS_CMYK:
    case JCS_YCCK:
        cinfo->out_color_space = JCS_CMYK;
        cmyk = 1;
        break;
    default:
        cinfo->out_color_space = JCS_RGB;
        break;
    }
    (void)jpeg_start_decompress(cinfo);
    const int channels = cmyk ? 3 : cinfo->output_components;
    if (cinfo->output_components != (cmyk ? 4 : channels) || (channels != 1 && channels != 3) ||
        cinfo->output_width != cinfo->image_width || cinfo->output_height != cinfo->image_height) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "JPEG: unexpected output (%d components)",
                       cinfo->output_components);
    }
    /* Unzeroed: every row is written below, or by the part threads, which
     * also fault it in (jpeg_restart.c; populating 72 MB here took 10 ms on
     * this thread before any part began, twice a part's decode on 16
     * threads); zeroing was 2.6% of an HD request's CPU in imgconv serve. */
    const int parts = !cmyk && ic_jpeg_restart_parts(cinfo, lim) > 0;
    st = ic__image_create_unzeroed(img, (int)cinfo->output_width, (int)cinfo->output_height,
                                   channels, IC_AOS, IC_U8);
    if (st != IC_OK) {
        return ic_errf(err, errlen, st, "cannot allocate a %ux%u image: %s",
                       (unsigned)cinfo->output_width, (unsigned)cinfo->output_height,
                       ic_status_str(st));
    }
    /* Restart markers: the parts between them on several threads. */
    if (parts && ic_jpeg_restart_decode(cinfo, f, img, lim)) {
        jpeg_abort_decompress(cinfo);
        return IC_OK;
    }
    uint8_t *buf = NULL;
    if (cmyk) {
        buf = malloc((size_t)cinfo->output_width * 4u);
        if (!buf) {
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        *buf_out = buf;
    }
    const size_t used = (size_t)img->width * (size_t)channels; /* the rest of a row: padding */
    while (cinfo->output_scanline < cinfo->output_height) {
        uint8_t *row = img->data + (size_t)cinfo->output_scanline * img->pitch;
        JSAMPROW r = buf ? buf : row;
        if (jpeg_read_scanlines(cinfo, &r, 1) != 1) {
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "truncated JPEG data (premature end of file)");
        }
        if (buf)
            cmyk_to_rgb(row, buf, img->width, cinfo->saw_Adobe_marker);
        if (img->pitch > used) /* unzeroed: the padding too */
            memset(row + used, 0, img->pitch - used);
    }
    /* Reads to the EOI marker: a file cut after its last scanline still fails. */
    (void)jpeg_finish_decompress(cinfo);
    return IC_OK;
}

/* The header only, with the APP1/APP2 markers saved (jpeg_get_metadata). */
static ic_status jpeg_header_metadata(struct jpeg_decompress_struct *cinfo, jpeg_err *je,
                                      const uint8_t *data, size_t n, ic_metadata *meta)
{
    if (setjmp(je->jump))
        return ic_fail(je->nomem ? IC_ERR_NOMEM : IC_ERR_FORMAT, "JPEG: %s", je->msg);
    jpeg_create_decompress(cinfo);
    jpeg_mem_src(cinfo, data, (unsigned long)n);
    jpeg_save_markers(cinfo, JPEG_APP0 + 1, 0xFFFF);
    jpeg_save_markers(cinfo, JPEG_APP0 + 2, 0xFFFF);
    (void)jpeg_read_header(cinfo, TRUE);
    if (jpeg_get_metadata(cinfo, meta) != IC_OK)
        return ic_fail(IC_ERR_NOMEM, "JPEG: out of memory for the metadata");
    return IC_OK;
}

void ic_jpeg_decompress_init(struct jpeg_decompress_struct *cinfo, ic_jpeg_err *je,
                             const ic_io_limits *lim)
{
    ic_jpeg_err_init(je, lim);
    memset(cinfo, 0, sizeof *cinfo);
    cinfo->err = &je->pub;
}

ic_status ic_jpeg_read_metadata(const uint8_t *data, size_t n, ic_metadata *meta)
{
    memset(meta, 0, sizeof *meta);
    jpeg_err je;
    struct jpeg_decompress_struct cinfo;
    ic_jpeg_decompress_init(&cinfo, &je, NULL);
    const ic_status st = jpeg_header_metadata(&cinfo, &je, data, n, meta);
    jpeg_destroy_decompress(&cinfo);
    if (st != IC_OK)
        ic_metadata_free(meta);
    return st;
}

ic_status ic_jpeg_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen)
{
    if (img) /* NULL: ic_jpeg_check's entropy decode */
        memset(img, 0, sizeof *img);
    jpeg_err je;
    struct jpeg_decompress_struct cinfo;
    ic_jpeg_decompress_init(&cinfo, &je, lim);
    struct jpeg_progress_mgr progress;
    memset(&progress, 0, sizeof progress);
    progress.progress_monitor = on_progress;
    cinfo.client_data = &progress;
    uint8_t *buf = NULL;
    errno = 0;
    ic_status st = jpeg_decode(&cinfo, &je, f, img, lim, meta, &buf, err, errlen);
    free(buf);
    jpeg_destroy_decompress(&cinfo);
    if (st == IC_OK && je.damaged && lim->damaged)
        *lim->damaged = 1;
    if (st != IC_OK && img)
        ic_image_free(img);
    return st;
}

ic_status ic_jpeg_check_decode(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                               size_t errlen)
{
    /* The decoder's own source, a stdio stream over the bytes: libjpeg-turbo
     * reports a bad Huffman code only where its decoder takes the slow path,
     * near the end of the 4096-byte buffers the stdio source reads, so the
     * verdict on a corrupt file depends on where those buffers fall. */
    FILE *f = fmemopen((void *)(uintptr_t)data, n, "rb");
    if (!f)
        return ic_errf(err, errlen, errno == ENOMEM ? IC_ERR_NOMEM : IC_ERR_IO,
                       "cannot open a memory stream: %s", strerror(errno));
    const ic_status st = ic_jpeg_read(f, NULL, lim, NULL, err, errlen);
    fclose(f);
    return st;
}

/* IC_JPEG_CHECK_WALK=0 in the environment turns the walk off, for
 * measuring what it saves; read once. */
static int walk_wanted(void)
{
    static atomic_int wanted = -1;
    int w = atomic_load(&wanted);
    if (w < 0) {
        const char *env = getenv("IC_JPEG_CHECK_WALK");
        w = !(env && strcmp(env, "0") == 0);
        atomic_store(&wanted, w);
    }
    return w;
}

ic_status ic_jpeg_check(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                        size_t errlen)
{
    /* Most files are proven clean by the walk at a fraction of the decode's
     * cost; the rest get the decoder's verdict. */
    if (walk_wanted() && ic_jpeg_scan_clean(data, n, lim))
        return IC_OK;
    return ic_jpeg_check_decode(data, n, lim, err, errlen);
}

/* ---- writing ------------------------------------------------------------ */

/* The rows of img from y0 on, rows of them, as the JPEG of a rows-high image
 * with the settings every writer call uses (quality, 4:2:0 colour, the
 * standard Huffman tables), metadata (may be NULL) after JFIF's APP0, and
 * restart markers every restart_mcu_rows MCU rows (0: none). The entropy
 * coder pads the last byte of a scan with 1 bits as it does before a restart
 * marker (jchuff.c), and the downsampler looks at no row of another MCU row
 * (jcsample.c, without smoothing): a strip of whole MCU rows codes to exactly
 * the bytes that part of the image codes to after a restart marker.
 * *buf_out receives the row buffer of a channel conversion (the caller frees
 * it). Errors longjmp to je's jump, set here. */
static ic_status jpeg_encode(struct jpeg_compress_struct *cinfo, jpeg_err *je, const ic_image *img,
                             int y0, int rows, int out_ch, int quality, const ic_metadata *meta,
                             int restart_mcu_rows, uint8_t **buf_out, char *err, size_t errlen)
{
    cinfo->image_width = (JDIMENSION)img->width;
    cinfo->image_height = (JDIMENSION)rows;
    cinfo->input_components = out_ch;
    cinfo->in_color_space = out_ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
    cinfo->restart_in_rows = restart_mcu_rows;
    jpeg_start_compress(cinfo, TRUE);
    /* EXIF first (APP1 right after JFIF's APP0), then the ICC chunks (APP2).
     * A marker holds at most 65533 bytes: a larger EXIF block is left out. */
    if (meta && meta->exif && meta->exif_size + sizeof exif_id <= 65533) {
        jpeg_write_m_header(cinfo, JPEG_APP0 + 1, (unsigned int)(meta->exif_size + sizeof exif_id));
        for (size_t i = 0; i < sizeof exif_id; i++)
            jpeg_write_m_byte(cinfo, exif_id[i]);
        for (size_t i = 0; i < meta->exif_size; i++)
            jpeg_write_m_byte(cinfo, meta->exif[i]);
    }
    if (meta && meta->icc)
        jpeg_write_icc_profile(cinfo, meta->icc, (unsigned int)meta->icc_size);
    uint8_t *buf = NULL;
    if (out_ch != img->channels) {
        buf = malloc((size_t)img->width * (size_t)out_ch);
        if (!buf) {
            je->nomem = 1;
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        *buf_out = buf;
    }
    /* A few rows a call (libjpeg takes an MCU row at a time) unless they
     * are converted one by one. */
    JSAMPROW r[16];
    while (cinfo->next_scanline < cinfo->image_height) {
        const int y = (int)cinfo->next_scanline;
        int n = buf ? 1 : (int)(sizeof r / sizeof r[0]);
        if (n > rows - y)
            n = rows - y;
        for (int i = 0; i < n; i++)
            r[i] = img->data + (size_t)(y0 + y + i) * img->pitch;
        if (buf) {
            ic_io_convert_row(buf, out_ch, r[0], img->channels, img->width);
            r[0] = buf;
        }
        (void)jpeg_write_scanlines(cinfo, r, (JDIMENSION)n);
    }
    jpeg_finish_compress(cinfo);
    return IC_OK;
}

/* The whole image on this thread, straight to f (jpeg_encode's arguments).
 * The setjmp is here, apart from the caller's locals that libjpeg's error
 * may leave behind. */
static ic_status jpeg_write_guarded(struct jpeg_compress_struct *cinfo, jpeg_err *je, FILE *f,
                                    const ic_image *img, int out_ch, int quality,
                                    const ic_metadata *meta, int restart_mcu_rows,
                                    uint8_t **buf_out, char *err, size_t errlen)
{
    if (setjmp(je->jump))
        return jpeg_failure(je, f, "write", err, errlen);
    jpeg_create_compress(cinfo);
    jpeg_stdio_dest(cinfo, f);
    return jpeg_encode(cinfo, je, img, 0, img->height, out_ch, quality, meta, restart_mcu_rows,
                       buf_out, err, errlen);
}

static ic_status jpeg_write_one(FILE *f, const ic_image *img, int out_ch, int quality,
                                const ic_metadata *meta, int restart_mcu_rows, char *err,
                                size_t errlen)
{
    jpeg_err je;
    ic_jpeg_err_init(&je, NULL);
    struct jpeg_compress_struct cinfo;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &je.pub;
    uint8_t *buf = NULL;
    errno = 0;
    const ic_status st = jpeg_write_guarded(&cinfo, &je, f, img, out_ch, quality, meta,
                                            restart_mcu_rows, &buf, err, errlen);
    free(buf);
    jpeg_destroy_compress(&cinfo);
    return st;
}

/* ---- writing in strips on several threads ----------------------------------
 *
 * A large image is cut into horizontal strips of whole MCU rows, each coded
 * as a JPEG of its own on its own thread (same settings, no metadata but in
 * the first), and the strips are joined into one baseline JPEG with a
 * restart interval of one strip: the first strip's headers (its SOF given the
 * whole height) and a DRI marker, then each strip's entropy-coded data,
 * RST0, RST1, ... RST7, RST0, ... between them, and EOI. A decoder resets
 * its DC predictions at each restart marker as a fresh file starts with
 * them, so the file decodes to exactly the pixels of the one-thread file,
 * and it is byte for byte the file libjpeg writes itself with that restart
 * interval (tests/internal/test_jpeg_strips.c checks both). Nothing is
 * written to f before every strip is coded. */

/* Images of fewer pixels are coded on one thread. The strips are cut by
 * the image's size alone, never by the number of threads, so that every
 * thread count above one gives the same file: strips of at least
 * IC_JPEG_STRIP_PIXELS (a strip's set-up and its headers cost about what
 * coding a few thousand pixels does), at most IC_JPEG_MAX_STRIPS of them
 * (two each for the 16 cores of the GPU machine on a 24 MP photograph). */
#define IC_JPEG_STRIPS_MIN_PIXELS (1u << 20)
#define IC_JPEG_STRIP_PIXELS (1u << 18)
#define IC_JPEG_MAX_STRIPS 32

/* A growing memory buffer as libjpeg's destination, owned here (freed by
 * the caller also when libjpeg fails half way). */
typedef struct strip_dest {
    struct jpeg_destination_mgr pub; /* first: libjpeg sees only this part */
    uint8_t *data;
    size_t cap;
    size_t len; /* set when the stream is complete */
} strip_dest;

static void strip_dest_init(j_compress_ptr cinfo)
{
    strip_dest *d = (strip_dest *)cinfo->dest;
    d->pub.next_output_byte = d->data;
    d->pub.free_in_buffer = d->cap;
}

static boolean strip_dest_grow(j_compress_ptr cinfo)
{
    strip_dest *d = (strip_dest *)cinfo->dest;
    const size_t cap = d->cap * 2;
    uint8_t *p = cap > d->cap ? realloc(d->data, cap) : NULL;
    if (!p)
        ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
    d->pub.next_output_byte = p + d->cap; /* the whole old buffer was full */
    d->pub.free_in_buffer = cap - d->cap;
    d->data = p;
    d->cap = cap;
    return TRUE;
}

static void strip_dest_term(j_compress_ptr cinfo)
{
    strip_dest *d = (strip_dest *)cinfo->dest;
    d->len = d->cap - d->pub.free_in_buffer;
}

typedef struct strip_job strip_job;

/* One strip: its rows and, once coded, its JPEG (or its failure). */
typedef struct strip {
    int y0, rows;
    strip_dest dest;
    ic_status st;
    int nomem;
    char err[IC_IO_ERRLEN];
} strip;

struct strip_job {
    const ic_image *img;
    int out_ch, quality;
    const ic_metadata *meta; /* strip 0's */
    int fail_strip;          /* ic_jpeg_strips.fail_strip */
    int count;
    strip *strips;
    atomic_int next; /* the next strip to take */
};

/* Codes strip i into its buffer (setjmp apart, as jpeg_write_guarded). */
static ic_status strip_guarded(struct jpeg_compress_struct *cinfo, jpeg_err *je,
                               const strip_job *job, int i, uint8_t **buf_out)
{
    strip *s = &job->strips[i];
    if (setjmp(je->jump)) {
        s->nomem = je->nomem;
        return ic_errf(s->err, sizeof s->err, je->nomem ? IC_ERR_NOMEM : IC_ERR_IO, "JPEG: %s",
                       je->msg);
    }
    jpeg_create_compress(cinfo);
    if (job->fail_strip == i + 1 || job->fail_strip == -(i + 1)) /* tests */
        ERREXIT(cinfo, job->fail_strip > 0 ? JERR_BAD_DCT_COEF : JERR_OUT_OF_MEMORY);
    /* About what a photograph takes at high quality: rarely grown. */
    s->dest.cap = (size_t)job->img->width * (size_t)s->rows * (size_t)job->out_ch / 4 + 4096;
    s->dest.data = malloc(s->dest.cap);
    if (!s->dest.data)
        ERREXIT(cinfo, JERR_OUT_OF_MEMORY);
    s->dest.pub.init_destination = strip_dest_init;
    s->dest.pub.empty_output_buffer = strip_dest_grow;
    s->dest.pub.term_destination = strip_dest_term;
    cinfo->dest = &s->dest.pub;
    const ic_status st = jpeg_encode(cinfo, je, job->img, s->y0, s->rows, job->out_ch, job->quality,
                                     i == 0 ? job->meta : NULL, 0, buf_out, s->err, sizeof s->err);
    s->nomem = je->nomem;
    return st;
}

static void strip_code(const strip_job *job, int i)
{
    jpeg_err je;
    ic_jpeg_err_init(&je, NULL);
    struct jpeg_compress_struct cinfo;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &je.pub;
    uint8_t *buf = NULL;
    job->strips[i].st = strip_guarded(&cinfo, &je, job, i, &buf);
    free(buf);
    cinfo.dest = NULL; /* ours, not libjpeg's */
    jpeg_destroy_compress(&cinfo);
}

/* Takes strips until none is left. */
static void *strip_worker(void *arg)
{
    strip_job *job = arg;
    for (int i; (i = atomic_fetch_add(&job->next, 1)) < job->count;)
        strip_code(job, i);
    return NULL;
}

static unsigned be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* Where a coded strip's SOF and SOS markers and its entropy-coded data
 * start; the data ends before the EOI marker that ends the stream. 0 when
 * the stream is not laid out so (never from libjpeg). */
static int strip_layout(const strip_dest *d, size_t *sof, size_t *sos, size_t *data)
{
    const uint8_t *p = d->data;
    const size_t n = d->len;
    *sof = 0;
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8 || p[n - 2] != 0xFF || p[n - 1] != 0xD9)
        return 0;
    for (size_t i = 2; i + 4 <= n && p[i] == 0xFF;) {
        const size_t len = be16(p + i + 2);
        if (len < 2 || i + 2 + len > n - 2)
            return 0;
        if (p[i + 1] == 0xC0 || p[i + 1] == 0xC1)
            *sof = i;
        if (p[i + 1] == 0xDA) {
            *sos = i;
            *data = i + 2 + len;
            return *sof != 0 && len >= 2 + 5;
        }
        i += 2 + len;
    }
    return 0;
}

/* Joins the coded strips into f (see above). */
static ic_status strips_join(FILE *f, const strip_job *job, int interval, int height, char *err,
                             size_t errlen)
{
    size_t sof, sos, data;
    strip *s0 = &job->strips[0];
    if (!strip_layout(&s0->dest, &sof, &sos, &data))
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "JPEG: a strip without SOF or SOS");
    const size_t sos_len = data - sos;
    s0->dest.data[sof + 5] = (uint8_t)(height >> 8);
    s0->dest.data[sof + 6] = (uint8_t)height;
    const uint8_t dri[6] = {0xFF, 0xDD, 0, 4, (uint8_t)(interval >> 8), (uint8_t)interval};
    errno = 0;
    int ok = fwrite(s0->dest.data, 1, sos, f) == sos && fwrite(dri, 1, sizeof dri, f) == sizeof dri;
    for (int i = 0; ok && i < job->count; i++) {
        const strip_dest *d = &job->strips[i].dest;
        size_t from = sos;
        if (i > 0) {
            size_t ssof, ssos, sdata;
            if (!strip_layout(d, &ssof, &ssos, &sdata) || sdata - ssos != sos_len ||
                memcmp(d->data + ssos, s0->dest.data + sos, sos_len) != 0)
                return ic_errf(err, errlen, IC_ERR_INTERNAL, "JPEG: strip %d differs in its SOS",
                               i);
            const uint8_t rst[2] = {0xFF, (uint8_t)(0xD0 + (i - 1) % 8)};
            ok = fwrite(rst, 1, 2, f) == 2;
            from = sdata;
        }
        const size_t n = d->len - 2 - from; /* up to the EOI */
        ok = ok && fwrite(d->data + from, 1, n, f) == n;
    }
    const uint8_t eoi[2] = {0xFF, 0xD9};
    if (!ok || fwrite(eoi, 1, 2, f) != 2)
        return ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
    return IC_OK;
}

/* The strip height, in MCU rows (o->strip_rows: asked for), 0 for one
 * thread. The restart interval, MCUs per row times that, fits JPEG's 16
 * bits. */
static int strip_mcu_rows(const ic_image *img, int out_ch, const ic_jpeg_strips *o)
{
    if (!o || o->threads <= 1)
        return 0;
    const int mcu = out_ch == 1 ? 8 : 16; /* 4:2:0 colour */
    const int mcu_rows = (img->height + mcu - 1) / mcu;
    const int per_row = (img->width + mcu - 1) / mcu;
    const int most = 65535 / per_row;
    int k;
    if (o->strip_rows > 0) {
        if (o->strip_rows % mcu != 0)
            return 0;
        k = o->strip_rows / mcu;
    } else {
        const uint64_t pixels = (uint64_t)img->width * (uint64_t)img->height;
        if (pixels < IC_JPEG_STRIPS_MIN_PIXELS)
            return 0;
        uint64_t n = pixels / IC_JPEG_STRIP_PIXELS;
        if (n > IC_JPEG_MAX_STRIPS)
            n = IC_JPEG_MAX_STRIPS;
        k = (int)((mcu_rows + n - 1) / n);
    }
    if (k > most)
        k = most;
    return k >= 1 && mcu_rows > k ? k : 0;
}

/* Codes img in strips on up to o->threads threads, this one included, and
 * joins them into f. 0 when it did not start (one strip, no memory, no
 * thread): the caller codes the image on its own then; 1 with *st the
 * outcome otherwise. */
static int jpeg_write_strips(FILE *f, const ic_image *img, int out_ch, int quality,
                             const ic_metadata *meta, const ic_jpeg_strips *o, ic_status *st,
                             char *err, size_t errlen)
{
    const int k = strip_mcu_rows(img, out_ch, o);
    if (k == 0)
        return 0;
    const int mcu = out_ch == 1 ? 8 : 16;
    const int per_row = (img->width + mcu - 1) / mcu; /* MCUs */
    const int rows = k * mcu;
    const int count = (img->height + rows - 1) / rows;
    strip_job job;
    memset(&job, 0, sizeof job);
    job.img = img;
    job.out_ch = out_ch;
    job.quality = quality;
    job.meta = meta;
    job.count = count;
    job.fail_strip = o->fail_strip;
    atomic_init(&job.next, 0);
    const int helpers = (o->threads < count ? o->threads : count) - 1;
    job.strips = calloc((size_t)count, sizeof *job.strips);
    pthread_t *th = calloc((size_t)helpers, sizeof *th);
    if (!job.strips || !th) {
        free(job.strips);
        free(th);
        return 0;
    }
    for (int i = 0; i < count; i++) {
        job.strips[i].y0 = i * rows;
        job.strips[i].rows = i + 1 < count ? rows : img->height - i * rows;
    }
    /* Tests: max_helpers -1 is a thread that cannot be started. */
    const int most = o->max_helpers < 0                               ? 0
                     : o->max_helpers > 0 && o->max_helpers < helpers ? o->max_helpers
                                                                      : helpers;
    int made = 0;
    while (made < most && pthread_create(&th[made], NULL, strip_worker, &job) == 0)
        made++;
    int done = 0;
    if (made > 0) {
        (void)strip_worker(&job);
        for (int t = 0; t < made; t++)
            pthread_join(th[t], NULL);
        /* Memory ran out in a strip: the one-thread path needs less. */
        int nomem = 0;
        for (int i = 0; i < count; i++)
            nomem |= job.strips[i].nomem;
        if (!nomem) {
            done = 1;
            *st = IC_OK;
            for (int i = 0; i < count && *st == IC_OK; i++)
                if (job.strips[i].st != IC_OK)
                    *st = ic_errf(err, errlen, job.strips[i].st, "%s", job.strips[i].err);
            if (*st == IC_OK)
                *st = strips_join(f, &job, k * per_row, img->height, err, errlen);
        }
    }
    for (int i = 0; i < count; i++)
        free(job.strips[i].dest.data);
    free(job.strips);
    free(th);
    return done;
}

ic_status ic_jpeg_write(FILE *f, const ic_image *img, int out_ch, int quality,
                        const ic_metadata *meta, const ic_jpeg_strips *strips, char *err,
                        size_t errlen)
{
    if (out_ch != 1 && out_ch != 3) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "JPEG stores 1 or 3 channels, not %d", out_ch);
    }
    if (img->width > JPEG_MAX_DIMENSION || img->height > JPEG_MAX_DIMENSION) {
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "JPEG cannot store images over %ld pixels per side (%dx%d)",
                       (long)JPEG_MAX_DIMENSION, img->width, img->height);
    }
    ic_status st;
    if (jpeg_write_strips(f, img, out_ch, quality, meta, strips, &st, err, errlen))
        return st;
    return jpeg_write_one(f, img, out_ch, quality, meta, strips ? strips->restart_mcu_rows : 0, err,
                          errlen);
}

#else /* !IC_HAVE_JPEG */

ic_status ic_jpeg_read_metadata(const uint8_t *data, size_t n, ic_metadata *meta)
{
    (void)data;
    (void)n;
    memset(meta, 0, sizeof *meta);
    return ic_fail(IC_ERR_UNSUPPORTED, "built without JPEG support");
}

ic_status ic_jpeg_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta,
                       char *err, size_t errlen)
{
    (void)f;
    (void)lim;
    (void)meta;
    if (img)
        memset(img, 0, sizeof *img);
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without JPEG support");
}

ic_status ic_jpeg_write(FILE *f, const ic_image *img, int out_ch, int quality,
                        const ic_metadata *meta, const ic_jpeg_strips *strips, char *err,
                        size_t errlen)
{
    (void)f;
    (void)img;
    (void)out_ch;
    (void)quality;
    (void)meta;
    (void)strips;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without JPEG support");
}

ic_status ic_jpeg_check_decode(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                               size_t errlen)
{
    (void)data;
    (void)n;
    (void)lim;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without JPEG support");
}

ic_status ic_jpeg_check(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                        size_t errlen)
{
    return ic_jpeg_check_decode(data, n, lim, err, errlen);
}

#endif /* IC_HAVE_JPEG */
