/*
 * gpu_codec.c - the public GPU codec (ic_gpu_codec,
 * include/imgconv_gpu_codec.h): files decoded into device images and device
 * images encoded into files, with nvJPEG (nvjpeg.cu beside it) where it applies
 * and the CPU codecs (ic_image_decode / ic_image_encode) plus one copy across
 * the bus everywhere else.
 *
 * A codec holds `slots` slots; slot i owns the device buffer input i of a
 * batch decodes into, one output device buffer for the filter, a host staging
 * image for the CPU encoder and the encoded bytes. Buffers grow to the
 * largest image seen and are reused, so memory stays bounded by the slots.
 *
 * Compiled in every build (it lives beside nvJPEG so that the dispatcher
 * includes no CUDA header): without CUDA every call answers
 * IC_ERR_UNSUPPORTED.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dispatch/dispatch.h"
#include "imgconv_gpu_codec.h"
#include "io/io_internal.h"

#ifndef IC_HAVE_CUDA

struct ic_gpu_codec {
    int unused;
};

static ic_status no_cuda(void)
{
    return ic_fail(IC_ERR_UNSUPPORTED, "built without CUDA: no GPU codec");
}

ic_status ic_gpu_codec_create(ic_gpu_codec **codec, const ic_context *ctx, int slots)
{
    (void)ctx;
    (void)slots;
    if (codec)
        *codec = NULL;
    return no_cuda();
}

void ic_gpu_codec_free(ic_gpu_codec *codec)
{
    (void)codec;
}

const char *ic_gpu_codec_encoder(const ic_gpu_codec *codec)
{
    (void)codec;
    return "cpu";
}

const char *ic_gpu_codec_engine(const ic_gpu_codec *codec)
{
    (void)codec;
    return "cpu";
}

void ic_gpu_codec_open_decoder(ic_gpu_codec *codec)
{
    (void)codec;
}

void ic_gpu_codec_open_decoders(ic_gpu_codec *codec, int n)
{
    (void)codec;
    (void)n;
}

ic_status ic_gpu_codec_decode(ic_gpu_codec *codec, int n, const ic_bytes *in, const int *slots,
                              const ic_load_options *opts, ic_image *out, ic_decode_result *res)
{
    (void)codec;
    (void)in;
    (void)slots;
    (void)opts;
    for (int i = 0; res && out && i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        res[i].status = IC_ERR_UNSUPPORTED;
        snprintf(res[i].error, sizeof res[i].error, "built without CUDA: no GPU codec");
        res[i].engine = "cpu";
    }
    return no_cuda();
}

ic_status ic_gpu_codec_output(ic_gpu_codec *codec, int slot, const ic_image *like, ic_image *out)
{
    (void)codec;
    (void)slot;
    (void)like;
    if (out)
        memset(out, 0, sizeof *out);
    return no_cuda();
}

ic_status ic_gpu_codec_encode(ic_gpu_codec *codec, int slot, const ic_image *img, const char *name,
                              const ic_save_options *opts, ic_bytes *out)
{
    (void)codec;
    (void)slot;
    (void)img;
    (void)name;
    (void)opts;
    if (out)
        memset(out, 0, sizeof *out);
    return no_cuda();
}

#else /* IC_HAVE_CUDA */

#include <pthread.h>

#include "cuda/codec/nvjpeg.h"

#define MAX_SLOTS 1024

/* A pitched device buffer that grows and is reused. */
typedef struct dbuf {
    uint8_t *p;
    size_t pitch, row_cap;
    int rows_cap;
} dbuf;

/* One decoder lane's per-call scratch (nslots entries each) and upload stream. */
typedef struct dlane {
    int ready, busy; /* under lane_mu */
    int *route, *w, *h, *ok;
    const uint8_t **data;
    size_t *len;
    uint8_t **dst;
    size_t *pitch;
    void **after;  /* the slot streams, whose work the decoder waits for */
    void *ustream; /* the CPU path's uploads */
} dlane;

typedef struct slot {
    dbuf in, out;
    void *stream;  /* the stream its device images carry: the filter's */
    ic_image host; /* staging for the CPU encoder (owned) */
    uint8_t *enc;  /* nvJPEG's bytes (grown with realloc) */
    size_t enc_cap;
    uint8_t *cpu_enc; /* the CPU encoder's bytes (malloc'd by ic_image_encode) */
} slot;

