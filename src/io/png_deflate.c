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
 * Images over one strip (png_strips.c: 512 KiB of filtered rows for zlib,
 * 1 MiB for libdeflate) are filtered and deflated strip by strip on
 * ic_png_deflate_opts.threads threads into one zlib stream, the same bytes
 * at any thread count; the sample that picks filter and coder is spread
 * over the threads too. A strip is filtered by the thread that deflates
 * it, just before, into a buffer of that thread's, so that the memory is
 * a strip per thread plus an output buffer of at most about the filtered
 * image's size (height x (1 + row bytes)); an image of one strip is
 * filtered whole first. Both are freed before returning.
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
    /* --compression 2..9 -> libdeflate level 3, 5, 6, 7, 8, 10, 11, 12 for
     * the images where libdeflate wins; every level also tries zlib's Z_RLE,
     * whose size does not depend on the level, and chooses the filter per
     * image (docs/definitions.md#png-writer; measured by
     * bench/png-speed.sh). Level 1 is the fast mode: UP, SUB or PAETH for
     * the image and Huffman codes only (runs where the rows are mostly
     * runs), at several times the speed. */
    static const int libdeflate_level[10] = {0, 1, 3, 5, 6, 7, 8, 10, 11, 12};
    const int l = level < 1 ? 1 : level > 9 ? 9 : level;
    o->level = libdeflate_level[l];
    o->filter = l == 1 ? IC_PNG_FILTER_QUICK : IC_PNG_FILTER_TRIAL;
    o->coder = l == 1 ? IC_PNG_CODER_FAST : IC_PNG_CODER_AUTO;
    o->threads = 0;
    o->strip_rows = 0;
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

#if defined(__x86_64__) || defined(_M_X64)
#include <emmintrin.h>

/* Paeth's prediction of 16 bytes at once in bytes alone (as fpnge does):
 * pa = |b - c| and pb = |a - c| fit a byte; pc = |(b - c) + (a - c)| is
 * pa + pb when both differences have one sign (saturated at 255, which
 * keeps the comparisons with pa and pb right), else |pa - pb|. */
static inline __m128i paeth16(__m128i a, __m128i b, __m128i c)
{
    const __m128i pa = _mm_or_si128(_mm_subs_epu8(b, c), _mm_subs_epu8(c, b));
    const __m128i pb = _mm_or_si128(_mm_subs_epu8(a, c), _mm_subs_epu8(c, a));
    /* b >= c and a >= c, as all-ones lanes */
    const __m128i b_ge = _mm_cmpeq_epi8(_mm_max_epu8(b, c), b);
    const __m128i a_ge = _mm_cmpeq_epi8(_mm_max_epu8(a, c), a);
    const __m128i differ = _mm_xor_si128(b_ge, a_ge);
    const __m128i pc = _mm_or_si128(
        _mm_and_si128(differ, _mm_or_si128(_mm_subs_epu8(pa, pb), _mm_subs_epu8(pb, pa))),
        _mm_andnot_si128(differ, _mm_adds_epu8(pa, pb)));
    const __m128i pa_le_pb = _mm_cmpeq_epi8(_mm_min_epu8(pa, pb), pa);
    const __m128i pa_le_pc = _mm_cmpeq_epi8(_mm_min_epu8(pa, pc), pa);
    const __m128i pb_le_pc = _mm_cmpeq_epi8(_mm_min_epu8(pb, pc), pb);
    const __m128i take_a = _mm_and_si128(pa_le_pb, pa_le_pc);
    const __m128i bc = _mm_or_si128(_mm_and_si128(pb_le_pc, b), _mm_andnot_si128(pb_le_pc, c));
    return _mm_or_si128(_mm_and_si128(take_a, a), _mm_andnot_si128(take_a, bc));
}

/* o[i] = cur[i] - paeth(...) for i in [bpp, n), 16 bytes a step; returns
 * where it stopped. */
static size_t paeth_rows_sse2(uint8_t *o, const uint8_t *cur, const uint8_t *prev, size_t n,
                              size_t bpp)
{
    size_t i = bpp;
    for (; i + 16 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(cur + i));
        const __m128i a = _mm_loadu_si128((const __m128i *)(const void *)(cur + i - bpp));
        const __m128i b = _mm_loadu_si128((const __m128i *)(const void *)(prev + i));
        const __m128i c = _mm_loadu_si128((const __m128i *)(const void *)(prev + i - bpp));
        _mm_storeu_si128((__m128i *)(void *)(o + i), _mm_sub_epi8(x, paeth16(a, b, c)));
    }
    return i;
}

