/*
 * png_inflate_strips.c - the fast PNG reader on several threads, for files
 * whose IDAT stream is a run of strips that each inflate alone and whose
 * icST chunk says where each begins (imgconv's own, png_strips.c): each
 * strip is inflated by its own libdeflate call into a buffer of the
 * worker's and unfiltered from there into the image's rows, strips spread
 * over the threads. A strip whose first row is NONE or SUB (the writer's
 * choice where it costs little) is unfiltered at once; one whose first row
 * looks up waits for the strip above.
 *
 * The chunk is a hint, never trusted: the offsets must rise from the zlib
 * header to the Adler-32; each strip must inflate to exactly its rows and
 * end exactly at the next one's offset, the last exactly at the Adler-32,
 * which must match the rows. A strip that is not the last is inflated with
 * a final stored block of random bytes appended: it is read back as such
 * only when the strip ends on a block boundary, on a byte, without a final
 * block, so that the whole stream parses as the strips do (a back
 * reference into the strip before fails libdeflate's own check). Whatever
 * fails is left to png_inflate.c's single call, which gives today's verdict.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "imgconv.h"
#include "core/image_internal.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_LIBDEFLATE

#include <libdeflate.h>
#include <zlib.h>

/* The stored block appended to a strip: header (final, stored), LEN 8,
 * NLEN, 8 bytes that a crafted strip cannot foresee. */
#define TAIL_DATA 8
#define TAIL (5 + TAIL_DATA)

typedef struct strip {
    uint32_t row;   /* first row */
    uint32_t rows;  /* rows */
    uint64_t at, n; /* its deflate bytes in the stream */
    uint32_t adler; /* of its filtered rows */
} strip;

typedef struct worker {
    struct libdeflate_decompressor *d;
    uint8_t *in;  /* a strip's bytes and the tail */
    uint8_t *out; /* a strip's filtered rows */
} worker;

typedef struct job {
    const uint8_t *z;
    ic_image *img;
    strip *s;
    int count, isa;
    size_t row, bpp, in_room, out_room;
    uint8_t tail[TAIL];
    const uint8_t *zeros;
    worker *w;
    atomic_int failed;
    int *state; /* per strip, under lock */
    pthread_mutex_t lock;
    pthread_cond_t changed;
} job;

