/*
 * jpeg_check.c - ic_jpeg_check (jpeg.c) over a batch of JPEG files on a few
 * host threads, started before and collected after the work it runs beside:
 * the GPU codec (src/dispatch/gpu_codec.c) checks the files nvJPEG decodes
 * while nvJPEG decodes them, so that a file libjpeg-turbo refuses gets the
 * CPU decoder's verdict without the check adding to the batch's time.
 * (No seed figure.)
 */
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
    int nthreads;
    pthread_t th[IC_JPEG_CHECK_THREADS];
};

/* Takes files until none is left. */
static void *check_main(void *arg)
{
    ic_jpeg_checks *k = arg;
    for (;;) {
        pthread_mutex_lock(&k->mu);
        int i = k->next;
        while (i < k->n && k->state[i] == 0)
            i++;
        k->next = i + 1;
        pthread_mutex_unlock(&k->mu);
        if (i >= k->n)
            return NULL;
        char err[IC_IO_ERRLEN];
        k->state[i] =
            ic_jpeg_check(k->data[i], k->len[i], &k->lim, err, sizeof err) == IC_OK ? 0 : 2;
    }
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
    /* A few threads, never more than the files or the cores. */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int want = count < IC_JPEG_CHECK_THREADS ? count : IC_JPEG_CHECK_THREADS;
    if (cores >= 1 && want > cores)
        want = (int)cores;
    while (k->nthreads < want && pthread_create(&k->th[k->nthreads], NULL, check_main, k) == 0)
        k->nthreads++;
    return k; /* no thread at all: the wait checks them itself */
}

void ic_jpeg_checks_wait(ic_jpeg_checks *k, int n, const int *todo, int *pass)
{
    if (!k) { /* nothing to check, or no memory to check with */
        for (int i = 0; i < n; i++)
            if (todo[i])
                pass[i] = 0;
        return;
    }
    (void)check_main(k);
    for (int t = 0; t < k->nthreads; t++)
        pthread_join(k->th[t], NULL);
    for (int i = 0; i < k->n && i < n; i++)
        if (k->state[i])
            pass[i] = 0;
    pthread_mutex_destroy(&k->mu);
    free(k->state);
    free(k);
}
