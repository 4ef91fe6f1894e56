/*
 * test_png_fastread.c - the fast PNG reader (src/io/png_inflate.c and its
 * libpng glue in png.c) against the libpng reader it stands in for: files
 * written here by libpng with each row filter forced (and all of them), 1..4
 * channels, 8 and 16 bits, widths 1..100 and odd heights, photograph-like,
 * chart-like and random pixels, small and large IDAT chunks, ICC profile,
 * EXIF (before and after IDAT), text and unknown chunks; the pixels and the
 * metadata of ic_png_read_path's FAST path must equal those of its LIBPNG
 * path byte for byte. Interlaced, palette, low-bit-depth and tRNS files must
 * be refused by FAST and read by AUTO as by LIBPNG. Damaged files (cut, a
 * flipped byte anywhere, IDAT split by another chunk, a stream with too
 * much or too little data) must get from AUTO the LIBPNG path's status,
 * message and pixels. The unfilters of every instruction set are checked
 * against the specification's formulas, written again here. Seeded:
 * IC_TEST_SEED replays. Exits 77 without libdeflate.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "testutil.h"

#ifdef IC_TEST_HAVE_LIBDEFLATE
#include <png.h>
#include <setjmp.h>
#include <zlib.h>

#include "io/io_internal.h"

static int g_checks, g_failed;
static uint64_t g_seed;

#define CHECK(cond, ...) ICT_CHECK_SEEDED(g_checks, g_failed, g_seed, cond, __VA_ARGS__)

/* ---- writing test files with libpng ---------------------------------------------- */

typedef struct buf {
    uint8_t *p;
    size_t n, cap;
} buf;

