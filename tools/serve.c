/*
 * serve.c - imgconv serve: a resident HTTP service over libevent's evhttp
 * that keeps the backend warm (docs/serve.md).
 *
 *   POST /v1/filter?kernel=...&...  body: an image  ->  the filtered image
 *   GET  /v1/health | /v1/kernels | /v1/metrics
 *
 * This file is the event loop: it binds (loopback unless --allow-remote, or
 * a unix socket), checks the token, parses the query with the CLI's own
 * option table (cli_parse_request), queues the job for the workers
 * (serve_work.c) and sends their replies. SIGTERM and SIGINT stop the
 * accepting; the requests accepted are answered, then the process exits 0.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <event2/util.h>

#include "serve.h"
#include "serve_int.h"

static void reply_json(srv *s, struct evhttp_request *req, int http, const char *json, double t0)
{
    struct evbuffer *b = evbuffer_new();
    struct evkeyvalq *h = evhttp_request_get_output_headers(req);
    evhttp_add_header(h, "Content-Type", "application/json");
    if (http == 429 || http == 503)
        evhttp_add_header(h, "Retry-After", "1");
    if (http == 401)
        evhttp_add_header(h, "WWW-Authenticate", "Bearer");
    if (b)
        evbuffer_add_printf(b, "%s\n", json);
    evhttp_send_reply(req, http, NULL, b);
    if (b)
        evbuffer_free(b);
    srv_metrics_record(s, http, (cli_now_ms() - t0) / 1e3);
}

static void reply_error(srv *s, struct evhttp_request *req, int http, const char *error,
                        const char *msg, double t0)
{
    char q[1200], json[1400];
    srv_json_quote(q, sizeof q, msg);
    snprintf(json, sizeof json, "{\"error\": \"%s\", \"message\": %s}", error, q);
    reply_json(s, req, http, json, t0);
}

/* Compares the Authorization header with "Bearer TOKEN" in time that does not
 * depend on where they differ. */
static int authorized(const srv *s, struct evhttp_request *req)
{
    if (s->token_len == 0)
        return 1;
    const char *a = evhttp_find_header(evhttp_request_get_input_headers(req), "Authorization");
    if (!a || strncmp(a, "Bearer ", 7) != 0)
        return 0;
    a += 7;
    const size_t n = strlen(a);
    unsigned char diff = (unsigned char)(n != s->token_len);
    for (size_t i = 0; i < s->token_len; i++)
        diff |= (unsigned char)(s->token[i] ^ (i < n ? a[i] : 0));
    return diff == 0;
}

static void live_add(srv *s, srv_job *j)
{
    j->live_prev = NULL;
    j->live_next = s->live;
    if (s->live)
        s->live->live_prev = j;
    s->live = j;
}

static void live_remove(srv *s, srv_job *j)
{
    if (j->live_prev)
        j->live_prev->live_next = j->live_next;
    else if (s->live == j)
        s->live = j->live_next;
    if (j->live_next)
        j->live_next->live_prev = j->live_prev;
    j->live_prev = j->live_next = NULL;
}

static void maybe_exit(srv *s)
{
    if (s->stopping && s->pending == 0)
        event_base_loopexit(s->evb, NULL);
}

/* The reply of a job was written in full: the job is done with. */
static void on_reply_complete(struct evhttp_request *req, void *arg)
{
    srv_job *j = arg;
    srv *s = j->srv;
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
    srv_job_free(j);
    s->pending--;
    maybe_exit(s);
}

/* The client's connection closed with a job of it pending. */
static void on_conn_close(struct evhttp_connection *c, void *arg)
{
    (void)c;
    srv_job *j = arg;
    srv *s = j->srv;
    if (!j->replied) { /* with the worker: forgotten when it comes back */
        j->req = NULL;
        live_remove(s, j);
        return;
    }
    srv_job_free(j);
    s->pending--;
    maybe_exit(s);
}

/* A reply's bytes, once no evbuffer holds them. */
static void free_reply(const void *data, size_t len, void *arg)
{
    (void)len;
    (void)arg;
    free((void *)data);
}

