/*
 * test_tiff_exif.c - metadata carried from every input format that has it
 * (PNG, JPEG, TIFF, WebP) to every output format, TIFF's EXIF above all:
 * TIFF keeps EXIF as typed tags in IFD0 and an EXIF directory, the library
 * as one block (docs/definitions.md#metadata).
 *
 * The fixtures are made here, independently of the library's TIFF code: a
 * camera-style EXIF block and a TIFF file with an EXIF directory are laid
 * out byte by byte by the small IFD writer below, and what comes back is
 * read with the small IFD reader below (not the library's). Checked for each
 * input x output: the ICC profile byte for byte; the EXIF fields that matter
 * (Make, Model, DateTime, Orientation, ExposureTime, FNumber, ISO,
 * ExifVersion, DateTimeOriginal) by value; the whole block byte for byte
 * where no TIFF is on the way; the maker note dropped where one is (TIFF
 * does not carry it); the pixels as stored (orientation 6 is kept, not
 * applied). Then corrupt and cut EXIF directories in a TIFF: the image
 * loads, and what cannot be read is left out. Formats not built in are
 * reported as skipped.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "testutil.h"

/* ---- an IFD writer (fixtures) ----------------------------------------------- */

typedef struct blob {
    uint8_t b[8192];
    size_t n;
    int le;
} blob;

static void put16(blob *o, size_t at, unsigned v)
{
    o->b[at + (o->le ? 0 : 1)] = (uint8_t)v;
    o->b[at + (o->le ? 1 : 0)] = (uint8_t)(v >> 8);
}

static void put32(blob *o, size_t at, uint32_t v)
{
    put16(o, at + (o->le ? 0 : 2), v & 0xFFFF);
    put16(o, at + (o->le ? 2 : 0), v >> 16);
}

/* One entry: numbers in v (rationals as num, den pairs) or bytes in s. */
typedef struct ent {
    unsigned tag, type;
    uint32_t count;
    uint32_t v[6];
    const char *s;
} ent;

enum { BYTE = 1, ASCII = 2, SHORT = 3, LONG = 4, RATIONAL = 5, UNDEF = 7 };

static size_t tsize(unsigned type)
{
    return type == SHORT ? 2 : type == LONG ? 4 : type == RATIONAL ? 8 : 1;
}

static void header(blob *o, int le)
{
    memset(o, 0, sizeof *o);
    o->le = le;
    memcpy(o->b, le ? "II*\0" : "MM\0*", 4);
    put32(o, 4, 8);
    o->n = 8;
}

/* Appends a directory of the n entries (ascending) and their values; returns
 * its offset. The entry at index `ptr_index` (-1: none) gets the value
 * *ptr_slot is set to point at: its position in the blob, patched later. */
static size_t put_ifd(blob *o, const ent *e, int n, int ptr_index, size_t *ptr_slot)
{
    const size_t at = (o->n + 1) & ~(size_t)1;
    put16(o, at, (unsigned)n);
    size_t val = at + 2 + (size_t)n * 12 + 4;
    for (int i = 0; i < n; i++) {
        const size_t p = at + 2 + (size_t)i * 12;
        const size_t len = e[i].count * tsize(e[i].type);
        put16(o, p, e[i].tag);
        put16(o, p + 2, e[i].type);
        put32(o, p + 4, e[i].count);
        const size_t dst = len <= 4 ? p + 8 : val;
        if (len > 4) {
            put32(o, p + 8, (uint32_t)val);
            val += len + (len & 1);
        }
        for (uint32_t k = 0; k < e[i].count; k++) {
            if (e[i].s)
                o->b[dst + k] = (uint8_t)e[i].s[k];
            else if (e[i].type == SHORT)
                put16(o, dst + 2 * k, e[i].v[k]);
            else if (e[i].type == LONG)
                put32(o, dst + 4 * k, e[i].v[k]);
            else if (e[i].type == RATIONAL)
                put32(o, dst + 8 * k, e[i].v[2 * k]), put32(o, dst + 8 * k + 4, e[i].v[2 * k + 1]);
            else
                o->b[dst + k] = (uint8_t)e[i].v[k];
        }
        if (i == ptr_index)
            *ptr_slot = p + 8;
    }
    put32(o, at + 2 + (size_t)n * 12, 0);
    o->n = val;
    return at;
}

