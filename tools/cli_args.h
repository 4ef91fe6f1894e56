/*
 * cli_args.h - the options of the imgconv command line, as parsed from argv.
 *
 * cli_parse() only fills this struct and checks values (numbers strictly, with
 * ranges; names through the library's own parsers); it opens no file and
 * computes nothing, so every command sees already-validated options.
 */
#ifndef IC_TOOLS_CLI_ARGS_H
#define IC_TOOLS_CLI_ARGS_H

#include <stdint.h>

#include "cli.h"
#define IC_ADVANCED_API /* ic_tuning: --tune */
#include "imgconv.h"

/* What the invocation asks for. The listings may be combined; they run in
 * this order and then the program exits. */
typedef enum cli_mode {
    CLI_MODE_FILTER = 0, /* imgconv [OPTIONS] INPUT OUTPUT */
    CLI_MODE_CHART,      /* imgconv --chart WxH[xC] [--seed S] OUTPUT */
    CLI_MODE_INFO,       /* --help, --version, --list-*, --formats */
    CLI_MODE_BATCH,      /* imgconv [OPTIONS] -o OUTDIR INPUT... (cli_batch.c) */
    CLI_MODE_STREAM,     /* imgconv --stream WxHxC [OPTIONS] < raw > raw (cli_stream.c) */
    CLI_MODE_SIGNAL,     /* imgconv --signal [OPTIONS] INPUT OUTPUT: a 1D signal (cli_signal.c) */
    CLI_MODE_SERVE       /* imgconv serve [OPTIONS]: the HTTP service (serve.c) */
} cli_mode;

/* Most options a --server job forwards to the server. */
#define CLI_MAX_FORWARD 32

/* How --signal reads and writes samples (--format text|f32 in that mode). */
typedef enum cli_signal_format {
    CLI_SIGNAL_AUTO = 0, /* f32 for INPUT ending in .f32 .raw .bin, else text */
    CLI_SIGNAL_TEXT,
    CLI_SIGNAL_F32
} cli_signal_format;

/* Most kernels one run chains (repeated --kernel). */
#define CLI_MAX_CHAIN 16

