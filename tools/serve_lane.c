/*
 * serve_lane.c - the GPU lane of imgconv serve on a CUDA backend: large
 * JPEG requests decoded by nvJPEG in batches (dynamic batching as Triton's
 * scheduler does it: whatever is queued, up to the free slots, waiting at
 * most --batch-delay-us for more), filtered device to device and encoded by
 * nvJPEG on encoder threads. A codec takes one decode at a time, so the
 * batches are pipelined over LANE_PIPES pipes, each a thread with a codec
 * (its own slots, so its own device buffers) and a context of its own:
 * while one decodes a batch, another's is checked, filtered or encoded.
 * Each step is the batch CLI's nvJPEG route (cli_batch.c: gpu_main,
 * filter_device, gpu_encoder), so the replies are its bytes. Whatever the
 * lane would refuse before filtering (a bad kernel, an edge-strength kernel,
 * the work bound, a file nvJPEG and the codec's CPU fallback cannot decode)
 * goes back to the CPU workers, whose answer is the CLI's own.
 */
#include <sys/prctl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_warm.h"
#include "serve_int.h"

#define LANE_SLOTS 32 /* a pipe's codec slots: one batch decoding while the last one encodes */
#define LANE_PIPES 2  /* batches decoding at once; IC_SERVE_LANE_PIPES=1..4 for comparisons */
#define LANE_MAX_PIPES 4
#define LANE_BATCH 16   /* the most files of one batched decode */
#define LANE_ENCODERS 8 /* nvJPEG encodes at once (the codec runs up to 16) */
#define LANE_WARM_W 1920
#define LANE_WARM_H 1080

typedef struct lane_item {
    srv_job *job;     /* NULL: the slot is free or decoding */
    ic_image out;     /* the slot's device output, the filter's result */
    ic_metadata meta; /* the input's ICC and EXIF, for the encoder */
} lane_item;

/* One decoding thread with its codec and filter context (one thread each). */
typedef struct lane_pipe {
    struct srv_lane *l;
    ic_context *ctx;
    ic_gpu_codec *codec;
    pthread_t th;
    int running;
    /* under s->mu */
    int free_slots[LANE_SLOTS];
    int nfree;
    uint64_t batches;
    lane_item item[LANE_SLOTS];
} lane_pipe;

typedef struct srv_lane {
    srv *s;
    char engine[96];
    lane_pipe pipe[LANE_MAX_PIPES];
    int npipes;
    pthread_t enc[LANE_ENCODERS];
    int nenc;
    /* under s->mu */
    int enc_q[LANE_MAX_PIPES * LANE_SLOTS]; /* pipe * LANE_SLOTS + slot, filtered, a ring */
    int enc_head, enc_n;
    int quit;
    pthread_cond_t enc_cv;
} srv_lane;

int srv_lane_route(const srv *s, srv_job *j)
{
    const cli_options *o = &j->o;
    /* one set of load options per batch: requests asking for other ones,
     * and host-only filters, stay on the CPU */
    if (!s->lane || cli_format_sniff(j->body, j->size) != IC_FMT_JPEG || o->nchain > 1 ||
        o->params.abs || o->channels != 0 || o->layout != IC_AOS || o->accept_damaged)
        return SRV_LANE_CPU;
    if (o->format) {
        char name[32];
        snprintf(name, sizeof name, "x.%s", o->format);
        if (ic_format_from_path(name) != IC_FMT_JPEG)
            return SRV_LANE_CPU;
    }
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = o->max_pixels;
    lo.max_memory = o->max_memory;
    int w = 0, h = 0;
    /* a header the probe refuses gets the CPU worker's message */
    if (ic_image_probe(j->body, j->size, &lo, &w, &h) != IC_OK ||
        (uint64_t)w * (uint64_t)h < s->base.gpu_min_pixels)
        return SRV_LANE_CPU;
    j->width = w;
    j->height = h;
    return SRV_LANE_GPU;
}

