/*
 * test_jpeg_meta.c - the EXIF/ICC segments the GPU codec adds to nvJPEG's
 * output (src/io/jpeg_meta.c), checked on the CPU: inserted into a JPEG the
 * CPU writer made without metadata, the stream equals byte for byte the one
 * the CPU writer makes with it (libjpeg-turbo's own APP1 and
 * jpeg_write_icc_profile chunks), an ICC profile over 64 KB is split into
 * 65519-byte chunks numbered 1..n, libjpeg-turbo decodes the result to the
 * same pixels and gives the same blocks back, and ic_jpeg_read_metadata
 * (the GPU decode path's header read) agrees. What is left out (a profile of
 * the wrong colour space, EXIF over a segment) is left out by both.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"
#include "testutil.h"

static int g_checks, g_failed;

#define CHECK(cond, ...)                                                                           \
    do {                                                                                           \
        g_checks++;                                                                                \
        if (!(cond)) {                                                                             \
            g_failed++;                                                                            \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

static int same(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

static size_t first_diff(const uint8_t *a, size_t an, const uint8_t *b, size_t bn)
{
    size_t i = 0;
    while (i < an && i < bn && a[i] == b[i])
        i++;
    return i;
}

/* The APP2 ICC chunks of a JPEG: count them and check their numbering. */
static int icc_chunks(const uint8_t *d, size_t n, size_t *first_len)
{
    int chunks = 0;
    size_t i = 2;
    while (i + 4 <= n && d[i] == 0xFF && d[i + 1] != 0xDA) {
        const size_t len = (size_t)d[i + 2] << 8 | d[i + 3];
        if (d[i + 1] == 0xE2 && len > 16 && memcmp(d + i + 4, "ICC_PROFILE", 12) == 0) {
            if (d[i + 4 + 12] != chunks + 1)
                return -1;
            if (chunks == 0)
                *first_len = len - 2 - 14;
            chunks++;
        }
        i += 2 + len;
    }
    return chunks;
}

static void one_case(const ic_image *img, const ic_metadata *m, const char *what)
{
    uint8_t *plain = NULL, *ref = NULL;
    size_t plain_n = 0, ref_n = 0;
    ic_save_options so = {.quality = 90};
    CHECK(ic_image_encode(img, "x.jpg", &so, &plain, &plain_n) == IC_OK, "%s", ic_last_error());
    so.metadata = m;
    CHECK(ic_image_encode(img, "x.jpg", &so, &ref, &ref_n) == IC_OK, "%s", ic_last_error());

    size_t cap = plain_n, n = plain_n;
    const size_t expect_add = ic_jpeg_metadata_size(m, img->channels);
    CHECK(ic_jpeg_add_metadata(&plain, &cap, &n, m, img->channels) == IC_OK, "%s: %s", what,
          ic_last_error());
    CHECK(n == plain_n + expect_add, "%s: %zu bytes added, %zu announced", what, n - plain_n,
          expect_add);
    CHECK(same(plain, n, ref, ref_n), "%s: %zu bytes, the CPU writer's %zu (first difference %zu)",
          what, n, ref_n, first_diff(plain, n, ref, ref_n));

    /* libjpeg-turbo decodes it and gives the blocks back. */
    ic_metadata back;
    ic_load_options lo = {.metadata = &back};
    ic_image a, b;
    CHECK(ic_image_decode(&a, plain, n, &lo) == IC_OK, "%s: %s", what, ic_last_error());
    CHECK(ic_image_decode(&b, ref, ref_n, NULL) == IC_OK, "%s: %s", what, ic_last_error());
    int px = a.width == b.width && a.height == b.height && a.channels == b.channels;
    for (int y = 0; px && y < a.height; y++)
        px = memcmp(a.data + (size_t)y * a.pitch, b.data + (size_t)y * b.pitch,
                    ic_image_row_bytes(&a)) == 0;
    CHECK(px, "%s: pixels differ from the CPU writer's file", what);
    const int icc_in =
        ic_jpeg_metadata_size(&(ic_metadata){m->icc, m->icc_size, NULL, 0}, img->channels) != 0;
    const int exif_in =
        ic_jpeg_metadata_size(&(ic_metadata){NULL, 0, m->exif, m->exif_size}, img->channels) != 0;
    CHECK(icc_in ? same(back.icc, back.icc_size, m->icc, m->icc_size) : back.icc == NULL,
          "%s: ICC back %zu bytes (carried: %d)", what, back.icc_size, icc_in);
    CHECK(exif_in ? same(back.exif, back.exif_size, m->exif, m->exif_size) : back.exif == NULL,
          "%s: EXIF back %zu bytes (carried: %d)", what, back.exif_size, exif_in);

    /* The GPU decode path's header read finds the same. */
    ic_metadata hdr;
    CHECK(ic_jpeg_read_metadata(plain, n, &hdr) == IC_OK, "%s: %s", what, ic_last_error());
    CHECK(same(hdr.icc, hdr.icc_size, back.icc, back.icc_size) &&
              same(hdr.exif, hdr.exif_size, back.exif, back.exif_size),
          "%s: ic_jpeg_read_metadata differs from the decoder", what);
    if (icc_in && m->icc_size > 65519) {
        size_t first = 0;
        const int chunks = icc_chunks(plain, n, &first);
        CHECK(chunks == (int)((m->icc_size + 65518) / 65519) && first == 65519,
              "%s: %d ICC chunks, the first %zu bytes", what, chunks, first);
    }
    ic_metadata_free(&hdr);
    ic_metadata_free(&back);
    ic_image_free(&a);
    ic_image_free(&b);
    free(plain);
    free(ref);
}

