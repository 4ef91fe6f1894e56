/*
 * cli_batch.c - batch mode of imgconv: the whole job fast, not only
 * the kernel (seed 004's closing experiment on transfers, applied to folders
 * of photographs). Its parts live beside it: the list of files (cli_files.c),
 * the bounded queues and the board their workers wait on (cli_queue.c), the
 * progress bar (cli_progress.c), the --json writer (cli_json.c); the raw frame
 * stream is cli_stream.c.
 *
 * Batch: inputs (files, directories, globs) -> one worker per core, each
 * taking the most useful job (save a filtered image if one waits, else decode
 * the next file while at most workers + 8 host images are in memory), started
 * while the filter's context is still being made -> the queue of a device
 * pipeline with room (one pipeline, or with --devices one per listed device,
 * each with its own one-device contexts) -> its filter context (GPU
 * backend; a CPU backend has up to 8, each on a share of the cores, side by
 * side) -> a queue -> the same workers, which encode and save. With a CUDA
 * backend and JPEG inputs a GPU side joins each pipeline: four filter
 * contexts on its device, the workers allowed to run ahead (up to 4 GiB of
 * host images), and decode threads per device (GPU_DECODERS), the first of
 * which opens that device's GPU codec while the workers already decode. As soon
 * as the codec's encoder exists, the workers' images bound for a JPEG take
 * the device route (filtered host to device into a codec slot, encoded by
 * nvJPEG), the others the host route (host to host, CPU encoder); once its
 * decoders exist, the threads decode batches of files with nvJPEG, each on a
 * decoder of its own once the codec made it (one alone left the engines idle
 * while its next batch was read and checked), taking
 * them from the same list as the CPU workers; its images stay on the device
 * (filtered device to device, encoded by GPU encoder threads, written by
 * writer threads). Output names are the input base names in OUTDIR (the extension
 * replaced when --format is given). A file that fails at any stage is
 * reported on one line and skipped; the others go on. Entries of a folder
 * that are not images by name (or sub-folders), and with --skip-existing the
 * inputs whose output exists, are skipped with a line saying why and counted
 * apart; dotfiles are ignored. SIGINT stops decoding new files and lets the
 * pipeline drain; ic_image_save writes through a temporary file and a rename,
 * so no partial file is left.
 */
#include "cli_batch.h"

#include <errno.h>
#ifdef __GLIBC__
#include <malloc.h>
#endif
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_auto.h"
#include "cli_files.h"
#include "cli_json.h"
#include "cli_progress.h"
#include "cli_queue.h"
#include "cli_trace.h"

/* ---- interruption ---------------------------------------------------------- */

/* Set by SIGINT (and by a run that cannot go on), read by every thread of
 * the run: a lock-free atomic, safe in a signal handler and between threads
 * (a volatile sig_atomic_t is only the former: ThreadSanitizer reported the
 * race). */
static atomic_int g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    atomic_store(&g_interrupted, 1);
}

/* ---- the batch run ----------------------------------------------------------- */

/* Who decodes the files of a CUDA batch of JPEGs (IC_BATCH_DECODE, for tests
 * and benchmarks; docs/cli.md#batch-and-streams). */
enum {
    DEC_HANDOVER = 0, /* the CPU workers until nvJPEG is open, then nvJPEG alone (default) */
    DEC_BOTH,         /* the CPU workers from the start, nvJPEG once it is open */
    DEC_AFTER,        /* both, the CPU workers starting once nvJPEG is open (or failed) */
    DEC_GPU,          /* nvJPEG only (CPU workers only when nvJPEG is unavailable) */
    DEC_CPU,          /* no GPU codec: every file on the CPU workers, the host route */
    DEC_CPU_DEV       /* every file on the CPU workers, each waiting for the device route
                     (nvJPEG encodes only; the host route when it cannot) */
};

typedef cli_trace_ev trace_ev;

/* The thread's lane in the trace: LANE_* + its number among its kind. */
enum { LANE_FILTER = 0, LANE_WORKER = 100, LANE_GPU = 200, LANE_GPU_ENC = 300, LANE_WRITER = 400 };
static _Thread_local int t_lane;

/* The state of the GPU side of a CUDA batch of JPEGs. */
enum { GPU_NONE = 0, GPU_OPENING, GPU_READY, GPU_FAILED };

#define GPU_BATCH 16   /* files per batched decode */
#define GPU_SLOTS 256  /* images in flight on a device (BATCH_DEV_BYTES too) */
#define GPU_ENCODERS 8 /* nvJPEG encodes at once (its encoder lanes; IC_BATCH_GPU_ENCODERS) */
#define GPU_MAX_ENCODERS 16
#define GPU_DECODERS 2 /* decode threads of a device (IC_BATCH_GPU_DECODERS) */
#define GPU_MAX_DECODERS 4
#define GPU_LANE_FILES 1500 /* files left when the first decoder opens, for the others */
#define GPU_MIN_FILES 64    /* fewer JPEGs: no GPU side (handover, both) */
#define BATCH_WRITERS 16 /* atomic writes in parallel a device pipeline (each waits for an fsync) */
#define BATCH_MAX_WRITERS 64
#define GPU_FILTERS 4                    /* filter contexts on the device with the GPU side */
#define BATCH_DEV_FILTERS 16             /* filter contexts of one device at most (CPU, GPU) */
#define BATCH_MAX_DEVICES IC_MAX_DEVICES /* device pipelines at most (--devices) */
#define BATCH_MAX_FILTERS (BATCH_MAX_DEVICES * BATCH_DEV_FILTERS)
#define BATCH_MAX_HELD 512 /* host images in memory at most with the GPU side ... */
#define BATCH_HELD_BYTES ((size_t)4096 << 20) /* ... while their samples take less */

typedef struct batch batch;

/* One device's pipeline: with --devices each listed device has its own (a
 * device listed twice: two), without it there is one. Its filter contexts
 * take the images handed to it; with the GPU side it has its own GPU codec
 * (slots, nvJPEG decoders and encoder), decode thread and encoders, so that
 * no device waits on another's lock. */
typedef struct bdev {
    batch *b;
    int nth;         /* its number among the batch's devices */
    int ordinal;     /* the CUDA device it filters on (what --device or --devices names) */
    queue decoded;   /* images for its filters: the workers' host images, its nvJPEG's */
    queue gfiltered; /* GPU side: its filtered device images waiting for its GPU encoders */
    ic_context *ctx[BATCH_DEV_FILTERS]; /* its filter contexts (ctx[0] first made) */
    int nctx;
    ic_gpu_codec *codec; /* GPU side: set once open (under mu); NULL before and without */
    char engine[320];    /* its codec's engine, or "cpu (why)" */
    pthread_t gth[GPU_MAX_DECODERS], genc[GPU_MAX_ENCODERS];
    int gstarted, ng;   /* its decode threads started, its GPU encoder threads */
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t slot_freed;
    int gpu_state;          /* GPU_* */
    int gfirst;             /* decode threads that began: the first opens the codec */
    int glive;              /* decode threads not done yet (the last ends the decoded queue) */
    int route_open;         /* the device route is open (codec slots; nvJPEG open or opening) */
    int *free_slots, nfree; /* codec slots not in use */
    size_t *slot_bytes;     /* ... the device-route image bytes each one holds */
    size_t dev_held;        /* ... their sum (at most BATCH_DEV_BYTES) */
    int filtered;           /* images its filters took (host and device ones) */
    int to_device;          /* host images filtered into its codec slots (device route) */
    int by_gpu;             /* files its nvJPEG decoded */
    int by_thread[GPU_MAX_DECODERS]; /* ... by each decode thread (in the order they began) */
    int gpu_encoded;                 /* images its GPU encoders encoded */
    double ms_gpu_open, ms_gpu_enc;
} bdev;

struct batch {
    const cli_options *o;
    blist files;
    bdev dev[BATCH_MAX_DEVICES]; /* the device pipelines */
    int ndev;
    queue filtered;     /* filtered host images waiting for a worker to encode and save them */
    queue encoded;      /* bytes waiting to be written */
    cli_board board;    /* the workers sleep here when no queue has work for them */
    int decode_mode;    /* DEC_* */
    int nenc;           /* GPU encoder threads of each device (gpu_encoders) */
    int ndec;           /* GPU decode threads of each device (gpu_decoders) */
    int ndec_asked;     /* ... set by IC_BATCH_GPU_DECODERS: their decoders whatever is left */
    pthread_mutex_t mu; /* guards everything below */
    int gpu_opening, gpu_ready; /* devices whose GPU side is opening, is ready (GPU_*) */
    int gpu_hw;                 /* of the ready ones, those on the hardware decoder */
    int next_dev;               /* where the hand-out of host images starts next */
    int next, done, written, failed, skipped;
    int unwritten;         /* of the failed: those whose output could not be written */
    int nworkers;          /* the CPU workers */
    int inflight, budget;  /* host images in memory, and as many as there may always be */
    int max_inflight;      /* ... and the most there may be while held < held_cap */
    size_t held, held_cap; /* the samples of those in memory (bytes) */
    int by_cpu;            /* files decoded by the CPU workers */
    int cpu_decoding;      /* workers decoding a file now */
    int cpu_share;         /* ... at most, once nvJPEG's hardware decoder is open (handover) */
    double bytes;          /* decoded sample bytes of the files written */
    double ms_read, ms_decode, ms_filter, ms_encode, ms_write;
    double ms_upload, ms_download; /* the filter's copies (ic_context_timing) */
    /* time threads waited for work: workers (nothing to decode or encode),
     * filters (no decoded image, or no codec slot), GPU reader (no slot),
     * GPU encoders and writers (nothing to encode or write) */
    double wait_workers, wait_filter, wait_gpu, wait_gpu_enc, wait_writers;
    atomic_int lanes[5]; /* threads of each kind started so far */
    double ms_cleanup;   /* the GPU codec and the contexts freed, after the run */
    cli_progress bar;    /* on stderr */
    trace_ev *trace;     /* --trace, IC_BATCH_TRACE: the stages' intervals (add_time) */
    int ntrace, trace_cap;
    long trace_dropped; /* intervals past trace_cap, not recorded */
    char **errors;      /* "FILE\tproblem" for --json */
    int nerr;
    char **skips; /* "FILE\twhy" for --json */
    int nskip;
};

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

