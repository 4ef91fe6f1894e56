/*
 * test_jpeg_restart.c - the JPEG decoder on several threads
 * (src/io/jpeg_restart.c): a baseline file with restart markers, cut into
 * parts at markers that start an MCU row, must decode to exactly the pixels
 * of the one-thread decode, and any file it cannot decode cleanly must get
 * the one-thread decoder's verdict (status and message), pixels and
 * damage flag included under accept_damaged. Photograph-like and noise
 * images of sides that are not multiples of the MCU; 4:4:4, 4:2:2, 4:2:0,
 * 4:4:0 and grey; restart markers every MCU row, every 2 and 3 rows, and
 * every n MCUs where n does not divide the row; 1, 2, 7 and 16 threads;
 * the files imgconv's own writer makes in strips; a file read from disk;
 * progressive and marker-free files left on one thread; a part that fails
 * (the file then decoded on one thread); zero padding after the rows of
 * the unzeroed image a file decoded in parts gets; more threads than
 * parts; the bad files of the test support's jpeg_cases (cut, garbage, a
 * zero width) and bytes put before every restart marker in turn (which
 * libjpeg reports at a later marker, possibly in another part).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"
#include "testutil.h"

#ifndef IC_TEST_HAVE_JPEG
int main(void)
{
    printf("SKIPPED: needs libjpeg\n");
    return 77;
}
#else

#include <jpeglib.h>

#include "jpeg_cases.h"

static int g_fail;

#define CHECK(cond, ...) ICT_CHECK(g_fail, cond, __VA_ARGS__)

/* A JPEG written by libjpeg: luma sampling hs x vs (colour), restart
 * markers every `rows` MCU rows or, when mcus > 0, every `mcus` MCUs. */
typedef struct enc {
    int hs, vs;
    int rows, mcus;
    int progressive;
    int quality;
} enc;

static int write_jpeg(const ic_image *img, const enc *o, unsigned char **out, unsigned long *n)
{
    struct jpeg_compress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_compress(&ci);
    *out = NULL;
    *n = 0;
    jpeg_mem_dest(&ci, out, n);
    ci.image_width = (JDIMENSION)img->width;
    ci.image_height = (JDIMENSION)img->height;
    ci.input_components = img->channels;
    ci.in_color_space = img->channels == 1 ? JCS_GRAYSCALE : JCS_RGB;
    jpeg_set_defaults(&ci);
    jpeg_set_quality(&ci, o->quality, TRUE);
    if (img->channels == 3) {
        ci.comp_info[0].h_samp_factor = o->hs;
        ci.comp_info[0].v_samp_factor = o->vs;
    }
    if (o->progressive)
        jpeg_simple_progression(&ci);
    if (o->mcus > 0)
        ci.restart_interval = (unsigned)o->mcus;
    else
        ci.restart_in_rows = o->rows;
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = img->data + (size_t)ci.next_scanline * img->pitch;
        (void)jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    return *out && *n > 0;
}

/* One decode through ic_jpeg_read: its status, message, pixels, damage
 * flag and the parts it took. */
typedef struct result {
    ic_status st;
    char msg[IC_IO_ERRLEN];
    ic_image img;
    int damaged;
    int parts;
} result;

/* Decodes n bytes on `threads` threads, parts of at least min_pixels; the
 * bytes are given in memory (as ic_image_decode gives them) unless
 * from_file, when they are read from a temporary file. */
static void decode(const unsigned char *data, size_t n, int threads, int min_pixels, int accept,
                   int fail_part, int from_file, result *r)
{
    memset(r, 0, sizeof *r);
    r->parts = -1;
    ic_io_limits lim;
    memset(&lim, 0, sizeof lim);
    lim.max_pixels = IC_DEFAULT_MAX_PIXELS;
    lim.max_memory = (uint64_t)1 << 32;
    lim.accept_damaged = accept;
    lim.damaged = &r->damaged;
    lim.threads = threads;
    lim.jpeg_min_pixels = min_pixels;
    lim.jpeg_fail_part = fail_part;
    lim.jpeg_parts = &r->parts;
    FILE *f;
    if (from_file) {
        f = tmpfile();
        if (f && (fwrite(data, 1, n, f) != n || fflush(f) != 0 || fseek(f, 0, SEEK_SET) != 0)) {
            fclose(f);
            f = NULL;
        }
    } else {
        lim.bytes = data;
        lim.nbytes = n;
        f = fmemopen((void *)(uintptr_t)data, n, "rb");
    }
    if (!f) {
        r->st = IC_ERR_IO;
        snprintf(r->msg, sizeof r->msg, "cannot open a stream");
        return;
    }
    r->st = ic_jpeg_read(f, &r->img, &lim, NULL, r->msg, sizeof r->msg);
    fclose(f);
}

