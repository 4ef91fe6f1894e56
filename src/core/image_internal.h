/* image_internal.h - size helpers shared inside the library (not public). */
#ifndef IC_CORE_IMAGE_INTERNAL_H
#define IC_CORE_IMAGE_INTERNAL_H

#include <stddef.h>

/* *out = a*b; returns 0 (and leaves *out alone) when it would overflow. */
int ic__mul_size(size_t a, size_t b, size_t *out);

#endif
