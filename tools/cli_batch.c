/*
 * cli_batch.c - batch mode of imgconv (issue 6): the whole job fast, not only
 * the kernel (seed 004's closing experiment on transfers, applied to folders
 * of photographs). Its parts live beside it: the list of files (cli_files.c),
 * the bounded queues (cli_queue.c), the progress bar (cli_progress.c), the
 * --json writer (cli_json.c); the raw frame stream is cli_stream.c.
 *
 * Batch: inputs (files, directories, globs) -> decoder threads -> a bounded
 * queue -> one filter context (GPU or CPU backend) on the main thread, or with
 * --devices one filter worker per listed device, each with its own one-device
 * context, all pulling from that queue -> a bounded queue -> encoder threads.
 * Output names are the input base names in OUTDIR (the extension replaced when
 * --format is given). A file that fails at
 * any stage is reported on one line and skipped; the others go on. Entries of
 * a folder that are not images by name (or sub-folders), and with
 * --skip-existing the inputs whose output exists, are skipped with a line
 * saying why and counted apart; dotfiles are ignored. SIGINT
 * stops decoding new files and lets the pipeline drain; ic_image_save writes
 * through a temporary file and a rename, so no partial file is left.
 */
#include "cli_batch.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_files.h"
#include "cli_json.h"
#include "cli_progress.h"
#include "cli_queue.h"

/* ---- interruption ---------------------------------------------------------- */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* ---- the batch run ----------------------------------------------------------- */

typedef struct batch {
    const cli_options *o;
    blist files;
    queue raw, decoded, filtered; /* raw: GPU pipeline only (files as read) */
    queue encoded;                /* GPU pipeline: bytes waiting to be written */
    ic_gpu_codec *codec;          /* GPU pipeline: NULL for the host pipeline */
    pthread_mutex_t mu;           /* guards everything below */
    pthread_cond_t slot_freed;
    int *free_slots, nfree; /* GPU pipeline: codec slots not in use */
    int next, done, written, failed, skipped;
    double bytes; /* decoded sample bytes of the files written */
    double ms_read, ms_decode, ms_filter, ms_encode, ms_write;
    cli_progress bar; /* on stderr */
    char **errors;    /* "FILE\tproblem" for --json */
    int nerr;
    char **skips; /* "FILE\twhy" for --json */
    int nskip;
} batch;

/* Records a file skipped on purpose, with why (a line unless -q or --json). */
static void finish_skipped(batch *b, int idx)
{
    pthread_mutex_lock(&b->mu);
    b->done++;
    b->skipped++;
    const bfile *f = &b->files.v[idx];
    if (b->o->json) {
        cli_json_note(&b->skips, &b->nskip, f->in, f->skip);
    } else if (!b->o->quiet) {
        cli_progress_clear(&b->bar);
        fprintf(stderr, "imgconv: skipped %s: %s\n", f->in, f->skip);
    }
    cli_progress_draw(&b->bar, b->done, b->files.n, b->bytes, 0);
    pthread_mutex_unlock(&b->mu);
}

/* Records the end of one file: ok, or the problem (printed at once). */
static void finish_file(batch *b, int idx, const char *problem)
{
    pthread_mutex_lock(&b->mu);
    b->done++;
    if (problem) {
        b->failed++;
        cli_progress_clear(&b->bar);
        const char *name = b->files.v[idx].in;
        fprintf(stderr, "imgconv: error: %s: %s\n", name, problem);
        if (b->o->json)
            cli_json_note(&b->errors, &b->nerr, name, problem);
    } else {
        b->written++;
        b->bytes += (double)b->files.v[idx].bytes;
    }
    cli_progress_draw(&b->bar, b->done, b->files.n, b->bytes, problem != NULL);
    pthread_mutex_unlock(&b->mu);
}

static void add_time(batch *b, double *acc, double ms)
{
    pthread_mutex_lock(&b->mu);
    *acc += ms;
    pthread_mutex_unlock(&b->mu);
}

/* What --channels, --layout and --max-pixels ask of every load. */
/* The save options every output of a batch gets (quality, lossless,
 * compression), whichever encoder writes it. */
