/* dispatch.h - internal: backend lookup and the float64 alpha path. */
#ifndef IC_DISPATCH_H
#define IC_DISPATCH_H

#include "dispatch/backend.h"

/* Finds a backend by exact name; *usable and *why tell whether it can run here. */
const ic_backend *ic__backend_find(const char *name, int *usable, const char **why);

/* The i-th backend of the table (0 <= i < ic_backend_count()), NULL outside;
 * not probed. */
const ic_backend *ic__backend_at(int i);

/* The usable backend of highest rank among those for which has() is 1 (e.g.
 * those with a conv1d entry), probing only those; NULL when none is usable.
 * ic_backend_auto() is the one over every backend. */
const ic_backend *ic__backend_best(int (*has)(const ic_backend *));

/* Filters src into dst (same layout) with premultiplied alpha, in float64 on
 * the CPU (docs/definitions.md, "Alpha"): the one path shared by every
 * backend for that mode. */
ic_status ic__convolve_premultiplied(const ic_job *job);

/* The CUDA device a context's backend runs on: IC_OK and *device for a
 * one-device context of a GPU backend; IC_ERR_UNSUPPORTED for a CPU backend
 * or a context split across several devices (*why says which). */
ic_status ic__context_device(const ic_context *ctx, int *device, const char **why);

/* ic_context_create as "auto" with the choice made: the context runs on
 * backend `name` and hands host jobs whose kernel that backend cannot run to
 * a cpu context of its own (context.c); the tests choose the backend. */
ic_status ic__context_create_auto(ic_context **ctx, const char *name,
                                  const ic_context_options *opts);

/* Checks a tuning's values (include/imgconv.h, ic_tuning): IC_OK, or
 * IC_ERR_INVALID_ARG with ic_last_error() naming the bad field (tuning.c). */
ic_status ic__tuning_check(const ic_tuning *t);

/* The options a context was created with (threads, max_memory, ...). */
const ic_context_options *ic__context_options(const ic_context *ctx);

/* Replaces the times ic_context_timing() reports (chain.c's own runs). */
void ic__context_set_timing(ic_context *ctx, const ic_timing *t);

/* ic_convolve's checks of one call (p not NULL), failing through ic_fail. */
ic_status ic__convolve_check(const ic_context *ctx, const ic_image *src, const ic_image *dst,
                             const ic_kernel *k, const ic_params *p);

/* ic_convolve for a gradient magnitude (k->magnitude) or |sum| (p->abs),
 * after ic_convolve's checks (chain.c). */
ic_status ic__convolve_special(ic_context *ctx, const ic_image *src, ic_image *dst,
                               const ic_kernel *k, const ic_params *p);

#endif
