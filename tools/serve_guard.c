/*
 * serve_guard.c - the body-size guard of imgconv serve: a filtering
 * bufferevent under each connection's evhttp that follows the requests'
 * framing (head, Content-Length body, chunks) and answers a body over
 * --max-body with the JSON 413 as soon as it is known: from the head's
 * Content-Length (the head never reaches evhttp, so no 100 Continue and no
 * body is read), or from the chunk that takes a chunked body past the
 * limit. libevent 2.1 has no hook between a server request's head and its
 * body (evhttp_set_newreqcb, with which header_cb could be set, came in
 * 2.2), and its own refusal is an HTML page. Framing it cannot follow
 * (a malformed chunk line, a head over the header limit) is passed through
 * untouched for evhttp to refuse; evhttp's own --max-body check stays
 * behind it. It also counts the connections: one over --max-connections
 * is answered the JSON 503 at once, none of its request is read, and its
 * side of the socket is shut once the reply is out (a close would reset the
 * connection, and the reply with it, when the client's request arrives);
 * evhttp frees it when the client closes, or a second later at most.
 * evhttp_set_max_connections came in libevent 2.2 and closes silently.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "serve_int.h"

/* Seconds a refused connection is kept after its 503 for the client to read it
 * (a client sending all along would otherwise hold it past --timeout). */
#define GUARD_BUSY_LINGER_S 1

/* The head is kept until its end is seen (evhttp refuses heads over 16 KiB). */
#define GUARD_HEAD_MAX 20000

/* Bytes of a body read straight from the socket at once (read_ahead). */
#define GUARD_READ_MAX ((size_t)1 << 20)

enum {
    G_HEAD,
    G_BODY,
    G_CHUNK_LINE,
    G_CHUNK_DATA,
    G_CHUNK_END,
    G_TRAILER,
    G_PASS,
    G_REFUSED,
    G_BUSY
};

typedef struct guard {
    srv *s;
    struct bufferevent *under;
    struct bufferevent *bev; /* the filter evhttp sees */
    struct event *kick;      /* guard_kick, on the loop's next turn */
    struct event *done;      /* guard_done, once the socket took the reply */
    struct event *linger;    /* guard_linger: a refused connection's end */
    int writing;             /* a reply of evhttp's is under the filter */
    int counted;             /* in s->conns */
    int nodelay;             /* TCP_NODELAY asked for on the socket */
    int phase;
    char head[GUARD_HEAD_MAX];
    size_t nhead;
    int line_empty;      /* the current line has no bytes yet but \r */
    char chunk_line[64]; /* the size line of a chunk */
    size_t nchunk;
    uint64_t left;   /* of the Content-Length body, or of the chunk */
    int body_room;   /* body_start reserved room for this body's rest */
    int replies_due; /* heads passed to evhttp whose replies are not yet out */
    int refusal_due; /* a 413 waits for the replies before it */
    int refusal_own; /* ... and its own head went to evhttp (chunked) */
    uint64_t body;   /* the chunked body so far */
} guard;

/* The JSON 413, written under evhttp, which never saw this request or is
 * still waiting for its body; the client closes after it (Connection: close). */
static void refusal_write(guard *g)
{
    char json[160], reply[400];
    snprintf(json, sizeof json,
             "{\"error\": \"too_large\", \"message\": \"the body is over --max-body (%llu "
             "bytes)\"}\n",
             (unsigned long long)g->s->base.max_body);
    const int n = snprintf(reply, sizeof reply,
                           "HTTP/1.1 413 Payload Too Large\r\nContent-Type: application/json\r\n"
                           "Content-Length: %zu\r\nConnection: close\r\n\r\n%s",
                           strlen(json), json);
    bufferevent_write(g->under, reply, (size_t)n);
    srv_metrics_record(g->s, 413, 0);
}

/* The JSON 413 of a body over --max-body: at once, or, when the client has
 * pipelined it behind requests evhttp has not answered yet, after their
 * replies (guard_done). own: the refused request's head went to evhttp
 * (a chunked body that grew too large), which will never answer it. */
