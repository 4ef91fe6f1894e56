/*
 * serve_load.c - bench/serve-load.py in C, so that the load client is never
 * what bounds imgconv serve's rate (the Python's per-request cost and its
 * interpreter lock were suspected to at ~1,500 requests/s). Same command
 * line, same one output line (bench/suites/serve.sh parses its fields):
 *
 *   clients=N requests=R errors=E seconds=S rps=X p50_ms=A p99_ms=B
 *       queue_ms=Q decode_ms=D filter_ms=F encode_ms=C lanes=L
 *
 * CLIENTS threads, each on one keep-alive connection, send POST
 * /v1/filter?QUERY with BODY until COUNT requests are taken or SECONDS have
 * passed, read each whole reply (Content-Length or chunked), check its
 * status and, with --expect, its bytes; the _ms are the means of the
 * Server-Timing entries of the good replies. A failed request (status,
 * bytes, socket error, malformed reply, 600 s without data) is an error and
 * its connection is opened again. Exit 0, 1 when any request failed, 2 on a
 * bad command line or a URL that is not loopback (http://127.x.x.x:PORT,
 * http://[::1]:PORT, http://localhost:PORT or unix:PATH).
 *
 *   cc -O2 -pthread bench/probe/serve_load.c -o serve_load
 *   serve_load URL BODY QUERY [--clients N] [--count R] [--seconds S]
 *              [--expect FILE] [--warmup W] [--procs P (ignored)]
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define HEAD_MAX (64 * 1024)       /* status line and headers */
#define BODY_MAX ((size_t)1 << 30) /* a larger reply is an error */
#define TIMEOUT_S 600              /* as the Python's socket timeout */
#define LANES_MAX 8
#define LANE_LEN 32

enum { Q_QUEUE, Q_DECODE, Q_FILTER, Q_ENCODE, N_STAGES };
static const char *const stage_names[N_STAGES] = {"queue", "decode", "filter", "encode"};

typedef struct target {
    struct sockaddr_storage addr[4]; /* localhost may resolve to both families */
    socklen_t len[4];
    int n;
    int tcp;
} target;

typedef struct job {
    target to;
    const char *head; /* request line and headers */
    size_t head_len;
    const unsigned char *body, *want;
    size_t body_len, want_len;
    int check;
    atomic_long left;
    double deadline;
} job;

typedef struct conn {
    int fd;
    char *in; /* bytes read but not yet consumed: in[beg, end) */
    size_t beg, end;
    unsigned char *body; /* the reply's body, reused */
    size_t body_len, body_cap;
} conn;

typedef struct tally {
    double *lat;
    size_t n, cap;
    long errors;
    double stage[N_STAGES];
    char lanes[LANES_MAX][LANE_LEN];
    int n_lanes;
} tally;

typedef struct reply {
    int status;
    int close;
    char timing[512];
} reply;

