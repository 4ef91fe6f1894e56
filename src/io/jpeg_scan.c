/*
 * jpeg_scan.c - a quick proof that a baseline JPEG's entropy-coded data is
 * clean, for the check the GPU codec runs beside nvJPEG (ic_jpeg_check).
 *
 * libjpeg-turbo's check decodes every coefficient (about 9 core-ms for an
 * HD photograph under load), which bounds the GPU batch. Clean data needs
 * much less: every Huffman code valid, every block's run within its 64
 * coefficients, each interval ending inside its last byte right before the
 * expected RSTn, and the scan before EOI. Walking the codes and skipping
 * their magnitude bits proves that at a fraction of the cost; libjpeg-turbo
 * warns on none of it (no marker hit early, no bad code, no extraneous
 * byte, no resync). Anything else - a code it cannot place, a run past 63,
 * a marker where data should be, fill bytes, another scan - is not judged
 * here: the caller falls back to libjpeg-turbo, whose verdict it is. So the
 * walk may say "not proven" of a good file, never "clean" of a bad one
 * (fuzz_decode_jpeg holds it to that).
 */
#include <stdint.h>
#include <string.h>

#include "io/io_internal.h"

#ifdef IC_HAVE_JPEG

#include "io/jpeg_internal.h"

/* Code bits looked up at once; longer codes take the canonical walk. */
#define PEEK 10
/* Bits looked up at once for up to two AC symbols of one block. */
#define PAIR 11

/* A lookup entry: bits to consume (code plus magnitude), what the symbol
 * does to the coefficient index, and the code's own length. */
enum { SYM_COEF = 0, SYM_EOB = 1, SYM_ZRL = 2, SYM_BAD = 3 };
#define ENTRY(len, kind, adv, clen)                                                                \
    ((uint16_t)((len) | ((adv) << 5) | ((kind) << 10) | ((clen) << 12)))
#define E_LEN(e) ((e)&31u)
#define E_ADV(e) (((e) >> 5) & 31u)
#define E_KIND(e) (((e) >> 10) & 3u)
#define E_CLEN(e) ((e) >> 12)
#define E_LONG 0xFFFFu /* the code is longer than PEEK bits */

/* A pair entry: the bits of one or two symbols, the coefficient index's
 * advance over both and over the first; P_SINGLE: take them one by one. */
#define PENTRY(len, adv, adv1, eob) ((uint32_t)(len) | (adv) << 6 | (adv1) << 12 | (eob) << 18)
#define P_LEN(e) ((e)&63u)
#define P_ADV(e) (((e) >> 6) & 63u)
#define P_ADV1(e) (((e) >> 12) & 63u)
#define P_EOB(e) (((e) >> 18) & 1u)
#define P_SINGLE (1u << 19)

typedef struct huff {
    uint16_t fast[1 << PEEK];
    uint32_t pair[1 << PAIR]; /* AC tables only */
    int32_t maxcode[18];      /* the largest code of each length, -1 when none */
    int32_t valptr[17];       /* index in vals of the first code of each length */
    int32_t mincode[17];
    uint16_t vals[256]; /* each symbol's entry, in code order */
} huff;

/* What a symbol rs does. dc: a DC table (magnitude only). */
static uint16_t sym_entry(int dc, unsigned rs, int codelen)
{
    const int l = codelen;
    if (dc)
        return rs <= 11 ? ENTRY(l + (int)rs, SYM_COEF, 0, l) : ENTRY(0, SYM_BAD, 0, 0);
    const unsigned r = rs >> 4, s = rs & 15u;
    if (s == 0)
        return r == 0    ? ENTRY(l, SYM_EOB, 0, l)
               : r == 15 ? ENTRY(l, SYM_ZRL, 16, l)
                         : ENTRY(0, SYM_BAD, 0, 0);
    return s <= 10 ? ENTRY(l + (int)s, SYM_COEF, r + 1, l) : ENTRY(0, SYM_BAD, 0, 0);
}

/* The pair table of an AC table whose fast table is built: for each PAIR
 * bits, the first symbol and, when its code and magnitude leave room for
 * the next one's whole code, that one too. */