#define MAKE "imgconv camera"
#define MODEL "TX-100 Mark II"
#define DATETIME "2026:11:25 13:45:10"
#define DATETIME_ORIGINAL "2026:11:24 09:30:00"

/* The EXIF directory of the camera: 1/250 s, f/2.8, ISO 200, version 0230,
 * a maker note. */
static const ent exif_ifd[] = {
    {0x829A, RATIONAL, 1, {1, 250}, NULL},
    {0x829D, RATIONAL, 1, {28, 10}, NULL},
    {0x8827, SHORT, 1, {200}, NULL},
    {0x9000, UNDEF, 4, {0}, "0230"},
    {0x9003, ASCII, 20, {0}, DATETIME_ORIGINAL},
    {0x927C, UNDEF, 12, {0}, "Maker\0\1\2\3\4\5\6"},
    {0xA001, SHORT, 1, {1}, NULL},
};
#define N_EXIF ((int)(sizeof exif_ifd / sizeof exif_ifd[0]))

/* IFD0's camera tags, Orientation `orient`, and the EXIF pointer last. */
static int camera_ifd0(ent *e, unsigned orient)
{
    const ent c[] = {
        {0x010F, ASCII, sizeof MAKE, {0}, MAKE},
        {0x0110, ASCII, sizeof MODEL, {0}, MODEL},
        {0x0112, SHORT, 1, {orient}, NULL},
        {0x011A, RATIONAL, 1, {300, 1}, NULL},
        {0x011B, RATIONAL, 1, {300, 1}, NULL},
        {0x0128, SHORT, 1, {2}, NULL},
        {0x0132, ASCII, sizeof DATETIME, {0}, DATETIME},
        {0x0213, SHORT, 1, {1}, NULL}, /* YCbCrPositioning: JPEG's, not TIFF's */
        {0x8769, LONG, 1, {0}, NULL},
    };
    memcpy(e, c, sizeof c);
    return (int)(sizeof c / sizeof c[0]);
}

/* A camera's EXIF block (as after "Exif\0\0" in APP1). */
static void camera_exif(blob *o, int le, unsigned orient)
{
    ent e[16];
    const int n = camera_ifd0(e, orient);
    header(o, le);
    size_t slot = 0;
    put_ifd(o, e, n, n - 1, &slot);
    put32(o, slot, (uint32_t)put_ifd(o, exif_ifd, N_EXIF, -1, NULL));
}

/* A w x h RGB TIFF, uncompressed, one strip, with the camera's tags, an EXIF
 * directory and an ICC profile; pixel (x, y) channel c is (x*7 + y*13 + c*50)
 * & 255. Returns the offset of the EXIF directory in the file. */
static size_t camera_tiff(blob *o, int le, unsigned orient, int w, int h, const uint8_t *icc,
                          size_t icc_n)
{
    ent cam[16], e[32];
    const int nc = camera_ifd0(cam, orient);
    const size_t pix = (size_t)w * h * 3;
    const ent img[] = {
        {0x0100, LONG, 1, {(uint32_t)w}, NULL},
        {0x0101, LONG, 1, {(uint32_t)h}, NULL},
        {0x0102, SHORT, 3, {8, 8, 8}, NULL},
        {0x0103, SHORT, 1, {1}, NULL},
        {0x0106, SHORT, 1, {2}, NULL},
        {0x0111, LONG, 1, {0}, NULL},
        {0x0115, SHORT, 1, {3}, NULL},
        {0x0116, LONG, 1, {(uint32_t)h}, NULL},
        {0x0117, LONG, 1, {(uint32_t)pix}, NULL},
        {0x011C, SHORT, 1, {1}, NULL},
        {0x8773, UNDEF, (uint32_t)icc_n, {0}, (const char *)icc},
    };
    /* Merge the two ascending lists. */
    int n = 0, i = 0, j = 0, strip = -1, exif = -1;
    const int ni = (int)(sizeof img / sizeof img[0]);
    while (i < ni || j < nc) {
        if (j == nc || (i < ni && img[i].tag < cam[j].tag))
            e[n] = img[i++];
        else
            e[n] = cam[j++];
        if (e[n].tag == 0x0111)
            strip = n;
        if (e[n].tag == 0x8769)
            exif = n;
        n++;
    }
    /* The pixels first, then the directories: a cut in the EXIF directory
     * leaves the image whole. */
    header(o, le);
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < 3; c++)
                o->b[8 + ((size_t)y * w + x) * 3 + c] = (uint8_t)((x * 7 + y * 13 + c * 50) & 255);
    o->n = 8 + pix;
    size_t exif_slot = 0;
    const size_t ifd0 = put_ifd(o, e, n, exif, &exif_slot);
    put32(o, 4, (uint32_t)ifd0);
    put32(o, ifd0 + 2 + (size_t)strip * 12 + 8, 8);
    const size_t exif_at = put_ifd(o, exif_ifd, N_EXIF, -1, NULL);
    put32(o, exif_slot, (uint32_t)exif_at);
    return exif_at;
}

