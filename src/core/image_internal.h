/* image_internal.h - image helpers shared inside the library (not public). */
#ifndef IC_CORE_IMAGE_INTERNAL_H
#define IC_CORE_IMAGE_INTERNAL_H

#include <stddef.h>

#include "imgconv.h"

/* *out = a*b; returns 0 (and leaves *out alone) when it would overflow. */
int ic__mul_size(size_t a, size_t b, size_t *out);

/* Asks the kernel for huge pages over the 2 MiB-aligned inside of p[0..n),
 * a fresh buffer about to be written from end to end: faults on 4 KiB pages
 * took a tenth of a large PNG decode. A hint; nothing when unsupported. */
void ic__huge_pages(void *p, size_t n);

/* Faults in the pages under p[0..n) for writing, without writing them: a
 * thread that is about to write its rows of an unzeroed image takes their
 * faults in one call, beside the other threads. A hint; nothing when
 * unsupported. */
void ic__pages_populate(void *p, size_t n);

/* ic_image_create_type without zeroing the pixels, for a decoder that
 * writes every byte of every row (padding included) on its own threads:
 * the zeroing touched every page of a large PNG on one thread first. */
ic_status ic__image_create_unzeroed(ic_image *img, int width, int height, int channels,
                                    ic_layout layout, ic_sample_type type);

#endif