/* Adds the time since t0 (cli_now_ms) to a stage's busy time and, with
 * IC_BATCH_TRACE, records the interval: stage d (a worker's decode), r and g
 * (the GPU side's read and nvJPEG decode of a batch), f (host route filter),
 * F (device route or device image filter), e (CPU encode), n (GPU side
 * encode), w (write); stage 0 with t0 = now marks a moment (mark()). */
static void add_span(batch *b, double *acc, double t0, double t1, char stage, int idx)
{
    pthread_mutex_lock(&b->mu);
    if (acc)
        *acc += t1 - t0;
    if (b->trace && b->ntrace < b->trace_cap) {
        trace_ev *ev = &b->trace[b->ntrace++];
        ev->t0 = t0 - b->bar.t0;
        ev->ms = (float)(t1 - t0);
        ev->idx = idx;
        ev->lane = (short)t_lane;
        ev->stage = stage;
    } else if (b->trace) {
        b->trace_dropped++;
    }
    pthread_mutex_unlock(&b->mu);
}

/* add_span up to now, for file idx (-1: no file). */
static void add_time_of(batch *b, double *acc, double t0, char stage, int idx)
{
    add_span(b, acc, t0, cli_now_ms(), stage, idx);
}

static void add_time(batch *b, double *acc, double t0, char stage)
{
    add_time_of(b, acc, t0, stage, -1);
}

/* A wait since t0 (no trace interval: the gaps between a lane's spans). */
static void add_wait(batch *b, double *acc, double t0)
{
    const double now = cli_now_ms();
    pthread_mutex_lock(&b->mu);
    *acc += now - t0;
    pthread_mutex_unlock(&b->mu);
}

/* Sets the calling thread's lane: kind (LANE_*) plus its number among its
 * kind (slot: 0 workers, 1 GPU reader, 2 GPU encoders, 3 writers, 4 filters). */
static void lane_enter(batch *b, int kind, int slot)
{
    t_lane = kind + atomic_fetch_add(&b->lanes[slot], 1);
}

/* Marks a moment in the trace: C (the filter contexts exist), S (the GPU
 * codec's slots: the device route), E (its nvJPEG encoder is open), D (its
 * decoders are open, failed or not needed). */
static void mark(batch *b, char what)
{
    add_time(b, NULL, cli_now_ms(), what);
}

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

/* What --channels, --layout and --max-pixels ask of every load. */
static ic_load_options load_options_of(const cli_options *o)
{
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.channels = o->channels;
    lo.layout = o->layout;
    lo.max_pixels = o->max_pixels;
    lo.max_memory = o->max_memory;
    lo.accept_damaged = o->accept_damaged;
    /* One thread per decode, as save_options_of leaves every encode on one:
     * the workers already keep one image per core. */
    lo.threads = 1;
    return lo;
}

static void slot_give(bdev *d, int s)
{
    pthread_mutex_lock(&d->mu);
    d->free_slots[d->nfree++] = s;
    d->dev_held -= d->slot_bytes[s];
    d->slot_bytes[s] = 0;
    pthread_cond_broadcast(&d->slot_freed);
    pthread_mutex_unlock(&d->mu);
}

/* Ends an item: its file reported (problem NULL: written; counted = 0:
 * interrupted, not reported), its slot (GPU side) or its place in the budget
 * (host images) and its memory given back. A slot's images belong to the
 * codec; host images are freed. */
static void item_end(batch *b, item *it, const char *problem, int counted)
{
    if (counted)
        finish_file(b, it->idx, problem);
    const int budgeted = it->budgeted;
    const size_t held = it->held;
    free(it->bytes);
    it->bytes = NULL;
    if (it->slot >= 0) {
        slot_give(&b->dev[it->dev], it->slot);
        ic_metadata_free(&it->meta);
        free(it);
    } else {
        cli_item_free(it);
    }
    if (budgeted) {
        pthread_mutex_lock(&b->mu);
        b->inflight--;
        b->held -= held;
        pthread_mutex_unlock(&b->mu);
        cli_board_poke(&b->board); /* a worker may decode again */
    }
}

/* The writers (below) take items of both sides. */
static void *writer(void *arg);

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
        it->dev = 0;
        return it;
    }
}

static size_t sample_bytes(const ic_image *img)
{
    return ic_image_row_bytes(img) * (size_t)img->height *
           (size_t)(img->layout == IC_SOA ? img->channels : 1);
}

/* ---- the workers: decode on the CPU, encode and save on the CPU ------------------- */

/* The device pipeline a worker's decoded image goes to: the one with the
 * fewest images waiting for its filters, ties taken in turn, so that a
 * device with room gets it and a busy one is not waited for. */
static int hand_out(batch *b)
{
    pthread_mutex_lock(&b->mu);
    const int first = b->next_dev;
    b->next_dev = (b->next_dev + 1) % b->ndev;
    pthread_mutex_unlock(&b->mu);
    int best = first, least = -1;
    for (int k = 0; k < b->ndev; k++) {
        const int i = (first + k) % b->ndev;
        const int n = cli_queue_count(&b->dev[i].decoded);
        if (least < 0 || n < least) {
            least = n;
            best = i;
        }
    }
    return best;
}

/* A worker's decode: 1 when a file was taken (decoded and queued, or
 * reported), 0 when it should wait (the budget of host images in memory is
 * spent, or the GPU decoder is still opening and the mode waits for it), -1
 * when no file is left for the CPU. */
static int try_decode(batch *b, ic_load_options *lo)
{
    pthread_mutex_lock(&b->mu);
    int r = 1;
    if (g_interrupted || b->next >= b->files.n)
        r = -1;
    else if (b->gpu_opening > 0 && (b->decode_mode == DEC_AFTER || b->decode_mode == DEC_GPU))
        r = 0;
    else if ((b->gpu_ready > 0 && b->decode_mode == DEC_GPU) ||
             (b->gpu_hw > 0 && b->decode_mode == DEC_HANDOVER && b->cpu_decoding >= b->cpu_share))
        r = -1; /* nvJPEG takes the files (handing over: the checks beside it want the cores) */
    else if (b->inflight >= b->budget && (b->inflight >= b->max_inflight || b->held >= b->held_cap))
        r = 0;
    else {
        b->inflight++;
        b->cpu_decoding++;
    }
    pthread_mutex_unlock(&b->mu);
    if (r <= 0)
        return r;
    item *it = next_file(b);
    if (!it) {
        pthread_mutex_lock(&b->mu);
        b->inflight--;
        b->cpu_decoding--;
        pthread_mutex_unlock(&b->mu);
        cli_board_poke(&b->board);
        return -1;
    }
    it->budgeted = 1;
    bfile *f = &b->files.v[it->idx];
    char msg[256] = "";
    double t = cli_now_ms();
    lo->metadata = &it->meta;
    int damaged = 0;
    lo->damaged = &damaged;
    /* read, then decode, so that --time and --trace tell the two apart */
    ic_status s =
        cli_read_file(f->in, b->o->max_memory, lo, &it->bytes, &it->nbytes, msg, sizeof msg);
    add_time_of(b, &b->ms_read, t, 'i', it->idx);
    if (s == IC_OK) {
        t = cli_now_ms();
        s = cli_noted(ic_image_decode(&it->img, it->bytes, it->nbytes, lo), msg, sizeof msg);
        add_time_of(b, &b->ms_decode, t, 'd', it->idx);
    }
    free(it->bytes);
    it->bytes = NULL;
    pthread_mutex_lock(&b->mu);
    b->cpu_decoding--;
    pthread_mutex_unlock(&b->mu);
    if (damaged)
        cli_damaged_notice(f->in);
    if (s != IC_OK) {
        char problem[320];
        snprintf(problem, sizeof problem, "%s", msg[0] ? msg : ic_status_str(s));
        item_end(b, it, problem, 1);
        return 1;
    }
    f->bytes = it->held = sample_bytes(&it->img);
    pthread_mutex_lock(&b->mu);
    b->by_cpu++;
    b->held += it->held;
    pthread_mutex_unlock(&b->mu);
    it->dev = hand_out(b);
    cli_queue_push(&b->dev[it->dev].decoded, it);
    return 1;
}

/* Gives back an item's place in the budget of host images (its images are
 * freed, or about to be). */
static void unbudget(batch *b, item *it)
{
    if (!it->budgeted)
        return;
    it->budgeted = 0;
    pthread_mutex_lock(&b->mu);
    b->inflight--;
    b->held -= it->held;
    it->held = 0;
    pthread_mutex_unlock(&b->mu);
    cli_board_poke(&b->board); /* a worker may decode again */
}

/* Ends a file whose encode or write failed with "cannot write OUT: why". */
static void end_unwritten(batch *b, item *it, ic_status s, const char *msg)
{
    pthread_mutex_lock(&b->mu);
    b->unwritten++;
    pthread_mutex_unlock(&b->mu);
    char problem[320];
    snprintf(problem, sizeof problem, "cannot write %s: %s", b->files.v[it->idx].out,
             msg[0] ? msg : ic_status_str(s));
    item_end(b, it, problem, 1);
}

/* Encodes one filtered host image into memory and hands the bytes to the
 * writers: the atomic write waits for the disk (fsync), and a worker should
 * not wait with it. The images are freed here, so the budget goes on. */
static void encode_host(batch *b, item *it, ic_save_options *so)
{
    if (g_interrupted) { /* writes under way finish (atomically); no new ones */
        item_end(b, it, NULL, 0);
        return;
    }
    const char *out = b->files.v[it->idx].out;
    char msg[256] = "";
    const double t = cli_now_ms();
    so->metadata = &it->meta;
    cli_flatten_alpha(b->o, &it->out, out, out);
    const ic_status s =
        cli_noted(ic_image_encode(&it->out, out, so, &it->bytes, &it->nbytes), msg, sizeof msg);
    add_time_of(b, &b->ms_encode, t, 'e', it->idx);
    if (s != IC_OK) {
        end_unwritten(b, it, s, msg);
        return;
    }
    it->wide = it->out.type == IC_U16;
    ic_image_free(&it->img);
    ic_image_free(&it->out);
    ic_metadata_free(&it->meta);
    unbudget(b, it);
    cli_queue_push(&b->encoded, it);
}

