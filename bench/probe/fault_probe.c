/*
 * fault_probe.c - what a fresh image buffer costs before its first pixel:
 * aligned_alloc + memset (ic_image_create today), the same without the
 * memset but first touched by N threads (a parallel decoder's parts),
 * mmap with MAP_POPULATE, and madvise(MADV_POPULATE_WRITE). Page faults
 * are far dearer under some sandboxes (gVisor) than on a plain kernel.
 *
 *   cc -O2 -pthread bench/probe/fault_probe.c -o /tmp/fault_probe
 *   /tmp/fault_probe [MB] [THREADS]      (default 72 MB, 16 threads)
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

typedef struct span {
    unsigned char *p;
    size_t n;
} span;

static void *touch(void *arg)
{
    span *s = arg;
    for (size_t i = 0; i < s->n; i += 4096)
        s->p[i] = 1;
    return NULL;
}

static void touch_parallel(unsigned char *p, size_t n, int threads)
{
    pthread_t th[256];
    span s[256];
    size_t per = (n / (size_t)threads + 4095) & ~(size_t)4095;
    int k = 0;
    for (size_t o = 0; o < n && k < threads; o += per, k++) {
        s[k] = (span){p + o, o + per < n ? per : n - o};
        pthread_create(&th[k], NULL, touch, &s[k]);
    }
    for (int i = 0; i < k; i++)
        pthread_join(th[i], NULL);
}

static void huge(void *p, size_t n)
{
    const size_t h = (size_t)2 << 20;
    unsigned char *lo = (unsigned char *)(((size_t)p + h - 1) & ~(h - 1));
    unsigned char *hi = (unsigned char *)(((size_t)p + n) & ~(h - 1));
    if (hi > lo)
        (void)madvise(lo, (size_t)(hi - lo), MADV_HUGEPAGE);
}

int main(int argc, char **argv)
{
    const size_t mb = argc > 1 ? (size_t)atoi(argv[1]) : 72;
    const int threads = argc > 2 ? atoi(argv[2]) : 16;
    const size_t n = mb << 20;
    for (int rep = 0; rep < 3; rep++) {
        double t0 = now_ms();
        unsigned char *a = aligned_alloc(64, n);
        memset(a, 0, n);
        double t1 = now_ms();
        touch_parallel(a, n, threads); /* already faulted: the decode's own writes */
        double t2 = now_ms();
        free(a);

        unsigned char *b = aligned_alloc(64, n);
        double t3 = now_ms();
        touch_parallel(b, n, threads);
        double t4 = now_ms();
        free(b);

        double t5 = now_ms();
        unsigned char *c = mmap(NULL, n, PROT_READ | PROT_WRITE,
                                MAP_PRIVATE | MAP_ANONYMOUS | MAP_POPULATE, -1, 0);
        double t6 = now_ms();
        touch_parallel(c, n, threads);
        double t7 = now_ms();
        munmap(c, n);

        double t8 = now_ms();
        unsigned char *d =
            mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
#ifdef MADV_POPULATE_WRITE
        int r = madvise(d, n, MADV_POPULATE_WRITE);
#else
        int r = -2;
#endif
        double t9 = now_ms();
        munmap(d, n);

        /* ic_image_create today: huge pages asked for, then memset */
        double h0 = now_ms();
        unsigned char *e = aligned_alloc(64, n);
        huge(e, n);
        memset(e, 0, n);
        double h1 = now_ms();
        free(e);
        double h2 = now_ms();
        unsigned char *f =
            mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        huge(f, n);
#ifdef MADV_POPULATE_WRITE
        (void)madvise(f, n, MADV_POPULATE_WRITE);
#endif
        double h3 = now_ms();
        munmap(f, n);
        printf("  huge pages: alloc+madvise+memset %.1f ms; mmap+madvise+POPULATE_WRITE %.1f ms\n",
               h1 - h0, h3 - h2);
        printf("%zu MB, %d threads: alloc+memset %.1f ms (then touch %.1f); alloc+parallel "
               "first touch %.1f; mmap POPULATE %.1f (then touch %.1f); POPULATE_WRITE %.1f "
               "(rc %d)\n",
               mb, threads, t1 - t0, t2 - t1, t4 - t3, t6 - t5, t7 - t6, t9 - t8, r);
    }
    return 0;
}
