/*
 * io_util.c - what every reader and writer of src/io/ shares: the limit
 * check a reader makes on a header before allocating, channel conversion of
 * interleaved rows, and big-endian 16-bit samples. The format files call
 * these and never io.c, which keeps the format table and the dispatch.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/types.h>

#include "imgconv.h"
#include "io/io_internal.h"

/* Bytes ic_image_create_type takes for a width x height x channels AoS image
 * of es-byte samples (rows padded to 64 bytes); sides are <= IC_MAX_DIM, so
 * nothing overflows. */
static uint64_t image_bytes(uint64_t width, uint64_t height, int channels, size_t es)
{
    return ((width * (uint64_t)channels * es + 63u) & ~(uint64_t)63u) * height;
}

/* A byte count for a message: in the largest of bytes, KiB, MiB, GiB that
 * keeps it at 1 or more ("0.0 MiB" says nothing). */
static void bytes_text(char *buf, size_t n, uint64_t v)
{
    static const char *const unit[] = {"KiB", "MiB", "GiB", "TiB"};
    if (v < 1024) {
        snprintf(buf, n, "%llu bytes", (unsigned long long)v);
        return;
    }
    double x = (double)v / 1024.0;
    int u = 0;
    while (x >= 1024.0 && u < 3) {
        x /= 1024.0;
        u++;
    }
    snprintf(buf, n, "%.1f %s", x, unit[u]);
}

void ic_bytes_text(char *need_text, char *limit_text, size_t n, uint64_t need, uint64_t limit)
{
    bytes_text(need_text, n, need);
    bytes_text(limit_text, n, limit);
    if (!strcmp(need_text, limit_text)) {
        snprintf(need_text, n, "%llu bytes", (unsigned long long)need);
        snprintf(limit_text, n, "%llu bytes", (unsigned long long)limit);
    }
}

ic_status ic_io_check_dims(uint64_t width, uint64_t height, int channels, const ic_io_limits *lim,
                           char *err, size_t errlen)
{
    return ic_io_check_dims_type(width, height, channels, IC_U8, lim, err, errlen);
}

ic_status ic_io_check_dims_type(uint64_t width, uint64_t height, int channels, ic_sample_type type,
                                const ic_io_limits *lim, char *err, size_t errlen)
{
    const size_t es = ic_sample_size(type) ? ic_sample_size(type) : 1u;
    if (width == 0 || height == 0) {
        return ic_errf(err, errlen, IC_ERR_FORMAT, "image has zero width or height (%llux%llu)",
                       (unsigned long long)width, (unsigned long long)height);
    }
    if (width > IC_MAX_DIM || height > IC_MAX_DIM) {
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                       "image %llux%llu exceeds the size limit of %d pixels per side",
                       (unsigned long long)width, (unsigned long long)height, IC_MAX_DIM);
    }
    /* Both sides are <= 2^20 here, so the product cannot overflow. */
    if (width * height > lim->max_pixels) {
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                       "image %llux%llu exceeds the pixel limit %llu (raise it with "
                       "--max-pixels)",
                       (unsigned long long)width, (unsigned long long)height,
                       (unsigned long long)lim->max_pixels);
    }
    if (channels <= 0)
        return IC_OK;
    uint64_t need = image_bytes(width, height, channels, es);
    if (lim->convert_channels > 0)
        need += image_bytes(width, height, lim->convert_channels, es);
    if (need > lim->max_memory) {
        char a[32], b[32];
        ic_bytes_text(a, b, sizeof a, need, lim->max_memory);
        return ic_errf(err, errlen, IC_ERR_TOO_LARGE,
                       "image %llux%llu needs %s to decode, over the memory limit %s (raise it "
                       "with --max-memory)",
                       (unsigned long long)width, (unsigned long long)height, a, b);
    }
    ic_io_hook *h = lim->hook;
    if (h && !h->fired) {
        h->fired = 1;
        h->width = (int)width;
        h->height = (int)height;
        if (h->fn)
            h->fn(h->user, (int)width, (int)height);
    }
    if (h && h->stop) /* any error will do: the reader cleans up and returns */
        return ic_errf(err, errlen, IC_ERR_FORMAT, "header read");
    return IC_OK;
}

