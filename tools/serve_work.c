/*
 * serve_work.c - the workers of imgconv serve: each takes a job from the
 * bounded queue, decodes, filters and encodes it on its own context
 * (cli_filter_memory, the CLI's own pipeline) and hands it back to the event
 * loop by writing a byte to the loop's pipe.
 */
#include <sys/prctl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "serve_int.h"

/* The request's body, once no one reads it. */
static void body_free(srv_job *j)
{
    if (j->in)
        evbuffer_free(j->in); /* unlocked and on no loop: any thread may */
    j->in = NULL;
    j->body = NULL;
}

void srv_job_free(srv_job *j)
{
    if (!j)
        return;
    free(j->query);
    body_free(j);
    free(j->out);
    free(j);
}

/* Appends j to a queue (under s->mu). */
static void queue_push(srv_job **head, srv_job **tail, srv_job *j)
{
    j->next = NULL;
    if (*tail)
        (*tail)->next = j;
    else
        *head = j;
    *tail = j;
}

int srv_enqueue(srv *s, srv_job *j)
{
    j->lane = srv_lane_route(s, j); /* the header is read here, outside the lock */
    pthread_mutex_lock(&s->mu);
    const int ok = s->queued < s->base.queue &&
                   (s->queued == 0 || s->queued_bytes + j->size <= s->base.max_memory);
    if (ok) {
        s->queued_bytes += j->size;
        s->queued++;
        if (j->lane == SRV_LANE_GPU) {
            queue_push(&s->g_head, &s->g_tail, j);
            s->g_queued++;
            pthread_cond_broadcast(&s->lane_cv); /* each pipe: one may have no free slot */
        } else {
            queue_push(&s->q_head, &s->q_tail, j);
            pthread_cond_signal(&s->cv);
        }
    }
    pthread_mutex_unlock(&s->mu);
    return ok;
}