#if defined(__GNUC__)
#define HAVE_AVX2_PAETH 1
#include <immintrin.h>

/* paeth16 on 32 bytes (AVX2, picked at run time): the same bytes. */
__attribute__((target("avx2"))) static inline __m256i paeth32(__m256i a, __m256i b, __m256i c)
{
    const __m256i pa = _mm256_or_si256(_mm256_subs_epu8(b, c), _mm256_subs_epu8(c, b));
    const __m256i pb = _mm256_or_si256(_mm256_subs_epu8(a, c), _mm256_subs_epu8(c, a));
    const __m256i b_ge = _mm256_cmpeq_epi8(_mm256_max_epu8(b, c), b);
    const __m256i a_ge = _mm256_cmpeq_epi8(_mm256_max_epu8(a, c), a);
    const __m256i differ = _mm256_xor_si256(b_ge, a_ge);
    const __m256i pc =
        _mm256_or_si256(_mm256_and_si256(differ, _mm256_or_si256(_mm256_subs_epu8(pa, pb),
                                                                 _mm256_subs_epu8(pb, pa))),
                        _mm256_andnot_si256(differ, _mm256_adds_epu8(pa, pb)));
    const __m256i pa_le_pb = _mm256_cmpeq_epi8(_mm256_min_epu8(pa, pb), pa);
    const __m256i pa_le_pc = _mm256_cmpeq_epi8(_mm256_min_epu8(pa, pc), pa);
    const __m256i pb_le_pc = _mm256_cmpeq_epi8(_mm256_min_epu8(pb, pc), pb);
    const __m256i take_a = _mm256_and_si256(pa_le_pb, pa_le_pc);
    const __m256i bc = _mm256_blendv_epi8(c, b, pb_le_pc);
    return _mm256_blendv_epi8(bc, a, take_a);
}

__attribute__((target("avx2"))) static size_t
paeth_rows_avx2(uint8_t *o, const uint8_t *cur, const uint8_t *prev, size_t n, size_t bpp)
{
    size_t i = bpp;
    for (; i + 32 <= n; i += 32) {
        const __m256i x = _mm256_loadu_si256((const __m256i *)(const void *)(cur + i));
        const __m256i a = _mm256_loadu_si256((const __m256i *)(const void *)(cur + i - bpp));
        const __m256i b = _mm256_loadu_si256((const __m256i *)(const void *)(prev + i));
        const __m256i c = _mm256_loadu_si256((const __m256i *)(const void *)(prev + i - bpp));
        _mm256_storeu_si256((__m256i *)(void *)(o + i), _mm256_sub_epi8(x, paeth32(a, b, c)));
    }
    return i;
}

/* Paeth of bytes [bpp, n), 32 or 16 bytes a step; returns where it stopped. */
#endif /* __GNUC__ */

static size_t paeth_rows_simd(uint8_t *o, const uint8_t *cur, const uint8_t *prev, size_t n,
                              size_t bpp)
{
#ifdef HAVE_AVX2_PAETH
    if (__builtin_cpu_supports("avx2"))
        return paeth_rows_avx2(o, cur, prev, n, bpp);
#endif
    return paeth_rows_sse2(o, cur, prev, n, bpp);
}
#endif

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
#if defined(__x86_64__) || defined(_M_X64)
        if (i < n)
            i = paeth_rows_simd(o, cur, prev, n, bpp);
#endif
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
 * that the row above is still there for UP, AVG and PAETH. With `alone`,
 * row y0 gets SUB, which does not look up, so that a reader can unfilter
 * the strip without waiting for the one before, where SUB's bytes are
 * nearly as small as the mode's (on noisy photographs; on charts, whose
 * rows repeat, SUB made the file 1% larger). */
