/*
 * cli_auto.h - --backend auto for a whole job: what the CLI knows of the job
 * (image count, the first image's size and formats, the kernel's work, the
 * codec route) handed to ic_backend_choose before any context exists, so that
 * a job cheaper on the CPU never loads the CUDA driver. Definitions in
 * cli_auto.c.
 */
#ifndef IC_TOOLS_CLI_AUTO_H
#define IC_TOOLS_CLI_AUTO_H

#include "cli.h"

struct cli_options;

/* The backend a job runs on and why. */
typedef struct cli_auto {
    int chosen;       /* --backend auto was resolved here (else backend is the option's) */
    char backend[32]; /* the name to create contexts with */
    char reason[400]; /* one line, for --explain and --json */
} cli_auto;

/* 0 when no CUDA device can be usable here, known without loading the driver:
 * a build without CUDA, or no NVIDIA device node. 1 otherwise (maybe). */
int cli_auto_gpu_possible(void);

/* The job: n images of w x h x c (c 0: 3), from format `in` to `out`
 * (IC_FMT_UNKNOWN: raw frames), filtered by k; gpu_codec: the cuda run would
 * decode and encode with nvJPEG; overlap: the GPU start-up runs while the
 * first image decodes. Fills *a: the option's backend unchanged unless it is
 * "auto" (and --devices is not given), else the model's choice. */
void cli_auto_choose(const struct cli_options *o, const ic_kernel *k, int n, int w, int h, int c,
                     ic_format in, ic_format out, int gpu_codec, int overlap, cli_auto *a);

/* A file's width, height and channels from its header, without decoding its
 * body (channels 0 when the header does not say cheaply). Returns 0, or -1
 * when the file cannot be read or its header is not an image's. */
int cli_auto_peek(const struct cli_options *o, const char *path, int *w, int *h, int *c);

/* Channels of a PNG from its first bytes (the IHDR colour type), 0 when the
 * bytes are not a PNG's. */
int cli_auto_png_channels(const uint8_t *b, size_t n);

#endif /* IC_TOOLS_CLI_AUTO_H */
