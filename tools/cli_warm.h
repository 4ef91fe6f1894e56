/*
 * cli_warm.h - the backend's start-up on a thread of its own: while
 * the main thread decodes the input on the CPU, a second thread creates the
 * filter context (a CUDA context: ~0.2 s), the GPU codec
 * when the output will be encoded on the GPU, and runs one filter of the
 * input's size on the codec's device buffers so that the first real filter
 * finds its kernel loaded, its plan made and its buffers allocated. Started
 * from the loader's header_ok hook (ic_load_options), so that a file refused
 * by its header (a decompression bomb) costs no CUDA initialisation.
 * Definitions in cli_warm.c.
 */
#ifndef IC_TOOLS_CLI_WARM_H
#define IC_TOOLS_CLI_WARM_H

#include <pthread.h>

#include "imgconv_gpu_codec.h"

typedef struct cli_warm {
    /* Set by the caller before the load. */
    const char *backend;            /* ic_context_create's name */
    const ic_context_options *opts; /* its options */
    int want_codec;                 /* also create a GPU codec (when the backend has one) */
    int slots;                      /* its slots beyond the two the warm-up uses (0: none) */
    const ic_kernel *k;             /* the warm-up filter's kernel and params; */
    const ic_params *p;             /* k NULL: no warm-up filter */
    int channels;                   /* the decoded image's channels (0: as stored = 3 for a
                                      * colour JPEG; the warm-up needs 3) */
    ic_layout layout;
    /* When set, called from the header hook before the thread starts, with
     * the image's size: it may replace backend (--backend auto's choice). */
    void (*choose)(void *user, int width, int height);
    void *choose_user;
    /* Results, valid after cli_warm_join. */
    ic_context *ctx; /* NULL when creation failed (st, err) */
    ic_status st;
    char err[256];
    ic_gpu_codec *codec; /* NULL: none (not wanted, not a CUDA backend, failed) */
    ic_status codec_st;  /* IC_ERR_UNSUPPORTED: the backend has no GPU codec */
    char codec_err[256];
    double init_ms, codec_ms, warm_ms; /* what each step took on the thread */
    /* Private. */
    int width, height; /* from the header */
    int started, threaded, joined;
    pthread_t th;
} cli_warm;

/* ic_load_options.header_ok: starts the thread (user is the cli_warm). */
void cli_warm_header(void *user, int width, int height);

/* Waits for the thread; when it never started (no header_ok call), does its
 * work here. Idempotent. */
void cli_warm_join(cli_warm *w);

/* Joins, then frees the context and codec unless the caller took them (set
 * w->ctx / w->codec to NULL after taking them). */
void cli_warm_finish(cli_warm *w);

#endif /* IC_TOOLS_CLI_WARM_H */
