/*
 * cpu_pool.c - the persistent thread pool of the `cpu` backend.
 *
 * A context's pool is created once (ic_context_create -> open) and reused by
 * every ic_convolve on it: nthreads-1 pthreads sleep on a condition variable
 * between runs, and the calling thread works as worker 0 during a run, so a
 * run costs one wake-up, not a thread creation. Tasks (row bands) are handed
 * out through an atomic counter, so a worker that finishes early takes the
 * next band (no static split that one slow core would hold up).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "cpu/cpu_internal.h"

struct cpu_pool {
    int nthreads; /* workers in all, the caller included */
    pthread_t *tids;
    int started;  /* threads actually created */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new run (or stop) was posted */
    pthread_cond_t done; /* the last helper of a run finished */
    unsigned long gen;   /* run counter, guarded by mu */
    int pending;         /* helpers still working on the current run */
    int active;          /* workers taking part in the current run */
    int stop;
    cpu_task_fn fn;
    void *arg;
    int ntasks;
    atomic_int next; /* next task to hand out */
};

typedef struct worker_arg {
    cpu_pool *pool;
    int id;
} worker_arg;

static void drain(cpu_pool *p, int id)
{
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->ntasks)
            break;
        p->fn(p->arg, t, id);
    }
}

static void *worker_main(void *argp)
{
    worker_arg *wa = argp;
    cpu_pool *p = wa->pool;
    int id = wa->id;
    free(wa);
    unsigned long seen = 0;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->gen == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        if (p->stop)
            break;
        seen = p->gen;
        if (id >= p->active)
            continue; /* not needed this run */
        pthread_mutex_unlock(&p->mu);
        drain(p, id);
        pthread_mutex_lock(&p->mu);
        if (--p->pending == 0)
            pthread_cond_signal(&p->done);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

static void stop_threads(cpu_pool *p)
{
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < p->started; i++)
        pthread_join(p->tids[i], NULL);
    p->started = 0;
}

ic_status ic_cpu_pool_create(cpu_pool **pool, int nthreads)
{
    if (!pool || nthreads < 1 || nthreads > 4096)
        return IC_ERR_INVALID_ARG;
    *pool = NULL;
    cpu_pool *p = calloc(1, sizeof *p);
    if (!p)
        return IC_ERR_NOMEM;
    p->nthreads = nthreads;
    atomic_init(&p->next, 0);
    if (nthreads > 1) {
        p->tids = calloc((size_t)(nthreads - 1), sizeof *p->tids);
        if (!p->tids) {
            free(p);
            return IC_ERR_NOMEM;
        }
    }
    if (pthread_mutex_init(&p->mu, NULL) != 0) {
        free(p->tids);
        free(p);
        return IC_ERR_NOMEM;
    }
    if (pthread_cond_init(&p->wake, NULL) != 0) {
        pthread_mutex_destroy(&p->mu);
        free(p->tids);
        free(p);
        return IC_ERR_NOMEM;
    }
    if (pthread_cond_init(&p->done, NULL) != 0) {
        pthread_cond_destroy(&p->wake);
        pthread_mutex_destroy(&p->mu);
        free(p->tids);
        free(p);
        return IC_ERR_NOMEM;
    }
    for (int i = 1; i < nthreads; i++) {
        worker_arg *wa = malloc(sizeof *wa);
        if (wa) {
            wa->pool = p;
            wa->id = i;
        }
        if (!wa || pthread_create(&p->tids[p->started], NULL, worker_main, wa) != 0) {
            free(wa);
            ic_cpu_pool_free(p);
            return IC_ERR_NOMEM;
        }
        p->started++;
    }
    *pool = p;
    return IC_OK;
}

void ic_cpu_pool_free(cpu_pool *p)
{
    if (!p)
        return;
    stop_threads(p);
    pthread_cond_destroy(&p->done);
    pthread_cond_destroy(&p->wake);
    pthread_mutex_destroy(&p->mu);
    free(p->tids);
    free(p);
}

void ic_cpu_pool_run(cpu_pool *p, cpu_task_fn fn, void *arg, int ntasks, int workers)
{
    if (ntasks <= 0)
        return;
    if (workers > p->nthreads)
        workers = p->nthreads;
    if (workers > ntasks)
        workers = ntasks;
    if (workers < 1)
        workers = 1;
    if (workers == 1) {
        for (int t = 0; t < ntasks; t++)
            fn(arg, t, 0);
        return;
    }
    pthread_mutex_lock(&p->mu);
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    p->active = workers;
    p->pending = workers - 1;
    p->gen++;
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    pthread_mutex_lock(&p->mu);
    while (p->pending > 0)
        pthread_cond_wait(&p->done, &p->mu);
    pthread_mutex_unlock(&p->mu);
}
