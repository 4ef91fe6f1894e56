/*
 * png_strips.c - one zlib stream for a PNG's filtered rows, deflated in
 * fixed row strips on several threads (as pigz does for gzip).
 *
 * Every strip is a raw deflate stream that ends on a byte boundary without
 * a final block, so the strips laid end to end are one stream: zlib's
 * Z_RLE ends a strip with a sync flush; the Huffman-only coder
 * (png_huffman.c) ends likewise; libdeflate cannot, so its strip's
 * final-block bit is cleared (found by walking the strip's codes,
 * png_blocks.c) and an empty stored block appended. No strip refers back
 * into the one before it, so that a reader may inflate each alone (the
 * icST chunk, png_inflate_strips.c). The Adler-32 of each strip is joined
 * with adler32_combine. Strips are cut by the image alone, so the stream is
 * the same at every thread count. Built only with IC_HAVE_LIBDEFLATE.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "core/image_internal.h"
#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_LIBDEFLATE

#include <libdeflate.h>
#include <zlib.h>

/* ---- a parallel for ------------------------------------------------------ */

typedef struct pfor {
    void (*fn)(void *arg, int item, int worker);
    void *arg;
    int count;
    atomic_int next;
} pfor;

typedef struct pfor_thread {
    pfor *p;
    int worker;
} pfor_thread;

static void pfor_run(pfor *p, int worker)
{
    for (int i; (i = atomic_fetch_add(&p->next, 1)) < p->count;)
        p->fn(p->arg, i, worker);
}

static void *pfor_main(void *arg)
{
    const pfor_thread *t = arg;
    pfor_run(t->p, t->worker);
    return NULL;
}

void ic_png_parallel_for(int threads, int count, void (*fn)(void *arg, int item, int worker),
                         void *arg)
{
    pfor p = {fn, arg, count, 0};
    int helpers = (threads < count ? threads : count) - 1;
    if (helpers > IC_PNG_MAX_THREADS - 1)
        helpers = IC_PNG_MAX_THREADS - 1;
    pthread_t th[IC_PNG_MAX_THREADS];
    pfor_thread arg_of[IC_PNG_MAX_THREADS];
    int made = 0;
    /* Fewer threads than asked (none at all) when they cannot be had. */
    for (; made < helpers; made++) {
        arg_of[made] = (pfor_thread){&p, made + 1};
        if (pthread_create(&th[made], NULL, pfor_main, &arg_of[made]) != 0)
            break;
    }
    pfor_run(&p, 0);
    for (int i = 0; i < made; i++)
        pthread_join(th[i], NULL);
}

/* ---- one strip ------------------------------------------------------------ */

typedef struct strips {
    const ic_png_strip_job *j;
    int count;
    size_t strip_bytes; /* filtered bytes of a full strip */
    size_t room;        /* output room of one strip */
    /* The zlib header, then the strips in the order they are done, each
     * copied from its worker's room: only the pages of the stream are ever
     * touched (a room a strip, on huge pages, cleared 2.8x the stream). */
    uint8_t *out;
    atomic_size_t used; /* bytes of out taken */
    size_t *off;        /* where strip k lies in out */
    size_t *size;       /* compressed size of each strip, 0: failed */
    uint32_t *adler;
    ic_status *st;
    struct libdeflate_compressor **lib; /* one per worker */
    uint8_t **buf;                      /* one strip's bytes per worker, with fill */
    uint8_t **zbuf;                     /* one strip's room per worker */
} strips;

/* Raw deflate of in[0..n) by zlib's Z_RLE into out (room bytes), ended by
 * a sync flush unless `last`; not primed with the strip before, so that it
 * inflates alone (a run across the seam costs a few bytes). */
static size_t zlib_strip(const uint8_t *in, size_t n, int last, uint8_t *out, size_t room)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    /* Z_RLE ignores the level; memLevel 9: the largest blocks. */
    if (deflateInit2(&z, 6, Z_DEFLATED, -15, 9, Z_RLE) != Z_OK)
        return 0;
    size_t size = 0;
    z.next_in = (Bytef *)(uintptr_t)in; /* zlib does not write through next_in */
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)room;
    const int rc = deflate(&z, last ? Z_FINISH : Z_SYNC_FLUSH);
    if (last ? rc == Z_STREAM_END : rc == Z_OK && z.avail_in == 0 && z.avail_out > 0)
        size = (size_t)z.total_out;
    deflateEnd(&z);
    return size;
}