static void refuse(guard *g, int own)
{
    g->phase = G_REFUSED;
    g->refusal_own = own;
    g->refusal_due = g->replies_due > own;
    if (!g->refusal_due)
        refusal_write(g);
}

/* The JSON 503 of a connection over --max-connections, before evhttp has
 * read anything of it. */
static void refuse_busy(guard *g)
{
    char json[200], reply[500];
    snprintf(json, sizeof json,
             "{\"error\": \"busy\", \"message\": \"the server has --max-connections (%d) "
             "open; retry later\"}\n",
             g->s->base.max_connections);
    const int n = snprintf(reply, sizeof reply,
                           "HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json\r\n"
                           "Retry-After: 1\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n%s",
                           strlen(json), json);
    bufferevent_write(g->under, reply, (size_t)n);
    g->s->conns_refused++;
    srv_metrics_record(g->s, 503, 0);
}

/* A header's value when line (without its end) is "name: value". */
static const char *header_value(const char *line, size_t n, const char *name, size_t *vlen)
{
    const size_t k = strlen(name);
    if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
        return NULL;
    const char *v = line + k + 1;
    const char *end = line + n;
    while (v < end && (*v == ' ' || *v == '\t'))
        v++;
    *vlen = (size_t)(end - v);
    return v;
}

/* The head is complete: its framing decides what follows. Returns 0 when
 * the request is refused (the head is then withheld from evhttp). */
static int head_end(guard *g)
{
    int chunked = 0, has_len = 0, bad = 0;
    char *expect = NULL;
    uint64_t len = 0;
    const char *p = g->head, *end = g->head + g->nhead;
    const char *nl = memchr(p, '\n', (size_t)(end - p)); /* past the request line */
    for (p = nl ? nl + 1 : end; p < end;) {
        const char *e = memchr(p, '\n', (size_t)(end - p));
        size_t n = (size_t)((e ? e : end) - p);
        if (n > 0 && p[n - 1] == '\r')
            n--;
        size_t vlen = 0;
        const char *v;
        if ((v = header_value(p, n, "Content-Length", &vlen))) {
            uint64_t x = 0;
            size_t i = 0;
            for (; i < vlen && isdigit((unsigned char)v[i]) && x <= UINT64_MAX / 10 - 1; i++)
                x = x * 10 + (uint64_t)(v[i] - '0');
            bad |= i == 0 || i < vlen;
            len = x;
            has_len = 1;
        } else if ((v = header_value(p, n, "Transfer-Encoding", &vlen))) {
            for (size_t i = 0; i + 7 <= vlen; i++)
                chunked |= strncasecmp(v + i, "chunked", 7) == 0;
        } else if ((v = header_value(p, n, "Expect", &vlen)) && vlen == 12 &&
                   strncasecmp(v, "100-continue", 12) == 0) {
            expect = (char *)p;
        }
        p = e ? e + 1 : end;
    }
    g->body = 0;
    const int refused = !chunked && !bad && has_len && len > g->s->base.max_body;
    if (expect && !refused) {
        /* The guard answers the 100 Continue and evhttp never sees the
         * Expect: evhttp's own would leave writing enabled on the filter,
         * whose write timeout (--timeout) then closes a request still
         * queued or being filtered. */
        expect[0] = 'X';
        bufferevent_write(g->under, "HTTP/1.1 100 Continue\r\n\r\n", 25);
    }
    if (chunked) {
        g->phase = G_CHUNK_LINE;
        g->nchunk = 0;
    } else if (bad) {
        g->phase = G_PASS; /* evhttp's to refuse */
    } else if (refused) {
        refuse(g, 0);
        return 0;
    } else if (has_len && len > 0) {
        g->phase = G_BODY;
        g->left = len;
        g->body_room = 0; /* body_start reserves room for it once */
    } else {
        g->phase = G_HEAD;
    }
    return 1;
}