static void pair_build(huff *h)
{
    for (uint32_t i = 0; i < (1u << PAIR); i++) {
        const uint32_t w = i << (32 - PAIR); /* the bits at the top */
        const unsigned e1 = h->fast[w >> (32 - PEEK)];
        h->pair[i] = P_SINGLE;
        if (e1 == E_LONG || E_KIND(e1) == SYM_BAD)
            continue;
        const unsigned l1 = E_LEN(e1), a1 = E_ADV(e1);
        if (E_KIND(e1) == SYM_EOB) {
            h->pair[i] = PENTRY(l1, 0, 0, 1);
            continue;
        }
        h->pair[i] = PENTRY(l1, a1, a1, 0);
        if (l1 >= PAIR)
            continue;
        const unsigned e2 = h->fast[(w << l1) >> (32 - PEEK)];
        if (e2 == E_LONG || E_KIND(e2) == SYM_BAD || E_CLEN(e2) > PAIR - l1)
            continue;
        h->pair[i] = PENTRY(l1 + E_LEN(e2), a1 + E_ADV(e2), a1, E_KIND(e2) == SYM_EOB);
    }
}

/* The canonical code of bits[1..16]/vals; 0 for a table libjpeg-turbo
 * refuses (an over-subscribed or all-ones code, a DC symbol over 15) or that
 * is empty. */
static int huff_build(huff *h, const uint8_t bits[17], const uint8_t *vals, int dc)
{
    int total = 0;
    for (int l = 1; l <= 16; l++)
        total += bits[l];
    if (total == 0 || total > 256)
        return 0;
    for (int i = 0; i < (1 << PEEK); i++)
        h->fast[i] = E_LONG; /* not a code of PEEK bits or fewer: the walk decides */
    int code = 0, k = 0;
    for (int l = 1; l <= 16; l++) {
        /* No code may be all ones: the next code must still fit in l bits. */
        if (code + bits[l] >= (1 << l))
            return 0;
        h->valptr[l] = k;
        h->mincode[l] = code;
        for (int i = 0; i < bits[l]; i++, k++, code++) {
            if (dc && vals[k] > 15)
                return 0;
            h->vals[k] = sym_entry(dc, vals[k], l);
            if (l <= PEEK) {
                const int lo = code << (PEEK - l), n = 1 << (PEEK - l);
                for (int j = 0; j < n; j++)
                    h->fast[lo + j] = h->vals[k];
            }
        }
        h->maxcode[l] = bits[l] ? code - 1 : -1;
        code <<= 1;
    }
    h->maxcode[17] = INT32_MAX; /* stops the walk: no code is longer than 16 */
    if (!dc)
        pair_build(h);
    return 1;
}

/* The bit reader over entropy-coded data: acc holds nb valid bits at its
 * top; a marker stops it (at points at the 0xFF). */
typedef struct bits {
    const uint8_t *p, *end;
    uint64_t acc;
    int nb;
    int marker; /* p is at a marker */
} bits;

static inline void bits_fill(bits *b)
{
    while (b->nb <= 56) {
        if (b->p + 8 <= b->end) {
            uint64_t v;
            memcpy(&v, b->p, 8);
            const uint64_t nv = ~v; /* a 0xFF byte is a zero byte of ~v */
            if (!((nv - 0x0101010101010101ull) & ~nv & 0x8080808080808080ull)) {
                v = __builtin_bswap64(v);
                const int take = (64 - b->nb) >> 3;
                b->acc |= v >> b->nb;
                b->nb += take * 8;
                b->p += take;
                continue;
            }
        }
        if (b->p >= b->end)
            return;
        unsigned c = b->p[0];
        if (c == 0xFF) {
            if (b->p + 1 >= b->end || b->p[1] != 0) {
                b->marker = 1;
                return;
            }
            b->p += 2;
        } else {
            b->p++;
        }
        /* Bits below nb may hold the next byte's top already (the 8-byte
         * load); they are that byte's own bits, so OR keeps them. */
        b->acc |= (uint64_t)c << (56 - b->nb);
        b->nb += 8;
    }
}

/* One symbol of h: its entry, with the bits consumed; SYM_BAD when the code
 * is invalid or the data ends inside it. */