/* Turns the raw deflate stream s[0..n), which ends in a final block, into
 * one that does not end: clears the final block's BFINAL bit and appends an
 * empty stored block, which ends on a byte boundary (room: n + 5 bytes).
 * Returns the new size, 0 when s is not one whole stream. */
static size_t unfinish(uint8_t *s, size_t n)
{
    uint64_t header = 0;
    size_t end = 0;
    if (!ic_deflate_final_block(s, n, &header, &end) || (end + 7) / 8 != n)
        return 0;
    const int unused = (int)(n * 8 - end); /* bits of the last byte after the block */
    s[header >> 3] &= (uint8_t) ~(1u << (header & 7));
    s[n - 1] &= (uint8_t)((1u << (8 - unused)) - 1); /* the padding is the header's 0 bits */
    if (unused < 3)
        s[n++] = 0; /* the 3 header bits spill into a byte of their own */
    static const uint8_t empty[4] = {0, 0, 0xff, 0xff}; /* LEN 0, NLEN */
    memcpy(s + n, empty, sizeof empty);
    return n + sizeof empty;
}

static void strip_item(void *arg, int k, int worker)
{
    strips *s = arg;
    const ic_png_strip_job *j = s->j;
    const size_t at = (size_t)k * s->strip_bytes;
    const size_t n = k == s->count - 1 ? j->bytes - at : s->strip_bytes;
    const int last = k == s->count - 1;
    if (!s->zbuf[worker] && !(s->zbuf[worker] = malloc(s->room))) {
        s->st[k] = IC_ERR_NOMEM;
        return;
    }
    uint8_t *out = s->zbuf[worker];
    size_t size = 0;
    const uint8_t *in = j->data + at;
    if (j->fill) {
        if (!s->buf[worker] && !(s->buf[worker] = malloc(s->strip_bytes))) {
            s->st[k] = IC_ERR_NOMEM;
            return;
        }
        j->fill(j->fill_arg, k, s->buf[worker], worker);
        in = s->buf[worker];
    }
    s->adler[k] = (uint32_t)libdeflate_adler32(1, in, n);
    if (j->coder == IC_PNG_CODER_LIBDEFLATE) {
        if (!s->lib[worker])
            s->lib[worker] = libdeflate_alloc_compressor(j->level);
        if (!s->lib[worker]) {
            s->st[k] = IC_ERR_NOMEM;
            return;
        }
        size = libdeflate_deflate_compress(s->lib[worker], in, n, out, s->room - 8);
        if (size && !last)
            size = unfinish(out, size);
    } else if (j->coder == IC_PNG_CODER_HUFFMAN) {
        size = j->code ? ic_png_huffman_deflate_code(j->code, in, n, last, out, s->room - 8)
                       : ic_png_huffman_deflate(in, n, last, out, s->room - 8);
    } else {
        size = zlib_strip(in, n, last, out, s->room - 8);
    }
    s->size[k] = size;
    s->st[k] = size ? IC_OK : IC_ERR_INTERNAL;
    s->off[k] = atomic_fetch_add(&s->used, size);
    memcpy(s->out + s->off[k], out, size);
}

size_t ic_png_strip_rows(size_t row_bytes, ic_png_coder coder, int strip_rows)
{
    if (strip_rows > 0)
        return (size_t)strip_rows;
    /* libdeflate restarts without the previous window at every strip: 1 MiB
     * strips kept a blurred 6000x4000 photograph's file within 0.14% of
     * 4 MiB strips' (and those within 0.3% of one stream's), and split its
     * 72 MB into 69 strips, 5 rounds of 1 MiB on 16 threads where 18 strips
     * of 4 MiB took 2 rounds of 4; zlib's coders lose only a block's Huffman
     * tables. */
    const size_t target = coder == IC_PNG_CODER_LIBDEFLATE ? (size_t)1 << 20 : (size_t)512 << 10;
    return (target + row_bytes - 1) / row_bytes;
}