/* ---- an IFD reader (checks) ------------------------------------------------- */

static unsigned rd16(const uint8_t *p, int le)
{
    return le ? (unsigned)(p[0] | p[1] << 8) : (unsigned)(p[0] << 8 | p[1]);
}

static uint32_t rd32(const uint8_t *p, int le)
{
    return le ? rd16(p, 1) | (uint32_t)rd16(p + 2, 1) << 16
              : (uint32_t)rd16(p, 0) << 16 | rd16(p + 2, 0);
}

/* Finds `tag` in IFD0 (exif 0) or in the EXIF directory (exif 1) of the TIFF
 * structure b (n bytes): its type, count and value bytes. 0 when absent. */
static int find_tag(const uint8_t *b, size_t n, int exif, unsigned tag, unsigned *type,
                    uint32_t *count, const uint8_t **val, int *le_out)
{
    if (!b || n < 8 || (memcmp(b, "II*\0", 4) && memcmp(b, "MM\0*", 4)))
        return 0;
    const int le = b[0] == 'I';
    *le_out = le;
    uint32_t ifd = rd32(b + 4, le);
    for (int level = 0; level <= exif; level++) {
        if (ifd > n - 2)
            return 0;
        const unsigned cnt = rd16(b + ifd, le);
        uint32_t next = 0;
        for (unsigned i = 0; i < cnt; i++) {
            const size_t p = ifd + 2 + (size_t)i * 12;
            if (p + 12 > n)
                return 0;
            const unsigned t = rd16(b + p, le), ty = rd16(b + p + 2, le);
            const uint32_t c = rd32(b + p + 4, le);
            if (level < exif && t == 0x8769)
                next = rd32(b + p + 8, le);
            if (level == exif && t == tag) {
                const size_t len = (size_t)c * tsize(ty);
                const size_t off = len <= 4 ? p + 8 : rd32(b + p + 8, le);
                if (off > n || len > n - off)
                    return 0;
                *type = ty, *count = c, *val = b + off;
                return 1;
            }
        }
        ifd = next;
        if (!ifd)
            return 0;
    }
    return 0;
}

static int has_string(const ic_metadata *m, int exif, unsigned tag, const char *want)
{
    unsigned ty;
    uint32_t c;
    const uint8_t *v;
    int le;
    return find_tag(m->exif, m->exif_size, exif, tag, &ty, &c, &v, &le) && ty == ASCII &&
           c == strlen(want) + 1 && memcmp(v, want, c) == 0;
}

/* A rational tag equal to num/den: any equivalent fraction when `exact`,
 * else within float precision (libtiff keeps EXIF rationals as float, and
 * writes 1/250 back as 8589935/2147483648). */
static int has_ratio(const ic_metadata *m, int exif, unsigned tag, uint32_t num, uint32_t den,
                     int exact)
{
    unsigned ty;
    uint32_t c;
    const uint8_t *v;
    int le;
    return find_tag(m->exif, m->exif_size, exif, tag, &ty, &c, &v, &le) && ty == RATIONAL &&
           c == 1 && rd32(v + 4, le) != 0 &&
           (exact ? (uint64_t)rd32(v, le) * den == (uint64_t)rd32(v + 4, le) * num
                  : fabs((double)rd32(v, le) / rd32(v + 4, le) / ((double)num / den) - 1) < 1e-6);
}

static int has_short(const ic_metadata *m, int exif, unsigned tag, unsigned want)
{
    unsigned ty;
    uint32_t c;
    const uint8_t *v;
    int le;
    return find_tag(m->exif, m->exif_size, exif, tag, &ty, &c, &v, &le) && ty == SHORT && c == 1 &&
           rd16(v, le) == want;
}

