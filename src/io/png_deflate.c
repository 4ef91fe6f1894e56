/*
 * png_deflate.c - the PNG writer: our own chunk writer (signature, IHDR,
 * iCCP, eXIf, IDAT, IEND), the rows filtered here and the whole filtered
 * image compressed into one zlib stream by libdeflate or by zlib's Z_RLE
 * strategy, whichever compresses a sample of the rows smaller.
 *
 * Why two coders: on smooth images (upscaled, rendered) long matches pay,
 * and libdeflate finds them at several times zlib's speed. On noisy
 * (camera-like) photographs the filtered bytes are nearly random in their
 * low bits; matches of 3-5 bytes then cost more than the literals they
 * replace, and zlib's Huffman-and-runs coder (Z_RLE, ~100 MB/s) gave
 * smaller files than every libdeflate level short of near-optimal parsing,
 * and than ImageMagick's zlib level 7 with Z_FILTERED
 * (bench/png-speed.sh). Why not libpng: zlib at the levels that match
 * ImageMagick's size was 3-30x slower.
 * Both coders compress whole buffers, so the memory is the filtered image
 * (height x (1 + row bytes)) plus one output buffer of at most about that
 * size, both freed before returning.
 * Writes 8- and 16-bit samples (16-bit big-endian on disk, as PNG stores
 * them), 1..4 channels (grey, grey+alpha, RGB, RGBA), never interlaced.
 * Reading stays with libpng (png.c). Built only with IC_HAVE_LIBDEFLATE.
 * (No seed figure: seed 004 saves files through a library.)
 */
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_LIBDEFLATE

#include <libdeflate.h>
#include <zlib.h>

/* IDAT chunks of at most this many bytes (any size up to 2^31-1 is valid). */
#define IDAT_MAX ((size_t)1 << 20)

void ic_png_deflate_setting(int level, ic_png_deflate_opts *o)
{
    /* --compression 1..9 -> libdeflate level 1, 3, 5, 6, 7, 8, 10, 11, 12 for
     * the images where libdeflate wins; every level also tries zlib's Z_RLE,
     * whose size does not depend on the level, and chooses the filter per
     * image (docs/definitions.md#png-writer; measured by bench/png-speed.sh). */
    static const int libdeflate_level[10] = {0, 1, 3, 5, 6, 7, 8, 10, 11, 12};
    o->level = libdeflate_level[level < 1 ? 1 : level > 9 ? 9 : level];
    o->filter = IC_PNG_FILTER_TRIAL;
    o->coder = IC_PNG_CODER_AUTO;
}

/* ---- output: chunks with their CRC ------------------------------------------ */

static void put32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

static ic_status put_bytes(FILE *f, const void *p, size_t n)
{
    if (n && fwrite(p, 1, n, f) != n)
        return ic_fail(IC_ERR_IO, "PNG: write error: %s", strerror(errno ? errno : EIO));
    return IC_OK;
}

/* One chunk: length, type, the data given in two parts (either may be empty;
 * the CRC runs over both), CRC. */
static ic_status put_chunk(FILE *f, const char type[4], const void *a, size_t an, const void *b,
                           size_t bn)
{
    uint8_t head[8];
    put32(head, (uint32_t)(an + bn));
    memcpy(head + 4, type, 4);
    uint32_t crc = libdeflate_crc32(0, head + 4, 4);
    if (an)
        crc = libdeflate_crc32(crc, a, an);
    if (bn)
        crc = libdeflate_crc32(crc, b, bn);
    uint8_t tail[4];
    put32(tail, crc);
    ic_status st = put_bytes(f, head, sizeof head);
    if (st == IC_OK)
        st = put_bytes(f, a, an);
    if (st == IC_OK)
        st = put_bytes(f, b, bn);
    if (st == IC_OK)
        st = put_bytes(f, tail, sizeof tail);
    return st;
}

int ic_png_icc_acceptable(const uint8_t *icc, size_t n)
{
    /* What libpng's png_icc_check_header insists on before it writes an
     * iCCP (a readable length, the 'acsp' signature, the D50 PCS
     * illuminant): a profile it would refuse is left out here too, so that
     * libpng and other readers never meet one they drop or reject. */
    static const uint8_t d50[12] = {0, 0, 0xF6, 0xD6, 0, 1, 0, 0, 0, 0, 0xD3, 0x2D};
    if (!icc || n < 132 || n > 0x7fffffff)
        return 0;
    const uint32_t len =
        (uint32_t)icc[0] << 24 | (uint32_t)icc[1] << 16 | (uint32_t)icc[2] << 8 | icc[3];
    return len == n && memcmp(icc + 36, "acsp", 4) == 0 && memcmp(icc + 68, d50, 12) == 0;
}

