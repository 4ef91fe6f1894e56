/*
 * npy.c - NumPy .npy arrays (format versions 1.0, 2.0 and 3.0): images of
 * shape (H, W) or (H, W, C), C = 1..4, of uint8, uint16 or float32 samples in
 * C order, read into and written from IC_U8, IC_U16 and IC_F32 images (no
 * library).
 *
 * A file is the magic "\x93NUMPY", two version bytes, the header's length
 * (2 bytes little-endian in 1.0, 4 in 2.0 and 3.0), the header, a Python dict
 * literal such as {'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }
 * padded with spaces and a newline, then the samples. The header is parsed
 * strictly (bounded length, the three keys exactly once, nothing else) and
 * the limits are checked before anything is allocated. Written as version
 * 1.0 in the host's byte order, the header padded to a multiple of 64 bytes
 * as NumPy pads it; a 1-channel image is written with shape (H, W).
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

/* Longest header read: NumPy's own limit for untrusted files is 10000. */
#define NPY_HEADER_MAX 10000

static const char npy_magic[6] = {(char)0x93, 'N', 'U', 'M', 'P', 'Y'};

static int host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* The header being parsed: text and position. */
typedef struct npy_parser {
    const char *s;
    size_t n, i;
} npy_parser;

static void skip_ws(npy_parser *p)
{
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\n' || p->s[p->i] == '\t'))
        p->i++;
}

/* Consumes c (after whitespace); 1 when it was there. */
static int eat(npy_parser *p, char c)
{
    skip_ws(p);
    if (p->i < p->n && p->s[p->i] == c) {
        p->i++;
        return 1;
    }
    return 0;
}

/* A quoted string (' or ") of at most n-1 characters into out; 1 on success. */
static int parse_string(npy_parser *p, char *out, size_t n)
{
    skip_ws(p);
    if (p->i >= p->n || (p->s[p->i] != '\'' && p->s[p->i] != '"'))
        return 0;
    const char q = p->s[p->i++];
    size_t len = 0;
    while (p->i < p->n && p->s[p->i] != q) {
        if (len + 1 >= n || p->s[p->i] == '\\')
            return 0;
        out[len++] = p->s[p->i++];
    }
    if (p->i >= p->n)
        return 0;
    p->i++;
    out[len] = '\0';
    return 1;
}

/* True or False into *v; 1 on success. */
static int parse_bool(npy_parser *p, int *v)
{
    skip_ws(p);
    if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "True", 4)) {
        p->i += 4;
        *v = 1;
        return 1;
    }
    if (p->n - p->i >= 5 && !memcmp(p->s + p->i, "False", 5)) {
        p->i += 5;
        *v = 0;
        return 1;
    }
    return 0;
}

/* A tuple of up to 4 non-negative integers (each capped at IC_MAX_DIM + 1)
 * into dims, its length into *nd; 1 on success. */
static int parse_shape(npy_parser *p, uint64_t dims[4], int *nd)
{
    *nd = 0;
    if (!eat(p, '('))
        return 0;
    for (;;) {
        if (eat(p, ')'))
            return 1;
        skip_ws(p);
        if (p->i >= p->n || p->s[p->i] < '0' || p->s[p->i] > '9' || *nd == 4)
            return 0;
        uint64_t v = 0;
        while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
            v = v * 10u + (uint64_t)(p->s[p->i++] - '0');
            if (v > IC_MAX_DIM)
                v = (uint64_t)IC_MAX_DIM + 1u;
        }
        dims[(*nd)++] = v;
        if (!eat(p, ',')) {
            return eat(p, ')');
        }
    }
}

/* The three keys of the header dict (one line in err on failure). */
static ic_status parse_header(const char *s, size_t n, char descr[8], int *fortran,
                              uint64_t dims[4], int *nd, char *err, size_t errlen)
{
    npy_parser p = {s, n, 0};
    int seen = 0; /* bits: descr, fortran_order, shape */
    if (!eat(&p, '{'))
        return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: the header is not a dict");
    while (!eat(&p, '}')) {
        char key[16];
        int bit = -1, ok = 0;
        if (parse_string(&p, key, sizeof key) && eat(&p, ':')) {
            if (!strcmp(key, "descr")) {
                bit = 1;
                ok = parse_string(&p, descr, 8);
            } else if (!strcmp(key, "fortran_order")) {
                bit = 2;
                ok = parse_bool(&p, fortran);
            } else if (!strcmp(key, "shape")) {
                bit = 4;
                ok = parse_shape(&p, dims, nd);
            }
        }
        if (!ok || (seen & bit))
            return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: malformed header dict");
        seen |= bit;
        if (!eat(&p, ',')) {
            if (!eat(&p, '}'))
                return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: malformed header dict");
            break;
        }
    }
    skip_ws(&p);
    if (seen != 7 || p.i != p.n)
        return ic_errf(err, errlen, IC_ERR_FORMAT,
                       "npy: the header needs descr, fortran_order and shape, and nothing after");
    return IC_OK;
}

/* Sample type and byte order of a descr; 0 when not an image type. */
static int descr_type(const char *d, ic_sample_type *type, int *little)
{
    const char order = d[0];
    const char *t = (order == '<' || order == '>' || order == '|' || order == '=') ? d + 1 : d;
    *little = order == '>' ? 0 : order == '<' ? 1 : host_little_endian();
    if (!strcmp(t, "u1"))
        *type = IC_U8;
    else if (!strcmp(t, "u2"))
        *type = IC_U16;
    else if (!strcmp(t, "f4"))
        *type = IC_F32;
    else
        return 0;
    return 1;
}

