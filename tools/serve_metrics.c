/*
 * serve_metrics.c - what GET /v1/metrics reports, in Prometheus' text
 * format: requests by status, a latency histogram, the queue's depth, the
 * images being filtered, the workers' busy time per backend, the requests
 * each lane served and the GPU lane's batch sizes.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "serve_int.h"

const int srv_codes[SRV_NCODES] = {200, 400, 401, 404, 405, 413, 415, 422, 429, 500, 503, 0};
static const double bucket_le[SRV_NBUCKETS] = {0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1,
                                               0.2,   0.5,   1.0,   2.0,  5.0,  10.0, 30.0};

void srv_metrics_record(srv *s, int http, double seconds)
{
    int i = 0;
    while (i + 1 < SRV_NCODES && srv_codes[i] != http)
        i++;
    s->m.requests[i]++; /* the last slot counts any other status */
    for (int b = 0; b < SRV_NBUCKETS; b++)
        if (seconds <= bucket_le[b])
            s->m.buckets[b]++;
    s->m.count++;
    s->m.sum_s += seconds;
}

void srv_json_quote(char *buf, size_t len, const char *text)
{
    size_t n = 0;
    if (len < 3)
        return;
    buf[n++] = '"';
    for (const unsigned char *p = (const unsigned char *)text; *p && n + 8 < len; p++) {
        if (*p == '"' || *p == '\\') {
            buf[n++] = '\\';
            buf[n++] = (char)*p;
        } else if (*p < 0x20) {
            n += (size_t)snprintf(buf + n, len - n, "\\u%04x", *p);
        } else {
            buf[n++] = (char)*p;
        }
    }
    buf[n++] = '"';
    buf[n] = '\0';
}