/* iCCP: the name "icc", compression method 0, the zlib-compressed profile. */
static ic_status put_iccp(FILE *f, struct libdeflate_compressor *c, const ic_metadata *meta)
{
    if (!meta || !ic_png_icc_acceptable(meta->icc, meta->icc_size))
        return IC_OK;
    const size_t bound = libdeflate_zlib_compress_bound(c, meta->icc_size);
    uint8_t *z = malloc(bound);
    if (!z)
        return ic_fail(IC_ERR_NOMEM, "PNG: out of memory for the ICC profile");
    const size_t zn = libdeflate_zlib_compress(c, meta->icc, meta->icc_size, z, bound);
    static const uint8_t name[5] = {'i', 'c', 'c', 0, 0}; /* name, NUL, method 0 */
    ic_status st = zn ? put_chunk(f, "iCCP", name, sizeof name, z, zn)
                      : ic_fail(IC_ERR_INTERNAL, "PNG: the ICC profile did not compress");
    free(z);
    return st;
}

/* ---- rows: channels, byte order, filters ------------------------------------- */

/* Converts `width` pixels of 16-bit samples (host order) from src_ch to
 * dst_ch channels by the rule of ic_io_convert_row, with 65535 as opaque. */
static void convert_row16(uint16_t *dst, int dst_ch, const uint16_t *src, int src_ch, int width)
{
    const int src_alpha = src_ch == 2 || src_ch == 4, dst_alpha = dst_ch == 2 || dst_ch == 4;
    const int dst_col = dst_alpha ? dst_ch - 1 : dst_ch;
    for (int x = 0; x < width; x++, src += src_ch, dst += dst_ch) {
        uint16_t v[3];
        if (src_ch >= 3 && dst_col == 1) {
            v[0] = (uint16_t)((299u * src[0] + 587u * src[1] + 114u * src[2] + 500u) / 1000u);
        } else {
            for (int c = 0; c < 3; c++)
                v[c] = src[src_ch >= 3 ? c : 0];
        }
        for (int c = 0; c < dst_col; c++)
            dst[c] = v[c];
        if (dst_alpha)
            dst[dst_ch - 1] = src_alpha ? src[src_ch - 1] : 65535;
    }
}

/* The bytes of row y as PNG stores them (before filtering): returns src
 * itself when nothing needs to change, else scratch, filled. */
static const uint8_t *stored_row(const ic_image *img, int y, int out_ch, uint8_t *scratch)
{
    const uint8_t *src = img->data + (size_t)y * img->pitch;
    if (img->type != IC_U16) {
        if (out_ch == img->channels)
            return src;
        ic_io_convert_row(scratch, out_ch, src, img->channels, img->width);
        return scratch;
    }
    const size_t n = (size_t)img->width * (size_t)out_ch;
    uint16_t *s16 = (uint16_t *)(void *)scratch;
    if (out_ch == img->channels)
        memcpy(s16, src, n * 2);
    else
        convert_row16(s16, out_ch, (const uint16_t *)(const void *)src, img->channels, img->width);
    for (size_t i = 0; i < n; i++) { /* big-endian on disk, whatever the host */
        const uint16_t v = s16[i];
        scratch[2 * i] = (uint8_t)(v >> 8);
        scratch[2 * i + 1] = (uint8_t)v;
    }
    return scratch;
}

/* The Paeth predictor (PNG spec 9.4) with p = a + b - c folded into the
 * distances, and selects instead of branches, so that the compiler can
 * vectorise the loop over a row (the row being filtered is read, never
 * written, so no sample depends on the previous one's result). */
static inline uint8_t paeth(int a, int b, int c)
{
    const int pa = abs(b - c), pb = abs(a - c), pc = abs(a + b - 2 * c);
    const int bc = pb <= pc ? b : c;
    return (uint8_t)(pa <= pb && pa <= pc ? a : bc);
}

/* Writes filter type t (0 none, 1 sub, 2 up, 3 average, 4 paeth) of row
 * `cur` (n bytes, bpp bytes per pixel; `prev` the row above or NULL) to
 * out[0] (the type byte) and out[1..n]. */
