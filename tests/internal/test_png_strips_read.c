/*
 * test_png_strips_read.c - the PNG reader on several threads
 * (src/io/png_inflate_strips.c) for files whose icST chunk says where their
 * strips begin (imgconv's writer, png_deflate.c and png_strips.c).
 * Round trips of strips of 7 rows over widths 1..100, heights on either
 * side of a strip edge, 1..4 channels, 8 and 16 bits, every coder, filters
 * whose strips start with SUB and UP (which waits for the strip above): the
 * strips path must take every such file, at 1, 2, 7 and 16 threads, and
 * give the image back, as must ic_png_read_path. Tampered chunks (offsets
 * and rows moved, swapped, cut, out of range), a chunk over one stream that
 * was not cut into strips, and a strip crafted to swallow the reader's
 * tail must all be refused by the strips path and read right by the
 * reader, which falls back. Seeded: IC_TEST_SEED replays. Exits 77
 * without libdeflate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "testutil.h"

#ifdef IC_TEST_HAVE_LIBDEFLATE
#include <zlib.h>

#include "io/io_internal.h"

static int g_checks, g_failed;
static uint64_t g_seed;

#define CHECK(cond, ...) ICT_CHECK_SEEDED(g_checks, g_failed, g_seed, cond, __VA_ARGS__)

static const int k_threads[] = {1, 2, 7, 16};

/* A w x h image of ch channels, 8 or 16 bits: smooth with noise, or random. */
static ic_image make_image(ict_rng *r, int w, int h, int ch, int depth, int smooth)
{
    ic_image img;
    if (ic_image_create_type(&img, w, h, ch, IC_AOS, depth == 16 ? IC_U16 : IC_U8) != IC_OK) {
        fprintf(stderr, "cannot allocate a test image\n");
        exit(1);
    }
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w * ch; x++) {
            const uint32_t v = smooth ? (uint32_t)(x * 5 + y * 3) * 97u + ict_below(r, 900)
                                      : (uint32_t)ict_next(r);
            uint8_t *row = img.data + (size_t)y * img.pitch;
            if (depth == 16)
                ((uint16_t *)(void *)row)[x] = (uint16_t)v;
            else
                row[x] = (uint8_t)(v >> 4);
        }
    return img;
}

static int same_pixels(const ic_image *a, const ic_image *b)
{
    if (a->width != b->width || a->height != b->height || a->channels != b->channels ||
        a->type != b->type)
        return 0;
    const size_t row = ic_image_row_bytes(a);
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data + (size_t)y * a->pitch, b->data + (size_t)y * b->pitch, row) != 0)
            return 0;
    return 1;
}

