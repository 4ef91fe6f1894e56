/*
 * jpeg_restart.c - a baseline JPEG with restart markers decoded in parts on
 * several threads, to exactly the pixels of the one-thread decode.
 *
 * A restart marker resets the entropy decoder (bit buffer, DC predictions),
 * so the data after one decodes without what came before. The file's
 * entropy-coded data is scanned once for its RST markers; the parts are cut
 * at markers that start an MCU row, and each part is decoded by its own
 * libjpeg decompressor over a stream made for it: the file's header up to
 * its SOS with the SOF's height set to the part's rows (plus one MCU row,
 * below), then the file's data from the part's first marker on, the RST
 * numbers counted again from 0 as a decoder expects after an SOS.
 *
 * Same pixels. The IDCT of a block and the colour conversion of a pixel do
 * not look at other blocks; the vertical "fancy" upsampling of 4:2:0 and
 * 4:4:0 chroma mixes each chroma row with the one above or below it. So a
 * part is decoded one MCU row taller than it is: its own last row then sees
 * the chroma below it, and the first output row of the next part, which
 * sees the chroma above it, is taken from this part; a part's own first row,
 * which saw its edge replicated instead, is left to the part above.
 *
 * Same verdict. The one-thread decoder reads the file in jpeg_stdio_src's
 * 4096-byte pieces, and libjpeg-turbo's Huffman decoder takes its fast path
 * (which decodes a bad code as 0 without a warning) only with enough bytes
 * left in the piece: each part is fed the file in the same pieces, at the
 * same offsets, so every MCU is decoded on the same path from the same
 * state. The extra MCU row makes each part read the restart marker after
 * it as the one-thread decoder does, and bytes it skipped there and did not
 * yet report fail the part too. Any libjpeg error or damage warning in any
 * part, a marker out of turn, data that does not end in EOI: the caller
 * decodes the file on one thread again, which gives today's verdict.
 *
 * Little on one thread. The threads start before the markers are scanned
 * and fault in a slice each of the caller's unzeroed image meanwhile; this
 * thread scans, plans, lets them go and decodes the last part, the shortest.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/error.h"
#include "core/image_internal.h"
#include "imgconv.h"
#include "io/io_internal.h"

#ifdef IC_HAVE_JPEG

#include "io/jpeg_internal.h"
/* after jpeglib.h (jpeg_internal.h): jerror.h reads its configuration */
#include <jerror.h>

/* The marker reader's count of skipped bytes, which libjpeg's jpegint.h
 * calls "nominally internal, but applications ... might like to know": a
 * part reads it to see bytes skipped and not yet reported. Installs of
 * libjpeg-turbo built from source leave jpegint.h out; the struct is then
 * declared here as every libjpeg since 6b lays it out. */
#if defined(__has_include)
#if __has_include(<jpegint.h>)
#include <jpegint.h>
#define IC_JPEG_HAVE_JPEGINT 1
#endif
#endif
#ifndef IC_JPEG_HAVE_JPEGINT
struct jpeg_marker_reader {
    void (*reset_marker_reader)(j_decompress_ptr cinfo);
    int (*read_markers)(j_decompress_ptr cinfo);
    jpeg_marker_parser_method read_restart_marker;
    boolean saw_SOI;
    boolean saw_SOF;
    int next_restart_num;
    unsigned int discarded_bytes;
};
#endif

/* jpeg_stdio_src's buffer: the pieces the one-thread decoder reads. */
#define PIECE 4096
/* The least pixels of a part: below, the threads and decompressors cost
 * more than they save (a 1 MP image makes two parts). */
#define PART_MIN_PIXELS (1u << 19)
/* At most this many parts (and threads). */
#define MAX_PARTS 256

static unsigned be16(const uint8_t *p)
{
    return (unsigned)p[0] << 8 | p[1];
}

/* The file as the parts see it. */
typedef struct layout {
    const uint8_t *data;
    size_t n;
    size_t sof;  /* the SOF0/SOF1 marker */
    size_t head; /* the header's bytes: through the SOS segment */
    int interval;
    int count;     /* restart intervals */
    size_t *start; /* interval j's data begins at start[j] (after its RST) */
} layout;