static void filter_rows(uint8_t *out, const ic_image *img, int out_ch, ic_png_filter mode, int y0,
                        int y1, size_t n, size_t bpp, uint8_t *scratch, uint8_t *try, int alone)
{
    const uint8_t *prev =
        y0 > 0 ? stored_row(img, y0 - 1, out_ch, scratch + (size_t)((y0 - 1) & 1) * n) : NULL;
    for (int y = y0; y < y1; y++) {
        const uint8_t *cur = stored_row(img, y, out_ch, scratch + (size_t)(y & 1) * n);
        uint8_t *o = out + (size_t)(y - y0) * (n + 1);
        filter_best(o, mode, cur, prev, n, bpp, try);
        if (alone && y == y0 && y > 0 && o[0] > 1) {
            filter_row(try, 1, cur, NULL, n, bpp);
            const uint64_t sub = msad(try + 1, n), best = msad(o + 1, n);
            if (sub <= best + best / 8)
                memcpy(o, try, n + 1);
        }
        prev = cur;
    }
}

/* The zlib stream of in[0..n) into out (room bytes) by `coder` (LIBDEFLATE
 * through c, RLE or HUFFMAN): its size, or 0 when it does not fit or zlib
 * fails. */
static size_t compress_rows(struct libdeflate_compressor *c, ic_png_coder coder, const uint8_t *in,
                            size_t n, uint8_t *out, size_t room)
{
    if (coder == IC_PNG_CODER_LIBDEFLATE)
        return libdeflate_zlib_compress(c, in, n, out, room);
    if (coder == IC_PNG_CODER_HUFFMAN) {
        if (room < 6)
            return 0;
        const size_t size = ic_png_huffman_deflate(in, n, 1, out + 2, room - 6);
        if (!size)
            return 0;
        out[0] = 0x78; /* deflate, 32 KiB window; FLG: the fastest level */
        out[1] = 0x01;
        put32(out + 2 + size, libdeflate_adler32(1, in, n));
        return size + 6;
    }
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

/* Sample bands for IC_PNG_FILTER_TRIAL, IC_PNG_FILTER_QUICK and
 * IC_PNG_CODER_AUTO: rows [k*STEP, k*STEP+BAND). */
#define TRIAL_BAND 16
#define TRIAL_STEP 256
/* Images of fewer filtered bytes are written on one thread: a helper's start
 * and its own compressor cost more than the share of the trials it takes. */
#define THREADS_MIN_BYTES ((size_t)64 << 10)

/* libdeflate's level for the first round of the coder trial (see choose):
 * on the sample of a blurred photograph under a third of level 7's time,
 * the filters ranked as level 7 ranks them. */
#define TRIAL_LEVEL 5
/* Twice the most that levels 6 and 7 were seen to shrink the sample below
 * TRIAL_LEVEL's size (4.2% on a blurred photograph, 4.1% upscaled, 3.9% on
 * a blurred chart, 0.4% on a noisy photograph), in percent; the higher
 * levels gain more (level 10 up to 18.5%) and are always tried. */
#define TRIAL_GAIN 8
#define TRIAL_GAIN_LEVEL 7

/* What each thread of a write owns: rows to convert and to try filters in,
 * a sample band filtered and compressed, and libdeflate compressors at the
 * write's level and at TRIAL_LEVEL, made when first needed. */
typedef struct worker {
    uint8_t *scratch, *try, *band, *z;
    struct libdeflate_compressor *c, *trial_c;
} worker;

/* One write: the image, its row geometry, the threads' workers, and what
 * the parallel steps share. */
typedef struct writer {
    const ic_image *img;
    const ic_png_deflate_opts *o;
    int out_ch, threads, bands, step; /* sample bands: rows [b*step, b*step+BAND) */
    size_t n, bpp, zroom;
    worker *w;
    uint8_t *mem;
    ic_png_filter cand_mode[6]; /* the filters (and coders) being tried */
    ic_png_coder cand_coder[6];
    int cand_level[6];  /* libdeflate's level for the candidate */
    int cand_first;     /* the candidate of items [0, bands) */
    uint64_t *hist;     /* 256 counts per (candidate, band) */
    size_t *size;       /* compressed bytes per (candidate, band) */
    ic_png_filter mode; /* the strips' filter, `rows` rows a strip */
    int rows;
    int sampled; /* the trial ran: chosen[] counts the chosen filter's sample */
    uint64_t chosen[256];
} writer;

static struct libdeflate_compressor *compressor(worker *w, int level)
{
    if (!w->c)
        w->c = libdeflate_alloc_compressor(level);
    return w->c;
}

/* The worker's compressor at `level`: the trial's or the write's. */
static struct libdeflate_compressor *compressor_at(worker *w, int level, int write_level)
{
    if (level == write_level)
        return compressor(w, level);
    if (!w->trial_c)
        w->trial_c = libdeflate_alloc_compressor(level);
    return w->trial_c;
}

static ic_status writer_init(writer *wr, const ic_image *img, int out_ch,
                             const ic_png_deflate_opts *o)
{
    memset(wr, 0, sizeof *wr);
    wr->img = img;
    wr->o = o;
    wr->out_ch = out_ch;
    wr->threads = o->threads < 1                    ? 1
                  : o->threads > IC_PNG_MAX_THREADS ? IC_PNG_MAX_THREADS
                                                    : o->threads;
    wr->step = TRIAL_STEP;
    wr->bands = (img->height + TRIAL_STEP - 1) / TRIAL_STEP;
    wr->bpp = (size_t)out_ch * (img->type == IC_U16 ? 2 : 1);
    wr->n = (size_t)img->width * wr->bpp;
    if ((size_t)img->height * (wr->n + 1) < THREADS_MIN_BYTES)
        wr->threads = 1;
    const size_t band = (size_t)TRIAL_BAND * (wr->n + 1);
    /* Above both coders' bounds for a band (zlib's conservative one, n +
     * n/8 + n/64 + 11, exceeds libdeflate's). */
    wr->zroom = band + (band >> 3) + (band >> 6) + 64;
    /* Rounded up so that every worker's rows are aligned for 16-bit samples. */
    const size_t per = (2 * wr->n + 5 * (wr->n + 1) + band + wr->zroom + 63) & ~(size_t)63;
    wr->w = calloc((size_t)wr->threads, sizeof *wr->w);
    wr->mem = malloc((size_t)wr->threads * per);
    wr->hist = malloc((size_t)6 * (size_t)wr->bands * 256 * sizeof *wr->hist);
    wr->size = malloc((size_t)6 * (size_t)wr->bands * sizeof *wr->size);
    if (!wr->w || !wr->mem || !wr->hist || !wr->size)
        return ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a %dx%d image's rows", img->width,
                       img->height);
    for (int i = 0; i < wr->threads; i++) {
        worker *w = &wr->w[i];
        w->scratch = wr->mem + (size_t)i * per;
        w->try = w->scratch + 2 * wr->n;
        w->band = w->try + 5 * (wr->n + 1);
        w->z = w->band + band;
    }
    return IC_OK;
}

