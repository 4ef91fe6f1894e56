/*
 * png_huffman.c - the fast mode's coder: raw deflate of Huffman codes alone
 * (no matches), a block of dynamic codes every 64 KiB, in the spirit of
 * fpnge. zlib's Z_HUFFMAN_ONLY writes the same kind of stream at a third of
 * the speed, through its general match-finding machinery.
 * Each block's code comes from its byte counts (length-limited to 15 bits by
 * halving the counts until the tree fits); the code lengths are sent with
 * a flat 4-bit code-length code, which costs ~130 bytes a block and no
 * search. A block the code would not shrink is stored.
 * Strips of an image (png_strips.c) are coded instead by one code for the
 * image, made from the counts of the writer's filter sample, in one block
 * a strip: no strip counts its bytes, and a table of byte pairs gives two
 * codes a load (noisy photographs: 0.02% larger, the coder ~2x faster).
 * Built only with IC_HAVE_LIBDEFLATE, beside the writer that uses it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_LIBDEFLATE

#define BLOCK 65535 /* also the most a stored block holds */
#define NSYM 257    /* the 256 literals and end-of-block */
#define MAX_LEN 15

typedef struct bits {
    uint8_t *p;
    uint64_t buf;
    int n; /* bits in buf, < 8 after flush */
} bits;

/* The 8 bytes of v at p, least significant first. */
static inline void store64le(uint8_t *p, uint64_t v)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    memcpy(p, &v, 8);
#else
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
#endif
}

/* Writes the buffer's whole bytes (one unaligned 8-byte store) and keeps
 * the 0-7 bits left over. */
static inline void bits_flush(uint8_t **p, uint64_t *buf, int *nb)
{
    store64le(*p, *buf);
    *p += *nb >> 3;
    *buf >>= *nb & ~7;
    *nb &= 7;
}

/* The same for a bits struct. */
static inline void flush(bits *b)
{
    bits_flush(&b->p, &b->buf, &b->n);
}

/* Adds len bits (n + len <= 64 since the last flush). */
static inline void add(bits *b, uint64_t v, int len)
{
    b->buf |= v << b->n;
    b->n += len;
}

static void put(bits *b, uint32_t v, int len)
{
    add(b, v, len);
    flush(b);
}

/* Pads to a byte boundary with 0 bits and writes out what buf holds. */
static void align(bits *b)
{
    b->n = (b->n + 7) & ~7;
    flush(b);
}

static uint32_t reverse(uint32_t code, int len)
{
    uint32_t r = 0;
    for (int i = 0; i < len; i++, code >>= 1)
        r = r << 1 | (code & 1);
    return r;
}

/* Huffman code lengths for freq[0..NSYM) (at least two nonzero), none over
 * longest: the tree of the counts, built again from halved counts while
 * it is too deep. */
static void code_lengths(const uint32_t *freq, uint8_t *len, int longest)
{
    uint32_t f[NSYM];
    memcpy(f, freq, sizeof f);
    for (;;) {
        int sym[NSYM], m = 0;
        for (int s = 0; s < NSYM; s++)
            if (f[s])
                sym[m++] = s;
        /* Insertion sort by count: m <= 257 and mostly in order after the
         * first block's pass is not assumed, so keep it simple. */
        for (int i = 1; i < m; i++) {
            const int s = sym[i];
            int j = i;
            for (; j > 0 && f[sym[j - 1]] > f[s]; j--)
                sym[j] = sym[j - 1];
            sym[j] = s;
        }
        uint64_t w[2 * NSYM];
        int parent[2 * NSYM], depth[2 * NSYM];
        for (int i = 0; i < m; i++)
            w[i] = f[sym[i]];
        /* Two queues: leaves in order, and internal nodes, made in order. */
        int leaf = 0, inner = m, next = m;
        for (int k = 0; k < m - 1; k++) {
            int pick[2];
            for (int t = 0; t < 2; t++)
                pick[t] = leaf < m && (inner >= next || w[leaf] <= w[inner]) ? leaf++ : inner++;
            w[next] = w[pick[0]] + w[pick[1]];
            parent[pick[0]] = parent[pick[1]] = next++;
        }
        const int root = next - 1;
        depth[root] = 0;
        int deepest = 0;
        for (int i = root - 1; i >= 0; i--) {
            depth[i] = depth[parent[i]] + 1;
            deepest = depth[i] > deepest ? depth[i] : deepest;
        }
        if (deepest <= longest) {
            memset(len, 0, NSYM);
            for (int i = 0; i < m; i++)
                len[sym[i]] = (uint8_t)depth[i];
            return;
        }
        for (int s = 0; s < NSYM; s++)
            f[s] = f[s] ? (f[s] + 1) / 2 : 0;
    }
}