/* The loop side of a finished job: its reply. */
static void on_notify(evutil_socket_t fd, short what, void *arg)
{
    (void)what;
    srv *s = arg;
    char drain[256];
    while (read(fd, drain, sizeof drain) > 0) {
    }
    srv_job *n;
    for (srv_job *j = srv_take_done(s); j; j = n) {
        n = j->next;
        live_remove(s, j);
        if (!j->req) { /* the client went away, or was answered at the deadline */
            srv_metrics_record(s, 499, (cli_now_ms() - j->t0) / 1e3);
            srv_job_free(j);
            s->pending--;
            continue;
        }
        j->replied = 1;
        struct evhttp_request *req = j->req;
        if (j->http != 200) {
            evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
            reply_error(s, req, j->http, j->error, j->msg, j->t0);
            srv_job_free(j);
            s->pending--;
            continue;
        }
        struct evbuffer *b = evbuffer_new();
        /* the reply's bytes go to evbuffers that free them once written (or
         * the connection is freed): they move down to the socket uncopied */
        if (!b || evbuffer_add_reference(b, j->out, j->out_size, free_reply, NULL) != 0) {
            if (b)
                evbuffer_free(b);
            evhttp_connection_set_closecb(evhttp_request_get_connection(req), NULL, NULL);
            reply_error(s, req, 503, "unavailable", "out of memory", j->t0);
            srv_job_free(j);
            s->pending--;
            continue;
        }
        j->out = NULL;
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        evhttp_add_header(h, "Content-Type", j->content_type);
        char timing[200]; /* where the time went, and which lane, for clients and benchmarks */
        snprintf(timing, sizeof timing,
                 "queue;dur=%.2f, decode;dur=%.2f, filter;dur=%.2f, encode;dur=%.2f, "
                 "lane;desc=%s",
                 j->queue_ms, j->ms[0], j->ms[1], j->ms[2],
                 j->lane == SRV_LANE_GPU ? "gpu" : "cpu");
        evhttp_add_header(h, "Server-Timing", timing);
        /* the job, and so j->out, lives until the reply is written */
        evhttp_request_set_on_complete_cb(req, on_reply_complete, j);
        srv_metrics_record(s, 200, (cli_now_ms() - j->t0) / 1e3);
        evhttp_send_reply(req, 200, "OK", b);
        evbuffer_free(b);
    }
    maybe_exit(s);
}

static void handle_filter(srv *s, struct evhttp_request *req, const char *query, double t0)
{
    if (s->stopping) {
        reply_error(s, req, 503, "unavailable", "the server is stopping", t0);
        return;
    }
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    const size_t size = evbuffer_get_length(in);
    if (size > s->base.max_body) {
        reply_error(s, req, 413, "too_large", "the body is over --max-body", t0);
        return;
    }
    if (size == 0) {
        reply_error(s, req, 400, "bad_request", "empty body: send the image as the body", t0);
        return;
    }
    srv_job *j = calloc(1, sizeof *j);
    if (!j || !(j->query = strdup(query ? query : "")) || !(j->in = evbuffer_new())) {
        srv_job_free(j);
        {
            reply_error(s, req, 503, "unavailable", "out of memory", t0);
            return;
        }
    }
    cli_err e;
    memset(&e, 0, sizeof e);
    if (cli_parse_request(j->query, &s->base, &j->o, &e) != CLI_EXIT_OK) {
        srv_job_free(j);
        {
            reply_error(s, req, 400, "bad_request", e.msg, t0);
            return;
        }
    }
    j->o.input = "request body";
    j->o.quiet = 1; /* no warnings on the server's stderr */
    /* the request's chains, moved: one contiguous chain when the guard read
     * the body into one (serve_guard.c), so taking it copies nothing */
    if (evbuffer_add_buffer(j->in, in) != 0 || !(j->body = evbuffer_pullup(j->in, -1))) {
        srv_job_free(j);
        reply_error(s, req, 503, "unavailable", "out of memory", t0);
        return;
    }
    j->size = size;
    j->srv = s;
    j->req = req;
    j->t0 = t0;
    if (!srv_enqueue(s, j)) {
        srv_job_free(j);
        return reply_error(s, req, 429, "queue_full",
                           "every worker is busy and the queue is full; retry later", t0);
    }
    s->pending++;
    live_add(s, j);
    evhttp_connection_set_closecb(evhttp_request_get_connection(req), on_conn_close, j);
}

