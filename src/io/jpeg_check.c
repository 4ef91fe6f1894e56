/*
 * jpeg_check.c - ic_jpeg_check (jpeg.c) over a batch of JPEG files on a few
 * host threads, started before and collected after the work it runs beside:
 * the GPU codec (src/cuda/codec/gpu_codec.c) checks the files nvJPEG decodes
 * while nvJPEG decodes them, so that a file libjpeg-turbo refuses gets the
 * CPU decoder's verdict without the check adding to the batch's time.
 *
 * The helper threads are made once, at the first batch, and kept for the
 * life of the process, idle between batches (a batch pipeline calls this
 * once per 16 files: making and joining 4 threads each time cost more than
 * the small files' checks). Batches are jobs on a list; a helper takes files
 * of the oldest job that has some left; the caller of the wait checks files
 * too, then waits for the helpers still inside its job. (No seed figure.)
 */
#include <sys/prctl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io/io_internal.h"

struct ic_jpeg_checks {
    int n;
    const uint8_t *const *data;
    const size_t *len;
    ic_io_limits lim;
    unsigned char *state; /* per file: 1 to check, 2 refused, 0 passed or not checked */
    pthread_mutex_t mu;   /* guards next */
    int next;
    /* Under pool_mu: */
    int want;             /* helpers wanted inside (at most the files to check) */
    int helpers;          /* helpers inside check_main now */
    int exhausted;        /* no file left to take: no helper enters any more */
    ic_jpeg_checks *link; /* the next job on the list */
};

/* The helpers and the list of open jobs. */
static pthread_mutex_t pool_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t pool_work = PTHREAD_COND_INITIALIZER; /* a job was posted */
static pthread_cond_t pool_left = PTHREAD_COND_INITIALIZER; /* a helper left a job */
static ic_jpeg_checks *pool_jobs;
static int pool_threads;

/* Takes files until none is left. */
static void check_main(ic_jpeg_checks *k)
{
    for (;;) {
        pthread_mutex_lock(&k->mu);
        int i = k->next;
        while (i < k->n && k->state[i] == 0)
            i++;
        k->next = i + 1;
        pthread_mutex_unlock(&k->mu);
        if (i >= k->n)
            return;
        char err[IC_IO_ERRLEN];
        k->state[i] =
            ic_jpeg_check(k->data[i], k->len[i], &k->lim, err, sizeof err) == IC_OK ? 0 : 2;
    }
}

/* A helper: waits for a job that wants one more helper, checks its files,
 * and goes back to waiting. Never returns. */
static void *helper_main(void *arg)
{
    (void)prctl(PR_SET_NAME, "ic-jpeg-check"); /* what top -H shows */
    (void)arg;
    pthread_mutex_lock(&pool_mu);
    for (;;) {
        ic_jpeg_checks *k = pool_jobs;
        while (k && (k->exhausted || k->helpers >= k->want))
            k = k->link;
        if (!k) {
            pthread_cond_wait(&pool_work, &pool_mu);
            continue;
        }
        k->helpers++;
        pthread_mutex_unlock(&pool_mu);
        check_main(k);
        pthread_mutex_lock(&pool_mu);
        k->exhausted = 1; /* check_main returns only when no file is left */
        k->helpers--;
        pthread_cond_broadcast(&pool_left);
    }
    return NULL;
}

/* Helpers a job may have at most, read once: a helper a file, never more
 * than the cores, since the GPU's batch waits for the slowest check and a
 * core left idle then is time lost (the environment's IC_JPEG_CHECK_THREADS,
 * 1..64, sets fewer, for measuring: 4 gave 1,438 requests/s to the server's
 * GPU lane on the H200 machine, 16 gave 1,663). */
static int g_helpers_most;
static pthread_once_t g_helpers_once = PTHREAD_ONCE_INIT;

static void helpers_most_init(void)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    const char *env = getenv("IC_JPEG_CHECK_THREADS");
    const int env_n = env ? atoi(env) : 0;
    int most = env_n >= 1 && env_n <= IC_JPEG_CHECK_THREADS ? env_n : IC_JPEG_CHECK_THREADS;
    if (cores >= 1 && most > cores)
        most = (int)cores;
    g_helpers_most = most;
}

static int helpers_most(void)
{
    (void)pthread_once(&g_helpers_once, helpers_most_init);
    return g_helpers_most;
}

ic_jpeg_checks *ic_jpeg_checks_start(int n, const uint8_t *const *data, const size_t *len,
                                     const int *todo, const ic_io_limits *lim)
{
    int count = 0;
    for (int i = 0; i < n; i++)
        count += todo[i] != 0;
    if (count == 0)
        return NULL;
    ic_jpeg_checks *k = calloc(1, sizeof *k);
    if (!k)
        return NULL;
    k->state = calloc((size_t)n, 1);
    if (!k->state || pthread_mutex_init(&k->mu, NULL) != 0) {
        free(k->state);
        free(k);
        return NULL;
    }
    k->n = n;
    k->data = data;
    k->len = len;
    k->lim = *lim;
    for (int i = 0; i < n; i++)
        k->state[i] = todo[i] != 0;
    const int most = helpers_most();
    const int want = count < most ? count : most;
    k->want = want;
    pthread_mutex_lock(&pool_mu);
    while (pool_threads < want) { /* made once; a helper that cannot start is done without */
        pthread_t th;
        pthread_attr_t at;
        int made = pthread_attr_init(&at) == 0;
        if (made) {
            made = pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED) == 0 &&
                   pthread_create(&th, &at, helper_main, NULL) == 0;
            pthread_attr_destroy(&at);
        }
        if (!made)
            break;
        pool_threads++;
    }
    ic_jpeg_checks **end = &pool_jobs; /* oldest first */
    while (*end)
        end = &(*end)->link;
    *end = k;
    pthread_cond_broadcast(&pool_work);
    pthread_mutex_unlock(&pool_mu);
    return k; /* no helper at all: the wait checks them itself */
}

void ic_jpeg_checks_wait(ic_jpeg_checks *k, int n, const int *todo, int *pass)
{
    if (!k) { /* nothing to check, or no memory to check with */
        for (int i = 0; i < n; i++)
            if (todo[i])
                pass[i] = 0;
        return;
    }
    check_main(k);
    pthread_mutex_lock(&pool_mu);
    k->exhausted = 1;
    for (ic_jpeg_checks **p = &pool_jobs; *p; p = &(*p)->link)
        if (*p == k) {
            *p = k->link;
            break;
        }
    while (k->helpers > 0) /* a helper may still check its last file */
        pthread_cond_wait(&pool_left, &pool_mu);
    pthread_mutex_unlock(&pool_mu);
    for (int i = 0; i < k->n && i < n; i++)
        if (k->state[i])
            pass[i] = 0;
    pthread_mutex_destroy(&k->mu);
    free(k->state);
    free(k);
}
