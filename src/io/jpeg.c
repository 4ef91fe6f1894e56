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
 * number of scans. Writing stores grey or RGB at a quality of 1..100.
 * Built only with IC_HAVE_JPEG; otherwise every entry point reports
 * IC_ERR_UNSUPPORTED. (No seed figure: seed 004 loads files through a library.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_JPEG

#include <setjmp.h>
/* jpeglib.h needs FILE and size_t declared first (stdio.h above). */
#include <jpeglib.h>
#include <jerror.h>

/* Progressive JPEGs with thousands of scans decode very slowly; real files use
 * about ten. The limit follows libjpeg-turbo's own recommendation. */
#define JPEG_MAX_SCANS 500

typedef struct jpeg_err {
    struct jpeg_error_mgr pub; /* first: libjpeg sees only this part */
    jmp_buf jump;
    int truncated; /* the data ended early (JWRN_JPEG_EOF) */
    int nomem;
    char msg[JMSG_LENGTH_MAX + 32];
} jpeg_err;

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

static void on_emit_message(j_common_ptr cinfo, int level)
{
    if (level >= 0)
        return; /* trace messages */
    switch (cinfo->err->msg_code) {
    case JWRN_JPEG_EOF:
    case JWRN_HIT_MARKER:
    case JWRN_MUST_RESYNC:
    case JWRN_HUFF_BAD_CODE:
    case JWRN_ARITH_BAD_CODE:
    case JWRN_NOT_SEQUENTIAL:
    case JWRN_BOGUS_PROGRESSION:
        on_error_exit(cinfo); /* does not return */
        break;
    default:
        cinfo->err->num_warnings++; /* harmless (unknown JFIF version, ...) */
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

static void init_err(jpeg_err *e)
{
    memset(e, 0, sizeof *e);
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
    st =
        ic_image_create(img, (int)cinfo->output_width, (int)cinfo->output_height, channels, IC_AOS);
    if (st != IC_OK) {
        return ic_errf(err, errlen, st, "cannot allocate a %ux%u image: %s",
                       (unsigned)cinfo->output_width, (unsigned)cinfo->output_height,
                       ic_status_str(st));
    }
    uint8_t *buf = NULL;
    if (cmyk) {
        buf = malloc((size_t)cinfo->output_width * 4u);
        if (!buf) {
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        *buf_out = buf;
    }
    while (cinfo->output_scanline < cinfo->output_height) {
        uint8_t *row = img->data + (size_t)cinfo->output_scanline * img->pitch;
        JSAMPROW r = buf ? buf : row;
        if (jpeg_read_scanlines(cinfo, &r, 1) != 1) {
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "truncated JPEG data (premature end of file)");
        }
        if (buf)
            cmyk_to_rgb(row, buf, img->width, cinfo->saw_Adobe_marker);
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

/* A decompressor reporting to je, before jpeg_create_decompress. */
static void decompress_init(struct jpeg_decompress_struct *cinfo, jpeg_err *je)
{
    init_err(je);
    memset(cinfo, 0, sizeof *cinfo);
    cinfo->err = &je->pub;
}

ic_status ic_jpeg_read_metadata(const uint8_t *data, size_t n, ic_metadata *meta)
{
    memset(meta, 0, sizeof *meta);
    jpeg_err je;
    struct jpeg_decompress_struct cinfo;
    decompress_init(&cinfo, &je);
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
    decompress_init(&cinfo, &je);
    struct jpeg_progress_mgr progress;
    memset(&progress, 0, sizeof progress);
    progress.progress_monitor = on_progress;
    cinfo.client_data = &progress;
    uint8_t *buf = NULL;
    errno = 0;
    ic_status st = jpeg_decode(&cinfo, &je, f, img, lim, meta, &buf, err, errlen);
    free(buf);
    jpeg_destroy_decompress(&cinfo);
    if (st != IC_OK && img)
        ic_image_free(img);
    return st;
}

ic_status ic_jpeg_check(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
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

static ic_status jpeg_encode(struct jpeg_compress_struct *cinfo, jpeg_err *je, FILE *f,
                             const ic_image *img, int out_ch, int quality, const ic_metadata *meta,
                             uint8_t **buf_out, char *err, size_t errlen)
{
    if (setjmp(je->jump))
        return jpeg_failure(je, f, "write", err, errlen);

    jpeg_create_compress(cinfo);
    jpeg_stdio_dest(cinfo, f);
    cinfo->image_width = (JDIMENSION)img->width;
    cinfo->image_height = (JDIMENSION)img->height;
    cinfo->input_components = out_ch;
    cinfo->in_color_space = out_ch == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(cinfo);
    jpeg_set_quality(cinfo, quality, TRUE);
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
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        }
        *buf_out = buf;
    }
    while (cinfo->next_scanline < cinfo->image_height) {
        uint8_t *src = img->data + (size_t)cinfo->next_scanline * img->pitch;
        if (buf) {
            ic_io_convert_row(buf, out_ch, src, img->channels, img->width);
            src = buf;
        }
        JSAMPROW r = src;
        (void)jpeg_write_scanlines(cinfo, &r, 1);
    }
    jpeg_finish_compress(cinfo);
    return IC_OK;
}

ic_status ic_jpeg_write(FILE *f, const ic_image *img, int out_ch, int quality,
                        const ic_metadata *meta, char *err, size_t errlen)
{
    if (out_ch != 1 && out_ch != 3) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "JPEG stores 1 or 3 channels, not %d", out_ch);
    }
    if (img->width > JPEG_MAX_DIMENSION || img->height > JPEG_MAX_DIMENSION) {
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "JPEG cannot store images over %ld pixels per side (%dx%d)",
                       (long)JPEG_MAX_DIMENSION, img->width, img->height);
    }
    jpeg_err je;
    init_err(&je);
    struct jpeg_compress_struct cinfo;
    memset(&cinfo, 0, sizeof cinfo);
    cinfo.err = &je.pub;
    uint8_t *buf = NULL;
    errno = 0;
    ic_status st = jpeg_encode(&cinfo, &je, f, img, out_ch, quality, meta, &buf, err, errlen);
    free(buf);
    jpeg_destroy_compress(&cinfo);
    return st;
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
                        const ic_metadata *meta, char *err, size_t errlen)
{
    (void)f;
    (void)img;
    (void)out_ch;
    (void)quality;
    (void)meta;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without JPEG support");
}

ic_status ic_jpeg_check(const uint8_t *data, size_t n, const ic_io_limits *lim, char *err,
                        size_t errlen)
{
    (void)data;
    (void)n;
    (void)lim;
    return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "built without JPEG support");
}

#endif /* IC_HAVE_JPEG */
