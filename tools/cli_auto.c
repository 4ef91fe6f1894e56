/*
 * cli_auto.c - --backend auto for a whole job (see cli_auto.h): the job as the
 * CLI sees it, handed to ic_backend_choose.
 */
#define IC_ADVANCED_API /* ic_backend_choose */
#include "cli_auto.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_args.h"

/* 1 in a build with CUDA backends. */
static int built_with_cuda(void)
{
#ifdef IC_HAVE_CUDA
    return 1;
#else
    return 0;
#endif
}

int cli_auto_gpu_possible(void)
{
    /* the driver opens this node for every device: without it cuInit fails */
    return built_with_cuda() && access("/dev/nvidiactl", F_OK) == 0;
}

int cli_auto_png_channels(const uint8_t *b, size_t n)
{
    if (n < 26 || memcmp(b, "\x89PNG\r\n\x1a\n", 8) != 0 || memcmp(b + 12, "IHDR", 4) != 0)
        return 0;
    switch (b[25]) { /* colour type; a palette counts as RGB (tRNS would add alpha) */
    case 0:
        return 1;
    case 4:
        return 2;
    case 6:
        return 4;
    default:
        return 3;
    }
}

int cli_auto_peek(const cli_options *o, const char *path, int *w, int *h, int *c)
{
    uint8_t head[65536];
    /* never blocks on a FIFO: the batch's own load reports such a file */
    const int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat st;
    ssize_t got = -1;
    if (fstat(fd, &st) == 0 && S_ISREG(st.st_mode))
        got = read(fd, head, sizeof head);
    close(fd);
    if (got <= 0)
        return -1;
    const size_t n = (size_t)got;
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = o->max_pixels;
    lo.max_memory = o->max_memory;
    if (ic_image_probe(head, n, &lo, w, h) != IC_OK)
        return -1;
    *c = cli_auto_png_channels(head, n);
    return 0;
}

void cli_auto_choose(const cli_options *o, const ic_kernel *k, int n, int w, int h, int c,
                     ic_format in, ic_format out, int gpu_codec, int overlap, cli_auto *a)
{
    memset(a, 0, sizeof *a);
    snprintf(a->backend, sizeof a->backend, "%s", o->backend);
    if (strcmp(o->backend, "auto") != 0)
        return;
    a->chosen = 1;
    if (o->ctx.n_devices > 0) { /* GPUs asked for: the best backend, as before */
        snprintf(a->backend, sizeof a->backend, "%s", ic_backend_auto());
        snprintf(a->reason, sizeof a->reason, "%s: --devices asks for GPUs", a->backend);
        return;
    }
    if (k->magnitude || o->nchain > 1) {
        /* the cost model has no rates for the device chain engine yet */
        snprintf(a->backend, sizeof a->backend, "cpu");
        snprintf(a->reason, sizeof a->reason,
                 "cpu: edge strength and chains are not in the cost model (--backend cuda runs "
                 "them on the GPU)");
        return;
    }
    if (o->channels > 0)
        c = o->channels;
    ic_auto_job j;
    memset(&j, 0, sizeof j);
    j.n_images = n > 0 ? n : 1;
    j.width = w > 0 ? w : 1;
    j.height = h > 0 ? h : 1;
    j.channels = c > 0 && c <= 4 ? c : 3;
    j.in_format = in;
    j.out_format = out;
    j.kw = k->width;
    j.kh = k->height;
    j.macs = (double)ic_convolve_work(j.width, j.height, j.channels, k);
    j.separable = j.macs < (double)j.width * j.height * j.channels * k->width * k->height;
    j.blur = k->blur; /* cpu slides it, cuda takes its blur method */
    j.gpu_codec = gpu_codec;
    j.overlap_init = overlap;
    ic_auto_rates r;
    ic_auto_rates_default(&r, o->ctx.threads);
    ic_auto_choice ch;
    /* -1: the library looks for a device only when cuda would be faster (a
     * build without CUDA knows at once); 0: no device node, no driver to load */
    const int gpu = built_with_cuda() && !cli_auto_gpu_possible() ? 0 : -1;
    if (ic_backend_choose(&j, &r, gpu, &ch) != IC_OK) {
        snprintf(a->backend, sizeof a->backend, "cpu");
        snprintf(a->reason, sizeof a->reason, "cpu: the cost model failed: %s", ic_last_error());
        return;
    }
    snprintf(a->backend, sizeof a->backend, "%s", ch.backend);
    snprintf(a->reason, sizeof a->reason, "%s", ch.reason);
}