static void handle_kernels(srv *s, struct evhttp_request *req, double t0)
{
    struct evbuffer *b = evbuffer_new();
    if (!b) {
        reply_error(s, req, 503, "unavailable", "out of memory", t0);
        return;
    }
    int n = 0;
    const ic_named_kernel_info *t = ic_kernel_list(&n);
    evbuffer_add_printf(b, "{\"kernels\": [");
    for (int i = 0; t && i < n; i++) {
        char name[128], sum[512], args[512];
        srv_json_quote(name, sizeof name, t[i].name);
        srv_json_quote(sum, sizeof sum, t[i].summary ? t[i].summary : "");
        srv_json_quote(args, sizeof args, t[i].args ? t[i].args : "");
        evbuffer_add_printf(b, "%s{\"name\": %s, \"summary\": %s, \"args\": %s}", i ? ", " : "",
                            name, sum, args);
    }
    evbuffer_add_printf(b, "]}\n");
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "application/json");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    srv_metrics_record(s, 200, (cli_now_ms() - t0) / 1e3);
}

static void handle_metrics(srv *s, struct evhttp_request *req, double t0)
{
    char *text = srv_metrics_text(s);
    struct evbuffer *b = evbuffer_new();
    if (!text || !b) {
        free(text);
        if (b)
            evbuffer_free(b);
        {
            reply_error(s, req, 503, "unavailable", "out of memory", t0);
            return;
        }
    }
    evbuffer_add(b, text, strlen(text));
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type",
                      "text/plain; version=0.0.4");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
    srv_metrics_record(s, 200, (cli_now_ms() - t0) / 1e3);
}

static void on_request(struct evhttp_request *req, void *arg)
{
    srv *s = arg;
    const double t0 = cli_now_ms();
    const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
    const char *path = u ? evhttp_uri_get_path(u) : NULL;
    const char *query = u ? evhttp_uri_get_query(u) : NULL;
    const enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!path) {
        reply_error(s, req, 400, "bad_request", "unreadable request URI", t0);
        return;
    }
    if (strcmp(path, "/v1/health") == 0 && cmd == EVHTTP_REQ_GET) {
        char json[256];
        snprintf(json, sizeof json, "{\"status\": \"%s\", \"backend\": \"%s\", \"workers\": %d}",
                 s->stopping ? "stopping" : "ready", s->base.backend, s->nworkers);
        {
            reply_json(s, req, s->stopping ? 503 : 200, json, t0);
            return;
        }
    }
    if (!authorized(s, req)) {
        reply_error(s, req, 401, "unauthorized", "this server needs 'Authorization: Bearer TOKEN'",
                    t0);
        return;
    }
    const int known = strcmp(path, "/v1/filter") == 0 || strcmp(path, "/v1/kernels") == 0 ||
                      strcmp(path, "/v1/metrics") == 0;
    if (!known) {
        reply_error(s, req, 404, "not_found",
                    "no such endpoint (POST /v1/filter, GET /v1/health, /v1/kernels, "
                    "/v1/metrics)",
                    t0);
        return;
    }
    const int want_post = strcmp(path, "/v1/filter") == 0;
    if (cmd != (want_post ? EVHTTP_REQ_POST : EVHTTP_REQ_GET)) {
        reply_error(s, req, 405, "method_not_allowed", want_post ? "use POST" : "use GET", t0);
        return;
    }
    if (want_post) {
        handle_filter(s, req, query, t0);
        return;
    }
    if (strcmp(path, "/v1/kernels") == 0) {
        handle_kernels(s, req, t0);
        return;
    }
    {
        handle_metrics(s, req, t0);
        return;
    }
}

static void on_deadline(evutil_socket_t fd, short what, void *arg)
{
    (void)fd;
    (void)what;
    srv *s = arg;
    /* Every request still waiting gets an answer: 503, retry elsewhere. */
    int n = 0;
    for (srv_job *j; (j = s->live); n++) {
        live_remove(s, j);
        evhttp_connection_set_closecb(evhttp_request_get_connection(j->req), NULL, NULL);
        reply_error(s, j->req, 503, "unavailable",
                    "the server stopped (--timeout) before this request was done", j->t0);
        j->req = NULL; /* the worker's result, if any, is dropped */
    }
    fprintf(stderr, "imgconv: serve: %d request(s) answered 503 at the stop deadline\n", n);
    const struct timeval flush = {1, 0}; /* for those replies to go out */
    event_base_loopexit(s->evb, &flush);
}

