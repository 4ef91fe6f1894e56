/*
 * pfm.c - Portable Float Map images: "PF" (RGB) and "Pf" (grey) with 32-bit
 * IEEE float samples, read into and written from IC_F32 images (no library).
 *
 * The header is "PF" or "Pf", whitespace, the width and height as decimal
 * numbers, whitespace, the scale as a decimal real, then exactly one
 * whitespace byte and width*height*channels floats. A negative scale means
 * little-endian samples, a positive one big-endian; its magnitude is not
 * applied (samples load as stored). Rows are stored bottom to top. Parsing
 * is strict: bounded tokens, the pixel and memory limits checked before
 * anything is allocated, short data an error naming the byte counts.
 * Written with scale -1 (little-endian) or 1 (big-endian) by the host's order.
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

/* Longest header token read (a scale such as "-1.000000" fits easily). */
#define PFM_TOKEN_MAX 32

static int is_space(int c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f';
}

/* Reads one whitespace-delimited token into buf; returns the character that
 * ended it (consumed), or -2 when the token is empty or too long. */
static int read_token(FILE *f, char *buf, size_t n)
{
    int c;
    do
        c = getc(f);
    while (is_space(c));
    size_t len = 0;
    while (c != EOF && !is_space(c)) {
        if (len + 1 >= n)
            return -2;
        buf[len++] = (char)c;
        c = getc(f);
    }
    buf[len] = '\0';
    return len ? c : -2;
}

/* A decimal size 1..IC_MAX_DIM (larger numbers are capped at IC_MAX_DIM + 1
 * for the limit check's message); 0 when malformed. */
static uint64_t parse_size(const char *s)
{
    uint64_t v = 0;
    if (!*s)
        return 0;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return 0;
        v = v * 10u + (uint64_t)(*s - '0');
        if (v > IC_MAX_DIM)
            v = (uint64_t)IC_MAX_DIM + 1u;
    }
    return v;
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

static void swap4(uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i += 4) {
        uint8_t t = p[i];
        p[i] = p[i + 3];
        p[i + 3] = t;
        t = p[i + 1];
        p[i + 1] = p[i + 2];
        p[i + 2] = t;
    }
}

ic_status ic_pfm_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen)
{
    (void)meta; /* PFM has no metadata */
    memset(img, 0, sizeof *img);
    char tok[PFM_TOKEN_MAX];
    int end = read_token(f, tok, sizeof tok);
    if (end < 0 || (strcmp(tok, "PF") != 0 && strcmp(tok, "Pf") != 0))
        return ic_errf(err, errlen, IC_ERR_FORMAT, "PFM: not a PF or Pf header");
    const int channels = tok[1] == 'F' ? 3 : 1;
    char ws[PFM_TOKEN_MAX], hs[PFM_TOKEN_MAX], ss[PFM_TOKEN_MAX];
    if (read_token(f, ws, sizeof ws) < 0 || read_token(f, hs, sizeof hs) < 0)
        return ic_errf(err, errlen, IC_ERR_FORMAT, "PFM: truncated or malformed header");
    end = read_token(f, ss, sizeof ss);
    const uint64_t w = parse_size(ws), h = parse_size(hs);
    if (end < 0 || w == 0 || h == 0)
        return ic_errf(err, errlen, IC_ERR_FORMAT, "PFM: malformed size or scale in the header");
    char *stop = NULL;
    errno = 0;
    const double scale = strtod(ss, &stop);
    if (*stop != '\0' || errno != 0 || !isfinite(scale) || scale == 0.0)
        return ic_errf(err, errlen, IC_ERR_FORMAT,
                       "PFM: the scale \"%s\" is not a finite nonzero number", ss);
    if (!is_space(end)) /* exactly one whitespace byte ends the header */
        return ic_errf(err, errlen, IC_ERR_FORMAT, "PFM: no whitespace after the scale");
    ic_status st = ic_io_check_dims_type(w, h, channels, IC_F32, lim, err, errlen);
    if (st != IC_OK)
        return st;
    st = ic_image_create_type(img, (int)w, (int)h, channels, IC_AOS, IC_F32);
    if (st != IC_OK)
        return ic_errf(err, errlen, st, "cannot allocate a %llux%llu image: %s",
                       (unsigned long long)w, (unsigned long long)h, ic_status_str(st));
    const size_t row = ic_image_row_bytes(img);
    const int swap = (scale < 0) != host_little_endian();
    for (int y = 0; y < img->height; y++) {
        uint8_t *dst = img->data + (size_t)(img->height - 1 - y) * img->pitch; /* bottom up */
        const size_t got = fread(dst, 1, row, f);
        if (got != row) {
            const int io = ferror(f);
            ic_image_free(img);
            if (io)
                return ic_errf(err, errlen, IC_ERR_IO, "PFM: read error: %s", strerror(errno));
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "PFM: truncated data (%llu of %llu bytes of samples)",
                           (unsigned long long)((uint64_t)y * row + got),
                           (unsigned long long)((uint64_t)row * (uint64_t)img->height));
        }
        if (swap)
            swap4(dst, row);
    }
    return IC_OK;
}

ic_status ic_pfm_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen)
{
    if (img->type != IC_F32 || (out_ch != 1 && out_ch != 3))
        return ic_errf(err, errlen, IC_ERR_INTERNAL, "PFM writes float32 grey or RGB");
    if (fprintf(f, "P%c\n%d %d\n%s\n", out_ch == 3 ? 'F' : 'f', img->width, img->height,
                host_little_endian() ? "-1.0" : "1.0") < 0)
        return ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
    const size_t row = (size_t)img->width * (size_t)out_ch * sizeof(float);
    float *buf = malloc(row);
    if (!buf)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    ic_status st = IC_OK;
    for (int y = img->height - 1; st == IC_OK && y >= 0; y--) { /* bottom up */
        const uint8_t *src = img->data + (size_t)y * img->pitch;
        if (out_ch != img->channels)
            ic_io_convert_row_type(buf, out_ch, src, img->channels, img->width, IC_F32);
        else
            memcpy(buf, src, row);
        if (fwrite(buf, 1, row, f) != row)
            st = ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
    }
    free(buf);
    return st;
}
