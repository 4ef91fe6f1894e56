/*
 * cli_batch.c - batch mode and the raw frame stream of imgconv (issue 6):
 * the whole job fast, not only the kernel (seed 004's closing experiment on
 * transfers, applied to folders of photographs and to video frames).
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
 *
 * Stream: fixed-size raw interleaved frames from stdin, filtered one by one,
 * to stdout (ffmpeg -f rawvideo pipes), as three overlapping stages: a reader
 * thread, the filter on the main thread (one context), a writer thread. It
 * holds at most 6 frames: 3 read ahead and 3 waiting to be written.
 */
#include "cli_batch.h"

#include <dirent.h>
#include <errno.h>
#include <glob.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_args.h"

/* ---- interruption ---------------------------------------------------------- */

static volatile sig_atomic_t g_interrupted;

static void on_sigint(int sig)
{
    (void)sig;
    g_interrupted = 1;
}

/* ---- the list of files ----------------------------------------------------- */

typedef struct bfile {
    char *in;
    char *out;       /* NULL when no output name could be made */
    char err[320];   /* set when the file failed before decoding */
    char skip[320];  /* set when the file is skipped on purpose: why */
    size_t bytes;    /* decoded sample bytes, for MB/s */
} bfile;

typedef struct blist {
    bfile *v;
    int n, cap;
} blist;

static int list_add(blist *l, const char *path);

/* Adds an entry that is skipped, with the reason. */
static int list_skip(blist *l, const char *path, const char *why)
{
    if (list_add(l, path) != 0)
        return -1;
    snprintf(l->v[l->n - 1].skip, sizeof l->v[l->n - 1].skip, "%s", why);
    return 0;
}

static int list_add(blist *l, const char *path)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        bfile *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    bfile *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    f->in = strdup(path);
    if (!f->in)
        return -1;
    l->n++;
    return 0;
}

static void list_free(blist *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].in);
        free(l->v[i].out);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the entries of a directory, sorted by name: image files (known
 * extensions) to filter, the others (sub-folders, other names) as skipped
 * with the reason; dotfiles are ignored. */
static int add_dir(blist *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return list_add(l, dir); /* reported when loading fails */
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == 0)
        qsort(names, (size_t)n, sizeof *names, cmp_str);
    const size_t dl = strlen(dir);
    const int slash = dl > 0 && dir[dl - 1] == '/';
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            char *p = malloc(dl + strlen(names[i]) + 2);
            if (!p) {
                rc = -1;
            } else {
                sprintf(p, "%s%s%s", dir, slash ? "" : "/", names[i]);
                struct stat st;
                const ic_format fmt = ic_format_from_path(names[i]);
                if (stat(p, &st) != 0)
                    rc = 0; /* vanished meanwhile */
                else if (S_ISDIR(st.st_mode))
                    rc = list_skip(l, p, "a folder (batch does not descend into folders)");
                else if (!S_ISREG(st.st_mode))
                    rc = list_skip(l, p, "not a regular file");
                else if (fmt == IC_FMT_UNKNOWN)
                    rc = list_skip(l, p,
                                   "not an image name (.png .jpg .jpeg .tif .tiff .webp .pgm .ppm "
                                   ".pnm)");
                else if (!ic_format_supported(fmt)) {
                    char why[64];
                    snprintf(why, sizeof why, "%s is not built in (see --formats)",
                             ic_format_name(fmt));
                    rc = list_skip(l, p, why);
                } else
                    rc = list_add(l, p);
                free(p);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

static int expand_input(blist *l, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0)
        return S_ISDIR(st.st_mode) ? add_dir(l, arg) : list_add(l, arg);
    if (strpbrk(arg, "*?[")) { /* a glob the shell did not expand */
        glob_t g;
        memset(&g, 0, sizeof g);
        if (glob(arg, 0, NULL, &g) == 0) {
            int rc = 0;
            for (size_t i = 0; i < g.gl_pathc && rc == 0; i++)
                rc = (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode))
                         ? add_dir(l, g.gl_pathv[i])
                         : list_add(l, g.gl_pathv[i]);
            globfree(&g);
            return rc;
        }
        globfree(&g);
    }
    return list_add(l, arg); /* missing: reported when loading fails */
}

/* OUTDIR/basename, the extension replaced by --format when given. */
static void make_output_name(bfile *f, const char *outdir, const char *format)
{
    const char *base = strrchr(f->in, '/');
    base = base ? base + 1 : f->in;
    const char *dot = strrchr(base, '.');
    const size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    const char *ext = format;
    if (!ext && dot && dot != base && ic_format_from_path(base) != IC_FMT_UNKNOWN)
        ext = dot + 1;
    if (!ext) {
        snprintf(f->err, sizeof f->err,
                 "no output format for this name (use --format png|jpg|tif|webp|ppm|pgm)");
        return;
    }
    const size_t n = strlen(outdir) + stem + strlen(ext) + 3;
    f->out = malloc(n);
    if (!f->out) {
        snprintf(f->err, sizeof f->err, "out of memory");
        return;
    }
    snprintf(f->out, n, "%s/%.*s.%s", outdir, (int)stem, base, ext);
}

