/*
 * test_jpeg_strips.c - the JPEG writer's strips (src/io/jpeg.c): an image
 * coded in horizontal strips on several threads and joined with restart
 * markers must be, byte for byte, the file libjpeg writes on one thread with
 * a restart interval of one strip (the test support's own libjpeg writer
 * where it can make that file, the writer's one-thread path with libjpeg's
 * restart_in_rows where metadata goes in), its markers must be the DRI of
 * one strip and RST0..RST7 in turn, one between strips, and the project's
 * loader must decode it to exactly the pixels of the one-thread file without
 * markers. Photograph-like and random images, RGB, grey and converted
 * channels, sides that are not multiples of 16, smaller than a strip, one
 * row, one column, EXIF and ICC kept; the 16-bit restart interval on a
 * 65500-pixel-wide image; the fallback when no thread starts or a strip
 * runs out of memory, and a libjpeg error in a strip; and, through
 * ic_image_encode, that ic_save_options.threads only splits images of 1 MP
 * or more, into the same file for every thread count above one, and leaves
 * other formats alone. tests/cli/jpeg_threads.sh checks
 * the CLI's files with djpeg or PIL.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"
#include "testutil.h"
#ifdef IC_TEST_HAVE_JPEG
#include "jpeg_cases.h"
#endif

typedef struct bytes {
    uint8_t *p;
    size_t n;
} bytes;

static int same(const bytes *a, const bytes *b)
{
    return a->n == b->n && memcmp(a->p, b->p, a->n) == 0;
}

static size_t first_diff(const bytes *a, const bytes *b)
{
    size_t i = 0;
    while (i < a->n && i < b->n && a->p[i] == b->p[i])
        i++;
    return i;
}

/* ic_jpeg_write into memory; s NULL: the plain one-thread file. */
static ic_status write_mem(const ic_image *img, int out_ch, int quality, const ic_metadata *m,
                           const ic_jpeg_strips *s, bytes *out)
{
    char *buf = NULL;
    size_t n = 0;
    char err[IC_IO_ERRLEN] = "";
    FILE *f = open_memstream(&buf, &n);
    if (!f)
        return IC_ERR_NOMEM;
    ic_status st = ic_jpeg_write(f, img, out_ch, quality, m, s, err, sizeof err);
    if (fclose(f) != 0 && st == IC_OK)
        st = IC_ERR_IO;
    if (st != IC_OK)
        fprintf(stderr, "ic_jpeg_write: %s\n", err);
    out->p = (uint8_t *)buf;
    out->n = n;
    return st;
}

static void bytes_free(bytes *b)
{
    free(b->p);
    b->p = NULL;
    b->n = 0;
}

/* The restart interval of a file's DRI (-1: none) and its RST markers in
 * the entropy-coded data: *count of them, *in_turn 1 when they go 0, 1, ..
 * 7, 0, ... */
static int restart_markers(const bytes *b, int *count, int *in_turn)
{
    const uint8_t *p = b->p;
    int dri = -1;
    size_t i = 2;
    *count = 0;
    *in_turn = 1;
    while (i + 4 <= b->n && p[i] == 0xFF && p[i + 1] != 0xDA) {
        if (p[i + 1] == 0xDD)
            dri = p[i + 4] << 8 | p[i + 5];
        i += 2 + ((size_t)p[i + 2] << 8 | p[i + 3]);
    }
    if (i + 4 > b->n)
        return -2;
    i += 2 + ((size_t)p[i + 2] << 8 | p[i + 3]);
    for (; i + 1 < b->n; i++)
        if (p[i] == 0xFF && p[i + 1] >= 0xD0 && p[i + 1] <= 0xD7) {
            if (p[i + 1] != 0xD0 + *count % 8)
                *in_turn = 0;
            (*count)++;
        }
    return dri;
}

static int same_pixels(const bytes *a, const bytes *b, ic_metadata *meta_a)
{
    ic_image x, y;
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.metadata = meta_a;
    const ic_status sa = ic_image_decode(&x, a->p, a->n, &lo);
    const ic_status sb = ic_image_decode(&y, b->p, b->n, NULL);
    int ok = sa == IC_OK && sb == IC_OK && x.width == y.width && x.height == y.height &&
             x.channels == y.channels;
    if (sa != IC_OK || sb != IC_OK)
        fprintf(stderr, "decode: %s\n", ic_last_error());
    for (int r = 0; ok && r < x.height; r++)
        ok = memcmp(x.data + (size_t)r * x.pitch, y.data + (size_t)r * y.pitch,
                    ic_image_row_bytes(&x)) == 0;
    ic_image_free(&x);
    ic_image_free(&y);
    return ok;
}