/* A worker is done handing out decoded images: one producer less for every
 * device's queue. */
static void decoded_done(batch *b)
{
    for (int i = 0; i < b->ndev; i++)
        cli_queue_producer_done(&b->dev[i].decoded);
}

/* A worker takes the most useful job there is: save a filtered image when
 * one waits (it frees memory and finishes a file), else decode the next file
 * while the budget of images in memory allows, else sleep until one of the
 * two changes. So the cores go wherever the work is, whatever a format's
 * decode and encode cost (JPEG decodes cost more than its encodes, PNG the
 * other way round). Once no file is left to decode, the worker only saves. */
static void *worker(void *arg)
{
    batch *b = arg;
    ic_load_options lo = load_options_of(b->o);
    ic_save_options so = save_options_of(b->o);
    int producing = 1;
    lane_enter(b, LANE_WORKER, 0);
    for (;;) {
        const unsigned long seen = cli_board_seq(&b->board);
        item *it;
        const int r = cli_queue_try_pop(&b->filtered, &it);
        if (r > 0) {
            encode_host(b, it, &so);
            continue;
        }
        if (r < 0)
            break;
        if (producing) {
            const int d = try_decode(b, &lo);
            if (d < 0) {
                producing = 0;
                decoded_done(b);
            } else if (d == 0) {
                const double w = cli_now_ms();
                cli_board_wait(&b->board, seen);
                add_wait(b, &b->wait_workers, w);
            }
            continue;
        }
        const double w = cli_now_ms();
        it = cli_queue_pop(&b->filtered);
        add_wait(b, &b->wait_workers, w);
        if (!it)
            break;
        encode_host(b, it, &so);
    }
    if (producing) /* not reached in practice: the queue closes after the decodes */
        decoded_done(b);
    cli_queue_producer_done(&b->encoded);
    return NULL;
}

/* ---- the filter ------------------------------------------------------------------- */

/* The device-route images in codec slots at most, in bytes (a device-memory
 * bound beside the slot count; one image alone may be larger). */
#define BATCH_DEV_BYTES ((size_t)4096 << 20)

/* Whether an image of `bytes` fits beside the device-route images already in
 * device d's slots (under d->mu). */
static int dev_fits(const bdev *d, size_t bytes)
{
    return d->dev_held == 0 || d->dev_held + bytes <= BATCH_DEV_BYTES;
}

/* The files no one has taken yet. */
static int files_left(batch *b)
{
    pthread_mutex_lock(&b->mu);
    const int n = b->files.n - b->next;
    pthread_mutex_unlock(&b->mu);
    return n;
}

/* The bytes of host samples the workers hold now. */
static size_t held_now(batch *b)
{
    pthread_mutex_lock(&b->mu);
    const size_t h = b->held;
    pthread_mutex_unlock(&b->mu);
    return h;
}

/* The device route of a host image: once the GPU side's codec has
 * its slots (while it opens, the filter waits for them), a host image whose
 * output is a JPEG that nvJPEG takes (8-bit interleaved RGB) is filtered host
 * to device into a free codec slot and encoded by a GPU encoder: one copy
 * over the bus and no CPU encode, instead of a copy each way and about 11 ms
 * of a core for an HD JPEG. Returns the slot taken, or -1 (the host route: no
 * codec, another output, no nvJPEG, or every slot or BATCH_DEV_BYTES in use). */
static int device_slot(batch *b, bdev *d, const item *it)
{
    const ic_image *im = &it->img;
    if (im->type != IC_U8 || im->channels != 3 || im->layout != IC_AOS ||
        ic_format_from_path(b->files.v[it->idx].out) != IC_FMT_JPEG)
        return -1;
    const size_t bytes = sample_bytes(im);
    pthread_mutex_lock(&d->mu);
    if (b->decode_mode == DEC_CPU_DEV) { /* wait for the codec, then for a slot */
        while (!d->route_open ? d->gpu_state == GPU_OPENING : d->nfree == 0 || !dev_fits(d, bytes))
            pthread_cond_wait(&d->slot_freed, &d->mu);
    } else {
        /* While the codec opens, wait for its slots rather than take the
         * host route, unless the workers' images fill 3/4 of what they may
         * hold (the filter would then hold them up). */
        while (d->gpu_state == GPU_OPENING && !d->route_open && !g_interrupted &&
               held_now(b) < b->held_cap / 4 * 3) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 5000000; /* 5 ms: held changes without a signal here */
            if (ts.tv_nsec >= 1000000000) {
                ts.tv_sec++;
                ts.tv_nsec -= 1000000000;
            }
            pthread_cond_timedwait(&d->slot_freed, &d->mu, &ts);
        }
    }
    const int s =
        d->route_open && d->nfree > 0 && dev_fits(d, bytes) ? d->free_slots[--d->nfree] : -1;
    if (s >= 0) {
        d->slot_bytes[s] = bytes;
        d->dev_held += bytes;
    }
    pthread_mutex_unlock(&d->mu);
    return s;
}

/* Records a filter call that ran from t0 to now on ctx for file idx: the
 * context's upload and download (ic_context_timing, synchronous copies at
 * the call's two ends) apart from the rest of the call. */
static void filter_spans(batch *b, const ic_context *ctx, double t0, char stage, int idx)
{
    const double t1 = cli_now_ms();
    const ic_timing tm = ic_context_timing(ctx);
    double up = tm.upload_ms > 0 ? tm.upload_ms : 0, down = tm.download_ms > 0 ? tm.download_ms : 0;
    if (up + down > t1 - t0) /* a failed call's stale timing */
        up = down = 0;
    if (up > 0) /* a CPU context copies nothing */
        add_span(b, &b->ms_upload, t0, t0 + up, 'u', idx);
    add_span(b, &b->ms_filter, t0 + up, t1 - down, stage, idx);
    if (down > 0)
        add_span(b, &b->ms_download, t1 - down, t1, 'o', idx);
}

/* A host image: filtered into a host image (the context uploads and
 * downloads when it is a GPU one) and saved by a worker, or (device route)
 * into a codec slot and encoded on the GPU side. */
static void filter_host(batch *b, bdev *d, ic_context *ctx, const ic_kernel *k, const ic_params *p,
                        item *it)
{
    cli_err me;
    me.msg[0] = '\0';
    ic_status s =
        cli_check_image(b->o, ctx, &it->img, k, "", &me) == CLI_EXIT_OK ? IC_OK : IC_ERR_TOO_LARGE;
    const double w = cli_now_ms();
    int sl = s == IC_OK ? device_slot(b, d, it) : -1; /* may wait for the codec */
    add_wait(b, &b->wait_filter, w);
    const double t = cli_now_ms();
    if (sl >= 0 && ic_gpu_codec_output(d->codec, sl, &it->img, &it->out) != IC_OK) {
        slot_give(d, sl); /* no device memory for it: the host route */
        sl = -1;
    }
    if (sl >= 0) {
        it->slot = sl; /* from here the item ends as a slot's (item_end) */
    } else if (s == IC_OK) {
        s = ic_image_create_type(&it->out, it->img.width, it->img.height, it->img.channels,
                                 it->img.layout, it->img.type);
    }
    if (s == IC_OK)
        s = ic_convolve(ctx, &it->img, &it->out, k, p);
    filter_spans(b, ctx, t, sl >= 0 ? 'F' : 'f', it->idx);
    ic_image_free(&it->img);
    if (s != IC_OK) {
        char problem[320];
        if (me.msg[0])
            snprintf(problem, sizeof problem, "%s", me.msg);
        else
            snprintf(problem, sizeof problem, "filter failed: %s",
                     ic_last_error()[0] ? ic_last_error() : ic_status_str(s));
        item_end(b, it, problem, 1);
        return;
    }
    pthread_mutex_lock(&d->mu);
    d->filtered++;
    d->to_device += sl >= 0;
    pthread_mutex_unlock(&d->mu);
    if (sl >= 0) {
        unbudget(b, it); /* its host image is gone: the workers may decode more */
        cli_queue_push(&d->gfiltered, it);
        return;
    }
    cli_queue_push(&b->filtered, it);
}

/* A device image from the GPU codec: filtered device to device into its
 * slot's output, then encoded by a GPU encoder. */
static void filter_device(batch *b, bdev *d, ic_context *ctx, const ic_kernel *k,
                          const ic_params *p, item *it)
{
    char msg[256] = "";
    const double t = cli_now_ms();
    cli_err me; /* --max-memory, as for host images */
    me.msg[0] = '\0';
    ic_status s = IC_OK;
    if (cli_check_image(b->o, ctx, &it->img, k, "", &me) != CLI_EXIT_OK) {
        s = IC_ERR_TOO_LARGE;
        snprintf(msg, sizeof msg, "%s", me.msg);
    }
    if (s == IC_OK)
        s = cli_noted(ic_gpu_codec_output(d->codec, it->slot, &it->img, &it->out), msg, sizeof msg);
    if (s == IC_OK && (s = ic_convolve(ctx, &it->img, &it->out, k, p)) != IC_OK)
        snprintf(msg, sizeof msg, "%s", ic_last_error());
    filter_spans(b, ctx, t, 'F', it->idx);
    if (s != IC_OK) {
        char problem[320];
        if (me.msg[0]) /* the memory limit: the host pipeline's message */
            snprintf(problem, sizeof problem, "%s", me.msg);
        else
            snprintf(problem, sizeof problem, "filter failed: %s", msg[0] ? msg : ic_status_str(s));
        item_end(b, it, problem, 1);
        return;
    }
    pthread_mutex_lock(&d->mu);
    d->filtered++;
    pthread_mutex_unlock(&d->mu);
    cli_queue_push(&d->gfiltered, it);
}