static void writer_free(writer *wr)
{
    for (int i = 0; wr->w && i < wr->threads; i++) {
        if (wr->w[i].c)
            libdeflate_free_compressor(wr->w[i].c);
        if (wr->w[i].trial_c)
            libdeflate_free_compressor(wr->w[i].trial_c);
    }
    free(wr->w);
    free(wr->mem);
    free(wr->hist);
    free(wr->size);
}

/* Sample band b filtered by `mode` into w->band; returns the bytes used. */
static size_t filter_band(const writer *wr, worker *w, ic_png_filter mode, int b)
{
    const int y0 = b * wr->step;
    const int y1 = wr->img->height - y0 > TRIAL_BAND ? y0 + TRIAL_BAND : wr->img->height;
    filter_rows(w->band, wr->img, wr->out_ch, mode, y0, y1, wr->n, wr->bpp, w->scratch, w->try, 0);
    return (size_t)(y1 - y0) * (wr->n + 1);
}

/* Item (candidate, band): the byte histogram of the band filtered by the
 * candidate's filter. */
static void trial_filter(void *arg, int i, int worker_no)
{
    writer *wr = arg;
    worker *w = &wr->w[worker_no];
    const int cand = i / wr->bands, b = i % wr->bands;
    const size_t used = filter_band(wr, w, wr->cand_mode[cand], b);
    uint64_t *h = wr->hist + (size_t)i * 256;
    memset(h, 0, 256 * sizeof *h);
    for (size_t k = 0; k < used; k++)
        h[w->band[k]]++;
}

/* Item (candidate, band), the candidate counted from cand_first: the
 * band's compressed size by the candidate's filter, coder and level (0: it
 * failed). */
