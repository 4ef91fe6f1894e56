/*
 * cli.h - what the parts of the imgconv command-line tool share: the exit codes,
 * the one-line error record, and the entry points of each command.
 *
 * The CLI is split as zstd's programs/ is: cli_args.c turns argv into a
 * cli_options struct and does nothing else (one parser for every mode);
 * cli_run.c filters one image (seed 004's pipeline: load, filter, save,
 * "execute several times and average"); cli_batch.c and cli_stream.c are the
 * many-files and raw-frame commands; cli_signal.c filters a 1D signal;
 * cli_chart.c writes the test chart; cli_info.c prints the listings. Only
 * main.c prints errors, one line each, from the cli_err the others fill.
 */
#ifndef IC_TOOLS_CLI_H
#define IC_TOOLS_CLI_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include "imgconv.h"

/* Exit codes of imgconv: --help prints them from one table (cli_args.c),
 * which docs/definitions.md#exit-codes copies. */
enum {
    CLI_EXIT_OK = 0,       /* success */
    CLI_EXIT_INTERNAL = 1, /* a bug, or out of memory */
    CLI_EXIT_USAGE = 2,    /* bad option, bad value, bad kernel text */
    CLI_EXIT_INPUT = 3,    /* input image or kernel file unreadable, corrupt or too large */
    CLI_EXIT_OUTPUT = 4,   /* output cannot be written (incl. OUTPUT would overwrite INPUT) */
    CLI_EXIT_DEVICE = 5,   /* backend unknown or unusable, CUDA failure */
    /* 128 + the signal, as shells report a process a signal ended: SIGINT
     * (Ctrl-C) 130, SIGTERM 143. Single mode dies of the signal itself;
     * batch mode finishes the files being written and returns this. */
    CLI_EXIT_INTERRUPTED = 130
};

/* The one error a command ends with. `file` is the file concerned ("" for a
 * usage error); main() prints "imgconv: error: FILE: MSG" or, for usage
 * errors, "imgconv: error: MSG (see --help)". */
typedef struct cli_err {
    int code; /* one of CLI_EXIT_* */
    char file[1024];
    char msg[512];
} cli_err;

/* Records an error (printf-style message, one line; newlines are replaced)
 * and returns `code`, so that callers can write `return cli_fail(...)`.
 * file may be NULL for usage errors. */
int cli_fail(cli_err *e, int code, const char *file, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 4, 5)))
#endif
    ;

/* cli_fail with a va_list. */
int cli_vfail(cli_err *e, int code, const char *file, const char *fmt, va_list ap);

/* Exit code for a library status met while reading an input (image or kernel
 * file), writing an output, or talking to a backend. */
int cli_exit_for_input(ic_status s);
int cli_exit_for_output(ic_status s);
int cli_exit_for_backend(ic_status s);

struct cli_options;

/* A unit of output that must not be cut (a stream frame with its flush): a
 * fatal signal's handler (main.c) waits for it before the process dies.
 * cli_output_begin returns 0, entering nothing, once such a signal has
 * arrived: the caller then writes nothing more. */
int cli_output_begin(void);
void cli_output_end(void);

/* Checks, before the output image is allocated, that filtering src with k on
 * ctx stays within --max-memory (ic_convolve_bytes: input, output and working
 * buffers). Returns CLI_EXIT_OK, or CLI_EXIT_INPUT with e naming `file`, the
 * need, the limit and how to raise it. */
int cli_check_memory(const struct cli_options *o, const ic_context *ctx, const ic_image *src,
                     const ic_kernel *k, const char *file, cli_err *e);

/* A byte count in a unit that shows its figure: "512 bytes" below 1 KiB,
 * else the largest of KiB, MiB, GiB, TiB it fills, with one decimal
 * ("96.0 KiB", not "0.1 MiB"). Returns buf. */
const char *cli_size_text(uint64_t bytes, char *buf, size_t len);

/* The work bound of --max-work in multiply-adds (0: none): the option's
 * value, else IC_DEFAULT_MAX_WORK on CPU backends and none on CUDA ones. */
uint64_t cli_work_limit(const struct cli_options *o);

/* Checks that filtering a width x height x channels image with k stays within
 * cli_work_limit (ic_convolve_work). Returns CLI_EXIT_OK, or CLI_EXIT_INPUT
 * with e naming `file`, the estimate, the limit and the option. */
int cli_check_work(const struct cli_options *o, int width, int height, int channels,
                   const ic_kernel *k, const char *file, cli_err *e);

/* What can be checked of one decoded image before filtering it: that
 * --border-value fits its depth (else CLI_EXIT_USAGE), then cli_check_work
 * and cli_check_memory. */
int cli_check_image(const struct cli_options *o, const ic_context *ctx, const ic_image *img,
                    const ic_kernel *k, const char *file, cli_err *e);

/* Checks, before any work is done, that OUTPUT can be written: its extension
 * names a format built in, its directory exists and is writable, it is not a
 * directory, and it is not the file INPUT (same path, or same device and inode,
 * which catches links). input may be NULL. Returns an exit code. */
int cli_check_output(const char *output, const char *input, cli_err *e);

/* Single mode: OUTPUT may not be standard input's file (INPUT -), and an
 * existing image is replaced only with --overwrite. Returns an exit code. */
int cli_check_replace(const struct cli_options *o, cli_err *e);