static double now_s(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void die2(const char *msg, const char *what)
{
    fprintf(stderr, "serve_load: %s%s\n", what ? what : "", msg);
    exit(2);
}

static unsigned char *file_read(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        die2(": cannot open", path);
    unsigned char *p = NULL;
    size_t cap = 0, len = 0;
    for (;;) {
        if (len == cap) {
            cap = cap ? cap * 2 : 1 << 16;
            unsigned char *q = realloc(p, cap);
            if (!q)
                die2(": out of memory", path);
            p = q;
        }
        size_t got = fread(p + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad)
        die2(": read error", path);
    *n = len;
    return p;
}

/* Fills t from URL, or exits 2 when it is not a loopback address; *host is
 * what the Host header says. */
static void target_parse(const char *url, target *t, char *host, size_t host_cap)
{
    memset(t, 0, sizeof *t);
    if (strncmp(url, "unix:", 5) == 0) {
        struct sockaddr_un *a = (struct sockaddr_un *)&t->addr[0];
        if (!url[5] || strlen(url + 5) >= sizeof a->sun_path)
            die2(": bad unix socket path", url);
        a->sun_family = AF_UNIX;
        strcpy(a->sun_path, url + 5);
        t->len[0] = sizeof *a;
        t->n = 1;
        snprintf(host, host_cap, "localhost");
        return;
    }
    const char *refuse = ": loopback http://127.0.0.1:PORT or unix:PATH only";
    if (strncasecmp(url, "http://", 7) != 0)
        die2(refuse, url);
    const char *h = url + 7, *e;
    char name[64];
    if (*h == '[') {
        e = strchr(h, ']');
        if (!e || (size_t)(e - h - 1) >= sizeof name)
            die2(refuse, url);
        memcpy(name, h + 1, (size_t)(e - h - 1));
        name[e - h - 1] = 0;
        e++;
    } else {
        e = h + strcspn(h, ":/?#");
        if ((size_t)(e - h) >= sizeof name)
            die2(refuse, url);
        memcpy(name, h, (size_t)(e - h));
        name[e - h] = 0;
    }
    long port = 80;
    if (*e == ':') {
        char *end;
        errno = 0;
        port = strtol(e + 1, &end, 10);
        if (end == e + 1 || errno || port < 1 || port > 65535 || (*end && !strchr("/?#", *end)))
            die2(": bad port", url);
    } else if (*e && !strchr("/?#", *e)) {
        die2(refuse, url);
    }
    struct in_addr a4;
    struct in6_addr a6;
    if (h[0] != '[' && inet_pton(AF_INET, name, &a4) == 1) {
        if ((ntohl(a4.s_addr) >> 24) != 127)
            die2(refuse, url);
        struct sockaddr_in *a = (struct sockaddr_in *)&t->addr[0];
        a->sin_family = AF_INET;
        a->sin_port = htons((unsigned short)port);
        a->sin_addr = a4;
        t->len[0] = sizeof *a;
        t->n = 1;
    } else if (h[0] == '[' && inet_pton(AF_INET6, name, &a6) == 1) {
        if (!IN6_IS_ADDR_LOOPBACK(&a6))
            die2(refuse, url);
        struct sockaddr_in6 *a = (struct sockaddr_in6 *)&t->addr[0];
        a->sin6_family = AF_INET6;
        a->sin6_port = htons((unsigned short)port);
        a->sin6_addr = a6;
        t->len[0] = sizeof *a;
        t->n = 1;
    } else if (h[0] != '[' && strcasecmp(name, "localhost") == 0) {
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res, *r;
        char ps[8];
        snprintf(ps, sizeof ps, "%ld", port);
        if (getaddrinfo("localhost", ps, &hints, &res) != 0)
            die2(": cannot resolve localhost", url);
        for (r = res; r && t->n < 4; r = r->ai_next) {
            memcpy(&t->addr[t->n], r->ai_addr, r->ai_addrlen);
            t->len[t->n++] = r->ai_addrlen;
        }
        freeaddrinfo(res);
        if (!t->n)
            die2(": cannot resolve localhost", url);
    } else {
        die2(refuse, url);
    }
    t->tcp = 1;
    snprintf(host, host_cap, h[0] == '[' ? "[%s]:%ld" : "%s:%ld", name, port);
}

static void conn_close(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->beg = c->end = 0;
}

static int conn_open(conn *c, const target *t)
{
    conn_close(c);
    for (int i = 0; i < t->n; i++) {
        int fd = socket(t->addr[i].ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
            continue;
        struct timeval tv = {.tv_sec = TIMEOUT_S};
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
        setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
        if (t->tcp)
            setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (connect(fd, (const struct sockaddr *)&t->addr[i], t->len[i]) == 0) {
            c->fd = fd;
            return 0;
        }
        close(fd);
    }
    return -1;
}

static int send_all(int fd, struct iovec *iov, int n)
{
    while (n > 0) {
        struct msghdr m = {.msg_iov = iov, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(fd, &m, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        size_t left = (size_t)w;
        while (n > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            n--;
        }
        if (n > 0) {
            iov->iov_base = (char *)iov->iov_base + left;
            iov->iov_len -= left;
        }
    }
    return 0;
}

/* Reads more into c->in; 0 at end of stream, -1 on an error or a full buffer. */
static ssize_t conn_fill(conn *c)
{
    if (c->beg > 0) {
        memmove(c->in, c->in + c->beg, c->end - c->beg);
        c->end -= c->beg;
        c->beg = 0;
    }
    if (c->end == HEAD_MAX)
        return -1;
    for (;;) {
        ssize_t r = recv(c->fd, c->in + c->end, HEAD_MAX - c->end, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r > 0)
            c->end += (size_t)r;
        return r;
    }
}

/* The next CRLF-ended line, without its CRLF, NUL-terminated in place. */
static char *conn_line(conn *c)
{
    size_t from = c->beg;
    for (;;) {
        char *p = memchr(c->in + from, '\n', c->end - from);
        if (p) {
            char *line = c->in + c->beg;
            size_t n = (size_t)(p - line);
            if (n > 0 && line[n - 1] == '\r')
                n--;
            line[n] = 0;
            c->beg = (size_t)(p - c->in) + 1;
            return line;
        }
        from = c->end - c->beg;
        if (conn_fill(c) <= 0)
            return NULL;
        /* conn_fill moved the unread bytes to the front */
    }
}

/* Appends n body bytes to c->body, from the buffer first, then the socket. */
static int conn_body(conn *c, size_t n)
{
    if (n > BODY_MAX - c->body_len)
        return -1;
    size_t need = c->body_len + n;
    if (need > c->body_cap) {
        size_t cap = c->body_cap ? c->body_cap : 1 << 16;
        while (cap < need)
            cap *= 2;
        unsigned char *p = realloc(c->body, cap);
        if (!p)
            return -1;
        c->body = p;
        c->body_cap = cap;
    }
    size_t k = c->end - c->beg < n ? c->end - c->beg : n;
    memcpy(c->body + c->body_len, c->in + c->beg, k);
    c->beg += k;
    c->body_len += k;
    while (c->body_len < need) {
        ssize_t r = recv(c->fd, c->body + c->body_len, need - c->body_len, 0);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        c->body_len += (size_t)r;
    }
    return 0;
}

/* Reads to the end of the stream (a reply without a length). */
static int conn_body_eof(conn *c)
{
    for (;;) {
        if (conn_body(c, c->end - c->beg) != 0)
            return -1;
        ssize_t r = conn_fill(c);
        if (r == 0)
            return 0;
        if (r < 0)
            return -1;
    }
}

static int parse_size(const char *s, int base, size_t *out)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t v = 0;
    int digits = 0;
    for (;; s++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (base == 16 && *s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (base == 16 && *s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            break;
        if (v > (BODY_MAX - (size_t)d) / (size_t)base)
            return -1;
        v = v * (size_t)base + (size_t)d;
        digits++;
    }
    while (*s == ' ' || *s == '\t')
        s++;
    if (!digits || (*s && !(base == 16 && *s == ';')))
        return -1;
    *out = v;
    return 0;
}

static int chunked_body(conn *c)
{
    for (;;) {
        char *line = conn_line(c);
        size_t n;
        if (!line || parse_size(line, 16, &n) != 0)
            return -1;
        if (n == 0)
            break;
        if (conn_body(c, n) != 0)
            return -1;
        line = conn_line(c);
        if (!line || *line)
            return -1;
    }
    for (;;) { /* trailers, up to the empty line */
        char *line = conn_line(c);
        if (!line)
            return -1;
        if (!*line)
            return 0;
    }
}

static int has_token(const char *v, const char *tok)
{
    size_t n = strlen(tok);
    for (const char *p = v; *p;) {
        p += strspn(p, " \t,");
        size_t k = strcspn(p, ",");
        size_t e = k;
        while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t'))
            e--;
        if (e == n && strncasecmp(p, tok, n) == 0)
            return 1;
        p += k;
    }
    return 0;
}

/* Reads one whole reply into c->body; -1 when it is malformed or cut. */
static int reply_read(conn *c, reply *r)
{
    for (;;) {
        char *line = conn_line(c);
        int major, minor, status;
        if (!line || sscanf(line, "HTTP/%d.%d %3d", &major, &minor, &status) != 3 || status < 100 ||
            status > 599)
            return -1;
        r->status = status;
        r->close = major == 1 && minor == 0;
        r->timing[0] = 0;
        size_t clen = 0;
        int have_len = 0, chunked = 0;
        while ((line = conn_line(c)) && *line) {
            char *v = strchr(line, ':');
            if (!v)
                return -1;
            *v++ = 0;
            v += strspn(v, " \t");
            if (strcasecmp(line, "Content-Length") == 0) {
                size_t n;
                if (parse_size(v, 10, &n) != 0 || (have_len && n != clen))
                    return -1;
                clen = n;
                have_len = 1;
            } else if (strcasecmp(line, "Transfer-Encoding") == 0) {
                if (!has_token(v, "chunked"))
                    return -1; /* no other coding is asked for */
                chunked = 1;
            } else if (strcasecmp(line, "Connection") == 0) {
                if (has_token(v, "close"))
                    r->close = 1;
                else if (has_token(v, "keep-alive"))
                    r->close = 0;
            } else if (strcasecmp(line, "Server-Timing") == 0) {
                size_t k = strlen(r->timing);
                snprintf(r->timing + k, sizeof r->timing - k, "%s%s", k ? ", " : "", v);
            }
        }
        if (!line)
            return -1;
        c->body_len = 0;
        if (status < 200) /* an interim reply: the real one follows */
            continue;
        if (status == 204 || status == 304)
            return 0;
        if (chunked)
            return chunked_body(c);
        if (have_len)
            return conn_body(c, clen);
        r->close = 1;
        return conn_body_eof(c);
    }
}

static void tally_timing(tally *t, const char *timing)
{
    char buf[sizeof((reply *)0)->timing];
    snprintf(buf, sizeof buf, "%s", timing);
    char *save = NULL;
    for (char *p = strtok_r(buf, ",", &save); p; p = strtok_r(NULL, ",", &save)) {
        p += strspn(p, " \t");
        size_t e = strlen(p);
        while (e > 0 && (p[e - 1] == ' ' || p[e - 1] == '\t'))
            p[--e] = 0;
        if (strncmp(p, "lane;desc=", 10) == 0) {
            const char *lane = p + 10;
            if (!*lane)
                continue;
            int i = 0;
            while (i < t->n_lanes && strcmp(t->lanes[i], lane) != 0)
                i++;
            if (i == t->n_lanes && i < LANES_MAX)
                snprintf(t->lanes[t->n_lanes++], LANE_LEN, "%s", lane);
            continue;
        }
        char *dur = strstr(p, ";dur=");
        if (!dur)
            continue;
        *dur = 0;
        for (int s = 0; s < N_STAGES; s++)
            if (strcmp(p, stage_names[s]) == 0) {
                char *end;
                double v = strtod(dur + 5, &end);
                if (end != dur + 5 && isfinite(v))
                    t->stage[s] += v;
            }
    }
}

/* One request on c (opened first when closed): 1 good, 0 failed. */
static int request_one(const job *j, conn *c, tally *t, double *secs)
{
    double t0 = now_s();
    if (c->fd < 0 && conn_open(c, &j->to) != 0)
        return 0;
    struct iovec iov[2] = {{(void *)j->head, j->head_len}, {(void *)j->body, j->body_len}};
    reply r;
    if (send_all(c->fd, iov, 2) != 0 || reply_read(c, &r) != 0) {
        conn_close(c);
        return 0;
    }
    int ok =
        r.status == 200 &&
        (!j->check || (c->body_len == j->want_len && memcmp(c->body, j->want, j->want_len) == 0));
    if (r.close)
        conn_close(c);
    if (ok && t)
        tally_timing(t, r.timing);
    *secs = now_s() - t0;
    return ok;
}

static int tally_add(tally *t, double x)
{
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 1024;
        double *p = realloc(t->lat, cap * sizeof *p);
        if (!p)
            return -1;
        t->lat = p;
        t->cap = cap;
    }
    t->lat[t->n++] = x;
    return 0;
}

typedef struct worker {
    job *j;
    tally t;
    pthread_t tid;
} worker;

static void *client(void *arg)
{
    worker *w = arg;
    conn c = {.fd = -1, .in = malloc(HEAD_MAX)};
    if (!c.in) {
        w->t.errors++;
        return NULL;
    }
    while (now_s() <= w->j->deadline && atomic_fetch_sub(&w->j->left, 1) > 0) {
        double dt = 0;
        if (request_one(w->j, &c, &w->t, &dt) && tally_add(&w->t, dt) == 0)
            continue;
        w->t.errors++;
    }
    conn_close(&c);
    free(c.in);
    free(c.body);
    return NULL;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int cmp_lane(const void *a, const void *b)
{
    return strcmp(a, b);
}

static long arg_long(const char *name, const char *v, long lo, long hi)
{
    char *end;
    errno = 0;
    long x = v ? strtol(v, &end, 10) : 0;
    if (!v || end == v || *end || errno || x < lo || x > hi) {
        fprintf(stderr, "serve_load: %s takes %ld..%ld\n", name, lo, hi);
        exit(2);
    }
    return x;
}

int main(int argc, char **argv)
{
    const char *pos[3] = {0}, *expect = NULL;
    int n_pos = 0;
    long clients = 1, count = 200, warmup = 2;
    double seconds = 30;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        if (strncmp(a, "--", 2) != 0 || !a[2]) {
            if (n_pos == 3)
                die2("usage: serve_load URL BODY QUERY [--clients N] [--count R] [--seconds S] "
                     "[--expect FILE] [--warmup W] [--procs P]",
                     NULL);
            pos[n_pos++] = a;
            continue;
        }
        char name[32];
        const char *eq = strchr(a, '=');
        size_t k = eq ? (size_t)(eq - a) : strlen(a);
        if (k >= sizeof name)
            die2(": unknown option", a);
        memcpy(name, a, k);
        name[k] = 0;
        v = eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL);
        if (strcmp(name, "--clients") == 0)
            clients = arg_long(name, v, 1, 1024);
        else if (strcmp(name, "--count") == 0)
            count = arg_long(name, v, 1, 1000000);
        else if (strcmp(name, "--warmup") == 0)
            warmup = arg_long(name, v, 0, 1000000);
        else if (strcmp(name, "--procs") == 0)
            arg_long(name, v, 1, 1024); /* one process has no interpreter lock to spread */
        else if (strcmp(name, "--expect") == 0 && v)
            expect = v;
        else if (strcmp(name, "--seconds") == 0 && v) {
            char *end;
            seconds = strtod(v, &end);
            if (end == v || *end || !(seconds > 0 && seconds <= 600))
                die2("--seconds takes (0, 600]", NULL);
        } else
            die2(": unknown option or missing value", a);
    }
    if (n_pos != 3)
        die2("usage: serve_load URL BODY QUERY [--clients N] [--count R] [--seconds S] "
             "[--expect FILE] [--warmup W] [--procs P]",
             NULL);
    signal(SIGPIPE, SIG_IGN);

    static job j;
    char host[128];
    target_parse(pos[0], &j.to, host, sizeof host);
    j.body = file_read(pos[1], &j.body_len);
    if (expect) {
        j.want = file_read(expect, &j.want_len);
        j.check = 1;
    }
    size_t cap = strlen(pos[2]) + strlen(host) + 128;
    char *head = malloc(cap);
    if (!head)
        die2("out of memory", NULL);
    j.head_len = (size_t)snprintf(head, cap,
                                  "POST /v1/filter?%s HTTP/1.1\r\nHost: %s\r\n"
                                  "Content-Length: %zu\r\n\r\n",
                                  pos[2], host, j.body_len);
    j.head = head;

    conn c = {.fd = -1, .in = malloc(HEAD_MAX)};
    if (!c.in)
        die2("out of memory", NULL);
    int warm_bad = 0;
    for (long i = 0; i < warmup; i++) {
        double dt;
        warm_bad += !request_one(&j, &c, NULL, &dt);
    }
    if (warm_bad)
        fprintf(stderr, "serve_load: %d of %ld warm-up requests failed\n", warm_bad, warmup);
    conn_close(&c);
    free(c.in);
    free(c.body);

    worker *w = calloc((size_t)clients, sizeof *w);
    if (!w)
        die2("out of memory", NULL);
    atomic_init(&j.left, count);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 256 * 1024);
    double t0 = now_s();
    j.deadline = t0 + seconds;
    long started = 0;
    for (long i = 0; i < clients; i++) {
        w[i].j = &j;
        if (pthread_create(&w[i].tid, &attr, client, &w[i]) != 0)
            break;
        started++;
    }
    if (started == 0)
        die2("cannot start a client thread", NULL);
    for (long i = 0; i < started; i++)
        pthread_join(w[i].tid, NULL);
    double secs = now_s() - t0;

    size_t n = 0;
    long errors = 0;
    double stage[N_STAGES] = {0};
    char lanes[LANES_MAX][LANE_LEN];
    int n_lanes = 0;
    for (long i = 0; i < started; i++)
        n += w[i].t.n;
    double *lat = malloc((n ? n : 1) * sizeof *lat);
    if (!lat)
        die2("out of memory", NULL);
    n = 0;
    for (long i = 0; i < started; i++) {
        tally *t = &w[i].t;
        if (t->n)
            memcpy(lat + n, t->lat, t->n * sizeof *lat);
        n += t->n;
        errors += t->errors;
        for (int s = 0; s < N_STAGES; s++)
            stage[s] += t->stage[s];
        for (int l = 0; l < t->n_lanes; l++) {
            int k = 0;
            while (k < n_lanes && strcmp(lanes[k], t->lanes[l]) != 0)
                k++;
            if (k == n_lanes && k < LANES_MAX)
                memcpy(lanes[n_lanes++], t->lanes[l], LANE_LEN);
        }
        free(t->lat);
    }
    qsort(lat, n, sizeof *lat, cmp_double);
    qsort(lanes, (size_t)n_lanes, LANE_LEN, cmp_lane);
    double pct[2] = {NAN, NAN}, ps[2] = {0.50, 0.99};
    for (int i = 0; i < 2 && n; i++) {
        size_t k = (size_t)(ps[i] * (double)n);
        pct[i] = lat[k < n - 1 ? k : n - 1] * 1e3;
    }
    printf("clients=%ld requests=%zu errors=%ld seconds=%.2f rps=%.1f p50_ms=%.2f p99_ms=%.2f",
           clients, n, errors, secs, (double)n / secs, pct[0], pct[1]);
    for (int s = 0; s < N_STAGES; s++)
        printf(" %s_ms=%.2f", stage_names[s], stage[s] / (double)(n ? n : 1));
    printf(" lanes=");
    for (int l = 0; l < n_lanes; l++)
        printf("%s%s", l ? "+" : "", lanes[l]);
    printf("%s\n", n_lanes ? "" : "-");
    free(lat);
    free(w);
    free(head);
    free((void *)j.body);
    free((void *)j.want);
    return errors ? 1 : 0;
}