static void buf_put(buf *b, const void *d, size_t n)
{
    if (b->n + n > b->cap) {
        b->cap = (b->n + n) * 2 + 64;
        b->p = realloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void on_write(png_structp png, png_bytep d, size_t n)
{
    buf_put(png_get_io_ptr(png), d, n);
}

static void on_flush(png_structp png)
{
    (void)png;
}

typedef struct spec {
    int w, h, colour, depth; /* colour: PNG_COLOR_TYPE_* */
    int filters;             /* PNG_FILTER_* mask */
    int interlace;
    int level;      /* zlib level */
    size_t zbuf;    /* IDAT chunk size (libpng's compression buffer) */
    int kind;       /* 0 photograph-like, 1 chart-like, 2 random */
    int trns;       /* write a tRNS chunk (grey, RGB) */
    int meta;       /* write iCCP, eXIf, tEXt and an unknown chunk */
    int exif_after; /* eXIf after IDAT */
} spec;

static int channels_of(int colour)
{
    switch (colour) {
    case PNG_COLOR_TYPE_GRAY:
    case PNG_COLOR_TYPE_PALETTE:
        return 1;
    case PNG_COLOR_TYPE_GRAY_ALPHA:
        return 2;
    case PNG_COLOR_TYPE_RGB:
        return 3;
    default:
        return 4;
    }
}

/* A sample of the pixels s asks for (the value range of its depth). */
static unsigned sample(const spec *s, ict_rng *r, int x, int y, int c)
{
    const unsigned top = s->colour == PNG_COLOR_TYPE_PALETTE ? 3u : (1u << s->depth) - 1u;
    unsigned v;
    if (s->kind == 0) /* smooth gradients with sensor noise */
        v = (unsigned)((x * 37 + y * 23 + c * 5000) * (int)(top / 255u + 1u) / 8) +
            ict_below(r, top / 64u + 3u);
    else if (s->kind == 1) /* flat patches with sharp edges */
        v = ((unsigned)(x / 7 + y / 5) * 2654435761u >> (c * 5)) & 0xff;
    else
        v = (unsigned)ict_next(r);
    return v % (top + 1u);
}

static void quiet(png_structp png, png_const_charp msg)
{
    (void)png;
    (void)msg;
}

static uint8_t *write_png(const spec *s, ict_rng *r, size_t *n_out)
{
    buf b = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, quiet);
    png_infop info = png_create_info_struct(png);
    const int ch = channels_of(s->colour);
    const size_t rb = ((size_t)s->w * (size_t)ch * (size_t)s->depth + 7) / 8;
    uint8_t *rows = calloc((size_t)s->h, rb);
    png_bytep *rp = malloc(sizeof *rp * (size_t)s->h);
    if (setjmp(png_jmpbuf(png))) {
        fprintf(stderr, "libpng failed to write a test file\n");
        exit(1);
    }
    png_set_write_fn(png, &b, on_write, on_flush);
    png_set_IHDR(png, info, (png_uint_32)s->w, (png_uint_32)s->h, s->depth, s->colour,
                 s->interlace ? PNG_INTERLACE_ADAM7 : PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, s->filters);
    png_set_compression_level(png, s->level);
    if (s->zbuf)
        png_set_compression_buffer_size(png, s->zbuf);
    if (s->colour == PNG_COLOR_TYPE_PALETTE) {
        png_color pal[4] = {{0, 0, 0}, {255, 0, 0}, {0, 255, 0}, {0, 0, 255}};
        png_set_PLTE(png, info, pal, 4);
    }
    if (s->trns) {
        png_color_16 t = {0, 10, 20, 30, 10};
        png_set_tRNS(png, info, NULL, 0, &t);
    }
    uint8_t exif[40];
    if (s->meta) {
        uint8_t icc[256];
        for (size_t i = 0; i < sizeof icc; i++)
            icc[i] = (uint8_t)ict_next(r);
        /* libpng checks the profile header: a length field, 'acsp', D50 */
        memset(icc, 0, 132); /* no tags */
        icc[2] = 1;          /* 256 bytes */
        memcpy(icc + 36, "acsp", 4);
        memcpy(icc + 12, s->colour & PNG_COLOR_MASK_COLOR ? "mntrRGB XYZ " : "mntrGRAYXYZ ", 12);
        static const uint8_t d50[12] = {0, 0, 0xf6, 0xd6, 0, 1, 0, 0, 0, 0, 0xd3, 0x2d};
        memcpy(icc + 68, d50, 12);
        png_set_benign_errors(png, 1);
        png_set_iCCP(png, info, "test", PNG_COMPRESSION_TYPE_BASE, icc, sizeof icc);
        memcpy(exif, "MM\0*\0\0\0\x08", 8);
        for (size_t i = 8; i < sizeof exif; i++)
            exif[i] = (uint8_t)ict_next(r);
        if (!s->exif_after)
            png_set_eXIf_1(png, info, sizeof exif, exif);
        png_text t = {PNG_TEXT_COMPRESSION_NONE, "Comment", "fast path", 9, 0, NULL, NULL};
        png_set_text(png, info, &t, 1);
        png_unknown_chunk u = {"teSt", (png_byte *)"xyz", 3, PNG_HAVE_IHDR};
        png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_ALWAYS, (png_const_bytep) "teSt", 1);
        png_set_unknown_chunks(png, info, &u, 1);
    }
    png_write_info(png, info);
    for (int y = 0; y < s->h; y++) {
        uint8_t *row = rows + (size_t)y * rb;
        rp[y] = row;
        for (int x = 0; x < s->w; x++)
            for (int c = 0; c < ch; c++) {
                const unsigned v = sample(s, r, x, y, c);
                const size_t i = (size_t)x * (size_t)ch + (size_t)c;
                if (s->depth == 16) {
                    row[2 * i] = (uint8_t)(v >> 8);
                    row[2 * i + 1] = (uint8_t)v;
                } else if (s->depth == 8) {
                    row[i] = (uint8_t)v;
                } else {
                    const size_t bit = i * (size_t)s->depth;
                    row[bit / 8] |= (uint8_t)(v << (8 - s->depth - bit % 8));
                }
            }
    }
    png_write_image(png, rp);
    if (s->meta && s->exif_after)
        png_set_eXIf_1(png, info, sizeof exif, exif);
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(rows);
    free(rp);
    *n_out = b.n;
    return b.p;
}