typedef struct scase {
    int w, h, in_ch, out_ch;
    int random; /* noise instead of a photograph */
    int quality;
    int strip_rows, threads, max_helpers;
    const ic_metadata *meta;
} scase;

static void fill(ic_image *img, int random, uint64_t seed)
{
#ifdef IC_TEST_HAVE_JPEG
    if (!random) {
        ictj_photo_fill(img, seed);
        return;
    }
#endif
    ict_rng r;
    ict_rng_seed(&r, seed);
    for (int y = 0; y < img->height; y++)
        for (size_t x = 0; x < ic_image_row_bytes(img); x++)
            img->data[(size_t)y * img->pitch + x] = (uint8_t)ict_next(&r);
}

static void one_case(const scase *c, uint64_t seed)
{
    char what[200];
    snprintf(what, sizeof what,
             "%dx%d %d->%d ch %s q%d, strips of %d rows on %d threads (helpers %d)%s, seed %llu",
             c->w, c->h, c->in_ch, c->out_ch, c->random ? "noise" : "photo", c->quality,
             c->strip_rows, c->threads, c->max_helpers, c->meta ? ", EXIF+ICC" : "",
             (unsigned long long)seed);
    ic_image img;
    if (ic_image_create(&img, c->w, c->h, c->in_ch, IC_AOS) != IC_OK) {
        ICT_EXPECT(0, "%s: cannot allocate", what);
        return;
    }
    fill(&img, c->random, seed);
    const int mcu = c->out_ch == 1 ? 8 : 16;
    const int per_row = (c->w + mcu - 1) / mcu;
    int k = c->strip_rows / mcu;
    if (k > 65535 / per_row)
        k = 65535 / per_row; /* the interval's 16 bits */
    const int count = (c->h + k * mcu - 1) / (k * mcu);
    const int striped_expected = count >= 2 && c->max_helpers >= 0;

    ic_jpeg_strips s = {c->threads, c->strip_rows, 0, c->max_helpers, 0};
    ic_jpeg_strips one = {1, 0, k, 0, 0};
    bytes got = {0}, ref = {0}, plain = {0};
    ICT_EXPECT(write_mem(&img, c->out_ch, c->quality, c->meta, &s, &got) == IC_OK, "%s", what);
    ICT_EXPECT(write_mem(&img, c->out_ch, c->quality, c->meta, &one, &ref) == IC_OK, "%s", what);
    ICT_EXPECT(write_mem(&img, c->out_ch, c->quality, c->meta, NULL, &plain) == IC_OK, "%s", what);

    const bytes *want = striped_expected ? &ref : &plain;
    ICT_EXPECT(same(&got, want), "%s: %zu bytes, %s %zu (first difference at %zu)", what, got.n,
               striped_expected ? "libjpeg's own restart file" : "the one-thread file", want->n,
               first_diff(&got, want));
    int rst, in_turn;
    const int dri = restart_markers(&got, &rst, &in_turn);
    if (striped_expected)
        ICT_EXPECT(dri == k * per_row && rst == count - 1 && in_turn,
                   "%s: DRI %d (want %d), %d RST markers (want %d), %s", what, dri, k * per_row,
                   rst, count - 1, in_turn ? "in turn" : "out of turn");
    else
        ICT_EXPECT(dri == -1 && rst == 0, "%s: DRI %d, %d RST markers in a one-thread file", what,
                   dri, rst);

#ifdef IC_TEST_HAVE_JPEG
    /* The test support's own writer, apart from the library's, makes the
     * same file where it can (no metadata, no channel conversion). */
    if (striped_expected && !c->meta && c->in_ch == c->out_ch) {
        unsigned char *o = NULL;
        unsigned long on = 0;
        const ictj_opts jo = {2, 2, 0, k, c->quality};
        ICT_EXPECT(ictj_write_jpeg(&img, &jo, &o, &on), "%s: test writer", what);
        const bytes tb = {o, on};
        ICT_EXPECT(same(&got, &tb),
                   "%s: %zu bytes, the test writer's %lu (first difference at %zu)", what, got.n,
                   on, first_diff(&got, &tb));
        free(o);
    }
#endif

    ic_metadata back;
    memset(&back, 0, sizeof back);
    ICT_EXPECT(same_pixels(&got, &plain, &back),
               "%s: decoded pixels differ from the one-thread file", what);
    if (c->meta) {
        ICT_EXPECT(back.exif_size == c->meta->exif_size &&
                       memcmp(back.exif, c->meta->exif, back.exif_size) == 0,
                   "%s: EXIF back %zu bytes", what, back.exif_size);
        ICT_EXPECT(back.icc_size == c->meta->icc_size &&
                       memcmp(back.icc, c->meta->icc, back.icc_size) == 0,
                   "%s: ICC back %zu bytes", what, back.icc_size);
    }
    ic_metadata_free(&back);
    bytes_free(&got);
    bytes_free(&ref);
    bytes_free(&plain);
    ic_image_free(&img);
}

