/*
 * pnm.c - binary Netpbm images: PGM (P5, grey) and PPM (P6, RGB) with 8-bit
 * samples (maxval <= 255) or 16-bit big-endian ones (maxval 256..65535), read
 * and written by us (no library).
 *
 * The header is "P5"|"P6", then width, height and maxval as decimal numbers
 * separated by whitespace, '#' comments allowed between them, then exactly one
 * whitespace byte and width*height*channels samples of 1 byte (maxval <= 255)
 * or 2 bytes, most significant first (maxval > 255). Parsing is strict: numbers
 * are digits only with an overflow check, the pixel limit is checked before
 * anything is allocated, and short data is an error naming the byte counts.
 * A sample v means v/maxval of full scale (the Netpbm definition): maxval 255
 * loads as it is into 8 bits, 65535 into 16 bits; any other maxval M is
 * rescaled to round(v * 255 / M) (M < 255) or round(v * 65535 / M) (M > 255).
 * 16-bit images are written with maxval 65535, 8-bit ones with 255.
 * (No seed figure: seed 004 loads files through a library.)
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

/* Numbers larger than this are reported as too large without further parsing. */
#define PNM_NUMBER_CAP 0xFFFFFFFFull

static int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Skips whitespace and comments before a header number. Returns the first
 * character of the number (not consumed: pushed back) or EOF. */
static int skip_space(FILE *f)
{
    for (;;) {
        int c = getc(f);
        if (c == '#') {
            do
                c = getc(f);
            while (c != '\n' && c != '\r' && c != EOF);
            if (c == EOF)
                return EOF;
            continue;
        }
        if (is_space(c))
            continue;
        if (c != EOF)
            ungetc(c, f);
        return c;
    }
}

/* Reads one header number into *v (capped at PNM_NUMBER_CAP + 1) and returns
 * the character that ended it (consumed), or -2 when no digit was found. */
static int read_number(FILE *f, uint64_t *v)
{
    int c = skip_space(f);
    if (c == EOF || c < '0' || c > '9')
        return c == EOF ? EOF : -2;
    uint64_t n = 0;
    while ((c = getc(f)) >= '0' && c <= '9') {
        if (n <= PNM_NUMBER_CAP)
            n = n * 10 + (uint64_t)(c - '0');
    }
    *v = n;
    return c;
}

