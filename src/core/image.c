/*
 * image.c - the multi-channel image of seed 004 (width, height, channels,
 * AoS/SoA) with seed 000's pitched rows: create, wrap, free, compare, copy with
 * layout and sample-type (8/16-bit) conversion. All size arithmetic is
 * overflow-checked.
 */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "core/error.h"
#include "core/image_internal.h"
#include "imgconv.h"

int ic__mul_size(size_t a, size_t b, size_t *out)
{
    if (a != 0 && b > SIZE_MAX / a)
        return 0;
    *out = a * b;
    return 1;
}

static int valid_dims(int width, int height, int channels)
{
    return width >= 1 && height >= 1 && width <= IC_MAX_DIM && height <= IC_MAX_DIM &&
           channels >= 1 && channels <= 4;
}

size_t ic_sample_size(ic_sample_type type)
{
    return type == IC_U8 ? 1u : type == IC_U16 ? 2u : type == IC_F32 ? 4u : 0u;
}

unsigned ic_sample_max(ic_sample_type type)
{
    return type == IC_U8 ? 255u : type == IC_U16 ? 65535u : type == IC_F32 ? 1u : 0u;
}

size_t ic_image_row_bytes(const ic_image *img)
{
    const size_t n =
        img->layout == IC_AOS ? (size_t)img->width * (size_t)img->channels : (size_t)img->width;
    return n * ic_sample_size(img->type);
}

size_t ic_image_size_bytes(const ic_image *img)
{
    size_t rows = (size_t)img->height * (img->layout == IC_SOA ? (size_t)img->channels : 1u);
    size_t total;
    if (!ic__mul_size(rows, img->pitch, &total))
        return 0;
    return total;
}

uint64_t ic_max_memory_default(void)
{
    const uint64_t cap = (uint64_t)2 << 30;
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages <= 0 || page <= 0)
        return cap;
    const uint64_t quarter = (uint64_t)pages * (uint64_t)page / 4u;
    return quarter < cap ? quarter : cap;
}