/* ---- reading ---------------------------------------------------------------------- */

typedef struct result {
    ic_status st;
    char err[IC_IO_ERRLEN];
    ic_image img;
    ic_metadata meta;
} result;

static uint64_t g_max_memory = (uint64_t)1 << 30;

static void read_path(const uint8_t *d, size_t n, ic_png_path path, result *out)
{
    memset(out, 0, sizeof *out);
    FILE *f = fmemopen((void *)(uintptr_t)d, n, "rb");
    const ic_io_limits lim = {.max_pixels = (uint64_t)1 << 26, .max_memory = g_max_memory};
    out->st = ic_png_read_path(f, &out->img, &lim, &out->meta, path, out->err, sizeof out->err);
    fclose(f);
}

static void result_free(result *r)
{
    ic_image_free(&r->img);
    ic_metadata_free(&r->meta);
}

static int same_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* 1 when the two reads gave the same status, message, pixels and metadata. */
static int same_result(const result *a, const result *b, char *why, size_t whylen)
{
    if (a->st != b->st || strcmp(a->err, b->err) != 0) {
        snprintf(why, whylen, "status %d \"%s\" against %d \"%s\"", (int)a->st, a->err, (int)b->st,
                 b->err);
        return 0;
    }
    if (a->st != IC_OK)
        return 1;
    const ic_image *x = &a->img, *y = &b->img;
    if (x->width != y->width || x->height != y->height || x->channels != y->channels ||
        x->type != y->type || x->layout != y->layout) {
        snprintf(why, whylen, "image %dx%dx%d type %d against %dx%dx%d type %d", x->width,
                 x->height, x->channels, (int)x->type, y->width, y->height, y->channels,
                 (int)y->type);
        return 0;
    }
    const size_t row = (size_t)x->width * (size_t)x->channels * ic_sample_size(x->type);
    for (int r = 0; r < x->height; r++)
        if (memcmp(x->data + (size_t)r * x->pitch, y->data + (size_t)r * y->pitch, row) != 0) {
            snprintf(why, whylen, "pixels differ in row %d", r);
            return 0;
        }
    if (!same_bytes(a->meta.icc, a->meta.icc_size, b->meta.icc, b->meta.icc_size) ||
        !same_bytes(a->meta.exif, a->meta.exif_size, b->meta.exif, b->meta.exif_size)) {
        snprintf(why, whylen, "metadata differ");
        return 0;
    }
    return 1;
}

/* FAST (when `fast` says it must take the file; else it must refuse it) and
 * AUTO against LIBPNG. */
static void compare(const uint8_t *d, size_t n, int fast, const char *what)
{
    result ref, got, aut;
    char why[1200];
    read_path(d, n, IC_PNG_PATH_LIBPNG, &ref);
    read_path(d, n, IC_PNG_PATH_FAST, &got);
    read_path(d, n, IC_PNG_PATH_AUTO, &aut);
    if (fast) {
        CHECK(ref.st == IC_OK, "%s: libpng: %s", what, ref.err);
        CHECK(same_result(&got, &ref, why, sizeof why), "%s: fast path: %s", what, why);
    } else {
        CHECK(got.st == IC_ERR_UNSUPPORTED, "%s: the fast path took it (%d %s)", what, (int)got.st,
              got.err);
    }
    CHECK(same_result(&aut, &ref, why, sizeof why), "%s: auto: %s", what, why);
    result_free(&ref);
    result_free(&got);
    result_free(&aut);
}

/* ---- the tests -------------------------------------------------------------------- */

static const int k_filters[] = {PNG_FILTER_NONE, PNG_FILTER_SUB,   PNG_FILTER_UP,
                                PNG_FILTER_AVG,  PNG_FILTER_PAETH, PNG_ALL_FILTERS};
static const int k_colours[] = {PNG_COLOR_TYPE_GRAY, PNG_COLOR_TYPE_GRAY_ALPHA, PNG_COLOR_TYPE_RGB,
                                PNG_COLOR_TYPE_RGB_ALPHA};

