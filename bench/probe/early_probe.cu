/*
 * early_probe.cu - can nvJPEG's handle be made while the CUDA context is
 * being made? (issue 11, start-up). startup_probe --why found each nvJPEG
 * handle's ~0.28 s inside libnvcuvid (the hardware engine's library: futex
 * waits and ioctls), for every backend (--backends), after the context's
 * ~0.3 s. If the two overlap, a batch or a single-image run could start
 * nvJPEG at exec and have an encoder when its context is ready.
 *
 * usage: early_probe serial|overlap
 *   serial:  cudaSetDevice + cudaFree(0), then nvjpegCreateEx(DEFAULT) and an
 *            encoder state, on one thread (what imgconv does today);
 *   overlap: the same two jobs on two threads started together at main.
 * Prints, in ms since main, when each job ended. A diagnostic, not a test.
 * Build: nvcc -O2 -o early_probe early_probe.cu -lnvjpeg
 */
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double g_t0;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

typedef struct job {
    double t_ctx, t_handle, t_enc;
    int st;
} job;

static void *context_job(void *arg)
{
    job *j = (job *)arg;
    cudaError_t e = cudaSetDevice(0);
    if (e == cudaSuccess)
        e = cudaFree(0);
    j->st = (int)e;
    j->t_ctx = now_ms() - g_t0;
    return NULL;
}

static void *nvjpeg_job(void *arg)
{
    job *j = (job *)arg;
    nvjpegHandle_t h = NULL;
    nvjpegStatus_t s = nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &h);
    j->t_handle = now_ms() - g_t0;
    nvjpegEncoderState_t es = NULL;
    if (s == NVJPEG_STATUS_SUCCESS)
        s = nvjpegEncoderStateCreate(h, &es, NULL);
    j->t_enc = now_ms() - g_t0;
    j->st = (int)s;
    return NULL;
}

int main(int argc, char **argv)
{
    g_t0 = now_ms();
    const int overlap = argc > 1 && !strcmp(argv[1], "overlap");
    job c, n;
    memset(&c, 0, sizeof c);
    memset(&n, 0, sizeof n);
    if (overlap) {
        pthread_t a, b;
        if (pthread_create(&a, NULL, context_job, &c) != 0 ||
            pthread_create(&b, NULL, nvjpeg_job, &n) != 0)
            return 1;
        pthread_join(a, NULL);
        pthread_join(b, NULL);
    } else {
        context_job(&c);
        nvjpeg_job(&n);
    }
    printf("%s: context ready %.1f ms (status %d); nvJPEG handle %.1f ms, encoder state %.1f ms "
           "(status %d); all done %.1f ms\n",
           overlap ? "overlap" : "serial", c.t_ctx, c.st, n.t_handle, n.t_enc, n.st,
           now_ms() - g_t0);
    return c.st != 0 || n.st != 0;
}