int main(void)
{
    if (!ic_format_supported(IC_FMT_JPEG)) {
        printf("skipped: built without JPEG\n");
        return 77;
    }
    static uint8_t icc_big[150000], icc_small[500], icc_grey[300], exif[4000], exif_big[70000];
    ict_fake_icc(icc_big, sizeof icc_big, "RGB ", 1);
    ict_fake_icc(icc_small, sizeof icc_small, "RGB ", 1);
    ict_fake_icc(icc_grey, sizeof icc_grey, "GRAY", 1);
    ict_rng r;
    ict_rng_seed(&r, 15);
    for (size_t i = 0; i < sizeof exif_big; i++)
        exif_big[i] = (uint8_t)ict_next(&r);
    memcpy(exif, exif_big, sizeof exif);
    memcpy(exif, "II*\0", 4);

    ic_image img;
    CHECK(ic_image_create(&img, 37, 21, 3, IC_AOS) == IC_OK, "create");
    for (int y = 0; y < img.height; y++)
        for (size_t x = 0; x < ic_image_row_bytes(&img); x++)
            img.data[(size_t)y * img.pitch + x] = (uint8_t)(x * 5 + (size_t)y * 9);

    const struct {
        ic_metadata m;
        const char *what;
    } cases[] = {
        {{icc_small, sizeof icc_small, exif, sizeof exif}, "small ICC and EXIF"},
        {{icc_big, sizeof icc_big, exif, sizeof exif}, "150000-byte ICC (3 chunks) and EXIF"},
        {{icc_big, sizeof icc_big, NULL, 0}, "ICC only"},
        {{NULL, 0, exif, sizeof exif}, "EXIF only"},
        {{icc_grey, sizeof icc_grey, exif, sizeof exif}, "a grey profile on RGB: left out"},
        {{icc_small, sizeof icc_small, exif_big, sizeof exif_big}, "EXIF over 65527: left out"},
        {{NULL, 0, NULL, 0}, "nothing"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++)
        one_case(&img, &cases[i].m, cases[i].what);

    /* Not a JPEG: refused, nothing changed. */
    uint8_t *junk = malloc(16);
    memset(junk, 0x55, 16);
    size_t cap = 16, n = 16;
    const ic_metadata m = {icc_small, sizeof icc_small, exif, sizeof exif};
    CHECK(ic_jpeg_add_metadata(&junk, &cap, &n, &m, 3) == IC_ERR_INTERNAL && n == 16, "no SOI: %s",
          ic_last_error());
    free(junk);
    ic_image_free(&img);
    printf("test_jpeg_meta: %d checks, %d failed\n", g_checks, g_failed);
    return g_failed ? 1 : 0;
}
