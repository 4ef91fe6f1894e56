/*
 * cli_stream.c - the raw frame stream of imgconv: fixed-size raw
 * interleaved frames from stdin, filtered one by one, to stdout (ffmpeg -f
 * rawvideo pipes), as three overlapping stages: a reader thread, the filter
 * on the main thread (one context), a writer thread. It holds at most 6
 * frames: 3 read ahead and 3 waiting to be written. Samples are 8-bit, or
 * with WxHxC:16 16-bit little-endian (ffmpeg's rgb48le, gray16le, ...),
 * filtered as IC_U16 images.
 */
#include "cli_stream.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_args.h"
#include "cli_auto.h"

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
    size_t frame;       /* bytes per frame */
    int swap;           /* 16-bit samples on a big-endian host: swapped after reading
                         * and before writing (the stream is little-endian) */
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
        stream_must(pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &old), "pthread_setcancelstate");
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

/* Swaps the two bytes of each 16-bit sample of a frame (n bytes, even). */
static void swap16(uint8_t *p, size_t n)
{
    for (size_t i = 0; i + 1 < n; i += 2) {
        const uint8_t t = p[i];
        p[i] = p[i + 1];
        p[i + 1] = t;
    }
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
        if (st->swap && got == st->frame)
            swap16(buf, got);
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
        uint8_t *buf = r->buf[r->taken % r->n];
        r->taken++;
        stream_unlock(st);
        if (st->swap)
            swap16(buf, st->frame); /* the buffer is this thread's until freed */
        /* One frame and its flush as a unit that a fatal signal lets finish,
         * so the output holds whole frames only. */
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
static int ring_alloc(frame_ring *r, int w, int h, int c, ic_sample_type type, size_t frame)
{
    memset(r, 0, sizeof *r);
    while (r->n < STREAM_RING) {
        uint8_t *b = malloc(frame);
        if (!b)
            break;
        if (ic_image_wrap_type(&r->img[r->n], b, w, h, c, IC_AOS, 0, type) != IC_OK) {
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
    const ic_sample_type type = o->stream_type;
    const char *depth = type == IC_U16 ? ":16" : ""; /* as --stream names it */
    ic_kernel k;
    ic_params p;
    ic_context *ctx;
    /* --backend auto: a frame at a time, its count unknown, so the choice is
     * one frame's (raw samples: no codec) */
    cli_options ro = *o;
    cli_auto pick;
    memset(&pick, 0, sizeof pick);
    if (strcmp(o->backend, "auto") == 0) {
        int code = cli_get_kernel(o, &k, e);
        if (code != CLI_EXIT_OK)
            return code;
        cli_auto_choose(o, &k, 1, w, h, c, IC_FMT_UNKNOWN, IC_FMT_UNKNOWN, 0, 0, &pick);
        ic_kernel_free(&k);
        ro.backend = pick.backend;
        if (o->explain) /* standard output carries the frames */
            fprintf(stderr, "imgconv: backend %s (auto): %s\n", pick.backend, pick.reason);
        o = &ro;
    }
    int code = cli_open_filter(o, &o->ctx, &k, &p, &ctx, e); /* --devices: one image split */
    if (code != CLI_EXIT_OK)
        return code;
    /* every frame has the same size: --max-work is checked once, per frame */
    if ((code = cli_check_work(o, w, h, c, &k, "-", e)) != CLI_EXIT_OK) {
        ic_context_free(ctx);
        ic_kernel_free(&k);
        return code;
    }
    stream st;
    memset(&st, 0, sizeof st);
    /* w, h <= IC_MAX_DIM, c <= 4, 2-byte samples: the product fits in 64 bits. */
    st.frame = (size_t)w * (size_t)h * (size_t)c * ic_sample_size(type);
    const uint16_t one = 1;
    st.swap = type == IC_U16 && *(const uint8_t *)&one == 0;
    if (ring_alloc(&st.in, w, h, c, type, st.frame) != 0 ||
        ring_alloc(&st.out, w, h, c, type, st.frame) != 0) {
        ring_free(&st.in);
        ic_context_free(ctx);
        ic_kernel_free(&k);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory for %dx%dx%d%s frames", w, h, c,
                        depth);
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
                                      "short final frame: %zu of %zu bytes (frame %ld)", st.in_got,
                                      st.frame, read_frame);
    else if (which == 2)
        code =
            cli_fail(e, cli_exit_for_backend(fs), NULL, "frame %ld: %s", filter_frame, filter_msg);
    else if (which == 3)
        code = cli_fail(e, CLI_EXIT_OUTPUT, "standard output", "write error: %s",
                        strerror(st.out_errno));
    else if (st.flush_failed)
        code = cli_fail(e, CLI_EXIT_OUTPUT, "standard output", "write error: %s",
                        strerror(st.flush_errno));
    if (o->time)
        fprintf(stderr, "imgconv: %ld frames of %dx%dx%d%s in %.2f s: %.1f frames/s (backend %s)\n",
                st.written, w, h, c, depth, ms / 1e3, ms > 0 ? st.written * 1e3 / ms : 0.0,
                ic_context_backend(ctx));
    stream_sync_destroy(&st);
    ring_free(&st.in);
    ring_free(&st.out);
    ic_context_free(ctx);
    ic_kernel_free(&k);
    return code;
}