/* Gives a slot back and ends the lane's hold on a job (under s->mu). */
static void slot_give_locked(lane_pipe *lp, int slot)
{
    lp->free_slots[lp->nfree++] = slot;
    lp->l->s->busy--;
    /* every pipe: the one woken by a signal may be one without free slots */
    pthread_cond_broadcast(&lp->l->s->lane_cv);
}

/* A job finished by the lane (answered or failed): its slot back, the job to
 * the loop. */
static void lane_finish(lane_pipe *lp, srv_job *j, int slot)
{
    pthread_mutex_lock(&lp->l->s->mu);
    slot_give_locked(lp, slot);
    pthread_mutex_unlock(&lp->l->s->mu);
    srv_job_done(lp->l->s, j, j->ms[0] + j->ms[1] + j->ms[2]);
}

/* A job the lane will not filter: its slot back, the job to the CPU workers. */
static void lane_decline(lane_pipe *lp, srv_job *j, int slot)
{
    pthread_mutex_lock(&lp->l->s->mu);
    slot_give_locked(lp, slot);
    pthread_mutex_unlock(&lp->l->s->mu);
    srv_requeue_cpu(lp->l->s, j);
}

/* Takes up to LANE_BATCH queued jobs and as many of the pipe's slots (under
 * s->mu); their count. */
static int batch_fill(lane_pipe *lp, srv_job **jobs, int *slots)
{
    srv *s = lp->l->s;
    int n = 0;
    while (!s->quit && n < LANE_BATCH && lp->nfree > 0 && s->g_head) {
        srv_job *j = s->g_head;
        s->g_head = j->next;
        if (!s->g_head)
            s->g_tail = NULL;
        s->g_queued--;
        s->queued--;
        s->queued_bytes -= j->size;
        s->busy++;
        jobs[n] = j;
        slots[n] = lp->free_slots[--lp->nfree];
        n++;
    }
    if (n > 0) {
        for (int b = 0; b < SRV_NBATCH; b++)
            s->batches[b] += n <= (1 << b);
        s->nbatches++;
        s->batch_images += (uint64_t)n;
        lp->batches++;
    }
    return n;
}

/* Waits for queued jobs and free slots, then up to --batch-delay-us after
 * the oldest job's arrival for a fuller batch; takes up to LANE_BATCH jobs
 * and as many slots. Returns their count, 0 once the server stops. */
static int batch_take(lane_pipe *lp, srv_job **jobs, int *slots)
{
    srv *s = lp->l->s;
    pthread_mutex_lock(&s->mu);
    int n = 0;
    while (n == 0) { /* another pipe may take the jobs this one waited for */
        while (!s->quit && (!s->g_head || lp->nfree == 0))
            pthread_cond_wait(&s->lane_cv, &s->mu);
        if (s->quit || !s->g_head) {
            pthread_mutex_unlock(&s->mu);
            return 0;
        }
        const double wait_ms = s->g_head->t0 + s->base.batch_delay_us / 1e3 - cli_now_ms();
        if (wait_ms > 0) {
            struct timespec dl;
            clock_gettime(CLOCK_REALTIME, &dl);
            const long long ns = (long long)dl.tv_nsec + (long long)(wait_ms * 1e6);
            dl.tv_sec += (time_t)(ns / 1000000000);
            dl.tv_nsec = (long)(ns % 1000000000);
            while (!s->quit && s->g_queued < (lp->nfree < LANE_BATCH ? lp->nfree : LANE_BATCH))
                if (pthread_cond_timedwait(&s->lane_cv, &s->mu, &dl) == ETIMEDOUT)
                    break;
        }
        n = batch_fill(lp, jobs, slots);
    }
    pthread_mutex_unlock(&s->mu);
    return n;
}

/* Filters decoded image img of job j on the device into its slot's output
 * and hands the slot to the encoders; 0 when the job ended here. */
