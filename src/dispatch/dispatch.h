/* dispatch.h - internal: backend lookup and the float64 alpha path. */
#ifndef IC_DISPATCH_H
#define IC_DISPATCH_H

#include "core/backend.h"

/* Finds a backend by exact name; *usable and *why tell whether it can run here. */
const ic_backend *ic__backend_find(const char *name, int *usable, const char **why);

/* Filters src into dst (same layout) with premultiplied alpha, in float64 on the
 * CPU (README "Alpha"): the one path shared by every backend for that mode. */
ic_status ic__convolve_premultiplied(const ic_job *job);

#endif