struct ic_gpu_codec {
    int device;
    int nslots;
    slot *s;
    ic_nvjpeg *nj; /* NULL: nvJPEG not built in or not usable; every file via the CPU */
    /* nvJPEG opens on a thread of its own from ic_gpu_codec_create (its
     * handle and first encoder lane take a few tenths of a second), so
     * the codec's slots can be filled meanwhile; every use of nj waits for
     * it first (codec_nj). */
    pthread_t open_th;
    int open_on; /* open_th runs or was not joined yet */
    int open_mu_made;
    pthread_mutex_t open_mu;
    /* The hardware decoder made ahead on a thread of its own
     * (ic_gpu_codec_open_decoder), handed to nj by the first use of the
     * decoders (codec_dec); its own lock, so that encodes never wait for it. */
    pthread_t dec_th;
    int dec_on;    /* dec_th runs or was not joined yet */
    int dec_asked; /* ic_gpu_codec_open_decoder was called */
    int dec_mu_made;
    pthread_mutex_t dec_mu;
    ic_nvjpeg_hw *hw_ahead;
    char engine[320]; /* "cpu (nvJPEG: why)" when nvJPEG is built in but would not open */
    /* Decoder lanes: each ic_gpu_codec_decode call holds one (lane 0 always
     * ready; lanes 1.. once lanes_main made nvJPEG's); same index, same
     * nvJPEG decoder lane. */
    dlane dl[IC_NVJ_DEC_LANES];
    pthread_mutex_t lane_mu; /* guards dl[].ready/busy, lanes_want, lanes_stop */
    pthread_cond_t lane_cv;
    int lane_sync_made;
    int lanes_want; /* lanes asked for (ic_gpu_codec_open_decoders) */
    int lanes_stop; /* the codec is being freed: make no more */
    pthread_t lanes_th;
    int lanes_on; /* lanes_th runs or was not joined yet */
};

/* Opens nvJPEG for codec c (on open_th, or in ic_gpu_codec_create when no
 * thread could be made). */
static void *open_main(void *arg)
{
    ic_gpu_codec *c = arg;
    char err[256] = "";
    if (ic_nvjpeg_open(&c->nj, c->device, c->nslots, err, sizeof err) != IC_OK)
        snprintf(c->engine, sizeof c->engine, "cpu (nvJPEG: %s)", err); /* read after the join */
    return NULL;
}

/* nvJPEG once its open is done (NULL when it would not open: every file
 * then takes the CPU codec, and the engine says why). */
static ic_nvjpeg *codec_nj(ic_gpu_codec *c)
{
    if (!c->open_mu_made)
        return NULL;
    pthread_mutex_lock(&c->open_mu);
    if (c->open_on) {
        pthread_join(c->open_th, NULL);
        c->open_on = 0;
    }
    ic_nvjpeg *nj = c->nj;
    pthread_mutex_unlock(&c->open_mu);
    return nj;
}

static void *dec_main(void *arg)
{
    ic_gpu_codec *c = arg;
    c->hw_ahead = ic_nvjpeg_hw_make(c->device); /* read after the join */
    return NULL;
}

/* nvJPEG for decoding: codec_nj, with the hardware decoder made ahead (if
 * asked for) waited for and handed over. */
static ic_nvjpeg *codec_dec(ic_gpu_codec *c)
{
    ic_nvjpeg *nj = codec_nj(c);
    if (!c->dec_mu_made)
        return nj;
    pthread_mutex_lock(&c->dec_mu);
    if (c->dec_on) {
        pthread_join(c->dec_th, NULL);
        c->dec_on = 0;
    }
    ic_nvjpeg_hw_give(nj, c->hw_ahead); /* nj NULL: freed */
    c->hw_ahead = NULL;
    pthread_mutex_unlock(&c->dec_mu);
    return nj;
}

/* Makes b hold at least rows rows of row_bytes. */
static ic_status dbuf_fit(const ic_gpu_codec *c, dbuf *b, size_t row_bytes, int rows, char *err,
                          size_t errlen)
{
    if (b->p && row_bytes <= b->row_cap && rows <= b->rows_cap)
        return IC_OK;
    ic_cuda_pitched_free(c->device, b->p);
    memset(b, 0, sizeof *b);
    ic_status st = ic_cuda_pitched_alloc(c->device, row_bytes, rows, &b->p, &b->pitch, err, errlen);
    if (st != IC_OK)
        return st;
    b->row_cap = row_bytes;
    b->rows_cap = rows;
    return IC_OK;
}