/* SIGTERM, SIGINT: stop accepting, answer what was accepted, exit. */
static void on_signal(evutil_socket_t sig, short what, void *arg)
{
    (void)what;
    srv *s = arg;
    if (s->stopping)
        return;
    s->stopping = 1;
    if (!s->base.quiet)
        fprintf(stderr, "imgconv: serve: signal %d: stopping after %d pending request(s)\n",
                (int)sig, s->pending);
    if (s->bound) {
        evhttp_del_accept_socket(s->http, s->bound);
        s->bound = NULL;
    }
    const struct timeval tv = {s->base.timeout, 0};
    s->ev_deadline = evtimer_new(s->evb, on_deadline, s);
    if (s->ev_deadline)
        evtimer_add(s->ev_deadline, &tv);
    maybe_exit(s);
}

/* The token: the first line of --token-file, at least 16 bytes. */
static int read_token(srv *s, cli_err *e)
{
    const char *path = s->base.token_file;
    if (!path)
        return CLI_EXIT_OK;
    FILE *f = fopen(path, "r");
    if (!f)
        return cli_fail(e, CLI_EXIT_INPUT, path, "cannot open: %s", strerror(errno));
    char line[sizeof s->token];
    const int got = fgets(line, sizeof line, f) != NULL;
    fclose(f);
    line[got ? strcspn(line, "\r\n") : 0] = '\0';
    if (strlen(line) < 16)
        return cli_fail(e, CLI_EXIT_INPUT, path, "the token (first line) is under 16 bytes");
    memcpy(s->token, line, strlen(line) + 1);
    s->token_len = strlen(line);
    return CLI_EXIT_OK;
}

/* HOST:PORT or [V6]:PORT into host and port. */
static int split_listen(const char *text, char *host, size_t hlen, int *port)
{
    const char *colon = strrchr(text, ':');
    if (!colon || colon == text || strlen(text) >= hlen)
        return 0;
    size_t n = (size_t)(colon - text);
    const char *h = text;
    if (h[0] == '[' && n >= 2 && h[n - 1] == ']') {
        h++;
        n -= 2;
    }
    memcpy(host, h, n);
    host[n] = '\0';
    char *end = NULL;
    const long p = strtol(colon + 1, &end, 10);
    if (!colon[1] || *end || p < 0 || p > 65535)
        return 0;
    *port = (int)p;
    return 1;
}

static int is_loopback(const char *host)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (strcmp(host, "localhost") == 0)
        return 1;
    if (inet_pton(AF_INET, host, &a4) == 1)
        return (ntohl(a4.s_addr) >> 24) == 127;
    if (inet_pton(AF_INET6, host, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6);
    return 0;
}

static int bind_unix(srv *s, cli_err *e)
{
    const char *path = s->base.socket_path;
    struct sockaddr_un sa;
    memset(&sa, 0, sizeof sa);
    sa.sun_family = AF_UNIX;
    if (strlen(path) >= sizeof sa.sun_path)
        return cli_fail(e, CLI_EXIT_USAGE, path, "socket path too long");
    memcpy(sa.sun_path, path, strlen(path) + 1);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return cli_fail(e, CLI_EXIT_OUTPUT, path, "exists and is not a socket");
        unlink(path); /* a socket left by a server that died */
    }
    const int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 || listen(fd, 256) != 0 ||
        evutil_make_socket_nonblocking(fd) != 0) {
        const int err = errno;
        if (fd >= 0)
            close(fd);
        return cli_fail(e, CLI_EXIT_OUTPUT, path, "cannot listen: %s", strerror(err));
    }
    s->bound = evhttp_accept_socket_with_handle(s->http, fd);
    if (!s->bound) {
        close(fd);
        return cli_fail(e, CLI_EXIT_OUTPUT, path, "cannot listen on the socket");
    }
    printf("imgconv: serving on unix:%s (backend %s, %d workers%s%s)\n", path, s->base.backend,
           s->nworkers, s->lane ? ", GPU lane " : "", s->lane ? srv_lane_engine(s) : "");
    return CLI_EXIT_OK;
}