static int has_tag(const ic_metadata *m, int exif, unsigned tag)
{
    unsigned ty;
    uint32_t c;
    const uint8_t *v;
    int le;
    return find_tag(m->exif, m->exif_size, exif, tag, &ty, &c, &v, &le);
}

/* The camera's fields, all of them, in m; `what` names the case. */
static void expect_camera(const ic_metadata *m, unsigned orient, int maker_note, int exact,
                          const char *what)
{
    ICT_EXPECT(has_string(m, 0, 0x010F, MAKE) && has_string(m, 0, 0x0110, MODEL) &&
                   has_string(m, 0, 0x0132, DATETIME),
               "%s: Make/Model/DateTime (EXIF of %zu bytes)", what, m->exif_size);
    ICT_EXPECT(ic_metadata_orientation(m) == (int)orient && has_short(m, 0, 0x0112, orient),
               "%s: orientation %d, want %u", what, ic_metadata_orientation(m), orient);
    ICT_EXPECT(has_ratio(m, 0, 0x011A, 300, 1, 1) && has_short(m, 0, 0x0128, 2),
               "%s: XResolution/ResolutionUnit", what);
    ICT_EXPECT(has_ratio(m, 1, 0x829A, 1, 250, exact) && has_ratio(m, 1, 0x829D, 28, 10, exact),
               "%s: ExposureTime 1/250, FNumber 2.8", what);
    ICT_EXPECT(has_short(m, 1, 0x8827, 200) && has_string(m, 1, 0x9003, DATETIME_ORIGINAL),
               "%s: ISO, DateTimeOriginal", what);
    unsigned ty;
    uint32_t c;
    const uint8_t *v;
    int le;
    ICT_EXPECT(find_tag(m->exif, m->exif_size, 1, 0x9000, &ty, &c, &v, &le) && ty == UNDEF &&
                   c == 4 && !memcmp(v, "0230", 4),
               "%s: ExifVersion", what);
    ICT_EXPECT(has_tag(m, 1, 0x927C) == maker_note, "%s: maker note %s", what,
               maker_note ? "lost" : "carried through TIFF");
}

/* ---- the matrix -------------------------------------------------------------- */

static int same(const uint8_t *a, size_t na, const uint8_t *b, size_t nb)
{
    return na == nb && (na == 0 || (a && b && !memcmp(a, b, na)));
}

/* Pixel (x, y) of the hand-made TIFF. */
static int tiff_pixels_ok(const ic_image *img)
{
    if (img->channels != 3 || img->type != IC_U8)
        return 0;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++)
            for (int c = 0; c < 3; c++)
                if (ic_image_at(img, x, y, c)[0] != (uint8_t)((x * 7 + y * 13 + c * 50) & 255))
                    return 0;
    return 1;
}

static const char *const g_names[] = {"x.png", "x.jpg", "x.webp", "x.tif"};