/* Canonical codes (RFC 1951 3.2.2), bit-reversed as deflate sends them. */
static void canonical(const uint8_t *len, uint32_t *code)
{
    int count[MAX_LEN + 1] = {0};
    uint32_t next[MAX_LEN + 2];
    for (int s = 0; s < NSYM; s++)
        count[len[s]]++;
    count[0] = 0;
    uint32_t c = 0;
    for (int l = 1; l <= MAX_LEN; l++) {
        c = (c + (uint32_t)count[l - 1]) << 1;
        next[l] = c;
    }
    for (int s = 0; s < NSYM; s++)
        code[s] = len[s] ? reverse(next[len[s]]++, len[s]) : 0;
}

static void stored(bits *b, const uint8_t *in, size_t n, int final)
{
    put(b, (uint32_t) final, 3); /* BFINAL, BTYPE 00 */
    align(b);
    const uint8_t head[4] = {(uint8_t)n, (uint8_t)(n >> 8), (uint8_t)~n, (uint8_t)(~n >> 8)};
    memcpy(b->p, head, 4);
    memcpy(b->p + 4, in, n);
    b->p += 4 + n;
}

/* A dynamic block's header for the literal lengths len[0..NSYM). */
static void block_head(bits *b, const uint8_t *len, int final)
{
    put(b, (uint32_t) final | 2u << 1, 3); /* BFINAL, BTYPE 10 */
    put(b, 0, 5);                          /* HLIT: 257 codes */
    put(b, 0, 5);                          /* HDIST: 1 code */
    put(b, 15, 4);                         /* HCLEN: 19 code-length codes */
    /* Code-length code: lengths 0..15 at 4 bits each (complete), 16..18
     * unused; sent in the order 16, 17, 18, 0, 8, 7, 9, 6, ... */
    put(b, 0, 9);
    for (int k = 0; k < 16; k++)
        put(b, 4, 3);
    for (int s = 0; s < NSYM; s++)
        put(b, reverse(len[s], 4), 4); /* code-length symbol v has code v */
    put(b, reverse(1, 4), 4);          /* distance code 0: 1 bit, never used */
}

/* Appends one table entry (code in the low 16 bits, length above) to the
 * bit buffer held in locals. */
static inline void code_add(uint64_t *buf, int *nb, uint32_t e)
{
    *buf |= (uint64_t)(e & 0xffff) << *nb;
    *nb += (int)(e >> 16);
}