static int lane_filter(lane_pipe *lp, srv_job *j, int slot, const ic_kernel *k, ic_image *img)
{
    const double t0 = cli_now_ms();
    cli_err e;
    memset(&e, 0, sizeof e);
    lane_item *it = &lp->item[slot];
    int code = cli_check_image(&j->o, lp->ctx, img, k, j->o.input, &e);
    if (code != CLI_EXIT_OK) {
        srv_job_failed(j, code, IC_ERR_TOO_LARGE, &e);
        return 0;
    }
    ic_params p = j->o.params;
    p.bias = (float)((double)p.bias + k->offset);
    char msg[256] = "";
    ic_status st = cli_noted(ic_gpu_codec_output(lp->codec, slot, img, &it->out), msg, sizeof msg);
    if (st == IC_OK)
        st = cli_noted(ic_convolve(lp->ctx, img, &it->out, k, &p), msg, sizeof msg);
    j->ms[1] = cli_now_ms() - t0;
    if (st != IC_OK) {
        cli_fail(&e, cli_exit_for_backend(st), j->o.input, "backend %s: %s",
                 ic_context_backend(lp->ctx), msg[0] ? msg : ic_status_str(st));
        srv_job_failed(j, cli_exit_for_backend(st), st, &e);
        return 0;
    }
    return 1;
}

/* One batch: the lane's checks, one batched decode, a filter per image, and
 * the images to the encoders. */
static void batch_run(lane_pipe *lp, srv_job **jobs, const int *slots, int n)
{
    srv *s = lp->l->s;
    srv_lane *lane = lp->l;
    const double t0 = cli_now_ms();
    srv_job *dj[LANE_BATCH];
    int ds[LANE_BATCH];
    ic_kernel dk[LANE_BATCH];
    ic_bytes in[LANE_BATCH];
    int m = 0;
    for (int i = 0; i < n; i++) {
        srv_job *j = jobs[i];
        j->queue_ms = t0 - j->t0;
        cli_err e;
        memset(&e, 0, sizeof e);
        memset(&dk[m], 0, sizeof dk[m]);
        /* the work bound for one channel, as the CPU decoder's cap; the
         * exact one once decoded (cli_check_image) */
        if (cli_get_kernel(&j->o, &dk[m], &e) != CLI_EXIT_OK || dk[m].magnitude ||
            cli_check_work(&j->o, j->width, j->height, 1, &dk[m], j->o.input, &e) != CLI_EXIT_OK) {
            ic_kernel_free(&dk[m]);
            lane_decline(lp, j, slots[i]);
            continue;
        }
        dj[m] = j;
        ds[m] = slots[i];
        in[m].data = j->body;
        in[m].size = j->size;
        m++;
    }
    if (m == 0)
        return;
    ic_load_options lo; /* as the batch CLI's nvJPEG thread loads */
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = s->base.max_pixels;
    lo.max_memory = s->base.max_memory;
    lo.threads = 1;
    ic_metadata ask; /* any non-NULL pointer: res[i].metadata receives file i's */
    lo.metadata = &ask;
    ic_image img[LANE_BATCH];
    ic_decode_result res[LANE_BATCH];
    memset(res, 0, sizeof res);
    const double t1 = cli_now_ms();
    const ic_status st = ic_gpu_codec_decode(lp->codec, m, in, ds, &lo, img, res);
    const double t2 = cli_now_ms();
    for (int i = 0; i < m; i++) {
        srv_job *j = dj[i];
        j->ms[0] = t2 - t1;
        if (st != IC_OK || res[i].status != IC_OK) {
            ic_metadata_free(&res[i].metadata);
            ic_kernel_free(&dk[i]);
            lane_decline(lp, j, ds[i]);
            continue;
        }
        const int go = lane_filter(lp, j, ds[i], &dk[i], &img[i]);
        ic_kernel_free(&dk[i]);
        if (!go) {
            ic_metadata_free(&res[i].metadata);
            lane_finish(lp, j, ds[i]);
            continue;
        }
        pthread_mutex_lock(&s->mu);
        lp->item[ds[i]].job = j;
        lp->item[ds[i]].meta = res[i].metadata; /* the encoder frees it */
        lane->enc_q[(lane->enc_head + lane->enc_n) % (LANE_MAX_PIPES * LANE_SLOTS)] =
            (int)(lp - lane->pipe) * LANE_SLOTS + ds[i];
        lane->enc_n++;
        pthread_cond_signal(&lane->enc_cv);
        pthread_mutex_unlock(&s->mu);
    }
}