/* Every input format x every output format, for EXIF in both byte orders. */
static void test_matrix(void)
{
    uint8_t icc[400];
    ict_fake_icc(icc, sizeof icc, "RGB ", 1);
    ic_image src;
    ICT_EXPECT(ic_image_create(&src, 33, 21, 3, IC_AOS) == IC_OK, "create");
    for (int y = 0; y < 21; y++)
        for (int x = 0; x < 33; x++)
            for (int c = 0; c < 3; c++)
                ic_image_at(&src, x, y, c)[0] = (uint8_t)((x * 7 + y * 13 + c * 50) & 255);
    const int tiff = ic_format_supported(IC_FMT_TIFF);
    if (!tiff)
        printf("skipped: TIFF inputs and outputs (TIFF not built in)\n");
    static blob exif, file;
    for (int le = 0; le <= 1; le++) {
        camera_exif(&exif, le, 6);
        /* Inputs: each format written by the library with the camera's block,
         * and (index 4) the TIFF made by hand here. */
        for (int in = 0; in < 5; in++) {
            const char *in_name = in < 4 ? g_names[in] : "hand-made.tif";
            if (!ic_format_supported(ic_format_from_path(in_name))) {
                printf("skipped: %s inputs (not built in)\n", in_name);
                continue;
            }
            uint8_t *data = NULL;
            size_t size = 0;
            if (in < 4) {
                const ic_metadata m = {icc, sizeof icc, exif.b, exif.n};
                const ic_save_options so = {.quality = 95, .metadata = &m};
                ICT_EXPECT(ic_image_encode(&src, in_name, &so, &data, &size) == IC_OK, "%s: %s",
                           in_name, ic_last_error());
            } else {
                camera_tiff(&file, le, 6, 33, 21, icc, sizeof icc);
                data = malloc(file.n);
                if (data)
                    memcpy(data, file.b, file.n);
                size = file.n;
            }
            ic_image img;
            ic_metadata m_in;
            const ic_load_options lo = {.metadata = &m_in};
            ic_status st = ic_image_decode(&img, data, size, &lo);
            char what[128];
            snprintf(what, sizeof what, "%s (%s EXIF)", in_name, le ? "II" : "MM");
            ICT_EXPECT(st == IC_OK && img.width == 33 && img.height == 21,
                       "%s: %s, %dx%d (orientation 6 must not rotate)", what, ic_last_error(),
                       img.width, img.height);
            free(data);
            if (st != IC_OK)
                continue;
            const int via_tiff = in >= 3;
            if (in == 4)
                ICT_EXPECT(tiff_pixels_ok(&img), "%s: pixels not as stored", what);
            ICT_EXPECT(same(m_in.icc, m_in.icc_size, icc, sizeof icc), "%s: ICC of %zu bytes", what,
                       m_in.icc_size);
            expect_camera(&m_in, 6, !via_tiff, in != 3, what);
            if (!via_tiff)
                ICT_EXPECT(same(m_in.exif, m_in.exif_size, exif.b, exif.n),
                           "%s: EXIF block not byte for byte", what);
            for (int out = 0; out < 4; out++) {
                if (!ic_format_supported(ic_format_from_path(g_names[out])))
                    continue;
                char w2[200];
                snprintf(w2, sizeof w2, "%s -> %s", what, g_names[out]);
                const ic_save_options so = {.quality = 95, .metadata = &m_in};
                uint8_t *enc = NULL;
                size_t en = 0;
                ic_image back;
                ic_metadata m_out;
                const ic_load_options lo2 = {.metadata = &m_out};
                st = ic_image_encode(&img, g_names[out], &so, &enc, &en);
                ICT_EXPECT(st == IC_OK, "%s: %s", w2, ic_last_error());
                st = st == IC_OK ? ic_image_decode(&back, enc, en, &lo2) : st;
                ICT_EXPECT(st == IC_OK && back.width == 33 && back.height == 21, "%s: %s", w2,
                           ic_last_error());
                if (st == IC_OK) {
                    ICT_EXPECT(same(m_out.icc, m_out.icc_size, icc, sizeof icc),
                               "%s: ICC of %zu bytes", w2, m_out.icc_size);
                    expect_camera(&m_out, 6, !via_tiff && out != 3, in != 3 && out != 3, w2);
                    if (!via_tiff && out != 3)
                        ICT_EXPECT(same(m_out.exif, m_out.exif_size, exif.b, exif.n),
                                   "%s: EXIF block not byte for byte", w2);
                    if (out == 3) {
                        /* The TIFF's own IFD0 holds the orientation, and the
                         * pixels are those of the input. */
                        unsigned ty;
                        uint32_t c;
                        const uint8_t *v;
                        int fle;
                        ICT_EXPECT(find_tag(enc, en, 0, 0x0112, &ty, &c, &v, &fle) && ty == SHORT &&
                                       rd16(v, fle) == 6,
                                   "%s: TIFF Orientation tag", w2);
                        ICT_EXPECT(find_tag(enc, en, 1, 0x9003, &ty, &c, &v, &fle),
                                   "%s: the TIFF has no EXIF directory", w2);
                        int same_px = 1;
                        for (int y = 0; y < 21; y++)
                            same_px &= !memcmp(ic_image_at(&back, 0, y, 0),
                                               ic_image_at(&img, 0, y, 0), 33 * 3);
                        ICT_EXPECT(same_px, "%s: pixels changed (rotated or flipped?)", w2);
                    }
                    ic_image_free(&back);
                }
                ic_metadata_free(&m_out);
                free(enc);
            }
            ic_image_free(&img);
            ic_metadata_free(&m_in);
        }
    }
    ic_image_free(&src);
}

/* ---- TIFF specifics ------------------------------------------------------------ */