static int cmp_out(const void *a, const void *b)
{
    const bfile *x = *(const bfile *const *)a, *y = *(const bfile *const *)b;
    return strcmp(x->out, y->out);
}

/* Names outputs, refuses existing ones without --overwrite (skips them with
 * --skip-existing), the input itself, and two inputs that would write the
 * same output. */
static int plan_outputs(blist *l, const cli_options *o)
{
    bfile **byname = malloc((size_t)(l->n ? l->n : 1) * sizeof *byname);
    if (!byname)
        return -1;
    int m = 0;
    for (int i = 0; i < l->n; i++) {
        bfile *f = &l->v[i];
        if (f->skip[0])
            continue;
        make_output_name(f, o->outdir, o->format);
        if (!f->out)
            continue;
        struct stat so, si;
        if (stat(f->out, &so) == 0) {
            if (stat(f->in, &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
                snprintf(f->err, sizeof f->err, "output %s is the input file itself", f->out);
            else if (o->skip_existing)
                snprintf(f->skip, sizeof f->skip, "output %s exists (--skip-existing)", f->out);
            else if (!o->overwrite)
                snprintf(f->err, sizeof f->err,
                         "output %s exists (use --overwrite or --skip-existing)", f->out);
        }
        if (!f->err[0] && !f->skip[0])
            byname[m++] = f;
    }
    qsort(byname, (size_t)m, sizeof *byname, cmp_out);
    for (int i = 1; i < m; i++)
        if (strcmp(byname[i]->out, byname[i - 1]->out) == 0)
            snprintf(byname[i]->err, sizeof byname[i]->err, "output %s is also the output of %s",
                     byname[i]->out, byname[i - 1]->in);
    free(byname);
    return 0;
}

/* ---- bounded queues -------------------------------------------------------- */

typedef struct item {
    int idx;
    ic_image img, out;
    ic_metadata meta; /* the input's ICC profile and EXIF, for the output */
    uint8_t *bytes; /* GPU pipeline: the file as read */
    size_t nbytes;
    int slot; /* GPU pipeline: the codec slot holding img and out */
    ic_bytes enc; /* GPU pipeline: the encoded file, held by the slot */
} item;

/* Frees an item with whatever it still holds. */
static void item_free(item *it)
{
    ic_image_free(&it->img);
    ic_image_free(&it->out);
    ic_metadata_free(&it->meta);
    free(it);
}

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    item **v;
    int cap, head, count, producers; /* closed when producers reaches 0 */
} queue;

static int queue_init(queue *q, int cap, int producers)
{
    memset(q, 0, sizeof *q);
    q->v = calloc((size_t)cap, sizeof *q->v);
    if (!q->v)
        return -1;
    q->cap = cap;
    q->producers = producers;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return 0;
}

static void queue_destroy(queue *q)
{
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

static void queue_push(queue *q, item *it)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap)
        pthread_cond_wait(&q->not_full, &q->mu);
    q->v[(q->head + q->count) % q->cap] = it;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* Waits for one item, then takes up to max-1 more that are already there.
 * Returns how many (0 once the queue is empty and every producer is done). */
static int queue_pop_n(queue *q, item **out, int max)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && q->producers > 0)
        pthread_cond_wait(&q->not_empty, &q->mu);
    int n = 0;
    while (q->count > 0 && n < max) {
        out[n++] = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    if (n > 0)
        pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
    return n;
}

/* NULL once the queue is empty and every producer is done. */
static item *queue_pop(queue *q)
{
    item *it = NULL;
    return queue_pop_n(q, &it, 1) ? it : NULL;
}

static void queue_producer_done(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
}

/* ---- the batch run ----------------------------------------------------------- */

typedef struct batch {
    const cli_options *o;
    blist files;
    queue raw, decoded, filtered; /* raw: GPU pipeline only (files as read) */
    queue encoded;                /* GPU pipeline: bytes waiting to be written */
    ic_gpu_codec *codec;          /* GPU pipeline: NULL for the host pipeline */
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t slot_freed;
    int *free_slots, nfree; /* GPU pipeline: codec slots not in use */
    int next, done, written, failed, skipped;
    double bytes, t0, last_draw;
    double ms_read, ms_decode, ms_filter, ms_encode, ms_write;
    int progress; /* draw a progress bar on stderr */
    int bar_shown;
    char **errors; /* "FILE\tproblem" for --json */
    int nerr;
    char **skips; /* "FILE\twhy" for --json */
    int nskip;
} batch;

static void clear_bar(batch *b)
{
    if (b->bar_shown) {
        fputs("\r\033[K", stderr);
        b->bar_shown = 0;
    }
}