static void dlane_free(const ic_gpu_codec *c, dlane *l)
{
    ic_cuda_stream_destroy(c->device, l->ustream);
    free(l->route);
    free(l->w);
    free(l->h);
    free(l->ok);
    free(l->data);
    free(l->len);
    free(l->dst);
    free(l->pitch);
    free(l->after);
}

void ic_gpu_codec_free(ic_gpu_codec *c)
{
    if (!c)
        return;
    if (c->lane_sync_made) { /* stop making lanes, and wait for the one being made */
        pthread_mutex_lock(&c->lane_mu);
        c->lanes_stop = 1;
        pthread_mutex_unlock(&c->lane_mu);
        if (c->lanes_on)
            pthread_join(c->lanes_th, NULL);
        pthread_mutex_destroy(&c->lane_mu);
        pthread_cond_destroy(&c->lane_cv);
    }
    ic_nvjpeg_close(codec_dec(c)); /* waits for the opens, then for its streams */
    if (c->open_mu_made)
        pthread_mutex_destroy(&c->open_mu);
    if (c->dec_mu_made)
        pthread_mutex_destroy(&c->dec_mu);
    for (int i = 0; i < IC_NVJ_DEC_LANES; i++)
        dlane_free(c, &c->dl[i]);
    for (int i = 0; c->s && i < c->nslots; i++) {
        ic_cuda_pitched_free(c->device, c->s[i].in.p);
        ic_cuda_pitched_free(c->device, c->s[i].out.p);
        ic_cuda_stream_destroy(c->device, c->s[i].stream);
        ic_image_free(&c->s[i].host);
        free(c->s[i].enc);
        free(c->s[i].cpu_enc);
    }
    free(c->s);
    free(c);
}

/* Lane l's scratch for n slots and its upload stream. */
static ic_status dlane_make(ic_gpu_codec *c, dlane *l, size_t n, char *err, size_t errlen)
{
    l->route = calloc(n, sizeof *l->route);
    l->w = calloc(n, sizeof *l->w);
    l->h = calloc(n, sizeof *l->h);
    l->ok = calloc(n, sizeof *l->ok);
    l->data = calloc(n, sizeof *l->data);
    l->len = calloc(n, sizeof *l->len);
    l->dst = calloc(n, sizeof *l->dst);
    l->pitch = calloc(n, sizeof *l->pitch);
    l->after = calloc(n, sizeof *l->after);
    if (!l->route || !l->w || !l->h || !l->ok || !l->data || !l->len || !l->dst || !l->pitch ||
        !l->after) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    return ic_cuda_stream_create(c->device, &l->ustream, err, errlen);
}

ic_status ic_gpu_codec_create(ic_gpu_codec **codec, const ic_context *ctx, int slots)
{
    char errbuf[256] = ""; /* what the CUDA and nvJPEG helpers say */
    const size_t errlen = sizeof errbuf;
    if (!codec)
        return ic_fail(IC_ERR_INVALID_ARG, "no codec pointer given");
    *codec = NULL;
    if (slots < 1 || slots > MAX_SLOTS)
        return ic_fail(IC_ERR_INVALID_ARG, "slots must be 1..%d, not %d", MAX_SLOTS, slots);
    int device = 0;
    const char *why = "";
    ic_status st = ic__context_device(ctx, &device, &why);
    if (st != IC_OK)
        return ic_fail(st, "no GPU codec: %s", why);
    ic_gpu_codec *c = calloc(1, sizeof *c);
    if (!c)
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    c->device = device;
    c->nslots = slots;
    const size_t n = (size_t)slots;
    c->s = calloc(n, sizeof *c->s);
    if (!c->s || pthread_mutex_init(&c->lane_mu, NULL) != 0) {
        ic_gpu_codec_free(c);
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    }
    if (pthread_cond_init(&c->lane_cv, NULL) != 0) {
        pthread_mutex_destroy(&c->lane_mu);
        ic_gpu_codec_free(c);
        return ic_fail(IC_ERR_NOMEM, "out of memory");
    }
    c->lane_sync_made = 1;
    c->dl[0].ready = 1;
    c->lanes_want = 1;
    for (int i = 0; st == IC_OK && i < IC_NVJ_DEC_LANES; i++)
        st = dlane_make(c, &c->dl[i], n, errbuf, errlen);
    for (int i = 0; st == IC_OK && i < slots; i++)
        st = ic_cuda_stream_create(device, &c->s[i].stream, errbuf, errlen);
    if (st != IC_OK) {
        ic_gpu_codec_free(c);
        return ic_fail_msg(st, errbuf);
    }
    snprintf(c->engine, sizeof c->engine, "cpu");
    if (ic_nvjpeg_built() && pthread_mutex_init(&c->dec_mu, NULL) == 0)
        c->dec_mu_made = 1;
    if (ic_nvjpeg_built() && pthread_mutex_init(&c->open_mu, NULL) == 0) {
        c->open_mu_made = 1;
        c->open_on = pthread_create(&c->open_th, NULL, open_main, c) == 0;
        if (!c->open_on)
            (void)open_main(c); /* no thread: here */
    }
    *codec = c;
    return IC_OK;
}