static void huffman_block(bits *b, const uint8_t *in, size_t n, int final)
{
    uint32_t freq[NSYM] = {0}, part[3][256] = {{0}};
    size_t i = 0;
    for (; i + 4 <= n; i += 4) { /* four tables: no wait on the same count */
        freq[in[i]]++;
        part[0][in[i + 1]]++;
        part[1][in[i + 2]]++;
        part[2][in[i + 3]]++;
    }
    for (; i < n; i++)
        freq[in[i]]++;
    for (int v = 0; v < 256; v++)
        freq[v] += part[0][v] + part[1][v] + part[2][v];
    freq[256] = 1;
    uint8_t len[NSYM];
    uint32_t code[NSYM];
    code_lengths(freq, len, MAX_LEN);
    /* Header: 3 + 5 + 5 + 4 bits, 19 code-length lengths of 3 bits, 258
     * lengths of 4 bits (the literals, end-of-block and one distance). */
    uint64_t cost = 17 + 19 * 3 + 258 * 4;
    for (int s = 0; s < NSYM; s++)
        cost += (uint64_t)freq[s] * len[s];
    if (cost >= (uint64_t)(n + 5) * 8) {
        stored(b, in, n, final);
        return;
    }
    canonical(len, code);
    block_head(b, len, final);
    /* Code and length in one entry: one load a byte. */
    uint32_t tab[256];
    for (int v = 0; v < 256; v++)
        tab[v] = code[v] | (uint32_t)len[v] << 16;
    /* The bit buffer in locals: stores through b->p could alias *b and
     * would make the compiler reload it after every byte. */
    uint8_t *p = b->p;
    uint64_t buf = b->buf;
    int nb = b->n;
    int longest = 0;
    for (int v = 0; v < 256; v++)
        longest = len[v] > longest ? len[v] : longest;
    i = 0;
    if (longest <= 14) { /* 4 codes of at most 14 bits and 7 left over fit 64 bits */
        for (; i + 4 <= n; i += 4) {
            code_add(&buf, &nb, tab[in[i]]);
            code_add(&buf, &nb, tab[in[i + 1]]);
            code_add(&buf, &nb, tab[in[i + 2]]);
            code_add(&buf, &nb, tab[in[i + 3]]);
            bits_flush(&p, &buf, &nb);
        }
    }
    for (; i + 3 <= n; i += 3) { /* 3 codes of at most 15 bits, 7 bits left over */
        code_add(&buf, &nb, tab[in[i]]);
        code_add(&buf, &nb, tab[in[i + 1]]);
        code_add(&buf, &nb, tab[in[i + 2]]);
        bits_flush(&p, &buf, &nb);
    }
    b->p = p;
    b->buf = buf;
    b->n = nb;
    for (; i < n; i++)
        put(b, code[in[i]], len[in[i]]);
    put(b, code[256], len[256]);
}

size_t ic_png_huffman_deflate(const uint8_t *in, size_t n, int last, uint8_t *out, size_t room)
{
    if (room < ic_png_huffman_bound(n))
        return 0;
    bits b = {out, 0, 0};
    for (size_t at = 0; at < n; at += BLOCK) {
        const size_t len = n - at < BLOCK ? n - at : BLOCK;
        huffman_block(&b, in + at, len, last && at + len == n);
    }
    if (n == 0 && last)
        stored(&b, in, 0, 1);
    if (!last) { /* an empty stored block: the stream ends on a byte boundary */
        stored(&b, in, 0, 0);
    }
    align(&b);
    return (size_t)(b.p - out);
}

/* ---- one code for a whole image ------------------------------------------ */

/* Two codes of together at most 24 bits make a pair table entry, with 5
 * bits of length; two pairs and 7 bits left over fit 64 bits. Longer pairs
 * (of rare bytes) are entry 0 and go one code at a time. */
#define PAIR_BITS 24
/* Bytes coded between two checks that the output still has room. */
#define FIXED_CHUNK ((size_t)1 << 16)

struct ic_png_huffman_code {
    uint8_t len[NSYM];
    uint32_t code[NSYM];
    uint32_t pair[1 << 16]; /* bytes (a, b) at a | b << 8: a's code, then b's */
};

ic_png_huffman_code *ic_png_huffman_code_make(const uint64_t *hist)
{
    ic_png_huffman_code *c = malloc(sizeof *c);
    if (!c)
        return NULL;
    uint64_t top = 0;
    for (int v = 0; v < 256; v++)
        top = hist[v] > top ? hist[v] : top;
    int shift = 0;
    while ((top >> shift) > ((uint64_t)1 << 24))
        shift++;
    /* Every byte gets a code, since the sample need not hold them all. */
    uint32_t freq[NSYM];
    for (int v = 0; v < 256; v++)
        freq[v] = (uint32_t)(hist[v] >> shift) + 1;
    freq[256] = 1;
    code_lengths(freq, c->len, MAX_LEN);
    canonical(c->len, c->code);
    for (uint32_t ab = 0; ab < (1u << 16); ab++) {
        const uint32_t a = ab & 255, b = ab >> 8, len = (uint32_t)c->len[a] + c->len[b];
        c->pair[ab] =
            len <= PAIR_BITS ? (c->code[a] | c->code[b] << c->len[a]) | len << PAIR_BITS : 0;
    }
    return c;
}

void ic_png_huffman_code_free(ic_png_huffman_code *c)
{
    free(c);
}

/* Appends a pair table entry to the bit buffer held in locals. */
static inline void pair_add(uint64_t *buf, int *nb, uint32_t e)
{
    *buf |= (uint64_t)(e & ((1u << PAIR_BITS) - 1)) << *nb;
    *nb += (int)(e >> PAIR_BITS);
}