/* The header's SOF and where its (first) SOS segment ends; 0 for anything
 * but plain segments from SOI to SOS. */
static int head_parse(layout *l)
{
    const uint8_t *p = l->data;
    const size_t n = l->n;
    if (n < 4 || p[0] != 0xFF || p[1] != 0xD8)
        return 0;
    l->sof = 0;
    for (size_t i = 2; i + 4 <= n;) {
        if (p[i] != 0xFF)
            return 0;
        const unsigned m = p[i + 1];
        const size_t len = be16(p + i + 2);
        if (m == 0xFF || m == 0 || (m >= 0xD0 && m <= 0xD9) || len < 2 || i + 2 + len > n)
            return 0;
        if (m == 0xC0 || m == 0xC1) {
            if (l->sof || len < 8)
                return 0;
            l->sof = i;
        } else if (m >= 0xC2 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC) {
            return 0; /* another SOF */
        }
        if (m == 0xDA) {
            l->head = i + 2 + len;
            return l->sof != 0;
        }
        i += 2 + len;
    }
    return 0;
}

/* Finds the RST markers: start[j] for every interval, RSTs in turn, and
 * the EOI right after the last interval. 0 otherwise. */
static int scan_restarts(layout *l)
{
    const uint8_t *p = l->data;
    const size_t n = l->n;
    size_t i = l->head;
    int j = 1;
    l->start[0] = l->head;
    for (;;) {
        const uint8_t *q = i < n ? memchr(p + i, 0xFF, n - i) : NULL;
        if (!q)
            return 0;
        size_t k = (size_t)(q - p) + 1;
        while (k < n && p[k] == 0xFF)
            k++;
        if (k >= n)
            return 0;
        const unsigned c = p[k];
        i = k + 1;
        if (c == 0)
            continue; /* a stuffed 0xFF data byte */
        if (c >= 0xD0 && c <= 0xD7) {
            if (j >= l->count || c != 0xD0u + (unsigned)((j - 1) & 7))
                return 0;
            l->start[j++] = i;
            continue;
        }
        return c == 0xD9 && j == l->count;
    }
}

/* One part: intervals from `first` on, output rows [y0, y1) of the image
 * kept (the rest go to a scratch row), its stream `height` rows tall. */
typedef struct part {
    int first;
    int y0, height;
    int keep0, keep1;
    int last;
    int ok;
} part;

typedef struct job {
    const layout *l;
    ic_image *img;
    int out_ch;
    J_COLOR_SPACE space;
    int fail_part; /* tests */
    part parts[MAX_PARTS];
} job;

/* The stream a part reads: piece 0 is the header (SOF height patched) and
 * the file's bytes up to the next PIECE boundary; then the file's pieces,
 * the RST numbers shifted by the part's first interval. */
typedef struct part_src {
    struct jpeg_source_mgr pub; /* first: libjpeg sees only this part */
    const layout *l;
    int first;     /* the part's first interval */
    int next_rst;  /* the next marker of l->start to rewrite (index j) */
    size_t pos;    /* file offset of the next piece */
    uint8_t *head; /* piece 0 */
    size_t head_n;
    uint8_t piece[PIECE];
    int started;
} part_src;

static const JOCTET fake_eoi[2] = {0xFF, JPEG_EOI};