const char *ic_gpu_codec_engine(const ic_gpu_codec *c)
{
    if (!c)
        return "cpu";
    ic_nvjpeg *nj = codec_dec((ic_gpu_codec *)c);
    return nj ? ic_nvjpeg_engine(nj) : c->engine;
}

void ic_gpu_codec_open_decoder(ic_gpu_codec *c)
{
    if (!c || !c->dec_mu_made)
        return;
    pthread_mutex_lock(&c->dec_mu);
    if (!c->dec_asked) {
        c->dec_asked = 1;
        c->dec_on = pthread_create(&c->dec_th, NULL, dec_main, c) == 0;
    } /* no thread: the first decode makes it, as without this call */
    pthread_mutex_unlock(&c->dec_mu);
}

/* Makes nvJPEG's decoder lanes 1..lanes_want-1 (on lanes_th), each taken
 * by the decodes as soon as it is made; none without the hardware decoder
 * (ic_nvjpeg_dec_make refuses them). */
static void *lanes_main(void *arg)
{
    ic_gpu_codec *c = arg;
    ic_nvjpeg *nj = codec_dec(c);
    if (!nj)
        return NULL;
    for (int k = 1; k < IC_NVJ_DEC_LANES; k++) {
        pthread_mutex_lock(&c->lane_mu);
        const int go = k < c->lanes_want && !c->lanes_stop;
        pthread_mutex_unlock(&c->lane_mu);
        char err[256];
        if (!go || ic_nvjpeg_dec_make(nj, k, err, sizeof err) != IC_OK)
            break; /* the lanes there are decode on */
        pthread_mutex_lock(&c->lane_mu);
        c->dl[k].ready = 1;
        pthread_cond_broadcast(&c->lane_cv);
        pthread_mutex_unlock(&c->lane_mu);
    }
    return NULL;
}

void ic_gpu_codec_open_decoders(ic_gpu_codec *c, int n)
{
    if (!c || !c->lane_sync_made || !ic_nvjpeg_built())
        return;
    n = n < 1 ? 1 : n > IC_NVJ_DEC_LANES ? IC_NVJ_DEC_LANES : n;
    pthread_mutex_lock(&c->lane_mu);
    const int start = n > 1 && c->lanes_want == 1 && !c->lanes_on;
    if (start) {
        c->lanes_want = n;
        c->lanes_on = pthread_create(&c->lanes_th, NULL, lanes_main, c) == 0;
    } /* no thread: the calls take turns on lane 0 */
    pthread_mutex_unlock(&c->lane_mu);
}

/* A free ready decoder lane, waited for. */
static int lane_take(ic_gpu_codec *c)
{
    pthread_mutex_lock(&c->lane_mu);
    for (;;) {
        for (int k = 0; k < IC_NVJ_DEC_LANES; k++)
            if (c->dl[k].ready && !c->dl[k].busy) {
                c->dl[k].busy = 1;
                pthread_mutex_unlock(&c->lane_mu);
                return k;
            }
        pthread_cond_wait(&c->lane_cv, &c->lane_mu);
    }
}