ic_status ic_png_deflate_strips(const ic_png_strip_job *j, uint8_t **z, ic_png_piece **pieces,
                                int *count, size_t *zn, uint64_t **starts)
{
    *z = NULL;
    *pieces = NULL;
    *count = 0;
    *zn = 0;
    *starts = NULL;
    strips s;
    memset(&s, 0, sizeof s);
    s.j = j;
    const size_t rows = ic_png_strip_rows(j->row_bytes, j->coder, j->strip_rows);
    s.count = (int)((j->bytes / j->row_bytes + rows - 1) / rows);
    s.strip_bytes = rows * j->row_bytes;
    /* zlib's conservative bound (n + n/8 + n/64 + 11) exceeds libdeflate's;
     * 64 more for a sync flush or the unfinished tail. */
    s.room = s.strip_bytes + (s.strip_bytes >> 3) + (s.strip_bytes >> 6) + 64;
    const int threads = j->threads < 1                    ? 1
                        : j->threads > IC_PNG_MAX_THREADS ? IC_PNG_MAX_THREADS
                                                          : j->threads;
    s.out = malloc(2 + (size_t)s.count * s.room + 4);
    if (s.out)
        ic__huge_pages(s.out, 2 + (size_t)s.count * s.room + 4);
    atomic_init(&s.used, 2);
    s.off = calloc((size_t)s.count, sizeof *s.off);
    s.zbuf = calloc((size_t)threads, sizeof *s.zbuf);
    s.size = calloc((size_t)s.count, sizeof *s.size);
    s.adler = calloc((size_t)s.count, sizeof *s.adler);
    s.st = calloc((size_t)s.count, sizeof *s.st);
    s.lib = calloc((size_t)threads, sizeof *s.lib);
    s.buf = calloc((size_t)threads, sizeof *s.buf);
    uint64_t *at = malloc((size_t)s.count * sizeof *at);
    /* the zlib header, the strips, the Adler-32 */
    ic_png_piece *pc = malloc(((size_t)s.count + 2) * sizeof *pc);
    ic_status st = IC_OK;
    if (!s.out || !s.off || !s.zbuf || !s.size || !s.adler || !s.st || !s.lib || !s.buf || !at ||
        !pc) {
        st = ic_fail(IC_ERR_NOMEM, "PNG: out of memory for %d strips", s.count);
        goto done;
    }
    ic_png_parallel_for(threads, s.count, strip_item, &s);
    /* The stream: the zlib header, the strips in their order wherever they
     * lie in out, the Adler-32; never moved together on one thread. */
    size_t used = 2;
    uint32_t adler = 1;
    pc[0] = (ic_png_piece){s.out, 2};
    for (int k = 0; k < s.count && st == IC_OK; k++) {
        if (s.st[k] != IC_OK) {
            st = s.st[k] == IC_ERR_NOMEM
                     ? ic_fail(IC_ERR_NOMEM, "PNG: out of memory for a coder or a strip")
                     : ic_fail(IC_ERR_INTERNAL, "PNG: %s could not compress strip %d",
                               j->coder == IC_PNG_CODER_LIBDEFLATE ? "libdeflate" : "zlib", k);
            break;
        }
        pc[k + 1] = (ic_png_piece){s.out + s.off[k], s.size[k]};
        at[k] = used;
        used += s.size[k];
        const size_t n = k == s.count - 1 ? j->bytes - (size_t)k * s.strip_bytes : s.strip_bytes;
        adler = (uint32_t)adler32_combine(adler, s.adler[k], (z_off_t)n);
    }
    if (st == IC_OK) {
        /* CMF: deflate, 32 KiB window; FLG: the level hint, check bits. */
        s.out[0] = 0x78;
        s.out[1] = j->coder == IC_PNG_CODER_LIBDEFLATE ? 0x9c : 0x01;
        /* after the strips, each at least 8 bytes short of its room */
        uint8_t *tail = s.out + atomic_load(&s.used);
        for (int i = 0; i < 4; i++)
            tail[i] = (uint8_t)(adler >> (8 * (3 - i)));
        pc[s.count + 1] = (ic_png_piece){tail, 4};
        *z = s.out;
        *pieces = pc;
        *count = s.count + 2;
        *zn = used + 4;
        *starts = at;
        s.out = NULL;
        at = NULL;
        pc = NULL;
    }
done:
    free(at);
    free(pc);
    for (int i = 0; s.lib && i < threads; i++)
        if (s.lib[i])
            libdeflate_free_compressor(s.lib[i]);
    for (int i = 0; s.buf && i < threads; i++)
        free(s.buf[i]);
    for (int i = 0; s.zbuf && i < threads; i++)
        free(s.zbuf[i]);
    free(s.zbuf);
    free(s.off);
    free(s.buf);
    free(s.lib);
    free(s.st);
    free(s.adler);
    free(s.size);
    free(s.out);
    return st;
}

#endif /* IC_HAVE_LIBDEFLATE */