static inline unsigned huff_next(bits *b, const huff *h)
{
    if (b->nb < 32)
        bits_fill(b);
    unsigned e = h->fast[b->acc >> (64 - PEEK)];
    if (e == E_LONG) {
        int l = PEEK + 1;
        int32_t code = (int32_t)(b->acc >> (64 - l));
        while (code > h->maxcode[l]) {
            l++;
            code = (int32_t)(b->acc >> (64 - l));
        }
        if (l > 16)
            return ENTRY(0, SYM_BAD, 0, 0);
        e = h->vals[h->valptr[l] + code - h->mincode[l]];
    }
    const unsigned len = E_LEN(e);
    if (E_KIND(e) == SYM_BAD || (int)len > b->nb)
        return ENTRY(0, SYM_BAD, 0, 0);
    b->acc <<= len;
    b->nb -= (int)len;
    return e;
}

/* The scan's layout, from libjpeg-turbo's header. */
typedef struct scan {
    huff tables[4];              /* DC 0..1, AC 0..1 by slot */
    const huff *dc[10], *ac[10]; /* per block of an MCU */
    int blocks;                  /* blocks per MCU */
    uint64_t mcus;               /* MCUs in the scan */
    unsigned interval;           /* MCUs per restart interval, 0: none */
} scan;

/* Walks one block; 0 when it is not proven clean. */
static inline int block_walk(bits *b, const huff *dc, const huff *ac)
{
    if (E_KIND(huff_next(b, dc)) != SYM_COEF)
        return 0;
    unsigned k = 1;
    for (;;) {
        if (b->nb < 32)
            bits_fill(b);
        const uint32_t e = ac->pair[b->acc >> (64 - PAIR)];
        /* Two at once unless the first ends the block's 64 coefficients
         * (the next code is then the next block's). */
        if (!(e & P_SINGLE) && k + P_ADV1(e) < 64) {
            const unsigned len = P_LEN(e);
            if ((int)len > b->nb)
                return 0;
            b->acc <<= len;
            b->nb -= (int)len;
            if (P_EOB(e))
                return 1;
            k += P_ADV(e);
        } else {
            const unsigned s = huff_next(b, ac);
            const unsigned kind = E_KIND(s);
            if (kind == SYM_EOB)
                return 1;
            if (kind == SYM_BAD)
                return 0;
            k += E_ADV(s); /* a coefficient at k + r, or 16 zeros */
        }
        if (k >= 64)
            return k == 64; /* past the block: libjpeg clips it, we do not judge */
    }
}

/* The entropy-coded data from p: every MCU, each interval ending in its
 * last byte before the expected RSTn, then EOI. */
static int scan_walk(const scan *s, const uint8_t *p, const uint8_t *end)
{
    bits b = {.p = p, .end = end};
    unsigned rst = 0;
    uint64_t left_in_interval = s->interval ? s->interval : s->mcus;
    for (uint64_t m = 0; m < s->mcus; m++) {
        for (int i = 0; i < s->blocks; i++)
            if (!block_walk(&b, s->dc[i], s->ac[i]))
                return 0;
        if (--left_in_interval == 0 || m + 1 == s->mcus) {
            bits_fill(&b);
            /* No whole byte left over, and a marker right after. */
            if (!b.marker || b.nb >= 8 || b.end - b.p < 2)
                return 0;
            const unsigned want = m + 1 == s->mcus ? 0xD9u : 0xD0u + (rst & 7u);
            if (b.p[1] != want)
                return 0;
            rst++;
            b.p += 2;
            b.acc = 0;
            b.nb = 0;
            b.marker = 0;
            left_in_interval = s->interval ? s->interval : s->mcus;
        }
    }
    return 1;
}

/* The layout of a header libjpeg-turbo read: 0 unless it is a baseline or
 * extended sequential Huffman file of 8 bits with one interleaved scan of
 * its 3 components, the luma sampled 1 or 2 each way and the chroma 1. */