static void *lane_main(void *arg)
{
    (void)prctl(PR_SET_NAME, "ic-gpu-lane"); /* what top -H shows */
    lane_pipe *lp = arg;
    srv_job *jobs[LANE_BATCH];
    int slots[LANE_BATCH];
    for (int n; (n = batch_take(lp, jobs, slots)) > 0;)
        batch_run(lp, jobs, slots, n);
    return NULL;
}

/* Encodes one filtered slot into the job's reply. */
static void lane_encode(lane_pipe *lp, int slot)
{
    lane_item *it = &lp->item[slot];
    srv_job *j = it->job;
    const double t0 = cli_now_ms();
    ic_save_options so; /* as the batch CLI's GPU encoders save */
    memset(&so, 0, sizeof so);
    so.quality = j->o.quality;
    so.lossless = j->o.lossless;
    so.compression = j->o.compression;
    so.metadata = &it->meta;
    char name[32], msg[256] = "";
    snprintf(name, sizeof name, "x.%s", j->o.format ? j->o.format : "jpg");
    ic_bytes enc;
    ic_status st =
        cli_noted(ic_gpu_codec_encode(lp->codec, slot, &it->out, name, &so, &enc), msg, sizeof msg);
    if (st == IC_OK && !(j->out = malloc(enc.size ? enc.size : 1))) {
        st = IC_ERR_NOMEM;
        snprintf(msg, sizeof msg, "out of memory");
    }
    if (st == IC_OK) {
        memcpy(j->out, enc.data, enc.size);
        j->out_size = enc.size;
        j->http = 200;
        j->content_type = "image/jpeg";
    } else {
        cli_err e;
        memset(&e, 0, sizeof e);
        const int code =
            cli_fail(&e, st == IC_ERR_NOMEM ? CLI_EXIT_INTERNAL : cli_exit_for_output(st),
                     j->o.input, "%s", msg[0] ? msg : ic_status_str(st));
        srv_job_failed(j, code, st, &e);
    }
    ic_metadata_free(&it->meta);
    it->job = NULL;
    j->ms[2] = cli_now_ms() - t0;
    lane_finish(lp, j, slot);
}

static void *lane_encoder(void *arg)
{
    (void)prctl(PR_SET_NAME, "ic-lane-encode"); /* what top -H shows */
    srv_lane *l = arg;
    srv *s = l->s;
    for (;;) {
        pthread_mutex_lock(&s->mu);
        while (l->enc_n == 0 && !l->quit)
            pthread_cond_wait(&l->enc_cv, &s->mu);
        if (l->enc_n == 0) { /* quit, and nothing left to encode */
            pthread_mutex_unlock(&s->mu);
            return NULL;
        }
        const int at = l->enc_q[l->enc_head];
        l->enc_head = (l->enc_head + 1) % (LANE_MAX_PIPES * LANE_SLOTS);
        l->enc_n--;
        pthread_mutex_unlock(&s->mu);
        lane_encode(&l->pipe[at / LANE_SLOTS], at % LANE_SLOTS);
    }
}

/* Exercises what the first request would otherwise pay for: nvJPEG's
 * hardware decoder (made at its first decode), a filter of an HD image on
 * the device (cli_warm did one) and an nvJPEG encode. Failures are the
 * first request's to report. */