static void test_shapes(ict_rng *r)
{
    int cases = 0;
    for (int ci = 0; ci < 4; ci++)
        for (int depth = 8; depth <= 16; depth += 8)
            for (int fi = 0; fi < 6; fi++)
                for (int k = 0; k < 3; k++) {
                    spec s = {0};
                    s.colour = k_colours[ci];
                    s.depth = depth;
                    s.filters = k_filters[fi];
                    s.level = ict_range(r, 0, 9);
                    s.kind = k;
                    s.w = ict_range(r, 1, 100);
                    s.h = 2 * ict_range(r, 0, 20) + 1;
                    s.zbuf = ict_below(r, 2) ? 0 : (size_t)ict_range(r, 1, 300);
                    s.meta = ict_below(r, 2);
                    s.exif_after = ict_below(r, 2);
                    size_t n;
                    uint8_t *d = write_png(&s, r, &n);
                    char what[160];
                    snprintf(what, sizeof what, "%dx%d colour %d depth %d filters 0x%x kind %d",
                             s.w, s.h, s.colour, s.depth, s.filters, s.kind);
                    compare(d, n, 1, what);
                    free(d);
                    cases++;
                }
    /* every width 1..100 */
    for (int w = 1; w <= 100; w++) {
        spec s = {0};
        s.colour = k_colours[w % 4];
        s.depth = w % 3 ? 8 : 16;
        s.filters = k_filters[w % 6];
        s.level = 6;
        s.kind = w % 3;
        s.w = w;
        s.h = 1 + 2 * (w % 4);
        size_t n;
        uint8_t *d = write_png(&s, r, &n);
        char what[64];
        snprintf(what, sizeof what, "width %d", w);
        compare(d, n, 1, what);
        free(d);
        cases++;
    }
    printf("  shapes: %d files\n", cases);
}

/* A photograph-sized file: several IDAT chunks of libpng's default size. */
static void test_large(ict_rng *r)
{
    for (int ci = 0; ci < 4; ci++) {
        spec s = {0};
        s.colour = k_colours[ci];
        s.depth = ci == 3 ? 16 : 8;
        s.filters = PNG_ALL_FILTERS;
        s.level = 3;
        s.w = 613;
        s.h = 411;
        s.meta = 1;
        size_t n;
        uint8_t *d = write_png(&s, r, &n);
        char what[64];
        snprintf(what, sizeof what, "613x411 colour %d depth %d", s.colour, s.depth);
        compare(d, n, 1, what);
        result got;
        read_path(d, n, IC_PNG_PATH_FAST, &got);
        CHECK(got.st == IC_OK && got.meta.icc_size == 256 && got.meta.exif_size == 40,
              "%s: metadata of %zu and %zu bytes", what, got.meta.icc_size, got.meta.exif_size);
        result_free(&got);
        /* Memory for the image but not for the fast path's buffers: libpng reads it. */
        const uint64_t image = 613u * 411u * (uint64_t)channels_of(s.colour) * (s.depth / 8u);
        g_max_memory = image + image / 4;
        compare(d, n, 0, "memory for the image only");
        g_max_memory = (uint64_t)1 << 30;
        free(d);
    }
}

static void test_refused(ict_rng *r)
{
    static const struct {
        int colour, depth, interlace, trns;
    } c[] = {
        {PNG_COLOR_TYPE_RGB, 8, 1, 0},     {PNG_COLOR_TYPE_GRAY, 16, 1, 0},
        {PNG_COLOR_TYPE_PALETTE, 8, 0, 0}, {PNG_COLOR_TYPE_GRAY, 4, 0, 0},
        {PNG_COLOR_TYPE_GRAY, 1, 0, 0},    {PNG_COLOR_TYPE_RGB, 8, 0, 1},
        {PNG_COLOR_TYPE_GRAY, 16, 0, 1},
    };
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        spec s = {0};
        s.colour = c[i].colour;
        s.depth = c[i].depth;
        s.interlace = c[i].interlace;
        s.trns = c[i].trns;
        s.filters = PNG_ALL_FILTERS;
        s.level = 6;
        s.w = 37;
        s.h = 11;
        size_t n;
        uint8_t *d = write_png(&s, r, &n);
        char what[96];
        snprintf(what, sizeof what, "refused: colour %d depth %d interlace %d tRNS %d", s.colour,
                 s.depth, s.interlace, s.trns);
        compare(d, n, 0, what);
        free(d);
    }
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