/* cli_check_output without the format check (any file, e.g. --signal's):
 * OUTPUT's directory exists and is writable, OUTPUT is not a directory and
 * not the file INPUT. */
int cli_check_output_path(const char *output, const char *input, cli_err *e);

/* Reads the kernel of --kernel / --kernel-file into *k (caller frees). Bad
 * text is a usage error, an unreadable or malformed file an input error. */
int cli_get_kernel(const struct cli_options *o, ic_kernel *k, cli_err *e);

/* What batch and stream mode set up before any file: the kernel (into *k),
 * the parameters (the kernel's .mat offset added to --bias, as for one file)
 * and one context with options c (ctx NULL: no context, the kernel and
 * parameters only). On failure nothing is left to free. */
int cli_open_filter(const struct cli_options *o, const ic_context_options *c, ic_kernel *k,
                    ic_params *p, ic_context **ctx, cli_err *e);

/* Filters INPUT into OUTPUT as the options say; returns an exit code. */
int cli_run_filter(const struct cli_options *o, cli_err *e);

/* Writes the deterministic test chart (--chart); returns an exit code. */
int cli_run_chart(const struct cli_options *o, cli_err *e);

/* The listings: --list-filters, --list-backends, --formats, --version. Each
 * prints to stdout and returns CLI_EXIT_OK. */
int cli_print_filters(void);
int cli_print_backends(void);
int cli_print_formats(void);
int cli_print_version(void);

/* After a library call: on failure, copies its message (ic_last_error()) into
 * buf, which later steps may overwrite with their own; returns s. */
ic_status cli_noted(ic_status s, char *buf, size_t buflen);

/* After a successful save of img to a file whose name (or, for standard
 * output, --format name) is `name`: when img has 16-bit samples and the
 * format holds 8 bits (JPEG, WebP), one line on stderr saying so, naming the
 * output as `shown` ("imgconv: OUT: 16-bit samples written as 8-bit (JPEG
 * holds 8 bits)"); float samples saved to an integer format get a line too.
 * Nothing otherwise. */
void cli_depth_notice(const char *shown, const char *name, const ic_image *img);

/* Bits of one sample of a type: 8, 16 or 32 (float). */
static inline int cli_type_bits(ic_sample_type t)
{
    return t == IC_F32 ? 32 : t == IC_U16 ? 16 : 8;
}

/* Before saving a host image with alpha to a file named `name` that is a
 * JPEG: with --background, composites it onto that colour in place (alpha
 * stays, the writer drops it); else one warning line on stderr (unless -q)
 * naming `shown`, and the colour is written as stored. */
void cli_flatten_alpha(const struct cli_options *o, ic_image *img, const char *name,
                       const char *shown);

/* The pixel limit that keeps the filter within --max-work for an image of at
 * least `channels` channels, so that the decoder refuses a larger image from
 * its header; o->max_pixels when that is lower. */
uint64_t cli_work_pixel_cap(const struct cli_options *o, const ic_kernel *k, int channels);

/* After a decode refused as too large under cli_work_pixel_cap, with the
 * library's message msg: CLI_EXIT_INPUT with the work message in e when the
 * image was within --max-pixels, else CLI_EXIT_OK (the size's own message
 * stands). */
int cli_work_refusal(const struct cli_options *o, const ic_kernel *k, int channels, const char *msg,
                     cli_err *e);

/* Threads that encode one output image: one per core, capped by --threads
 * (JPEG and PNG bytes are the same for every count above one). */
int cli_save_threads(const struct cli_options *o);

/* All of standard input (INPUT -) into a malloc'd *data, at most cap bytes:
 * CLI_EXIT_OK, or the exit code with the one-line message in e. */
int cli_read_stdin(uint64_t cap, uint8_t **data, size_t *size, cli_err *e);

/* The format an encoded image's first bytes (n of them, 12 suffice) name,
 * IC_FMT_UNKNOWN when none. */
ic_format cli_format_sniff(const uint8_t *b, size_t n);

/* One image filtered in memory, as imgconv INPUT OUTPUT would filter the file
 * (the same options, limits, metadata and encoder), for imgconv serve:
 * decodes in[0..n), filters on ctx with k and p, encodes as a file named
 * out_name ("x.png") into *out (malloc'd, *out_size bytes). Returns an exit
 * code with e filled, and in *why the library status behind an input error
 * (IC_ERR_TOO_LARGE for the pixel, memory and work limits, IC_ERR_FORMAT for
 * corrupt data). ms, when not NULL, receives the milliseconds of the decode,
 * the filter and the encode. threads: the decoder's and the encoder's (a JPEG
 * with restart markers decodes in parts; the bytes are the same for any
 * count above one, and the encoder takes at least two). keep, when not NULL,
 * holds the filtered image's memory from one call to the next on one thread
 * (no zeroing, no page faults for a second image of the size). */
typedef struct cli_keep {
    void *data;
    size_t size;
} cli_keep;
int cli_filter_memory(const struct cli_options *o, ic_context *ctx, int threads, const ic_kernel *k,
                      const ic_params *p, const uint8_t *in, size_t n, const char *out_name,
                      cli_keep *keep, uint8_t **out, size_t *out_size, ic_status *why, double ms[3],
                      cli_err *e);
/* Frees what a cli_keep holds (NULL-safe). */
void cli_keep_free(cli_keep *keep);

/* Monotonic clock in milliseconds (for --time). */
double cli_now_ms(void);

#endif /* IC_TOOLS_CLI_H */