static void filter_row(uint8_t *out, int t, const uint8_t *cur, const uint8_t *prev, size_t n,
                       size_t bpp)
{
    uint8_t *o = out + 1;
    out[0] = (uint8_t)t;
    size_t i = 0;
    switch (t) {
    case 1:
        for (; i < bpp && i < n; i++)
            o[i] = cur[i];
        for (; i < n; i++)
            o[i] = (uint8_t)(cur[i] - cur[i - bpp]);
        break;
    case 2:
        for (; i < n; i++)
            o[i] = (uint8_t)(cur[i] - (prev ? prev[i] : 0));
        break;
    case 3:
        for (; i < bpp && i < n; i++)
            o[i] = (uint8_t)(cur[i] - ((prev ? prev[i] : 0) >> 1));
        for (; i < n; i++)
            o[i] = (uint8_t)(cur[i] - ((cur[i - bpp] + (prev ? prev[i] : 0)) >> 1));
        break;
    case 4:
        if (!prev) { /* Paeth of the first row is Sub */
            filter_row(out, 1, cur, NULL, n, bpp);
            out[0] = 4;
            break;
        }
        for (; i < bpp && i < n; i++)
            o[i] = (uint8_t)(cur[i] - prev[i]);
        for (; i < n; i++)
            o[i] = (uint8_t)(cur[i] - paeth(cur[i - bpp], prev[i], prev[i - bpp]));
        break;
    default:
        memcpy(o, cur, n);
        break;
    }
}

/* The classic heuristic (PNG spec 12.8, libpng's and ImageMagick's
 * adaptive choice): the sum of |byte| with bytes read as signed. */
static uint64_t msad(const uint8_t *o, size_t n)
{
    uint64_t s = 0;
    for (size_t i = 0; i < n; i++)
        s += (uint64_t)abs((int8_t)o[i]);
    return s;
}

/* Filters row `cur` into out (1 + n bytes) by `mode`; try[] is room for
 * 5 x (1 + n) bytes, one row for each adaptive candidate, so that only the
 * winner is copied. */
static void filter_best(uint8_t *out, ic_png_filter mode, const uint8_t *cur, const uint8_t *prev,
                        size_t n, size_t bpp, uint8_t *try)
{
    if (mode != IC_PNG_FILTER_ADAPTIVE) {
        filter_row(out, (int)mode, cur, prev, n, bpp);
        return;
    }
    uint64_t best = UINT64_MAX;
    const uint8_t *win = NULL;
    for (int t = 0; t <= 4; t++) {
        if (!prev && (t == 2 || t == 4)) /* equal to none and sub on the first row */
            continue;
        uint8_t *cand = try + (size_t)t * (n + 1);
        filter_row(cand, t, cur, prev, n, bpp);
        const uint64_t s = msad(cand + 1, n);
        if (s < best) {
            best = s;
            win = cand;
        }
    }
    memcpy(out, win, n + 1);
}

/* ---- the writer ------------------------------------------------------------------ */

/* Rows y0..y1-1 filtered by `mode` into out (stride bytes a row). Rows
 * alternate between the two rows of scratch when they must be converted, so
 * that the row above is still there for UP, AVG and PAETH. */
static void filter_rows(uint8_t *out, const ic_image *img, int out_ch, ic_png_filter mode, int y0,
                        int y1, size_t n, size_t bpp, uint8_t *scratch, uint8_t *try)
{
    const uint8_t *prev = y0 > 0 ? stored_row(img, y0 - 1, out_ch, scratch + n) : NULL;
    for (int y = y0; y < y1; y++) {
        const uint8_t *cur = stored_row(img, y, out_ch, scratch + (size_t)(y & 1) * n);
        filter_best(out + (size_t)(y - y0) * (n + 1), mode, cur, prev, n, bpp, try);
        prev = cur;
    }
}

/* The zlib stream of in[0..n) into out (room bytes) by `coder` (LIBDEFLATE
 * through c, or RLE): its size, or 0 when it does not fit or zlib fails. */
static size_t compress_rows(struct libdeflate_compressor *c, ic_png_coder coder, const uint8_t *in,
                            size_t n, uint8_t *out, size_t room)
{
    if (coder == IC_PNG_CODER_LIBDEFLATE)
        return libdeflate_zlib_compress(c, in, n, out, room);
    z_stream z;
    memset(&z, 0, sizeof z);
    /* Z_RLE ignores the level (any but 0); memLevel 9: the largest blocks. */
    if (deflateInit2(&z, 6, Z_DEFLATED, 15, 9, Z_RLE) != Z_OK)
        return 0;
    const size_t step = (size_t)1 << 30; /* zlib counts in unsigned int */
    int rc = Z_OK;
    size_t in_left = n, out_left = room;
    z.next_in = (Bytef *)(uintptr_t)in; /* zlib does not write through next_in */
    z.next_out = out;
    while (rc == Z_OK) {
        if (z.avail_in == 0) {
            z.avail_in = (uInt)(in_left < step ? in_left : step);
            in_left -= z.avail_in;
        }
        if (z.avail_out == 0) {
            if (out_left == 0)
                break; /* full: does not fit */
            z.avail_out = (uInt)(out_left < step ? out_left : step);
            out_left -= z.avail_out;
        }
        rc = deflate(&z, in_left == 0 ? Z_FINISH : Z_NO_FLUSH);
        if (rc == Z_BUF_ERROR) /* no progress possible: room or input exhausted */
            rc = z.avail_out == 0 && out_left > 0 ? Z_OK : rc;
    }
    const size_t size = rc == Z_STREAM_END ? (size_t)z.total_out : 0;
    deflateEnd(&z);
    return size;
}