static void src_init(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

/* Copies the file's bytes [from, to) into dst with the RST markers among
 * them numbered for the part. */
static void src_copy(part_src *s, uint8_t *dst, size_t from, size_t to)
{
    const layout *l = s->l;
    memcpy(dst, l->data + from, to - from);
    /* The Dn byte of marker j sits at start[j] - 1. */
    while (s->next_rst < l->count && l->start[s->next_rst] - 1 < to) {
        const size_t at = l->start[s->next_rst] - 1;
        if (at >= from)
            dst[at - from] = (uint8_t)(0xD0 + ((s->next_rst - 1 - s->first) & 7));
        s->next_rst++;
    }
}

static boolean src_fill(j_decompress_ptr cinfo)
{
    part_src *s = (part_src *)cinfo->src;
    const layout *l = s->l;
    if (!s->started) {
        s->started = 1;
        s->pub.next_input_byte = s->head;
        s->pub.bytes_in_buffer = s->head_n;
        return TRUE;
    }
    if (s->pos >= l->n) { /* as jpeg_stdio_src does at the end of the file */
        WARNMS(cinfo, JWRN_JPEG_EOF);
        s->pub.next_input_byte = fake_eoi;
        s->pub.bytes_in_buffer = 2;
        return TRUE;
    }
    size_t to = (s->pos / PIECE + 1) * PIECE;
    if (to > l->n)
        to = l->n;
    src_copy(s, s->piece, s->pos, to);
    s->pub.next_input_byte = s->piece;
    s->pub.bytes_in_buffer = to - s->pos;
    s->pos = to;
    return TRUE;
}

static void src_skip(j_decompress_ptr cinfo, long num_bytes)
{
    struct jpeg_source_mgr *src = cinfo->src;
    if (num_bytes <= 0)
        return;
    while (num_bytes > (long)src->bytes_in_buffer) {
        num_bytes -= (long)src->bytes_in_buffer;
        (void)src_fill(cinfo);
    }
    src->next_input_byte += num_bytes;
    src->bytes_in_buffer -= (size_t)num_bytes;
}

static void src_term(j_decompress_ptr cinfo)
{
    (void)cinfo;
}

/* Piece 0 of part p's stream, malloc'd into s->head. */
static int src_open(part_src *s, const job *jb, const part *p)
{
    const layout *l = jb->l;
    memset(s, 0, sizeof *s);
    s->l = l;
    s->first = p->first;
    const size_t from = l->start[p->first];
    size_t to = (from + PIECE - 1) / PIECE * PIECE;
    if (to > l->n)
        to = l->n;
    s->head_n = l->head + (to - from);
    s->head = malloc(s->head_n);
    if (!s->head)
        return 0;
    memcpy(s->head, l->data, l->head);
    s->head[l->sof + 5] = (uint8_t)(p->height >> 8);
    s->head[l->sof + 6] = (uint8_t)p->height;
    s->next_rst = p->first + 1;
    src_copy(s, s->head + l->head, from, to);
    s->pos = to;
    s->pub.init_source = src_init;
    s->pub.fill_input_buffer = src_fill;
    s->pub.skip_input_data = src_skip;
    s->pub.resync_to_restart = jpeg_resync_to_restart;
    s->pub.term_source = src_term;
    return 1;
}

/* Decodes part p (the setjmp apart from the caller's locals). */
static int part_guarded(struct jpeg_decompress_struct *d, ic_jpeg_err *je, part_src *src,
                        const job *jb, int index, uint8_t *scratch)
{
    const part *p = &jb->parts[index];
    ic_image *img = jb->img;
    if (setjmp(je->jump))
        return 0;
    jpeg_create_decompress(d);
    if (jb->fail_part == index + 1) /* tests */
        ERREXIT(d, JERR_BAD_DCT_COEF);
    d->src = &src->pub;
    (void)jpeg_read_header(d, TRUE);
    d->out_color_space = jb->space;
    (void)jpeg_start_decompress(d);
    if ((int)d->output_width != img->width || (int)d->output_height != p->height ||
        d->output_components != jb->out_ch)
        return 0;
    const size_t pad = img->pitch - (size_t)img->width * (size_t)jb->out_ch;
    while (d->output_scanline < d->output_height) {
        JSAMPROW rows[16];
        const int y = p->y0 + (int)d->output_scanline;
        int n = (int)(d->output_height - d->output_scanline);
        if (n > 16)
            n = 16;
        for (int i = 0; i < n; i++)
            rows[i] = y + i >= p->keep0 && y + i < p->keep1
                          ? img->data + (size_t)(y + i) * img->pitch
                          : scratch + (size_t)i * img->pitch;
        if (jpeg_read_scanlines(d, rows, (JDIMENSION)n) == 0)
            return 0;
        /* the image is unzeroed (jpeg.c): its rows' padding too */
        for (int i = 0; i < n && pad > 0; i++)
            if (rows[i] != scratch + (size_t)i * img->pitch)
                memset(rows[i] + img->pitch - pad, 0, pad);
    }
    if (p->last) {
        /* Reads to the EOI marker, as the one-thread decoder does. */
        (void)jpeg_finish_decompress(d);
        return 1;
    }
    /* Bytes skipped at a restart marker are reported only at a later one,
     * which may lie in the next part: fail here instead. */
    return d->marker->discarded_bytes == 0;
}

static void part_decode(job *jb, int index)
{
    part *p = &jb->parts[index];
    p->ok = 0;
    part_src *src = calloc(1, sizeof *src);
    uint8_t *scratch = malloc((size_t)16 * jb->img->pitch);
    if (src && scratch && src_open(src, jb, p)) {
        ic_jpeg_err je;
        struct jpeg_decompress_struct d;
        /* strict (no limits): any damage sends the file to one thread */
        ic_jpeg_decompress_init(&d, &je, NULL);
        p->ok = part_guarded(&d, &je, src, jb, index, scratch);
        jpeg_destroy_decompress(&d);
    }
    if (src)
        free(src->head);
    free(src);
    free(scratch);
}

/* The threads of one decode, started before the markers are scanned: each
 * faults in its slice of the unzeroed image (jpeg.c) meanwhile, then waits
 * for the plan and decodes its part. */
typedef struct crew {
    job *jb;
    int slices; /* the image's rows cut in this many, one a thread */
    pthread_mutex_t mu;
    pthread_cond_t planned;
    int parts; /* -1 until planned; 0: no parts, the threads leave */
    pthread_t th[MAX_PARTS];
    int started[MAX_PARTS];
    struct crew_thread {
        struct crew *c;
        int index;
    } arg[MAX_PARTS];
} crew;

/* Slice i of the image's rows faulted in for writing, on this thread. */
static void slice_populate(const crew *c, int i)
{
    const ic_image *img = c->jb->img;
    const size_t y0 = (size_t)img->height * (size_t)i / (size_t)c->slices;
    const size_t y1 = (size_t)img->height * (size_t)(i + 1) / (size_t)c->slices;
    ic__pages_populate(img->data + y0 * img->pitch, (y1 - y0) * img->pitch);
}

static void *crew_main(void *arg)
{
    const struct crew_thread *t = arg;
    crew *c = t->c;
    slice_populate(c, t->index);
    pthread_mutex_lock(&c->mu);
    while (c->parts < 0)
        pthread_cond_wait(&c->planned, &c->mu);
    const int n = c->parts;
    pthread_mutex_unlock(&c->mu);
    if (t->index < n - 1)
        part_decode(c->jb, t->index);
    return NULL;
}

/* Threads for parts 0..slices-2 (fewer when they cannot be had); the last
 * part is this thread's. Small stacks: libjpeg keeps its buffers on the
 * heap, and glibc then reuses the stacks of the last decode. */
static void crew_start(crew *c, job *jb, int slices)
{
    c->jb = jb;
    c->slices = slices;
    c->parts = -1;
    pthread_mutex_init(&c->mu, NULL);
    pthread_cond_init(&c->planned, NULL);
    pthread_attr_t at;
    const int attr = pthread_attr_init(&at) == 0;
    if (attr)
        (void)pthread_attr_setstacksize(&at, (size_t)512 << 10);
    for (int i = 0; i < slices - 1; i++) {
        c->arg[i] = (struct crew_thread){c, i};
        c->started[i] = pthread_create(&c->th[i], attr ? &at : NULL, crew_main, &c->arg[i]) == 0;
    }
    if (attr)
        pthread_attr_destroy(&at);
}

/* Lets the threads go with n parts (0: none) and decodes the last part
 * here, the shortest (the image's end, no extra row); then the parts of
 * threads that did not start. */
static void crew_finish(crew *c, int n)
{
    pthread_mutex_lock(&c->mu);
    c->parts = n;
    pthread_cond_broadcast(&c->planned);
    pthread_mutex_unlock(&c->mu);
    if (n >= 2) {
        slice_populate(c, c->slices - 1);
        part_decode(c->jb, n - 1);
    }
    for (int i = 0; i < c->slices - 1; i++) {
        if (c->started[i])
            pthread_join(c->th[i], NULL);
        else if (i < n - 1)
            part_decode(c->jb, i);
    }
    pthread_cond_destroy(&c->planned);
    pthread_mutex_destroy(&c->mu);
}

/* The file's bytes: lim's when in memory, else read from f's file without
 * moving f. *owned is set when they were read (free them). */
static const uint8_t *file_bytes(FILE *f, const ic_io_limits *lim, size_t *n, uint8_t **owned)
{
    *owned = NULL;
    if (lim->bytes) {
        *n = lim->nbytes;
        return lim->bytes;
    }
    const int fd = fileno(f);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || sb.st_size <= 0)
        return NULL;
    const size_t size = (size_t)sb.st_size;
    uint8_t *b = malloc(size);
    if (!b)
        return NULL;
    size_t got = 0;
    while (got < size) {
        const ssize_t r = pread(fd, b + got, size - got, (off_t)got);
        if (r <= 0) {
            free(b);
            return NULL;
        }
        got += (size_t)r;
    }
    *n = size;
    *owned = b;
    return b;
}