/* 1 when a and b hold the same pixels. */
static int same_pixels(const ic_image *a, const ic_image *b, int *row)
{
    *row = -1;
    if (a->width != b->width || a->height != b->height || a->channels != b->channels)
        return 0;
    const size_t bytes = (size_t)a->width * (size_t)a->channels;
    for (int y = 0; y < a->height; y++)
        if (memcmp(a->data + (size_t)y * a->pitch, b->data + (size_t)y * b->pitch, bytes) != 0) {
            *row = y;
            return 0;
        }
    return 1;
}

/* The parallel decode of data against the serial one: same verdict, same
 * pixels. Returns the parts it took (-1 on a mismatch). */
static int compare(const char *what, const unsigned char *data, size_t n, int threads,
                   int min_pixels, int accept, int fail_part, int from_file)
{
    result s, p;
    decode(data, n, 1, 0, accept, 0, 0, &s);
    decode(data, n, threads, min_pixels, accept, fail_part, from_file, &p);
    int row = -1, ok = 1;
    if (s.st != p.st || strcmp(s.msg, p.msg) != 0 || s.damaged != p.damaged) {
        ok = 0;
        CHECK(0, "%s, %d threads: serial %s \"%s\" damaged %d, parallel (%d parts) %s \"%s\" %d",
              what, threads, ic_status_str(s.st), s.msg, s.damaged, p.parts, ic_status_str(p.st),
              p.msg, p.damaged);
    } else if (s.st == IC_OK && !same_pixels(&s.img, &p.img, &row)) {
        ok = 0;
        CHECK(0, "%s, %d threads (%d parts): pixels differ from row %d", what, threads, p.parts,
              row);
    }
    if (s.st != IC_OK)
        CHECK(p.img.data == NULL, "%s: a failed decode left an image", what);
    ic_image_free(&s.img);
    ic_image_free(&p.img);
    return ok ? p.parts : -1;
}

/* A random image: smooth photograph-like content, or pure noise. */
static int make_image(ic_image *img, int w, int h, int ch, int noise, uint64_t seed)
{
    if (ic_image_create(img, w, h, ch, IC_AOS) != IC_OK)
        return 0;
    if (noise) {
        ict_rng r;
        ict_rng_seed(&r, seed);
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w * ch; x++)
                img->data[(size_t)y * img->pitch + (size_t)x] = (uint8_t)ict_below(&r, 256);
    } else {
        ictj_photo_fill(img, seed);
    }
    return 1;
}

/* ---- 1. clean files: identical pixels ------------------------------------- */

static void clean_files(void)
{
    static const struct {
        const char *name;
        int grey;
        enc e;
    } cases[] = {
        {"444 every row", 0, {1, 1, 1, 0, 0, 90}},    {"422 every row", 0, {2, 1, 1, 0, 0, 90}},
        {"420 every row", 0, {2, 2, 1, 0, 0, 90}},    {"440 every row", 0, {1, 2, 1, 0, 0, 90}},
        {"grey every row", 1, {1, 1, 1, 0, 0, 90}},   {"420 every 2 rows", 0, {2, 2, 2, 0, 0, 75}},
        {"444 every 3 rows", 0, {1, 1, 3, 0, 0, 95}}, {"grey every 3 rows", 1, {1, 1, 3, 0, 0, 60}},
        {"420 every 3 MCUs", 0, {2, 2, 0, 3, 0, 90}}, {"422 every 7 MCUs", 0, {2, 1, 0, 7, 0, 90}},
        {"grey every 1 MCU", 1, {1, 1, 0, 1, 0, 90}},
    };
    static const int sizes[][2] = {{333, 251}, {97, 203}, {640, 480}, {1001, 77}, {17, 300}};
    static const int threads[] = {2, 7, 16};
    uint64_t seed = 4100;
    int parallel = 0, runs = 0;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++)
            for (int noise = 0; noise < 2; noise++) {
                ic_image src;
                if (!make_image(&src, sizes[s][0], sizes[s][1], cases[c].grey ? 1 : 3, noise,
                                seed++)) {
                    CHECK(0, "cannot allocate");
                    return;
                }
                unsigned char *jpg = NULL;
                unsigned long n = 0;
                CHECK(write_jpeg(&src, &cases[c].e, &jpg, &n), "libjpeg could not write %s",
                      cases[c].name);
                for (size_t t = 0; t < sizeof threads / sizeof *threads; t++) {
                    char what[128];
                    snprintf(what, sizeof what, "%s %dx%d %s (seed %llu)", cases[c].name,
                             sizes[s][0], sizes[s][1], noise ? "noise" : "photo",
                             (unsigned long long)(seed - 1));
                    const int parts = compare(what, jpg, n, threads[t], 1, 0, 0, t == 1);
                    runs++;
                    parallel += parts > 1;
                    /* Every file here has at least two MCU rows that start an interval. */
                    CHECK(parts > 1, "%s, %d threads: decoded serially", what, threads[t]);
                    CHECK(parts <= threads[t], "%s: %d parts on %d threads", what, parts,
                          threads[t]);
                }
                /* One thread: never in parts. */
                result r;
                decode(jpg, n, 1, 1, 0, 0, 0, &r);
                CHECK(r.st == IC_OK && r.parts == 0, "%s: one thread took %d parts", cases[c].name,
                      r.parts);
                ic_image_free(&r.img);
                free(jpg);
                ic_image_free(&src);
            }
    printf("clean files: %d of %d decodes in parts\n", parallel, runs);
}