static void draw_bar(batch *b, int force)
{
    const double now = cli_now_ms();
    if (!b->progress || (!force && now - b->last_draw < 100.0))
        return;
    b->last_draw = now;
    const int total = b->files.n;
    const double s = (now - b->t0) / 1e3;
    const double ips = s > 0 ? b->done / s : 0, mbs = s > 0 ? b->bytes / 1e6 / s : 0;
    const double eta = ips > 0 ? (total - b->done) / ips : 0;
    char bar[31];
    const int fill = total ? (int)(30.0 * b->done / total) : 30;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[30] = '\0';
    fprintf(stderr, "\r\033[K[%s] %d/%d files  %.1f images/s  %.1f MB/s  ETA %d:%02d", bar,
            b->done, total, ips, mbs, (int)eta / 60, (int)eta % 60);
    b->bar_shown = 1;
}

/* Appends "NAME\tTEXT" to a --json list (dropped when memory runs out). */
static void json_note(char ***list, int *n, const char *name, const char *text)
{
    char **nl = realloc(*list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl)
        return;
    *list = nl;
    size_t len = strlen(name) + strlen(text) + 2;
    if ((nl[*n] = malloc(len)) != NULL) {
        snprintf(nl[*n], len, "%s\t%s", name, text);
        (*n)++;
    }
}

/* Records a file skipped on purpose, with why (a line unless -q or --json). */
static void finish_skipped(batch *b, int idx)
{
    pthread_mutex_lock(&b->mu);
    b->done++;
    b->skipped++;
    const bfile *f = &b->files.v[idx];
    if (b->o->json) {
        json_note(&b->skips, &b->nskip, f->in, f->skip);
    } else if (!b->o->quiet) {
        clear_bar(b);
        fprintf(stderr, "imgconv: skipped %s: %s\n", f->in, f->skip);
    }
    draw_bar(b, 0);
    pthread_mutex_unlock(&b->mu);
}

/* Records the end of one file: ok, or the problem (printed at once). */
static void finish_file(batch *b, int idx, const char *problem)
{
    pthread_mutex_lock(&b->mu);
    b->done++;
    if (problem) {
        b->failed++;
        clear_bar(b);
        const char *name = b->files.v[idx].in;
        fprintf(stderr, "imgconv: error: %s: %s\n", name, problem);
        if (b->o->json)
            json_note(&b->errors, &b->nerr, name, problem);
    } else {
        b->written++;
        b->bytes += (double)b->files.v[idx].bytes;
    }
    draw_bar(b, problem != NULL);
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
            item_free(it);
            finish_file(b, i, problem);
            continue;
        }
        f->bytes = ic_image_row_bytes(&it->img) * (size_t)it->img.height *
                   (size_t)(it->img.layout == IC_SOA ? it->img.channels : 1);
        queue_push(&b->decoded, it);
    }
    queue_producer_done(&b->decoded);
    return NULL;
}

static void *encoder(void *arg)
{
    batch *b = arg;
    ic_save_options so = save_options_of(b->o);
    item *it;
    while ((it = queue_pop(&b->filtered)) != NULL) {
        if (g_interrupted) { /* saves under way finish (atomically); no new ones */
            ic_image_free(&it->out);
            item_free(it);
            continue;
        }
        char msg[256] = "";
        const double t = cli_now_ms();
        so.metadata = &it->meta;
        const ic_status s = cli_noted(ic_image_save(&it->out, b->files.v[it->idx].out, &so), msg,
                                      sizeof msg);
        add_time(b, &b->ms_encode, cli_now_ms() - t);
        char problem[320];
        if (s != IC_OK)
            snprintf(problem, sizeof problem, "cannot write %s: %s", b->files.v[it->idx].out,
                     msg[0] ? msg : ic_status_str(s));
        finish_file(b, it->idx, s == IC_OK ? NULL : problem);
        ic_image_free(&it->out);
        item_free(it);
    }
    return NULL;
}

/* The filter stage: one per filter worker (context). */
static void filter_stage(batch *b, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    item *it;
    while ((it = queue_pop(&b->decoded)) != NULL) {
        if (g_interrupted) { /* drain without work: the file is "not processed" */
            ic_image_free(&it->img);
            item_free(it);
            continue;
        }
        const double t = cli_now_ms();
        cli_err me;
        me.msg[0] = '\0';
        ic_status s = cli_check_memory(b->o, ctx, &it->img, k, "", &me) == CLI_EXIT_OK
                          ? IC_OK
                          : IC_ERR_TOO_LARGE;
        if (s == IC_OK)
            s = ic_image_create(&it->out, it->img.width, it->img.height, it->img.channels,
                                it->img.layout);
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
            item_free(it);
            continue;
        }
        queue_push(&b->filtered, it);
    }
    queue_producer_done(&b->filtered);
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
#define GPU_BATCH 16   /* files per batched decode */
#define GPU_SLOTS 48   /* images in flight on the device */
#define GPU_READERS 4  /* file reads in parallel */
#define GPU_RAW_AHEAD 32 /* files read ahead of the decoder */
#define GPU_WRITERS 16 /* atomic writes in parallel (each waits for an fsync) */

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
        queue_push(&b->raw, it);
    }
    queue_producer_done(&b->raw);
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
    while ((n = queue_pop_n(&b->raw, its, GPU_BATCH)) > 0) {
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
            queue_push(&b->decoded, it);
        }
    }
    queue_producer_done(&b->decoded);
    return NULL;
}

