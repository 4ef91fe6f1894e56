/*
 * cli_warm.c - the filter context, the GPU codec and a warm-up filter made on
 * a thread of their own while the main thread decodes the input (see
 * cli_warm.h for why).
 */
#include <string.h>

#include "cli.h"
#include "cli_warm.h"

/* The warm-up: one filter of the input's size from slot 1's buffer into slot
 * 0's (the buffer the real output will use), so that the first real filter
 * pays no kernel loading, planning, weights allocation or buffer allocation.
 * Its result is never read (the source buffer holds no image yet) and any
 * failure is forgotten: the real filter reports its own. */
static void warm_filter(cli_warm *w)
{
    if (!w->codec || !w->k || w->width < 1 || w->height < 1 || w->layout != IC_AOS ||
        (w->channels != 0 && w->channels != 3))
        return;
    ic_image like;
    memset(&like, 0, sizeof like);
    like.width = w->width;
    like.height = w->height;
    like.channels = 3;
    like.layout = IC_AOS;
    like.type = IC_U8;
    like.pitch = (size_t)w->width * 3;
    ic_image a, b;
    const double t0 = cli_now_ms();
    if (ic_gpu_codec_output(w->codec, 1, &like, &a) == IC_OK &&
        ic_gpu_codec_output(w->codec, 0, &like, &b) == IC_OK)
        (void)ic_convolve(w->ctx, &a, &b, w->k, w->p);
    w->warm_ms = cli_now_ms() - t0;
}

static void *warm_run(void *arg)
{
    cli_warm *w = arg;
    double t0 = cli_now_ms();
    /* ic_last_error is per thread: the messages are kept for the main one. */
    w->st = cli_noted(ic_context_create(&w->ctx, w->backend, w->opts), w->err, sizeof w->err);
    w->init_ms = cli_now_ms() - t0;
    w->codec_st = IC_ERR_UNSUPPORTED;
    if (w->st != IC_OK || !w->want_codec)
        return NULL;
    t0 = cli_now_ms();
    /* Two slots: slot 0 for the image, slot 1 the warm-up's source. */
    w->codec_st = cli_noted(ic_gpu_codec_create(&w->codec, w->ctx, 2 + w->slots), w->codec_err,
                            sizeof w->codec_err);
    w->codec_ms = cli_now_ms() - t0;
    if (w->codec_st == IC_OK)
        warm_filter(w);
    return NULL;
}

void cli_warm_header(void *user, int width, int height)
{
    cli_warm *w = user;
    if (w->started)
        return;
    w->started = 1;
    w->width = width;
    w->height = height;
    if (w->choose)
        w->choose(w->choose_user, width, height);
    w->threaded = pthread_create(&w->th, NULL, warm_run, w) == 0;
}

void cli_warm_join(cli_warm *w)
{
    if (w->joined)
        return;
    w->joined = 1;
    if (w->threaded)
        pthread_join(w->th, NULL);
    else
        (void)warm_run(w); /* never started, or no thread could be made */
}

void cli_warm_finish(cli_warm *w)
{
    if (!w->started && !w->joined)
        return; /* nothing was created */
    cli_warm_join(w);
    ic_gpu_codec_free(w->codec);
    ic_context_free(w->ctx);
    w->codec = NULL;
    w->ctx = NULL;
}