/* ---- 2. files left on one thread ---------------------------------------------- */

static void serial_files(void)
{
    static const struct {
        const char *name;
        enc e;
        int w, h;
    } cases[] = {
        {"no markers", {2, 2, 0, 0, 0, 90}, 400, 300},
        {"progressive with markers", {2, 2, 1, 0, 1, 90}, 400, 300},
        /* A 13-MCU interval on 25-MCU rows: no interval but the first starts
         * one of the 10 rows. */
        {"no aligned marker", {2, 2, 0, 13, 0, 90}, 400, 160},
        /* One MCU row. */
        {"one MCU row", {2, 2, 1, 0, 0, 90}, 400, 16},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        ic_image src;
        if (!make_image(&src, cases[c].w, cases[c].h, 3, 0, 9 + c))
            return;
        unsigned char *jpg = NULL;
        unsigned long n = 0;
        CHECK(write_jpeg(&src, &cases[c].e, &jpg, &n), "libjpeg could not write %s", cases[c].name);
        const int parts = compare(cases[c].name, jpg, n, 4, 1, 0, 0, 0);
        CHECK(parts == 0, "%s: %d parts, should be decoded serially", cases[c].name, parts);
        free(jpg);
        ic_image_free(&src);
    }
    /* The default least part: an image under 1 MP stays on one thread, one
     * of 1 MP or more is cut in two on 2 threads and in parts of at least
     * 512 Ki pixels on more. */
    static const struct {
        int w, h, threads, parts;
    } sizes[] = {{1000, 1000, 2, 0}, {1024, 1024, 2, 2}, {2048, 1024, 16, 4}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        ic_image src;
        if (!make_image(&src, sizes[s].w, sizes[s].h, 3, 0, 70 + s))
            return;
        const enc e = {2, 2, 1, 0, 0, 90};
        unsigned char *jpg = NULL;
        unsigned long n = 0;
        CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
        const int parts = compare("default least part", jpg, n, sizes[s].threads, 0, 0, 0, 0);
        CHECK(parts == sizes[s].parts, "%dx%d on %d threads: %d parts, expected %d", sizes[s].w,
              sizes[s].h, sizes[s].threads, parts, sizes[s].parts);
        free(jpg);
        ic_image_free(&src);
    }
}

/* ---- 3. imgconv's own files ------------------------------------------------------ */

static void own_files(void)
{
    static const int sizes[][3] = {{1500, 1000, 3}, {1203, 1111, 3}, {1400, 900, 1}};
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        ic_image src;
        if (!make_image(&src, sizes[s][0], sizes[s][1], sizes[s][2], 0, 300 + s))
            return;
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);
        char err[IC_IO_ERRLEN] = "";
        ic_jpeg_strips o;
        memset(&o, 0, sizeof o);
        o.threads = 4;
        ic_status st =
            f ? ic_jpeg_write(f, &src, sizes[s][2], 90, NULL, &o, err, sizeof err) : IC_ERR_NOMEM;
        if (f)
            fclose(f);
        CHECK(st == IC_OK, "ic_jpeg_write: %s", err);
        if (st == IC_OK)
            for (int t = 2; t <= 16; t *= 2) {
                char what[64];
                snprintf(what, sizeof what, "imgconv's %dx%dx%d", sizes[s][0], sizes[s][1],
                         sizes[s][2]);
                const int parts =
                    compare(what, (const unsigned char *)buf, n, t, 1 << 16, 0, 0, t == 4);
                CHECK(parts > 1, "%s, %d threads: decoded serially", what, t);
            }
        free(buf);
        ic_image_free(&src);
    }
}