/* The 4 bytes at p as a little-endian word: two pair table indices. */
static inline uint32_t load32le(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
#else
    return p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
#endif
}

/* in[0..n & ~3) by code c at p, the bit buffer in *buf and *nb; returns
 * where it stopped. Always inlined, so that the BMI2 copy below gets
 * shifts by a register in one instruction. */
static inline __attribute__((always_inline)) uint8_t *code_bytes(const ic_png_huffman_code *c,
                                                                 const uint8_t *in, size_t n,
                                                                 uint8_t *p, uint64_t *buf_io,
                                                                 int *nb_io)
{
    const uint32_t *pair = c->pair;
    uint64_t buf = *buf_io;
    int nb = *nb_io;
    for (size_t i = 0; i + 4 <= n; i += 4) {
        const uint32_t w = load32le(in + i);
        const uint32_t e0 = pair[w & 0xffff], e1 = pair[w >> 16];
        if (e0 && e1) {
            pair_add(&buf, &nb, e0);
            pair_add(&buf, &nb, e1);
            bits_flush(&p, &buf, &nb);
            continue;
        }
        for (size_t k = i; k < i + 4; k++) {
            code_add(&buf, &nb, c->code[in[k]] | (uint32_t)c->len[in[k]] << 16);
            bits_flush(&p, &buf, &nb);
        }
    }
    *buf_io = buf;
    *nb_io = nb;
    return p;
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("bmi2"))) static uint8_t *code_bytes_bmi2(const ic_png_huffman_code *c,
                                                                const uint8_t *in, size_t n,
                                                                uint8_t *p, uint64_t *buf, int *nb)
{
    return code_bytes(c, in, n, p, buf, nb);
}
#endif

/* code_bytes on BMI2 where the CPU has it (the same bits either way). */
static uint8_t *code_bytes_any(const ic_png_huffman_code *c, const uint8_t *in, size_t n,
                               uint8_t *p, uint64_t *buf, int *nb)
{
#if defined(__x86_64__) && defined(__GNUC__)
    if (__builtin_cpu_supports("bmi2"))
        return code_bytes_bmi2(c, in, n, p, buf, nb);
#endif
    return code_bytes(c, in, n, p, buf, nb);
}

size_t ic_png_huffman_deflate_code(const ic_png_huffman_code *c, const uint8_t *in, size_t n,
                                   int last, uint8_t *out, size_t room)
{
    if (room < ic_png_huffman_bound(n))
        return 0;
    bits b = {out, 0, 0};
    block_head(&b, c->len, last);
    uint8_t *p = b.p;
    uint64_t buf = b.buf;
    int nb = b.n;
    size_t i = 0;
    for (size_t end = 0; i < n; i = end) {
        end = n - i < FIXED_CHUNK ? n : i + FIXED_CHUNK;
        /* A sample's code may suit the rest badly: at most 15 bits a byte,
         * and more than stored blocks would take goes to the block coder. */
        if ((size_t)(p - out) + (end - i) * MAX_LEN / 8 + 64 > room ||
            (size_t)(p - out) > i + i / 64 + 512)
            return ic_png_huffman_deflate(in, n, last, out, room);
        p = code_bytes_any(c, in + i, end - i, p, &buf, &nb);
        i = end;
    }
    for (i = n & ~(size_t)3; i < n; i++) {
        code_add(&buf, &nb, c->code[in[i]] | (uint32_t)c->len[in[i]] << 16);
        bits_flush(&p, &buf, &nb);
    }
    b.p = p;
    b.buf = buf;
    b.n = nb;
    put(&b, c->code[256], c->len[256]);
    if (!last)
        stored(&b, in, 0, 0);
    align(&b);
    const size_t size = (size_t)(b.p - out);
    return size < n + n / 64 + 512 ? size : ic_png_huffman_deflate(in, n, last, out, room);
}

size_t ic_png_huffman_bound(size_t n)
{
    /* Every block at most stored: 5 bytes of header; the tail and the bit
     * buffer's 4-byte writes. */
    return n + (n / BLOCK + 2) * 5 + 16; /* flush stores 8 bytes past the last */
}

#endif /* IC_HAVE_LIBDEFLATE */