static void lane_warm(lane_pipe *lp, const ic_kernel *k, const ic_params *p)
{
    ic_image host;
    memset(&host, 0, sizeof host);
    uint8_t *jpg = NULL;
    size_t njpg = 0;
    if (ic_image_create(&host, LANE_WARM_W, LANE_WARM_H, 3, IC_AOS) != IC_OK)
        return;
    for (int y = 0; y < LANE_WARM_H; y++) /* a gradient: a JPEG with some content */
        for (int x = 0; x < LANE_WARM_W * 3; x++)
            host.data[(size_t)y * host.pitch + (size_t)x] = (uint8_t)(x + y);
    ic_save_options so;
    memset(&so, 0, sizeof so);
    const ic_status st = ic_image_encode(&host, "x.jpg", &so, &jpg, &njpg);
    ic_image_free(&host);
    if (st != IC_OK)
        return;
    const ic_bytes in = {jpg, njpg};
    ic_image img, out;
    ic_decode_result res;
    memset(&res, 0, sizeof res);
    const int slot = 0;
    if (ic_gpu_codec_decode(lp->codec, 1, &in, &slot, NULL, &img, &res) == IC_OK &&
        res.status == IC_OK && ic_gpu_codec_output(lp->codec, slot, &img, &out) == IC_OK &&
        ic_convolve(lp->ctx, &img, &out, k, p) == IC_OK) {
        ic_bytes enc;
        (void)ic_gpu_codec_encode(lp->codec, slot, &out, "x.jpg", &so, &enc);
    }
    ic_metadata_free(&res.metadata);
    free(jpg);
}