/* A libjpeg error in a strip fails the write with its message and writes
 * nothing; running out of memory in a strip falls back to one thread. */
static void strip_failures(void)
{
    ic_image img;
    ICT_EXPECT(ic_image_create(&img, 100, 90, 3, IC_AOS) == IC_OK, "create");
    fill(&img, 0, 77);
    bytes plain = {0};
    ICT_EXPECT(write_mem(&img, 3, 92, NULL, NULL, &plain) == IC_OK, "plain");
    for (int fail = -6; fail <= 6; fail++) {
        if (fail == 0)
            continue;
        ic_jpeg_strips s = {4, 16, 0, 0, fail};
        char *buf = NULL;
        size_t n = 0;
        char err[IC_IO_ERRLEN] = "";
        FILE *f = open_memstream(&buf, &n);
        ICT_EXPECT(f != NULL, "open_memstream");
        if (!f)
            break;
        const ic_status st = ic_jpeg_write(f, &img, 3, 92, NULL, &s, err, sizeof err);
        fclose(f);
        const bytes got = {(uint8_t *)buf, n};
        if (fail > 0)
            ICT_EXPECT(st == IC_ERR_IO && n == 0 && strncmp(err, "JPEG: ", 6) == 0 &&
                           !strchr(err, '\n'),
                       "libjpeg error in strip %d of 6: status %d, %zu bytes written, '%s'", fail,
                       st, n, err);
        else
            ICT_EXPECT(
                st == IC_OK && same(&got, &plain),
                "no memory in strip %d of 6: status %d (%s), %zu bytes, not the one-thread file",
                -fail, st, err, n);
        free(buf);
    }
    bytes_free(&plain);
    ic_image_free(&img);
}

/* Through the public API: when threads split a JPEG, and what else they
 * leave alone. */
static void public_api(void)
{
    ic_image img;
    ic_save_options so;
    memset(&so, 0, sizeof so);
    bytes one = {0}, many = {0};
    int rst, in_turn;

    so.threads = -1;
    ICT_EXPECT(ic_image_create(&img, 8, 8, 3, IC_AOS) == IC_OK, "create");
    fill(&img, 1, 1);
    ICT_EXPECT(ic_image_encode(&img, "x.jpg", &so, &many.p, &many.n) == IC_ERR_INVALID_ARG,
               "threads -1: %s", ic_last_error());
    ic_image_free(&img);

    /* Under 1 MP: one thread, the same bytes. Over: strips. */
    const struct {
        int w, h, striped;
    } sizes[] = {{1000, 1000, 0}, {1024, 1024, 1}, {1280, 1000, 1}, {50, 30000, 1}};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++) {
        ICT_EXPECT(ic_image_create(&img, sizes[i].w, sizes[i].h, 3, IC_AOS) == IC_OK, "create");
        fill(&img, 0, 2 + i);
        so.threads = 0;
        ICT_EXPECT(ic_image_encode(&img, "x.jpg", &so, &one.p, &one.n) == IC_OK, "%s",
                   ic_last_error());
        so.threads = 4;
        ICT_EXPECT(ic_image_encode(&img, "x.jpg", &so, &many.p, &many.n) == IC_OK, "%s",
                   ic_last_error());
        const int dri = restart_markers(&many, &rst, &in_turn);
        if (sizes[i].striped) {
            /* At least 2^18 pixels a strip, at most 32 strips. */
            const int most = sizes[i].w * sizes[i].h >> 18;
            ICT_EXPECT(dri > 0 && rst >= 1 && rst < (most < 32 ? most : 32) && in_turn,
                       "%dx%d, 4 threads: DRI %d, %d RST", sizes[i].w, sizes[i].h, dri, rst);
            ICT_EXPECT(same_pixels(&many, &one, NULL), "%dx%d, 4 threads: pixels differ",
                       sizes[i].w, sizes[i].h);
            /* Every thread count above one: the same file. */
            for (int t = 2; t <= 7; t += 5) {
                bytes other = {0};
                so.threads = t;
                ICT_EXPECT(ic_image_encode(&img, "x.jpg", &so, &other.p, &other.n) == IC_OK, "%s",
                           ic_last_error());
                ICT_EXPECT(same(&other, &many), "%dx%d: %d threads differ from 4", sizes[i].w,
                           sizes[i].h, t);
                bytes_free(&other);
            }
        } else {
            ICT_EXPECT(same(&many, &one), "%dx%d, 4 threads: not the one-thread file", sizes[i].w,
                       sizes[i].h);
        }
        bytes_free(&one);
        bytes_free(&many);
        ic_image_free(&img);
    }

    /* Other formats ignore it. */
    ICT_EXPECT(ic_image_create(&img, 1100, 1000, 3, IC_AOS) == IC_OK, "create");
    fill(&img, 0, 9);
    so.threads = 0;
    ICT_EXPECT(ic_image_encode(&img, "x.png", &so, &one.p, &one.n) == IC_OK, "%s", ic_last_error());
    so.threads = 8;
    ICT_EXPECT(ic_image_encode(&img, "x.png", &so, &many.p, &many.n) == IC_OK, "%s",
               ic_last_error());
    ICT_EXPECT(same(&one, &many), "PNG with 8 threads differs");
    bytes_free(&one);
    bytes_free(&many);
    ic_image_free(&img);
}