static ic_save_options save_options_of(const cli_options *o)
{
    ic_save_options so;
    memset(&so, 0, sizeof so);
    so.quality = o->quality;
    so.lossless = o->lossless;
    so.compression = o->compression;
    return so;
}

static ic_load_options load_options_of(const cli_options *o)
{
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.channels = o->channels;
    lo.layout = o->layout;
    lo.max_pixels = o->max_pixels;
    lo.max_memory = o->max_memory;
    return lo;
}

/* Claims the next file and makes its item; NULL when no file is left (or the
 * run was interrupted). A file that failed before reading is reported here. */
static item *next_file(batch *b)
{
    for (;;) {
        pthread_mutex_lock(&b->mu);
        const int i = g_interrupted ? b->files.n : b->next++;
        pthread_mutex_unlock(&b->mu);
        if (i >= b->files.n)
            return NULL;
        const bfile *f = &b->files.v[i];
        if (f->skip[0]) {
            finish_skipped(b, i);
            continue;
        }
        if (f->err[0]) {
            finish_file(b, i, f->err);
            continue;
        }
        item *it = calloc(1, sizeof *it);
        if (!it) {
            finish_file(b, i, "out of memory");
            continue;
        }
        it->idx = i;
        it->slot = -1;
        return it;
    }
}

static void *decoder(void *arg)
{
    batch *b = arg;
    ic_load_options lo = load_options_of(b->o);
    item *it;
    while ((it = next_file(b)) != NULL) {
        const int i = it->idx;
        bfile *f = &b->files.v[i];
        char msg[256] = "";
        const double t = cli_now_ms();
        lo.metadata = &it->meta;
        const ic_status s = cli_noted(ic_image_load(&it->img, f->in, &lo), msg, sizeof msg);
        add_time(b, &b->ms_decode, cli_now_ms() - t);
        if (s != IC_OK) {
            char problem[320];
            snprintf(problem, sizeof problem, "%s", msg[0] ? msg : ic_status_str(s));
            cli_item_free(it);
            finish_file(b, i, problem);
            continue;
        }
        f->bytes = ic_image_row_bytes(&it->img) * (size_t)it->img.height *
                   (size_t)(it->img.layout == IC_SOA ? it->img.channels : 1);
        cli_queue_push(&b->decoded, it);
    }
    cli_queue_producer_done(&b->decoded);
    return NULL;
}

static void *encoder(void *arg)
{
    batch *b = arg;
    ic_save_options so = save_options_of(b->o);
    item *it;
    while ((it = cli_queue_pop(&b->filtered)) != NULL) {
        if (g_interrupted) { /* saves under way finish (atomically); no new ones */
            ic_image_free(&it->out);
            cli_item_free(it);
            continue;
        }
        char msg[256] = "";
        const double t = cli_now_ms();
        so.metadata = &it->meta;
        const ic_status s =
            cli_noted(ic_image_save(&it->out, b->files.v[it->idx].out, &so), msg, sizeof msg);
        add_time(b, &b->ms_encode, cli_now_ms() - t);
        if (s == IC_OK)
            cli_depth_notice(b->files.v[it->idx].out, b->files.v[it->idx].out, &it->out);
        char problem[320];
        if (s != IC_OK)
            snprintf(problem, sizeof problem, "cannot write %s: %s", b->files.v[it->idx].out,
                     msg[0] ? msg : ic_status_str(s));
        finish_file(b, it->idx, s == IC_OK ? NULL : problem);
        ic_image_free(&it->out);
        cli_item_free(it);
    }
    return NULL;
}

/* The filter stage: one per filter worker (context). */
static void filter_stage(batch *b, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    item *it;
    while ((it = cli_queue_pop(&b->decoded)) != NULL) {
        if (g_interrupted) { /* drain without work: the file is "not processed" */
            ic_image_free(&it->img);
            cli_item_free(it);
            continue;
        }
        const double t = cli_now_ms();
        cli_err me;
        me.msg[0] = '\0';
        ic_status s = cli_check_memory(b->o, ctx, &it->img, k, "", &me) == CLI_EXIT_OK
                          ? IC_OK
                          : IC_ERR_TOO_LARGE;
        if (s == IC_OK)
            s = ic_image_create_type(&it->out, it->img.width, it->img.height, it->img.channels,
                                     it->img.layout, it->img.type);
        if (s == IC_OK)
            s = ic_convolve(ctx, &it->img, &it->out, k, p);
        add_time(b, &b->ms_filter, cli_now_ms() - t);
        ic_image_free(&it->img);
        if (s != IC_OK) {
            char problem[320];
            if (me.msg[0])
                snprintf(problem, sizeof problem, "%s", me.msg);
            else
                snprintf(problem, sizeof problem, "filter failed: %s",
                         ic_last_error()[0] ? ic_last_error() : ic_status_str(s));
            ic_image_free(&it->out);
            finish_file(b, it->idx, problem);
            cli_item_free(it);
            continue;
        }
        cli_queue_push(&b->filtered, it);
    }
    cli_queue_producer_done(&b->filtered);
}