/* A TIFF with orientation 3 and no EXIF otherwise, 16-bit: the rows as stored
 * (no flip), and the orientation in the block; a TIFF with nothing of EXIF
 * gives no block. */
static void test_tiff_orientation_only(void)
{
    ic_image src, got;
    ICT_EXPECT(ic_image_create_type(&src, 9, 5, 3, IC_AOS, IC_U16) == IC_OK, "create");
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 9; x++)
            for (int c = 0; c < 3; c++)
                ((uint16_t *)(void *)ic_image_at(&src, x, y, c))[0] =
                    (uint16_t)(x * 4001 + y * 977 + c * 13);
    static blob o;
    header(&o, 1);
    const ent e[] = {{0x0112, SHORT, 1, {3}, NULL}};
    put_ifd(&o, e, 1, -1, NULL);
    const ic_metadata m = {NULL, 0, o.b, o.n};
    const ic_save_options so = {.metadata = &m};
    uint8_t *enc = NULL;
    size_t en = 0;
    ICT_EXPECT(ic_image_encode(&src, "o.tif", &so, &enc, &en) == IC_OK, "%s", ic_last_error());
    ic_metadata back;
    const ic_load_options lo = {.metadata = &back};
    ICT_EXPECT(ic_image_decode(&got, enc, en, &lo) == IC_OK, "%s", ic_last_error());
    ICT_EXPECT(got.type == IC_U16 && got.width == 9 && ic_metadata_orientation(&back) == 3 &&
                   !has_tag(&back, 1, 0x9003),
               "orientation-only TIFF: type %d, orientation %d", (int)got.type,
               ic_metadata_orientation(&back));
    int same_px = got.data != NULL;
    for (int y = 0; same_px && y < 5; y++)
        same_px = !memcmp(ic_image_at(&got, 0, y, 0), ic_image_at(&src, 0, y, 0), 9 * 3 * 2);
    ICT_EXPECT(same_px, "orientation 3 TIFF: rows not as stored");
    ic_image_free(&got);
    ic_metadata_free(&back);
    free(enc);
    /* Orientation 1 and nothing else: no block made up. */
    ICT_EXPECT(ic_image_encode(&src, "o.tif", NULL, &enc, &en) == IC_OK, "%s", ic_last_error());
    ICT_EXPECT(ic_image_decode(&got, enc, en, &lo) == IC_OK && back.exif == NULL,
               "plain TIFF: an EXIF block of %zu bytes from nowhere", back.exif_size);
    ic_image_free(&got);
    ic_metadata_free(&back);
    free(enc);
    ic_image_free(&src);
}

/* Loads b; returns the status, with the metadata in *m and pixels checked. */
static ic_status load_hand_made(const blob *b, ic_metadata *m, const char *what)
{
    ic_image img;
    const ic_load_options lo = {.metadata = m};
    const ic_status st = ic_image_decode(&img, b->b, b->n, &lo);
    if (st == IC_OK)
        ICT_EXPECT(tiff_pixels_ok(&img), "%s: pixels", what);
    else
        ICT_EXPECT(img.data == NULL && m->exif == NULL && m->icc == NULL &&
                       !strchr(ic_last_error(), '\n') && ic_last_error()[0],
                   "%s: a failed load must leave nothing and say one line", what);
    ic_image_free(&img);
    return st;
}

/* Corrupt EXIF directories: the image loads and keeps its ICC profile; what
 * cannot be read is left out, what can is kept. */