static void gpu_filter_stage(batch *b, ic_context *ctx, const ic_kernel *k, const ic_params *p)
{
    item *it;
    while ((it = queue_pop(&b->decoded)) != NULL) {
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
        queue_push(&b->filtered, it);
    }
    queue_producer_done(&b->filtered);
}

static void *gpu_encoder(void *arg)
{
    batch *b = arg;
    ic_save_options so = save_options_of(b->o);
    item *it;
    while ((it = queue_pop(&b->filtered)) != NULL) {
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
        queue_push(&b->encoded, it); /* the bytes stay in the slot until written */
    }
    queue_producer_done(&b->encoded);
    return NULL;
}

/* The atomic writes (temporary file, fsync, rename): many at once, since a
 * sync waits for the disk rather than for a core. */
static void *gpu_writer(void *arg)
{
    batch *b = arg;
    item *it;
    while ((it = queue_pop(&b->encoded)) != NULL) {
        const char *out = b->files.v[it->idx].out;
        char msg[256] = "";
        const double t = cli_now_ms();
        const ic_status s = cli_noted(ic_save_bytes(out, it->enc.data, it->enc.size), msg, sizeof msg);
        add_time(b, &b->ms_write, cli_now_ms() - t);
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
    const int nenc = 2 * jpeg_out >= b->files.n
                         ? 4
                         : clamp_int(online_cpus() * 3 / 4, 2, BATCH_MAX_ENCODERS);
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
        queue_producer_done(&b->raw);
    dec_started = nrd > 0 && pthread_create(&dec, NULL, gpu_decoder, b) == 0;
    if (!dec_started)
        queue_producer_done(&b->decoded);
    for (; nw < GPU_WRITERS; nw++)
        if (pthread_create(&wr[nw], NULL, gpu_writer, b) != 0)
            break;
    for (; ne < nenc && nw > 0; ne++)
        if (pthread_create(&enc[ne], NULL, gpu_encoder, b) != 0)
            break;
    for (int i = ne; i < nenc; i++)
        queue_producer_done(&b->encoded);
    if (nrd == 0 || !dec_started || ne == 0 || nw == 0)
        g_interrupted = 1; /* nothing can flow: stop at once, then report */
    if (!dec_started) { /* nobody would empty the file queue */
        item *it;
        while ((it = queue_pop(&b->raw)) != NULL)
            gpu_item_end(b, it, NULL, 0);
    }
    if (ne == 0) { /* nobody would empty the second queue */
        item *it;
        while ((it = queue_pop(&b->decoded)) != NULL)
            gpu_item_end(b, it, "cannot start an encoder thread", 1);
        queue_producer_done(&b->filtered);
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

static void json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n && s[i]; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

/* Prints "FILE\tTEXT" notes as {"file": FILE, KEY: TEXT} objects. */
static void json_pairs(char *const *notes, int n, const char *key)
{
    for (int i = 0; i < n; i++) {
        const char *tab = strchr(notes[i], '\t');
        printf("%s{\"file\": ", i ? ", " : "");
        json_string(stdout, notes[i], (size_t)(tab - notes[i]));
        printf(", \"%s\": ", key);
        json_string(stdout, tab + 1, (size_t)-1);
        printf("}");
    }
}

static void print_summary(const batch *b, const char *backend, double ms)
{
    const double s = ms / 1e3;
    const double ips = s > 0 ? b->written / s : 0, mbs = s > 0 ? b->bytes / 1e6 / s : 0;
    if (b->o->json) {
        printf("{\"files\": %d, \"written\": %d, \"skipped\": %d, \"failed\": %d, "
               "\"interrupted\": %s, \"backend\": ",
               b->files.n, b->written, b->skipped, b->failed, g_interrupted ? "true" : "false");
        json_string(stdout, backend, (size_t)-1);
        printf(", \"codec\": ");
        json_string(stdout, b->codec ? ic_gpu_codec_engine(b->codec) : "cpu", (size_t)-1);
        printf(", \"seconds\": %.3f, \"images_per_s\": %.2f, \"mb_per_s\": %.2f, "
               "\"stage_ms\": {\"read\": %.1f, \"decode\": %.1f, \"filter\": %.1f, "
               "\"encode\": %.1f, \"write\": %.1f}, \"errors\": [",
               s, ips, mbs, b->ms_read, b->ms_decode, b->ms_filter, b->ms_encode, b->ms_write);
        json_pairs(b->errors, b->nerr, "error");
        printf("], \"skipped_files\": [");
        json_pairs(b->skips, b->nskip, "reason");
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

/* What batch and stream mode set up before any file: the kernel, the
 * parameters (the kernel's .mat offset added to --bias, as for one file) and
 * one context with options c. On failure nothing is left to free. */
static int open_filter(const cli_options *o, const ic_context_options *c, ic_kernel *k,
                       ic_params *p, ic_context **ctx, cli_err *e)
{
    memset(k, 0, sizeof *k);
    *ctx = NULL;
    int code = cli_get_kernel(o, k, e);
    if (code != CLI_EXIT_OK)
        return code;
    *p = o->params;
    p->bias = (float)((double)p->bias + k->offset);
    char msg[256] = "";
    const ic_status s = cli_noted(ic_context_create(ctx, o->backend, c), msg, sizeof msg);
    if (s != IC_OK) {
        ic_kernel_free(k);
        return cli_fail(e, cli_exit_for_backend(s), NULL, "%s", msg[0] ? msg : ic_status_str(s));
    }
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
    if ((code = open_filter(o, &c0, &k, &p, &ctxs[0], e)) != CLI_EXIT_OK)
        return code;
    for (int i = 1; i < nwork; i++) {
        char msg[256] = "";
        const ic_context_options ci = worker_options(o, i);
        const ic_status s = cli_noted(ic_context_create(&ctxs[i], o->backend, &ci), msg, sizeof msg);
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
        rc = expand_input(&b.files, o->inputs[i]);
    if (rc == 0)
        rc = plan_outputs(&b.files, o);
    const int cpus = online_cpus();
    /* Encoding (PNG deflate, JPEG) costs about 4x decoding: most threads encode. */
    const int ndec = clamp_int(cpus / 4, 2, BATCH_MAX_DECODERS);
    const int nenc = clamp_int(cpus * 3 / 4, 2, BATCH_MAX_ENCODERS);
    /* JPEG inputs with a CUDA backend: the GPU pipeline and its codec. */
    char cmsg[256] = "";
    const ic_status cs =
        rc == 0 ? open_gpu_codec(o, &b.files, ctx, nwork, &b.codec, cmsg, sizeof cmsg) : IC_OK;
    if (cs != IC_OK) {
        list_free(&b.files);
        free_contexts(ctxs, nwork);
        ic_kernel_free(&k);
        pthread_mutex_destroy(&b.mu);
        return cli_fail(e, cli_exit_for_backend(cs), NULL, "GPU codec: %s",
                        cmsg[0] ? cmsg : ic_status_str(cs));
    }
    /* Small queues: images in flight are at most the threads' plus 4 + 4
     * (GPU pipeline: GPU_RAW_AHEAD files read ahead, GPU_SLOTS images). */
    if (rc == 0 && b.codec &&
        (queue_init(&b.raw, GPU_RAW_AHEAD, GPU_READERS) ||
         queue_init(&b.decoded, 2 * GPU_BATCH, 1) || queue_init(&b.filtered, 8, 1) ||
         queue_init(&b.encoded, GPU_SLOTS, BATCH_MAX_ENCODERS)))
        rc = -1;
    if (rc == 0 && !b.codec &&
        (queue_init(&b.decoded, 4, ndec) || queue_init(&b.filtered, 4, nwork)))
        rc = -1;
    if (rc != 0 || b.files.n == 0) {
        if (b.raw.v)
            queue_destroy(&b.raw);
        if (b.decoded.v)
            queue_destroy(&b.decoded);
        if (b.filtered.v)
            queue_destroy(&b.filtered);
        if (b.encoded.v)
            queue_destroy(&b.encoded);
        ic_gpu_codec_free(b.codec);
        list_free(&b.files);
        free_contexts(ctxs, nwork);
        ic_kernel_free(&k);
        pthread_mutex_destroy(&b.mu);
        return rc != 0 ? cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory")
                       : cli_fail(e, CLI_EXIT_INPUT, NULL, "no input files");
    }
    pthread_cond_init(&b.slot_freed, NULL);
    b.progress = !o->quiet && isatty(STDERR_FILENO);
    g_interrupted = 0;
    struct sigaction sa, old_int;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, &old_int);

    b.t0 = cli_now_ms();
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
            queue_producer_done(&b.decoded);
        if (started_dec == 0 || started_enc == 0)
            g_interrupted = 1; /* nothing can flow: stop at once, then report */
        if (started_enc == 0) { /* nobody would empty the second queue */
            item *it;
            while ((it = queue_pop(&b.decoded)) != NULL) {
                finish_file(&b, it->idx, "cannot start an encoder thread");
                item_free(it);
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
                        queue_producer_done(&b.filtered);
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
    const double ms = cli_now_ms() - b.t0;
    sigaction(SIGINT, &old_int, NULL);
    pthread_mutex_lock(&b.mu);
    draw_bar(&b, 1);
    clear_bar(&b);
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
        queue_destroy(&b.raw);
    if (b.encoded.v)
        queue_destroy(&b.encoded);
    queue_destroy(&b.decoded);
    queue_destroy(&b.filtered);
    ic_gpu_codec_free(b.codec);
    pthread_cond_destroy(&b.slot_freed);
    pthread_mutex_destroy(&b.mu);
    list_free(&b.files);
    free_contexts(ctxs, nwork);
    ic_kernel_free(&k);
    if (interrupted)
        return cli_fail(e, CLI_EXIT_INPUT, NULL, "interrupted: %d of %d files not processed",
                        not_done, total);
    if (failed)
        return cli_fail(e, CLI_EXIT_INPUT, NULL, "%d of %d files failed", failed, total);
    return CLI_EXIT_OK;
}

/* ---- the raw frame stream ------------------------------------------------------ */

/* Three stages over two small rings of frame buffers: a reader thread fills
 * input frames from stdin, this thread filters them (the only thread that
 * touches the context), a writer thread writes the filtered frames to stdout
 * in order. Every wait is on a condition variable. The run ends as the serial
 * loop "read frame i, filter it, write it" would: the first error in that
 * order is the one reported, and no frame after it is written. */

#define STREAM_RING 3 /* frames per ring: at most 3 read ahead + 3 waiting to be written */

/* Frame buffers handed from a producer thread to a consumer thread in order.
 * The producer fills buf[put % n] while put - freed < n; the consumer takes
 * buf[taken % n] while taken < put and gives it back (freed++) when done. */
typedef struct frame_ring {
    uint8_t *buf[STREAM_RING];
    ic_image img[STREAM_RING];
    int n; /* buffers allocated: 1..STREAM_RING */
    long put, taken, freed;
} frame_ring;

typedef struct stream {
    size_t frame; /* bytes per frame */
    pthread_mutex_t mu; /* guards everything below */
    pthread_cond_t wake_reader, wake_filter, wake_writer;
    frame_ring in, out;
    int stop;          /* the filter stage is done: read no more */
    int reader_exited; /* the reader thread returns without reading again */
    int in_end;        /* no more input frames: end of input, short frame or read error */
    size_t in_got;     /* bytes of a short final frame (0: clean end) */
    int in_errno;      /* read error (0: none) */
    int filter_end;    /* the filter stage publishes no more frames */
    int out_failed;    /* a write failed: out_errno, at frame out_frame */
    int out_errno;
    long out_frame;
    int flush_failed; /* the final fflush failed: flush_errno */
    int flush_errno;
    long written;
} stream;

/* A pthread call that cannot fail unless the program is wrong (locking an
 * initialised mutex, waiting on a condition, ...): stop loudly if it does. */
static void stream_must(int rc, const char *what)
{
    if (rc != 0) {
        fprintf(stderr, "imgconv: error: internal: %s: %s\n", what, strerror(rc));
        abort();
    }
}

static void stream_lock(stream *st)
{
    stream_must(pthread_mutex_lock(&st->mu), "pthread_mutex_lock");
}

static void stream_unlock(stream *st)
{
    stream_must(pthread_mutex_unlock(&st->mu), "pthread_mutex_unlock");
}

static void stream_wait(stream *st, pthread_cond_t *cv)
{
    stream_must(pthread_cond_wait(cv, &st->mu), "pthread_cond_wait");
}

static void stream_signal(pthread_cond_t *cv)
{
    stream_must(pthread_cond_signal(cv), "pthread_cond_signal");
}

/* Reads up to n bytes of standard input; returns how many (less only at end
 * of file or on a read error, *err then errno). read(2), not stdio: the only
 * place the reader thread can be cancelled is inside read(), holding no lock,
 * when the run ends early while the input stays open without data. */
static size_t read_full(uint8_t *p, size_t n, int *err)
{
    size_t got = 0;
    *err = 0;
    while (got < n) {
        const size_t want = n - got < ((size_t)1 << 30) ? n - got : (size_t)1 << 30;
        int old;
        stream_must(pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, &old), "pthread_setcancelstate");
        const ssize_t r = read(STDIN_FILENO, p + got, want);
        const int saved = errno;
        stream_must(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old),
                    "pthread_setcancelstate");
        if (r > 0) {
            got += (size_t)r;
        } else if (r == 0) {
            break;
        } else if (saved != EINTR) {
            *err = saved;
            break;
        }
    }
    return got;
}

static void *stream_reader(void *arg)
{
    stream *st = arg;
    int old;
    stream_must(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), "pthread_setcancelstate");
    frame_ring *r = &st->in;
    for (;;) {
        stream_lock(st);
        while (!st->stop && r->put - r->freed >= r->n)
            stream_wait(st, &st->wake_reader);
        const int stop = st->stop;
        uint8_t *buf = r->buf[r->put % r->n];
        stream_unlock(st);
        if (stop)
            break;
        int err;
        const size_t got = read_full(buf, st->frame, &err);
        stream_lock(st);
        const int end = got < st->frame || err != 0;
        if (end) {
            st->in_end = 1;
            st->in_got = got;
            st->in_errno = err;
        } else {
            r->put++;
        }
        stream_signal(&st->wake_filter);
        stream_unlock(st);
        if (end)
            break;
    }
    stream_lock(st);
    st->reader_exited = 1;
    stream_unlock(st);
    return NULL;
}

static void *stream_writer(void *arg)
{
    stream *st = arg;
    frame_ring *r = &st->out;
    for (;;) {
        stream_lock(st);
        while (r->taken == r->put && !st->filter_end)
            stream_wait(st, &st->wake_writer);
        if (r->taken == r->put) { /* the filter stage is done and every frame written */
            stream_unlock(st);
            break;
        }
        const uint8_t *buf = r->buf[r->taken % r->n];
        r->taken++;
        stream_unlock(st);
        /* One frame and its flush as a unit that a fatal signal lets finish,
         * so the output holds whole frames only (issue 13). */
        if (!cli_output_begin())
            for (;;)
                pause(); /* the process is dying */
        const int ok = fwrite(buf, 1, st->frame, stdout) == st->frame && fflush(stdout) == 0;
        const int saved = errno;
        cli_output_end();
        stream_lock(st);
        r->freed++;
        if (ok) {
            st->written++;
        } else {
            st->out_failed = 1;
            st->out_errno = saved;
            st->out_frame = r->taken;
        }
        stream_signal(&st->wake_filter);
        stream_unlock(st);
        if (!ok)
            return NULL;
    }
    if (fflush(stdout) != 0) {
        const int saved = errno;
        stream_lock(st);
        st->flush_failed = 1;
        st->flush_errno = saved;
        stream_unlock(st);
    }
    return NULL;
}

/* Allocates 1..STREAM_RING frame buffers (fewer than STREAM_RING when memory
 * is short: one still works, without overlap); -1 when not even one. */
static int ring_alloc(frame_ring *r, int w, int h, int c, size_t frame)
{
    memset(r, 0, sizeof *r);
    while (r->n < STREAM_RING) {
        uint8_t *b = malloc(frame);
        if (!b)
            break;
        if (ic_image_wrap(&r->img[r->n], b, w, h, c, IC_AOS, 0) != IC_OK) {
            free(b);
            break;
        }
        r->buf[r->n++] = b;
    }
    return r->n > 0 ? 0 : -1;
}

static void ring_free(frame_ring *r)
{
    for (int i = 0; i < r->n; i++)
        free(r->buf[i]);
    r->n = 0;
}

/* Initialises the lock and the conditions; 0, or the pthread error. */
static int stream_sync_init(stream *st)
{
    int rc = pthread_mutex_init(&st->mu, NULL);
    if (rc != 0)
        return rc;
    pthread_cond_t *cv[3] = {&st->wake_reader, &st->wake_filter, &st->wake_writer};
    for (int i = 0; i < 3; i++) {
        if ((rc = pthread_cond_init(cv[i], NULL)) != 0) {
            while (i-- > 0)
                stream_must(pthread_cond_destroy(cv[i]), "pthread_cond_destroy");
            stream_must(pthread_mutex_destroy(&st->mu), "pthread_mutex_destroy");
            return rc;
        }
    }
    return 0;
}

static void stream_sync_destroy(stream *st)
{
    stream_must(pthread_cond_destroy(&st->wake_reader), "pthread_cond_destroy");
    stream_must(pthread_cond_destroy(&st->wake_filter), "pthread_cond_destroy");
    stream_must(pthread_cond_destroy(&st->wake_writer), "pthread_cond_destroy");
    stream_must(pthread_mutex_destroy(&st->mu), "pthread_mutex_destroy");
}

/* Ends the reader: no more reads; one blocked in read() on an input that
 * stays open is cancelled there. */
static void stream_stop_reader(stream *st, pthread_t reader)
{
    stream_lock(st);
    st->stop = 1;
    stream_must(pthread_cond_broadcast(&st->wake_reader), "pthread_cond_broadcast");
    const int exited = st->reader_exited;
    stream_unlock(st);
    if (!exited) {
        const int rc = pthread_cancel(reader);
        if (rc != ESRCH) /* ESRCH: it has just returned */
            stream_must(rc, "pthread_cancel");
    }
    stream_must(pthread_join(reader, NULL), "pthread_join");
}

/* Ends the writer once it has written every frame published so far. */
static void stream_end_writer(stream *st, pthread_t writer)
{
    stream_lock(st);
    st->filter_end = 1;
    stream_signal(&st->wake_writer);
    stream_unlock(st);
    stream_must(pthread_join(writer, NULL), "pthread_join");
}

int cli_run_stream(const cli_options *o, cli_err *e)
{
    const int w = o->stream_w, h = o->stream_h, c = o->stream_c;
    ic_kernel k;
    ic_params p;
    ic_context *ctx;
    int code = open_filter(o, &o->ctx, &k, &p, &ctx, e); /* --devices: one image split */
    if (code != CLI_EXIT_OK)
        return code;
    stream st;
    memset(&st, 0, sizeof st);
    /* w, h <= IC_MAX_DIM and c <= 4: the product fits in 64 bits. */
    st.frame = (size_t)w * (size_t)h * (size_t)c;
    if (ring_alloc(&st.in, w, h, c, st.frame) != 0 ||
        ring_alloc(&st.out, w, h, c, st.frame) != 0) {
        ring_free(&st.in);
        ic_context_free(ctx);
        ic_kernel_free(&k);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory for %dx%dx%d frames", w, h, c);
    }
    int rc = stream_sync_init(&st);
    if (rc != 0) {
        ring_free(&st.in);
        ring_free(&st.out);
        ic_context_free(ctx);
        ic_kernel_free(&k);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot set up the frame pipeline: %s",
                        strerror(rc));
    }
    signal(SIGPIPE, SIG_IGN); /* a closed reader becomes a write error, not a kill */
    const double t0 = cli_now_ms();
    pthread_t reader, writer;
    if ((rc = pthread_create(&writer, NULL, stream_writer, &st)) == 0 &&
        (rc = pthread_create(&reader, NULL, stream_reader, &st)) != 0)
        stream_end_writer(&st, writer); /* nothing published: it writes nothing */
    if (rc != 0) {
        stream_sync_destroy(&st);
        ring_free(&st.in);
        ring_free(&st.out);
        ic_context_free(ctx);
        ic_kernel_free(&k);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot start a stream thread: %s",
                        strerror(rc));
    }

    /* The filter stage. */
    ic_status fs = IC_OK;
    long filter_frame = 0; /* the frame that failed to filter */
    char filter_msg[256] = "";
    for (;;) {
        stream_lock(&st);
        while (st.in.taken == st.in.put && !st.in_end && !st.out_failed)
            stream_wait(&st, &st.wake_filter);
        if (st.out_failed || st.in.taken == st.in.put) { /* a write failed, or no more input */
            stream_unlock(&st);
            break;
        }
        const ic_image *src = &st.in.img[st.in.taken % st.in.n];
        st.in.taken++;
        while (st.out.put - st.out.freed >= st.out.n && !st.out_failed)
            stream_wait(&st, &st.wake_filter);
        if (st.out_failed) {
            stream_unlock(&st);
            break;
        }
        ic_image *dst = &st.out.img[st.out.put % st.out.n];
        stream_unlock(&st);
        fs = ic_convolve(ctx, src, dst, &k, &p);
        if (fs != IC_OK) {
            filter_frame = st.in.taken; /* only this thread changes in.taken */
            snprintf(filter_msg, sizeof filter_msg, "%s",
                     ic_last_error()[0] ? ic_last_error() : ic_status_str(fs));
        }
        stream_lock(&st);
        st.in.freed++;
        stream_signal(&st.wake_reader);
        if (fs == IC_OK) {
            st.out.put++;
            stream_signal(&st.wake_writer);
        }
        stream_unlock(&st);
        if (fs != IC_OK)
            break;
    }
    stream_stop_reader(&st, reader);
    stream_end_writer(&st, writer);
    const double ms = cli_now_ms() - t0;

    /* The first failure in the serial order read i < filter i < write i. */
    const long read_frame = st.in_end && (st.in_got > 0 || st.in_errno) ? st.in.put + 1 : 0;
    long first = 0;
    int which = 0; /* 1 read, 2 filter, 3 write */
    if (read_frame) {
        first = 3 * read_frame;
        which = 1;
    }
    if (fs != IC_OK && (!which || 3 * filter_frame + 1 < first)) {
        first = 3 * filter_frame + 1;
        which = 2;
    }
    if (st.out_failed && (!which || 3 * st.out_frame + 2 < first)) {
        first = 3 * st.out_frame + 2;
        which = 3;
    }
    code = CLI_EXIT_OK;
    if (which == 1)
        code = st.in_errno ? cli_fail(e, CLI_EXIT_INPUT, "standard input", "read error: %s",
                                      strerror(st.in_errno))
                           : cli_fail(e, CLI_EXIT_INPUT, "standard input",
                                      "short final frame: %zu of %zu bytes (frame %ld)",
                                      st.in_got, st.frame, read_frame);
    else if (which == 2)
        code = cli_fail(e, cli_exit_for_backend(fs), NULL, "frame %ld: %s", filter_frame,
                        filter_msg);
    else if (which == 3)
        code = cli_fail(e, CLI_EXIT_OUTPUT, "standard output", "write error: %s",
                        strerror(st.out_errno));
    else if (st.flush_failed)
        code = cli_fail(e, CLI_EXIT_OUTPUT, "standard output", "write error: %s",
                        strerror(st.flush_errno));
    if (o->time)
        fprintf(stderr, "imgconv: %ld frames of %dx%dx%d in %.2f s: %.1f frames/s (backend %s)\n",
                st.written, w, h, c, ms / 1e3, ms > 0 ? st.written * 1e3 / ms : 0.0,
                ic_context_backend(ctx));
    stream_sync_destroy(&st);
    ring_free(&st.in);
    ring_free(&st.out);
    ic_context_free(ctx);
    ic_kernel_free(&k);
    return code;
}