int srv_lane_start(srv *s, cli_err *e)
{
    s->lane = NULL;
    if (s->base.cpu_codec || !ic_format_supported(IC_FMT_JPEG))
        return CLI_EXIT_OK;
    srv_lane *l = calloc(1, sizeof *l);
    if (!l)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    l->s = s;
    /* one device: the codec's, even when --devices lists several */
    ic_context_options c = s->base.ctx;
    if (c.n_devices >= 1)
        c.device = c.devices[0];
    c.n_devices = 0;
    ic_kernel k;
    ic_params p;
    ic_params_default(&p);
    ic_status st = ic_kernel_parse(&k, "gaussian:5");
    if (st != IC_OK) {
        free(l);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "warm-up kernel: %s", ic_status_str(st));
    }
    cli_warm w[LANE_MAX_PIPES];
    memset(w, 0, sizeof w);
    for (int i = 0; i < LANE_MAX_PIPES; i++) {
        w[i].backend = s->base.backend;
        w[i].opts = &c;
        w[i].want_codec = 1;
        w[i].slots = LANE_SLOTS - 2;
        w[i].k = &k;
        w[i].p = &p;
        w[i].layout = IC_AOS;
    }
    cli_warm_header(&w[0], LANE_WARM_W, LANE_WARM_H); /* context, codec and a filter */
    cli_warm_join(&w[0]);
    int code = CLI_EXIT_OK;
    if (w[0].st != IC_OK)
        code = cli_fail(e, cli_exit_for_backend(w[0].st), NULL, "backend %s: %s", s->base.backend,
                        w[0].err[0] ? w[0].err : ic_status_str(w[0].st));
    else if (w[0].codec_st != IC_OK && w[0].codec_st != IC_ERR_UNSUPPORTED)
        code = cli_fail(e, cli_exit_for_backend(w[0].codec_st), NULL, "backend %s: GPU codec: %s",
                        s->base.backend,
                        w[0].codec_err[0] ? w[0].codec_err : ic_status_str(w[0].codec_st));
    if (code != CLI_EXIT_OK || !w[0].codec) { /* a CPU backend: no lane */
        cli_warm_finish(&w[0]);
        ic_kernel_free(&k);
        free(l);
        return code;
    }
    /* the engine's name opens the hardware decoder; without nvJPEG the
     * codec would decode a batch on this one thread: the workers do better */
    snprintf(l->engine, sizeof l->engine, "%s", ic_gpu_codec_engine(w[0].codec));
    if (strncmp(l->engine, "cpu", 3) == 0) {
        cli_warm_finish(&w[0]);
        ic_kernel_free(&k);
        free(l);
        return CLI_EXIT_OK;
    }
    const char *env = getenv("IC_SERVE_LANE_PIPES");
    int want = env && *env ? atoi(env) : LANE_PIPES;
    want = want < 1 ? 1 : want > LANE_MAX_PIPES ? LANE_MAX_PIPES : want;
    for (int i = 1; i < want; i++) /* side by side */
        cli_warm_header(&w[i], LANE_WARM_W, LANE_WARM_H);
    for (int i = 0; i < want; i++) {
        cli_warm_join(&w[i]);
        /* a pipe whose decoder is not the first's would give other pixels */
        const int same = w[i].st == IC_OK && w[i].codec &&
                         strcmp(ic_gpu_codec_engine(w[i].codec), l->engine) == 0;
        if (same) {
            lane_pipe *pp = &l->pipe[l->npipes++];
            pp->l = l;
            pp->ctx = w[i].ctx;
            pp->codec = w[i].codec;
            w[i].ctx = NULL;
            w[i].codec = NULL;
        }
        cli_warm_finish(&w[i]);
    }
    for (int i = 0; i < l->npipes; i++) {
        lane_pipe *pp = &l->pipe[i];
        lane_warm(pp, &k, &p);
        for (int sl = 0; sl < LANE_SLOTS; sl++)
            pp->free_slots[pp->nfree++] = LANE_SLOTS - 1 - sl;
    }
    ic_kernel_free(&k);
    pthread_cond_init(&l->enc_cv, NULL);
    s->lane = l;
    for (l->nenc = 0; l->nenc < LANE_ENCODERS; l->nenc++)
        if (pthread_create(&l->enc[l->nenc], NULL, lane_encoder, l) != 0)
            break;
    int running = 0;
    for (int i = 0; i < l->npipes && l->nenc > 0; i++) {
        l->pipe[i].running = pthread_create(&l->pipe[i].th, NULL, lane_main, &l->pipe[i]) == 0;
        running += l->pipe[i].running;
    }
    if (!running)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot start the GPU lane's threads");
    return CLI_EXIT_OK;
}

const char *srv_lane_engine(const srv *s)
{
    return s->lane ? s->lane->engine : NULL;
}

int srv_lane_pipes(const srv *s, uint64_t *batches, int most)
{
    const srv_lane *l = s->lane;
    for (int i = 0; l && i < l->npipes && i < most; i++)
        batches[i] = l->pipe[i].batches;
    return l ? l->npipes : 0;
}

void srv_lane_stop(srv *s)
{
    srv_lane *l = s->lane;
    if (!l)
        return;
    pthread_mutex_lock(&s->mu);
    pthread_cond_broadcast(&s->lane_cv); /* s->quit is set */
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < l->npipes; i++)
        if (l->pipe[i].running)
            pthread_join(l->pipe[i].th, NULL);
    pthread_mutex_lock(&s->mu);
    l->quit = 1; /* the encoders finish what the last batches filtered */
    pthread_cond_broadcast(&l->enc_cv);
    pthread_mutex_unlock(&s->mu);
    for (int i = 0; i < l->nenc; i++)
        pthread_join(l->enc[i], NULL);
    pthread_cond_destroy(&l->enc_cv);
    for (int i = 0; i < l->npipes; i++) {
        ic_gpu_codec_free(l->pipe[i].codec);
        ic_context_free(l->pipe[i].ctx);
    }
    free(l);
    s->lane = NULL;
}