int main(void)
{
    if (!ic_format_supported(IC_FMT_JPEG)) {
        printf("skipped: built without JPEG\n");
        return 77;
    }
    static uint8_t icc_rgb[150000], icc_grey[700], exif[5000];
    ict_fake_icc(icc_rgb, sizeof icc_rgb, "RGB ", 1);
    ict_fake_icc(icc_grey, sizeof icc_grey, "GRAY", 1);
    ict_rng r;
    ict_rng_seed(&r, 11);
    for (size_t i = 0; i < sizeof exif; i++)
        exif[i] = (uint8_t)ict_next(&r);
    memcpy(exif, "MM\0*", 4);
    const ic_metadata meta_rgb = {icc_rgb, sizeof icc_rgb, exif, sizeof exif};
    const ic_metadata meta_grey = {icc_grey, sizeof icc_grey, exif, sizeof exif};

    const scase cases[] = {
        /* w, h, in, out, noise, q, strip rows, threads, helpers, meta */
        {37, 45, 3, 3, 0, 92, 16, 2, 0, NULL},
        {37, 45, 3, 3, 1, 100, 16, 3, 0, NULL},
        {1, 1, 3, 3, 0, 92, 16, 4, 0, NULL},
        {1, 40, 3, 3, 1, 92, 16, 4, 0, NULL},   /* one column */
        {40, 1, 3, 3, 1, 92, 16, 4, 0, NULL},   /* one row */
        {100, 16, 3, 3, 0, 92, 16, 4, 0, NULL}, /* exactly one strip */
        {100, 17, 3, 3, 0, 92, 16, 4, 0, NULL},
        {63, 200, 3, 3, 0, 75, 32, 3, 0, NULL},
        {300, 131, 3, 3, 1, 92, 48, 8, 0, NULL},
        {257, 300, 3, 3, 0, 92, 16, 4, 0, NULL}, /* 19 strips: RST0..7 twice and more */
        {45, 50, 4, 3, 1, 92, 16, 2, 0, NULL},   /* RGBA stored as RGB */
        {45, 50, 1, 3, 0, 92, 16, 2, 0, NULL},   /* grey stored as RGB */
        {45, 50, 3, 1, 0, 92, 8, 2, 0, NULL},    /* RGB stored as grey */
        {1, 1, 1, 1, 0, 92, 8, 2, 0, NULL},
        {1, 20, 1, 1, 1, 92, 8, 2, 0, NULL},
        {21, 1, 1, 1, 1, 92, 8, 2, 0, NULL},
        {37, 45, 1, 1, 0, 92, 8, 3, 0, NULL},
        {50, 8, 1, 1, 0, 92, 8, 3, 0, NULL},
        {50, 9, 1, 1, 1, 100, 8, 3, 0, NULL},
        {77, 100, 1, 1, 0, 50, 24, 4, 0, NULL},
        {65500, 150, 1, 1, 0, 92, 80, 4, 0, NULL}, /* 10 MCU rows asked, 8 fit 16 bits */
        {200, 300, 3, 3, 0, 92, 32, 4, 0, &meta_rgb},
        {200, 300, 1, 1, 1, 92, 16, 4, 0, &meta_grey},
        {30, 35, 3, 3, 0, 92, 16, 2, 0, &meta_rgb},
        {200, 300, 3, 3, 0, 92, 16, 8, 1, NULL},  /* one helper for 19 strips */
        {200, 300, 3, 3, 0, 92, 16, 8, -1, NULL}, /* no helper: one thread, no markers */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        one_case(&cases[i], 100 + i);
    strip_failures();
    public_api();
    printf("test_jpeg_strips: %d checks, %d failed\n", ict_checks, ict_failed);
    return ict_failed ? 1 : 0;
}
