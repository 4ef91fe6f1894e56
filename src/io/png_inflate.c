/*
 * png_inflate.c - the pixels of a non-interlaced 8- or 16-bit PNG from its
 * whole IDAT stream: one libdeflate call into a buffer of every filtered row,
 * then the five row filters (RFC 2083 section 6) undone into the image, with
 * SSE2 on x86-64. png.c gathers the stream through libpng, which keeps
 * parsing every other chunk; whatever this file refuses png.c decodes with
 * libpng alone. Built with IC_HAVE_LIBDEFLATE only.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "core/image_internal.h"
#include "io/io_internal.h"

#if defined(__x86_64__) || defined(_M_X64)
#define HAVE_SSE2_PATH 1
#include <emmintrin.h>
#endif

/* The predictor of Paeth: whichever of left, up and up-left is nearest to
 * left + up - up-left, ties in that order. */
static inline unsigned paeth(unsigned a, unsigned b, unsigned c)
{
    const int pa = abs((int)b - (int)c);
    const int pb = abs((int)a - (int)c);
    const int pc = abs((int)a + (int)b - 2 * (int)c);
    if (pa <= pb && pa <= pc)
        return a;
    return pb <= pc ? b : c;
}

static void unfilter_scalar(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n,
                            size_t bpp, int type)
{
    size_t i = 0;
    switch (type) {
    case 0:
        memmove(dst, raw, n);
        break;
    case 1:
        for (; i < bpp && i < n; i++)
            dst[i] = raw[i];
        for (; i < n; i++)
            dst[i] = (uint8_t)(raw[i] + dst[i - bpp]);
        break;
    case 2:
        for (; i < n; i++)
            dst[i] = (uint8_t)(raw[i] + prev[i]);
        break;
    case 3:
        for (; i < bpp && i < n; i++)
            dst[i] = (uint8_t)(raw[i] + (prev[i] >> 1));
        for (; i < n; i++)
            dst[i] = (uint8_t)(raw[i] + ((dst[i - bpp] + prev[i]) >> 1));
        break;
    default: /* 4 */
        for (; i < bpp && i < n; i++)
            dst[i] = (uint8_t)(raw[i] + prev[i]); /* no left pixel: Paeth picks up */
        for (; i < n; i++)
            dst[i] = (uint8_t)(raw[i] + paeth(dst[i - bpp], prev[i], prev[i - bpp]));
        break;
    }
}

#ifdef HAVE_SSE2_PATH

#define INLINE static inline __attribute__((always_inline))

/* w (4 or 8) bytes in the low lanes, and back. */
INLINE __m128i ld(const uint8_t *p, size_t w)
{
    if (w == 4) {
        uint32_t v;
        memcpy(&v, p, 4);
        return _mm_cvtsi32_si128((int)v);
    }
    return _mm_loadl_epi64((const __m128i *)(const void *)p);
}

INLINE void st(uint8_t *p, __m128i v, size_t w)
{
    if (w == 4) {
        const uint32_t u = (uint32_t)_mm_cvtsi128_si32(v);
        memcpy(p, &u, 4);
    } else {
        _mm_storel_epi64((__m128i *)(void *)p, v);
    }
}

/* The left pixel (bytes; for Avg its complement; for Paeth 16-bit lanes)
 * and, for Paeth, the up-left one. */
typedef struct px_state {
    __m128i a, a16, c16;
} px_state;

/* One pixel: x its filtered bytes, b the pixel above. With `exact`, only
 * the bytes in `keep` get a predictor, so that the bytes loaded past the
 * pixel come out as they went in; else those bytes are left undefined. */