static void test_tiff_corrupt_exif(void)
{
    uint8_t icc[200];
    ict_fake_icc(icc, sizeof icc, "RGB ", 1);
    static blob b;
    for (int le = 0; le <= 1; le++) {
        ic_metadata m;
        /* The EXIF directory past the end of the file. */
        size_t exif_at = camera_tiff(&b, le, 6, 8, 4, icc, sizeof icc);
        ICT_EXPECT(b.n < 8000, "fixture size");
        const size_t ifd0 = rd32(b.b + 4, le), n0 = rd16(b.b + ifd0, le);
        size_t slot = 0;
        for (size_t i = 0; i < n0; i++)
            if (rd16(b.b + ifd0 + 2 + i * 12, le) == 0x8769)
                slot = ifd0 + 2 + i * 12 + 8;
        put32(&b, slot, 0x7FFFFFF0u);
        ICT_EXPECT(load_hand_made(&b, &m, "EXIF IFD past the end") == IC_OK &&
                       has_string(&m, 0, 0x010F, MAKE) && !has_tag(&m, 1, 0x9003) &&
                       same(m.icc, m.icc_size, icc, sizeof icc),
                   "EXIF IFD past the end: %s", ic_last_error());
        ic_metadata_free(&m);
        /* Its entry count runs past the end of the file. */
        exif_at = camera_tiff(&b, le, 6, 8, 4, icc, sizeof icc);
        put16(&b, exif_at, 0xFFFF);
        ICT_EXPECT(load_hand_made(&b, &m, "EXIF count 65535") == IC_OK &&
                       has_string(&m, 0, 0x0110, MODEL) && !has_tag(&m, 1, 0x829A),
                   "EXIF count 65535: %s", ic_last_error());
        ic_metadata_free(&m);
        /* One entry claims 2^32-1 values, another's value lies past the end,
         * a third has a type unknown to TIFF 6: those are left out. */
        exif_at = camera_tiff(&b, le, 6, 8, 4, icc, sizeof icc);
        put32(&b, exif_at + 2 + 0 * 12 + 4, 0xFFFFFFFFu); /* ExposureTime */
        put32(&b, exif_at + 2 + 4 * 12 + 8, 0xFFFFFF00u); /* DateTimeOriginal */
        put16(&b, exif_at + 2 + 1 * 12 + 2, 99);          /* FNumber */
        ICT_EXPECT(load_hand_made(&b, &m, "bad entries") == IC_OK && !has_tag(&m, 1, 0x829A) &&
                       !has_tag(&m, 1, 0x9003) && !has_tag(&m, 1, 0x829D) &&
                       has_short(&m, 1, 0x8827, 200) && ic_metadata_orientation(&m) == 6,
                   "bad entries: %s", ic_last_error());
        /* What was kept goes into a TIFF and comes back. */
        if (m.exif) {
            uint8_t *enc = NULL;
            size_t en = 0;
            ic_image img;
            const ic_save_options so = {.metadata = &m};
            ICT_EXPECT(ic_image_decode(&img, b.b, b.n, NULL) == IC_OK, "reload");
            ICT_EXPECT(ic_image_encode(&img, "k.tif", &so, &enc, &en) == IC_OK, "%s",
                       ic_last_error());
            ic_metadata m2;
            const ic_load_options lo = {.metadata = &m2};
            ic_image img2;
            ICT_EXPECT(ic_image_decode(&img2, enc, en, &lo) == IC_OK &&
                           has_short(&m2, 1, 0x8827, 200) && has_string(&m2, 0, 0x010F, MAKE),
                       "kept tags through TIFF: %s", ic_last_error());
            ic_image_free(&img2);
            ic_metadata_free(&m2);
            ic_image_free(&img);
            free(enc);
        }
        ic_metadata_free(&m);
        /* The EXIF pointer at IFD0 itself (a loop) and at the header. */
        camera_tiff(&b, le, 6, 8, 4, icc, sizeof icc);
        put32(&b, slot, 8);
        ICT_EXPECT(load_hand_made(&b, &m, "EXIF IFD = IFD0") == IC_OK &&
                       has_string(&m, 0, 0x010F, MAKE),
                   "EXIF IFD = IFD0: %s", ic_last_error());
        ic_metadata_free(&m);
        /* Cut anywhere: a clean load or a clean error, never more. */
        camera_tiff(&b, le, 6, 8, 4, icc, sizeof icc);
        int ok = 0, failed = 0;
        for (size_t cut = 0; cut < b.n; cut++) {
            blob c = b;
            c.n = cut;
            const ic_status st = load_hand_made(&c, &m, "cut");
            ok += st == IC_OK;
            failed += st != IC_OK;
            ic_metadata_free(&m);
        }
        printf("cut TIFFs (%s): %d loaded, %d refused\n", le ? "II" : "MM", ok, failed);
    }
}

int main(void)
{
    test_matrix();
    if (ic_format_supported(IC_FMT_TIFF)) {
        test_tiff_orientation_only();
        test_tiff_corrupt_exif();
    } else {
        printf("skipped: TIFF EXIF cases (TIFF not built in)\n");
    }
    printf("%d checks, %d failed\n", ict_checks, ict_failed);
    return ict_failed ? 1 : 0;
}