void ic__huge_pages(void *p, size_t n)
{
#ifdef MADV_HUGEPAGE
    const uintptr_t huge = (uintptr_t)2 << 20;
    const uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    const uintptr_t hi = ((uintptr_t)p + n) & ~(huge - 1);
    if (hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
#else
    (void)p;
    (void)n;
#endif
}

void ic__pages_populate(void *p, size_t n)
{
#ifdef MADV_POPULATE_WRITE
    const long page = sysconf(_SC_PAGESIZE);
    if (page <= 0 || n == 0)
        return;
    const uintptr_t lo = (uintptr_t)p & ~(uintptr_t)(page - 1);
    (void)madvise((void *)lo, (uintptr_t)p + n - lo, MADV_POPULATE_WRITE);
#else
    (void)p;
    (void)n;
#endif
}

/* ic_image.owner: how ic_image_free releases what ic_image_create made. */
enum { OWNER_HEAP = 1, OWNER_MAPPED = 2 };

/* Images from this size on are mapped rather than taken from the heap: the
 * pages come zeroed, huge where the kernel allows, and populated in one call
 * instead of one fault per 4 KiB under a memset, which costs more than the
 * decode that follows on some kernels (3-10x measured, bench/probe/fault_probe.c). */
#define MAPPED_MIN ((size_t)8 << 20)
/* The mapping's base and length sit in a header just below the data. */
#define MAPPED_HEAD ((size_t)64)

static void *mapped_alloc(size_t n, int populate)
{
#if defined(MAP_ANONYMOUS) && defined(MAP_FAILED)
    const size_t huge = (size_t)2 << 20;
    if (n > SIZE_MAX - huge - MAPPED_HEAD)
        return NULL;
    const size_t len = n + huge + MAPPED_HEAD;
    void *base = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (base == MAP_FAILED)
        return NULL;
    /* data on a huge-page boundary, with room for the header below it */
    uint8_t *data =
        (uint8_t *)(((uintptr_t)base + MAPPED_HEAD + huge - 1) & ~(uintptr_t)(huge - 1));
    ((void **)(void *)(data - MAPPED_HEAD))[0] = base;
    ((size_t *)(void *)(data - MAPPED_HEAD))[1] = len;
    ic__huge_pages(data, n);
#ifdef MADV_POPULATE_WRITE
    if (populate) /* best effort: faults remain the fallback */
        (void)madvise(data, n, MADV_POPULATE_WRITE);
#else
    (void)populate;
#endif
    return data;
#else
    (void)n;
    return NULL;
#endif
}

static void mapped_free(uint8_t *data)
{
#if defined(MAP_ANONYMOUS) && defined(MAP_FAILED)
    void *base = ((void **)(void *)(data - MAPPED_HEAD))[0];
    const size_t len = ((size_t *)(void *)(data - MAPPED_HEAD))[1];
    munmap(base, len);
#else
    (void)data;
#endif
}

static ic_status image_create(ic_image *img, int width, int height, int channels, ic_layout layout,
                              ic_sample_type type, int zero)
{
    if (!img)
        return ic_fail(IC_ERR_INVALID_ARG, "no image to fill (NULL)");
    memset(img, 0, sizeof *img);
    if (layout != IC_AOS && layout != IC_SOA)
        return ic_fail(IC_ERR_INVALID_ARG, "unknown layout %d", (int)layout);
    if (ic_sample_size(type) == 0)
        return ic_fail(IC_ERR_INVALID_ARG, "unknown sample type %d", (int)type);
    if (width > IC_MAX_DIM || height > IC_MAX_DIM)
        return ic_fail(IC_ERR_TOO_LARGE, "image %dx%d exceeds the size limit of %d pixels per side",
                       width, height, IC_MAX_DIM);
    if (!valid_dims(width, height, channels))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "image %dx%d with %d channels: sizes must be >= 1, channels 1..4", width,
                       height, channels);
    img->width = width;
    img->height = height;
    img->channels = channels;
    img->layout = layout;
    img->type = type;
    size_t row = ic_image_row_bytes(img);
    img->pitch = (row + 63u) & ~(size_t)63u;
    size_t rows = (size_t)height * (layout == IC_SOA ? (size_t)channels : 1u), total;
    if (!ic__mul_size(rows, img->pitch, &total)) {
        memset(img, 0, sizeof *img);
        return ic_fail(IC_ERR_TOO_LARGE, "image %dx%d: size overflows", width, height);
    }
    /* unzeroed: the pages are first touched by the threads that write them
     * (4 ms for 72 MB on 16 threads on the H200, against 10 ms populated) */
    img->data = total >= MAPPED_MIN ? mapped_alloc(total, zero) : NULL;
    img->owner = img->data ? OWNER_MAPPED : OWNER_HEAP;
    if (!img->data && (img->data = aligned_alloc(64, total)) != NULL) {
        ic__huge_pages(img->data, total);
        if (zero)
            memset(img->data, 0, total);
    }
    if (!img->data) {
        memset(img, 0, sizeof *img);
        return ic_fail(IC_ERR_NOMEM, "out of memory for a %dx%d image (%zu bytes)", width, height,
                       total);
    }
    return IC_OK;
}

ic_status ic_image_create_type(ic_image *img, int width, int height, int channels, ic_layout layout,
                               ic_sample_type type)
{
    return image_create(img, width, height, channels, layout, type, 1);
}

ic_status ic__image_create_unzeroed(ic_image *img, int width, int height, int channels,
                                    ic_layout layout, ic_sample_type type)
{
    return image_create(img, width, height, channels, layout, type, 0);
}

ic_status ic_image_create(ic_image *img, int width, int height, int channels, ic_layout layout)
{
    return ic_image_create_type(img, width, height, channels, layout, IC_U8);
}