/* Appends a chunk with a right CRC. */
static void chunk_put(buf *b, const char *type, const uint8_t *d, uint32_t n)
{
    uint8_t h[8];
    put_be32(h, n);
    memcpy(h + 4, type, 4);
    buf_put(b, h, 8);
    if (n)
        buf_put(b, d, n);
    uLong crc = crc32(0, (const Bytef *)type, 4);
    if (n)
        crc = crc32(crc, d, n);
    put_be32(h, (uint32_t)crc);
    buf_put(b, h, 4);
}

/* The file d with its IDAT data (all chunks joined) replaced by z[0..zn) cut
 * into chunks of `step` bytes, and `between` (a tEXt chunk) put after the
 * chunk that ends past byte `split` of it (split 0: none). */
static uint8_t *restream(const uint8_t *d, size_t n, const uint8_t *z, size_t zn, size_t step,
                         size_t split, size_t *n_out)
{
    buf b = {0};
    buf_put(&b, d, 8);
    int done = 0;
    for (size_t at = 8; at + 12 <= n;) {
        const uint32_t len = be32(d + at);
        if (memcmp(d + at + 4, "IDAT", 4) != 0) {
            buf_put(&b, d + at, 12 + (size_t)len);
        } else if (!done) {
            done = 1;
            for (size_t o = 0; o < zn; o += step) {
                const size_t k = zn - o < step ? zn - o : step;
                chunk_put(&b, "IDAT", z + o, (uint32_t)k);
                if (split && o < split && o + k >= split)
                    chunk_put(&b, "tEXt", (const uint8_t *)"a\0b", 3);
            }
        }
        at += 12 + (size_t)len;
    }
    *n_out = b.n;
    return b.p;
}

/* The concatenated IDAT data of d. */
static uint8_t *idat_of(const uint8_t *d, size_t n, size_t *zn)
{
    buf b = {0};
    for (size_t at = 8; at + 12 <= n;) {
        const uint32_t len = be32(d + at);
        if (memcmp(d + at + 4, "IDAT", 4) == 0)
            buf_put(&b, d + at + 8, len);
        at += 12 + (size_t)len;
    }
    *zn = b.n;
    return b.p;
}

