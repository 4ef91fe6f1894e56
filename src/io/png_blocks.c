/*
 * png_blocks.c - where the final block of a raw deflate stream starts and
 * where the stream ends, found by walking its blocks' codes (RFC 1951)
 * without writing the data they stand for: what png_strips.c needs to
 * continue a libdeflate strip, at a fraction of inflating it (no match is
 * copied). Rejects whatever is not one whole, valid-looking stream.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

#define MAX_BITS 15

typedef struct reader {
    const uint8_t *s;
    size_t n;     /* bytes */
    size_t next;  /* the next byte to load into buf */
    uint64_t buf; /* bits loaded, not yet taken */
    int count;    /* bits in buf */
    size_t pos;   /* bits taken */
} reader;

/* Loads bytes until buf holds at least 56 bits (0 bytes beyond the end). */
static inline void refill(reader *r)
{
    if (r->next + 8 <= r->n) {
        uint64_t v = 0;
        for (int i = 0; i < 8; i++)
            v |= (uint64_t)r->s[r->next + (size_t)i] << (8 * i);
        r->buf |= v << r->count;
        r->next += (size_t)((63 - r->count) >> 3);
        r->count |= 56;
        return;
    }
    for (; r->count <= 56; r->count += 8, r->next++)
        r->buf |= (uint64_t)(r->next < r->n ? r->s[r->next] : 0) << r->count;
}

/* The next k <= 25 bits, not consumed. */
static inline uint32_t peek(reader *r, int k)
{
    if (r->count < k)
        refill(r);
    return (uint32_t)r->buf & ((1u << k) - 1);
}

static inline void drop(reader *r, int k)
{
    r->buf >>= k;
    r->count -= k;
    r->pos += (size_t)k;
}

static inline uint32_t take(reader *r, int k)
{
    const uint32_t v = peek(r, k);
    drop(r, k);
    return v;
}

/* A decoding table of 2^bits entries (symbol << 4 | length, 0: no code)
 * for the code of lengths len[0..count). 0 when the code is empty. */
typedef struct table {
    uint16_t e[1 << MAX_BITS];
    int bits;
} table;

static int build(table *t, const uint8_t *len, int count)
{
    int bl[MAX_BITS + 1] = {0};
    t->bits = 0;
    for (int s = 0; s < count; s++) {
        bl[len[s]]++;
        t->bits = len[s] > t->bits ? len[s] : t->bits;
    }
    if (t->bits == 0)
        return 0;
    bl[0] = 0;
    uint32_t next[MAX_BITS + 2], code = 0;
    for (int l = 1; l <= MAX_BITS; l++) {
        code = (code + (uint32_t)bl[l - 1]) << 1;
        next[l] = code;
    }
    memset(t->e, 0, sizeof t->e[0] << t->bits);
    for (int s = 0; s < count; s++) {
        const int l = len[s];
        if (!l)
            continue;
        uint32_t c = next[l]++, r = 0;
        if (c >> l)
            return 0; /* over-subscribed */
        for (int i = 0; i < l; i++, c >>= 1)
            r = r << 1 | (c & 1);
        for (uint32_t j = r; j < (1u << t->bits); j += 1u << l)
            t->e[j] = (uint16_t)(s << 4 | l);
    }
    return 1;
}

/* The next symbol of t, or -1 where no code matches. */
static inline int decode(reader *r, const table *t)
{
    const uint16_t e = t->e[peek(r, t->bits)];
    if (!e)
        return -1;
    drop(r, e & 15);
    return e >> 4;
}