static int scan_layout(scan *s, const struct jpeg_decompress_struct *ci)
{
    if (ci->progressive_mode || ci->arith_code || ci->data_precision != 8 ||
        ci->num_components != 3 || ci->comps_in_scan != 3 || ci->Ss != 0 || ci->Se != 63 ||
        ci->Ah != 0 || ci->Al != 0)
        return 0;
    int blocks = 0, used[4] = {0, 0, 0, 0};
    for (int c = 0; c < 3; c++) {
        const jpeg_component_info *cp = ci->cur_comp_info[c];
        if (!cp || cp != &ci->comp_info[c])
            return 0;
        const int h = cp->h_samp_factor, v = cp->v_samp_factor;
        if (c == 0 ? (h < 1 || h > 2 || v < 1 || v > 2) : (h != 1 || v != 1))
            return 0;
        if (cp->quant_tbl_no < 0 || cp->quant_tbl_no >= NUM_QUANT_TBLS ||
            !ci->quant_tbl_ptrs[cp->quant_tbl_no])
            return 0;
        const int dn = cp->dc_tbl_no, an = cp->ac_tbl_no;
        if (dn < 0 || dn > 1 || an < 0 || an > 1 || !ci->dc_huff_tbl_ptrs[dn] ||
            !ci->ac_huff_tbl_ptrs[an])
            return 0;
        used[dn] = used[2 + an] = 1;
        for (int i = 0; i < h * v; i++) {
            s->dc[blocks] = &s->tables[dn];
            s->ac[blocks] = &s->tables[2 + an];
            blocks++;
        }
    }
    /* Only the scan's tables, as libjpeg-turbo builds only those. */
    for (int t = 0; t < 4; t++) {
        const JHUFF_TBL *ht = t < 2 ? ci->dc_huff_tbl_ptrs[t] : ci->ac_huff_tbl_ptrs[t - 2];
        if (used[t] && !huff_build(&s->tables[t], ht->bits, ht->huffval, t < 2))
            return 0;
    }
    const int hm = ci->comp_info[0].h_samp_factor, vm = ci->comp_info[0].v_samp_factor;
    const uint64_t mx = (ci->image_width + 8u * (unsigned)hm - 1) / (8u * (unsigned)hm);
    const uint64_t my = (ci->image_height + 8u * (unsigned)vm - 1) / (8u * (unsigned)vm);
    s->blocks = blocks;
    s->mcus = mx * my;
    s->interval = ci->restart_interval;
    return s->mcus > 0;
}

/* The header through libjpeg-turbo (its warnings and limits as the check
 * has them), then the walk. Called inside setjmp. */
static int scan_check(struct jpeg_decompress_struct *ci, ic_jpeg_err *je, scan *s,
                      const uint8_t *data, size_t n, const ic_io_limits *lim)
{
    if (setjmp(je->jump))
        return 0;
    jpeg_create_decompress(ci);
    jpeg_mem_src(ci, data, (unsigned long)n);
    if (jpeg_read_header(ci, TRUE) != JPEG_HEADER_OK || ci->err->num_warnings != 0)
        return 0;
    char err[IC_IO_ERRLEN];
    if (ic_io_check_dims(ci->image_width, ci->image_height, 3, lim, err, sizeof err) != IC_OK)
        return 0;
    if (!scan_layout(s, ci))
        return 0;
    const uint8_t *p = ci->src->next_input_byte;
    if (ci->unread_marker != 0 || p < data || p > data + n)
        return 0;
    return scan_walk(s, p, data + n);
}

int ic_jpeg_scan_clean(const uint8_t *data, size_t n, const ic_io_limits *lim)
{
    if (n < 4 || n > (size_t)(unsigned long)-1)
        return 0;
    ic_jpeg_err je;
    struct jpeg_decompress_struct ci;
    ic_jpeg_decompress_init(&ci, &je, NULL); /* strict: any damage is not proven here */
    static _Thread_local scan s;             /* 43 KiB of tables: off the stack */
    const int clean = scan_check(&ci, &je, &s, data, n, lim);
    jpeg_destroy_decompress(&ci);
    return clean;
}

#else

int ic_jpeg_scan_clean(const uint8_t *data, size_t n, const ic_io_limits *lim)
{
    (void)data;
    (void)n;
    (void)lim;
    return 0;
}

#endif