ic_status ic_io_check_room(FILE *f, uint64_t raw_bytes, const ic_io_limits *lim, const char *what,
                           char *err, size_t errlen)
{
    if (lim->hook && lim->hook->stop)
        return IC_OK; /* ic_image_probe may see only the start of the file */
    const off_t here = ftello(f);
    if (here < 0 || fseeko(f, 0, SEEK_END) != 0)
        return IC_OK; /* not seekable: the decoder finds out */
    const off_t end = ftello(f);
    if (fseeko(f, here, SEEK_SET) != 0)
        return ic_errf(err, errlen, IC_ERR_IO, "cannot seek: %s", strerror(errno));
    /* Deflate codes at most 258 bytes in two bits or so: 1032:1 at best. */
    if (end >= 0 && (uint64_t)end < raw_bytes / 1032u) {
        return ic_errf(err, errlen, IC_ERR_FORMAT,
                       "truncated %s data (%lld bytes cannot hold the %llu bytes of samples the "
                       "header declares)",
                       what, (long long)end, (unsigned long long)raw_bytes);
    }
    return IC_OK;
}

/* Rec.601 luma of 8- or 16-bit samples (65535 * 1000 fits in 32 bits). */
static inline unsigned luma601(unsigned r, unsigned g, unsigned b)
{
    return (299u * r + 587u * g + 114u * b + 500u) / 1000u;
}

/* The same weights on float samples (no rounding). */
static inline float luma601f(float r, float g, float b)
{
    return 0.299f * r + 0.587f * g + 0.114f * b;
}

/* seed 004's channel_force on rows of T samples whose maximum is MAX. */
#define CONVERT_ROW(NAME, T, MAX, LUMA)                                                            \
    void NAME(T *dst, int dst_ch, const T *src, int src_ch, int width)                             \
    {                                                                                              \
        const int src_alpha = (src_ch == 2 || src_ch == 4);                                        \
        const int dst_alpha = (dst_ch == 2 || dst_ch == 4);                                        \
        const int src_colour = (src_ch >= 3);                                                      \
        const int dst_colour = (dst_ch >= 3);                                                      \
        for (int x = 0; x < width; x++) {                                                          \
            const T *s = src + (size_t)x * (size_t)src_ch;                                         \
            T *d = dst + (size_t)x * (size_t)dst_ch;                                               \
            if (dst_colour) {                                                                      \
                if (src_colour) {                                                                  \
                    d[0] = s[0];                                                                   \
                    d[1] = s[1];                                                                   \
                    d[2] = s[2];                                                                   \
                } else {                                                                           \
                    d[0] = d[1] = d[2] = s[0];                                                     \
                }                                                                                  \
            } else {                                                                               \
                d[0] = src_colour ? (T)LUMA(s[0], s[1], s[2]) : s[0];                              \
            }                                                                                      \
            if (dst_alpha)                                                                         \
                d[dst_ch - 1] = src_alpha ? s[src_ch - 1] : (T)MAX;                                \
        }                                                                                          \
    }
CONVERT_ROW(ic_io_convert_row, uint8_t, 255u, luma601)
CONVERT_ROW(ic_io_convert_row16, uint16_t, 65535u, luma601)
static CONVERT_ROW(convert_rowf, float, 1.0f, luma601f)

    void ic_io_convert_row_type(void *dst, int dst_ch, const void *src, int src_ch, int width,
                                ic_sample_type type)
{
    if (type == IC_F32)
        convert_rowf(dst, dst_ch, src, src_ch, width);
    else if (type == IC_U16)
        ic_io_convert_row16(dst, dst_ch, src, src_ch, width);
    else
        ic_io_convert_row(dst, dst_ch, src, src_ch, width);
}

void ic_io_be16_store(uint8_t *dst, const uint16_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const unsigned v = src[i];
        dst[2 * i] = (uint8_t)(v >> 8);
        dst[2 * i + 1] = (uint8_t)v;
    }
}

void ic_io_be16_load(uint16_t *dst, const uint8_t *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        dst[i] = (uint16_t)((unsigned)src[2 * i] << 8 | src[2 * i + 1]);
}