static void test_damaged(ict_rng *r)
{
    spec s = {0};
    s.colour = PNG_COLOR_TYPE_RGB;
    s.depth = 8;
    s.filters = PNG_ALL_FILTERS;
    s.level = 6;
    s.w = 45;
    s.h = 31;
    s.zbuf = 700;
    s.meta = 1;
    s.exif_after = 1;
    size_t n;
    uint8_t *d = write_png(&s, r, &n);
    char what[96];
    /* cut anywhere */
    for (size_t cut = 1; cut < n; cut += 1 + ict_below(r, 23)) {
        snprintf(what, sizeof what, "cut at %zu of %zu", cut, n);
        compare(d, cut, 0, what);
    }
    /* one byte changed anywhere */
    uint8_t *e = malloc(n);
    for (size_t at = 8; at < n; at += 1 + ict_below(r, 7)) {
        memcpy(e, d, n);
        e[at] ^= (uint8_t)(1u << ict_below(r, 8));
        result ref, aut;
        char why[1200];
        read_path(e, n, IC_PNG_PATH_LIBPNG, &ref);
        read_path(e, n, IC_PNG_PATH_AUTO, &aut);
        CHECK(same_result(&aut, &ref, why, sizeof why), "byte %zu changed: %s", at, why);
        result_free(&ref);
        result_free(&aut);
    }
    free(e);

    /* The stream itself, re-chunked and spoilt behind valid CRCs. */
    size_t zn;
    uint8_t *z = idat_of(d, n, &zn);
    uint8_t *z2 = malloc(zn + 100);
    memcpy(z2, z, zn);
    memset(z2 + zn, 0x55, 100);
    static const struct {
        const char *what;
        size_t len_less, len_more, step, split;
        int fast;
    } v[] = {
        {"one IDAT", 0, 0, (size_t)-1, 0, 1},
        {"1-byte IDATs", 0, 0, 1, 0, 1},
        {"no Adler-32", 4, 0, 64, 0, 0},
        {"half the stream", 0, 0, 64, 0, 0},
        {"junk after the stream", 0, 100, 64, 0, 1},
        {"IDAT split by tEXt", 0, 0, 64, 1, 0},
        {"IDAT split by tEXt after the stream", 0, 100, 64, 2, 0},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        size_t len = zn - v[i].len_less + v[i].len_more;
        if (i == 3)
            len = zn / 2;
        const size_t split = v[i].split == 1 ? zn / 2 : v[i].split == 2 ? zn + 10 : 0;
        size_t m;
        uint8_t *f = restream(d, n, z2, len, v[i].step, split, &m);
        compare(f, m, v[i].fast, v[i].what);
        free(f);
    }
    /* A bad filter type and a bad Adler-32, deflated again. */
    for (int bad = 0; bad < 2; bad++) {
        const size_t raw_n = (size_t)s.h * (3u * (size_t)s.w + 1u);
        uint8_t *raw = malloc(raw_n);
        uLongf got = raw_n;
        CHECK(uncompress(raw, &got, z, zn) == Z_OK && got == raw_n, "cannot inflate");
        if (bad == 0)
            raw[(size_t)(s.h / 2) * (3u * (size_t)s.w + 1u)] = 5;
        uLongf zz = compressBound(raw_n);
        uint8_t *z3 = malloc(zz);
        compress(z3, &zz, raw, raw_n);
        if (bad == 1)
            z3[zz - 1] ^= 1;
        size_t m;
        uint8_t *f = restream(d, n, z3, zz, 100, 0, &m);
        compare(f, m, 0, bad ? "bad Adler-32" : "filter type 5");
        free(f);
        free(z3);
        free(raw);
    }
    /* A window smaller than the rows: zlib refuses what reaches farther back. */
    {
        const size_t raw_n = (size_t)s.h * (3u * (size_t)s.w + 1u);
        uint8_t *raw = malloc(raw_n);
        uLongf got = raw_n;
        uncompress(raw, &got, z, zn);
        for (int wbits = 9; wbits <= 15; wbits += 3) {
            z_stream zs;
            memset(&zs, 0, sizeof zs);
            deflateInit2(&zs, 9, Z_DEFLATED, wbits, 8, Z_DEFAULT_STRATEGY);
            uint8_t *z4 = malloc(deflateBound(&zs, raw_n));
            zs.next_in = raw;
            zs.avail_in = (uInt)raw_n;
            zs.next_out = z4;
            zs.avail_out = (uInt)deflateBound(&zs, raw_n);
            deflate(&zs, Z_FINISH);
            const size_t z4n = zs.total_out;
            deflateEnd(&zs);
            /* the header claims a 256-byte window; the data may reach 2^wbits back */
            z4[0] = (uint8_t)((z4[0] & 0x0f) | 0x00);
            z4[1] = (uint8_t)(z4[1] & 0xe0);
            z4[1] = (uint8_t)(z4[1] + (31 - ((unsigned)z4[0] * 256u + z4[1]) % 31) % 31);
            size_t m;
            uint8_t *f = restream(d, n, z4, z4n, 500, 0, &m);
            snprintf(what, sizeof what, "window 256 declared, %d used", 1 << wbits);
            compare(f, m, 0, what);
            free(f);
            free(z4);
        }
        free(raw);
    }
    free(z2);
    free(z);
    free(d);

    /* One IDAT chunk over libpng's chunk limit (16 MiB): left to libpng. */
    s.w = 2400;
    s.h = 2400;
    s.kind = 2;
    s.level = 0;
    s.meta = 0;
    s.filters = PNG_FILTER_NONE;
    d = write_png(&s, r, &n);
    z = idat_of(d, n, &zn);
    size_t m;
    uint8_t *f = restream(d, n, z, zn, (size_t)-1, 0, &m);
    CHECK(zn > ((size_t)16 << 20), "the stream has %zu bytes", zn);
    compare(f, m, 0, "one IDAT of over 16 MiB");
    result big;
    read_path(f, m, IC_PNG_PATH_AUTO, &big);
    CHECK(big.st == IC_OK && big.img.width == 2400, "one IDAT of over 16 MiB: %s", big.err);
    result_free(&big);
    free(f);
    free(z);
    free(d);
}