/* Appends to a growing text; on failure the text is left as it was. */
static void put(char **t, size_t *n, size_t *cap, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void put(char **t, size_t *n, size_t *cap, const char *fmt, ...)
{
    for (;;) {
        va_list ap;
        va_start(ap, fmt);
        const int w = *t ? vsnprintf(*t + *n, *cap - *n, fmt, ap) : -1;
        va_end(ap);
        if (w >= 0 && (size_t)w < *cap - *n) {
            *n += (size_t)w;
            return;
        }
        const size_t ncap = *cap * 2 + 4096;
        char *q = realloc(*t, ncap);
        if (!q)
            return;
        *t = q;
        *cap = ncap;
    }
}

char *srv_metrics_text(srv *s)
{
    char *t = NULL;
    size_t n = 0, cap = 0;
    put(&t, &n, &cap,
        "# HELP imgconv_requests_total HTTP requests answered, by status.\n"
        "# TYPE imgconv_requests_total counter\n");
    for (int i = 0; i < SRV_NCODES; i++) {
        char code[16];
        snprintf(code, sizeof code, "%d", srv_codes[i]);
        put(&t, &n, &cap, "imgconv_requests_total{code=\"%s\"} %llu\n",
            srv_codes[i] ? code : "other", (unsigned long long)s->m.requests[i]);
    }
    put(&t, &n, &cap,
        "# HELP imgconv_errors_total Requests answered with an error status.\n"
        "# TYPE imgconv_errors_total counter\n");
    for (int i = 1; i < SRV_NCODES; i++) {
        char code[16];
        snprintf(code, sizeof code, "%d", srv_codes[i]);
        put(&t, &n, &cap, "imgconv_errors_total{code=\"%s\"} %llu\n", srv_codes[i] ? code : "other",
            (unsigned long long)s->m.requests[i]);
    }
    put(&t, &n, &cap,
        "# HELP imgconv_request_duration_seconds From the request read to the reply queued.\n"
        "# TYPE imgconv_request_duration_seconds histogram\n");
    for (int b = 0; b < SRV_NBUCKETS; b++)
        put(&t, &n, &cap, "imgconv_request_duration_seconds_bucket{le=\"%g\"} %llu\n", bucket_le[b],
            (unsigned long long)s->m.buckets[b]);
    put(&t, &n, &cap,
        "imgconv_request_duration_seconds_bucket{le=\"+Inf\"} %llu\n"
        "imgconv_request_duration_seconds_sum %.6f\n"
        "imgconv_request_duration_seconds_count %llu\n",
        (unsigned long long)s->m.count, s->m.sum_s, (unsigned long long)s->m.count);
    put(&t, &n, &cap,
        "# HELP imgconv_connections Connections open, those refused and not yet closed included.\n"
        "# TYPE imgconv_connections gauge\n"
        "imgconv_connections %d\n"
        "# HELP imgconv_connections_refused_total Connections answered 503 busy over "
        "--max-connections.\n"
        "# TYPE imgconv_connections_refused_total counter\n"
        "imgconv_connections_refused_total %llu\n",
        s->conns, (unsigned long long)s->conns_refused);
    pthread_mutex_lock(&s->mu);
    const int queued = s->queued, busy = s->busy;
    const double busy_s = s->busy_s;
    uint64_t lanes[SRV_NLANES], batches[SRV_NBATCH];
    memcpy(lanes, s->lane_requests, sizeof lanes);
    memcpy(batches, s->batches, sizeof batches);
    const uint64_t nbatches = s->nbatches, batch_images = s->batch_images;
    uint64_t pipe_batches[8] = {0};
    const int npipes = srv_lane_pipes(s, pipe_batches, 8);
    pthread_mutex_unlock(&s->mu);
    put(&t, &n, &cap,
        "# HELP imgconv_queue_depth Requests waiting for a worker.\n"
        "# TYPE imgconv_queue_depth gauge\n"
        "imgconv_queue_depth %d\n"
        "# HELP imgconv_images_in_flight Images being decoded, filtered or encoded.\n"
        "# TYPE imgconv_images_in_flight gauge\n"
        "imgconv_images_in_flight %d\n"
        "# HELP imgconv_workers Worker threads, one context each.\n"
        "# TYPE imgconv_workers gauge\n"
        "imgconv_workers{backend=\"%s\"} %d\n"
        "# HELP imgconv_backend_busy_seconds_total Workers' time on jobs, per backend.\n"
        "# TYPE imgconv_backend_busy_seconds_total counter\n"
        "imgconv_backend_busy_seconds_total{backend=\"%s\"} %.6f\n",
        queued, busy, s->worker_backend ? s->worker_backend : s->base.backend, s->nworkers,
        s->base.backend, busy_s);
    put(&t, &n, &cap,
        "# HELP imgconv_lane_requests_total Requests served, by lane (CPU workers, GPU lane).\n"
        "# TYPE imgconv_lane_requests_total counter\n"
        "imgconv_lane_requests_total{lane=\"cpu\"} %llu\n"
        "imgconv_lane_requests_total{lane=\"gpu\"} %llu\n"
        "# HELP imgconv_gpu_batch_size Images per batched decode of the GPU lane.\n"
        "# TYPE imgconv_gpu_batch_size histogram\n",
        (unsigned long long)lanes[SRV_LANE_CPU], (unsigned long long)lanes[SRV_LANE_GPU]);
    for (int b = 0; b < SRV_NBATCH; b++)
        put(&t, &n, &cap, "imgconv_gpu_batch_size_bucket{le=\"%d\"} %llu\n", 1 << b,
            (unsigned long long)batches[b]);
    put(&t, &n, &cap,
        "imgconv_gpu_batch_size_bucket{le=\"+Inf\"} %llu\n"
        "imgconv_gpu_batch_size_sum %llu\n"
        "imgconv_gpu_batch_size_count %llu\n",
        (unsigned long long)nbatches, (unsigned long long)batch_images,
        (unsigned long long)nbatches);
    if (npipes > 0)
        put(&t, &n, &cap,
            "# HELP imgconv_gpu_pipe_batches_total Batches each pipe of the GPU lane decoded.\n"
            "# TYPE imgconv_gpu_pipe_batches_total counter\n");
    for (int i = 0; i < npipes && i < 8; i++)
        put(&t, &n, &cap, "imgconv_gpu_pipe_batches_total{pipe=\"%d\"} %llu\n", i,
            (unsigned long long)pipe_batches[i]);
    return t;
}