/* The lengths of a dynamic block's two codes into lit[] and dist[]. */
static int read_dynamic(reader *r, table *lit, table *dist, table *tmp)
{
    static const uint8_t order[19] = {16, 17, 18, 0, 8,  7, 9,  6, 10, 5,
                                      11, 4,  12, 3, 13, 2, 14, 1, 15};
    const int hlit = (int)take(r, 5) + 257, hdist = (int)take(r, 5) + 1;
    const int hclen = (int)take(r, 4) + 4;
    uint8_t cl[19] = {0}, len[288 + 32];
    for (int i = 0; i < hclen; i++)
        cl[order[i]] = (uint8_t)take(r, 3);
    if (hlit > 286 || hdist > 30 || !build(tmp, cl, 19))
        return 0;
    for (int i = 0; i < hlit + hdist;) {
        const int sym = decode(r, tmp);
        int rep = 1, v = sym;
        if (sym < 0)
            return 0;
        if (sym == 16) {
            if (i == 0)
                return 0;
            v = len[i - 1];
            rep = 3 + (int)take(r, 2);
        } else if (sym == 17) {
            v = 0;
            rep = 3 + (int)take(r, 3);
        } else if (sym == 18) {
            v = 0;
            rep = 11 + (int)take(r, 7);
        }
        if (i + rep > hlit + hdist)
            return 0;
        while (rep--)
            len[i++] = (uint8_t)v;
    }
    if (!build(lit, len, hlit))
        return 0;
    /* A block of literals alone may have no distance code. */
    if (!build(dist, len + hlit, hdist))
        dist->bits = 0;
    return 1;
}

static void fixed(table *lit, table *dist)
{
    uint8_t len[288];
    memset(len, 8, 144);
    memset(len + 144, 9, 112);
    memset(len + 256, 7, 24);
    memset(len + 280, 8, 8);
    (void)build(lit, len, 288);
    memset(len, 5, 30);
    (void)build(dist, len, 30);
}

/* Walks a block's symbols up to its end-of-block code. */
static int skip_codes(reader *r, const table *lit, const table *dist)
{
    for (;;) {
        const int sym = decode(r, lit);
        if (sym < 256) {
            if (sym < 0)
                return 0;
            continue;
        }
        if (sym == 256)
            return 1;
        if (sym > 285)
            return 0;
        const int l = sym - 257;
        (void)take(r, l < 8 || l == 28 ? 0 : (l - 4) / 4);
        if (!dist->bits)
            return 0;
        const int d = decode(r, dist);
        if (d < 0 || d > 29)
            return 0;
        (void)take(r, d < 4 ? 0 : (d - 2) / 2);
        if (r->pos > r->n * 8)
            return 0;
    }
}

static int walk(const uint8_t *s, size_t n, uint64_t *header, size_t *end, table *lit, table *dist,
                table *tmp)
{
    reader r = {s, n, 0, 0, 0, 0};
    for (;;) {
        const size_t at = r.pos;
        const uint32_t head = take(&r, 3);
        const int type = (int)(head >> 1);
        if (type == 0) {
            (void)take(&r, (int)((8 - (r.pos & 7)) & 7));
            const uint32_t len = take(&r, 16), nlen = take(&r, 16);
            if ((len ^ 0xffff) != nlen)
                return 0;
            /* Past the stored bytes: load afresh from there. */
            r.next = r.pos / 8 + len;
            r.pos = r.next * 8;
            r.buf = 0;
            r.count = 0;
        } else if (type == 1) {
            fixed(lit, dist);
            if (!skip_codes(&r, lit, dist))
                return 0;
        } else if (type == 2) {
            if (!read_dynamic(&r, lit, dist, tmp) || !skip_codes(&r, lit, dist))
                return 0;
        } else {
            return 0;
        }
        if (r.pos > n * 8)
            return 0;
        if (head & 1) {
            *header = at;
            *end = r.pos;
            return 1;
        }
    }
}

int ic_deflate_final_block(const uint8_t *s, size_t n, uint64_t *header, size_t *end)
{
    table *t = malloc(3 * sizeof *t); /* 192 KiB: not on the stack */
    if (!t)
        return 0;
    const int ok = walk(s, n, header, end, &t[0], &t[1], &t[2]);
    free(t);
    return ok;
}
