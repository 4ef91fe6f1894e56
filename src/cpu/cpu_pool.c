/*
 * cpu_pool.c - the persistent thread pool of the `cpu` backend.
 *
 * A context's pool is created once (ic_context_create -> open) and reused by
 * every ic_convolve on it: nthreads-1 pthreads wait between runs and the
 * calling thread works as worker 0 during a run, so a run costs a wake-up,
 * not a thread creation. Tasks (row bands) are handed out through an atomic
 * counter, so a worker that finishes early takes the next band (no static
 * split that one slow core would hold up).
 *
 * Waiting spins for up to SPIN_US before sleeping on a condition variable:
 * a sleeping worker joins the next run late (an idle virtual CPU must be woken
 * through the hypervisor: up to ~1 ms on the 2-core dev VM, measured with
 * bench/cpu_bench.c), while filters called back to back (video frames,
 * benchmarks) find the workers still spinning. The caller starts on the tasks
 * at once, so a late worker costs only its share.
 */
#include <sys/prctl.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <time.h>

#include "cpu/cpu_internal.h"

/* How long a waiting thread spins before it sleeps, in microseconds. */
#define SPIN_US 200

struct cpu_pool {
    int nthreads; /* workers in all, the caller included */
    pthread_t *tids;
    int started; /* threads actually created */
    pthread_mutex_t mu;
    pthread_cond_t wake; /* a new run (or stop) was posted */
    pthread_cond_t done; /* the last helper of a run finished */
    atomic_ulong gen;    /* run counter; changed under mu */
    atomic_int pending;  /* helpers still working on the current run */
    atomic_int stop;
    /* the current run, written before gen is increased (release) */
    int active; /* workers taking part */
    cpu_task_fn fn;
    void *arg;
    int ntasks;
    atomic_int next; /* next task to hand out */
};

typedef struct worker_arg {
    cpu_pool *pool;
    int id;
} worker_arg;

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
}

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

/* Spins while *a == v, for at most SPIN_US; returns 1 when *a changed. */
static int spin_while(const atomic_ulong *a, unsigned long v)
{
    double deadline = 0;
    for (unsigned i = 0;; i++) {
        if (atomic_load_explicit(a, memory_order_acquire) != v)
            return 1;
        if ((i & 127) == 0) {
            double t = now_us();
            if (i == 0)
                deadline = t + SPIN_US;
            else if (t > deadline)
                return 0;
        }
        cpu_relax();
    }
}

static void drain(cpu_pool *p, int id)
{
    for (;;) {
        int t = atomic_fetch_add_explicit(&p->next, 1, memory_order_relaxed);
        if (t >= p->ntasks)
            break;
        p->fn(p->arg, t, id);
    }
}

/* Waits until gen differs from seen (or stop); returns the new gen. */
static unsigned long wait_run(cpu_pool *p, unsigned long seen)
{
    if (!spin_while(&p->gen, seen)) {
        pthread_mutex_lock(&p->mu);
        while (!atomic_load(&p->stop) && atomic_load(&p->gen) == seen)
            pthread_cond_wait(&p->wake, &p->mu);
        pthread_mutex_unlock(&p->mu);
    }
    return atomic_load_explicit(&p->gen, memory_order_acquire);
}

static void *worker_main(void *argp)
{
    (void)prctl(PR_SET_NAME, "ic-cpu"); /* what top -H shows */
    worker_arg *wa = argp;
    cpu_pool *p = wa->pool;
    int id = wa->id;
    free(wa);
    unsigned long seen = 0;
    for (;;) {
        seen = wait_run(p, seen);
        if (atomic_load(&p->stop))
            break;
        if (id >= p->active)
            continue; /* not needed this run */
        drain(p, id);
        if (atomic_fetch_sub_explicit(&p->pending, 1, memory_order_acq_rel) == 1) {
            pthread_mutex_lock(&p->mu);
            pthread_cond_signal(&p->done);
            pthread_mutex_unlock(&p->mu);
        }
    }
    return NULL;
}

static void stop_threads(cpu_pool *p)
{
    pthread_mutex_lock(&p->mu);
    atomic_store(&p->stop, 1);
    atomic_fetch_add(&p->gen, 1);
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
    atomic_init(&p->gen, 0);
    atomic_init(&p->pending, 0);
    atomic_init(&p->stop, 0);
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
    p->fn = fn;
    p->arg = arg;
    p->ntasks = ntasks;
    p->active = workers;
    atomic_store_explicit(&p->next, 0, memory_order_relaxed);
    atomic_store_explicit(&p->pending, workers - 1, memory_order_relaxed);
    pthread_mutex_lock(&p->mu);
    atomic_fetch_add_explicit(&p->gen, 1, memory_order_release);
    pthread_cond_broadcast(&p->wake);
    pthread_mutex_unlock(&p->mu);
    drain(p, 0);
    /* spin on pending like the workers on gen, then sleep */
    double deadline = now_us() + SPIN_US;
    for (unsigned i = 1; atomic_load_explicit(&p->pending, memory_order_acquire) > 0; i++) {
        if ((i & 127) == 0 && now_us() > deadline) {
            pthread_mutex_lock(&p->mu);
            while (atomic_load_explicit(&p->pending, memory_order_acquire) > 0)
                pthread_cond_wait(&p->done, &p->mu);
            pthread_mutex_unlock(&p->mu);
            break;
        }
        cpu_relax();
    }
}