/* Sample bands for IC_PNG_FILTER_TRIAL and IC_PNG_CODER_AUTO: rows
 * [k*STEP, k*STEP+BAND). */
#define TRIAL_BAND 16
#define TRIAL_STEP 256

/* Filters the sample bands by `mode` into room; returns the bytes used. */
static size_t filter_sample(uint8_t *room, const ic_image *img, int out_ch, ic_png_filter mode,
                            size_t n, size_t bpp, uint8_t *scratch, uint8_t *try)
{
    size_t used = 0;
    for (int y = 0; y < img->height; y += TRIAL_STEP) {
        const int y1 = y + TRIAL_BAND < img->height ? y + TRIAL_BAND : img->height;
        filter_rows(room + used, img, out_ch, mode, y, y1, n, bpp, scratch, try);
        used += (size_t)(y1 - y) * (n + 1);
    }
    return used;
}

/* Order-0 entropy of p[0..n) in bits: what a Huffman coder without matches
 * would spend, near enough to rank filters (the row filter-type bytes
 * included, as the coder sees them). */
static double entropy_bits(const uint8_t *p, size_t n)
{
    size_t h[256] = {0};
    for (size_t i = 0; i < n; i++)
        h[p[i]]++;
    double bits = (double)n * log2((double)n);
    for (int v = 0; v < 256; v++)
        if (h[v])
            bits -= (double)h[v] * log2((double)h[v]);
    return bits;
}

/* The filter and coder for the whole image (see ic_png_filter and
 * ic_png_coder): a fixed filter or coder in o is kept, TRIAL and AUTO are
 * decided on the sample. Per-row heuristics mislead on smooth images:
 * ADAPTIVE picks PAETH on every row of an upscaled photograph, where UP
 * alone gives a 2-4% smaller file because libdeflate then finds whole runs
 * of near-zero rows; hence UP is always one of libdeflate's candidates.
 * `room` holds the sample (at most the whole filtered image), z (zroom
 * bytes) its compressed form. */
static void choose(const ic_png_deflate_opts *o, struct libdeflate_compressor *c,
                   const ic_image *img, int out_ch, size_t n, size_t bpp, uint8_t *scratch,
                   uint8_t *try, uint8_t *room, uint8_t *z, size_t zroom, ic_png_filter *mode,
                   ic_png_coder *coder)
{
    *mode = o->filter;
    *coder = o->coder;
    size_t used = 0;
    if (*mode == IC_PNG_FILTER_TRIAL) {
        double best = HUGE_VAL;
        for (int t = IC_PNG_FILTER_NONE; t <= IC_PNG_FILTER_ADAPTIVE; t++) {
            used = filter_sample(room, img, out_ch, (ic_png_filter)t, n, bpp, scratch, try);
            const double bits = entropy_bits(room, used);
            if (bits < best) {
                best = bits;
                *mode = (ic_png_filter)t;
            }
        }
    }
    if (*coder != IC_PNG_CODER_AUTO)
        return;
    used = filter_sample(room, img, out_ch, *mode, n, bpp, scratch, try);
    /* libdeflate must beat Z_RLE by 1%: a tie goes to the faster coder, and
     * the sample misjudged closer calls (--compression 8 on a noisy
     * photograph: libdeflate smaller on the sample, 0.8% larger on the
     * whole image, at a fifth of the speed). */
    const size_t rle = compress_rows(c, IC_PNG_CODER_RLE, room, used, z, zroom);
    size_t best = rle ? rle - rle / 100 : 0;
    *coder = IC_PNG_CODER_RLE;
    size_t s = compress_rows(c, IC_PNG_CODER_LIBDEFLATE, room, used, z, zroom);
    if (s && (!best || s < best)) {
        best = s;
        *coder = IC_PNG_CODER_LIBDEFLATE;
    }
    if (*mode != IC_PNG_FILTER_UP) {
        used = filter_sample(room, img, out_ch, IC_PNG_FILTER_UP, n, bpp, scratch, try);
        s = compress_rows(c, IC_PNG_CODER_LIBDEFLATE, room, used, z, zroom);
        if (s && (!best || s < best)) {
            *mode = IC_PNG_FILTER_UP;
            *coder = IC_PNG_CODER_LIBDEFLATE;
        }
    }
}