ic_status ic_pnm_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen)
{
    (void)meta; /* Netpbm has no place for a profile or EXIF */
    memset(img, 0, sizeof *img);
    int p = getc(f), kind = getc(f);
    if (p != 'P' || (kind != '5' && kind != '6')) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "not a binary PGM/PPM file");
    }
    const char *name = kind == '5' ? "PGM" : "PPM";
    const int channels = kind == '5' ? 1 : 3;
    int sep = getc(f);
    if (!is_space(sep) && sep != '#') {
        return ic_errf(err, errlen, IC_ERR_FORMAT,
                       sep == EOF ? "truncated %s header" : "bad %s header", name);
    }
    ungetc(sep, f);

    static const char *const what[3] = {"width", "height", "maxval"};
    uint64_t val[3] = {0, 0, 0};
    for (int i = 0; i < 3; i++) {
        int end = read_number(f, &val[i]);
        if (end == EOF && ferror(f)) {
            return ic_errf(err, errlen, IC_ERR_IO, "read error: %s", strerror(errno));
        }
        if (end == -2) {
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "bad %s header: expected the %s as a decimal number", name, what[i]);
        }
        if (end == EOF) {
            return ic_errf(err, errlen, IC_ERR_FORMAT, "truncated %s header", name);
        }
        /* A number ends at whitespace (a comment may follow width and height);
         * maxval is followed by exactly one whitespace byte, then the data. */
        if (!is_space(end) && !(i < 2 && end == '#')) {
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "bad %s header: unexpected character after the %s", name, what[i]);
        }
        if (end == '#')
            ungetc(end, f);
        if (val[i] > PNM_NUMBER_CAP && i < 2) {
            return ic_errf(err, errlen, IC_ERR_TOO_LARGE, "%s %s is too large", name, what[i]);
        }
    }
    const uint64_t width = val[0], height = val[1], maxval = val[2];
    if (maxval == 0 || maxval > 65535) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "bad %s maxval %llu (must be 1..65535)", name,
                       (unsigned long long)maxval);
    }
    const ic_sample_type type = maxval > 255 ? IC_U16 : IC_U8;
    ic_status st = ic_io_check_dims_type(width, height, channels, type, lim, err, errlen);
    if (st != IC_OK)
        return st;

    st = ic_image_create_type(img, (int)width, (int)height, channels, IC_AOS, type);
    if (st != IC_OK) {
        return ic_errf(err, errlen, st, "cannot allocate a %llux%llu image: %s",
                       (unsigned long long)width, (unsigned long long)height, ic_status_str(st));
    }
    const size_t samples = (size_t)width * (size_t)channels;
    const size_t row = samples * ic_sample_size(type);
    const uint64_t expected = (uint64_t)row * height;
    uint64_t got = 0;
    for (uint64_t y = 0; y < height; y++) {
        uint8_t *dst = img->data + (size_t)y * img->pitch;
        size_t n = fread(dst, 1, row, f);
        got += n;
        if (n == row)
            continue;
        if (ferror(f)) {
            ic_errf(err, errlen, IC_ERR_IO, "read error: %s", strerror(errno));
            st = IC_ERR_IO;
        } else {
            ic_errf(err, errlen, IC_ERR_FORMAT, "truncated %s data (expected %llu bytes, got %llu)",
                    name, (unsigned long long)expected, (unsigned long long)got);
            st = IC_ERR_FORMAT;
        }
        ic_image_free(img);
        return st;
    }
    if (maxval == 255 || maxval == 65535) {
        if (type == IC_U16)
            for (int y = 0; y < img->height; y++) {
                uint8_t *r = img->data + (size_t)y * img->pitch;
                ic_io_be16_load((uint16_t *)(void *)r, r, samples);
            }
        return IC_OK;
    }
    /* Other maxvals: v of maxval M is the fraction v/M of full scale (the
     * Netpbm definition), stored as round(v * max / M) of the type's max. */
    const uint64_t max = ic_sample_max(type), m = maxval;
    for (int y = 0; y < img->height; y++) {
        uint8_t *r = img->data + (size_t)y * img->pitch;
        uint16_t *r16 = (uint16_t *)(void *)r;
        if (type == IC_U16)
            ic_io_be16_load(r16, r, samples);
        for (size_t i = 0; i < samples; i++) {
            const uint64_t v = type == IC_U16 ? r16[i] : r[i];
            if (v > m) {
                ic_image_free(img);
                return ic_errf(err, errlen, IC_ERR_FORMAT,
                               "bad %s data: sample %u exceeds maxval %llu", name, (unsigned)v,
                               (unsigned long long)m);
            }
            const uint64_t scaled = (v * max + m / 2u) / m;
            if (type == IC_U16)
                r16[i] = (uint16_t)scaled;
            else
                r[i] = (uint8_t)scaled;
        }
    }
    return IC_OK;
}

ic_status ic_pnm_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen)
{
    if (out_ch != 1 && out_ch != 3) {
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "PNM stores 1 or 3 channels, not %d", out_ch);
    }
    const int wide = img->type == IC_U16;
    const size_t samples = (size_t)img->width * (size_t)out_ch;
    const size_t row = samples * (wide ? 2u : 1u);
    /* a converted row (channels), then its big-endian bytes (16 bits) */
    uint8_t *buf = NULL, *be = NULL;
    if (out_ch != img->channels)
        buf = malloc(row);
    if (wide)
        be = malloc(row);
    if ((out_ch != img->channels && !buf) || (wide && !be)) {
        free(buf);
        free(be);
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    ic_status st = IC_OK;
    if (fprintf(f, "P%c\n%d %d\n%u\n", out_ch == 1 ? '5' : '6', img->width, img->height,
                ic_sample_max(img->type)) < 0)
        st = IC_ERR_IO;
    for (int y = 0; st == IC_OK && y < img->height; y++) {
        const uint8_t *src = img->data + (size_t)y * img->pitch;
        if (buf) {
            ic_io_convert_row_type(buf, out_ch, src, img->channels, img->width, img->type);
            src = buf;
        }
        if (wide) {
            ic_io_be16_store(be, (const uint16_t *)(const void *)src, samples);
            src = be;
        }
        if (fwrite(src, 1, row, f) != row)
            st = IC_ERR_IO;
    }
    if (st != IC_OK)
        ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno));
    free(buf);
    free(be);
    return st;
}