/* ---- 4. failures: the one-thread verdict ------------------------------------------ */

typedef struct bad_tally {
    int cases, refused;
    int accept;
} bad_tally;

static void bad_case(void *ctx, const char *what, const unsigned char *data, size_t n)
{
    bad_tally *t = ctx;
    static const int threads[] = {2, 7, 16};
    for (size_t i = 0; i < sizeof threads / sizeof *threads; i++) {
        char w[160];
        snprintf(w, sizeof w, "%s%s", what, t->accept ? " (accept damaged)" : "");
        (void)compare(w, data, n, threads[i], 1, t->accept, 0, 0);
    }
    result r;
    decode(data, n, 1, 0, t->accept, 0, 0, &r);
    t->cases++;
    t->refused += r.st != IC_OK;
    ic_image_free(&r.img);
}

static void bad_files(void)
{
    bad_tally t;
    memset(&t, 0, sizeof t);
    for (int accept = 0; accept < 2; accept++) {
        t.accept = accept;
        for (uint64_t s = 0; s < 12; s++) {
            ic_image src;
            if (!make_image(&src, 333 + (int)s * 7, 251, s % 3 == 2 ? 1 : 3, (int)(s & 1), 500 + s))
                return;
            const enc e = {s % 3 == 1 ? 1 : 2, s % 3 == 1 ? 1 : 2, 1 + (int)(s % 2), 0, 0, 90};
            unsigned char *jpg = NULL;
            unsigned long n = 0;
            CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
            ictj_bad_cases(jpg, n, 0x7e57 + s, bad_case, &t);
            free(jpg);
            ic_image_free(&src);
        }
    }
    printf("bad files: %d cases, %d refused by the serial decoder\n", t.cases, t.refused);
    CHECK(t.refused > t.cases / 4, "too few bad files refused (%d of %d)", t.refused, t.cases);
}

/* Bytes put before one restart marker: libjpeg skips them at the marker, or
 * counts them and reports them only at a later marker. */