ic_status ic_image_wrap_type(ic_image *img, void *data, int width, int height, int channels,
                             ic_layout layout, size_t pitch, ic_sample_type type)
{
    if (!img)
        return ic_fail(IC_ERR_INVALID_ARG, "no image to fill (NULL)");
    memset(img, 0, sizeof *img);
    if (!data || !valid_dims(width, height, channels) || (layout != IC_AOS && layout != IC_SOA) ||
        ic_sample_size(type) == 0)
        return ic_fail(
            IC_ERR_INVALID_ARG,
            "cannot wrap %dx%d with %d channels: NULL data, a size < 1, channels outside "
            "1..4, an unknown layout or sample type",
            width, height, channels);
    img->width = width;
    img->height = height;
    img->channels = channels;
    img->layout = layout;
    img->type = type;
    size_t row = ic_image_row_bytes(img);
    if (pitch == 0)
        pitch = row;
    const size_t es = ic_sample_size(type);
    if (pitch < row || pitch % es != 0 || (uintptr_t)data % es != 0) {
        memset(img, 0, sizeof *img);
        return ic_fail(IC_ERR_INVALID_ARG,
                       "pitch %zu is smaller than a row (%zu bytes) or not "
                       "aligned to the %zu-byte samples",
                       pitch, row, es);
    }
    img->pitch = pitch;
    img->data = data;
    img->owner = 0;
    if (ic_image_size_bytes(img) == 0) {
        memset(img, 0, sizeof *img);
        return ic_fail(IC_ERR_TOO_LARGE, "image %dx%d: size overflows", width, height);
    }
    return IC_OK;
}

ic_status ic_image_wrap(ic_image *img, uint8_t *data, int width, int height, int channels,
                        ic_layout layout, size_t pitch)
{
    return ic_image_wrap_type(img, data, width, height, channels, layout, pitch, IC_U8);
}

ic_status ic_image_wrap_device(ic_image *img, void *data, int width, int height, int channels,
                               ic_layout layout, size_t pitch, int device, void *stream)
{
    return ic_image_wrap_device_type(img, data, width, height, channels, layout, pitch, IC_U8,
                                     device, stream);
}

ic_status ic_image_wrap_device_type(ic_image *img, void *data, int width, int height, int channels,
                                    ic_layout layout, size_t pitch, ic_sample_type type, int device,
                                    void *stream)
{
    if (device < 0) {
        if (img)
            memset(img, 0, sizeof *img);
        return ic_fail(IC_ERR_INVALID_ARG, "negative device number %d", device);
    }
    ic_status st = ic_image_wrap_type(img, data, width, height, channels, layout, pitch, type);
    if (st != IC_OK)
        return st;
    img->memory = IC_MEM_DEVICE;
    img->device = device;
    img->stream = stream;
    return IC_OK;
}

void ic_image_free(ic_image *img)
{
    if (!img)
        return;
    if (img->owner == OWNER_MAPPED)
        mapped_free(img->data);
    else if (img->owner)
        free(img->data);
    memset(img, 0, sizeof *img);
}

int ic_image_equal(const ic_image *a, const ic_image *b)
{
    if (!a || !b || !a->data || !b->data || a->memory != IC_MEM_HOST || b->memory != IC_MEM_HOST)
        return 0;
    if (a->width != b->width || a->height != b->height || a->channels != b->channels ||
        a->type != b->type)
        return 0;
    if (a->layout == b->layout) {
        size_t n = ic_image_row_bytes(a);
        int planes = a->layout == IC_SOA ? a->channels : 1;
        for (int p = 0; p < planes; p++)
            for (int y = 0; y < a->height; y++)
                if (memcmp(ic_image_at(a, 0, y, p), ic_image_at(b, 0, y, p), n) != 0)
                    return 0;
        return 1;
    }
    for (int y = 0; y < a->height; y++)
        for (int x = 0; x < a->width; x++)
            for (int c = 0; c < a->channels; c++)
                if (memcmp(ic_image_at(a, x, y, c), ic_image_at(b, x, y, c),
                           ic_sample_size(a->type)) != 0)
                    return 0;
    return 1;
}

/* One sample converted from type `from` to type `to` (ic_image_copy's rule). */
static unsigned convert_sample(unsigned v, ic_sample_type from, ic_sample_type to)
{
    if (from == to)
        return v;
    return to == IC_U16 ? v * 257u : (v + 128u) / 257u;
}

/* A float sample (nominal 0..1) to an integer one of 0..max: scaled, clamped
 * (NaN -> 0), rounded to nearest, ties to even. */