static ic_status write_png(FILE *f, struct libdeflate_compressor *c, const ic_image *img,
                           int out_ch, const ic_png_deflate_opts *o, const ic_metadata *meta,
                           uint8_t *filtered, uint8_t *scratch, uint8_t *try)
{
    static const uint8_t colour_of[5] = {0, 0, 4, 2, 6}; /* grey, grey+alpha, RGB, RGBA */
    const int depth = img->type == IC_U16 ? 16 : 8;
    const size_t bpp = (size_t)out_ch * (size_t)(depth / 8);
    const size_t n = (size_t)img->width * bpp;
    const size_t raw = (size_t)img->height * (n + 1);
    /* Room for either coder's worst case: zlib's bound for a stream of
     * memLevel 9 is its conservative one (deflateBound in zlib 1.2.13: n +
     * n/8 + n/64 + 11), which this exceeds. */
    const size_t lbound = libdeflate_zlib_compress_bound(c, raw);
    const size_t zbound = raw + (raw >> 3) + (raw >> 6) + 64;
    const size_t bound = lbound > zbound ? lbound : zbound;
    uint8_t *z = malloc(bound);
    if (!z)
        return ic_fail(IC_ERR_NOMEM, "PNG: out of memory for %zu compressed bytes", bound);

    ic_png_filter mode;
    ic_png_coder coder;
    choose(o, c, img, out_ch, n, bpp, scratch, try, filtered, z, bound, &mode, &coder);
    filter_rows(filtered, img, out_ch, mode, 0, img->height, n, bpp, scratch, try);
    const size_t zn = compress_rows(c, coder, filtered, raw, z, bound);
    if (zn == 0) {
        free(z);
        return ic_fail(IC_ERR_INTERNAL, "PNG: %s could not compress the image",
                       coder == IC_PNG_CODER_RLE ? "zlib" : "libdeflate");
    }

    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)img->width);
    put32(ihdr + 4, (uint32_t)img->height);
    ihdr[8] = (uint8_t)depth;
    ihdr[9] = colour_of[out_ch];
    ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filtering, no interlace */
    ic_status st = put_bytes(f, signature, sizeof signature);
    if (st == IC_OK)
        st = put_chunk(f, "IHDR", ihdr, sizeof ihdr, NULL, 0);
    if (st == IC_OK)
        st = put_iccp(f, c, meta);
    if (st == IC_OK && meta && meta->exif && meta->exif_size <= 0x7fffffff)
        st = put_chunk(f, "eXIf", meta->exif, meta->exif_size, NULL, 0);
    for (size_t at = 0; st == IC_OK && at < zn; at += IDAT_MAX)
        st = put_chunk(f, "IDAT", z + at, zn - at < IDAT_MAX ? zn - at : IDAT_MAX, NULL, 0);
    if (st == IC_OK)
        st = put_chunk(f, "IEND", NULL, 0, NULL, 0);
    free(z);
    return st;
}

ic_status ic_png_deflate_write(FILE *f, const ic_image *img, int out_ch,
                               const ic_png_deflate_opts *o, const ic_metadata *meta)
{
    if (out_ch < 1 || out_ch > 4)
        return ic_fail(IC_ERR_INTERNAL, "PNG stores 1..4 channels, not %d", out_ch);
    if (img->width <= 0 || img->height <= 0 || img->width > IC_MAX_DIM || img->height > IC_MAX_DIM)
        return ic_fail(IC_ERR_INVALID_ARG, "PNG: cannot store a %dx%d image", img->width,
                       img->height);
    const size_t n = (size_t)img->width * (size_t)out_ch * (img->type == IC_U16 ? 2 : 1);
    const size_t raw = (size_t)img->height * (n + 1);
    struct libdeflate_compressor *c = libdeflate_alloc_compressor(o->level);
    uint8_t *filtered = malloc(raw);
    uint8_t *scratch = malloc(2 * n);
    uint8_t *try = malloc(5 * (n + 1));
    ic_status st;
    if (!c || !filtered || !scratch || !try)
        st = ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a %dx%d image (%zu bytes filtered)",
                     img->width, img->height, raw);
    else
        st = write_png(f, c, img, out_ch, o, meta, filtered, scratch, try);
    free(try);
    free(scratch);
    free(filtered);
    if (c)
        libdeflate_free_compressor(c);
    return st;
}

#endif /* IC_HAVE_LIBDEFLATE */
