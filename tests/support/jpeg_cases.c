/*
 * jpeg_cases.c - test JPEGs made with libjpeg: photograph-like pixels, the
 * encoder settings the tests vary, and the bad files made from a good one
 * (cut, garbage in the entropy-coded data, a broken header). Shared by
 * tests/gpu/test_gpu_jpeg.c (the GPU codec against the CPU codec) and
 * tests/internal/test_jpeg_check.c (the entropy check against the CPU decoder), so
 * that both see the same cases. Built with libjpeg only (IC_TEST_HAVE_JPEG).
 */
#include "jpeg_cases.h"

#ifdef IC_TEST_HAVE_JPEG

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jpeglib.h>

/* Smooth shading (a few broad blobs per channel), hard-edged shapes of other
 * colours and fine noise: what a camera JPEG holds, so that the codecs meet
 * both flat areas and sharp colour edges. */
void ictj_photo_fill(ic_image *img, uint64_t seed)
{
    ict_rng r;
    ict_rng_seed(&r, seed);
    const int w = img->width, h = img->height, ch = img->channels;
    double bx[4][3], by[4][3], bs[4][3], ba[4][3];
    for (int c = 0; c < 3; c++)
        for (int b = 0; b < 4; b++) {
            bx[b][c] = ict_uniform(&r) * w;
            by[b][c] = ict_uniform(&r) * h;
            bs[b][c] = (0.15 + 0.5 * ict_uniform(&r)) * (w > h ? w : h);
            ba[b][c] = 60 + 120 * ict_uniform(&r);
        }
    int rx0 = ict_range(&r, 0, w / 2), ry0 = ict_range(&r, 0, h / 2);
    int rx1 = rx0 + ict_range(&r, 1, w / 2 + 1), ry1 = ry0 + ict_range(&r, 1, h / 2 + 1);
    const double cx = ict_uniform(&r) * w, cy = ict_uniform(&r) * h;
    const double rad = (0.1 + 0.2 * ict_uniform(&r)) * (w < h ? w : h);
    const uint8_t rect[3] = {(uint8_t)ict_below(&r, 256), (uint8_t)ict_below(&r, 256),
                             (uint8_t)ict_below(&r, 256)};
    const uint8_t disc[3] = {(uint8_t)ict_below(&r, 256), (uint8_t)ict_below(&r, 256),
                             (uint8_t)ict_below(&r, 256)};
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++) {
            const int in_rect = x >= rx0 && x < rx1 && y >= ry0 && y < ry1;
            const int in_disc = (x - cx) * (x - cx) + (y - cy) * (y - cy) < rad * rad;
            for (int c = 0; c < ch && c < 3; c++) {
                double v = 20;
                for (int b = 0; b < 4; b++) {
                    const double dx = (x - bx[b][c]) / bs[b][c], dy = (y - by[b][c]) / bs[b][c];
                    v += ba[b][c] * exp(-(dx * dx + dy * dy));
                }
                if (in_rect)
                    v = 0.3 * v + 0.7 * rect[c];
                if (in_disc)
                    v = disc[c];
                v += (double)ict_range(&r, -6, 6); /* sensor noise */
                *ic_image_at(img, x, y, c) = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
            }
        }
}

/* ---- writing test JPEGs with libjpeg ------------------------------------------ */

int ictj_write_jpeg(const ic_image *img, const ictj_opts *o, unsigned char **out, unsigned long *n)
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
    ci.restart_in_rows = o->restart;
    jpeg_start_compress(&ci, TRUE);
    while (ci.next_scanline < ci.image_height) {
        JSAMPROW row = img->data + (size_t)ci.next_scanline * img->pitch;
        (void)jpeg_write_scanlines(&ci, &row, 1);
    }
    jpeg_finish_compress(&ci);
    jpeg_destroy_compress(&ci);
    return *out && *n > 0;
}

void ictj_bad_cases(const unsigned char *jpg, size_t n, uint64_t seed, ictj_case_fn fn, void *ctx)
{
    unsigned char *b = malloc(n);
    if (!b)
        return;
    const double cuts[] = {0.05, 0.3, 0.6, 0.95};
    for (size_t i = 0; i < sizeof cuts / sizeof *cuts; i++) {
        char what[64];
        snprintf(what, sizeof what, "cut at %.0f%%", 100 * cuts[i]);
        fn(ctx, what, jpg, (size_t)(cuts[i] * (double)n));
    }
    fn(ctx, "cut before EOI", jpg, n - 2);
    /* Garbage inside the entropy-coded data (the last third of the file). */
    ict_rng r;
    ict_rng_seed(&r, seed ^ 0x5eedull);
    for (int k = 0; k < 4; k++) {
        memcpy(b, jpg, n);
        const size_t at = n * 2 / 3 + ict_below(&r, (uint32_t)(n / 4));
        for (size_t j = at; j < at + 48 && j + 2 < n; j++)
            b[j] = (uint8_t)ict_below(&r, 256);
        char what[64];
        snprintf(what, sizeof what, "garbage at byte %zu", at);
        fn(ctx, what, b, n);
    }
    /* A zero width in SOF0. */
    memcpy(b, jpg, n);
    for (size_t j = 2; j + 9 < n; j++)
        if (b[j] == 0xFF && b[j + 1] == 0xC0) {
            b[j + 7] = 0;
            b[j + 8] = 0;
            break;
        }
    fn(ctx, "zero width", b, n);
    free(b);
}

#endif /* IC_TEST_HAVE_JPEG */