static unsigned float_to_int(float v, unsigned max)
{
    double d = (double)v * max;
    d = d > 0 ? d : 0;
    d = d < max ? d : max;
    return (unsigned)rint(d);
}

/* Layout or type conversion, one row of one channel at a time. */
static void copy_convert(ic_image *dst, const ic_image *src)
{
    const int w = src->width, h = src->height, ch = src->channels;
    const float smax = (float)ic_sample_max(src->type);
    const unsigned dmax = ic_sample_max(dst->type);
    for (int y = 0; y < h; y++)
        for (int c = 0; c < ch; c++)
            for (int x = 0; x < w; x++) {
                if (dst->type == IC_F32)
                    ic_image_setf(dst, x, y, c, ic_image_getf(src, x, y, c) / smax);
                else if (src->type == IC_F32)
                    ic_image_set(dst, x, y, c, float_to_int(ic_image_getf(src, x, y, c), dmax));
                else
                    ic_image_set(dst, x, y, c,
                                 convert_sample(ic_image_get(src, x, y, c), src->type, dst->type));
            }
}

/* AoS <-> SoA of one sample type: the interleaved row scattered or gathered
 * with the sample size known to the compiler. */
#define COPY_LAYOUT(T)                                                                             \
    for (int y = 0; y < h; y++)                                                                    \
        for (int c = 0; c < ch; c++) {                                                             \
            const T *s = (const T *)(const void *)ic_image_at(src, 0, y, c);                       \
            T *d = (T *)(void *)ic_image_at(dst, 0, y, c);                                         \
            const size_t ss = src->layout == IC_AOS ? (size_t)ch : 1u;                             \
            const size_t ds = dst->layout == IC_AOS ? (size_t)ch : 1u;                             \
            for (int x = 0; x < w; x++)                                                            \
                d[(size_t)x * ds] = s[(size_t)x * ss];                                             \
        }

ic_status ic_image_copy(ic_image *dst, const ic_image *src)
{
    if (!dst || !src || !dst->data || !src->data)
        return ic_fail(IC_ERR_INVALID_ARG, "no source or destination image");
    /* host code must not touch device memory */
    if (dst->memory != IC_MEM_HOST || src->memory != IC_MEM_HOST)
        return ic_fail(IC_ERR_UNSUPPORTED, "ic_image_copy copies host images only");
    if (ic_sample_size(dst->type) == 0 || ic_sample_size(src->type) == 0)
        return ic_fail(IC_ERR_INVALID_ARG, "unknown sample type");
    if (dst->width != src->width || dst->height != src->height || dst->channels != src->channels)
        return ic_fail(IC_ERR_INVALID_ARG, "destination %dx%dx%d differs from the source %dx%dx%d",
                       dst->width, dst->height, dst->channels, src->width, src->height,
                       src->channels);
    const int w = src->width, h = src->height, ch = src->channels;
    if (dst->type != src->type) {
        copy_convert(dst, src);
    } else if (dst->layout == src->layout) {
        size_t n = ic_image_row_bytes(src);
        int planes = src->layout == IC_SOA ? ch : 1;
        for (int p = 0; p < planes; p++)
            for (int y = 0; y < h; y++)
                memmove(ic_image_at(dst, 0, y, p), ic_image_at(src, 0, y, p), n);
    } else if (src->type == IC_F32) {
        COPY_LAYOUT(float)
    } else if (src->type == IC_U16) {
        COPY_LAYOUT(uint16_t)
    } else {
        COPY_LAYOUT(uint8_t)
    }
    return IC_OK;
}

ic_status ic_image_clone(ic_image *dst, const ic_image *src, ic_layout layout)
{
    if (!dst || !src || !src->data)
        return ic_fail(IC_ERR_INVALID_ARG, "no source or destination image");
    if (src->memory != IC_MEM_HOST) {
        memset(dst, 0, sizeof *dst);
        return ic_fail(IC_ERR_UNSUPPORTED, "ic_image_clone copies host images only");
    }
    ic_status st =
        ic_image_create_type(dst, src->width, src->height, src->channels, layout, src->type);
    if (st != IC_OK)
        return st;
    st = ic_image_copy(dst, src);
    if (st != IC_OK)
        ic_image_free(dst);
    return st;
}