/* The filter stage: one per filter worker (context), taking device d's images. */
static void filter_stage(batch *b, bdev *d, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    lane_enter(b, LANE_FILTER, 4);
    for (;;) {
        const double w = cli_now_ms();
        item *it = cli_queue_pop(&d->decoded);
        add_wait(b, &b->wait_filter, w);
        if (!it)
            break;
        if (g_interrupted) { /* drain without work: the file is "not processed" */
            item_end(b, it, NULL, 0);
            continue;
        }
        if (it->slot >= 0)
            filter_device(b, d, ctx, k, p, it);
        else
            filter_host(b, d, ctx, k, p, it);
    }
    cli_queue_producer_done(&b->filtered);
}

#define BATCH_MAX_WORKERS 64

static int clamp_int(int v, int lo, int hi)
{
    return v < lo ? lo : v > hi ? hi : v;
}

static int online_cpus(void)
{
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* ---- the GPU side: JPEG files with a CUDA backend ---------------------------------- */

/* One thread per device makes its GPU codec (its slots at once, nvJPEG's encoder on a
 * thread of the codec's own, while the CPU workers already decode and the
 * filter takes their images into slots), then, when enough files are left,
 * opens nvJPEG's decoders (0.5-1 s) and decodes batches of files into codec
 * slots, taking its files from the same list as the CPU workers. Its images
 * stay on the device: filtered device to device, encoded by GPU encoder
 * threads (nvJPEG for JPEG outputs, else the CPU writer after one download)
 * and written by writer threads. An image holds a codec slot from its decode
 * (or device-route filter) to its write, so at most GPU_SLOTS images are on
 * a device. */

/* A free slot, waiting for one when block is set; -1 when none (not blocking). */
static int slot_take(bdev *d, int block)
{
    pthread_mutex_lock(&d->mu);
    while (d->nfree == 0 && block)
        pthread_cond_wait(&d->slot_freed, &d->mu);
    const int s = d->nfree > 0 ? d->free_slots[--d->nfree] : -1;
    pthread_mutex_unlock(&d->mu);
    return s;
}

/* Device d's GPU side is no longer opening: ready (nvJPEG decodes) or not. */
static void gpu_settled(batch *b, int ready, int hw)
{
    pthread_mutex_lock(&b->mu);
    b->gpu_opening--;
    b->gpu_ready += ready;
    b->gpu_hw += ready && hw;
    pthread_mutex_unlock(&b->mu);
}

static ic_gpu_codec *gpu_open(bdev *d)
{
    batch *b = d->b;
    ic_gpu_codec *c = NULL;
    char msg[256] = "";
    const double t = cli_now_ms();
    const ic_status s = cli_noted(ic_gpu_codec_create(&c, d->ctx[0], GPU_SLOTS), msg, sizeof msg);
    /* The decoders (the hardware one's set-up: 0.5-1 s while the workers
     * load the cores) only when enough files are left for them: the workers
     * decode about one HD JPEG per 18 ms each, so fewer than 32 a worker
     * would be theirs before the decoders could start. They are made after
     * the encoder: nvJPEG makes its handles one at a time, and on the H200
     * making the decoder first delayed the encoder by 0.76 s and cost 19% of
     * a 2,000-file batch (IC_BATCH_DECODER=ahead: beside it, for comparisons). */
    const int left = files_left(b);
    const int open_dec = s == IC_OK && b->decode_mode != DEC_CPU_DEV &&
                         ((b->decode_mode != DEC_BOTH && b->decode_mode != DEC_HANDOVER) ||
                          left >= 32 * b->nworkers);
    const char *ahead = getenv("IC_BATCH_DECODER");
    if (open_dec && ahead && !strcmp(ahead, "ahead"))
        ic_gpu_codec_open_decoder(c);
    /* The codec's slots exist from here, while nvJPEG opens on a thread of
     * its own (0.3 s): the workers' host images may take the device route at
     * once, their encodes waiting for the open. */
    const int published = s == IC_OK && ic_format_supported(IC_FMT_JPEG);
    if (published) {
        pthread_mutex_lock(&d->mu);
        d->codec = c;
        d->route_open = 1;
        pthread_cond_broadcast(&d->slot_freed); /* filters waiting for the device route */
        pthread_mutex_unlock(&d->mu);
        mark(b, 'S');
    }
    const int enc = s == IC_OK && strcmp(ic_gpu_codec_encoder(c), "nvjpeg") == 0; /* waits */
    pthread_mutex_lock(&d->mu);
    d->ms_gpu_enc = cli_now_ms() - t;
    d->route_open = enc; /* without nvJPEG the host route is the faster one */
    pthread_mutex_unlock(&d->mu);
    if (enc)
        mark(b, 'E');
    /* The engine's name waits for the hardware decoder, or opens it (without
     * nvJPEG it only says why). */
    const char *eng = s == IC_OK && (open_dec || !enc) ? ic_gpu_codec_engine(c) : NULL;
    const int usable = open_dec && eng && strncmp(eng, "cpu", 3) != 0; /* nvJPEG decodes */
    pthread_mutex_lock(&d->mu);
    d->ms_gpu_open = cli_now_ms() - t;
    if (s == IC_ERR_UNSUPPORTED) /* not a CUDA context: the host pipeline, as ever */
        snprintf(d->engine, sizeof d->engine, "cpu");
    else if (s != IC_OK)
        snprintf(d->engine, sizeof d->engine, "cpu (GPU codec: %s)",
                 msg[0] ? msg : ic_status_str(s));
    else if (eng)
        snprintf(d->engine, sizeof d->engine, "%s", eng);
    else
        snprintf(d->engine, sizeof d->engine,
                 "nvjpeg encoder only (decoders not opened: %d files left to the workers)", left);
    if (usable)
        d->codec = c;
    d->gpu_state = usable ? GPU_READY : GPU_FAILED;
    pthread_cond_broadcast(&d->slot_freed); /* filters waiting for an encoder that failed */
    pthread_mutex_unlock(&d->mu);
    /* The further decoders (0.6 s each, made one after another) only when
     * enough files are left to use them: one that is still being made when
     * the batch ends delays the codec's free (2,000 HD files on two H200s:
     * 787 ms against 205). */
    if (usable && (files_left(b) >= GPU_LANE_FILES || b->ndec_asked))
        ic_gpu_codec_open_decoders(c, b->ndec);
    gpu_settled(b, usable, usable && strcmp(eng, "nvjpeg-hardware") == 0);
    mark(b, 'D');
    cli_board_poke(&b->board); /* workers waiting for the GPU decoder go on */
    /* Once published, the codec may hold device-route images (freed by the
     * run's end); else nothing uses it. */
    if (!published && !usable)
        ic_gpu_codec_free(c);
    return usable ? c : NULL;
}

/* A decode thread other than the first: the codec once the first opened it,
 * NULL when its decoders will not decode. */
static ic_gpu_codec *gpu_wait(bdev *d)
{
    pthread_mutex_lock(&d->mu);
    while (d->gpu_state == GPU_OPENING)
        pthread_cond_wait(&d->slot_freed, &d->mu);
    ic_gpu_codec *c = d->gpu_state == GPU_READY ? d->codec : NULL;
    pthread_mutex_unlock(&d->mu);
    return c;
}

/* One of a device's decode threads (GPU_DECODERS): the first opens the
 * codec, and each decodes batches on a decoder of its own once the codec
 * has made it (ic_gpu_codec_open_decoders), so that the hardware decoder
 * works on one batch while the next is read and checked. */
static void *gpu_main(void *arg)
{
    bdev *d = arg;
    batch *b = d->b;
    lane_enter(b, LANE_GPU, 1);
    pthread_mutex_lock(&d->mu);
    const int me = d->gfirst++;
    pthread_mutex_unlock(&d->mu);
    ic_gpu_codec *c = me == 0 ? gpu_open(d) : gpu_wait(d);
    ic_load_options lo = load_options_of(b->o);
    ic_metadata ask; /* any non-NULL pointer: res[i].metadata receives file i's */
    lo.metadata = &ask;
    item *its[GPU_BATCH];
    ic_bytes in[GPU_BATCH];
    int slots[GPU_BATCH];
    ic_image img[GPU_BATCH];
    ic_decode_result res[GPU_BATCH];
    for (int more = c != NULL; more;) {
        /* A batch: a slot and a file at a time, the first slot waited for. */
        int n = 0;
        while (n < GPU_BATCH) {
            const double w = cli_now_ms();
            const int sl = slot_take(d, n == 0);
            add_wait(b, &b->wait_gpu, w);
            if (sl < 0)
                break;
            item *it = next_file(b);
            if (!it) {
                slot_give(d, sl);
                more = 0;
                break;
            }
            it->slot = sl;
            it->dev = d->nth;
            char msg[256] = "";
            const double t = cli_now_ms();
            const ic_status s = cli_read_file(b->files.v[it->idx].in, b->o->max_memory, &lo,
                                              &it->bytes, &it->nbytes, msg, sizeof msg);
            add_time_of(b, &b->ms_read, t, 'r', it->idx);
            if (s != IC_OK) {
                item_end(b, it, msg[0] ? msg : ic_status_str(s), 1);
                continue;
            }
            its[n] = it;
            slots[n] = sl;
            in[n].data = it->bytes;
            in[n].size = it->nbytes;
            n++;
        }
        if (n == 0)
            continue;
        const double t = cli_now_ms();
        const ic_status st = ic_gpu_codec_decode(c, n, in, slots, &lo, img, res);
        const double t1 = cli_now_ms();
        add_span(b, &b->ms_decode, t, t1, 'g', -1);
        for (int i = 0; i < n && b->trace; i++) /* each file of the batch, for --trace */
            add_span(b, NULL, t, t1, 'G', its[i]->idx);
        for (int i = 0; i < n; i++) {
            item *it = its[i];
            free(it->bytes);
            it->bytes = NULL;
            it->meta = res[i].metadata; /* freed with the item */
            if (st != IC_OK || res[i].status != IC_OK) {
                char problem[320];
                snprintf(problem, sizeof problem, "%s",
                         res[i].error[0] ? res[i].error : ic_status_str(res[i].status));
                item_end(b, it, problem, 1);
                continue;
            }
            it->img = img[i];
            b->files.v[it->idx].bytes = sample_bytes(&img[i]);
            pthread_mutex_lock(&d->mu);
            d->by_gpu++;
            d->by_thread[me]++;
            pthread_mutex_unlock(&d->mu);
            cli_queue_push(&d->decoded, it);
        }
    }
    pthread_mutex_lock(&d->mu);
    const int last = --d->glive == 0;
    pthread_mutex_unlock(&d->mu);
    if (last)
        cli_queue_producer_done(&d->decoded);
    return NULL;
}

static void *gpu_encoder(void *arg)
{
    bdev *d = arg;
    batch *b = d->b;
    ic_save_options so = save_options_of(b->o);
    lane_enter(b, LANE_GPU_ENC, 2);
    for (;;) {
        const double w = cli_now_ms();
        item *it = cli_queue_pop(&d->gfiltered);
        add_wait(b, &b->wait_gpu_enc, w);
        if (!it)
            break;
        if (g_interrupted) { /* writes under way finish (atomically); no new ones */
            item_end(b, it, NULL, 0);
            continue;
        }
        const char *out = b->files.v[it->idx].out;
        char msg[256] = "";
        const double t = cli_now_ms();
        so.metadata = &it->meta;
        const ic_status s = cli_noted(
            ic_gpu_codec_encode(d->codec, it->slot, &it->out, out, &so, &it->enc), msg, sizeof msg);
        add_time_of(b, &b->ms_encode, t, 'n', it->idx);
        if (s != IC_OK) {
            end_unwritten(b, it, s, msg);
            continue;
        }
        pthread_mutex_lock(&d->mu);
        d->gpu_encoded++;
        pthread_mutex_unlock(&d->mu);
        it->wide = it->out.type == IC_U16;
        cli_queue_push(&b->encoded, it); /* the bytes stay in the slot until written */
    }
    cli_queue_producer_done(&b->encoded);
    return NULL;
}

/* The atomic writes (temporary file, fsync, link or rename) of both sides:
 * many at once, since a sync waits for the disk rather than for a core. */
static void *writer(void *arg)
{
    batch *b = arg;
    lane_enter(b, LANE_WRITER, 3);
    for (;;) {
        const double w = cli_now_ms();
        item *it = cli_queue_pop(&b->encoded);
        add_wait(b, &b->wait_writers, w);
        if (!it)
            break;
        const char *out = b->files.v[it->idx].out;
        char msg[256] = "";
        const double t = cli_now_ms();
        /* Without --overwrite the last step is exclusive: a file that
         * appeared after the plan's check is not replaced. */
        ic_save_options nr;
        memset(&nr, 0, sizeof nr);
        nr.no_replace = !b->o->overwrite;
        const ic_status s = it->slot >= 0 ? ic_bytes_save_opts(out, it->enc.data, it->enc.size, &nr)
                                          : ic_bytes_save_opts(out, it->bytes, it->nbytes, &nr);
        cli_noted(s, msg, sizeof msg);
        add_time_of(b, &b->ms_write, t, 'w', it->idx);
        if (s != IC_OK) {
            end_unwritten(b, it, s, msg);
            continue;
        }
        if (it->wide) { /* the samples are gone: only their depth is kept */
            ic_image wide;
            memset(&wide, 0, sizeof wide);
            wide.type = IC_U16;
            cli_depth_notice(out, out, &wide);
        }
        item_end(b, it, NULL, 1);
    }
    return NULL;
}

/* The GPU side is for JPEG inputs (by name: at least half of them, and at
 * least GPU_MIN_FILES unless IC_BATCH_DECODE asks for nvJPEG), unless
 * --codec cpu or IC_BATCH_DECODE=cpu; with --devices each listed device
 * has a GPU side of its own. Whether the context is a CUDA one is the
 * codec's to say (on its thread). */
static int wants_gpu_side(const batch *b)
{
    const cli_options *o = b->o;
    if (o->cpu_codec || !ic_format_supported(IC_FMT_JPEG) || b->files.n == 0 ||
        b->decode_mode == DEC_CPU)
        return 0;
    int jpeg = 0;
    for (int i = 0; i < b->files.n; i++)
        jpeg += ic_format_from_path(b->files.v[i].in) == IC_FMT_JPEG;
    /* A few files are done by the workers before nvJPEG is open (about a
     * second), and the run would then wait for the open for nothing. */
    if (b->decode_mode == DEC_CPU_DEV)
        return jpeg > 0;
    if ((b->decode_mode == DEC_BOTH || b->decode_mode == DEC_HANDOVER) && jpeg < GPU_MIN_FILES)
        return 0;
    return 2 * jpeg >= b->files.n;
}

static int decode_mode_of_env(void)
{
    const char *e = getenv("IC_BATCH_DECODE");
    if (e && !strcmp(e, "cpu-device"))
        return DEC_CPU_DEV;
    /* handover by default: once the hardware decoder is open, a worker's
     * 15 ms decode costs the cores the checks and writes of the files nvJPEG
     * decodes faster (H200, 16 cores: 10,000 HD JPEGs 8.72 s -> 6.00 s,
     * 2,000 2.27 s -> 1.94 s, against both) */
    if (!e || !*e || !strcmp(e, "handover"))
        return DEC_HANDOVER;
    if (!strcmp(e, "both"))
        return DEC_BOTH;
    if (!strcmp(e, "after"))
        return DEC_AFTER;
    if (!strcmp(e, "gpu"))
        return DEC_GPU;
    if (!strcmp(e, "cpu"))
        return DEC_CPU;
    return -1;
}

/* --time: each stage's busy time summed over its threads, per written file,
 * and as threads busy on average over the run; then the threads' waits. */
static void print_stages(const batch *b, const char *backend, double ms)
{
    const struct {
        const char *name, *what;
        double v;
    } st[] = {
        {"read", "file bytes into memory", b->ms_read},
        {"decode", "CPU decoders and nvJPEG batches", b->ms_decode},
        {"upload", "host -> device in the filter call", b->ms_upload},
        {"filter", "the filter call without its copies", b->ms_filter},
        {"download", "device -> host in the filter call", b->ms_download},
        {"encode", "CPU and nvJPEG encoders, into memory", b->ms_encode},
        {"write", "atomic writes (temporary file, fsync, rename)", b->ms_write},
    };
    const double per = b->written > 0 ? 1.0 / b->written : 0;
    printf("imgconv: batch stages over %.1f ms (busy: summed over the threads doing the "
           "stage)\n",
           ms);
    printf("  stage        busy ms  per file ms  threads busy\n");
    for (size_t i = 0; i < sizeof st / sizeof st[0]; i++)
        printf("  %-8s %11.1f %12.3f %13.2f  %s\n", st[i].name, st[i].v, st[i].v * per,
               ms > 0 ? st[i].v / ms : 0, st[i].what);
    printf("  wait ms: workers %.1f, filter %.1f, gpu reader %.1f, gpu encoders %.1f, "
           "writers %.1f (time threads waited for work)\n",
           b->wait_workers, b->wait_filter, b->wait_gpu, b->wait_gpu_enc, b->wait_writers);
    for (int i = 0; i < b->ndev && strncmp(backend, "cuda", 4) == 0; i++) {
        const bdev *d = &b->dev[i];
        printf("  device %d (pipeline %d, %d contexts): %d filtered, %d decoded by nvJPEG, "
               "%d into codec slots, %d GPU-encoded; codec %s\n",
               d->ordinal, d->nth, d->nctx, d->filtered, d->by_gpu, d->to_device, d->gpu_encoded,
               d->engine);
    }
}

/* The sums over the devices of the GPU side, as the summary gives them. */
typedef struct dev_sums {
    int by_gpu, to_device;
    double ms_gpu_open, ms_gpu_enc; /* the slowest device's */
} dev_sums;

static dev_sums sum_devices(const batch *b)
{
    dev_sums t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < b->ndev; i++) {
        const bdev *d = &b->dev[i];
        t.by_gpu += d->by_gpu;
        t.to_device += d->to_device;
        t.ms_gpu_open = d->ms_gpu_open > t.ms_gpu_open ? d->ms_gpu_open : t.ms_gpu_open;
        t.ms_gpu_enc = d->ms_gpu_enc > t.ms_gpu_enc ? d->ms_gpu_enc : t.ms_gpu_enc;
    }
    return t;
}