#define BATCH_MAX_DECODERS 8
#define BATCH_MAX_ENCODERS 24

static int clamp_int(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ---- the GPU pipeline: JPEG files with a CUDA backend ------------------------------ */

/* readers (file bytes) -> one decode thread (batched nvJPEG decode into codec
 * slots) -> the filter on the main thread (device to device) -> encoder
 * threads (nvJPEG encode, or the CPU writer after one download, then the
 * atomic write). An image holds a codec slot from its decode to its write,
 * so at most GPU_SLOTS images are on the device. */
#define GPU_BATCH 16     /* files per batched decode */
#define GPU_SLOTS 48     /* images in flight on the device */
#define GPU_READERS 4    /* file reads in parallel */
#define GPU_RAW_AHEAD 32 /* files read ahead of the decoder */
#define GPU_WRITERS 16   /* atomic writes in parallel (each waits for an fsync) */

static int slot_take(batch *b)
{
    pthread_mutex_lock(&b->mu);
    while (b->nfree == 0)
        pthread_cond_wait(&b->slot_freed, &b->mu);
    const int s = b->free_slots[--b->nfree];
    pthread_mutex_unlock(&b->mu);
    return s;
}

static void slot_give(batch *b, int s)
{
    pthread_mutex_lock(&b->mu);
    b->free_slots[b->nfree++] = s;
    pthread_cond_signal(&b->slot_freed);
    pthread_mutex_unlock(&b->mu);
}

/* Ends an item of the GPU pipeline: its file reported (problem NULL: written;
 * counted = 0: interrupted, not reported), its slot and memory given back. */
static void gpu_item_end(batch *b, item *it, const char *problem, int counted)
{
    if (counted)
        finish_file(b, it->idx, problem);
    if (it->slot >= 0)
        slot_give(b, it->slot);
    free(it->bytes);
    ic_metadata_free(&it->meta);
    free(it);
}

static void *gpu_reader(void *arg)
{
    batch *b = arg;
    item *it;
    while ((it = next_file(b)) != NULL) {
        const bfile *f = &b->files.v[it->idx];
        char msg[256] = "";
        const double t = cli_now_ms();
        const ic_status s = cli_read_file(f->in, &it->bytes, &it->nbytes, msg, sizeof msg);
        add_time(b, &b->ms_read, cli_now_ms() - t);
        if (s != IC_OK) {
            gpu_item_end(b, it, msg[0] ? msg : ic_status_str(s), 1);
            continue;
        }
        cli_queue_push(&b->raw, it);
    }
    cli_queue_producer_done(&b->raw);
    return NULL;
}

static void *gpu_decoder(void *arg)
{
    batch *b = arg;
    ic_load_options lo = load_options_of(b->o);
    ic_metadata ask; /* any non-NULL pointer: res[i].metadata receives file i's */
    lo.metadata = &ask;
    item *its[GPU_BATCH];
    ic_bytes in[GPU_BATCH];
    int slots[GPU_BATCH];
    ic_image img[GPU_BATCH];
    ic_decode_result res[GPU_BATCH];
    int n;
    while ((n = cli_queue_pop_n(&b->raw, its, GPU_BATCH)) > 0) {
        if (g_interrupted) {
            for (int i = 0; i < n; i++)
                gpu_item_end(b, its[i], NULL, 0);
            continue;
        }
        for (int i = 0; i < n; i++) {
            its[i]->slot = slots[i] = slot_take(b);
            in[i].data = its[i]->bytes;
            in[i].size = its[i]->nbytes;
        }
        const double t = cli_now_ms();
        const ic_status st = ic_gpu_decode(b->codec, n, in, slots, &lo, img, res);
        add_time(b, &b->ms_decode, cli_now_ms() - t);
        for (int i = 0; i < n; i++) {
            item *it = its[i];
            free(it->bytes);
            it->bytes = NULL;
            it->meta = res[i].metadata; /* freed with the item */
            if (st != IC_OK || res[i].status != IC_OK) {
                char problem[320];
                snprintf(problem, sizeof problem, "%s",
                         res[i].error[0] ? res[i].error : ic_status_str(res[i].status));
                gpu_item_end(b, it, problem, 1);
                continue;
            }
            it->img = img[i];
            b->files.v[it->idx].bytes = ic_image_row_bytes(&img[i]) * (size_t)img[i].height *
                                        (size_t)(img[i].layout == IC_SOA ? img[i].channels : 1);
            cli_queue_push(&b->decoded, it);
        }
    }
    cli_queue_producer_done(&b->decoded);
    return NULL;
}

static void gpu_filter_stage(batch *b, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    item *it;
    while ((it = cli_queue_pop(&b->decoded)) != NULL) {
        if (g_interrupted) {
            gpu_item_end(b, it, NULL, 0);
            continue;
        }
        char msg[256] = "";
        const double t = cli_now_ms();
        cli_err me; /* --max-memory, as for host images */
        me.msg[0] = '\0';
        ic_status s = IC_OK;
        if (cli_check_memory(b->o, ctx, &it->img, k, "", &me) != CLI_EXIT_OK) {
            s = IC_ERR_TOO_LARGE;
            snprintf(msg, sizeof msg, "%s", me.msg);
        }
        if (s == IC_OK)
            s = cli_noted(ic_gpu_codec_output(b->codec, it->slot, &it->img, &it->out), msg,
                          sizeof msg);
        if (s == IC_OK && (s = ic_convolve(ctx, &it->img, &it->out, k, p)) != IC_OK)
            snprintf(msg, sizeof msg, "%s", ic_last_error());
        add_time(b, &b->ms_filter, cli_now_ms() - t);
        if (s != IC_OK) {
            char problem[320];
            if (me.msg[0]) /* the memory limit: the host pipeline's message */
                snprintf(problem, sizeof problem, "%s", me.msg);
            else
                snprintf(problem, sizeof problem, "filter failed: %s",
                         msg[0] ? msg : ic_status_str(s));
            gpu_item_end(b, it, problem, 1);
            continue;
        }
        cli_queue_push(&b->filtered, it);
    }
    cli_queue_producer_done(&b->filtered);
}

static void *gpu_encoder(void *arg)
{
    batch *b = arg;
    ic_save_options so = save_options_of(b->o);
    item *it;
    while ((it = cli_queue_pop(&b->filtered)) != NULL) {
        if (g_interrupted) { /* writes under way finish (atomically); no new ones */
            gpu_item_end(b, it, NULL, 0);
            continue;
        }
        const char *out = b->files.v[it->idx].out;
        char msg[256] = "";
        const double t = cli_now_ms();
        so.metadata = &it->meta;
        const ic_status s = cli_noted(
            ic_gpu_encode(b->codec, it->slot, &it->out, out, &so, &it->enc), msg, sizeof msg);
        add_time(b, &b->ms_encode, cli_now_ms() - t);
        if (s != IC_OK) {
            char problem[320];
            snprintf(problem, sizeof problem, "cannot write %s: %s", out,
                     msg[0] ? msg : ic_status_str(s));
            gpu_item_end(b, it, problem, 1);
            continue;
        }
        cli_queue_push(&b->encoded, it); /* the bytes stay in the slot until written */
    }
    cli_queue_producer_done(&b->encoded);
    return NULL;
}

/* The atomic writes (temporary file, fsync, rename): many at once, since a
 * sync waits for the disk rather than for a core. */
static void *gpu_writer(void *arg)
{
    batch *b = arg;
    item *it;
    while ((it = cli_queue_pop(&b->encoded)) != NULL) {
        const char *out = b->files.v[it->idx].out;
        char msg[256] = "";
        const double t = cli_now_ms();
        const ic_status s =
            cli_noted(ic_save_bytes(out, it->enc.data, it->enc.size), msg, sizeof msg);
        add_time(b, &b->ms_write, cli_now_ms() - t);
        if (s == IC_OK)
            cli_depth_notice(out, out, &it->out);
        char problem[320];
        if (s != IC_OK)
            snprintf(problem, sizeof problem, "cannot write %s: %s", out,
                     msg[0] ? msg : ic_status_str(s));
        gpu_item_end(b, it, s == IC_OK ? NULL : problem, 1);
    }
    return NULL;
}

/* Runs the GPU pipeline to the end; 0, or -1 when no thread could start
 * (nothing was processed then). */
static int run_gpu_pipeline(batch *b, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    int jpeg_out = 0;
    for (int i = 0; i < b->files.n; i++)
        jpeg_out += b->files.v[i].out && ic_format_from_path(b->files.v[i].out) == IC_FMT_JPEG;
    /* nvJPEG encodes 4 at once; a CPU writer (PNG, ...) wants the cores. */
    const int nenc =
        2 * jpeg_out >= b->files.n ? 4 : clamp_int(online_cpus() * 3 / 4, 2, BATCH_MAX_ENCODERS);
    b->encoded.producers = nenc; /* no thread runs yet */
    b->free_slots = malloc(GPU_SLOTS * sizeof *b->free_slots);
    if (!b->free_slots) {
        g_interrupted = 1; /* reported as "interrupted: N of M files not processed" */
        return -1;
    }
    for (int i = 0; i < GPU_SLOTS; i++)
        b->free_slots[b->nfree++] = i;
    pthread_t rd[GPU_READERS], dec, enc[BATCH_MAX_ENCODERS], wr[GPU_WRITERS];
    int nrd = 0, ne = 0, nw = 0, dec_started = 0;
    for (; nrd < GPU_READERS; nrd++)
        if (pthread_create(&rd[nrd], NULL, gpu_reader, b) != 0)
            break;
    for (int i = nrd; i < GPU_READERS; i++)
        cli_queue_producer_done(&b->raw);
    dec_started = nrd > 0 && pthread_create(&dec, NULL, gpu_decoder, b) == 0;
    if (!dec_started)
        cli_queue_producer_done(&b->decoded);
    for (; nw < GPU_WRITERS; nw++)
        if (pthread_create(&wr[nw], NULL, gpu_writer, b) != 0)
            break;
    for (; ne < nenc && nw > 0; ne++)
        if (pthread_create(&enc[ne], NULL, gpu_encoder, b) != 0)
            break;
    for (int i = ne; i < nenc; i++)
        cli_queue_producer_done(&b->encoded);
    if (nrd == 0 || !dec_started || ne == 0 || nw == 0)
        g_interrupted = 1; /* nothing can flow: stop at once, then report */
    if (!dec_started) {    /* nobody would empty the file queue */
        item *it;
        while ((it = cli_queue_pop(&b->raw)) != NULL)
            gpu_item_end(b, it, NULL, 0);
    }
    if (ne == 0) { /* nobody would empty the second queue */
        item *it;
        while ((it = cli_queue_pop(&b->decoded)) != NULL)
            gpu_item_end(b, it, "cannot start an encoder thread", 1);
        cli_queue_producer_done(&b->filtered);
    } else {
        gpu_filter_stage(b, ctx, k, p);
    }
    for (int i = 0; i < nrd; i++)
        pthread_join(rd[i], NULL);
    if (dec_started)
        pthread_join(dec, NULL);
    for (int i = 0; i < ne; i++)
        pthread_join(enc[i], NULL);
    for (int i = 0; i < nw; i++)
        pthread_join(wr[i], NULL);
    free(b->free_slots);
    b->free_slots = NULL;
    return nrd == 0 || !dec_started || ne == 0 || nw == 0 ? -1 : 0;
}

/* The GPU pipeline is for JPEG inputs (by name: at least half of them) with
 * a one-device CUDA context; its codec, or NULL for the host pipeline. An
 * error other than "not a CUDA context" is returned as a status. */
static ic_status open_gpu_codec(const cli_options *o, const blist *files, ic_context *ctx,
                                int nwork, ic_gpu_codec **codec, char *msg, size_t msglen)
{
    *codec = NULL;
    if (o->cpu_codec || nwork != 1 || !ic_format_supported(IC_FMT_JPEG) || files->n == 0)
        return IC_OK;
    int jpeg = 0;
    for (int i = 0; i < files->n; i++)
        jpeg += ic_format_from_path(files->v[i].in) == IC_FMT_JPEG;
    if (2 * jpeg < files->n)
        return IC_OK;
    const ic_status s = cli_noted(ic_gpu_codec_create(codec, ctx, GPU_SLOTS), msg, msglen);
    return s == IC_ERR_UNSUPPORTED ? IC_OK : s;
}

static void print_summary(const batch *b, const char *backend, double ms)
{
    const double s = ms / 1e3;
    const double ips = s > 0 ? b->written / s : 0, mbs = s > 0 ? b->bytes / 1e6 / s : 0;
    if (b->o->json) {
        printf("{\"files\": %d, \"written\": %d, \"skipped\": %d, \"failed\": %d, "
               "\"interrupted\": %s, \"backend\": ",
               b->files.n, b->written, b->skipped, b->failed, g_interrupted ? "true" : "false");
        cli_json_string(stdout, backend, (size_t)-1);
        printf(", \"codec\": ");
        cli_json_string(stdout, b->codec ? ic_gpu_codec_engine(b->codec) : "cpu", (size_t)-1);
        printf(", \"seconds\": %.3f, \"images_per_s\": %.2f, \"mb_per_s\": %.2f, "
               "\"stage_ms\": {\"read\": %.1f, \"decode\": %.1f, \"filter\": %.1f, "
               "\"encode\": %.1f, \"write\": %.1f}, \"errors\": [",
               s, ips, mbs, b->ms_read, b->ms_decode, b->ms_filter, b->ms_encode, b->ms_write);
        cli_json_pairs(b->errors, b->nerr, "error");
        printf("], \"skipped_files\": [");
        cli_json_pairs(b->skips, b->nskip, "reason");
        printf("]}\n");
        return;
    }
    if (b->o->quiet)
        return;
    const double busy = b->ms_read + b->ms_decode + b->ms_filter + b->ms_encode + b->ms_write;
    const double pct = busy > 0 ? 100 / busy : 0;
    printf("imgconv: %d files: %d written, %d skipped, %d failed%s in %.2f s (%.1f images/s, "
           "%.1f MB/s; busy time: read %.0f%%, decode %.0f%%, filter %.0f%%, encode %.0f%%, "
           "write %.0f%%; backend %s, codec %s)\n",
           b->files.n, b->written, b->skipped, b->failed, g_interrupted ? ", interrupted" : "", s,
           ips, mbs, pct * b->ms_read, pct * b->ms_decode, pct * b->ms_filter, pct * b->ms_encode,
           pct * b->ms_write, backend, b->codec ? ic_gpu_codec_engine(b->codec) : "cpu");
}

/* OUTDIR exists (made when missing) and can be written into. */
static int check_outdir(const char *dir, cli_err *e)
{
    struct stat st;
    if (stat(dir, &st) != 0) {
        if (errno != ENOENT || mkdir(dir, 0777) != 0)
            return cli_fail(e, CLI_EXIT_OUTPUT, dir, "cannot use as output directory: %s",
                            strerror(errno));
        return CLI_EXIT_OK;
    }
    if (!S_ISDIR(st.st_mode))
        return cli_fail(e, CLI_EXIT_OUTPUT, dir, "is not a directory");
    if (access(dir, W_OK | X_OK) != 0)
        return cli_fail(e, CLI_EXIT_OUTPUT, dir, "cannot write into directory: %s",
                        strerror(errno));
    return CLI_EXIT_OK;
}

/* Options of batch filter worker i: --devices spreads whole images over the
 * listed devices, one one-device context per entry. */
static ic_context_options worker_options(const cli_options *o, int i)
{
    ic_context_options c = o->ctx;
    if (o->ctx.n_devices > 0) {
        c.device = o->ctx.devices[i];
        c.n_devices = 0;
    }
    return c;
}

/* One filter worker of a batch (workers 1.. run on their own threads). */
typedef struct fworker {
    batch *b;
    ic_context *ctx;
    const ic_kernel *k;
    const ic_params *p;
} fworker;

static void *filter_worker(void *arg)
{
    fworker *w = arg;
    filter_stage(w->b, w->ctx, w->k, w->p);
    return NULL;
}

static void free_contexts(ic_context **ctx, int n)
{
    for (int i = 0; i < n; i++)
        ic_context_free(ctx[i]);
}

int cli_run_batch(const cli_options *o, cli_err *e)
{
    int code = check_outdir(o->outdir, e);
    if (code != CLI_EXIT_OK)
        return code;
    ic_kernel k;
    ic_params p;
    ic_context *ctxs[IC_MAX_DEVICES];
    const int nwork = o->ctx.n_devices > 0 ? o->ctx.n_devices : 1;
    ic_context_options c0 = worker_options(o, 0);
    if ((code = cli_open_filter(o, &c0, &k, &p, &ctxs[0], e)) != CLI_EXIT_OK)
        return code;
    for (int i = 1; i < nwork; i++) {
        char msg[256] = "";
        const ic_context_options ci = worker_options(o, i);
        const ic_status s =
            cli_noted(ic_context_create(&ctxs[i], o->backend, &ci), msg, sizeof msg);
        if (s != IC_OK) {
            free_contexts(ctxs, i);
            ic_kernel_free(&k);
            return cli_fail(e, cli_exit_for_backend(s), NULL, "%s",
                            msg[0] ? msg : ic_status_str(s));
        }
    }
    ic_context *ctx = ctxs[0];

    batch b;
    memset(&b, 0, sizeof b);
    b.o = o;
    pthread_mutex_init(&b.mu, NULL);
    int rc = 0;
    for (int i = 0; i < o->ninputs && rc == 0; i++)
        rc = cli_files_expand(&b.files, o->inputs[i]);
    if (rc == 0)
        rc = cli_files_plan(&b.files, o);
    const int cpus = online_cpus();
    /* Encoding (PNG deflate, JPEG) costs about 4x decoding: most threads encode. */
    const int ndec = clamp_int(cpus / 4, 2, BATCH_MAX_DECODERS);
    const int nenc = clamp_int(cpus * 3 / 4, 2, BATCH_MAX_ENCODERS);
    /* JPEG inputs with a CUDA backend: the GPU pipeline and its codec. */
    char cmsg[256] = "";
    const ic_status cs =
        rc == 0 ? open_gpu_codec(o, &b.files, ctx, nwork, &b.codec, cmsg, sizeof cmsg) : IC_OK;
    if (cs != IC_OK) {
        cli_files_free(&b.files);
        free_contexts(ctxs, nwork);
        ic_kernel_free(&k);
        pthread_mutex_destroy(&b.mu);
        return cli_fail(e, cli_exit_for_backend(cs), NULL, "GPU codec: %s",
                        cmsg[0] ? cmsg : ic_status_str(cs));
    }
    /* Small queues: images in flight are at most the threads' plus 4 + 4
     * (GPU pipeline: GPU_RAW_AHEAD files read ahead, GPU_SLOTS images). */
    if (rc == 0 && b.codec &&
        (cli_queue_init(&b.raw, GPU_RAW_AHEAD, GPU_READERS) ||
         cli_queue_init(&b.decoded, 2 * GPU_BATCH, 1) || cli_queue_init(&b.filtered, 8, 1) ||
         cli_queue_init(&b.encoded, GPU_SLOTS, BATCH_MAX_ENCODERS)))
        rc = -1;
    if (rc == 0 && !b.codec &&
        (cli_queue_init(&b.decoded, 4, ndec) || cli_queue_init(&b.filtered, 4, nwork)))
        rc = -1;
    if (rc != 0 || b.files.n == 0) {
        if (b.raw.v)
            cli_queue_destroy(&b.raw);
        if (b.decoded.v)
            cli_queue_destroy(&b.decoded);
        if (b.filtered.v)
            cli_queue_destroy(&b.filtered);
        if (b.encoded.v)
            cli_queue_destroy(&b.encoded);
        ic_gpu_codec_free(b.codec);
        cli_files_free(&b.files);
        free_contexts(ctxs, nwork);
        ic_kernel_free(&k);
        pthread_mutex_destroy(&b.mu);
        return rc != 0 ? cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory")
                       : cli_fail(e, CLI_EXIT_INPUT, NULL, "no input files");
    }
    pthread_cond_init(&b.slot_freed, NULL);
    b.bar.on = !o->quiet && isatty(STDERR_FILENO);
    g_interrupted = 0;
    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);

    b.bar.t0 = cli_now_ms();
    if (b.codec) {
        (void)run_gpu_pipeline(&b, ctx, &k, &p);
    } else {
        pthread_t dec[BATCH_MAX_DECODERS], enc[BATCH_MAX_ENCODERS];
        int started_dec = 0, started_enc = 0;
        for (; started_dec < ndec; started_dec++)
            if (pthread_create(&dec[started_dec], NULL, decoder, &b) != 0)
                break;
        for (; started_enc < nenc; started_enc++)
            if (pthread_create(&enc[started_enc], NULL, encoder, &b) != 0)
                break;
        /* Producers that never started are done already. */
        for (int i = started_dec; i < ndec; i++)
            cli_queue_producer_done(&b.decoded);
        if (started_dec == 0 || started_enc == 0)
            g_interrupted = 1;  /* nothing can flow: stop at once, then report */
        if (started_enc == 0) { /* nobody would empty the second queue */
            item *it;
            while ((it = cli_queue_pop(&b.decoded)) != NULL) {
                finish_file(&b, it->idx, "cannot start an encoder thread");
                cli_item_free(it);
            }
        } else {
            /* Worker 0 on this thread; a worker thread that cannot start is done at
             * once (the others take its images). */
            fworker fw[IC_MAX_DEVICES];
            pthread_t wth[IC_MAX_DEVICES];
            int wstarted[IC_MAX_DEVICES] = {0};
            for (int i = 0; i < nwork; i++) {
                fw[i].b = &b;
                fw[i].ctx = ctxs[i];
                fw[i].k = &k;
                fw[i].p = &p;
                if (i > 0) {
                    wstarted[i] = pthread_create(&wth[i], NULL, filter_worker, &fw[i]) == 0;
                    if (!wstarted[i])
                        cli_queue_producer_done(&b.filtered);
                }
            }
            filter_stage(&b, ctxs[0], &k, &p);
            for (int i = 1; i < nwork; i++)
                if (wstarted[i])
                    pthread_join(wth[i], NULL);
        }
        for (int i = 0; i < started_dec; i++)
            pthread_join(dec[i], NULL);
        for (int i = 0; i < started_enc; i++)
            pthread_join(enc[i], NULL);
    }
    const double ms = cli_now_ms() - b.bar.t0;
    sigaction(SIGINT, &old_int, NULL);
    pthread_mutex_lock(&b.mu);
    cli_progress_draw(&b.bar, b.done, b.files.n, b.bytes, 1);
    cli_progress_clear(&b.bar);
    pthread_mutex_unlock(&b.mu);

    print_summary(&b, ic_context_backend(ctx), ms);
    const int interrupted = g_interrupted, failed = b.failed, total = b.files.n;
    const int not_done = total - b.done;
    for (int i = 0; i < b.nerr; i++)
        free(b.errors[i]);
    free(b.errors);
    for (int i = 0; i < b.nskip; i++)
        free(b.skips[i]);
    free(b.skips);
    if (b.raw.v)
        cli_queue_destroy(&b.raw);
    if (b.encoded.v)
        cli_queue_destroy(&b.encoded);
    cli_queue_destroy(&b.decoded);
    cli_queue_destroy(&b.filtered);
    ic_gpu_codec_free(b.codec);
    pthread_cond_destroy(&b.slot_freed);
    pthread_mutex_destroy(&b.mu);
    cli_files_free(&b.files);
    free_contexts(ctxs, nwork);
    ic_kernel_free(&k);
    if (interrupted)
        return cli_fail(e, CLI_EXIT_INPUT, NULL, "interrupted: %d of %d files not processed",
                        not_done, total);
    if (failed)
        return cli_fail(e, CLI_EXIT_INPUT, NULL, "%d of %d files failed", failed, total);
    return CLI_EXIT_OK;
}