/* The unfilters as RFC 2083 states them, byte by byte. */
static void unfilter_ref(uint8_t *row, const uint8_t *prev, size_t n, size_t bpp, int type)
{
    for (size_t i = 0; i < n; i++) {
        const int a = i >= bpp ? row[i - bpp] : 0, b = prev[i], c = i >= bpp ? prev[i - bpp] : 0;
        int pred = 0;
        if (type == 1)
            pred = a;
        else if (type == 2)
            pred = b;
        else if (type == 3)
            pred = (a + b) / 2;
        else if (type == 4) {
            const int p = a + b - c, pa = abs(p - a), pb = abs(p - b), pc = abs(p - c);
            pred = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
        }
        row[i] = (uint8_t)(row[i] + pred);
    }
}

static void test_unfilter(ict_rng *r)
{
    const int isas[] = {IC_PNG_ISA_SCALAR, IC_PNG_ISA_SSE2};
    uint8_t raw[800], prev[800], want[800], got[800];
    int runs = 0;
    for (size_t bpp = 1; bpp <= 8; bpp++)
        for (int type = 0; type <= 4; type++)
            for (int t = 0; t < 30; t++) {
                const size_t n = bpp * (size_t)ict_range(r, 0, 99);
                const int flat = t % 3 == 0; /* runs of equal bytes: ties in Paeth */
                for (size_t i = 0; i < n; i++) {
                    raw[i] = flat ? (uint8_t)ict_below(r, 3) : (uint8_t)ict_next(r);
                    prev[i] = flat ? (uint8_t)ict_below(r, 3) : (uint8_t)ict_next(r);
                }
                memcpy(want, raw, n);
                unfilter_ref(want, prev, n, bpp, type);
                for (size_t k = 0; k < 2; k++) {
                    memset(got, 0xee, sizeof got);
                    const int ok = ic_png_unfilter_row(got, raw, prev, n, bpp, type, isas[k]);
                    CHECK(ok && memcmp(got, want, n) == 0 && got[n] == 0xee,
                          "unfilter isa %d bpp %zu type %d n %zu", isas[k], bpp, type, n);
                    /* in place */
                    memcpy(got, raw, n);
                    ic_png_unfilter_row(got, got, prev, n, bpp, type, isas[k]);
                    CHECK(memcmp(got, want, n) == 0, "in place: isa %d bpp %zu type %d n %zu",
                          isas[k], bpp, type, n);
                    runs++;
                }
            }
    CHECK(!ic_png_unfilter_row(got, raw, prev, 8, 4, 5, IC_PNG_ISA_SCALAR), "type 5 taken");
    printf("  unfilter: %d rows, best instruction set %d\n", runs, ic_png_unfilter_isa_best());
}

int main(void)
{
    const char *env = getenv("IC_TEST_SEED");
    g_seed = env ? strtoull(env, NULL, 0) : 20261129u;
    ict_rng r;
    ict_rng_seed(&r, g_seed);
    printf("test_png_fastread: seed %llu\n", (unsigned long long)g_seed);
    test_unfilter(&r);
    test_shapes(&r);
    test_large(&r);
    test_refused(&r);
    test_damaged(&r);
    printf("test_png_fastread: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}

#else

int main(void)
{
    printf("skipped: built without libdeflate (no fast PNG reader)\n");
    return 77;
}

#endif
