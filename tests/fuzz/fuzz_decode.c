/*
 * fuzz_decode.c - libFuzzer target for the image decoders, through the public
 * memory decoder ic_image_decode (format from the magic bytes, as for files).
 *
 * One source, one target per format (tests/fuzz/CMakeLists.txt builds
 * fuzz_decode_png, fuzz_decode_jpeg, fuzz_decode_pnm, ... from the list
 * IC_FUZZ_DECODERS, each with its own seed corpus corpus/decode_FMT and
 * dictionary FMT.dict): the targets differ only in what they start from, so a
 * new format is one word in that list and a few seed files.
 *
 * Limits are lowered so that an input claiming a huge image is refused by the
 * limit checks (which are part of what is tested) instead of exhausting the
 * fuzzer's memory. The ICC profile and EXIF block are asked for (and
 * dropped), so that their readers run on every input. A decoded image is checked for consistency and decoded once
 * more with channel forcing and the planar layout, which must agree.
 *
 * Input that starts like a PNG also goes through the PNG reader's two paths
 * (ic_png_read_path, src/io/png.c): libpng alone, and the default one whose
 * fast path (png_inflate.c) takes non-interlaced 8- and 16-bit files and
 * hands back to libpng whatever it refuses. They must agree on the status,
 * the message, the pixels and the metadata; and the fast path alone may
 * only take what libpng takes, with the same result. The default path on
 * three threads, which inflates the strips an icST chunk describes apart
 * (png_inflate_strips.c; seeds strips-*.png), must agree with libpng too.
 *
 * Input that starts like a JPEG also goes through the entropy check the GPU
 * codec runs beside nvJPEG (ic_jpeg_check, src/io/jpeg.c), which must agree
 * with the decoder: it passes what the decoder takes, and what it refuses as
 * corrupt the decoder refuses too, with the same status and one-line message
 * (a file whose colour conversion fails is the one it may pass and the
 * decoder refuse: the check converts no colours). Its quick proof, the walk
 * of the Huffman codes (ic_jpeg_scan_clean, src/io/jpeg_scan.c), may prove
 * clean only what libjpeg-turbo's own check (ic_jpeg_check_decode) passes.
 *
 * Such input is also decoded on three threads with parts as small as one
 * MCU row (ic_jpeg_read with lim.threads, src/io/jpeg_restart.c), which
 * must give exactly the one-thread decode's status, message and pixels.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "io/io_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The JPEG decoder in parts against ic_image_decode's verdict st and
 * image *one (decoded on one thread). */
static void jpeg_in_parts(const uint8_t *data, size_t size, const ic_load_options *lo, ic_status st,
                          const ic_image *one)
{
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f)
        return;
    int parts = 0;
    const ic_io_limits lim = {.max_pixels = lo->max_pixels,
                              .max_memory = lo->max_memory,
                              .threads = 3,
                              .bytes = data,
                              .nbytes = size,
                              .jpeg_min_pixels = 1,
                              .jpeg_parts = &parts};
    char err[IC_IO_ERRLEN] = "";
    ic_image img;
    const ic_status ps = ic_jpeg_read(f, &img, &lim, NULL, err, sizeof err);
    fclose(f);
    if (ps != st || (st != IC_OK && strcmp(err, ic_last_error()) != 0))
        abort(); /* another verdict than the one-thread decode's */
    if (st == IC_OK) {
        if (img.width != one->width || img.height != one->height || img.channels != one->channels)
            abort();
        for (int y = 0; y < img.height; y++)
            if (memcmp(img.data + (size_t)y * img.pitch, one->data + (size_t)y * one->pitch,
                       (size_t)img.width * (size_t)img.channels) != 0)
                abort(); /* other pixels */
        ic_image_free(&img);
    }
}

typedef struct png_result {
    ic_status st;
    char err[IC_IO_ERRLEN];
    ic_image img;
    ic_metadata meta;
} png_result;

static void png_read(const uint8_t *data, size_t size, ic_png_path path, int threads, png_result *r)
{
    memset(r, 0, sizeof *r);
    FILE *f = fmemopen((void *)(uintptr_t)data, size, "rb");
    if (!f)
        abort();
    const ic_io_limits lim = {
        .max_pixels = (uint64_t)1 << 22, .max_memory = (uint64_t)64 << 20, .threads = threads};
    r->st = ic_png_read_path(f, &r->img, &lim, &r->meta, path, r->err, sizeof r->err);
    fclose(f);
}

static int same_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    return an == bn && (an == 0 || memcmp(a, b, an) == 0);
}