/* The sampling this decoder handles: grey, or YCbCr with full-size chroma
 * and luma sampled 1 or 2 times each way. *context: vertical upsampling
 * that mixes chroma rows. */
static int sampling_ok(const struct jpeg_decompress_struct *c, int *context)
{
    *context = 0;
    if (c->jpeg_color_space == JCS_GRAYSCALE && c->num_components == 1)
        return c->out_color_space == JCS_GRAYSCALE;
    if (c->jpeg_color_space != JCS_YCbCr || c->num_components != 3 || c->out_color_space != JCS_RGB)
        return 0;
    const jpeg_component_info *k = c->comp_info;
    if (k[0].h_samp_factor < 1 || k[0].h_samp_factor > 2 || k[0].v_samp_factor < 1 ||
        k[0].v_samp_factor > 2)
        return 0;
    for (int i = 1; i < 3; i++)
        if (k[i].h_samp_factor != 1 || k[i].v_samp_factor != 1)
            return 0;
    *context = k[0].v_samp_factor == 2 && c->do_fancy_upsampling;
    return 1;
}

/* Cuts the image into parts at MCU rows that start an interval, about
 * equal in rows; returns how many (0: fewer than two). */
static int plan_parts(job *jb, const struct jpeg_decompress_struct *c, int per_row, int mcu_rows,
                      int mcu_h, int context, int want)
{
    const layout *l = jb->l;
    const int height = (int)c->image_height;
    int count = 0;
    int prev_row = -1;
    int j = 0;
    for (int k = 0; k < want; k++) {
        const long target = (long)k * mcu_rows / want;
        /* The first interval at or after the target that starts an MCU row
         * below the last part's start. */
        for (; j < l->count; j++) {
            const long mcu = (long)j * l->interval;
            if (mcu % per_row == 0 && mcu / per_row >= target && mcu / per_row > prev_row)
                break;
        }
        if (j >= l->count)
            break;
        jb->parts[count].first = j;
        jb->parts[count].y0 = (int)((long)j * l->interval / per_row) * mcu_h;
        prev_row = jb->parts[count].y0 / mcu_h;
        count++;
        j++;
    }
    if (count < 2)
        return 0;
    for (int i = 0; i < count; i++) {
        part *p = &jb->parts[i];
        p->last = i == count - 1;
        const int y1 = p->last ? height : jb->parts[i + 1].y0;
        p->height = p->last ? height - p->y0 : y1 - p->y0 + mcu_h;
        if (p->y0 + p->height > height)
            p->height = height - p->y0;
        p->keep0 = context && i > 0 ? p->y0 + 1 : p->y0;
        p->keep1 = context && !p->last ? y1 + 1 : y1;
    }
    return count;
}