static void trial_coder(void *arg, int i, int worker_no)
{
    writer *wr = arg;
    worker *w = &wr->w[worker_no];
    const int cand = wr->cand_first + i / wr->bands, b = i % wr->bands;
    const size_t used = filter_band(wr, w, wr->cand_mode[cand], b);
    struct libdeflate_compressor *c = compressor_at(w, wr->cand_level[cand], wr->o->level);
    wr->size[(size_t)cand * (size_t)wr->bands + (size_t)b] =
        c ? compress_rows(c, wr->cand_coder[cand], w->band, used, w->z, wr->zroom) : 0;
}

/* Candidates [first, first + count) tried on the sample. */
static void trial_coders(writer *wr, int first, int count)
{
    wr->cand_first = first;
    ic_png_parallel_for(wr->threads, count * wr->bands, trial_coder, wr);
}

/* Order-0 entropy in bits of the bytes counted in h[256] (n of them): what
 * a Huffman coder without matches would spend, near enough to rank filters
 * (the row filter-type bytes included, as the coder sees them). */
static double entropy_bits(const uint64_t *h, uint64_t n)
{
    double bits = n ? (double)n * log2((double)n) : 0;
    for (int v = 0; v < 256; v++)
        if (h[v])
            bits -= (double)h[v] * log2((double)h[v]);
    return bits;
}

/* The filter of ncand candidates whose sample has the least entropy (the
 * first of equals); *zeros the share of 0 bytes in its sample. */
static ic_png_filter trial(writer *wr, int ncand, double *zeros)
{
    ic_png_parallel_for(wr->threads, ncand * wr->bands, trial_filter, wr);
    double best = HUGE_VAL;
    ic_png_filter mode = wr->cand_mode[0];
    for (int t = 0; t < ncand; t++) {
        uint64_t h[256] = {0}, n = 0;
        for (int b = 0; b < wr->bands; b++)
            for (int v = 0; v < 256; v++)
                h[v] += wr->hist[((size_t)t * (size_t)wr->bands + (size_t)b) * 256 + (size_t)v];
        for (int v = 0; v < 256; v++)
            n += h[v];
        const double bits = entropy_bits(h, n);
        if (bits < best) {
            best = bits;
            mode = wr->cand_mode[t];
            *zeros = n ? (double)h[0] / (double)n : 0;
            memcpy(wr->chosen, h, sizeof h);
            wr->sampled = 1;
        }
    }
    return mode;
}

/* The candidate's sample size: the sum over its bands, 0 when one failed. */
static size_t sample_size(const writer *wr, int cand)
{
    size_t sum = 0;
    for (int b = 0; b < wr->bands; b++) {
        const size_t s = wr->size[(size_t)cand * (size_t)wr->bands + (size_t)b];
        if (!s)
            return 0;
        sum += s;
    }
    return sum;
}

/* The filter and coder for the whole image (see ic_png_filter and
 * ic_png_coder): a fixed filter or coder in o is kept, TRIAL, QUICK, AUTO
 * and FAST are decided on the sample bands, each band filtered and coded
 * apart so that the bands spread over the threads. Per-row heuristics
 * mislead on smooth images: ADAPTIVE picks PAETH on every row of an
 * upscaled photograph, where UP alone gives a 2-4% smaller file because
 * libdeflate then finds whole runs of near-zero rows; hence UP is always
 * one of libdeflate's candidates. */