/* --json's "devices": what each device pipeline did. */
static void json_devices(const batch *b)
{
    printf(", \"devices\": [");
    for (int i = 0; i < b->ndev; i++) {
        const bdev *d = &b->dev[i];
        printf("%s{\"device\": %d, \"contexts\": %d, \"filtered\": %d, \"decoded_by_gpu\": %d, "
               "\"to_device\": %d, \"gpu_encoded\": %d, \"gpu_open_ms\": %.1f, \"codec\": ",
               i ? ", " : "", d->ordinal, d->nctx, d->filtered, d->by_gpu, d->to_device,
               d->gpu_encoded, d->ms_gpu_open);
        cli_json_string(stdout, d->engine, (size_t)-1);
        printf(", \"decoded_by_thread\": [");
        for (int k = 0; k < d->gstarted; k++)
            printf("%s%d", k ? ", " : "", d->by_thread[k]);
        printf("]}");
    }
    printf("]");
}

static void print_summary(const batch *b, const char *backend, const cli_auto *pick, double ms)
{
    const double s = ms / 1e3;
    const double ips = s > 0 ? b->written / s : 0, mbs = s > 0 ? b->bytes / 1e6 / s : 0;
    if (b->o->json) {
        printf("{\"files\": %d, \"written\": %d, \"skipped\": %d, \"failed\": %d, "
               "\"interrupted\": %s, \"backend\": ",
               b->files.n, b->written, b->skipped, b->failed, g_interrupted ? "true" : "false");
        cli_json_string(stdout, backend, (size_t)-1);
        if (pick->chosen) {
            printf(", \"auto\": ");
            cli_json_string(stdout, pick->reason, (size_t)-1);
        }
        const dev_sums t = sum_devices(b);
        printf(", \"codec\": ");
        cli_json_string(stdout, b->dev[0].engine, (size_t)-1);
        printf(", \"decoded_by\": {\"cpu\": %d, \"gpu\": %d}, \"to_device\": %d, "
               "\"gpu_open_ms\": %.1f, \"gpu_encoder_ms\": %.1f, \"cleanup_ms\": %.1f",
               b->by_cpu, t.by_gpu, t.to_device, t.ms_gpu_open, t.ms_gpu_enc, b->ms_cleanup);
        json_devices(b);
        printf(", \"seconds\": %.3f, \"images_per_s\": %.2f, \"mb_per_s\": %.2f, "
               "\"stage_ms\": {\"read\": %.1f, \"decode\": %.1f, \"upload\": %.1f, "
               "\"filter\": %.1f, \"download\": %.1f, \"encode\": %.1f, \"write\": %.1f}",
               s, ips, mbs, b->ms_read, b->ms_decode, b->ms_upload, b->ms_filter, b->ms_download,
               b->ms_encode, b->ms_write);
        printf(", \"wait_ms\": {\"workers\": %.1f, \"filter\": %.1f, \"gpu_reader\": %.1f, "
               "\"gpu_encoders\": %.1f, \"writers\": %.1f}, \"errors\": [",
               b->wait_workers, b->wait_filter, b->wait_gpu, b->wait_gpu_enc, b->wait_writers);
        cli_json_pairs(b->errors, b->nerr, "error");
        printf("], \"skipped_files\": [");
        cli_json_pairs(b->skips, b->nskip, "reason");
        printf("]}\n");
        return;
    }
    if (b->o->time)
        print_stages(b, backend, ms);
    if (b->o->quiet)
        return;
    const double busy = b->ms_read + b->ms_decode + b->ms_upload + b->ms_filter + b->ms_download +
                        b->ms_encode + b->ms_write;
    const double pct = busy > 0 ? 100 / busy : 0;
    printf("imgconv: %d files: %d written, %d skipped, %d failed%s in %.2f s (%.1f images/s, "
           "%.1f MB/s; busy time: read %.0f%%, decode %.0f%%, filter %.0f%%, encode %.0f%%, "
           "write %.0f%%; backend %s, codec %s)\n",
           b->files.n, b->written, b->skipped, b->failed, g_interrupted ? ", interrupted" : "", s,
           ips, mbs, pct * b->ms_read, pct * b->ms_decode,
           pct * (b->ms_upload + b->ms_filter + b->ms_download), pct * b->ms_encode,
           pct * b->ms_write, backend, b->dev[0].engine);
}