typedef struct cli_options {
    cli_mode mode;

    /* listings (CLI_MODE_INFO; help with --signal is --signal's help) */
    int help, version, list_filters, list_backends, formats;

    /* files */
    const char *input;  /* filter and signal modes */
    const char *output; /* filter, chart and signal modes */

    /* the kernel: exactly one of kernel_text / kernel_file is set in filter,
     * batch, stream and signal modes; "--kernel @FILE" is stored as
     * kernel_file = FILE */
    const char *kernel_text;
    const char *kernel_file;
    /* Every --kernel in order (the first is also kernel_text or kernel_file,
     * "@FILE" kept as given): two or more make a chain, applied in order in
     * filter mode (ic_convolve_chain). */
    const char *chain[CLI_MAX_CHAIN];
    int nchain;

    /* what the filter computes (--border, --border-value, --correlate,
     * --bias, --alpha); the kernel's .mat offset is added to params.bias
     * by cli_run_filter */
    ic_params params;

    /* where and how it runs */
    const char *backend;    /* --backend, "auto" by default */
    ic_context_options ctx; /* --device, --threads, --transfer, --device-memory;
                             * ctx.tuning points at `tuning` */
    ic_tuning tuning;       /* --tune (zero: the library's defaults) */
    ic_layout layout;       /* --layout: the in-memory layout used for filtering */

    /* loading and saving */
    int channels;        /* --channels: 0 = as stored, else 1..4 */
    uint64_t max_pixels; /* --max-pixels, IC_DEFAULT_MAX_PIXELS by default */
    uint64_t max_work;   /* --max-work: multiply-adds of the filter, 0 = no limit
                          * (ic_convolve_work; IC_DEFAULT_MAX_WORK on CPU
                          * backends when not given) */
    int max_work_given;
    uint8_t background[3]; /* --background: RGB behind alpha saved as JPEG */
    int background_given;
    uint64_t max_memory; /* --max-memory, ic_max_memory_default() by default; also
                           * copied into ctx.max_memory */
    int quality;         /* --quality, 0 = the library's default */
    int lossless;        /* --lossless: WebP lossless */
    int compression;     /* --compression N: PNG/TIFF zlib level, 0 = the default */
    int cpu_codec;       /* --codec cpu: no GPU codec even with a CUDA backend */
    int accept_damaged;  /* --accept-damaged: decode damaged JPEG data, with a warning */

    /* measuring and explaining */
    int repeat;  /* --repeat N (>= 1): the whole load-filter-save pipeline N times */
    int time;    /* --time: print per-stage mean/median times */
    int explain; /* --explain: print the plan before running */

    /* chart mode */
    int chart_w, chart_h, chart_c;
    uint32_t seed; /* --seed, 1 by default */

    /* The mode switches as given; cli_parse turns them into `mode`. */
    int batch;                       /* -o/--outdir: many INPUT files into an output directory */
    int signal;                      /* --signal: a 1D signal */
    int stream;                      /* --stream: raw frames from stdin to stdout */
    cli_signal_format signal_format; /* --format in signal mode */

    /* batch mode (-o OUTDIR) and the raw frame stream (--stream WxHxC);
     * --transfer and --device-memory go to ctx */
    const char *outdir; /* -o, --outdir */
    char **inputs;      /* the INPUT arguments (files, directories, globs) */
    int ninputs;
    int overwrite;      /* --overwrite: replace existing outputs */
    int skip_existing;  /* --skip-existing: leave existing outputs, count them skipped */
    int quiet;          /* -q, --quiet: no progress bar, no summary line */
    int json;           /* --json: a JSON summary on stdout */
    const char *trace;  /* --trace FILE: the batch's stages per file, Chrome trace JSON */
    const char *format; /* --format EXT: output extension (png, jpg, ppm, pgm, pnm) */
    int stream_w, stream_h, stream_c;
    ic_sample_type stream_type; /* --stream WxHxC:16: IC_U16 (little-endian), else IC_U8 */

    /* imgconv serve (docs/serve.md) */
    const char *listen;      /* --listen HOST:PORT, 127.0.0.1:8080 by default */
    const char *socket_path; /* --socket PATH: a unix socket instead */
    int allow_remote;        /* --allow-remote: a --listen address other than loopback */
    const char *token_file;  /* --token-file F: the bearer token (serve and --server) */
    uint64_t max_body;       /* --max-body: bytes of one request body */
    int workers;             /* --workers: filtering threads, 0 = one per core */
    int queue;               /* --queue: requests waiting for a worker before 429 */
    int batch_delay_us;      /* --batch-delay-us: the GPU lane's wait for a fuller batch */
    uint64_t gpu_min_pixels; /* --gpu-min-pixels: smaller images go to the CPU workers */
    int max_connections;     /* --max-connections (libevent 2.2 and later) */
    int timeout;             /* --timeout: seconds to read a request or write a reply */

    /* imgconv --server URL [OPTIONS] INPUT OUTPUT: the job goes to a server,
     * with the request options given (name without "--", value; "" for a
     * flag) in command-line order */
    const char *server;
    int nforward;
    const char *forward[CLI_MAX_FORWARD][2];
} cli_options;

/* Parses argv into *o. Returns CLI_EXIT_OK, or CLI_EXIT_USAGE with e filled
 * (e->file empty: these are usage errors). argv is not modified except for
 * getopt's permutation of non-option arguments. */
int cli_parse(int argc, char **argv, cli_options *o, cli_err *e);

/* Parses the query string of a request to `imgconv serve` (the part after
 * '?', "kernel=gaussian:9&border=mirror&format=jpeg&quality=90") into *o with
 * the command line's own option table and messages: each key is a long
 * option without "--", a flag takes no value, "1" or "true". *o starts as a
 * copy of base (the server's options: backend, limits). Only the options of
 * one image's filter are taken (not files, limits or --kernel @FILE); a
 * kernel is required; --backend must name the server's. query is decoded in
 * place (%XX, '+') and *o points into it. Returns CLI_EXIT_OK, or
 * CLI_EXIT_USAGE with e filled. */
int cli_parse_request(char *query, const cli_options *base, cli_options *o, cli_err *e);

/* Prints the --help text to stdout. */
void cli_print_help(void);

/* Prints the help of --signal (--signal --help) to stdout. */
void cli_print_signal_help(void);

#endif /* IC_TOOLS_CLI_ARGS_H */