/* One line of a chunked body's framing is complete. */
static void chunk_line_end(guard *g)
{
    if (g->phase == G_CHUNK_END) {
        g->phase = G_CHUNK_LINE;
        g->nchunk = 0;
        return;
    }
    if (g->phase == G_TRAILER) { /* an empty line ends the trailer and the request */
        if (g->nchunk == 0)
            g->phase = G_HEAD;
        g->nchunk = 0;
        return;
    }
    uint64_t size = 0;
    size_t i = 0;
    for (; i < g->nchunk && isxdigit((unsigned char)g->chunk_line[i]); i++) {
        if (size > UINT64_MAX / 16 - 1) {
            g->phase = G_PASS;
            return;
        }
        const char c = (char)tolower((unsigned char)g->chunk_line[i]);
        size = size * 16 + (uint64_t)(c <= '9' ? c - '0' : c - 'a' + 10);
    }
    if (i == 0) {
        g->phase = G_PASS;
        return;
    }
    g->nchunk = 0;
    if (size == 0) {
        g->phase = G_TRAILER;
        return;
    }
    g->body += size;
    if (g->body > g->s->base.max_body) {
        refuse(g, 1);
        return;
    }
    g->left = size;
    g->phase = G_CHUNK_DATA;
}

/* One byte of a head: kept until the head's end decides. */
static void head_byte(guard *g, unsigned char c, struct evbuffer *dst)
{
    if (g->nhead == sizeof g->head) { /* too long for evhttp anyway: its to refuse */
        evbuffer_add(dst, g->head, g->nhead);
        evbuffer_add(dst, &c, 1);
        g->nhead = 0;
        g->phase = G_PASS;
        return;
    }
    if (g->nhead == 0)
        g->line_empty = 1;
    g->head[g->nhead++] = (char)c;
    if (c == '\n') {
        const int ends = g->line_empty && g->nhead > 2; /* blank lines before a request do not */
        g->line_empty = 1;
        if (ends) {
            if (head_end(g)) {
                evbuffer_add(dst, g->head, g->nhead);
                g->replies_due++;
            }
            g->nhead = 0;
        }
    } else if (c != '\r') {
        g->line_empty = 0;
    }
}

/* The rest of a body (or chunk) straight from the socket, as much as it
 * holds: libevent 2.1 reads 4 KiB a loop turn (EVBUFFER_MAX_READ), so a
 * 300 KB photograph took some 75 turns of the one event loop, each through
 * this filter and evhttp's callback. The room asked for is what the socket
 * holds (FIONREAD), so that a body arriving slowly is not kept in chains
 * mostly empty. Never blocks (MSG_DONTWAIT); an end of file or error is
 * left for the socket bufferevent's next read to see. */
static void read_ahead(guard *g, struct evbuffer *dst)
{
    const evutil_socket_t fd = bufferevent_getfd(g->under);
    while (fd >= 0 && (g->phase == G_BODY || g->phase == G_CHUNK_DATA) && g->left > 0) {
        int avail = 0;
        if (ioctl(fd, FIONREAD, &avail) != 0 || avail <= 0)
            return;
        size_t want = g->left < GUARD_READ_MAX ? (size_t)g->left : GUARD_READ_MAX;
        if ((size_t)avail < want)
            want = (size_t)avail;
        struct evbuffer_iovec v[2];
        const int nv = evbuffer_reserve_space(dst, (ev_ssize_t)want, v, 2);
        if (nv <= 0)
            return;
        struct iovec iov[2];
        size_t room = want;
        for (int i = 0; i < nv; i++) {
            iov[i].iov_base = v[i].iov_base;
            iov[i].iov_len = v[i].iov_len < room ? v[i].iov_len : room;
            room -= iov[i].iov_len;
        }
        struct msghdr m;
        memset(&m, 0, sizeof m);
        m.msg_iov = iov;
        m.msg_iovlen = (size_t)nv;
        const ssize_t r = recvmsg(fd, &m, MSG_DONTWAIT);
        if (r <= 0) {
            evbuffer_commit_space(dst, v, 0);
            return;
        }
        size_t got = (size_t)r;
        for (int i = 0; i < nv; i++) {
            v[i].iov_len = got < iov[i].iov_len ? got : iov[i].iov_len;
            got -= v[i].iov_len;
        }
        evbuffer_commit_space(dst, v, nv);
        g->left -= (uint64_t)r;
        if (g->left == 0)
            g->phase = g->phase == G_BODY ? G_HEAD : G_CHUNK_END;
        if ((size_t)r < want)
            return; /* the socket is drained */
    }
}