/* Writes the traces: --trace FILE as a Chrome trace (cli_trace.c), and
 * IC_BATCH_TRACE=FILE as one line per interval, "t0_ms ms stage" (add_time),
 * for bench/batch_timeline.py. A trace that cannot be written is a warning:
 * the images are written by then. */
static void write_trace(const batch *b)
{
    if (!b->trace)
        return;
    char msg[320];
    if (b->o->trace && cli_trace_write(b->o->trace, b->trace, b->ntrace, b->trace_dropped,
                                       &b->files, msg, sizeof msg) != 0)
        fprintf(stderr, "imgconv: warning: %s: %s\n", b->o->trace, msg);
    const char *path = getenv("IC_BATCH_TRACE");
    if (!path || !*path)
        return;
    FILE *f = fopen(path, "w");
    if (!f) {
        fprintf(stderr, "imgconv: warning: cannot write the trace %s: %s\n", path, strerror(errno));
        return;
    }
    fprintf(f, "# imgconv batch trace: t0_ms ms stage (%d intervals%s)\n", b->ntrace,
            b->trace_dropped ? ", full: later ones dropped" : "");
    for (int i = 0; i < b->ntrace; i++)
        if (b->trace[i].stage != 'G') /* the batch's files: 'g' covers them */
            fprintf(f, "%.3f %.3f %c\n", b->trace[i].t0, b->trace[i].ms, b->trace[i].stage);
    if (fclose(f) != 0)
        fprintf(stderr, "imgconv: warning: cannot write the trace %s\n", path);
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
    bdev *d;
    ic_context *ctx;
    const ic_kernel *k;
    const ic_params *p;
} fworker;

static void *filter_worker(void *arg)
{
    fworker *w = arg;
    filter_stage(w->b, w->d, w->ctx, w->k, w->p);
    return NULL;
}

static void free_contexts(ic_context **ctx, int n)
{
    for (int i = 0; i < n; i++)
        ic_context_free(ctx[i]);
}

/* The threads of a run (the GPU side's are its devices'). */
typedef struct bthreads {
    pthread_t wk[BATCH_MAX_WORKERS], wr[BATCH_MAX_WRITERS];
    int nw, nwr;
} bthreads;

/* Starts the writers and the workers, before the filter contexts exist: the
 * workers read and decode files while a CUDA context is made (about 0.3 s). */
static void start_workers(batch *b, bthreads *t, int nworkers)
{
    /* 16 a device: two H200s' 10,000-file batch kept 16 writers all busy
     * while it wrote 4,650 files/s */
    const int nwr = clamp_int(BATCH_WRITERS * b->ndev, BATCH_WRITERS, BATCH_MAX_WRITERS);
    for (; t->nwr < nwr; t->nwr++)
        if (pthread_create(&t->wr[t->nwr], NULL, writer, b) != 0)
            break;
    if (t->nwr == 0)
        g_interrupted = 1; /* nothing could be written: stop at once, then report */
    for (; t->nw < nworkers; t->nw++)
        if (pthread_create(&t->wk[t->nw], NULL, worker, b) != 0)
            break;
    for (int i = t->nw; i < nworkers; i++) { /* producers that never started are done */
        decoded_done(b);
        cli_queue_producer_done(&b->encoded);
    }
    if (t->nw == 0)
        g_interrupted = 1; /* nothing can flow: stop at once, then report */
}

/* Device d's GPU side never opens (no context, or no thread for it): its
 * producers are done and the workers waiting for it go on. */
static void gpu_never(batch *b, bdev *d, const char *why)
{
    pthread_mutex_lock(&d->mu);
    d->gpu_state = GPU_FAILED;
    if (why)
        snprintf(d->engine, sizeof d->engine, "%s", why);
    pthread_cond_broadcast(&d->slot_freed);
    pthread_mutex_unlock(&d->mu);
    gpu_settled(b, 0, 0);
    cli_queue_producer_done(&d->decoded);
    cli_board_poke(&b->board);
}

/* Starts device d's GPU side: its decode threads (the first to run opens its
 * codec; the last to end ends its decoded queue) and its encoders. */
static void gpu_start(batch *b, bdev *d)
{
    pthread_mutex_lock(&d->mu);
    d->glive = b->ndec; /* so that none ends the queue before all started */
    pthread_mutex_unlock(&d->mu);
    for (; d->gstarted < b->ndec; d->gstarted++)
        if (pthread_create(&d->gth[d->gstarted], NULL, gpu_main, d) != 0)
            break;
    pthread_mutex_lock(&d->mu);
    d->glive -= b->ndec - d->gstarted;
    const int ended = d->glive == 0;
    pthread_mutex_unlock(&d->mu);
    if (!d->gstarted)
        gpu_never(b, d, "cpu (no thread for the GPU codec)");
    else if (ended) /* the ones that started are done already */
        cli_queue_producer_done(&d->decoded);
    for (; d->ng < b->nenc; d->ng++)
        if (pthread_create(&d->genc[d->ng], NULL, gpu_encoder, d) != 0)
            break;
    for (int i = d->ng; i < b->nenc; i++)
        cli_queue_producer_done(&b->encoded);
    if (d->gstarted && d->ng == 0)
        g_interrupted = 1; /* the GPU side's images could not flow */
}

/* Starts the GPU sides (when asked) and the filter workers of every device,
 * runs the first filter worker on this thread, and returns when every file
 * went through (or the run was interrupted). nfilt is 0 when no context
 * could be made: the run is then interrupted, and the images already decoded
 * are dropped unreported. A stage that cannot start a single thread stops the
 * run as an interruption would. */
static void run_pipeline(batch *b, bthreads *t, int nfilt, const ic_kernel *k, const ic_params *p,
                         int gpu_side)
{
    for (int i = 0; gpu_side && i < b->ndev; i++) {
        bdev *d = &b->dev[i];
        if (nfilt > 0) {
            gpu_start(b, d);
        } else { /* never started: its producers are done */
            gpu_never(b, d, NULL);
            for (int j = 0; j < b->nenc; j++)
                cli_queue_producer_done(&b->encoded);
        }
    }
    /* The filtered queue waits for BATCH_MAX_FILTERS producers: those that
     * will not run are done now (nfilt 0: one drain per device). */
    int nstage = 0;
    for (int i = 0; i < b->ndev; i++)
        nstage += nfilt > 0 ? b->dev[i].nctx : 1;
    for (int i = nstage; i < BATCH_MAX_FILTERS; i++)
        cli_queue_producer_done(&b->filtered);
    if (t->nw == 0) { /* nobody would empty the filtered queue */
        for (int i = 0; i < b->ndev; i++) {
            item *it;
            while ((it = cli_queue_pop(&b->dev[i].decoded)) != NULL)
                item_end(b, it, "cannot start a worker thread", 1);
        }
        for (int i = 0; i < nstage; i++)
            cli_queue_producer_done(&b->filtered);
    } else if (nfilt == 0) { /* no filter: drain every device's queue here */
        for (int i = 0; i < b->ndev; i++)
            filter_stage(b, &b->dev[i], NULL, k, p);
    } else {
        /* The first on this thread; a filter thread that cannot start is
         * done at once (its device's other filters take its images; a
         * device with none left has its images taken here, after the
         * first's). */
        fworker fw[BATCH_MAX_FILTERS];
        pthread_t wth[BATCH_MAX_FILTERS];
        int wstarted[BATCH_MAX_FILTERS] = {0};
        int n = 0, orphan[BATCH_MAX_DEVICES] = {0};
        for (int i = 0; i < b->ndev; i++) {
            bdev *d = &b->dev[i];
            int started = 0;
            for (int j = 0; j < d->nctx; j++, n++) {
                fw[n].b = b;
                fw[n].d = d;
                fw[n].ctx = d->ctx[j];
                fw[n].k = k;
                fw[n].p = p;
                if (n == 0) {
                    started++;
                    continue;
                }
                wstarted[n] = pthread_create(&wth[n], NULL, filter_worker, &fw[n]) == 0;
                started += wstarted[n];
                if (!wstarted[n] && j > 0)
                    cli_queue_producer_done(&b->filtered);
            }
            orphan[i] = started == 0;
            /* a first filter that did not start is done, unless its device is
             * filtered here later (filter_stage is then its producer) */
            if (i > 0 && !orphan[i] && !wstarted[n - d->nctx])
                cli_queue_producer_done(&b->filtered);
        }
        filter_stage(b, fw[0].d, fw[0].ctx, k, p);
        for (int i = 1; i < b->ndev; i++)
            if (orphan[i]) /* filters on its own first context, on this thread */
                filter_stage(b, &b->dev[i], b->dev[i].ctx[0], k, p);
        for (int i = 1; i < n; i++)
            if (wstarted[i])
                pthread_join(wth[i], NULL);
    }
    for (int i = 0; gpu_side && i < b->ndev; i++) {
        bdev *d = &b->dev[i];
        cli_queue_producer_done(&d->gfiltered);
        if (d->ng == 0) { /* nobody would empty it */
            item *it;
            while ((it = cli_queue_pop(&d->gfiltered)) != NULL)
                item_end(b, it, NULL, 0);
        }
    }
    for (int i = 0; i < t->nw; i++)
        pthread_join(t->wk[i], NULL);
    for (int i = 0; gpu_side && i < b->ndev; i++) {
        bdev *d = &b->dev[i];
        for (int j = 0; j < d->gstarted; j++)
            pthread_join(d->gth[j], NULL);
        for (int j = 0; j < d->ng; j++)
            pthread_join(d->genc[j], NULL);
    }
    if (t->nwr == 0) { /* nobody emptied it (the queue is closed now) */
        item *it;
        while ((it = cli_queue_pop(&b->encoded)) != NULL)
            item_end(b, it, NULL, 0);
    }
    for (int i = 0; i < t->nwr; i++)
        pthread_join(t->wr[i], NULL);
}