static void extra_bytes(void)
{
    ic_image src;
    if (!make_image(&src, 200, 160, 3, 0, 99))
        return;
    const enc e = {2, 2, 1, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    unsigned char *b = malloc(n + 16);
    int cases = 0, refused = 0;
    for (size_t at = 2; b && at + 1 < n; at++) {
        if (jpg[at] != 0xFF || jpg[at + 1] < 0xD0 || jpg[at + 1] > 0xD7)
            continue;
        for (size_t k = 1; k <= 9; k += 2) {
            memcpy(b, jpg, at);
            for (size_t i = 0; i < k; i++)
                b[at + i] = (uint8_t)(0x11 * (i + 1));
            memcpy(b + at + k, jpg + at, n - at);
            for (int accept = 0; accept < 2; accept++) {
                char what[96];
                snprintf(what, sizeof what, "%zu bytes before the marker at %zu", k, at);
                (void)compare(what, b, n + k, 4, 1, accept, 0, 0);
                result r;
                decode(b, n + k, 1, 0, accept, 0, 0, &r);
                cases++;
                refused += r.st != IC_OK;
                ic_image_free(&r.img);
            }
        }
    }
    printf("bytes before a marker: %d cases, %d refused by the serial decoder\n", cases, refused);
    free(b);
    free(jpg);
    ic_image_free(&src);
}

/* One byte changed in the entropy-coded data: the decoder's first warning
 * there (a bad Huffman code, bytes before a marker, a marker too early)
 * decides the message, and where libjpeg-turbo's fast path decodes a bad
 * code silently depends on the 4096-byte pieces it reads. */
static void flipped_bytes(void)
{
    ic_image src;
    if (!make_image(&src, 600, 400, 3, 1, 123))
        return;
    const enc e = {2, 2, 2, 0, 0, 92};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    unsigned char *b = malloc(n);
    ict_rng r;
    ict_rng_seed(&r, 0xf11b);
    int cases = 0, refused = 0;
    for (int k = 0; b && k < 150; k++) {
        memcpy(b, jpg, n);
        const size_t at = 1000 + ict_below(&r, (uint32_t)(n - 1010));
        b[at] = (uint8_t)(b[at] ^ (1u << ict_below(&r, 8)));
        char what[64];
        snprintf(what, sizeof what, "byte %zu flipped", at);
        (void)compare(what, b, n, 4, 1, 0, 0, 0);
        result s;
        decode(b, n, 1, 0, 0, 0, 0, &s);
        cases++;
        refused += s.st != IC_OK;
        ic_image_free(&s.img);
    }
    printf("flipped bytes: %d cases, %d refused by the serial decoder\n", cases, refused);
    free(b);
    free(jpg);
    ic_image_free(&src);
}

/* A part that fails: the file is decoded on one thread. */
static void failing_part(void)
{
    ic_image src;
    if (!make_image(&src, 640, 480, 3, 0, 7))
        return;
    const enc e = {2, 2, 1, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    for (int k = 1; k <= 4; k++) {
        const int parts = compare("a failing part", jpg, n, 4, 1, 0, k, 0);
        CHECK(parts == 0, "part %d failed, yet %d parts were kept", k - 1, parts);
    }
    free(jpg);
    ic_image_free(&src);
}

/* Blocks of `bytes` filled and freed, so that the next image of that size
 * from the heap likely holds their bytes rather than zeros. */
static void heap_dirty(size_t bytes)
{
    void *b[16];
    for (int i = 0; i < 16; i++)
        if ((b[i] = aligned_alloc(64, bytes)) != NULL)
            memset(b[i], 0xA5, bytes);
    for (int i = 0; i < 16; i++)
        free(b[i]);
}

/* A file decoded in parts gets an unzeroed image (jpeg.c): the padding
 * after each row must still be zero, from the parts and from the one-thread
 * decode after a part fails. */
static void row_padding(void)
{
    ic_image src;
    if (!make_image(&src, 100, 64, 3, 0, 5)) /* rows of 300 bytes, pitch 320 */
        return;
    const enc e = {2, 2, 1, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    for (int fail = 0; fail <= 1; fail++) {
        heap_dirty(src.pitch * (size_t)src.height);
        result r;
        decode(jpg, n, 4, 1, 0, fail, 0, &r);
        CHECK(r.st == IC_OK, "padding, failing part %d: %s", fail, r.msg);
        CHECK(r.parts == (fail ? 0 : 4), "padding, failing part %d: %d parts", fail, r.parts);
        const size_t row = (size_t)r.img.width * (size_t)r.img.channels;
        int dirty = -1;
        for (int y = 0; r.st == IC_OK && y < r.img.height && dirty < 0; y++)
            for (size_t x = row; x < r.img.pitch; x++)
                if (r.img.data[(size_t)y * r.img.pitch + x] != 0)
                    dirty = y;
        CHECK(r.img.pitch > row, "padding: no padding to check (pitch %zu)", r.img.pitch);
        CHECK(dirty < 0, "padding, failing part %d: row %d's padding is not zero", fail, dirty);
        ic_image_free(&r.img);
    }
    free(jpg);
    ic_image_free(&src);
}

/* More threads than the markers allow parts: the threads started before
 * the scan without a part leave, and every row is still decoded. */
static void idle_threads(void)
{
    ic_image src;
    if (!make_image(&src, 200, 64, 3, 1, 9)) /* 4 MCU rows of 4:2:0 */
        return;
    const enc e = {2, 2, 1, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    for (int threads = 5; threads <= 16; threads += 11) {
        const int parts = compare("more threads than parts", jpg, n, threads, 1, 0, 0, 0);
        CHECK(parts == 4, "%d threads on 4 MCU rows: %d parts", threads, parts);
    }
    free(jpg);
    ic_image_free(&src);
}

/* Through the public API: ic_load_options.threads. */
static void public_api(void)
{
    ic_image src;
    if (!make_image(&src, 1280, 1024, 3, 1, 11))
        return;
    const enc e = {2, 2, 1, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    CHECK(write_jpeg(&src, &e, &jpg, &n), "libjpeg could not write");
    ic_image a, b;
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    CHECK(ic_image_decode(&a, jpg, n, &lo) == IC_OK, "%s", ic_last_error());
    lo.threads = 2;
    CHECK(ic_image_decode(&b, jpg, n, &lo) == IC_OK, "%s", ic_last_error());
    int row;
    CHECK(same_pixels(&a, &b, &row), "threads 2: pixels differ from row %d", row);
    lo.threads = -1;
    ic_image c;
    CHECK(ic_image_decode(&c, jpg, n, &lo) == IC_ERR_INVALID_ARG, "threads -1 accepted");
    ic_image_free(&a);
    ic_image_free(&b);
    free(jpg);
    ic_image_free(&src);
}

int main(void)
{
    clean_files();
    serial_files();
    own_files();
    failing_part();
    row_padding();
    idle_threads();
    bad_files();
    extra_bytes();
    flipped_bytes();
    public_api();
    printf("%s: %d failure%s\n", g_fail ? "FAIL" : "PASS", g_fail, g_fail == 1 ? "" : "s");
    return g_fail ? 1 : 0;
}

#endif