static void lane_give(ic_gpu_codec *c, int k)
{
    pthread_mutex_lock(&c->lane_mu);
    c->dl[k].busy = 0;
    pthread_cond_broadcast(&c->lane_cv);
    pthread_mutex_unlock(&c->lane_mu);
}

const char *ic_gpu_codec_encoder(const ic_gpu_codec *c)
{
    return c && codec_nj((ic_gpu_codec *)c) && ic_format_supported(IC_FMT_JPEG) ? "nvjpeg" : "cpu";
}

/* The stream device images of slot i are ordered on: no decode work is
 * ever queued there, so work that waits on it waits only for the filter. */
static void *codec_stream(const ic_gpu_codec *c, int i)
{
    return c->s[i].stream;
}

static int is_jpeg(const ic_bytes *b)
{
    return b->size >= 3 && b->data[0] == 0xFF && b->data[1] == 0xD8 && b->data[2] == 0xFF;
}

/* An input through the CPU decoder, then one upload into slot i. */
static void decode_on_cpu(ic_gpu_codec *c, void *ustream, int i, const ic_bytes *in,
                          const ic_load_options *o, ic_image *out, ic_decode_result *r)
{
    ic_image host;
    r->engine = "cpu";
    ic_load_options lo = *o;
    lo.metadata = o->metadata ? &r->metadata : NULL; /* per file */
    r->status = ic_image_decode(&host, in->data, in->size, &lo);
    if (r->status != IC_OK) {
        snprintf(r->error, sizeof r->error, "%s", ic_last_error());
        return;
    }
    const size_t row = ic_image_row_bytes(&host);
    const int rows = host.height * (host.layout == IC_SOA ? host.channels : 1);
    slot *s = &c->s[i];
    r->status = dbuf_fit(c, &s->in, row, rows, r->error, sizeof r->error);
    /* the upload overwrites what the slot's stream may still be using */
    if (r->status == IC_OK)
        r->status =
            ic_cuda_stream_order(c->device, ustream, codec_stream(c, i), r->error, sizeof r->error);
    if (r->status == IC_OK)
        r->status = ic_cuda_copy_rows(c->device, s->in.p, s->in.pitch, host.data, host.pitch, row,
                                      rows, 1, ustream, r->error, sizeof r->error);
    if (r->status == IC_OK)
        r->status = ic_image_wrap_device(out, s->in.p, host.width, host.height, host.channels,
                                         host.layout, s->in.pitch, c->device, codec_stream(c, i));
    if (r->status == IC_OK)
        out->type = host.type; /* a 16-bit PNG/PNM/TIFF stays 16-bit; the rows hold it */
    ic_image_free(&host);
    if (r->status != IC_OK)
        memset(out, 0, sizeof *out);
    else
        r->error[0] = '\0';
}