int ic_jpeg_restart_parts(const struct jpeg_decompress_struct *cinfo, const ic_io_limits *lim)
{
    if (lim->jpeg_parts)
        *lim->jpeg_parts = 0;
    int context;
    if (lim->threads <= 1 || cinfo->progressive_mode || cinfo->arith_code ||
        cinfo->restart_interval == 0 || jpeg_has_multiple_scans((j_decompress_ptr)cinfo) ||
        cinfo->data_precision != 8 || cinfo->CCIR601_sampling || !sampling_ok(cinfo, &context) ||
        cinfo->scale_num != cinfo->scale_denom || cinfo->comps_in_scan != cinfo->num_components)
        return 0;
    const uint64_t pixels = (uint64_t)cinfo->image_width * cinfo->image_height;
    const uint64_t least =
        lim->jpeg_min_pixels > 0 ? (uint64_t)lim->jpeg_min_pixels : PART_MIN_PIXELS;
    uint64_t want = pixels / least;
    if (want > (uint64_t)lim->threads)
        want = (uint64_t)lim->threads;
    if (want > MAX_PARTS)
        want = MAX_PARTS;
    return want < 2 ? 0 : (int)want;
}

int ic_jpeg_restart_decode(const struct jpeg_decompress_struct *cinfo, FILE *f, ic_image *img,
                           const ic_io_limits *lim)
{
    const int want = ic_jpeg_restart_parts(cinfo, lim);
    int context;
    if (want < 2 || !sampling_ok(cinfo, &context))
        return 0;
    /* MCUs: one block for grey (a one-component scan), else the luma's. */
    const int grey = cinfo->num_components == 1;
    const int mcu_w = grey ? 8 : 8 * cinfo->max_h_samp_factor;
    const int mcu_h = grey ? 8 : 8 * cinfo->max_v_samp_factor;
    const int per_row = (int)((cinfo->image_width + (unsigned)mcu_w - 1) / (unsigned)mcu_w);
    const int mcu_rows = (int)((cinfo->image_height + (unsigned)mcu_h - 1) / (unsigned)mcu_h);
    const long mcus = (long)per_row * mcu_rows;

    job *jb = calloc(1, sizeof *jb);
    crew *c = calloc(1, sizeof *c);
    if (!jb || !c) {
        free(jb);
        free(c);
        return 0;
    }
    jb->img = img;
    jb->out_ch = img->channels;
    jb->space = cinfo->out_color_space;
    jb->fail_part = lim->jpeg_fail_part;
    crew_start(c, jb, want);
    layout l;
    memset(&l, 0, sizeof l);
    uint8_t *owned = NULL;
    l.data = file_bytes(f, lim, &l.n, &owned);
    l.interval = (int)cinfo->restart_interval;
    l.count = (int)((mcus + l.interval - 1) / l.interval);
    /* Every interval but the last ends in a 2-byte marker. */
    l.start =
        l.data && (size_t)l.count <= l.n / 2 + 1 ? malloc((size_t)l.count * sizeof *l.start) : NULL;
    int n = 0;
    if (l.start && head_parse(&l) && be16(l.data + l.sof + 5) == cinfo->image_height &&
        be16(l.data + l.sof + 7) == cinfo->image_width && scan_restarts(&l)) {
        jb->l = &l;
        n = plan_parts(jb, cinfo, per_row, mcu_rows, mcu_h, context, want);
    }
    crew_finish(c, n);
    int done = n >= 2;
    for (int i = 0; i < n; i++)
        done &= jb->parts[i].ok;
    if (done && lim->jpeg_parts)
        *lim->jpeg_parts = n;
    free(l.start);
    free(owned);
    free(c);
    free(jb);
    return done;
}

#endif /* IC_HAVE_JPEG */