static int bind_tcp(srv *s, cli_err *e)
{
    char host[256];
    int port = 0;
    if (!split_listen(s->base.listen, host, sizeof host, &port))
        return cli_fail(e, CLI_EXIT_USAGE, NULL, "--listen '%s': expected HOST:PORT",
                        s->base.listen);
    if (!is_loopback(host) && !s->base.allow_remote)
        return cli_fail(e, CLI_EXIT_USAGE, NULL,
                        "--listen '%s': not a loopback address; add --allow-remote to serve "
                        "other machines (and consider --token-file)",
                        s->base.listen);
    s->bound = evhttp_bind_socket_with_handle(s->http, host, (ev_uint16_t)port);
    if (!s->bound)
        return cli_fail(e, CLI_EXIT_OUTPUT, NULL, "--listen '%s': cannot listen: %s",
                        s->base.listen, strerror(errno));
    struct sockaddr_storage ss;
    socklen_t len = sizeof ss;
    const int fd = evhttp_bound_socket_get_fd(s->bound);
    if (getsockname(fd, (struct sockaddr *)&ss, &len) == 0)
        port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                              : ((struct sockaddr_in *)&ss)->sin_port);
    /* one line with the port, which --listen HOST:0 leaves to the system */
    printf("imgconv: serving on http://%s%s%s:%d (backend %s, %d workers%s%s)\n",
           strchr(host, ':') ? "[" : "", host, strchr(host, ':') ? "]" : "", port, s->base.backend,
           s->nworkers, s->lane ? ", GPU lane " : "", s->lane ? srv_lane_engine(s) : "");
    return CLI_EXIT_OK;
}

static int serve_setup(srv *s, cli_err *e)
{
    int code = read_token(s, e);
    if (code != CLI_EXIT_OK)
        return code;
    if ((code = srv_workers_start(s, e)) != CLI_EXIT_OK)
        return code;
    s->evb = event_base_new();
    s->http = s->evb ? evhttp_new(s->evb) : NULL;
    if (!s->http || pipe(s->pipe_fd) != 0)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot start the event loop");
    fcntl(s->pipe_fd[0], F_SETFL, O_NONBLOCK);
    fcntl(s->pipe_fd[1], F_SETFL, O_NONBLOCK);
    s->ev_notify = event_new(s->evb, s->pipe_fd[0], EV_READ | EV_PERSIST, on_notify, s);
    s->ev_term = evsignal_new(s->evb, SIGTERM, on_signal, s);
    s->ev_int = evsignal_new(s->evb, SIGINT, on_signal, s);
    if (!s->ev_notify || !s->ev_term || !s->ev_int || event_add(s->ev_notify, NULL) != 0 ||
        event_add(s->ev_term, NULL) != 0 || event_add(s->ev_int, NULL) != 0)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "cannot start the event loop");
    signal(SIGPIPE, SIG_IGN); /* a client gone mid-reply is an error on its socket */
    evhttp_set_max_body_size(s->http, (ev_ssize_t)s->base.max_body);
    evhttp_set_max_headers_size(s->http, 16384);
    evhttp_set_timeout(s->http, s->base.timeout);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD);
    evhttp_set_bevcb(s->http, srv_guard_new, s);
    evhttp_set_gencb(s->http, on_request, s);
    code = s->base.socket_path ? bind_unix(s, e) : bind_tcp(s, e);
    fflush(stdout);
    return code;
}

static void serve_teardown(srv *s)
{
    srv_workers_stop(s);
    if (s->http)
        evhttp_free(s->http);
    if (s->ev_notify)
        event_free(s->ev_notify);
    if (s->ev_term)
        event_free(s->ev_term);
    if (s->ev_int)
        event_free(s->ev_int);
    if (s->ev_deadline)
        event_free(s->ev_deadline);
    if (s->evb)
        event_base_free(s->evb);
    if (s->pipe_fd[0] > 0) {
        close(s->pipe_fd[0]);
        close(s->pipe_fd[1]);
    }
    if (s->base.socket_path)
        unlink(s->base.socket_path);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv);
    pthread_cond_destroy(&s->lane_cv);
}

int cli_run_serve(const cli_options *o, cli_err *e)
{
    srv *s = calloc(1, sizeof *s);
    if (!s)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    s->base = *o;
    s->base.ctx.tuning = &s->base.tuning;
    /* the backend by its name, which requests may repeat */
    s->base.backend = strcmp(o->backend, "auto") == 0 ? ic_backend_auto() : o->backend;
    if (!s->base.backend)
        s->base.backend = "cpu";
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    pthread_cond_init(&s->lane_cv, NULL);
    int code = serve_setup(s, e);
    if (code == CLI_EXIT_OK && event_base_dispatch(s->evb) < 0)
        code = cli_fail(e, CLI_EXIT_INTERNAL, NULL, "the event loop failed");
    serve_teardown(s);
    free(s);
    return code;
}