ic_status ic_gpu_codec_decode(ic_gpu_codec *c, int n, const ic_bytes *in, const int *slots,
                              const ic_load_options *opts, ic_image *out, ic_decode_result *res)
{
    if (!c || !in || !out || !res || n < 1 || n > c->nslots)
        return ic_fail(IC_ERR_INVALID_ARG, "bad codec, inputs, outputs or count %d", n);
    int bad_slots = 0;
    for (int i = 0; slots && i < n; i++) {
        bad_slots |= slots[i] < 0 || slots[i] >= c->nslots;
        for (int j = 0; j < i; j++)
            bad_slots |= slots[j] == slots[i];
    }
    if (bad_slots) {
        for (int i = 0; i < n; i++) {
            memset(&out[i], 0, sizeof out[i]);
            res[i].status = IC_ERR_INVALID_ARG;
            res[i].engine = "cpu";
            snprintf(res[i].error, sizeof res[i].error, "bad or repeated slot numbers");
        }
        return ic_fail(IC_ERR_INVALID_ARG, "bad or repeated slot numbers");
    }
    ic_load_options o;
    memset(&o, 0, sizeof o);
    if (opts)
        o = *opts;
    const uint64_t max_pixels = o.max_pixels ? o.max_pixels : IC_DEFAULT_MAX_PIXELS;
    const uint64_t max_memory = o.max_memory ? o.max_memory : ic_max_memory_default();
    /* nvJPEG gives interleaved RGB: other requests take the CPU decoder. */
    ic_nvjpeg *nj = codec_dec(c);
    const int gpu_ok = nj && (o.channels == 0 || o.channels == 3) && o.layout == IC_AOS;
    const int lane = lane_take(c);
    dlane *l = &c->dl[lane];
    int any = 0;
    for (int i = 0; i < n; i++) {
        memset(&out[i], 0, sizeof out[i]);
        memset(&res[i], 0, sizeof res[i]);
        res[i].engine = "cpu";
        l->route[i] = IC_NVJ_CPU;
        l->ok[i] = 0;
        if (!gpu_ok || !in[i].data || !is_jpeg(&in[i]))
            continue;
        l->route[i] = ic_nvjpeg_check(nj, lane, in[i].data, in[i].size, &l->w[i], &l->h[i]);
        /* Over the pixel or memory limit: the CPU decoder refuses it with
         * its message. */
        const uint64_t px = (uint64_t)l->w[i] * (uint64_t)l->h[i];
        if (l->route[i] != IC_NVJ_CPU && (px > max_pixels || px * 3u > max_memory))
            l->route[i] = IC_NVJ_CPU;
        if (l->route[i] == IC_NVJ_CPU)
            continue;
        slot *s = &c->s[slots ? slots[i] : i];
        if (dbuf_fit(c, &s->in, (size_t)l->w[i] * 3u, l->h[i], res[i].error, sizeof res[i].error) !=
            IC_OK) {
            l->route[i] = IC_NVJ_CPU; /* the CPU path reports the allocation failure */
            continue;
        }
        l->data[i] = in[i].data;
        l->len[i] = in[i].size;
        l->dst[i] = s->in.p;
        l->pitch[i] = s->in.pitch;
        l->after[i] = codec_stream(c, slots ? slots[i] : i);
        any = 1;
    }
    /* libjpeg-turbo's entropy check of the files nvJPEG takes runs on host
     * threads while nvJPEG decodes them: one it refuses (data that ends
     * inside a Huffman code, which nvJPEG decodes without a word) takes the
     * CPU decoder below, whose verdict it is (docs/gpu-jpeg.md#entropy-check). */
    const ic_io_limits lim = {
        .max_pixels = max_pixels, .max_memory = max_memory, .accept_damaged = o.accept_damaged};
    ic_jpeg_checks *chk = ic_jpeg_checks_start(n, l->data, l->len, l->route, &lim);
    if (any) {
        char err[256] = "";
        const ic_status st = ic_nvjpeg_decode(nj, lane, n, l->data, l->len, l->route, l->dst,
                                              l->pitch, l->after, l->ok, err, sizeof err);
        if (st != IC_OK) {
            ic_jpeg_checks_wait(chk, n, l->route, l->ok);
            lane_give(c, lane);
            for (int i = 0; i < n; i++) {
                res[i].status = st;
                snprintf(res[i].error, sizeof res[i].error, "%s", err);
            }
            return ic_fail_msg(st, err);
        }
    }
    ic_jpeg_checks_wait(chk, n, l->route, l->ok);
    for (int i = 0; i < n; i++) {
        const int si = slots ? slots[i] : i;
        if (l->route[i] != IC_NVJ_CPU && l->ok[i]) {
            res[i].engine = l->ok[i] == IC_NVJ_HW ? "nvjpeg-hardware" : "nvjpeg-hybrid";
            res[i].status =
                ic_image_wrap_device(&out[i], c->s[si].in.p, l->w[i], l->h[i], 3, IC_AOS,
                                     c->s[si].in.pitch, c->device, codec_stream(c, si));
            res[i].error[0] = '\0';
            if (o.metadata) /* nvJPEG reads no metadata: the header is read for it */
                (void)ic_jpeg_read_metadata(in[i].data, in[i].size, &res[i].metadata);
            continue;
        }
        /* Not for nvJPEG, or refused by it: the CPU decoder decides. */
        decode_on_cpu(c, l->ustream, si, &in[i], &o, &out[i], &res[i]);
    }
    lane_give(c, lane);
    return IC_OK;
}