static void choose(writer *wr, ic_png_filter *mode, ic_png_coder *coder)
{
    const ic_png_deflate_opts *o = wr->o;
    *mode = o->filter;
    *coder = o->coder;
    double zeros = 0;
    if (*mode == IC_PNG_FILTER_TRIAL) {
        for (int t = IC_PNG_FILTER_NONE; t <= IC_PNG_FILTER_ADAPTIVE; t++)
            wr->cand_mode[t] = (ic_png_filter)t;
        *mode = trial(wr, 6, &zeros);
    } else if (*mode == IC_PNG_FILTER_QUICK) {
        /* A quarter of the sample: the fast mode's whole encode costs
         * about what the full sample's trial does. */
        wr->step = 4 * TRIAL_STEP;
        wr->bands = (wr->img->height + wr->step - 1) / wr->step;
        wr->cand_mode[0] = IC_PNG_FILTER_UP;
        wr->cand_mode[1] = IC_PNG_FILTER_SUB;
        wr->cand_mode[2] = IC_PNG_FILTER_PAETH;
        *mode = trial(wr, 3, &zeros);
    }
    if (*coder == IC_PNG_CODER_FAST) {
        /* Filtered rows of many zeros hold runs (charts, flat areas),
         * which Huffman codes alone cannot shorten. */
        *coder = zeros > 0.25 ? IC_PNG_CODER_RLE : IC_PNG_CODER_HUFFMAN;
        return;
    }
    if (*coder != IC_PNG_CODER_AUTO)
        return;
    /* Round one: Z_RLE, and libdeflate at TRIAL_LEVEL (or the write's
     * level when that is lower) by the chosen filter and by UP. */
    const int level = wr->o->level, first = level < TRIAL_LEVEL ? level : TRIAL_LEVEL;
    wr->cand_mode[0] = wr->cand_mode[1] = wr->cand_mode[3] = *mode;
    wr->cand_mode[2] = IC_PNG_FILTER_UP;
    wr->cand_coder[0] = IC_PNG_CODER_RLE;
    wr->cand_coder[1] = wr->cand_coder[2] = wr->cand_coder[3] = IC_PNG_CODER_LIBDEFLATE;
    wr->cand_level[0] = wr->cand_level[1] = wr->cand_level[2] = first;
    wr->cand_level[3] = level;
    const int ncand = *mode == IC_PNG_FILTER_UP ? 2 : 3;
    trial_coders(wr, 0, ncand);
    /* libdeflate must beat Z_RLE by 1%: a tie goes to the faster coder, and
     * the sample misjudged closer calls (--compression 8 on a noisy
     * photograph: libdeflate smaller on the sample, 0.8% larger on the
     * whole image, at a fifth of the speed). */
    const size_t rle = sample_size(wr, 0);
    const size_t bar = rle ? rle - rle / 100 : 0;
    size_t lib = sample_size(wr, 1);
    if (ncand == 3) {
        const size_t up = sample_size(wr, 2);
        if (up && (!lib || up < lib)) {
            lib = up;
            wr->cand_mode[3] = IC_PNG_FILTER_UP;
        }
    }
    *coder = IC_PNG_CODER_RLE;
    if (!lib)
        return;
    if (!bar || lib < bar) { /* the write's level compresses at least as well */
        *mode = wr->cand_mode[3];
        *coder = IC_PNG_CODER_LIBDEFLATE;
        return;
    }
    /* Round two, only where the full level might still win: that filter at
     * the write's level. Up to level 7, past TRIAL_GAIN percent over the
     * bar it cannot. */
    if (first == level ||
        (level <= TRIAL_GAIN_LEVEL && (uint64_t)lib * (100 - TRIAL_GAIN) >= (uint64_t)bar * 100))
        return;
    trial_coders(wr, 3, 1);
    lib = sample_size(wr, 3);
    if (lib && lib < bar) {
        *mode = wr->cand_mode[3];
        *coder = IC_PNG_CODER_LIBDEFLATE;
    }
}

/* Strip k of the image filtered into dst, for png_strips.c. */
static void filter_strip(void *arg, int k, uint8_t *dst, int worker_no)
{
    writer *wr = arg;
    worker *w = &wr->w[worker_no];
    const int y0 = k * wr->rows;
    const int y1 = wr->img->height - y0 > wr->rows ? y0 + wr->rows : wr->img->height;
    filter_rows(dst, wr->img, wr->out_ch, wr->mode, y0, y1, wr->n, wr->bpp, w->scratch, w->try, 1);
}

/* The zlib stream of the whole image in *z (malloc'd, *zn bytes): row
 * strips filtered and deflated on the threads, their icST chunk's data in
 * *map (malloc'd, *mapn bytes), or, when the image is one strip, one
 * stream as the coder writes it (*map NULL). */