/* The first bytes of a body that has more to come: copied into a chain with
 * room for the rest (up to GUARD_READ_MAX), which read_ahead then fills, so
 * that the server takes the body without copying it again. */
static void body_start(guard *g, struct evbuffer *src, struct evbuffer *dst, size_t take)
{
    g->body_room = 1; /* once a body: a slow one would leave a mostly empty chain per read */
    const size_t room = g->left < GUARD_READ_MAX ? (size_t)g->left : GUARD_READ_MAX;
    struct evbuffer_iovec v[1];
    if (evbuffer_expand(dst, room) != 0 ||
        evbuffer_reserve_space(dst, (ev_ssize_t)take, v, 1) != 1 ||
        evbuffer_remove(src, v[0].iov_base, take) != (int)take) {
        evbuffer_remove_buffer(src, dst, take); /* no room: as it comes */
        return;
    }
    v[0].iov_len = take;
    evbuffer_commit_space(dst, v, 1);
}

static enum bufferevent_filter_result guard_input(struct evbuffer *src, struct evbuffer *dst,
                                                  ev_ssize_t limit,
                                                  enum bufferevent_flush_mode mode, void *ctx)
{
    (void)limit;
    (void)mode;
    guard *g = ctx;
    if (!g->nodelay) {
        /* A reply's last segment must not wait for the client's delayed ACK
         * of the one before (Nagle: 40 ms stalls, the p99 of one client). A
         * unix socket refuses it, which costs nothing. */
        const int one = 1, fd = (int)bufferevent_getfd(g->under);
        if (fd >= 0)
            (void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        g->nodelay = 1;
    }
    for (size_t n; (n = evbuffer_get_length(src)) > 0;) {
        if (g->phase == G_PASS) {
            evbuffer_remove_buffer(src, dst, n);
        } else if (g->phase == G_REFUSED || g->phase == G_BUSY) { /* never evhttp's */
            evbuffer_drain(src, n);
        } else if (g->phase == G_BODY || g->phase == G_CHUNK_DATA) {
            const size_t take = n < g->left ? n : (size_t)g->left;
            if (g->phase == G_BODY && take < g->left && !g->body_room)
                body_start(g, src, dst, take);
            else
                evbuffer_remove_buffer(src, dst, take);
            g->left -= take;
            if (g->left == 0)
                g->phase = g->phase == G_BODY ? G_HEAD : G_CHUNK_END;
            else
                read_ahead(g, dst); /* src is empty: the body's rest is on the socket */
        } else {
            unsigned char c;
            evbuffer_remove(src, &c, 1);
            if (g->phase == G_HEAD) {
                head_byte(g, c, dst);
                continue;
            }
            evbuffer_add(dst, &c, 1); /* the chunks' framing, passed on as it comes */
            if (c == '\n')
                chunk_line_end(g);
            else if (c != '\r' && g->nchunk < sizeof g->chunk_line)
                g->chunk_line[g->nchunk++] = (char)c;
        }
    }
    return BEV_OK;
}

/* The output filter: the reply's chains, moved (a reply's body is a
 * reference that its last evbuffer frees: serve.c's free_reply). */
static enum bufferevent_filter_result guard_output(struct evbuffer *src, struct evbuffer *dst,
                                                   ev_ssize_t limit,
                                                   enum bufferevent_flush_mode mode, void *ctx)
{
    (void)limit;
    (void)mode;
    (void)ctx;
    guard *g = ctx;
    if (evbuffer_add_buffer(dst, src) != 0)
        return BEV_ERROR;
    g->writing = 1;
    /* not BEV_OK: that would tell evhttp the reply is written while it is
     * still under the filter; guard_drained does once it is on the wire */
    return BEV_NEED_MORE;
}

/* The reply has left the socket: evhttp's write callback may now end the
 * request (and free the connection when it closes). */
static void guard_done(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    guard *g = arg;
    if (g->writing && evbuffer_get_length(bufferevent_get_output(g->bev)) == 0 &&
        evbuffer_get_length(bufferevent_get_output(g->under)) == 0) {
        g->writing = 0;
        g->replies_due -= g->replies_due > 0;
        if (g->refusal_due && g->replies_due <= g->refusal_own) {
            g->refusal_due = 0; /* the replies before it are out: the pipelined 413 */
            refusal_write(g);
        }
        bufferevent_trigger(g->bev, EV_WRITE, 0); /* may free g */
    }
}

/* A refused connection's time is up: evhttp frees it as at the client's
 * close (deferred: that frees this event too). */
static void guard_linger(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    guard *g = arg;
    bufferevent_trigger_event(g->bev, BEV_EVENT_EOF | BEV_EVENT_READING, BEV_TRIG_DEFER_CALLBACKS);
}

static void guard_drained(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
    guard *g = arg;
    if (info->n_deleted == 0 || evbuffer_get_length(out) != 0)
        return;
    if (g->phase == G_BUSY) {
        shutdown(bufferevent_getfd(g->under), SHUT_WR);
        const struct timeval tv = {
            g->s->base.timeout < GUARD_BUSY_LINGER_S ? g->s->base.timeout : GUARD_BUSY_LINGER_S, 0};
        evtimer_add(g->linger, &tv);
    } else if (g->writing)
        event_active(g->done, EV_TIMEOUT, 1);
}

/* The deferred push of guard_output_added: writing is enabled by now, so the
 * filter passes the reply on and, once it has, tells evhttp (its write
 * callback ends the request and reads the next one on the connection). A
 * connection over the limit is answered from here, once evhttp has given
 * it its socket. */
static void guard_kick(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    guard *g = arg;
    if (g->phase == G_BUSY)
        refuse_busy(g);
    else
        bufferevent_flush(g->bev, EV_WRITE, BEV_NORMAL);
}

/* evhttp queues a reply before it enables writing, and a filtering
 * bufferevent only passes output on while writing is enabled and looks again
 * only when more is added: the reply is pushed from the loop's next turn. */
static void guard_output_added(struct evbuffer *out, const struct evbuffer_cb_info *info, void *arg)
{
    (void)out;
    guard *g = arg;
    if (info->n_added > 0)
        event_active(g->kick, EV_TIMEOUT, 1);
}

static void guard_free(void *arg)
{
    guard *g = arg;
    if (g->counted)
        g->s->conns--;
    if (g->kick)
        event_free(g->kick);
    if (g->done)
        event_free(g->done);
    if (g->linger)
        event_free(g->linger);
    free(g);
}

struct bufferevent *srv_guard_new(struct event_base *base, void *arg)
{
    srv *s = arg;
    guard *g = calloc(1, sizeof *g);
    struct bufferevent *under = g ? bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE) : NULL;
    struct bufferevent *bev = under ? bufferevent_filter_new(under, guard_input, guard_output,
                                                             BEV_OPT_CLOSE_ON_FREE, guard_free, g)
                                    : NULL;
    if (!bev) {
        if (under)
            bufferevent_free(under);
        free(g);
        return NULL;
    }
    g->s = s;
    g->under = under;
    g->phase = G_HEAD;
    g->bev = bev;
    g->kick = event_new(base, -1, 0, guard_kick, g);
    g->done = event_new(base, -1, 0, guard_done, g);
    g->linger = evtimer_new(base, guard_linger, g);
    if (!g->kick || !g->done || !g->linger ||
        !evbuffer_add_cb(bufferevent_get_output(bev), guard_output_added, g) ||
        !evbuffer_add_cb(bufferevent_get_output(under), guard_drained, g)) {
        bufferevent_free(bev); /* frees g */
        return NULL;
    }
    g->counted = 1;
    if (++s->conns > s->base.max_connections) {
        g->phase = G_BUSY;
        event_active(g->kick, EV_TIMEOUT, 1);
    }
    return bev;
}
