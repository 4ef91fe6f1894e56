/*
 * metadata.c - the ICC profile and EXIF block carried from input to output
 * (ic_metadata): ownership, the EXIF orientation tag, and whether a profile
 * fits the channels an output stores.
 *
 * The blobs are copied verbatim; the only thing read inside EXIF is the
 * orientation (tag 0x0112 of the first directory), for the CLI and the tests.
 * Every offset is checked against the block's size before it is read.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

void ic_metadata_free(ic_metadata *m)
{
    if (!m)
        return;
    free(m->icc);
    free(m->exif);
    memset(m, 0, sizeof *m);
}

ic_status ic_io_meta_copy(uint8_t **dst, size_t *dst_size, const void *src, size_t n)
{
    free(*dst);
    *dst = NULL;
    *dst_size = 0;
    if (!src || n == 0 || n > IC_MAX_METADATA)
        return IC_OK; /* nothing, or too large to carry: left out */
    *dst = malloc(n);
    if (!*dst)
        return IC_ERR_NOMEM;
    memcpy(*dst, src, n);
    *dst_size = n;
    return IC_OK;
}

/* 16- and 32-bit fields in the block's byte order. */
static unsigned get16(const uint8_t *p, int le)
{
    return le ? (unsigned)p[0] | (unsigned)p[1] << 8 : (unsigned)p[0] << 8 | (unsigned)p[1];
}

static uint32_t get32(const uint8_t *p, int le)
{
    return le ? (uint32_t)get16(p, 1) | (uint32_t)get16(p + 2, 1) << 16
              : (uint32_t)get16(p, 0) << 16 | (uint32_t)get16(p + 2, 0);
}

int ic_metadata_orientation(const ic_metadata *m)
{
    if (!m || !m->exif || m->exif_size < 8)
        return 0;
    const uint8_t *e = m->exif;
    const size_t n = m->exif_size;
    int le;
    if (e[0] == 'I' && e[1] == 'I' && e[2] == 42 && e[3] == 0)
        le = 1;
    else if (e[0] == 'M' && e[1] == 'M' && e[2] == 0 && e[3] == 42)
        le = 0;
    else
        return 0;
    const uint32_t ifd = get32(e + 4, le);
    if (ifd > n - 2)
        return 0;
    const unsigned count = get16(e + ifd, le);
    for (unsigned i = 0; i < count; i++) {
        const size_t at = (size_t)ifd + 2 + (size_t)i * 12;
        if (at + 12 > n)
            return 0;
        /* SHORT (type 3), one value, stored in the first bytes of the value field. */
        if (get16(e + at, le) == 0x0112 && get16(e + at + 2, le) == 3 &&
            get32(e + at + 4, le) == 1) {
            const unsigned v = get16(e + at + 8, le);
            return v >= 1 && v <= 8 ? (int)v : 0;
        }
    }
    return 0;
}

int ic_io_icc_fits(const ic_metadata *m, int out_ch)
{
    if (!m || !m->icc || m->icc_size < 20)
        return 0;
    const uint8_t *space = m->icc + 16; /* the profile's data colour space */
    return out_ch >= 3 ? memcmp(space, "RGB ", 4) == 0 : memcmp(space, "GRAY", 4) == 0;
}