static ic_status compress_image(writer *wr, ic_png_filter mode, ic_png_coder coder, uint8_t **z,
                                ic_png_piece **pc, int *npc, size_t *zn, uint8_t **map,
                                size_t *mapn)
{
    const size_t row = wr->n + 1, raw = (size_t)wr->img->height * row;
    const size_t rows = ic_png_strip_rows(row, coder, wr->o->strip_rows);
    *map = NULL;
    *mapn = 0;
    if (rows < (size_t)wr->img->height) {
        wr->mode = mode;
        wr->rows = (int)rows;
        /* The fast mode codes every strip by one code, from the sample. */
        ic_png_huffman_code *code = NULL;
        if (coder == IC_PNG_CODER_HUFFMAN && wr->sampled &&
            !(code = ic_png_huffman_code_make(wr->chosen)))
            return ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a Huffman code");
        const ic_png_strip_job job = {.bytes = raw,
                                      .row_bytes = row,
                                      .coder = coder,
                                      .level = wr->o->level,
                                      .threads = wr->threads,
                                      .strip_rows = (int)rows,
                                      .fill = filter_strip,
                                      .fill_arg = wr,
                                      .code = code};
        uint64_t *starts = NULL;
        ic_status st = ic_png_deflate_strips(&job, z, pc, npc, zn, &starts);
        ic_png_huffman_code_free(code);
        const size_t count = (wr->img->height + rows - 1) / rows;
        if (st == IC_OK && !(*map = malloc(count * IC_PNG_STRIPS_ENTRY)))
            st = ic_fail(IC_ERR_NOMEM, "PNG: out of memory for %zu strips", count);
        for (size_t k = 0; st == IC_OK && k < count; k++) {
            uint8_t *e = *map + k * IC_PNG_STRIPS_ENTRY;
            put32(e, (uint32_t)(k * rows));
            put32(e + 4, (uint32_t)(starts[k] >> 32));
            put32(e + 8, (uint32_t)starts[k]);
        }
        *mapn = st == IC_OK ? count * IC_PNG_STRIPS_ENTRY : 0;
        free(starts);
        return st;
    }
    struct libdeflate_compressor *c = compressor(&wr->w[0], wr->o->level);
    /* Room for either coder's worst case (zlib's conservative bound). */
    const size_t bound = raw + (raw >> 3) + (raw >> 6) + 64;
    uint8_t *filtered = malloc(raw);
    *z = malloc(bound);
    if (!c || !*z || !filtered) {
        free(filtered);
        free(*z);
        *z = NULL;
        return ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a %dx%d image (%zu bytes filtered)",
                       wr->img->width, wr->img->height, raw);
    }
    filter_rows(filtered, wr->img, wr->out_ch, mode, 0, wr->img->height, wr->n, wr->bpp,
                wr->w[0].scratch, wr->w[0].try, 0);
    *zn = compress_rows(c, coder, filtered, raw, *z, bound);
    free(filtered);
    if (*zn && (*pc = malloc(sizeof **pc)) != NULL) {
        **pc = (ic_png_piece){*z, *zn};
        *npc = 1;
        return IC_OK;
    }
    if (*zn) {
        free(*z);
        *z = NULL;
        return ic_fail(IC_ERR_NOMEM, "PNG: out of memory");
    }
    free(*z);
    *z = NULL;
    return ic_fail(IC_ERR_INTERNAL, "PNG: %s could not compress the image",
                   coder == IC_PNG_CODER_LIBDEFLATE ? "libdeflate" : "zlib");
}

/* The IDAT chunks of a stream in pieces: chunk i holds bytes [i * IDAT_MAX,
 * (i + 1) * IDAT_MAX), its CRC in crc[i]. */
typedef struct idat_job {
    const ic_png_piece *pc;
    int npc;
    size_t zn;
    uint32_t *crc;
} idat_job;

/* Calls fn on the stream's bytes [at, at + n), piece by piece, in order;
 * returns 0 as soon as fn does. */
static int pieces_each(const idat_job *ij, size_t at, size_t n,
                       int (*fn)(void *arg, const uint8_t *p, size_t n), void *arg)
{
    size_t base = 0;
    for (int i = 0; i < ij->npc && n; base += ij->pc[i].n, i++) {
        if (at >= base + ij->pc[i].n)
            continue;
        const size_t off = at - base, take = ij->pc[i].n - off < n ? ij->pc[i].n - off : n;
        if (!fn(arg, ij->pc[i].p + off, take))
            return 0;
        at += take;
        n -= take;
    }
    return 1;
}

static int crc_more(void *arg, const uint8_t *p, size_t n)
{
    uint32_t *crc = arg;
    *crc = libdeflate_crc32(*crc, p, n);
    return 1;
}

static int write_more(void *arg, const uint8_t *p, size_t n)
{
    return put_bytes(arg, p, n) == IC_OK;
}