/* Sets up device pipeline i of b: its queues, and with the GPU side its
 * slots. Returns 0, or -1 when out of memory. */
static int device_init(batch *b, int i, int gpu_side)
{
    const cli_options *o = b->o;
    bdev *d = &b->dev[i];
    d->b = b;
    d->nth = i;
    d->ordinal = o->ctx.n_devices > 0 ? o->ctx.devices[i] : o->ctx.device;
    snprintf(d->engine, sizeof d->engine, "cpu");
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->slot_freed, NULL);
    if (cli_queue_init(&d->decoded, b->max_inflight + GPU_SLOTS, b->nworkers + gpu_side))
        return -1;
    d->decoded.board = &b->board;
    if (!gpu_side)
        return 0;
    if (cli_queue_init(&d->gfiltered, GPU_SLOTS, 1))
        return -1;
    d->free_slots = malloc(GPU_SLOTS * sizeof *d->free_slots);
    d->slot_bytes = calloc(GPU_SLOTS, sizeof *d->slot_bytes);
    if (!d->free_slots || !d->slot_bytes)
        return -1;
    for (int s = 0; s < GPU_SLOTS; s++)
        d->free_slots[d->nfree++] = s;
    d->gpu_state = GPU_OPENING;
    return 0;
}

/* Frees what device_init made for b's devices (their contexts and codecs
 * are freed apart, before the summary). */
static void devices_destroy(batch *b)
{
    for (int i = 0; i < b->ndev; i++) {
        bdev *d = &b->dev[i];
        if (!d->b)
            continue;
        if (d->decoded.v)
            cli_queue_destroy(&d->decoded);
        if (d->gfiltered.v)
            cli_queue_destroy(&d->gfiltered);
        free(d->free_slots);
        free(d->slot_bytes);
        pthread_cond_destroy(&d->slot_freed);
        pthread_mutex_destroy(&d->mu);
    }
}

static void destroy_queues(batch *b)
{
    queue *qs[] = {&b->filtered, &b->encoded};
    for (size_t i = 0; i < sizeof qs / sizeof *qs; i++)
        if (qs[i]->v)
            cli_queue_destroy(qs[i]);
    devices_destroy(b);
}

/* The most bytes of host samples the GPU side lets the workers hold:
 * BATCH_HELD_BYTES, or an eighth of the machine's memory when that is less. */
static size_t held_cap(void)
{
    const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGE_SIZE);
    if (pages <= 0 || page <= 0)
        return BATCH_HELD_BYTES;
    const double eighth = (double)pages * (double)page / 8;
    return eighth < (double)BATCH_HELD_BYTES ? (size_t)eighth : BATCH_HELD_BYTES;
}

/* A count from environment variable `name` (for comparisons), clamped to
 * 1..hi; `def` when unset or empty. */
static int env_count(const char *name, int def, int hi)
{
    const char *e = getenv(name);
    return clamp_int(e && *e ? atoi(e) : def, 1, hi);
}

/* GPU encoder threads (IC_BATCH_GPU_ENCODERS, 1..16): each holds one of
 * nvJPEG's encoder lanes while it encodes, and a lane spends most of an HD
 * image's ~2 ms waiting for its bitstream, not computing. */
static int gpu_encoders(void)
{
    return env_count("IC_BATCH_GPU_ENCODERS", GPU_ENCODERS, GPU_MAX_ENCODERS);
}

/* Decode threads of a device with the GPU side (IC_BATCH_GPU_DECODERS,
 * 1..4): each further one decodes on an nvJPEG decoder of its own. */
static int gpu_decoders(void)
{
    return env_count("IC_BATCH_GPU_DECODERS", GPU_DECODERS, GPU_MAX_DECODERS);
}

/* Filter contexts on the device with the GPU side: GPU_FILTERS, or
 * IC_BATCH_GPU_FILTERS=1..16 (for comparisons). */
static int gpu_filters(void)
{
    return env_count("IC_BATCH_GPU_FILTERS", GPU_FILTERS, BATCH_DEV_FILTERS);
}

/* The first filter context of a device, made on a thread of its own (one
 * per device, side by side) while the workers already decode. */
typedef struct ctx_job {
    const cli_options *o;
    ic_context_options c;
    ic_context *ctx;
    ic_status st;
    char msg[256];
} ctx_job;

static void *ctx_main(void *arg)
{
    ctx_job *j = arg;
    j->msg[0] = '\0';
    j->st = cli_noted(ic_context_create(&j->ctx, j->o->backend, &j->c), j->msg, sizeof j->msg);
    return NULL;
}

/* The other filter contexts of device d, once its first exists (d->ctx[0]);
 * sets d->nctx.
 *   --devices: each listed device has its pipeline; one context, or with the
 *     GPU side as many as on one device (below).
 *   A CPU backend: several contexts, each on a share of the cores, filter
 *     images side by side. One context spreading every image over all cores
 *     was the batch's bottleneck on the 16-core GPU machine (500 HD JPEGs:
 *     the filter thread busy 1.6 s of a 1.8 s run while the codecs' 13
 *     core-seconds left most cores idle). An explicit --threads keeps one.
 *   A CUDA backend with the GPU side: the GPU side's images take a few
 *     hundred microseconds of a filter thread, the workers' host images a
 *     copy over the bus (two on the host route: milliseconds for HD, the
 *     copies from pageable memory running on the calling thread), so more
 *     contexts on the same device filter side by side and their copies
 *     overlap. */
static void more_contexts(const cli_options *o, bdev *d, int gpu_side)
{
    ic_context **ctxs = d->ctx;
    const ic_context_options c0 = worker_options(o, d->nth);
    const int cuda = strncmp(ic_context_backend(ctxs[0]), "cuda", 4) == 0;
    int n = 1;
    if (!cuda && o->ctx.threads == 0 && o->ctx.n_devices == 0) {
        const int cores = online_cpus();
        const int want = clamp_int(cores / 2, 1, 8);
        ic_context_options cp = c0;
        cp.threads = cores / want > 1 ? cores / want : 1;
        ic_context *first = NULL;
        if (want > 1 && ic_context_create(&first, o->backend, &cp) == IC_OK) {
            ic_context_free(ctxs[0]);
            ctxs[0] = first;
            while (n < want && ic_context_create(&ctxs[n], o->backend, &cp) == IC_OK)
                n++;
        }
    } else if (cuda && gpu_side) {
        const int want = gpu_filters();
        while (n < want && ic_context_create(&ctxs[n], o->backend, &c0) == IC_OK)
            n++;
    }
    d->nctx = n;
}

/* Decoded images (6 MB for HD RGB) come and go by the hundred on 16+
 * threads: glibc would map and unmap each one (or trim its arenas' tops),
 * every image then paying ~1,500 page faults of fresh zeroed memory and the
 * unmaps TLB shootdowns across the threads. Blocks up to 32 MB (glibc's
 * most) come from the arenas instead, kept for reuse. IC_BATCH_MALLOC=system
 * keeps glibc's defaults (for comparisons). */
static void tune_malloc(void)
{
#ifdef __GLIBC__
    const char *m = getenv("IC_BATCH_MALLOC");
    if (m && !strcmp(m, "system"))
        return;
    (void)mallopt(M_MMAP_THRESHOLD, 32 << 20);
    (void)mallopt(M_TRIM_THRESHOLD, 1 << 30);
#endif
}

/* --backend auto for the batch: its files (those not skipped or failed
 * already) taken to be as large as the first readable one; --explain says
 * why (--json carries it in the summary). */