INLINE __m128i px_step(int type, __m128i x, __m128i b, px_state *s, __m128i keep, int exact)
{
    const __m128i zero = _mm_setzero_si128();
    if (type == 3) {
        /* floor((a + b) / 2) is ~avg_epu8(~a, ~b), and ~(x + ~p) is p - x:
         * kept as the complement, each pixel waits on two instructions. */
        const __m128i ones = _mm_cmpeq_epi8(zero, zero);
        const __m128i p = _mm_avg_epu8(s->a, _mm_xor_si128(b, ones));
        s->a = _mm_sub_epi8(p, x);
        if (!exact)
            return _mm_xor_si128(s->a, ones);
        return _mm_or_si128(_mm_andnot_si128(s->a, keep), _mm_andnot_si128(keep, x));
    }
    __m128i pred;
    if (type == 1) {
        pred = s->a;
    } else { /* Paeth on 16-bit lanes */
        const __m128i b16 = _mm_unpacklo_epi8(b, zero);
        const __m128i bc = _mm_sub_epi16(b16, s->c16);
        const __m128i ac = _mm_sub_epi16(s->a16, s->c16);
        const __m128i sum = _mm_add_epi16(bc, ac);
        const __m128i pa = _mm_max_epi16(bc, _mm_sub_epi16(zero, bc));
        const __m128i pb = _mm_max_epi16(ac, _mm_sub_epi16(zero, ac));
        const __m128i pc = _mm_max_epi16(sum, _mm_sub_epi16(zero, sum));
        const __m128i not_a = _mm_or_si128(_mm_cmpgt_epi16(pa, pb), _mm_cmpgt_epi16(pa, pc));
        const __m128i take_c = _mm_cmpgt_epi16(pb, pc);
        const __m128i bc_pick =
            _mm_or_si128(_mm_andnot_si128(take_c, b16), _mm_and_si128(take_c, s->c16));
        const __m128i p16 =
            _mm_or_si128(_mm_andnot_si128(not_a, s->a16), _mm_and_si128(not_a, bc_pick));
        pred = _mm_packus_epi16(p16, p16);
        s->c16 = b16;
    }
    const __m128i out = _mm_add_epi8(x, exact ? _mm_and_si128(pred, keep) : pred);
    s->a = out;
    if (type == 4)
        s->a16 = _mm_unpacklo_epi8(out, zero);
    return out;
}

/* Sub, Avg and Paeth carry each pixel into the next, so one pixel at a time,
 * its bytes side by side (wider registers would not help): loads and stores
 * of w bytes (bpp rounded up to 4 or 8), the last pixel through a copy where
 * w > bpp. The bytes stored past a pixel are the next pixel's until it is
 * stored; with `exact` (dst is raw) they are raw's own. */
INLINE void unfilter_px_as(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n,
                           size_t bpp, size_t w, int type, int exact)
{
    px_state s;
    s.a = s.a16 = s.c16 = _mm_setzero_si128();
    if (type == 3)
        s.a = _mm_cmpeq_epi8(s.a, s.a); /* the complement of no left pixel */
    const __m128i keep = _mm_cvtsi64_si128(bpp == 8 ? -1LL : (long long)((1ULL << (8 * bpp)) - 1));
    size_t i = 0;
    for (; i + w <= n; i += bpp)
        st(dst + i, px_step(type, ld(raw + i, w), ld(prev + i, w), &s, keep, exact), w);
    if (i < n) {
        uint8_t tr[8] = {0}, tp[8] = {0}, to[8];
        memcpy(tr, raw + i, bpp);
        memcpy(tp, prev + i, bpp);
        st(to, px_step(type, ld(tr, w), ld(tp, w), &s, keep, exact), w);
        memcpy(dst + i, to, bpp);
    }
}

INLINE void unfilter_px(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n, size_t bpp,
                        size_t w, int type)
{
    if (dst == raw || w == bpp)
        unfilter_px_as(dst, raw, prev, n, bpp, w, type, 1);
    else
        unfilter_px_as(dst, raw, prev, n, bpp, w, type, 0);
}

static void unfilter_sse2(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n,
                          size_t bpp, int type)
{
    if (type == 2) {
        size_t i = 0;
        for (; i + 16 <= n; i += 16) {
            const __m128i v =
                _mm_add_epi8(_mm_loadu_si128((const __m128i *)(const void *)(raw + i)),
                             _mm_loadu_si128((const __m128i *)(const void *)(prev + i)));
            _mm_storeu_si128((__m128i *)(void *)(dst + i), v);
        }
        for (; i < n; i++)
            dst[i] = (uint8_t)(raw[i] + prev[i]);
        return;
    }
    /* Constant pixel sizes (PNG's of 3 bytes and more), so that each copy
     * loads and stores in place. */
    switch (type == 0 ? 0 : bpp) {
    case 3:
        unfilter_px(dst, raw, prev, n, 3, 4, type);
        break;
    case 4:
        unfilter_px(dst, raw, prev, n, 4, 4, type);
        break;
    case 6:
        unfilter_px(dst, raw, prev, n, 6, 8, type);
        break;
    case 8:
        unfilter_px(dst, raw, prev, n, 8, 8, type);
        break;
    default:
        unfilter_scalar(dst, raw, prev, n, bpp, type);
        break;
    }
}

