/*
 * multi.c - one image split across several GPUs (docs/backends.md,
 * "Several GPUs").
 *
 * With n devices an image of height H is cut into n shares of whole output
 * rows, share i = rows [i*H/n, (i+1)*H/n) (empty shares, when H < n, are
 * skipped). Share i runs on its own backend state (opened on devices[i]) in
 * its own host thread, as an ic_job whose row0/row1 name the share: the CUDA
 * host side (src/cuda/cuda_host.cu) takes such a job through the banded
 * pipeline, whose bands read their halo rows from the whole source image the
 * way seed 004's padded image is read, so every output sample sums the same
 * taps as on one device, and each share writes only its own rows of dst.
 * The shares write disjoint rows of the same destination; no share reads dst.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/multi.h"

struct ic_multi {
    const ic_backend *be;
    int n;
    int device[IC_MAX_DEVICES];
    void *state[IC_MAX_DEVICES];
};

void ic__multi_close(ic_multi *m)
{
    if (!m)
        return;
    for (int i = 0; i < m->n; i++)
        if (m->be->close)
            m->be->close(m->state[i]);
    free(m);
}

ic_status ic__multi_open(ic_multi **out, const ic_backend *be, const ic_context_options *opts,
                         char *err, size_t errlen)
{
    *out = NULL;
    if (!be || !opts || opts->n_devices < 2 || opts->n_devices > IC_MAX_DEVICES)
        return IC_ERR_INVALID_ARG;
    ic_multi *m = calloc(1, sizeof *m);
    if (!m) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    m->be = be;
    for (int i = 0; i < opts->n_devices; i++) {
        ic_context_options o = *opts;
        o.device = opts->devices[i];
        o.n_devices = 0;
        m->device[i] = o.device;
        if (be->open) {
            char why[256] = "";
            const ic_status st = be->open(&m->state[i], &o, why, sizeof why);
            if (st != IC_OK) {
                snprintf(err, errlen, "device %d: %s", o.device, why[0] ? why : ic_status_str(st));
                ic__multi_close(m); /* closes the m->n states opened so far */
                return st;
            }
        }
        m->n = i + 1;
    }
    *out = m;
    return IC_OK;
}

/* One share of a run: its job, its result. */
typedef struct share {
    const ic_backend *be;
    void *state;
    ic_job job;
    ic_timing t;
    ic_status st;
    char err[256];
} share;

static void *share_main(void *p)
{
    share *s = p;
    s->st = s->be->run(s->state, &s->job, &s->t, s->err, sizeof s->err);
    return NULL;
}

static double max_d(double a, double b)
{
    return a > b ? a : b;
}

ic_status ic__multi_run(ic_multi *m, const ic_job *job, ic_timing *t, char *err, size_t errlen)
{
    if (!m || !job || !job->src || !job->dst || !t)
        return IC_ERR_INVALID_ARG;
    const long long H = job->src->height;
    share sh[IC_MAX_DEVICES];
    pthread_t th[IC_MAX_DEVICES];
    int dev_of[IC_MAX_DEVICES], started[IC_MAX_DEVICES];
    int ns = 0;
    for (int i = 0; i < m->n; i++) {
        const int r0 = (int)((long long)i * H / m->n), r1 = (int)((long long)(i + 1) * H / m->n);
        if (r0 == r1)
            continue; /* H < n: this device has no row */
        memset(&sh[ns], 0, sizeof sh[ns]);
        sh[ns].be = m->be;
        sh[ns].state = m->state[i];
        sh[ns].job = *job;
        sh[ns].job.row0 = r0;
        sh[ns].job.row1 = r1;
        dev_of[ns] = m->device[i];
        ns++;
    }
    /* Share 0 runs on the calling thread; a thread that cannot start runs its
     * share on the caller too, after the others started. */
    for (int i = 1; i < ns; i++)
        started[i] = pthread_create(&th[i], NULL, share_main, &sh[i]) == 0;
    if (ns > 0)
        share_main(&sh[0]);
    for (int i = 1; i < ns; i++)
        if (!started[i])
            share_main(&sh[i]);
    ic_status r = IC_OK;
    for (int i = 0; i < ns; i++) {
        if (i > 0 && started[i])
            pthread_join(th[i], NULL);
        t->upload_ms = max_d(t->upload_ms, sh[i].t.upload_ms);
        t->kernel_ms = max_d(t->kernel_ms, sh[i].t.kernel_ms);
        t->download_ms = max_d(t->download_ms, sh[i].t.download_ms);
        if (r == IC_OK && sh[i].st != IC_OK) {
            r = sh[i].st;
            snprintf(err, errlen, "device %d (rows %d..%d): %s", dev_of[i], sh[i].job.row0,
                     sh[i].job.row1 - 1, sh[i].err[0] ? sh[i].err : ic_status_str(r));
        }
    }
    return r;
}

ic_status ic__multi_explain(ic_multi *m, const ic_job *job, char *buf, size_t buflen)
{
    if (!m || !job || !job->src || !buf || buflen == 0)
        return IC_ERR_INVALID_ARG;
    char list[IC_MAX_DEVICES * 12] = "";
    size_t o = 0;
    for (int i = 0; i < m->n && o < sizeof list; i++) {
        const int w = snprintf(list + o, sizeof list - o, "%s%d", i ? "," : "", m->device[i]);
        if (w < 0)
            break;
        o += (size_t)w;
    }
    const int H = job->src->height;
    int w = snprintf(buf, buflen,
                     "%s: split across %d devices (%s): %d row shares of about %d rows each, "
                     "filtered concurrently through the banded pipeline; device %d's plan for "
                     "the whole image:\n",
                     m->be->name, m->n, list, H < m->n ? H : m->n, H / m->n > 0 ? H / m->n : 1,
                     m->device[0]);
    if (w < 0 || (size_t)w >= buflen)
        return IC_OK;
    if (m->be->explain)
        return m->be->explain(m->state[0], job, buf + w, buflen - (size_t)w);
    snprintf(buf + w, buflen - (size_t)w, "%s: direct %dx%d correlation\n", m->be->name, job->kw,
             job->kh);
    return IC_OK;
}

ic_status ic__multi_plan(ic_multi *m, const ic_job *job, ic_plan *plan, char *err, size_t errlen)
{
    if (!m || !job || !plan)
        return IC_ERR_INVALID_ARG;
    return m->be->plan ? m->be->plan(m->state[0], job, plan, err, errlen) : IC_OK;
}