static size_t idat_len(const idat_job *ij, size_t at)
{
    return ij->zn - at < IDAT_MAX ? ij->zn - at : IDAT_MAX;
}

static void idat_crc(void *arg, int i, int worker_no)
{
    (void)worker_no;
    idat_job *ij = arg;
    const size_t at = (size_t)i * IDAT_MAX;
    uint32_t crc = libdeflate_crc32(0, "IDAT", 4);
    pieces_each(ij, at, idat_len(ij, at), crc_more, &crc);
    ij->crc[i] = crc;
}

/* The IDAT chunk of the stream's bytes from `at`, its CRC made already. */
static ic_status put_idat(FILE *f, const idat_job *ij, size_t at)
{
    const size_t n = idat_len(ij, at);
    uint8_t head[8], tail[4];
    put32(head, (uint32_t)n);
    memcpy(head + 4, "IDAT", 4);
    put32(tail, ij->crc[at / IDAT_MAX]);
    ic_status st = put_bytes(f, head, sizeof head);
    if (st == IC_OK && !pieces_each(ij, at, n, write_more, f))
        st = ic_fail(IC_ERR_IO, "PNG: write error: %s", strerror(errno ? errno : EIO));
    if (st == IC_OK)
        st = put_bytes(f, tail, sizeof tail);
    return st;
}

static ic_status write_png(FILE *f, writer *wr, const ic_metadata *meta)
{
    static const uint8_t colour_of[5] = {0, 0, 4, 2, 6}; /* grey, grey+alpha, RGB, RGBA */
    const ic_image *img = wr->img;
    ic_png_filter mode;
    ic_png_coder coder;
    choose(wr, &mode, &coder);
    uint8_t *z = NULL, *map = NULL;
    ic_png_piece *pc = NULL;
    int npc = 0;
    size_t zn = 0, mapn = 0;
    ic_status st = compress_image(wr, mode, coder, &z, &pc, &npc, &zn, &map, &mapn);
    idat_job ij = {pc, npc, zn, NULL};
    if (st == IC_OK && !(ij.crc = malloc((zn + IDAT_MAX - 1) / IDAT_MAX * sizeof *ij.crc)))
        st = ic_fail(IC_ERR_NOMEM, "PNG: out of memory");
    if (st != IC_OK) {
        free(z);
        free(pc);
        free(map);
        return st;
    }
    /* The IDAT chunks' CRCs on the threads: one thread took ~1 ms for 30 MB. */
    ic_png_parallel_for(wr->threads, (int)((zn + IDAT_MAX - 1) / IDAT_MAX), idat_crc, &ij);

    static const uint8_t signature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
    uint8_t ihdr[13];
    put32(ihdr, (uint32_t)img->width);
    put32(ihdr + 4, (uint32_t)img->height);
    ihdr[8] = (uint8_t)(img->type == IC_U16 ? 16 : 8);
    ihdr[9] = colour_of[wr->out_ch];
    ihdr[10] = ihdr[11] = ihdr[12] = 0; /* deflate, adaptive filtering, no interlace */
    st = put_bytes(f, signature, sizeof signature);
    if (st == IC_OK)
        st = put_chunk(f, "IHDR", ihdr, sizeof ihdr, NULL, 0);
    struct libdeflate_compressor *c = compressor(&wr->w[0], wr->o->level);
    if (st == IC_OK && !c)
        st = ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a compressor");
    if (st == IC_OK)
        st = put_iccp(f, c, meta);
    if (st == IC_OK && meta && meta->exif && meta->exif_size <= 0x7fffffff)
        st = put_chunk(f, "eXIf", meta->exif, meta->exif_size, NULL, 0);
    if (st == IC_OK && mapn)
        st = put_chunk(f, IC_PNG_STRIPS_CHUNK, map, mapn, NULL, 0);
    for (size_t at = 0; st == IC_OK && at < zn; at += IDAT_MAX)
        st = put_idat(f, &ij, at);
    if (st == IC_OK)
        st = put_chunk(f, "IEND", NULL, 0, NULL, 0);
    free(map);
    free(ij.crc);
    free(pc);
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
    writer wr;
    ic_status st = writer_init(&wr, img, out_ch, o);
    if (st == IC_OK)
        st = write_png(f, &wr, meta);
    writer_free(&wr);
    return st;
}

#endif /* IC_HAVE_LIBDEFLATE */