#endif /* HAVE_SSE2_PATH */

int ic_png_unfilter_isa_best(void)
{
#ifdef HAVE_SSE2_PATH
    return IC_PNG_ISA_SSE2;
#else
    return IC_PNG_ISA_SCALAR;
#endif
}

int ic_png_unfilter_row(uint8_t *dst, const uint8_t *raw, const uint8_t *prev, size_t n, size_t bpp,
                        int type, int isa)
{
    if (type < 0 || type > 4 || bpp < 1 || bpp > 8 || n % bpp != 0)
        return 0;
#ifdef HAVE_SSE2_PATH
    if (isa == IC_PNG_ISA_SSE2) {
        unfilter_sse2(dst, raw, prev, n, bpp, type);
        return 1;
    }
#endif
    (void)isa;
    unfilter_scalar(dst, raw, prev, n, bpp, type);
    return 1;
}

#ifdef IC_HAVE_LIBDEFLATE

#include <libdeflate.h>

static int host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

size_t ic_png_inflated_size(const ic_image *img)
{
    const size_t row = (size_t)img->width * (size_t)img->channels * ic_sample_size(img->type);
    return (size_t)img->height * (row + 1);
}

int ic_png_zlib_header_ok(const uint8_t *z, size_t zn, size_t total)
{
    /* zlib (libpng's inflater) refuses a match farther back than the window
     * the header declares; libdeflate does not look. Deflate's own limit is
     * 32 KiB, the window of CINFO 7. */
    return zn >= 2 && (z[0] & 0x0f) == 8 && (z[0] >> 4) <= 7 && (z[1] & 0x20) == 0 &&
           ((unsigned)z[0] << 8 | z[1]) % 31 == 0 &&
           ((z[0] >> 4) == 7 || ((size_t)1 << ((z[0] >> 4) + 8)) >= total);
}

int ic_png_inflate_image(const uint8_t *z, size_t zn, ic_image *img, int isa)
{
    const size_t bpp = (size_t)img->channels * ic_sample_size(img->type);
    const size_t row = (size_t)img->width * bpp;
    const size_t total = ic_png_inflated_size(img);
    if (!ic_png_zlib_header_ok(z, zn, total))
        return 0;
    uint8_t *buf = malloc(total);
    if (buf)
        ic__huge_pages(buf, total);
    uint8_t *zeros = calloc(1, row);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    int ok = buf && zeros && d;
    size_t used = 0;
    /* Exactly the rows: a short stream, or one with more data, is libpng's
     * to judge (it calls some of these errors, some warnings). */
    ok = ok &&
         libdeflate_zlib_decompress_ex(d, z, zn, buf, total, &used, NULL) == LIBDEFLATE_SUCCESS;
    const int swap = img->type == IC_U16 && host_little_endian();
    for (int y = 0; ok && y < img->height; y++) {
        const uint8_t *raw = buf + (size_t)y * (row + 1);
        uint8_t *dst = img->data + (size_t)y * img->pitch;
        const uint8_t *prev = y ? dst - img->pitch : zeros;
        ok = ic_png_unfilter_row(dst, raw + 1, prev, row, bpp, raw[0], isa);
        if (ok && swap && y > 0) /* the row above is no longer needed big-endian */
            ic_io_be16_load((uint16_t *)(void *)(dst - img->pitch), dst - img->pitch, row / 2);
    }
    if (ok && swap) {
        uint8_t *last = img->data + (size_t)(img->height - 1) * img->pitch;
        ic_io_be16_load((uint16_t *)(void *)last, last, row / 2);
    }
    libdeflate_free_decompressor(d);
    free(zeros);
    free(buf);
    return ok;
}

#endif /* IC_HAVE_LIBDEFLATE */