/* The PNG of img as the writer stores it (malloc'd, *n bytes). */
static uint8_t *written(const ic_image *img, const ic_png_deflate_opts *o, size_t *n)
{
    char *p = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&p, &len);
    if (!f)
        return NULL;
    const ic_status st = ic_png_deflate_write(f, img, img->channels, o, NULL);
    fclose(f);
    if (st != IC_OK) {
        free(p);
        return NULL;
    }
    *n = len;
    return (uint8_t *)p;
}

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static void put_be32(uint8_t *p, uint32_t v)
{
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

/* The file's IDAT data joined (malloc'd, *zn bytes) and where its icST
 * chunk's data is (*map, NULL when it has none). */
static uint8_t *stream_of(const uint8_t *d, size_t n, size_t *zn, const uint8_t **map, size_t *mapn)
{
    uint8_t *z = malloc(n);
    *zn = 0;
    *map = NULL;
    *mapn = 0;
    for (size_t at = 8; z && at + 12 <= n;) {
        const size_t len = be32(d + at);
        if (memcmp(d + at + 4, "IDAT", 4) == 0) {
            memcpy(z + *zn, d + at + 8, len);
            *zn += len;
        } else if (memcmp(d + at + 4, IC_PNG_STRIPS_CHUNK, 4) == 0) {
            *map = d + at + 8;
            *mapn = len;
        }
        at += 12 + len;
    }
    return z;
}

/* The file d with its icST chunk's data replaced by map[0..mapn) (CRC
 * made again), malloc'd, *out_n bytes. */
static uint8_t *with_map(const uint8_t *d, size_t n, const uint8_t *map, size_t mapn, size_t *out_n)
{
    uint8_t *o = malloc(n + mapn + 12);
    size_t w = 0;
    memcpy(o, d, 8);
    w = 8;
    for (size_t at = 8; at + 12 <= n;) {
        const size_t len = be32(d + at);
        if (memcmp(d + at + 4, IC_PNG_STRIPS_CHUNK, 4) == 0) {
            put_be32(o + w, (uint32_t)mapn);
            memcpy(o + w + 4, IC_PNG_STRIPS_CHUNK, 4);
            if (mapn)
                memcpy(o + w + 8, map, mapn);
            put_be32(o + w + 8 + mapn, (uint32_t)crc32(0, o + w + 4, (uInt)(4 + mapn)));
            w += 12 + mapn;
        } else {
            memcpy(o + w, d + at, 12 + len);
            w += 12 + len;
        }
        at += 12 + len;
    }
    *out_n = w;
    return o;
}

static ic_status read_file(const uint8_t *d, size_t n, ic_png_path path, int threads, ic_image *img)
{
    FILE *f = fmemopen((void *)(uintptr_t)d, n, "rb");
    if (!f)
        return IC_ERR_IO;
    const ic_io_limits lim = {
        .max_pixels = (uint64_t)1 << 30, .max_memory = (uint64_t)1 << 30, .threads = threads};
    char err[IC_IO_ERRLEN];
    const ic_status st = ic_png_read_path(f, img, &lim, NULL, path, err, sizeof err);
    fclose(f);
    return st;
}

/* The strips path on z with map at each thread count: taken or refused as
 * `taken` says, and, when taken, img's pixels. */
static void strips_check(const uint8_t *z, size_t zn, const uint8_t *map, size_t mapn,
                         const ic_image *img, int taken, const char *what)
{
    for (size_t t = 0; t < sizeof k_threads / sizeof *k_threads; t++) {
        ic_image back;
        if (ic_image_create_type(&back, img->width, img->height, img->channels, IC_AOS,
                                 img->type) != IC_OK)
            exit(1);
        const int got = ic_png_inflate_strips(z, zn, map, mapn, &back, k_threads[t],
                                              ic_png_unfilter_isa_best());
        CHECK(got == taken, "%s, %d threads: strips path %s", what, k_threads[t],
              got ? "took it" : "refused it");
        if (got)
            CHECK(same_pixels(&back, img), "%s, %d threads: other pixels", what, k_threads[t]);
        ic_image_free(&back);
    }
}

/* Every shape and coder: the writer's strips are taken, and give the image. */
static void test_round_trips(ict_rng *r)
{
    static const int heights[] = {6, 7, 8, 13, 14, 15, 22, 29};
    static const ic_png_coder coders[] = {IC_PNG_CODER_LIBDEFLATE, IC_PNG_CODER_RLE,
                                          IC_PNG_CODER_HUFFMAN};
    /* PAETH and SUB strips start with SUB; UP and NONE strips as they are. */
    static const ic_png_filter filters[] = {IC_PNG_FILTER_PAETH, IC_PNG_FILTER_UP,
                                            IC_PNG_FILTER_AVG, IC_PNG_FILTER_ADAPTIVE,
                                            IC_PNG_FILTER_NONE};
    int width = 1, taken = 0;
    for (int depth = 8; depth <= 16; depth += 8)
        for (int ch = 1; ch <= 4; ch++)
            for (size_t hi = 0; hi < sizeof heights / sizeof *heights;
                 hi++, width = width % 100 + 3) {
                ic_image img = make_image(r, width, heights[hi], ch, depth, (int)(hi & 1));
                for (size_t ci = 0; ci < sizeof coders / sizeof *coders; ci++) {
                    ic_png_deflate_opts o;
                    ic_png_deflate_setting(2, &o);
                    o.coder = coders[ci];
                    o.filter = filters[(hi + ci) % (sizeof filters / sizeof *filters)];
                    o.strip_rows = 7;
                    o.threads = 2;
                    char what[160];
                    snprintf(what, sizeof what, "%dx%d, %d ch, %d bit, coder %d, filter %d",
                             img.width, img.height, ch, depth, (int)o.coder, (int)o.filter);
                    size_t n = 0, zn = 0, mapn = 0;
                    uint8_t *d = written(&img, &o, &n);
                    CHECK(d != NULL, "%s: write: %s", what, ic_last_error());
                    if (!d)
                        continue;
                    const uint8_t *map = NULL;
                    uint8_t *z = stream_of(d, n, &zn, &map, &mapn);
                    const int strips = (img.height + 6) / 7;
                    CHECK((map != NULL) == (strips > 1) &&
                              mapn == (strips > 1 ? (size_t)strips * IC_PNG_STRIPS_ENTRY : 0),
                          "%s: icST of %zu bytes for %d strips", what, mapn, strips);
                    if (map) {
                        strips_check(z, zn, map, mapn, &img, 1, what);
                        taken++;
                    }
                    for (size_t t = 0; t < sizeof k_threads / sizeof *k_threads; t++) {
                        ic_image back;
                        const ic_status st = read_file(d, n, IC_PNG_PATH_FAST, k_threads[t], &back);
                        CHECK(st == IC_OK && same_pixels(&back, &img),
                              "%s, %d threads: read back %s", what, k_threads[t],
                              st == IC_OK ? "other pixels" : ic_status_str(st));
                        ic_image_free(&back);
                    }
                    free(z);
                    free(d);
                }
                ic_image_free(&img);
            }
    CHECK(taken > 100, "only %d files in strips", taken);
}

/* One tampered map: refused by the strips path, and the file with it read
 * as the image by the reader (which falls back) on 3 threads. */
static void tamper_check(const uint8_t *d, size_t n, const uint8_t *z, size_t zn,
                         const uint8_t *map, size_t mapn, const ic_image *img, const char *what)
{
    strips_check(z, zn, map, mapn, img, 0, what);
    size_t tn = 0;
    uint8_t *t = with_map(d, n, map, mapn, &tn);
    ic_image back;
    const ic_status st = read_file(t, tn, IC_PNG_PATH_AUTO, 3, &back);
    CHECK(st == IC_OK && same_pixels(&back, img), "%s: read back %s", what,
          st == IC_OK ? "other pixels" : ic_status_str(st));
    ic_image_free(&back);
    free(t);
}

static void entry_set(uint8_t *map, int k, uint32_t row, uint64_t at)
{
    uint8_t *e = map + (size_t)k * IC_PNG_STRIPS_ENTRY;
    put_be32(e, row);
    put_be32(e + 4, (uint32_t)(at >> 32));
    put_be32(e + 8, (uint32_t)at);
}

static uint64_t entry_at(const uint8_t *map, int k)
{
    const uint8_t *e = map + (size_t)k * IC_PNG_STRIPS_ENTRY;
    return (uint64_t)be32(e + 4) << 32 | be32(e + 8);
}

static void test_tampered(ict_rng *r)
{
    for (int coder = 0; coder < 2; coder++) {
        ic_image img = make_image(r, 37, 40, 3, 8, 1);
        ic_png_deflate_opts o;
        ic_png_deflate_setting(2, &o);
        o.coder = coder ? IC_PNG_CODER_RLE : IC_PNG_CODER_LIBDEFLATE;
        o.filter = IC_PNG_FILTER_PAETH;
        o.strip_rows = 7;
        size_t n = 0, zn = 0, mapn = 0;
        uint8_t *d = written(&img, &o, &n);
        const uint8_t *orig = NULL;
        uint8_t *z = d ? stream_of(d, n, &zn, &orig, &mapn) : NULL;
        CHECK(orig && mapn == 6 * IC_PNG_STRIPS_ENTRY, "coder %d: icST of %zu bytes", coder, mapn);
        if (!orig) {
            free(z);
            free(d);
            ic_image_free(&img);
            continue;
        }
        strips_check(z, zn, orig, mapn, &img, 1, "as written");
        uint8_t *m = malloc(mapn);
        char what[96];
        for (int k = 0; k < 6; k++) {
            const uint64_t at = entry_at(orig, k);
            for (int delta = -2; delta <= 2; delta++) {
                if (!delta)
                    continue;
                memcpy(m, orig, mapn);
                entry_set(m, k, (uint32_t)(7 * k), at + (uint64_t)(int64_t)delta);
                snprintf(what, sizeof what, "coder %d, strip %d offset %+d", coder, k, delta);
                tamper_check(d, n, z, zn, m, mapn, &img, what);
                memcpy(m, orig, mapn);
                entry_set(m, k, (uint32_t)(7 * k + delta), at);
                snprintf(what, sizeof what, "coder %d, strip %d row %+d", coder, k, delta);
                tamper_check(d, n, z, zn, m, mapn, &img, what);
            }
        }
        memcpy(m, orig, mapn); /* two strips swapped */
        memcpy(m + 2 * IC_PNG_STRIPS_ENTRY, orig + 3 * IC_PNG_STRIPS_ENTRY, IC_PNG_STRIPS_ENTRY);
        memcpy(m + 3 * IC_PNG_STRIPS_ENTRY, orig + 2 * IC_PNG_STRIPS_ENTRY, IC_PNG_STRIPS_ENTRY);
        tamper_check(d, n, z, zn, m, mapn, &img, "two strips swapped");
        tamper_check(d, n, z, zn, orig + IC_PNG_STRIPS_ENTRY, mapn - IC_PNG_STRIPS_ENTRY, &img,
                     "first strip left out");
        tamper_check(d, n, z, zn, orig, mapn - 1, &img, "a byte short");
        tamper_check(d, n, z, zn, orig, 0, &img, "empty");
        memcpy(m, orig, mapn);
        entry_set(m, 5, 35, zn - 4);
        tamper_check(d, n, z, zn, m, mapn, &img, "last strip at the Adler-32");
        entry_set(m, 5, 35, (uint64_t)1 << 40);
        tamper_check(d, n, z, zn, m, mapn, &img, "last strip past the end");
        entry_set(m, 5, 40, entry_at(orig, 5));
        tamper_check(d, n, z, zn, m, mapn, &img, "last strip at the image's height");
        /* Two strips given as one: it too inflates alone and ends on a
         * block boundary, so it is taken. */
        memcpy(m, orig, IC_PNG_STRIPS_ENTRY * 2);
        memcpy(m + 2 * IC_PNG_STRIPS_ENTRY, orig + 3 * IC_PNG_STRIPS_ENTRY,
               3 * IC_PNG_STRIPS_ENTRY);
        strips_check(z, zn, m, mapn - IC_PNG_STRIPS_ENTRY, &img, 1, "two strips merged");
        strips_check(z, zn, orig, mapn - IC_PNG_STRIPS_ENTRY, &img, 1, "the last two merged");
        free(m);
        free(z);
        free(d);
        ic_image_free(&img);
    }
}

/* A map over one stream that was not cut into strips (libdeflate's, with
 * back references anywhere), at plausible offsets: refused. */
static void test_not_strips(ict_rng *r)
{
    ic_image img = make_image(r, 64, 64, 3, 8, 1);
    ic_png_deflate_opts o;
    ic_png_deflate_setting(2, &o);
    o.coder = IC_PNG_CODER_LIBDEFLATE;
    o.strip_rows = 0; /* one stream: the image is far below a strip */
    size_t n = 0, zn = 0, mapn = 0;
    uint8_t *d = written(&img, &o, &n);
    const uint8_t *none = NULL;
    uint8_t *z = d ? stream_of(d, n, &zn, &none, &mapn) : NULL;
    CHECK(z && !none, "one stream written with an icST chunk");
    if (z) {
        uint8_t map[4 * IC_PNG_STRIPS_ENTRY];
        for (int cut = 1; cut < 40; cut++) {
            for (int k = 0; k < 4; k++)
                entry_set(map, k, (uint32_t)(16 * k),
                          k ? 2 + (zn - 6) * (size_t)k / 4 + (size_t)cut - 20 : 2);
            char what[64];
            snprintf(what, sizeof what, "one stream cut at %+d", cut - 20);
            strips_check(z, zn, map, sizeof map, &img, 0, what);
        }
    }
    free(z);
    free(d);
    ic_image_free(&img);
}

/* A first strip that is a final stored block long enough to take in the
 * reader's tail as its own bytes: it would read back the tail, but the
 * whole stream ends inside the second strip. Refused. */
static void test_tail_swallowed(void)
{
    const int w = 20;
    const size_t want = (size_t)w + 1; /* one row of grey: type byte and w samples */
    const size_t len = want + 8;       /* the tail's 8 bytes of data come after */
    uint8_t z[256];
    size_t zn = 0;
    z[zn++] = 0x78;
    z[zn++] = 0x01;
    z[zn++] = 1; /* final, stored */
    z[zn++] = (uint8_t)len;
    z[zn++] = (uint8_t)(len >> 8);
    z[zn++] = (uint8_t)~len;
    z[zn++] = (uint8_t)(~len >> 8);
    for (size_t i = 0; i + 5 < want; i++) /* the row's first bytes; the tail's header ends it */
        z[zn++] = i == 0 ? 0 : (uint8_t)i;
    const size_t second = zn;
    z[zn++] = 1; /* the second row: one final stored block */
    z[zn++] = (uint8_t)want;
    z[zn++] = 0;
    z[zn++] = (uint8_t)~want;
    z[zn++] = 0xff;
    for (size_t i = 0; i < want; i++)
        z[zn++] = 0;
    /* The Adler-32 of the rows the strips would give: the tail's header
     * ends the first, so that only the check of that header refuses it. */
    uint8_t rows[2 * 21];
    memcpy(rows, z + 7, want - 5);
    static const uint8_t head[5] = {1, 8, 0, 0xf7, 0xff};
    memcpy(rows + want - 5, head, 5);
    memset(rows + want, 0, want);
    put_be32(z + zn, (uint32_t)adler32(1, rows, (uInt)(2 * want)));
    zn += 4;
    uint8_t map[2 * IC_PNG_STRIPS_ENTRY];
    entry_set(map, 0, 0, 2);
    entry_set(map, 1, 1, second);
    ic_image img;
    if (ic_image_create_type(&img, w, 2, 1, IC_AOS, IC_U8) != IC_OK)
        exit(1);
    CHECK(ic_png_inflate_strips(z, zn, map, sizeof map, &img, 2, ic_png_unfilter_isa_best()) == 0,
          "a strip that swallows the tail was taken");
    ic_image_free(&img);
}

int main(void)
{
    const char *env = getenv("IC_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : 20261129u;
    ict_rng r;
    ict_rng_seed(&r, g_seed);
    printf("test_png_strips_read: seed %llu\n", (unsigned long long)g_seed);
    test_round_trips(&r);
    test_tampered(&r);
    test_not_strips(&r);
    test_tail_swallowed();
    printf("test_png_strips_read: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}

#else

int main(void)
{
    printf("skipped: built without libdeflate (no fast PNG reader)\n");
    return 77;
}

#endif