/* 1 when a and b are the same decode (pixels compared row by row). */
static int png_same(const png_result *a, const png_result *b)
{
    if (a->st != b->st || strcmp(a->err, b->err) != 0)
        return 0;
    if (a->st != IC_OK)
        return 1;
    const ic_image *x = &a->img, *y = &b->img;
    if (x->width != y->width || x->height != y->height || x->channels != y->channels ||
        x->type != y->type)
        return 0;
    const size_t row = ic_image_row_bytes(x);
    for (int i = 0; i < x->height; i++)
        if (memcmp(x->data + (size_t)i * x->pitch, y->data + (size_t)i * y->pitch, row) != 0)
            return 0;
    return same_bytes(a->meta.icc, a->meta.icc_size, b->meta.icc, b->meta.icc_size) &&
           same_bytes(a->meta.exif, a->meta.exif_size, b->meta.exif, b->meta.exif_size);
}

static void png_free_result(png_result *r)
{
    ic_image_free(&r->img);
    ic_metadata_free(&r->meta);
}

static void png_paths(const uint8_t *data, size_t size)
{
    png_result lib, def, fast, three;
    png_read(data, size, IC_PNG_PATH_LIBPNG, 1, &lib);
    png_read(data, size, IC_PNG_PATH_AUTO, 1, &def);
    png_read(data, size, IC_PNG_PATH_FAST, 1, &fast);
    png_read(data, size, IC_PNG_PATH_AUTO, 3, &three);
    if (!png_same(&def, &lib))
        abort(); /* the default path differs from libpng's */
    if (!png_same(&three, &lib))
        abort(); /* strips on several threads (an icST chunk) differ from libpng */
    if (fast.st == IC_OK && !png_same(&fast, &lib))
        abort(); /* the fast path took a file libpng refuses, or decoded it otherwise */
    if (fast.st != IC_OK && fast.st != IC_ERR_UNSUPPORTED)
        abort();
    png_free_result(&lib);
    png_free_result(&def);
    png_free_result(&fast);
    png_free_result(&three);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = (uint64_t)1 << 22;
    lo.max_memory = (uint64_t)64 << 20;
    ic_metadata meta; /* the ICC and EXIF readers (TIFF's EXIF gathering) run too */
    lo.metadata = &meta;
    ic_image img;
    ic_status st = ic_image_decode(&img, data, size, &lo);
    lo.metadata = NULL;
    if (meta.exif && meta.exif_size == 0)
        abort();
    (void)ic_metadata_orientation(&meta);
    ic_metadata_free(&meta);
    if (size >= 8 && memcmp(data, "\x89PNG\r\n\x1a\n", 8) == 0)
        png_paths(data, size);
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF) {
        const ic_io_limits lim = {.max_pixels = lo.max_pixels, .max_memory = lo.max_memory};
        char err[IC_IO_ERRLEN] = "";
        const ic_status ks = ic_jpeg_check(data, size, &lim, err, sizeof err);
        if (st == IC_OK && ks != IC_OK)
            abort(); /* refuses what the decoder takes */
        if (ks != IC_OK && (err[0] == '\0' || strchr(err, '\n')))
            abort();
        if (ks == IC_ERR_FORMAT && (st != ks || strcmp(err, ic_last_error()) != 0) &&
            !strstr(ic_last_error(), "color conversion"))
            abort(); /* the decoder's verdict on a corrupt file, or another */
        /* The walk proves clean only what libjpeg's check passes. */
        if (ic_jpeg_scan_clean(data, size, &lim) &&
            ic_jpeg_check_decode(data, size, &lim, err, sizeof err) != IC_OK)
            abort();
    }
    if (size >= 3 && data[0] == 0xFF && data[1] == 0xD8 && data[2] == 0xFF)
        jpeg_in_parts(data, size, &lo, st, &img);
    if (st != IC_OK) {
        /* Failures leave a zeroed image and a one-line message. */
        if (img.data || img.width || ic_last_error()[0] == '\0' || strchr(ic_last_error(), '\n'))
            abort();
        return 0;
    }
    if (img.width < 1 || img.height < 1 || img.channels < 1 || img.channels > 4 ||
        img.pitch < ic_image_row_bytes(&img) ||
        (uint64_t)img.width * (uint64_t)img.height > lo.max_pixels)
        abort();
    /* Touch every row so that ASan sees any short allocation. */
    unsigned sum = 0;
    for (int y = 0; y < img.height; y++)
        sum += ic_image_at(&img, img.width - 1, y, img.channels - 1)[0];
    (void)sum;

    if ((uint64_t)img.width * (uint64_t)img.height <= 4096) {
        ic_load_options lo2 = lo;
        lo2.channels = 4;
        lo2.layout = IC_SOA;
        ic_image conv;
        if (ic_image_decode(&conv, data, size, &lo2) != IC_OK)
            abort(); /* the same bytes decoded a moment ago */
        if (conv.width != img.width || conv.height != img.height || conv.channels != 4)
            abort();
        ic_image_free(&conv);
    }
    ic_image_free(&img);
    return 0;
}