static void swap_bytes(uint8_t *p, size_t n, size_t es)
{
    for (size_t i = 0; i + es <= n; i += es)
        for (size_t a = 0, b = es - 1; a < b; a++, b--) {
            const uint8_t t = p[i + a];
            p[i + a] = p[i + b];
            p[i + b] = t;
        }
}

ic_status ic_npy_read(FILE *f, ic_image *img, const ic_io_limits *lim, ic_metadata *meta, char *err,
                      size_t errlen)
{
    (void)meta; /* .npy has no metadata */
    memset(img, 0, sizeof *img);
    uint8_t pre[12];
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, npy_magic, 6) != 0)
        return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: truncated or not a .npy file");
    const int major = pre[6];
    uint64_t hlen;
    if (major == 1) {
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8;
    } else if (major == 2 || major == 3) {
        if (fread(pre + 10, 1, 2, f) != 2)
            return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: truncated header");
        hlen = (uint64_t)pre[8] | (uint64_t)pre[9] << 8 | (uint64_t)pre[10] << 16 |
               (uint64_t)pre[11] << 24;
    } else {
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "npy: format version %d is not supported",
                       major);
    }
    if (hlen == 0 || hlen > NPY_HEADER_MAX)
        return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: header of %llu bytes (1..%d accepted)",
                       (unsigned long long)hlen, NPY_HEADER_MAX);
    char *h = malloc((size_t)hlen);
    if (!h)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    if (fread(h, 1, (size_t)hlen, f) != (size_t)hlen) {
        free(h);
        return ic_errf(err, errlen, IC_ERR_FORMAT, "npy: truncated header");
    }
    char descr[8] = "";
    int fortran = 0, nd = 0;
    uint64_t dims[4] = {0, 0, 0, 0};
    ic_status st = parse_header(h, (size_t)hlen, descr, &fortran, dims, &nd, err, errlen);
    free(h);
    if (st != IC_OK)
        return st;
    ic_sample_type type;
    int little;
    if (!descr_type(descr, &type, &little))
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "npy: dtype '%s' is not an image type (uint8, uint16 or float32)", descr);
    if (fortran)
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED, "npy: Fortran order is not supported");
    if (nd != 2 && !(nd == 3 && dims[2] >= 1 && dims[2] <= 4))
        return ic_errf(err, errlen, IC_ERR_UNSUPPORTED,
                       "npy: shape must be (H, W) or (H, W, C) with C = 1..4");
    const int channels = nd == 3 ? (int)dims[2] : 1;
    st = ic_io_check_dims_type(dims[1], dims[0], channels, type, lim, err, errlen);
    if (st != IC_OK)
        return st;
    st = ic_image_create_type(img, (int)dims[1], (int)dims[0], channels, IC_AOS, type);
    if (st != IC_OK)
        return ic_errf(err, errlen, st, "cannot allocate a %llux%llu image: %s",
                       (unsigned long long)dims[1], (unsigned long long)dims[0], ic_status_str(st));
    const size_t row = ic_image_row_bytes(img), es = ic_sample_size(type);
    for (int y = 0; y < img->height; y++) {
        uint8_t *dst = img->data + (size_t)y * img->pitch;
        const size_t got = fread(dst, 1, row, f);
        if (got != row) {
            const int io = ferror(f);
            ic_image_free(img);
            if (io)
                return ic_errf(err, errlen, IC_ERR_IO, "npy: read error: %s", strerror(errno));
            return ic_errf(err, errlen, IC_ERR_FORMAT,
                           "npy: truncated data (%llu of %llu bytes of samples)",
                           (unsigned long long)((uint64_t)y * row + got),
                           (unsigned long long)((uint64_t)row * (uint64_t)dims[0]));
        }
        if (es > 1 && little != host_little_endian())
            swap_bytes(dst, row, es);
    }
    return IC_OK;
}

ic_status ic_npy_write(FILE *f, const ic_image *img, char *err, size_t errlen)
{
    const char order = host_little_endian() ? '<' : '>';
    const char *t = img->type == IC_F32 ? "f4" : img->type == IC_U16 ? "u2" : "u1";
    char shape[48];
    if (img->channels == 1)
        snprintf(shape, sizeof shape, "(%d, %d)", img->height, img->width);
    else
        snprintf(shape, sizeof shape, "(%d, %d, %d)", img->height, img->width, img->channels);
    char dict[128];
    int n = snprintf(dict, sizeof dict, "{'descr': '%c%s', 'fortran_order': False, 'shape': %s, }",
                     img->type == IC_U8 ? '|' : order, t, shape);
    /* magic, version, length, dict, spaces, newline: a multiple of 64 bytes */
    const size_t total = (10u + (size_t)n + 1u + 63u) & ~(size_t)63u;
    const size_t hlen = total - 10u;
    uint8_t pre[10];
    memcpy(pre, npy_magic, 6);
    pre[6] = 1;
    pre[7] = 0;
    pre[8] = (uint8_t)(hlen & 0xFF);
    pre[9] = (uint8_t)(hlen >> 8);
    int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, (size_t)n, f) == (size_t)n;
    for (size_t i = 10u + (size_t)n; ok && i + 1 < total; i++)
        ok = putc(' ', f) != EOF;
    ok = ok && putc('\n', f) != EOF;
    const size_t row = ic_image_row_bytes(img);
    for (int y = 0; ok && y < img->height; y++)
        ok = fwrite(img->data + (size_t)y * img->pitch, 1, row, f) == row;
    if (!ok)
        return ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno ? errno : EIO));
    return IC_OK;
}