static uint32_t be32(const uint8_t *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static int host_little_endian(void)
{
    const uint16_t one = 1;
    uint8_t b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* Strip k's filtered rows into w->out; 1 when they are exactly its rows. */
static int strip_inflate(job *j, strip *s, worker *w)
{
    if (!w->d && !(w->d = libdeflate_alloc_decompressor()))
        return 0;
    if (!w->out && !(w->out = malloc(j->out_room)))
        return 0;
    const size_t want = (size_t)s->rows * (j->row + 1);
    const uint8_t *in = j->z + s->at;
    size_t in_n = s->n, out_n = want;
    if (s->row + s->rows < (uint32_t)j->img->height) {
        if (!w->in && !(w->in = malloc(j->in_room)))
            return 0;
        memcpy(w->in, in, s->n);
        memcpy(w->in + s->n, j->tail, TAIL);
        in = w->in;
        in_n += TAIL;
        out_n += TAIL_DATA;
    }
    size_t used_in = 0, used_out = 0;
    if (libdeflate_deflate_decompress_ex(w->d, in, in_n, w->out, out_n, &used_in, &used_out) !=
            LIBDEFLATE_SUCCESS ||
        used_in != in_n || used_out != out_n)
        return 0;
    /* The tail read back as written, and not as the end of a stored block
     * of the strip's own that took in the tail's header. */
    if (out_n > want && (memcmp(w->out + want, j->tail + 5, TAIL_DATA) != 0 ||
                         (want >= 5 && memcmp(w->out + want - 5, j->tail, 5) == 0)))
        return 0;
    s->adler = (uint32_t)libdeflate_adler32(1, w->out, want);
    return 1;
}

/* Strip k's rows unfiltered from w->out into the image, 16-bit samples
 * turned to host order but for its last row, which the next strip may
 * need as stored. */
static int strip_unfilter(job *j, const strip *s, const worker *w)
{
    const int swap = j->img->type == IC_U16 && host_little_endian();
    uint8_t *dst = j->img->data + (size_t)s->row * j->img->pitch;
    for (uint32_t y = 0; y < s->rows; y++, dst += j->img->pitch) {
        const uint8_t *raw = w->out + (size_t)y * (j->row + 1);
        /* A first row of NONE or SUB reads no row above: never the strip
         * above's, which another thread may be writing. */
        const uint8_t *prev = y || (s->row && raw[0] > 1) ? dst - j->img->pitch : j->zeros;
        if (!ic_png_unfilter_row(dst, raw + 1, prev, j->row, j->bpp, raw[0], j->isa))
            return 0;
        if (swap && y > 0) /* the row above is no longer needed big-endian */
            ic_io_be16_load((uint16_t *)(void *)(dst - j->img->pitch), dst - j->img->pitch,
                            j->row / 2);
    }
    return 1;
}

/* Strip k's state (0 pending, 1 done, 2 failed), told to its waiters. */
static void strip_state_set(job *j, int k, int state)
{
    pthread_mutex_lock(&j->lock);
    j->state[k] = state;
    pthread_cond_broadcast(&j->changed);
    pthread_mutex_unlock(&j->lock);
}

static int strip_state_wait(job *j, int k)
{
    pthread_mutex_lock(&j->lock);
    while (j->state[k] == 0)
        pthread_cond_wait(&j->changed, &j->lock);
    const int state = j->state[k];
    pthread_mutex_unlock(&j->lock);
    return state;
}

/* Inflated alone, then unfiltered, after the strip above when its first
 * row looks up (items are handed out in order, so that one is under way). */
static void strip_item(void *arg, int k, int worker_no)
{
    job *j = arg;
    strip *s = &j->s[k];
    worker *w = &j->w[worker_no];
    int ok = !atomic_load(&j->failed) && strip_inflate(j, s, w);
    if (ok && s->row > 0 && w->out[0] > 1)
        ok = strip_state_wait(j, k - 1) == 1;
    ok = ok && strip_unfilter(j, s, w);
    if (!ok)
        atomic_store(&j->failed, 1);
    strip_state_set(j, k, ok ? 1 : 2);
}

/* The strips of the map, checked against the stream (zn bytes with the
 * Adler-32) and the image; NULL when they do not describe it. */
static strip *strips_parse(const uint8_t *map, size_t mapn, size_t zn, const ic_image *img,
                           int *count)
{
    const size_t c = mapn / IC_PNG_STRIPS_ENTRY;
    if (mapn % IC_PNG_STRIPS_ENTRY != 0 || c < 1 || c > (size_t)img->height || zn < 7)
        return NULL;
    strip *s = malloc(c * sizeof *s);
    for (size_t k = 0; s && k < c; k++) {
        const uint8_t *e = map + k * IC_PNG_STRIPS_ENTRY;
        s[k].row = be32(e);
        s[k].at = (uint64_t)be32(e + 4) << 32 | be32(e + 8);
        const int ok = k == 0 ? s[k].row == 0 && s[k].at == 2
                              : s[k].row > s[k - 1].row && s[k].row < (uint32_t)img->height &&
                                    s[k].at > s[k - 1].at && s[k].at < zn - 4;
        if (!ok) {
            free(s);
            return NULL;
        }
        if (k > 0) {
            s[k - 1].rows = s[k].row - s[k - 1].row;
            s[k - 1].n = s[k].at - s[k - 1].at;
        }
    }
    if (s) {
        s[c - 1].rows = (uint32_t)img->height - s[c - 1].row;
        s[c - 1].n = zn - 4 - s[c - 1].at;
    }
    *count = (int)c;
    return s;
}

/* Bytes no crafted file can know in advance. */
static void tail_make(uint8_t tail[TAIL], const void *salt)
{
    struct timespec ts;
    timespec_get(&ts, TIME_UTC);
    uint64_t x = (uint64_t)ts.tv_nsec ^ (uint64_t)ts.tv_sec << 32 ^ (uint64_t)(uintptr_t)salt;
    tail[0] = 1; /* final, stored */
    tail[1] = TAIL_DATA;
    tail[2] = 0;
    tail[3] = (uint8_t)~TAIL_DATA;
    tail[4] = 0xff;
    for (int i = 0; i < TAIL_DATA; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        tail[5 + i] = (uint8_t)(x >> 56);
    }
}

int ic_png_inflate_strips(const uint8_t *z, size_t zn, const uint8_t *map, size_t mapn,
                          ic_image *img, int threads, int isa)
{
    if (!map || !ic_png_zlib_header_ok(z, zn, ic_png_inflated_size(img)))
        return 0;
    job j;
    memset(&j, 0, sizeof j);
    j.s = strips_parse(map, mapn, zn, img, &j.count);
    if (!j.s)
        return 0;
    j.z = z;
    j.img = img;
    j.isa = isa;
    j.bpp = (size_t)img->channels * ic_sample_size(img->type);
    j.row = (size_t)img->width * j.bpp;
    size_t most_rows = 0;
    for (int k = 0; k < j.count; k++) {
        if (j.s[k].rows > most_rows)
            most_rows = j.s[k].rows;
        if (j.s[k].n + TAIL > j.in_room)
            j.in_room = j.s[k].n + TAIL;
    }
    j.out_room = most_rows * (j.row + 1) + TAIL_DATA;
    /* A worker's buffers are a strip's: as many as there are strips, and
     * uneven strips no more memory than the rows of the whole image. */
    const size_t total = ic_png_inflated_size(img);
    size_t workers = threads < 1 ? 1 : threads > IC_PNG_MAX_THREADS ? IC_PNG_MAX_THREADS : threads;
    if (workers > (size_t)j.count)
        workers = (size_t)j.count;
    if (workers > total / j.out_room)
        workers = total / j.out_room > 0 ? total / j.out_room : 1;
    if (workers > zn / j.in_room)
        workers = zn / j.in_room > 0 ? zn / j.in_room : 1;
    tail_make(j.tail, &j);
    uint8_t *zeros = calloc(1, j.row);
    j.zeros = zeros;
    j.w = calloc(workers, sizeof *j.w);
    j.state = calloc((size_t)j.count, sizeof *j.state);
    int ok = zeros && j.w && j.state && pthread_mutex_init(&j.lock, NULL) == 0;
    if (ok && pthread_cond_init(&j.changed, NULL) != 0) {
        pthread_mutex_destroy(&j.lock);
        ok = 0;
    }
    if (ok) {
        ic_png_parallel_for((int)workers, j.count, strip_item, &j);
        ok = !atomic_load(&j.failed);
        pthread_cond_destroy(&j.changed);
        pthread_mutex_destroy(&j.lock);
    }
    /* The strips' last rows, kept as stored for the strip below. */
    for (int k = 0; ok && img->type == IC_U16 && host_little_endian() && k < j.count; k++) {
        uint8_t *last = img->data + (size_t)(j.s[k].row + j.s[k].rows - 1) * img->pitch;
        ic_io_be16_load((uint16_t *)(void *)last, last, j.row / 2);
    }
    uint32_t adler = 1;
    for (int k = 0; ok && k < j.count; k++)
        adler = (uint32_t)adler32_combine(adler, j.s[k].adler,
                                          (z_off_t)((size_t)j.s[k].rows * (j.row + 1)));
    ok = ok && adler == be32(z + zn - 4);
    for (size_t i = 0; j.w && i < workers; i++) {
        if (j.w[i].d)
            libdeflate_free_decompressor(j.w[i].d);
        free(j.w[i].in);
        free(j.w[i].out);
    }
    free(j.w);
    free(j.state);
    free(zeros);
    free(j.s);
    return ok;
}

#endif /* IC_HAVE_LIBDEFLATE */