ic_status ic_gpu_codec_output(ic_gpu_codec *c, int slot_i, const ic_image *like, ic_image *out)
{
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !like || !out || slot_i < 0 || slot_i >= c->nslots)
        return ic_fail(IC_ERR_INVALID_ARG, "bad codec, slot or image");
    ic_image shape;
    /* ic_image_wrap checks the sizes; the pointer is only a placeholder here. */
    ic_status st = ic_image_wrap_type(&shape, (void *)c, like->width, like->height, like->channels,
                                      like->layout, 0, like->type);
    if (st != IC_OK)
        return ic_fail(st, "bad image size, channels or layout");
    const size_t row = ic_image_row_bytes(&shape);
    const int rows = shape.height * (shape.layout == IC_SOA ? shape.channels : 1);
    slot *s = &c->s[slot_i];
    char err[256] = "";
    st = dbuf_fit(c, &s->out, row, rows, err, sizeof err);
    if (st != IC_OK)
        return ic_fail_msg(st, err);
    st = ic_image_wrap_device(
        out, s->out.p, like->width, like->height, like->channels, like->layout, s->out.pitch,
        c->device, like->memory == IC_MEM_DEVICE ? like->stream : codec_stream(c, slot_i));
    if (st == IC_OK)
        out->type = shape.type;
    return st;
}

ic_status ic_gpu_codec_encode(ic_gpu_codec *c, int slot_i, const ic_image *img, const char *name,
                              const ic_save_options *opts, ic_bytes *out)
{
    char errbuf[256] = ""; /* what the CUDA and nvJPEG helpers say */
    const size_t errlen = sizeof errbuf;
    if (out)
        memset(out, 0, sizeof *out);
    if (!c || !img || !name || !out || slot_i < 0 || slot_i >= c->nslots)
        return ic_fail(IC_ERR_INVALID_ARG, "bad codec, slot, image or name");
    if (img->memory != IC_MEM_DEVICE || img->device != c->device || !img->data)
        return ic_fail(IC_ERR_INVALID_ARG, "not a device image on the codec's device");
    slot *s = &c->s[slot_i];
    const int quality = opts && opts->quality ? opts->quality : 92;
    ic_nvjpeg *nj = codec_nj(c);
    if (nj && ic_format_from_path(name) == IC_FMT_JPEG && ic_format_supported(IC_FMT_JPEG) &&
        img->type == IC_U8 && img->channels == 3 && img->layout == IC_AOS && quality >= 1 &&
        quality <= 100 && img->width <= 65500 && img->height <= 65500) {
        size_t n = 0;
        const ic_status st =
            ic_nvjpeg_encode(nj, img->data, img->pitch, img->width, img->height, img->stream,
                             quality, &s->enc, &s->enc_cap, &n, errbuf, errlen);
        if (st != IC_OK)
            return ic_fail_msg(st, errbuf);
        /* nvJPEG writes no metadata: inserted as the CPU writer places it
         * (ic_jpeg_add_metadata reports through ic_fail). */
        const ic_status ms = opts && opts->metadata
                                 ? ic_jpeg_add_metadata(&s->enc, &s->enc_cap, &n, opts->metadata, 3)
                                 : IC_OK;
        if (ms != IC_OK)
            return ms;
        out->data = s->enc;
        out->size = n;
        return IC_OK;
    }
    /* The CPU writer: one copy to the host, then ic_image_encode. */
    ic_image *h = &s->host;
    if (!h->data || h->width != img->width || h->height != img->height ||
        h->channels != img->channels || h->layout != img->layout || h->type != img->type) {
        ic_image_free(h);
        ic_status st =
            ic_image_create_type(h, img->width, img->height, img->channels, img->layout, img->type);
        if (st != IC_OK)
            return ic_fail(st, "cannot allocate the host staging image");
    }
    const int rows = img->height * (img->layout == IC_SOA ? img->channels : 1);
    ic_status st = ic_cuda_copy_rows(c->device, h->data, h->pitch, img->data, img->pitch,
                                     ic_image_row_bytes(img), rows, 0, img->stream, errbuf, errlen);
    if (st != IC_OK)
        return ic_fail_msg(st, errbuf);
    free(s->cpu_enc);
    s->cpu_enc = NULL;
    size_t n = 0;
    st = ic_image_encode(h, name, opts, &s->cpu_enc, &n); /* sets the message */
    if (st != IC_OK)
        return st;
    out->data = s->cpu_enc;
    out->size = n;
    return IC_OK;
}

#endif /* IC_HAVE_CUDA */
