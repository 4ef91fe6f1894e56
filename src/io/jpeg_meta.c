/*
 * jpeg_meta.c - the EXIF and ICC segments of a JPEG byte stream made by
 * another encoder (nvJPEG on the GPU path): inserted after SOI (after a JFIF
 * APP0 when one follows SOI), as the CPU writer (jpeg.c) places them.
 *
 * EXIF is one APP1 segment "Exif\0\0" + the block (left out over 65527
 * bytes, the most a segment holds). The ICC profile is split into APP2
 * segments "ICC_PROFILE\0", sequence number (from 1), count, then at most
 * 65519 bytes each (ICC.1:2010 Annex B.4), so that at most 255 x 65519 bytes
 * fit; a larger profile is left out, as is one that does not fit the
 * channels (ic_io_icc_fits). Nothing here decodes the image.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "imgconv.h"
#include "io/io_internal.h"

#define SEG_MAX 65533u            /* payload bytes of one marker segment (length 65535) */
#define ICC_CHUNK (SEG_MAX - 14u) /* "ICC_PROFILE\0", seq, count */

static uint8_t *put_segment_head(uint8_t *p, uint8_t marker, size_t payload)
{
    p[0] = 0xFF;
    p[1] = marker;
    p[2] = (uint8_t)((payload + 2) >> 8);
    p[3] = (uint8_t)(payload + 2);
    return p + 4;
}

size_t ic_jpeg_metadata_size(const ic_metadata *meta, int channels)
{
    size_t n = 0;
    if (meta && meta->exif && meta->exif_size > 0 && meta->exif_size + 6 <= SEG_MAX)
        n += 4 + 6 + meta->exif_size;
    if (meta && ic_io_icc_fits(meta, channels) && meta->icc_size <= (size_t)255 * ICC_CHUNK) {
        const size_t chunks = (meta->icc_size + ICC_CHUNK - 1) / ICC_CHUNK;
        n += chunks * (4 + 14) + meta->icc_size;
    }
    return n;
}

ic_status ic_jpeg_add_metadata(uint8_t **buf, size_t *cap, size_t *n, const ic_metadata *meta,
                               int channels)
{
    const size_t add = ic_jpeg_metadata_size(meta, channels);
    if (add == 0)
        return IC_OK;
    uint8_t *b = *buf;
    if (*n < 4 || b[0] != 0xFF || b[1] != 0xD8)
        return ic_fail(IC_ERR_INTERNAL, "JPEG: the encoder's output does not start with SOI");
    /* After SOI, and after a JFIF APP0 right behind it. */
    size_t at = 2;
    if (*n >= at + 4 && b[at] == 0xFF && b[at + 1] == 0xE0) {
        const size_t len = (size_t)b[at + 2] << 8 | b[at + 3];
        if (len >= 2 && at + 2 + len <= *n)
            at += 2 + len;
    }
    if (*cap < *n + add) {
        uint8_t *nb = realloc(b, *n + add);
        if (!nb)
            return ic_fail(IC_ERR_NOMEM, "JPEG: out of memory adding %zu bytes of metadata", add);
        *buf = b = nb;
        *cap = *n + add;
    }
    memmove(b + at + add, b + at, *n - at);
    uint8_t *p = b + at;
    if (meta->exif && meta->exif_size > 0 && meta->exif_size + 6 <= SEG_MAX) {
        p = put_segment_head(p, 0xE1, 6 + meta->exif_size);
        memcpy(p, "Exif\0\0", 6);
        memcpy(p + 6, meta->exif, meta->exif_size);
        p += 6 + meta->exif_size;
    }
    if (ic_io_icc_fits(meta, channels) && meta->icc_size <= (size_t)255 * ICC_CHUNK) {
        const size_t chunks = (meta->icc_size + ICC_CHUNK - 1) / ICC_CHUNK;
        for (size_t i = 0; i < chunks; i++) {
            const size_t off = i * ICC_CHUNK;
            const size_t len = meta->icc_size - off < ICC_CHUNK ? meta->icc_size - off : ICC_CHUNK;
            p = put_segment_head(p, 0xE2, 14 + len);
            memcpy(p, "ICC_PROFILE\0", 12);
            p[12] = (uint8_t)(i + 1);
            p[13] = (uint8_t)chunks;
            memcpy(p + 14, meta->icc + off, len);
            p += 14 + len;
        }
    }
    *n += add;
    return IC_OK;
}