void srv_requeue_cpu(srv *s, srv_job *j)
{
    j->lane = SRV_LANE_CPU;
    pthread_mutex_lock(&s->mu);
    s->queued_bytes += j->size;
    s->queued++;
    queue_push(&s->q_head, &s->q_tail, j);
    pthread_cond_signal(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

void srv_job_done(srv *s, srv_job *j, double busy_ms)
{
    body_free(j); /* the input is not needed for the reply */
    pthread_mutex_lock(&s->mu);
    s->busy_s += busy_ms / 1e3;
    s->lane_requests[j->lane]++;
    j->next = s->done;
    s->done = j;
    pthread_mutex_unlock(&s->mu);
    const char byte = 1;
    /* a full pipe already holds a wake-up for the loop */
    if (write(s->pipe_fd[1], &byte, 1) < 0) {
    }
}

srv_job *srv_take_done(srv *s)
{
    pthread_mutex_lock(&s->mu);
    srv_job *d = s->done;
    s->done = NULL;
    pthread_mutex_unlock(&s->mu);
    /* oldest first */
    srv_job *r = NULL;
    while (d) {
        srv_job *n = d->next;
        d->next = r;
        r = d;
        d = n;
    }
    return r;
}

static const char *content_type(const char *name)
{
    switch (ic_format_from_path(name)) {
    case IC_FMT_PNG:
        return "image/png";
    case IC_FMT_JPEG:
        return "image/jpeg";
    case IC_FMT_TIFF:
        return "image/tiff";
    case IC_FMT_WEBP:
        return "image/webp";
    default:
        return "image/x-portable-anymap";
    }
}

static void job_fail(srv_job *j, int http, const char *error, const char *msg)
{
    j->http = http;
    j->error = error;
    snprintf(j->msg, sizeof j->msg, "%s", msg);
}

/* The status of a failed filter: the CLI's exit code and the library's
 * reason. Bad input is never a 500. */
void srv_job_failed(srv_job *j, int code, ic_status why, const cli_err *e)
{
    if (code == CLI_EXIT_USAGE)
        job_fail(j, 400, "bad_request", e->msg);
    else if (code == CLI_EXIT_INPUT && why == IC_ERR_TOO_LARGE)
        job_fail(j, 413, "too_large", e->msg);
    else if (code == CLI_EXIT_INPUT && why == IC_ERR_UNSUPPORTED)
        job_fail(j, 415, "unsupported_format", e->msg);
    else if (code == CLI_EXIT_INPUT)
        job_fail(j, 422, "corrupt_image", e->msg);
    else if (why == IC_ERR_NOMEM)
        job_fail(j, 503, "unavailable", e->msg);
    else
        job_fail(j, 500, "internal", e->msg);
}

void srv_job_run(srv_job *j, ic_context *ctx, int threads, cli_keep *keep)
{
    cli_err e;
    memset(&e, 0, sizeof e);
    const ic_format in_fmt = cli_format_sniff(j->body, j->size);
    if (in_fmt == IC_FMT_UNKNOWN || !ic_format_supported(in_fmt)) {
        job_fail(j, 415, "unsupported_format",
                 in_fmt == IC_FMT_UNKNOWN
                     ? "the body is not an image of a known format (PNG, JPEG, TIFF, WebP, PNM)"
                     : "this format was not built into the server (see imgconv --formats)");
        return;
    }
    ic_kernel k;
    memset(&k, 0, sizeof k);
    int code = cli_get_kernel(&j->o, &k, &e);
    if (code != CLI_EXIT_OK) {
        srv_job_failed(j, code, IC_ERR_KERNEL, &e);
        return;
    }
    ic_params p = j->o.params;
    p.bias = (float)((double)p.bias + k.offset);
    char name[32];
    snprintf(name, sizeof name, "x.%s", j->o.format ? j->o.format : ic_format_name(in_fmt));
    if (!ic_format_supported(ic_format_from_path(name))) {
        ic_kernel_free(&k);
        job_fail(j, 415, "unsupported_format",
                 "the output format was not built into the server (see imgconv --formats)");
        return;
    }
    ic_status why = IC_OK;
    code = cli_filter_memory(&j->o, ctx, threads, &k, &p, j->body, j->size, name, keep, &j->out,
                             &j->out_size, &why, j->ms, &e);
    ic_kernel_free(&k);
    if (code != CLI_EXIT_OK) {
        srv_job_failed(j, code, why, &e);
        return;
    }
    j->http = 200;
    j->content_type = content_type(name);
}

typedef struct worker_arg {
    srv *s;
    int i;
} worker_arg;

/* Images below this many pixels are served on the worker's own share: on
 * the H200 a 64x64 PNG's encode took 0.72 ms through every core's threads
 * against 0.58 ms on one. */
#define WIDE_MIN_PIXELS ((uint64_t)1 << 18)

/* 1 when the job's image is large enough to gain from every core (a header
 * probe: microseconds; an image the probe refuses is left to the worker). */
static int wide_pays(const srv_job *j)
{
    int w = j->width, h = j->height;
    if ((w <= 0 || h <= 0) && ic_image_probe(j->body, j->size, NULL, &w, &h) != IC_OK)
        return 0;
    return (uint64_t)w * (uint64_t)h >= WIDE_MIN_PIXELS;
}

static void *worker_main(void *arg)
{
    (void)prctl(PR_SET_NAME, "ic-serve-cpu"); /* what top -H shows */
    worker_arg *w = arg;
    srv *s = w->s;
    ic_context *ctx = s->ctx[w->i];
    free(w);
    cli_keep keep = {NULL, 0}; /* the filtered image's memory, job after job */
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (!s->q_head && !s->quit)
            pthread_cond_wait(&s->cv, &s->mu);
        srv_job *j = s->q_head;
        if (!j) { /* quit, and nothing left to do */
            pthread_mutex_unlock(&s->mu);
            cli_keep_free(&keep);
            return NULL;
        }
        s->q_head = j->next;
        if (!s->q_head)
            s->q_tail = NULL;
        s->queued--;
        s->queued_bytes -= j->size;
        s->busy++;
        /* alone with nothing queued: every core for this request, through
         * the wide context (its bytes are the same); the workers that start
         * meanwhile add at most one core's share each */
        const int wide = s->wide && !s->wide_busy && s->queued == 0 && s->busy == 1 && wide_pays(j);
        s->wide_busy |= wide;
        pthread_mutex_unlock(&s->mu);

        const double t0 = cli_now_ms();
        j->queue_ms = t0 - j->t0;
        srv_job_run(j, wide ? s->wide : ctx,
                    wide ? s->ncores : (s->ncores / s->nworkers > 1 ? s->ncores / s->nworkers : 1),
                    &keep);
        pthread_mutex_lock(&s->mu);
        s->busy--;
        s->wide_busy &= !wide;
        pthread_mutex_unlock(&s->mu);
        srv_job_done(s, j, cli_now_ms() - t0);
    }
}

/* One tiny filter, so that the first request finds the backend started (the
 * CUDA context, the calibration; the CPU pool's threads). */
static ic_status warm(ic_context *ctx)
{
    ic_kernel k;
    ic_image a, b;
    memset(&a, 0, sizeof a);
    memset(&b, 0, sizeof b);
    ic_status st = ic_kernel_parse(&k, "gaussian:3");
    if (st != IC_OK)
        return st;
    ic_params p;
    ic_params_default(&p);
    st = ic_image_create(&a, 16, 16, 3, IC_AOS);
    if (st == IC_OK)
        st = ic_image_create(&b, 16, 16, 3, IC_AOS);
    if (st == IC_OK)
        st = ic_convolve(ctx, &a, &b, &k, &p);
    ic_image_free(&a);
    ic_image_free(&b);
    ic_kernel_free(&k);
    return st;
}

int srv_workers_start(srv *s, cli_err *e)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const int ncores = cores > 0 ? (int)cores : 1;
    s->nworkers = s->base.workers > 0 ? s->base.workers : ncores;
    s->ctx = calloc((size_t)s->nworkers, sizeof *s->ctx);
    s->th = calloc((size_t)s->nworkers, sizeof *s->th);
    if (!s->ctx || !s->th)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    int code = srv_lane_start(s, e);
    if (code != CLI_EXIT_OK)
        return code;
    /* beside a GPU lane the workers take small images and other formats,
     * for which a CUDA context per worker would only cost device memory */
    s->worker_backend = s->lane ? "cpu" : s->base.backend;
    ic_context_options c = s->base.ctx;
    /* the cores shared among the workers' pools, unless --threads says */
    if (c.threads == 0)
        c.threads = ncores / s->nworkers > 1 ? ncores / s->nworkers : 1;
    for (int i = 0; i < s->nworkers; i++) {
        char msg[256] = "";
        ic_status st =
            cli_noted(ic_context_create(&s->ctx[i], s->worker_backend, &c), msg, sizeof msg);
        if (st == IC_OK)
            st = cli_noted(warm(s->ctx[i]), msg, sizeof msg);
        if (st != IC_OK)
            return cli_fail(e, cli_exit_for_backend(st), NULL, "backend %s: %s", s->worker_backend,
                            msg[0] ? msg : ic_status_str(st));
    }
    s->ncores = ncores;
    if (s->base.ctx.threads == 0 && ncores > 1 && s->nworkers > 1) {
        c.threads = ncores;
        char msg[256] = "";
        ic_status st =
            cli_noted(ic_context_create(&s->wide, s->worker_backend, &c), msg, sizeof msg);
        if (st == IC_OK)
            st = cli_noted(warm(s->wide), msg, sizeof msg);
        if (st != IC_OK)
            return cli_fail(e, cli_exit_for_backend(st), NULL, "backend %s: %s", s->worker_backend,
                            msg[0] ? msg : ic_status_str(st));
    }
    for (int i = 0; i < s->nworkers; i++) {
        worker_arg *w = malloc(sizeof *w);
        if (!w)
            return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
        w->s = s;
        w->i = i;
        if (pthread_create(&s->th[i], NULL, worker_main, w) != 0) {
            free(w);
            s->nworkers = i; /* the ones started are joined */
            return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot start a worker thread");
        }
    }
    return CLI_EXIT_OK;
}