static void batch_choose(batch *b, const ic_kernel *k, cli_auto *pick)
{
    const cli_options *o = b->o;
    int n = 0, w = 0, h = 0, c = 0, first = -1;
    for (int i = 0; i < b->files.n; i++) {
        const bfile *f = &b->files.v[i];
        if (f->skip[0] || f->err[0])
            continue;
        n++;
        if (first < 0 && strcmp(o->backend, "auto") == 0 &&
            cli_auto_peek(o, f->in, &w, &h, &c) == 0)
            first = i;
    }
    if (first < 0) { /* nothing readable: the choice hardly matters */
        first = 0;
        w = h = 64;
    }
    const ic_format in = b->files.n ? ic_format_from_path(b->files.v[first].in) : IC_FMT_PNM;
    const ic_format out =
        b->files.n && b->files.v[first].out ? ic_format_from_path(b->files.v[first].out) : in;
    cli_auto_choose(o, k, n, w, h, c, in, out, wants_gpu_side(b), n == 1, pick);
    if (pick->chosen && o->explain && !o->json)
        printf("imgconv: backend %s (auto): %s\n", pick->backend, pick->reason);
}

int cli_run_batch(const cli_options *o, cli_err *e)
{
    const int decode_mode = decode_mode_of_env();
    if (decode_mode < 0)
        return cli_fail(e, CLI_EXIT_USAGE, NULL,
                        "IC_BATCH_DECODE must be both, handover, after, gpu, cpu or "
                        "cpu-device, not '%s'",
                        getenv("IC_BATCH_DECODE"));
    int code = check_outdir(o->outdir, e);
    if (code == CLI_EXIT_OK && o->trace) /* a trace that cannot be written: before any work */
        code = cli_check_output_path(o->trace, NULL, e);
    if (code != CLI_EXIT_OK)
        return code;
    ic_kernel k;
    ic_params p;
    if ((code = cli_open_filter(o, NULL, &k, &p, NULL, e)) != CLI_EXIT_OK)
        return code;
    tune_malloc();
    /* one pipeline per listed device (the same device twice: two) */
    const int ndev = o->ctx.n_devices > 0 ? o->ctx.n_devices : 1;
    cli_options ro = *o; /* --backend auto resolved (pick) once the files are known */
    cli_auto pick;
    ctx_job cj[BATCH_MAX_DEVICES];
    pthread_t cth[BATCH_MAX_DEVICES];
    int cthreaded[BATCH_MAX_DEVICES];
    memset(cj, 0, sizeof cj);
    for (int i = 0; i < ndev; i++) {
        cj[i].o = &ro;
        cj[i].c = worker_options(o, i);
    }

    batch b;
    memset(&b, 0, sizeof b);
    b.o = &ro;
    b.ndev = ndev;
    b.decode_mode = decode_mode;
    pthread_mutex_init(&b.mu, NULL);
    cli_board_init(&b.board);
    int rc = 0;
    for (int i = 0; i < o->ninputs && rc == 0; i++)
        rc = cli_files_expand(&b.files, o->inputs[i]);
    if (rc == 0)
        rc = cli_files_plan(&b.files, o);
    batch_choose(&b, &k, &pick);
    ro.backend = pick.backend;
    for (int i = 0; i < ndev; i++) { /* each device's CUDA context side by side */
        cthreaded[i] = pthread_create(&cth[i], NULL, ctx_main, &cj[i]) == 0;
        if (!cthreaded[i])
            ctx_main(&cj[i]);
    }
    /* magnitudes and |sum| take host images (docs/definitions.md#chains) */
    const int gpu_side = rc == 0 && !k.magnitude && !p.abs && wants_gpu_side(&b);
    /* One worker per core (the filter threads, nvJPEG's and the GPU side's
     * threads mostly wait on the GPU). Host images in memory: always one per
     * worker plus 8 waiting between the stages; with the GPU side more, up to
     * BATCH_HELD_BYTES of samples, so that the workers run ahead while the
     * CUDA context and the GPU codec are being made (about a second in all)
     * rather than wait for the filter. Device images: GPU_SLOTS a device. */
    const int nworkers = clamp_int(online_cpus(), 2, BATCH_MAX_WORKERS);
    b.nworkers = nworkers;
    b.nenc = gpu_encoders();
    /* CPU workers that go on decoding beside nvJPEG's hardware decoder
     * (handover; IC_BATCH_CPU_SHARE=0..64, for comparisons) */
    const char *share = getenv("IC_BATCH_CPU_SHARE");
    b.cpu_share = share && *share ? clamp_int(atoi(share), 0, BATCH_MAX_WORKERS) : 0;
    b.ndec = gpu_decoders();
    b.ndec_asked = getenv("IC_BATCH_GPU_DECODERS") != NULL;
    b.budget = nworkers + 8;
    b.max_inflight = gpu_side ? BATCH_MAX_HELD : b.budget;
    b.held_cap = gpu_side ? held_cap() : 0;
    b.gpu_opening = gpu_side ? ndev : 0;
    if (rc == 0 && (cli_queue_init(&b.filtered, b.max_inflight, BATCH_MAX_FILTERS) ||
                    cli_queue_init(&b.encoded, GPU_SLOTS * ndev + 2 * nworkers,
                                   nworkers + (gpu_side ? b.nenc * ndev : 0))))
        rc = -1;
    for (int i = 0; i < ndev; i++)
        if (device_init(&b, i, rc == 0 && gpu_side) != 0)
            rc = -1;
    b.filtered.board = &b.board;
    if (rc == 0 && (o->trace || (getenv("IC_BATCH_TRACE") && *getenv("IC_BATCH_TRACE")))) {
        b.trace_cap = (int)cli_trace_cap(b.files.n);
        if (!(b.trace = calloc((size_t)b.trace_cap, sizeof *b.trace)))
            rc = -1;
    }
    if (rc != 0 || b.files.n == 0) {
        free(b.trace);
        ic_status cst = IC_OK;
        const char *cmsg = "";
        for (int i = 0; i < ndev; i++) {
            if (cthreaded[i])
                pthread_join(cth[i], NULL);
            ic_context_free(cj[i].ctx);
            if (cst == IC_OK && cj[i].st != IC_OK) {
                cst = cj[i].st;
                cmsg = cj[i].msg;
            }
        }
        destroy_queues(&b);
        cli_files_free(&b.files);
        ic_kernel_free(&k);
        cli_board_destroy(&b.board);
        pthread_mutex_destroy(&b.mu);
        if (cst != IC_OK) /* the backend's error first, as before any file */
            return cli_fail(e, cli_exit_for_backend(cst), NULL, "%s",
                            cmsg[0] ? cmsg : ic_status_str(cst));
        return rc != 0 ? cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory")
                       : cli_fail(e, CLI_EXIT_INPUT, NULL, "no input files");
    }
    b.bar.on = !o->quiet && isatty(STDERR_FILENO);
    g_interrupted = 0;
    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);

    b.bar.t0 = cli_now_ms();
    bthreads th;
    memset(&th, 0, sizeof th);
    start_workers(&b, &th, nworkers);
    ic_status cst = IC_OK;
    char cmsg[256] = "";
    for (int i = 0; i < ndev; i++) {
        if (cthreaded[i])
            pthread_join(cth[i], NULL);
        b.dev[i].ctx[0] = cj[i].ctx;
        b.dev[i].nctx = cj[i].st == IC_OK;
        if (cst == IC_OK && cj[i].st != IC_OK) {
            cst = cj[i].st;
            snprintf(cmsg, sizeof cmsg, "%s", cj[i].msg);
        }
    }
    int nfilt = 0;
    for (int i = 0; i < ndev; i++) {
        if (cst == IC_OK)
            more_contexts(&ro, &b.dev[i], gpu_side);
        nfilt += b.dev[i].nctx;
    }
    if (cst != IC_OK) { /* one device without its context: no run (its message) */
        for (int i = 0; i < ndev; i++) {
            free_contexts(b.dev[i].ctx, b.dev[i].nctx);
            b.dev[i].nctx = 0;
        }
        nfilt = 0;
    }
    if (nfilt == 0)
        g_interrupted = 1; /* no filter: the workers stop, the decoded images are dropped */
    mark(&b, 'C');
    run_pipeline(&b, &th, nfilt, &k, &p, gpu_side);
    const double ms = cli_now_ms() - b.bar.t0;
    sigaction(SIGINT, &old_int, NULL);
    pthread_mutex_lock(&b.mu);
    cli_progress_draw(&b.bar, b.done, b.files.n, b.bytes, 1);
    cli_progress_clear(&b.bar);
    pthread_mutex_unlock(&b.mu);

    /* The GPU codecs and the contexts are freed before the summary, which
     * says how long that took (device buffers, streams, nvJPEG). */
    char backend[64] = "";
    if (nfilt > 0)
        snprintf(backend, sizeof backend, "%s", ic_context_backend(b.dev[0].ctx[0]));
    const double c0 = cli_now_ms();
    for (int i = 0; i < ndev; i++) {
        ic_gpu_codec_free(b.dev[i].codec);
        b.dev[i].codec = NULL;
        free_contexts(b.dev[i].ctx, b.dev[i].nctx);
    }
    b.ms_cleanup = cli_now_ms() - c0;
    if (nfilt > 0)
        print_summary(&b, backend, &pick, ms);
    write_trace(&b);
    const int interrupted = g_interrupted, failed = b.failed, total = b.files.n;
    const int unwritten = b.unwritten;
    const int not_done = total - b.done;
    for (int i = 0; i < b.nerr; i++)
        free(b.errors[i]);
    free(b.errors);
    for (int i = 0; i < b.nskip; i++)
        free(b.skips[i]);
    free(b.skips);
    destroy_queues(&b);
    free(b.trace);
    cli_board_destroy(&b.board);
    pthread_mutex_destroy(&b.mu);
    cli_files_free(&b.files);
    ic_kernel_free(&k);
    if (nfilt == 0)
        return cli_fail(e, cli_exit_for_backend(cst), NULL, "%s",
                        cmsg[0] ? cmsg : ic_status_str(cst));
    if (interrupted)
        return cli_fail(e, CLI_EXIT_INTERRUPTED, NULL, "interrupted: %d of %d files not processed",
                        not_done, total);
    /* an output that could not be written outweighs an unreadable input */
    if (failed)
        return cli_fail(e, unwritten ? CLI_EXIT_OUTPUT : CLI_EXIT_INPUT, NULL,
                        "%d of %d files failed%s", failed, total,
                        unwritten ? unwritten == failed ? " (not written)" : ", some not written"
                                  : "");
    return CLI_EXIT_OK;
}
