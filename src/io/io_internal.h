/*
 * io_internal.h - what the image file readers and writers of src/io/ share.
 *
 * io.c opens files, detects the format and owns the atomic save; the format
 * files (pnm.c, png.c, jpeg.c, tiff.c, webp.c) only turn a stream into an interleaved (AoS)
 * ic_image with the channels as stored, and an AoS ic_image into a stream.
 * This header is private to src/io/: it knows files and pixels, never
 * convolution or backends (STYLE "Layers").
 */
#ifndef IC_IO_INTERNAL_H
#define IC_IO_INTERNAL_H

#include <stdio.h>

#include "imgconv.h"

/* Writes a one-line printf-style message into err (NULL-safe, truncating). */
void ic_io_err(char *err, size_t errlen, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Checks decoded dimensions before anything is allocated: zero sizes are
 * IC_ERR_FORMAT, a side over IC_MAX_DIM or width*height over max_pixels is
 * IC_ERR_TOO_LARGE with the message "image WxH exceeds the pixel limit N
 * (--max-pixels)". Takes uint64_t so that header fields of any width can be
 * checked before they are narrowed to int. */
ic_status ic_io_check_dims(uint64_t width, uint64_t height, uint64_t max_pixels, char *err,
                           size_t errlen);

/* Converts `width` interleaved pixels of src_ch channels into dst_ch channels
 * (1..4 each; 2 and 4 have alpha last). Grey -> colour replicates the grey;
 * colour -> grey uses the Rec.601 luma Y = (299 R + 587 G + 114 B + 500) / 1000;
 * a missing alpha becomes 255 (opaque); a dropped alpha is discarded.
 * src and dst must not overlap. This is seed 004's channel_force. */
void ic_io_convert_row(uint8_t *dst, int dst_ch, const uint8_t *src, int src_ch, int width);

/* Readers. Each reads one image from f (positioned at the start of the file)
 * into *img, created by ic_image_create as IC_AOS with the channel count the
 * file stores (after expanding palettes and bit depths). On error *img is
 * zeroed and err holds one line. max_pixels is the effective limit (never 0). */
ic_status ic_pnm_read(FILE *f, ic_image *img, uint64_t max_pixels, char *err, size_t errlen);
ic_status ic_png_read(FILE *f, ic_image *img, uint64_t max_pixels, char *err, size_t errlen);
ic_status ic_jpeg_read(FILE *f, ic_image *img, uint64_t max_pixels, char *err, size_t errlen);
ic_status ic_tiff_read(FILE *f, ic_image *img, uint64_t max_pixels, char *err, size_t errlen);
ic_status ic_webp_read(FILE *f, ic_image *img, uint64_t max_pixels, char *err, size_t errlen);

/* Writers. img is IC_AOS (any pitch) with 1..4 channels; out_ch is the channel
 * count to store (pnm: 1 or 3, jpeg: 1 or 3, png and tiff: 1..4, webp: 3 or 4),
 * converted row by row
 * with ic_io_convert_row when it differs from img->channels. They write to f
 * and do not flush or close it; io.c checks the stream afterwards. */
ic_status ic_pnm_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen);
ic_status ic_png_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen);
ic_status ic_jpeg_write(FILE *f, const ic_image *img, int out_ch, int quality, char *err,
                        size_t errlen);
ic_status ic_tiff_write(FILE *f, const ic_image *img, int out_ch, char *err, size_t errlen);
ic_status ic_webp_write(FILE *f, const ic_image *img, int out_ch, int quality, int lossless,
                        char *err, size_t errlen);

#endif /* IC_IO_INTERNAL_H */
