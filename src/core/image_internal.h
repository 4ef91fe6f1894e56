/* image_internal.h - size helpers shared inside the library (not public). */
#ifndef IC_CORE_IMAGE_INTERNAL_H
#define IC_CORE_IMAGE_INTERNAL_H

#include <stddef.h>

/* *out = a*b; returns 0 (and leaves *out alone) when it would overflow. */
int ic__mul_size(size_t a, size_t b, size_t *out);

/* Asks the kernel for huge pages over the 2 MiB-aligned inside of p[0..n),
 * a fresh buffer about to be written from end to end: faults on 4 KiB pages
 * took a tenth of a large PNG decode. A hint; nothing when unsupported. */
void ic__huge_pages(void *p, size_t n);

#endif
