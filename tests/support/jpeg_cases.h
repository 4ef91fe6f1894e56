/*
 * jpeg_cases.h - test JPEGs made with libjpeg (jpeg_cases.c): photograph-like
 * pixels, encoder settings and the bad files made from a good one. Available
 * when the tests are built with libjpeg (IC_TEST_HAVE_JPEG).
 */
#ifndef ICT_JPEG_CASES_H
#define ICT_JPEG_CASES_H

#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

/* Fills an AoS image (1..4 channels; the first three get pixels) with smooth
 * shading, hard-edged shapes and sensor-like noise, reproducibly from seed. */
void ictj_photo_fill(ic_image *img, uint64_t seed);

typedef struct ictj_opts {
    int hs, vs; /* luma sampling factors: 1x1 = 4:4:4, 2x1 = 4:2:2, 2x2 = 4:2:0 */
    int progressive;
    int restart; /* restart interval in MCU rows (0: none) */
    int quality;
} ictj_opts;

/* Encodes an AoS image (1 or 3 channels) into *out (malloc'd by libjpeg's
 * memory destination; free() it). 1 on success. */
int ictj_write_jpeg(const ic_image *img, const ictj_opts *o, unsigned char **out, unsigned long *n);

/* Calls fn once for each bad file made from the good JPEG jpg (n bytes): cut
 * at 5, 30, 60 and 95% and before EOI, 48 random bytes written at four
 * places in the last third (the entropy-coded data; from seed), a zero
 * width in SOF0. `what` names the case ("garbage at byte 9357"); data lives
 * for the call only. */
typedef void (*ictj_case_fn)(void *ctx, const char *what, const unsigned char *data, size_t n);
void ictj_bad_cases(const unsigned char *jpg, size_t n, uint64_t seed, ictj_case_fn fn, void *ctx);

#endif /* ICT_JPEG_CASES_H */