void srv_workers_stop(srv *s)
{
    pthread_mutex_lock(&s->mu);
    s->quit = 1;
    /* what is still queued was answered 503 at the stop deadline */
    for (srv_job *j; (j = s->q_head);) {
        s->q_head = j->next;
        srv_job_free(j);
    }
    for (srv_job *j; (j = s->g_head);) {
        s->g_head = j->next;
        srv_job_free(j);
    }
    s->q_tail = s->g_tail = NULL;
    s->queued = s->g_queued = 0;
    pthread_cond_broadcast(&s->cv);
    pthread_cond_broadcast(&s->lane_cv);
    pthread_mutex_unlock(&s->mu);
    srv_lane_stop(s); /* its batch in flight ends; what it gives back is freed below */
    for (int i = 0; s->th && i < s->nworkers; i++)
        pthread_join(s->th[i], NULL);
    for (int i = 0; s->ctx && i < s->nworkers; i++)
        ic_context_free(s->ctx[i]);
    ic_context_free(s->wide);
    s->wide = NULL;
    free(s->th);
    free(s->ctx);
    s->th = NULL;
    s->ctx = NULL;
    srv_job *j;
    while ((j = s->q_head)) { /* none when the loop waited for them */
        s->q_head = j->next;
        srv_job_free(j);
    }
    while ((j = srv_take_done(s)))
        for (srv_job *n; j; j = n) {
            n = j->next;
            srv_job_free(j);
        }
}
