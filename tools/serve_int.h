/*
 * serve_int.h - what the files of imgconv serve share: the server, a job
 * (one POST /v1/filter from its query to its reply) and the metrics.
 *
 * Threads: the event loop thread (serve.c) does all network I/O and owns
 * every evhttp object; the CPU workers (serve_work.c) decode, filter and
 * encode, each on a context of its own (a context is not safe for two
 * threads); on a CUDA backend the GPU lane (serve_lane.c) takes the large
 * JPEGs in batches. Both hand finished jobs back through a pipe the loop
 * watches. The queues, the finished list, the busy time and the lanes'
 * counts are under srv.mu; the rest is the loop's.
 */
#ifndef IC_TOOLS_SERVE_INT_H
#define IC_TOOLS_SERVE_INT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "cli.h"
#include "cli_args.h"

struct evhttp_request;
struct event_base;
struct evhttp;
struct evhttp_bound_socket;
struct event;
struct bufferevent;
struct evbuffer;

typedef struct srv_job {
    struct srv_job *next;
    struct srv_job *live_prev, *live_next; /* the loop's list of unanswered jobs */
    struct srv *srv;
    struct evhttp_request *req; /* NULL once the client has gone */
    int replied;                /* the reply is being written */
    cli_options o;              /* points into query */
    char *query;
    uint8_t *body;       /* the request's body, contiguous inside in */
    struct evbuffer *in; /* the request's chains, which own body */
    size_t size;
    double t0;         /* when the request was complete */
    double queue_ms;   /* waiting for a worker */
    double ms[3];      /* decode, filter, encode */
    int lane;          /* SRV_LANE_CPU or SRV_LANE_GPU: who serves it */
    int width, height; /* from the header, when the router probed it */
    /* the worker's result */
    int http;
    uint8_t *out;
    size_t out_size;
    const char *content_type;
    const char *error; /* the JSON "error" word */
    char msg[512];
} srv_job;

enum { SRV_LANE_CPU, SRV_LANE_GPU, SRV_NLANES };

/* Batch sizes of the GPU lane's histogram: 1, 2, 4, ... 32. */
#define SRV_NBATCH 6

/* Latency buckets of the histogram, in seconds. */
#define SRV_NBUCKETS 14
#define SRV_NCODES 12

typedef struct srv_metrics {
    uint64_t requests[SRV_NCODES]; /* by status, srv_codes order */
    uint64_t buckets[SRV_NBUCKETS];
    uint64_t count;
    double sum_s;
} srv_metrics;

typedef struct srv {
    cli_options base; /* the server's options; base.backend is the backend's name */
    struct event_base *evb;
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct event *ev_term, *ev_int, *ev_notify, *ev_deadline;
    int pipe_fd[2];
    char token[512];
    size_t token_len;
    int stopping;
    int pending;            /* jobs accepted and not yet answered in full */
    srv_job *live;          /* jobs whose reply is not sent yet (the loop's) */
    int conns;              /* connections open, refused ones included (the loop's) */
    uint64_t conns_refused; /* answered 503 busy over --max-connections */
    srv_metrics m;

    pthread_mutex_t mu;
    pthread_cond_t cv;
    srv_job *q_head, *q_tail, *done;
    srv_job *g_head, *g_tail; /* the GPU lane's queue */
    int queued, busy, quit;   /* queued: both queues */
    int g_queued;
    uint64_t queued_bytes; /* bodies in the queue, within base.max_memory */
    double busy_s;         /* workers' time on jobs */
    int nworkers;
    pthread_t *th;
    ic_context **ctx;
    const char *worker_backend; /* the CPU workers' backend: "cpu" beside a GPU lane */
    ic_context *wide;           /* every core's pool, for one request when the server is idle */
    int wide_busy, ncores;
    struct srv_lane *lane;  /* NULL: no GPU lane */
    pthread_cond_t lane_cv; /* the lane's queue and slots changed */
    uint64_t lane_requests[SRV_NLANES];
    uint64_t batches[SRV_NBATCH]; /* the lane's batches, by size (le 1, 2, 4, ...) */
    uint64_t nbatches, batch_images;
} srv;

extern const int srv_codes[SRV_NCODES];

/* serve_work.c: the workers, their contexts (warmed before the server
 * listens) and the queue. */
int srv_workers_start(srv *s, cli_err *e);
void srv_workers_stop(srv *s);
/* Queues a job; 0 when the queue is full, in requests (--queue) or in body
 * bytes (--max-memory): the caller answers 429. */
int srv_enqueue(srv *s, srv_job *j);
/* Hands a finished job to the loop (any thread): busy_ms of work on it. */
void srv_job_done(srv *s, srv_job *j, double busy_ms);
/* Runs a job on a CPU worker's context, with threads for its decode and
 * encode; keep: the worker's output memory (cli_filter_memory). */
void srv_job_run(srv_job *j, ic_context *ctx, int threads, cli_keep *keep);
/* Queues a job the GPU lane gave back on the CPU workers' queue: counted
 * already, so never refused. */
void srv_requeue_cpu(srv *s, srv_job *j);
/* Takes the finished jobs (loop thread). */
srv_job *srv_take_done(srv *s);
void srv_job_free(srv_job *j);

/* serve_lane.c: the GPU lane, on a CUDA backend. srv_lane_start creates
 * its context and codec and warms them (a hardware decode, a filter, an
 * encode); it answers CLI_EXIT_OK with s->lane NULL when the backend is not
 * a CUDA one, nvJPEG is not there, or --codec cpu was given. */
int srv_lane_start(srv *s, cli_err *e);
void srv_lane_stop(srv *s);
/* The lane's decoder ("nvjpeg-hardware", ...), NULL without a lane. */
const char *srv_lane_engine(const srv *s);
/* The lane's pipes (0 without a lane), and in batches[i < most] the batches
 * pipe i took; under s->mu. */
int srv_lane_pipes(const srv *s, uint64_t *batches, int most);
/* SRV_LANE_GPU when the lane takes the job (a JPEG to a JPEG, three
 * channels, at least --gpu-min-pixels); loop thread, before queueing. */
int srv_lane_route(const srv *s, srv_job *j);
/* The job's status after a failed step: the CLI's exit code and reason. */
void srv_job_failed(srv_job *j, int code, ic_status why, const cli_err *e);

/* serve_guard.c: evhttp_set_bevcb's callback (arg: the srv): each
 * connection's bufferevent, which answers a body over --max-body with the
 * JSON 413 before evhttp reads it, and a connection over --max-connections
 * with the JSON 503 before it reads anything. */
struct bufferevent *srv_guard_new(struct event_base *base, void *arg);

/* serve_metrics.c */
void srv_metrics_record(srv *s, int http, double seconds);
/* The Prometheus text of /v1/metrics, malloc'd. */
char *srv_metrics_text(srv *s);
/* JSON string literal of text (quotes included) into buf. */
void srv_json_quote(char *buf, size_t len, const char *text);

#endif /* IC_TOOLS_SERVE_INT_H */
