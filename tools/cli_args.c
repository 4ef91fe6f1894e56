/*
 * cli_args.c - turns the imgconv command line into a cli_options struct.
 *
 * Parsing is kept apart from doing the work (as zstd's zstdcli.c is): nothing
 * here opens a file or touches a pixel. Numbers are parsed strictly (the whole
 * text must be a number in range); names go through the library's parsers
 * (ic_border_parse, ic_alpha_parse) so the CLI accepts exactly what the API
 * does. getopt_long's own messages are silenced: every problem becomes one
 * cli_err that main() prints as a single line.
 *
 * One parser for every mode (images, batch, stream, chart, --signal): each
 * option group has its own function; the checks that need the whole command
 * line (which mode, which options it takes, values whose range depends on the
 * mode) run after the loop, one function per mode.
 */
#include "cli_args.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPEAT 1000000
#define MAX_THREADS 4096
#define MAX_DEVICE 1023
/* |bias| and border values beyond this are certainly a mistake (samples are 0..255). */
#define MAX_BIAS IC_MAX_BIAS

/* The exit codes, as --help lists them (cli.h defines them). */
static const struct {
    int code;
    const char *text;
} exit_table[] = {
    {CLI_EXIT_OK, "success"},
    {CLI_EXIT_INTERNAL, "internal error or out of memory"},
    {CLI_EXIT_USAGE, "usage error: bad option, bad value, bad kernel text"},
    {CLI_EXIT_INPUT, "input error: INPUT or the kernel file unreadable, corrupt or too\n"
                     "      large (--max-pixels, --max-memory, --max-work); a batch in which\n"
                     "      a file failed"},
    {CLI_EXIT_OUTPUT, "output error: OUTPUT cannot be written, is INPUT, or is an existing\n"
                      "      image without --overwrite; a batch in which an output was not\n"
                      "      written"},
    {CLI_EXIT_DEVICE, "backend error: backend unknown or unusable here, no GPU or driver,\n"
                      "      CUDA failure"},
    {CLI_EXIT_INTERRUPTED, "interrupted by SIGINT (Ctrl-C); other signals give 128 + the\n"
                           "      signal, 143 for SIGTERM"},
};

void cli_print_help(void)
{
    fputs("Usage: imgconv [OPTIONS] INPUT OUTPUT\n"
          "       imgconv [OPTIONS] -o OUTDIR INPUT...     (batch: files, dirs, globs)\n"
          "       imgconv [OPTIONS] --stream WxHxC[:16] < raw-frames > raw-frames\n"
          "       imgconv --chart WxH[xC] [--seed S] OUTPUT\n"
          "       imgconv --signal [--format text|f32] --kernel K [...] IN OUT  (1D signal)\n"
          "       imgconv serve [--listen HOST:PORT | --socket PATH] [--backend NAME] [...]\n"
          "       imgconv --server URL [OPTIONS] INPUT OUTPUT   (the job done by a server)\n"
          "       imgconv --list-filters | --list-backends | --formats | --version | --help\n"
          "\n"
          "Filters INPUT with a 2D convolution kernel and writes OUTPUT. Formats: binary\n"
          "PGM/PPM, PFM (float) and NumPy .npy always, PNG, JPEG, TIFF and WebP when\n"
          "built in (see --formats). The input format comes from the file's magic\n"
          "bytes, the output format from OUTPUT's extension (.png .jpg .jpeg .tif .tiff\n"
          ".webp .pgm .ppm .pnm .pfm .npy). OUTPUT\n"
          "is written to a temporary file and renamed, so a failure never leaves a\n"
          "partial file; it may not be INPUT. INPUT - reads standard input; OUTPUT -\n"
          "writes standard output in the --format given. The ICC profile and EXIF of\n"
          "INPUT go to OUTPUT (the EXIF orientation is kept, pixels are not rotated).\n"
          "\n"
          "Kernel (one of --kernel, --kernel-file is required):\n"
          "  -k, --kernel TEXT      NAME[:ARGS] (see --list-filters), e.g. gaussian:5,\n"
          "                         gaussian:size=7,sigma=1.5, sobel-x; or a matrix: rows\n"
          "                         split by ';', values by spaces or commas, optional\n"
          "                         '/ D' divisor, e.g. \"1 2 1; 2 4 2; 1 2 1 / 16\";\n"
          "                         or @FILE, the same as --kernel-file FILE; repeated\n"
          "                         -k apply in order in one run (a chain, float32\n"
          "                         between the steps; INPUT OUTPUT mode)\n"
          "      --kernel-file FILE matrix text with one row per line (optional '/ D',\n"
          "                         '#' comments) or a libvips .mat file, whose OFFSET\n"
          "                         is added to --bias\n"
          "      --correlate        correlation (kernel not flipped) instead of convolution\n"
          "      --abs              |weighted sum| before --bias, rounding and clamping\n"
          "                         (both signs of sobel-x; sobel, scharr and prewitt give\n"
          "                         the gradient magnitude)\n"
          "      --border MODE      pixels outside the image: constant (zero), replicate\n"
          "                         (edge, nearest, clamp), mirror (reflect101), reflect\n"
          "                         (symmetric), wrap (periodic, circular); default:\n"
          "                         mirror\n"
          "      --border-value V   the value for --border constant, 0..255 (default 0;\n"
          "                         0..65535 for 16-bit images and --stream WxHxC:16)\n"
          "      --bias B           added to every sum before rounding (default 0)\n"
          "      --alpha MODE       for grey+alpha and RGBA: auto (default: premultiply\n"
          "                         when the weights sum to 1, else keep), premultiply,\n"
          "                         keep, independent\n"
          "\n"
          "Running:\n"
          "      --backend NAME     auto (default), seq, cpu, cuda, ... (--list-backends)\n"
          "      --device N         CUDA device ordinal (default 0)\n"
          "      --devices LIST     several GPUs (CUDA backends only): comma-separated\n"
          "                         ordinals (0,1) or all; one image is split into row\n"
          "                         shares filtered concurrently, share i on the i-th\n"
          "                         device (same results; upload/kernel/download times\n"
          "                         are the largest over the devices); with -o each\n"
          "                         device filters whole images from the shared queue\n"
          "      --threads N        CPU worker threads, 0 = one per core (default 0);\n"
          "                         also caps the threads encoding one JPEG or PNG output\n"
          "                         and decoding one JPEG with restart markers\n"
          "      --transfer MODE    CUDA backends: auto (default: async from 1 MiB of\n"
          "                         samples, else sync), async (pinned buffers, row bands\n"
          "                         overlapped on several streams) or sync (one pageable\n"
          "                         copy each way); same results\n"
          "      --device-memory N  CUDA strategy backends: keep device buffers within N\n"
          "                         bytes, filtering band by band (implies async)\n"
          "      --recalibrate      backend cuda: measure the GPU's copy and FMA rates\n"
          "                         again and rewrite their cache (~/.cache/imgconv/)\n"
          "      --tune K=V,...     tuning knobs for tests and profiling, same results:\n"
          "                         method=auto|direct|sep|fft|global|rows, or\n"
          "                         method=tensor|blur, cpu-isa=\n"
          "                         auto|scalar|avx2|avx512, cpu-tiny=0|1,\n"
          "                         calibrate=auto|builtin, fft-n=N,\n"
          "                         fft-fuse=auto|always|never,\n"
          "                         rows-full=0|1, rows-shape=0|1|2|4|8|16|32|64,\n"
          "                         tile-channels=0|1|2, tile-rows=0|8|16|32|64\n"
          "      --layout aos|soa   memory layout to filter in: interleaved (aos, default)\n"
          "                         or planar (soa)\n"
          "      --repeat N         run load, filter and save N times (default 1)\n"
          "  -t, --time             print which backend ran and per-stage times (load,\n"
          "                         upload, kernel, download, save): mean and median\n"
          "                         over the --repeat runs\n"
          "      --explain          print the plan (backend, kernel size, separable rank,\n"
          "                         border, alpha) before running\n"
          "\n"
          "Batch and stream:\n"
          "  -o, --outdir DIR       filter every INPUT into DIR (same base names); a file\n"
          "                         that fails is reported and skipped, exit 3 at the end\n"
          "                         (4 when an output could not be written);\n"
          "                         folder entries that are not images are listed as skipped\n"
          "      --overwrite        replace existing files in DIR, or an OUTPUT that holds\n"
          "                         an image (default: refuse them)\n"
          "      --skip-existing    leave existing files in DIR alone and count them as\n"
          "                         skipped (exit 0): re-run a batch to finish it\n"
          "      --format EXT       output format in DIR, or of OUTPUT -: png, jpg, tif, webp,\n"
          "                         ppm, pgm, pnm\n"
          "  -q, --quiet            no progress bar, summary line or notices\n"
          "      --json             print a JSON summary (counts, rates, errors; one line\n"
          "                         for one file)\n"
          "      --trace FILE       batch: write each file's stages (read, decode, upload,\n"
          "                         filter, download, encode, write) as a Chrome trace\n"
          "                         (JSON: chrome://tracing, Perfetto)\n"
          "      --stream WxHxC[:16] read raw interleaved frames from stdin, write the\n"
          "                         filtered frames to stdout (ffmpeg -f rawvideo);\n"
          "                         :16 for 16-bit little-endian samples (ffmpeg's\n"
          "                         rgb48le, gray16le), filtered at 16 bits; reading,\n"
          "                         filtering and writing overlap on three threads,\n"
          "                         holding at most 6 frames\n"
          "\n"
          "Files:\n"
          "      --channels N       convert the input on load to N channels: 1 grey,\n"
          "                         2 grey+alpha, 3 RGB, 4 RGBA (default: as stored)\n"
          "      --max-pixels N     refuse images over N pixels, checked before allocating\n"
          "                         (default 89478485, as Pillow)\n"
          "      --max-memory N     refuse images whose decoding or filtering needs more than\n"
          "                         N bytes (suffix K, M, G, T: KiB .. TiB; default a quarter\n"
          "                         of the RAM, at most 2G), checked before allocating\n"
          "      --max-work N       refuse a filter of more than N multiply-adds (pixels x\n"
          "                         channels x kernel taps; a separable kernel counts rows\n"
          "                         + columns), checked from the header before decoding;\n"
          "                         default 5e10 on CPU backends (seconds on one core),\n"
          "                         none on CUDA ones; 0: no limit\n"
          "      --accept-damaged   decode a JPEG with damaged data as far as it goes, with\n"
          "                         a warning (default: refuse it, exit 3)\n"
          "      --quality Q        JPEG and WebP quality 1..100 (default 92)\n"
          "      --lossless         WebP: lossless (default: lossy at --quality)\n"
          "      --background C     JPEG output of an image with alpha: the colour behind\n"
          "                         it, white, black or #rrggbb (default black, with a\n"
          "                         warning unless given)\n"
          "      --compression N    PNG and TIFF level 1 (fastest) .. 9 (smallest);\n"
          "                         default 5 for PNG (libdeflate), 6 for TIFF (zlib)\n"
          "      --codec auto|cpu   auto (default): with a CUDA backend, JPEG files are\n"
          "                         decoded into and encoded from GPU memory by nvJPEG\n"
          "                         (other files and formats on the CPU, then uploaded);\n"
          "                         cpu: every file decoded and encoded on the CPU\n"
          "\n"
          "Test chart:\n"
          "      --chart WxH[xC]    write the deterministic test chart (gradients, edges,\n"
          "                         fine lines, zone plate, noise) with C channels\n"
          "                         (default 3) to OUTPUT\n"
          "      --seed S           seed of the chart's noise, 0..4294967295 (default 1)\n"
          "\n"
          "Server (imgconv serve; docs/serve.md):\n"
          "      --listen HOST:PORT address to serve HTTP on (default 127.0.0.1:8080)\n"
          "      --socket PATH      serve on a unix socket instead\n"
          "      --allow-remote     allow a --listen address other than loopback\n"
          "      --token-file F     requests need 'Authorization: Bearer TOKEN', F's first\n"
          "                         line (with --server: the token sent)\n"
          "      --max-body N       largest request body (suffix K, M, G; default 64M)\n"
          "      --workers N        filtering threads, 0 = one per core (default 0)\n"
          "      --queue N          requests waiting for a worker before 429 (default 64)\n"
          "      --batch-delay-us N  CUDA backends: how long the GPU lane waits for more\n"
          "                         JPEGs to fill a batch, 0..100000 (default 500)\n"
          "      --gpu-min-pixels N CUDA backends: smaller images go to the CPU workers\n"
          "                         (default 262144)\n"
          "      --max-connections N  open connections at once (default 1024)\n"
          "      --timeout S        seconds to read a request or send a reply (default 30)\n"
          "      --server URL       send the job to a server: http://HOST:PORT or\n"
          "                         unix:PATH; the filter options go with it\n"
          "\n"
          "Information:\n"
          "      --list-filters     the named kernels and their arguments\n"
          "      --list-backends    every backend: usable here or why not; which is auto\n"
          "      --formats          which image formats were built in\n"
          "  -V, --version          version, formats and backends built in\n"
          "  -h, --help             this text\n"
          "\n"
          "Examples:\n"
          "  imgconv --chart 1024x768 chart.png\n"
          "  imgconv --kernel gaussian:9 chart.png blurred.png\n"
          "  imgconv --kernel sobel-x --border replicate chart.png edges.png\n"
          "  imgconv --kernel '0 -1 0; -1 5 -1; 0 -1 0' photo.jpg sharp.jpg\n"
          "  imgconv --kernel-file emboss.mat --backend seq photo.png embossed.png\n"
          "  imgconv --kernel box:15 --backend cpu --repeat 10 --time big.png out.png\n"
          "\n"
          "Exit status:\n",
          stdout);
    for (size_t i = 0; i < sizeof exit_table / sizeof exit_table[0]; i++)
        printf("  %-3d %s\n", exit_table[i].code, exit_table[i].text);
    fputs("Errors are printed as one line: imgconv: error: FILE: what went wrong\n", stdout);
}

void cli_print_signal_help(void)
{
    fputs("Usage: imgconv --signal [OPTIONS] INPUT OUTPUT\n"
          "\n"
          "Filters a 1D signal with a 1D convolution and writes it in the input's format.\n"
          "  --format text|f32      text: numbers separated by newlines, commas or blanks\n"
          "                         ('#' comments), written one per line (comma-separated\n"
          "                         when the input used commas); f32: raw little-endian\n"
          "                         float32. Default: f32 for .f32 .raw .bin, else text\n"
          "  -k, --kernel TEXT      kernel text as for images (\"1 2 1 / 4\", gaussian:5,\n"
          "                         @FILE); a 2D kernel is reduced to its column sums\n"
          "      --kernel-file FILE the same as --kernel @FILE\n"
          "      --correlate        correlation (kernel not flipped) instead of convolution\n"
          "      --border MODE      samples past the ends: mirror (default), constant,\n"
          "                         replicate, reflect, wrap\n"
          "      --border-value V   the value for --border constant (default 0)\n"
          "      --bias B           added to every sum (default 0)\n"
          "      --backend NAME     auto (default), cpu or cuda\n"
          "  -h, --help             this text\n"
          "Exit codes: 0 ok, 2 usage, 3 input, 4 output, 5 backend or device.\n",
          stdout);
}

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
usage_fail(cli_err *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int code = cli_vfail(e, CLI_EXIT_USAGE, NULL, fmt, ap);
    va_end(ap);
    return code;
}

/* strtol and friends skip leading blanks and accept an empty text; we do not. */
static int number_start_ok(const char *s)
{
    return s[0] != '\0' && !isspace((unsigned char)s[0]);
}

static int parse_int(const char *s, long lo, long hi, int *out)
{
    if (!number_start_ok(s))
        return 0;
    char *end = NULL;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
    if (!number_start_ok(s) || s[0] == '-') /* strtoull would wrap "-1" */
        return 0;
    char *end = NULL;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || *end != '\0' || errno == ERANGE || v < lo || v > hi)
        return 0;
    *out = (uint64_t)v;
    return 1;
}

/* A byte count: digits with an optional K, M, G or T suffix (powers of 1024). */
static int parse_bytes(const char *s, uint64_t *out)
{
    char digits[32];
    size_t n = strlen(s);
    unsigned shift = 0;
    if (n > 0 && n < sizeof digits) {
        const char *units = "KMGT", *u = strchr(units, toupper((unsigned char)s[n - 1]));
        if (u && *u) {
            shift = 10u * (unsigned)(u - units + 1);
            n--;
        }
    }
    if (n == 0 || n >= sizeof digits)
        return 0;
    memcpy(digits, s, n);
    digits[n] = '\0';
    uint64_t v;
    if (!parse_u64(digits, 1, UINT64_MAX >> shift, &v))
        return 0;
    *out = v << shift;
    return 1;
}

static int parse_real(const char *s, double lo, double hi, double *out)
{
    if (!number_start_ok(s))
        return 0;
    char *end = NULL;
    errno = 0;
    double v = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(v) || v < lo || v > hi)
        return 0;
    *out = v;
    return 1;
}

/* --devices: "all" (every device ic_cuda_device_count() sees) or 1 to
 * IC_MAX_DEVICES comma-separated ordinals 0..MAX_DEVICE, repeats allowed.
 * Returns 1 on success, else 0 with what is wrong in why. */
static int parse_devices(const char *s, ic_context_options *c, char *why, size_t whylen)
{
    if (strcmp(s, "all") == 0) {
        const int n = ic_cuda_device_count();
        if (n <= 0) {
            snprintf(why, whylen, "no CUDA device is visible (--devices needs a CUDA backend)");
            return 0;
        }
        c->n_devices = n < IC_MAX_DEVICES ? n : IC_MAX_DEVICES;
        for (int i = 0; i < c->n_devices; i++)
            c->devices[i] = i;
        return 1;
    }
    char buf[16];
    int n = 0;
    for (const char *p = s;;) {
        const char *comma = strchr(p, ',');
        const size_t len = comma ? (size_t)(comma - p) : strlen(p);
        int ok = len > 0 && len < sizeof buf;
        if (ok) {
            memcpy(buf, p, len);
            buf[len] = '\0';
            ok = parse_int(buf, 0, MAX_DEVICE, &c->devices[n]);
        }
        if (!ok) {
            snprintf(why, whylen,
                     "expected comma-separated device ordinals in 0..%d (0,1), "
                     "or all",
                     MAX_DEVICE);
            return 0;
        }
        n++;
        if (comma && n == IC_MAX_DEVICES) { /* and another one follows */
            snprintf(why, whylen, "more than %d devices", IC_MAX_DEVICES);
            return 0;
        }
        if (!comma)
            break;
        p = comma + 1;
    }
    c->n_devices = n;
    return 1;
}

/* --devices needs a CUDA backend: the one named, or the one auto picks. All
 * CUDA backends are named cuda*, the others are CPU ones. */
static int devices_backend_fail(const cli_options *o, cli_err *e)
{
    const int is_auto = strcmp(o->backend, "auto") == 0;
    const char *name = is_auto ? ic_backend_auto() : o->backend;
    if (strncmp(name, "cuda", 4) == 0)
        return CLI_EXIT_OK;
    if (is_auto)
        return usage_fail(e,
                          "--devices needs a CUDA backend, and auto picks '%s' here "
                          "(no usable CUDA device: see --list-backends)",
                          name);
    return usage_fail(e, "--devices needs a CUDA backend, not '%s'", name);
}

/* "WxH" or "WxHxC": width and height 1..IC_MAX_DIM, channels 1..4. */
static int parse_chart_size(const char *s, cli_options *o)
{
    char buf[64];
    size_t n = strlen(s);
    if (n == 0 || n >= sizeof buf)
        return 0;
    memcpy(buf, s, n + 1);
    char *parts[4] = {NULL, NULL, NULL, NULL};
    int count = 0;
    char *p = buf;
    for (;;) {
        if (count == 3)
            return 0;
        parts[count++] = p;
        char *x = strchr(p, 'x');
        if (!x)
            break;
        *x = '\0';
        p = x + 1;
    }
    if (count < 2)
        return 0;
    int c = 3;
    if (!parse_int(parts[0], 1, IC_MAX_DIM, &o->chart_w) ||
        !parse_int(parts[1], 1, IC_MAX_DIM, &o->chart_h) ||
        (count == 3 && !parse_int(parts[2], 1, 4, &c)))
        return 0;
    o->chart_c = c;
    return 1;
}

static void set_defaults(cli_options *o)
{
    memset(o, 0, sizeof *o);
    o->mode = CLI_MODE_FILTER;
    ic_params_default(&o->params);
    o->backend = "auto";
    o->layout = IC_AOS;
    o->max_pixels = IC_DEFAULT_MAX_PIXELS;
    o->max_memory = ic_max_memory_default();
    o->repeat = 1;
    o->seed = 1;
    o->chart_c = 3;
    o->listen = "127.0.0.1:8080";
    o->max_body = (uint64_t)64 << 20;
    o->queue = 64;
    o->batch_delay_us = 500;
    o->gpu_min_pixels = 262144;
    o->max_connections = 1024;
    o->timeout = 30;
}

/* Name of the option getopt just rejected, for the message. */
static const char *rejected_option(char **argv, int ind, int opt, char *buf, size_t len)
{
    const char *a = (ind > 0) ? argv[ind - 1] : "";
    if (strncmp(a, "--", 2) == 0) { /* a long option, as written (without "=VALUE") */
        snprintf(buf, len, "%s", a);
        char *eq = strchr(buf, '=');
        if (eq)
            *eq = '\0';
    } else if (opt > 0 && opt < 256 && isprint(opt)) {
        snprintf(buf, len, "-%c", opt);
    } else {
        snprintf(buf, len, "%s", a);
    }
    return buf;
}

/* What the option loop remembers for the checks that need the whole line. */
typedef struct parse_state {
    /* The first option that makes sense only when filtering images, only for
     * the chart, or not with --signal, so that "--chart 64x64 --kernel box:3
     * out.png" is refused. */
    const char *filter_only;
    const char *chart_only;
    const char *not_signal;
    /* Values whose meaning depends on the mode (--signal takes any float32 and
     * text|f32 formats, 16-bit images take larger border values): checked
     * once the whole line is read. */
    const char *border_value, *bias, *format;
    const char *kernel_given; /* the option that gave the kernel */
    int device_given;         /* --device, which --devices replaces */
    int chart;
    /* The first option `imgconv serve` does not take, the first that only
     * it takes, and the first that --server neither forwards nor takes. */
    const char *not_serve, *serve_only, *not_client;
    int backend_given;
} parse_state;

/* How an option's value is read. */
typedef enum opt_kind {
    OPT_FLAG,   /* no value: sets an int field to 1 */
    OPT_INT,    /* an int field, lo..hi */
    OPT_U64,    /* a uint64_t field, lo..hi */
    OPT_BYTES,  /* a uint64_t field: a byte count with a K, M, G or T suffix */
    OPT_CHOICE, /* an int field: one of the names in `choices` */
    OPT_NAME,   /* a const char * field: any non-empty text */
    OPT_LATER,  /* a const char * field of parse_state, checked once the mode is known */
    OPT_FN      /* its own function */
} opt_kind;

/* Where an option applies, for the refusals that need the whole line:
 * IN_SERVE options are taken by `imgconv serve`, SERVE_ONLY ones by it
 * alone; IN_REQUEST ones in a request's query (cli_parse_request) and so
 * forwarded by --server, which also takes the IN_CLIENT ones itself. */
enum {
    IN_FILTER = 1,
    IN_SIGNAL = 2,
    IN_SERVE = 4,
    SERVE_ONLY = 8,
    IN_REQUEST = 16,
    IN_CLIENT = 32
};

typedef struct opt_choice {
    const char *name;
    int value;
} opt_choice;

typedef int (*opt_fn)(const char *arg, cli_options *o, parse_state *st, cli_err *e);

/* One option: its names, how its value is read, where it goes and what a bad
 * value is told ("--NAME 'VALUE': msg", or "--NAME: msg" for OPT_NAME). */
typedef struct opt_row {
    const char *name;
    char short_name;
    opt_kind kind;
    int where;
    size_t field; /* offsetof(cli_options, ...), or of parse_state for OPT_LATER */
    uint64_t lo, hi;
    const opt_choice *choices;
    const char *msg;
    opt_fn fn;
} opt_row;

#define FIELD(f) offsetof(cli_options, f)
#define LATER(f) offsetof(parse_state, f)

static int opt_kernel(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_kernel_file(const char *arg, cli_options *o, parse_state *st, cli_err *e);
/* --backend: any non-empty name (the library checks it); a request may
 * name only the server's. */
static int opt_backend(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    if (arg[0] == '\0')
        return usage_fail(e, "--backend: empty name");
    o->backend = arg;
    st->backend_given = 1;
    return CLI_EXIT_OK;
}

static int opt_border(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_alpha(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_device(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_devices(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_device_memory(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_tune(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_max_work(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_background(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_outdir(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_stream(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_chart(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_seed(const char *arg, cli_options *o, parse_state *st, cli_err *e);
static int opt_backend(const char *arg, cli_options *o, parse_state *st, cli_err *e);

static const opt_choice transfer_choices[] = {{"auto", IC_TRANSFER_AUTO},
                                              {"sync", IC_TRANSFER_SYNC},
                                              {"async", IC_TRANSFER_ASYNC},
                                              {NULL, 0}};
static const opt_choice layout_choices[] = {{"aos", IC_AOS}, {"soa", IC_SOA}, {NULL, 0}};
static const opt_choice codec_choices[] = {{"auto", 0}, {"cpu", 1}, {NULL, 0}};

/* Every option, in --help's order. Adding an option is adding a row here
 * (and its line in --help). */
static const opt_row opt_table[] = {
    /* the kernel and what the filter computes */
    {"kernel", 'k', OPT_FN, IN_FILTER | IN_SIGNAL | IN_REQUEST, 0, 0, 0, NULL, NULL, opt_kernel},
    {"kernel-file", 0, OPT_FN, IN_FILTER | IN_SIGNAL, 0, 0, 0, NULL, NULL, opt_kernel_file},
    {"border", 0, OPT_FN, IN_FILTER | IN_SIGNAL | IN_REQUEST, 0, 0, 0, NULL, NULL, opt_border},
    {"border-value", 0, OPT_LATER, IN_FILTER | IN_SIGNAL | IN_REQUEST, LATER(border_value), 0, 0,
     NULL, NULL, NULL},
    {"correlate", 0, OPT_FLAG, IN_FILTER | IN_SIGNAL | IN_REQUEST, FIELD(params.correlate), 0, 0,
     NULL, NULL, NULL},
    {"abs", 0, OPT_FLAG, IN_FILTER | IN_REQUEST, FIELD(params.abs), 0, 0, NULL, NULL, NULL},
    {"bias", 0, OPT_LATER, IN_FILTER | IN_SIGNAL | IN_REQUEST, LATER(bias), 0, 0, NULL, NULL, NULL},
    {"alpha", 0, OPT_FN, IN_FILTER | IN_REQUEST, 0, 0, 0, NULL, NULL, opt_alpha},
    /* where and how it runs */
    {"backend", 0, OPT_FN, IN_FILTER | IN_SIGNAL | IN_SERVE | IN_REQUEST, 0, 0, 0, NULL, NULL,
     opt_backend},
    {"device", 0, OPT_FN, IN_FILTER | IN_SERVE, 0, 0, 0, NULL, NULL, opt_device},
    {"devices", 0, OPT_FN, IN_FILTER | IN_SERVE, 0, 0, 0, NULL, NULL, opt_devices},
    {"threads", 0, OPT_INT, IN_FILTER | IN_SERVE, FIELD(ctx.threads), 0, MAX_THREADS, NULL,
     "expected an integer in 0..4096", NULL},
    {"transfer", 0, OPT_CHOICE, IN_FILTER | IN_SERVE, FIELD(ctx.transfer), 0, 0, transfer_choices,
     NULL, NULL},
    {"device-memory", 0, OPT_FN, IN_FILTER | IN_SERVE, 0, 0, 0, NULL, NULL, opt_device_memory},
    {"max-memory", 0, OPT_BYTES, IN_SERVE | IN_CLIENT, FIELD(max_memory), 0, 0, NULL,
     "expected a positive number of bytes, optionally with K, M, G or T", NULL},
    {"max-work", 0, OPT_FN, IN_FILTER | IN_SERVE, 0, 0, 0, NULL, NULL, opt_max_work},
    {"recalibrate", 0, OPT_FLAG, IN_FILTER | IN_SERVE, FIELD(ctx.recalibrate), 0, 0, NULL, NULL,
     NULL},
    {"tune", 0, OPT_FN, IN_FILTER | IN_SERVE, 0, 0, 0, NULL, NULL, opt_tune},
    {"layout", 0, OPT_CHOICE, IN_FILTER | IN_REQUEST, FIELD(layout), 0, 0, layout_choices, NULL,
     NULL},
    {"repeat", 0, OPT_INT, IN_FILTER, FIELD(repeat), 1, MAX_REPEAT, NULL,
     "expected an integer in 1..1000000", NULL},
    {"time", 't', OPT_FLAG, IN_FILTER, FIELD(time), 0, 0, NULL, NULL, NULL},
    {"explain", 0, OPT_FLAG, IN_FILTER, FIELD(explain), 0, 0, NULL, NULL, NULL},
    /* batch mode and the raw frame stream */
    {"outdir", 'o', OPT_FN, 0, 0, 0, 0, NULL, NULL, opt_outdir},
    {"overwrite", 0, OPT_FLAG, IN_CLIENT, FIELD(overwrite), 0, 0, NULL, NULL, NULL},
    {"skip-existing", 0, OPT_FLAG, 0, FIELD(skip_existing), 0, 0, NULL, NULL, NULL},
    {"format", 0, OPT_LATER, IN_SIGNAL | IN_REQUEST, LATER(format), 0, 0, NULL, NULL, NULL},
    {"quiet", 'q', OPT_FLAG, IN_SERVE | IN_CLIENT, FIELD(quiet), 0, 0, NULL, NULL, NULL},
    {"json", 0, OPT_FLAG, 0, FIELD(json), 0, 0, NULL, NULL, NULL},
    {"trace", 0, OPT_NAME, IN_FILTER, FIELD(trace), 0, 0, NULL, "empty file name", NULL},
    {"stream", 0, OPT_FN, IN_FILTER, 0, 0, 0, NULL, NULL, opt_stream},
    /* loading and saving */
    {"channels", 0, OPT_INT, IN_FILTER | IN_REQUEST, FIELD(channels), 1, 4, NULL,
     "expected 1, 2, 3 or 4", NULL},
    {"max-pixels", 0, OPT_U64, IN_SERVE, FIELD(max_pixels), 1, UINT64_MAX, NULL,
     "expected a positive integer", NULL},
    {"accept-damaged", 0, OPT_FLAG, IN_REQUEST, FIELD(accept_damaged), 0, 0, NULL, NULL, NULL},
    {"quality", 0, OPT_INT, IN_REQUEST, FIELD(quality), 1, 100, NULL,
     "expected an integer in 1..100", NULL},
    {"lossless", 0, OPT_FLAG, IN_REQUEST, FIELD(lossless), 0, 0, NULL, NULL, NULL},
    {"compression", 0, OPT_INT, IN_REQUEST, FIELD(compression), 1, 9, NULL,
     "expected an integer in 1..9", NULL},
    {"background", 0, OPT_FN, IN_FILTER | IN_REQUEST, 0, 0, 0, NULL, NULL, opt_background},
    {"codec", 0, OPT_CHOICE, IN_SERVE, FIELD(cpu_codec), 0, 0, codec_choices, NULL, NULL},
    /* the other modes and the listings */
    {"chart", 0, OPT_FN, 0, 0, 0, 0, NULL, NULL, opt_chart},
    {"seed", 0, OPT_FN, 0, 0, 0, 0, NULL, NULL, opt_seed},
    {"signal", 0, OPT_FLAG, IN_SIGNAL, FIELD(signal), 0, 0, NULL, NULL, NULL},
    {"list-filters", 0, OPT_FLAG, 0, FIELD(list_filters), 0, 0, NULL, NULL, NULL},
    {"list-backends", 0, OPT_FLAG, 0, FIELD(list_backends), 0, 0, NULL, NULL, NULL},
    {"formats", 0, OPT_FLAG, 0, FIELD(formats), 0, 0, NULL, NULL, NULL},
    {"version", 'V', OPT_FLAG, IN_SERVE, FIELD(version), 0, 0, NULL, NULL, NULL},
    {"help", 'h', OPT_FLAG, IN_SIGNAL | IN_SERVE, FIELD(help), 0, 0, NULL, NULL, NULL},
    /* imgconv serve, and the client of --server */
    {"listen", 0, OPT_NAME, IN_SERVE | SERVE_ONLY, FIELD(listen), 0, 0, NULL, "empty address",
     NULL},
    {"socket", 0, OPT_NAME, IN_SERVE | SERVE_ONLY, FIELD(socket_path), 0, 0, NULL, "empty path",
     NULL},
    {"allow-remote", 0, OPT_FLAG, IN_SERVE | SERVE_ONLY, FIELD(allow_remote), 0, 0, NULL, NULL,
     NULL},
    {"max-body", 0, OPT_BYTES, IN_SERVE | SERVE_ONLY, FIELD(max_body), 0, 0, NULL,
     "expected a positive number of bytes, optionally with K, M, G or T", NULL},
    {"workers", 0, OPT_INT, IN_SERVE | SERVE_ONLY, FIELD(workers), 0, 256, NULL,
     "expected an integer in 0..256", NULL},
    {"queue", 0, OPT_INT, IN_SERVE | SERVE_ONLY, FIELD(queue), 1, 100000, NULL,
     "expected an integer in 1..100000", NULL},
    {"batch-delay-us", 0, OPT_INT, IN_SERVE | SERVE_ONLY, FIELD(batch_delay_us), 0, 100000, NULL,
     "expected microseconds in 0..100000", NULL},
    {"gpu-min-pixels", 0, OPT_U64, IN_SERVE | SERVE_ONLY, FIELD(gpu_min_pixels), 0, UINT64_MAX,
     NULL, "expected a number of pixels", NULL},
    {"max-connections", 0, OPT_INT, IN_SERVE | SERVE_ONLY, FIELD(max_connections), 1, 100000, NULL,
     "expected an integer in 1..100000", NULL},
    {"timeout", 0, OPT_INT, IN_SERVE | IN_CLIENT, FIELD(timeout), 1, 3600, NULL,
     "expected a number of seconds in 1..3600", NULL},
    {"token-file", 0, OPT_NAME, IN_SERVE | IN_CLIENT, FIELD(token_file), 0, 0, NULL,
     "empty file name", NULL},
    {"server", 0, OPT_NAME, IN_CLIENT, FIELD(server), 0, 0, NULL, "empty URL", NULL},
};

#define N_OPTS (sizeof opt_table / sizeof opt_table[0])

/* getopt_long's view of the table: long option i returns 256 + i, a short
 * option its letter. */
static struct option long_options[N_OPTS + 1];
static char short_options[2 * N_OPTS + 2];

static void build_getopt_tables(void)
{
    size_t ns = 0;
    short_options[ns++] = ':'; /* a missing value is reported as ':', not '?' */
    for (size_t i = 0; i < N_OPTS; i++) {
        const opt_row *r = &opt_table[i];
        const int has_arg = r->kind == OPT_FLAG ? no_argument : required_argument;
        long_options[i] = (struct option){r->name, has_arg, NULL, 256 + (int)i};
        if (r->short_name) {
            short_options[ns++] = r->short_name;
            if (has_arg == required_argument)
                short_options[ns++] = ':';
        }
    }
    long_options[N_OPTS] = (struct option){NULL, 0, NULL, 0};
    short_options[ns] = '\0';
}

/* The row of what getopt_long returned, NULL for none. */
static const opt_row *row_of(int c)
{
    if (c >= 256 && (size_t)(c - 256) < N_OPTS)
        return &opt_table[c - 256];
    for (size_t i = 0; c > 0 && i < N_OPTS; i++)
        if (opt_table[i].short_name == c)
            return &opt_table[i];
    return NULL;
}

/* "--NAME" of a row, for messages. */
static const char *row_name(const opt_row *r)
{
    static char names[N_OPTS][32];
    const size_t i = (size_t)(r - opt_table);
    snprintf(names[i], sizeof names[i], "--%s", r->name);
    return names[i];
}

/* "expected a, b or c" from a choice list. */
static int choice_fail(const opt_row *r, const char *arg, cli_err *e)
{
    char list[128] = "";
    size_t n = 0;
    while (r->choices[n].name)
        n++;
    for (size_t i = 0; i < n; i++) {
        const size_t len = strlen(list);
        snprintf(list + len, sizeof list - len, "%s%s",
                 i == 0       ? ""
                 : i + 1 == n ? " or "
                              : ", ",
                 r->choices[i].name);
    }
    return usage_fail(e, "%s '%s': expected %s", row_name(r), arg, list);
}

/* Reads one option's value as its row says. */
static int apply_row(const opt_row *r, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    char *f = (char *)o + r->field;
    int iv;
    uint64_t uv;
    switch (r->kind) {
    case OPT_FLAG:
        *(int *)(void *)f = 1;
        return CLI_EXIT_OK;
    case OPT_INT:
        if (!parse_int(arg, (long)r->lo, (long)r->hi, &iv))
            return usage_fail(e, "%s '%s': %s", row_name(r), arg, r->msg);
        *(int *)(void *)f = iv;
        return CLI_EXIT_OK;
    case OPT_U64:
    case OPT_BYTES:
        if (r->kind == OPT_U64 ? !parse_u64(arg, r->lo, r->hi, &uv) : !parse_bytes(arg, &uv))
            return usage_fail(e, "%s '%s': %s", row_name(r), arg, r->msg);
        memcpy(f, &uv, sizeof uv);
        return CLI_EXIT_OK;
    case OPT_CHOICE:
        for (const opt_choice *c = r->choices; c->name; c++)
            if (strcmp(arg, c->name) == 0) {
                *(int *)(void *)f = c->value;
                return CLI_EXIT_OK;
            }
        return choice_fail(r, arg, e);
    case OPT_NAME:
        if (arg[0] == '\0')
            return usage_fail(e, "%s: %s", row_name(r), r->msg);
        *(const char **)(void *)f = arg;
        return CLI_EXIT_OK;
    case OPT_LATER:
        *(const char **)(void *)((char *)st + r->field) = arg;
        return CLI_EXIT_OK;
    case OPT_FN:
        return r->fn(arg, o, st, e);
    }
    return usage_fail(e, "option '%s' is not handled (a bug)", row_name(r));
}

/* A second --kernel-file, or one beside -k, is refused rather than silently
 * replacing the first; repeated -k make a chain (opt_kernel). */
static int kernel_once(const char *opt, parse_state *st, cli_err *e)
{
    if (st->kernel_given) {
        if (strcmp(st->kernel_given, "--kernel") == 0 && strcmp(opt, "--kernel") == 0)
            return CLI_EXIT_OK;
        if (strcmp(st->kernel_given, opt) == 0)
            return usage_fail(e,
                              "%s given twice: chain kernels with repeated --kernel (-k "
                              "@FILE for a file)",
                              opt);
        return usage_fail(e,
                          "%s and %s both given: chain kernels with repeated --kernel (-k "
                          "@FILE for a file)",
                          st->kernel_given, opt);
    }
    st->kernel_given = opt;
    return CLI_EXIT_OK;
}

static int opt_kernel(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    int code = kernel_once("--kernel", st, e);
    if (code != CLI_EXIT_OK)
        return code;
    if (arg[0] == '@' && arg[1] == '\0')
        return usage_fail(e, "--kernel '@': no file name after '@'");
    if (arg[0] == '\0')
        return usage_fail(e, "--kernel: empty kernel text");
    if (o->nchain == CLI_MAX_CHAIN)
        return usage_fail(e, "--kernel: more than %d kernels in one chain", CLI_MAX_CHAIN);
    o->chain[o->nchain++] = arg;
    if (o->nchain > 1)
        return CLI_EXIT_OK; /* a chain: the first kernel stays in kernel_text/kernel_file */
    if (arg[0] == '@') {
        if (arg[1] == '\0')
            return usage_fail(e, "--kernel '@': no file name after '@'");
        o->kernel_file = arg + 1;
    } else {
        o->kernel_text = arg;
    }
    return CLI_EXIT_OK;
}

static int opt_kernel_file(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    int code = kernel_once("--kernel-file", st, e);
    if (code != CLI_EXIT_OK)
        return code;
    if (arg[0] == '\0')
        return usage_fail(e, "--kernel-file: empty file name");
    o->kernel_file = arg;
    return CLI_EXIT_OK;
}

static int opt_border(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    if (ic_border_parse(arg, &o->params.border) != IC_OK)
        return usage_fail(e,
                          "--border '%s': unknown mode (constant, replicate, mirror, "
                          "reflect, wrap)",
                          arg);
    return CLI_EXIT_OK;
}

static int opt_alpha(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    if (ic_alpha_parse(arg, &o->params.alpha) != IC_OK)
        return usage_fail(e,
                          "--alpha '%s': unknown mode (auto, premultiply, keep, "
                          "independent)",
                          arg);
    return CLI_EXIT_OK;
}

static int opt_device(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    if (!parse_int(arg, 0, MAX_DEVICE, &o->ctx.device))
        return usage_fail(e, "--device '%s': expected an integer in 0..1023", arg);
    st->device_given = 1;
    return CLI_EXIT_OK;
}

static int opt_devices(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    char why[96];
    if (!parse_devices(arg, &o->ctx, why, sizeof why))
        return usage_fail(e, "--devices '%s': %s", arg, why);
    return CLI_EXIT_OK;
}

static int opt_device_memory(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    uint64_t v;
    if (!parse_u64(arg, 1, SIZE_MAX, &v))
        return usage_fail(e, "--device-memory '%s': expected a positive number of bytes", arg);
    o->ctx.device_memory = (size_t)v;
    return CLI_EXIT_OK;
}

static int opt_tune(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    if (ic_tuning_parse(arg, &o->tuning) != IC_OK)
        return usage_fail(e, "--tune '%s': %s", arg, ic_last_error());
    return CLI_EXIT_OK;
}

/* --max-work: multiply-adds, as an integer or in e-notation (5e10); 0 is no
 * limit. */
static int opt_max_work(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    double v;
    if (!parse_real(arg, 0.0, 1.8e19, &v))
        return usage_fail(e,
                          "--max-work '%s': expected a number of multiply-adds (5e10), 0 for "
                          "no limit",
                          arg);
    o->max_work = (uint64_t)v;
    o->max_work_given = 1;
    return CLI_EXIT_OK;
}

/* --background: white, black, or #rrggbb. */
static int opt_background(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    unsigned rgb = 0;
    if (strcmp(arg, "black") == 0)
        rgb = 0x000000;
    else if (strcmp(arg, "white") == 0)
        rgb = 0xffffff;
    else if (arg[0] == '#' && strlen(arg) == 7 && strspn(arg + 1, "0123456789abcdefABCDEF") == 6)
        rgb = (unsigned)strtoul(arg + 1, NULL, 16);
    else
        return usage_fail(e, "--background '%s': expected white, black or #rrggbb", arg);
    o->background[0] = (uint8_t)(rgb >> 16);
    o->background[1] = (uint8_t)(rgb >> 8);
    o->background[2] = (uint8_t)rgb;
    o->background_given = 1;
    return CLI_EXIT_OK;
}

static int opt_outdir(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    if (arg[0] == '\0')
        return usage_fail(e, "--outdir: empty directory name");
    o->outdir = arg;
    o->batch = 1;
    return CLI_EXIT_OK;
}

/* WxHxC, or WxHxC:16 for 16-bit little-endian samples (ffmpeg's rgb48le,
 * gray16le, ...); :8 is the default. */
static int opt_stream(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    (void)st;
    cli_options t;
    memset(&t, 0, sizeof t);
    char size[64];
    const char *colon = strchr(arg, ':');
    const size_t n = colon ? (size_t)(colon - arg) : strlen(arg);
    const int bits = !colon                         ? 8
                     : strcmp(colon + 1, "8") == 0  ? 8
                     : strcmp(colon + 1, "16") == 0 ? 16
                                                    : 0;
    if (n < sizeof size) {
        memcpy(size, arg, n);
        size[n] = '\0';
    }
    const char *x = n < sizeof size ? strchr(size, 'x') : NULL;
    if (!bits || !x || !strchr(x + 1, 'x') || !parse_chart_size(size, &t))
        return usage_fail(e,
                          "--stream '%s': expected WxHxC or WxHxC:16 (sizes 1..1048576, "
                          "channels 1..4, 8 or 16 bits a sample)",
                          arg);
    o->stream_w = t.chart_w;
    o->stream_h = t.chart_h;
    o->stream_c = t.chart_c;
    o->stream_type = bits == 16 ? IC_U16 : IC_U8;
    o->stream = 1;
    return CLI_EXIT_OK;
}

static int opt_chart(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    if (!parse_chart_size(arg, o))
        return usage_fail(e,
                          "--chart '%s': expected WxH or WxHxC (sizes 1..1048576, "
                          "channels 1..4)",
                          arg);
    st->chart = 1;
    return CLI_EXIT_OK;
}

static int opt_seed(const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    uint64_t s;
    st->chart_only = st->chart_only ? st->chart_only : "--seed";
    if (!parse_u64(arg, 0, UINT32_MAX, &s))
        return usage_fail(e, "--seed '%s': expected an integer in 0..4294967295", arg);
    o->seed = (uint32_t)s;
    return CLI_EXIT_OK;
}

/* What getopt refused (c is ':' or '?'), as one usage error. */
static int rejected_fail(int c, char **argv, cli_err *e)
{
    char name[128];
    const char *bad = rejected_option(argv, optind, optopt, name, sizeof name);
    if (c == ':')
        return usage_fail(e, "option '%s' needs a value", bad);
    /* '?': unknown, ambiguous, or a value given to a flag */
    const char *given = (optind > 0) ? argv[optind - 1] : "";
    if (strncmp(given, "--", 2) == 0 && strchr(given, '=')) {
        for (const struct option *lo = long_options; lo->name; lo++)
            if (strcmp(lo->name, bad + 2) == 0 && lo->has_arg == no_argument)
                return usage_fail(e, "option '%s' takes no value", bad);
    }
    return usage_fail(e, "unknown or ambiguous option '%s'", bad);
}

/* The values whose meaning depends on the mode: --border-value, --bias and
 * --format (text|f32 for --signal, an image format otherwise). */
static int finish_mode_values(cli_options *o, const parse_state *st, cli_err *e)
{
    if (o->signal) {
        /* a signal holds any float32 */
        double v;
        if (st->border_value) {
            if (!parse_real(st->border_value, -FLT_MAX, FLT_MAX, &v))
                return usage_fail(e, "--border-value '%s': not a number", st->border_value);
            o->params.border_value = (float)v;
        }
        if (st->bias) {
            if (!parse_real(st->bias, -FLT_MAX, FLT_MAX, &v))
                return usage_fail(e, "--bias '%s': not a number", st->bias);
            o->params.bias = (float)v;
        }
        if (st->format) {
            if (strcmp(st->format, "text") == 0)
                o->signal_format = CLI_SIGNAL_TEXT;
            else if (strcmp(st->format, "f32") == 0)
                o->signal_format = CLI_SIGNAL_F32;
            else
                return usage_fail(e, "--format '%s': expected text or f32", st->format);
        }
        return CLI_EXIT_OK;
    }
    double v;
    if (st->border_value) {
        /* in sample units: 0..255 for an 8-bit stream, whose depth is known
         * here; a file's depth is known once decoded (cli_check_image) */
        const unsigned vmax = o->stream ? ic_sample_max(o->stream_type) : ic_sample_max(IC_U16);
        if (!parse_real(st->border_value, 0.0, vmax, &v))
            return usage_fail(e, "--border-value '%s': expected a number in 0..%u",
                              st->border_value, vmax);
        o->params.border_value = (float)v;
    }
    if (st->bias) {
        if (!parse_real(st->bias, -MAX_BIAS, MAX_BIAS, &v))
            return usage_fail(e, "--bias '%s': expected a number in -1e6..1e6", st->bias);
        o->params.bias = (float)v;
    }
    if (st->format) {
        char probe[32];
        snprintf(probe, sizeof probe, "x.%s", st->format);
        if (strlen(st->format) > 8 || strchr(st->format, '/') ||
            ic_format_from_path(probe) == IC_FMT_UNKNOWN)
            return usage_fail(e,
                              "--format '%s': expected png, jpg, jpeg, tif, tiff, webp, ppm, "
                              "pgm, pnm, pfm or npy",
                              st->format);
        o->format = st->format;
    }
    return CLI_EXIT_OK;
}

/* imgconv --chart WxH[xC] [--seed S] OUTPUT */
static int finish_chart(cli_options *o, const parse_state *st, char **files, int nfiles, cli_err *e)
{
    o->mode = CLI_MODE_CHART;
    if (st->filter_only)
        return usage_fail(e, "option '%s' does not apply to --chart", st->filter_only);
    if (nfiles != 1)
        return usage_fail(e, "--chart takes exactly one OUTPUT file (%s given)",
                          nfiles == 0 ? "none" : "more than one");
    o->output = files[0];
    if ((uint64_t)o->chart_w * (uint64_t)o->chart_h > o->max_pixels)
        return usage_fail(e, "--chart %dx%d: more pixels than --max-pixels allows", o->chart_w,
                          o->chart_h);
    return CLI_EXIT_OK;
}

/* imgconv --signal [OPTIONS] INPUT OUTPUT */
static int finish_signal(cli_options *o, const parse_state *st, char **files, int nfiles,
                         cli_err *e)
{
    o->mode = CLI_MODE_SIGNAL;
    if (st->not_signal)
        return usage_fail(e, "option '%s' does not apply to --signal", st->not_signal);
    if (nfiles != 2)
        return usage_fail(e, "--signal needs INPUT and OUTPUT (%s given)",
                          nfiles == 0   ? "no file"
                          : nfiles == 1 ? "one file"
                                        : "more than two files");
    if (!o->kernel_text && !o->kernel_file)
        return usage_fail(e, "--signal needs --kernel or --kernel-file");
    if (o->nchain > 1)
        return usage_fail(e, "--signal applies one kernel: --kernel given %d times", o->nchain);
    o->input = files[0];
    o->output = files[1];
    return CLI_EXIT_OK;
}

/* imgconv [OPTIONS] -o OUTDIR INPUT... and imgconv --stream WxHxC [OPTIONS] */
static int finish_batch_stream(cli_options *o, char **files, int nfiles, cli_err *e)
{
    if (o->batch && o->stream)
        return usage_fail(e, "--stream and --outdir cannot be combined");
    if (o->nchain > 1)
        return usage_fail(e,
                          "a chain of kernels (repeated --kernel) needs INPUT OUTPUT mode, "
                          "not %s",
                          o->stream ? "--stream" : "--outdir");
    if (!o->kernel_text && !o->kernel_file)
        return usage_fail(e, "no kernel given: use --kernel TEXT or --kernel-file FILE");
    if (o->stream && o->trace)
        return usage_fail(e, "--trace applies to batch mode (-o OUTDIR), not --stream");
    if (o->stream) {
        if (nfiles != 0)
            return usage_fail(e, "--stream reads standard input: no file arguments");
        if ((uint64_t)o->stream_w * (uint64_t)o->stream_h > o->max_pixels)
            return usage_fail(e, "--stream: more pixels per frame than --max-pixels allows");
        /* Frames in flight: 3 read ahead, 3 waiting to be written, and the
         * one being filtered with its output (docs/cli.md#batch-and-streams). */
        const uint64_t frame = (uint64_t)o->stream_w * (uint64_t)o->stream_h *
                               (uint64_t)o->stream_c * ic_sample_size(o->stream_type);
        if (frame > o->max_memory / 8u)
            return usage_fail(e,
                              "--stream: 8 frames of %dx%dx%d%s in flight need more than "
                              "--max-memory allows (%llu bytes; raise it with --max-memory)",
                              o->stream_w, o->stream_h, o->stream_c,
                              o->stream_type == IC_U16 ? ":16" : "",
                              (unsigned long long)o->max_memory);
        o->mode = CLI_MODE_STREAM;
        return CLI_EXIT_OK;
    }
    if (nfiles == 0)
        return usage_fail(e, "--outdir: no INPUT given");
    if (o->overwrite && o->skip_existing)
        return usage_fail(e, "--overwrite and --skip-existing cannot be combined");
    o->mode = CLI_MODE_BATCH;
    o->inputs = files;
    o->ninputs = nfiles;
    return CLI_EXIT_OK;
}

/* imgconv [OPTIONS] INPUT OUTPUT */
static int finish_filter(cli_options *o, char **files, int nfiles, cli_err *e)
{
    if (o->skip_existing)
        return usage_fail(e, "--skip-existing needs --outdir");
    if (o->trace)
        return usage_fail(e, "--trace needs --outdir (batch mode)");
    if (nfiles != 2)
        return usage_fail(e, "expected INPUT and OUTPUT (%s given)",
                          nfiles == 0   ? "no file"
                          : nfiles == 1 ? "one file"
                                        : "more than two files");
    if (!o->kernel_text && !o->kernel_file)
        return usage_fail(e, "no kernel given: use --kernel TEXT or --kernel-file FILE");
    o->input = files[0];
    o->output = files[1];
    /* OUTPUT - is standard output: the format cannot come from a name. */
    const int to_stdout = strcmp(o->output, "-") == 0;
    if (o->format && !to_stdout)
        return usage_fail(e, "--format needs --outdir or OUTPUT - (standard output)");
    if (to_stdout && !o->format)
        return usage_fail(e, "OUTPUT - (standard output) needs --format png, jpg, tif, webp, "
                             "ppm or pgm");
    if (to_stdout && (o->time || o->explain || o->json))
        return usage_fail(e, "--time, --explain and --json print to standard output, which "
                             "OUTPUT - holds the image");
    return CLI_EXIT_OK;
}

/* imgconv serve [OPTIONS] */
static int finish_serve(cli_options *o, const parse_state *st, int nfiles, cli_err *e)
{
    o->mode = CLI_MODE_SERVE;
    if (st->not_serve)
        return usage_fail(e,
                          "option '%s' does not apply to imgconv serve (give it in each "
                          "request's query)",
                          st->not_serve);
    if (nfiles != 0)
        return usage_fail(e, "imgconv serve takes no file arguments");
    if (o->listen[0] == '\0' || (o->socket_path && o->socket_path[0] == '\0'))
        return usage_fail(e, "imgconv serve: empty --listen or --socket");
    return CLI_EXIT_OK;
}

/* imgconv --server URL [OPTIONS] INPUT OUTPUT: what the client does not send
 * and cannot do itself is refused. */
static int finish_client(const cli_options *o, const parse_state *st, cli_err *e)
{
    if (o->batch || o->stream)
        return usage_fail(e, "--server sends one INPUT OUTPUT job (not --outdir or --stream)");
    if (o->kernel_file)
        return usage_fail(e, "--server: the server reads no kernel file; give the kernel as "
                             "--kernel TEXT");
    if (st->not_client)
        return usage_fail(e,
                          "option '%s' does not apply with --server (the server's own "
                          "options decide it)",
                          st->not_client);
    return CLI_EXIT_OK;
}

/* What a row does to the checks of the whole line, and --server's list of
 * options to forward. */
static int note_row(const opt_row *r, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    if ((r->where & IN_FILTER) && !st->filter_only)
        st->filter_only = row_name(r);
    if (!(r->where & IN_SIGNAL) && !st->not_signal)
        st->not_signal = row_name(r);
    if (!(r->where & IN_SERVE) && !st->not_serve)
        st->not_serve = row_name(r);
    if ((r->where & SERVE_ONLY) && !st->serve_only)
        st->serve_only = row_name(r);
    if (!(r->where & (IN_REQUEST | IN_CLIENT)) && !st->not_client)
        st->not_client = row_name(r);
    if (r->where & IN_REQUEST) {
        if (o->nforward == CLI_MAX_FORWARD)
            return usage_fail(e, "more than %d filter options", CLI_MAX_FORWARD);
        o->forward[o->nforward][0] = r->name;
        o->forward[o->nforward][1] = r->kind == OPT_FLAG ? "" : arg;
        o->nforward++;
    }
    return CLI_EXIT_OK;
}

int cli_parse(int argc, char **argv, cli_options *o, cli_err *e)
{
    set_defaults(o);
    parse_state st;
    memset(&st, 0, sizeof st);
    /* imgconv serve [OPTIONS]: the word takes argv[0]'s place for getopt */
    const int serve = argc > 1 && strcmp(argv[1], "serve") == 0;
    if (serve) {
        argc--;
        argv++;
    }

    build_getopt_tables();
    opterr = 0;
    optind = 1;
    for (;;) {
        int idx = -1;
        const int c = getopt_long(argc, argv, short_options, long_options, &idx);
        if (c == -1)
            break;
        if (c == ':' || c == '?')
            return rejected_fail(c, argv, e);
        const opt_row *r = row_of(c);
        if (!r)
            return usage_fail(e, "option code %d is not handled (a bug)", c);
        int code = note_row(r, optarg, o, &st, e);
        if (code == CLI_EXIT_OK)
            code = apply_row(r, optarg, o, &st, e);
        if (code != CLI_EXIT_OK)
            return code;
    }

    o->ctx.max_memory = o->max_memory;
    o->ctx.tuning = &o->tuning;
    if (o->help || o->version || o->list_filters || o->list_backends || o->formats) {
        o->mode = CLI_MODE_INFO; /* the listings win; other arguments are ignored */
        return CLI_EXIT_OK;
    }
    char **files = argv + optind;
    const int nfiles = argc - optind;
    for (int i = 0; i < nfiles; i++)
        if (files[i][0] == '\0')
            return usage_fail(e, "empty file name");
    int code = finish_mode_values(o, &st, e);
    if (code != CLI_EXIT_OK)
        return code;
    if (serve) {
        if (o->ctx.n_devices > 0 && (code = devices_backend_fail(o, e)) != CLI_EXIT_OK)
            return code;
        return finish_serve(o, &st, nfiles, e);
    }
    if (st.serve_only)
        return usage_fail(e, "option '%s' applies only to imgconv serve", st.serve_only);
    if (o->token_file && !o->server)
        return usage_fail(e, "--token-file needs imgconv serve or --server URL");
    if (o->server && (code = finish_client(o, &st, e)) != CLI_EXIT_OK)
        return code;
    if (o->signal && st.chart)
        return usage_fail(e, "--signal and --chart cannot be combined");
    if (o->signal)
        return finish_signal(o, &st, files, nfiles, e);
    if (st.chart)
        return finish_chart(o, &st, files, nfiles, e);

    o->mode = CLI_MODE_FILTER;
    if (st.chart_only)
        return usage_fail(e, "option '%s' applies only to --chart", st.chart_only);
    if (o->ctx.n_devices > 0) {
        if (st.device_given)
            return usage_fail(e, "--device and --devices cannot be combined");
        code = devices_backend_fail(o, e);
        if (code != CLI_EXIT_OK)
            return code;
    }
    if (o->batch || o->stream)
        return finish_batch_stream(o, files, nfiles, e);
    return finish_filter(o, files, nfiles, e);
}

/* Decodes %XX and '+' of a query-string part in place; 0 on a bad escape. */
static int query_decode(char *s)
{
    char *w = s;
    for (const char *r = s; *r; r++) {
        if (*r == '+') {
            *w++ = ' ';
        } else if (*r == '%') {
            if (!isxdigit((unsigned char)r[1]) || !isxdigit((unsigned char)r[2]))
                return 0;
            const char hex[3] = {r[1], r[2], '\0'};
            const long v = strtol(hex, NULL, 16);
            if (v == 0)
                return 0; /* a NUL would cut the value short */
            *w++ = (char)v;
            r += 2;
        } else {
            *w++ = *r;
        }
    }
    *w = '\0';
    return 1;
}

int cli_parse_request(char *query, const cli_options *base, cli_options *o, cli_err *e)
{
    *o = *base;
    o->nforward = 0;
    parse_state st;
    memset(&st, 0, sizeof st);
    for (char *part = query; part && *part;) {
        char *amp = strchr(part, '&');
        if (amp)
            *amp = '\0';
        char *eq = strchr(part, '=');
        const char *value = NULL;
        if (eq) {
            *eq = '\0';
            value = eq + 1;
        }
        if (!query_decode(part) || (eq && !query_decode(eq + 1)))
            return usage_fail(e, "bad %%-escape in the query");
        const opt_row *r = NULL;
        for (size_t i = 0; i < N_OPTS && !r; i++)
            if (strcmp(opt_table[i].name, part) == 0)
                r = &opt_table[i];
        if (part[0] == '\0') {
            /* "a=1&&b=2": an empty part */
        } else if (!r || !(r->where & IN_REQUEST)) {
            return usage_fail(e, "unknown or ambiguous option '--%.64s'", part);
        } else if (r->kind == OPT_FLAG) {
            if (value && value[0] && strcmp(value, "1") != 0 && strcmp(value, "true") != 0 &&
                strcmp(value, "0") != 0 && strcmp(value, "false") != 0)
                return usage_fail(e, "option '%s' takes no value (or 1, true, 0, false)",
                                  row_name(r));
            if (!value || !value[0] || strcmp(value, "1") == 0 || strcmp(value, "true") == 0)
                *(int *)(void *)((char *)o + r->field) = 1;
        } else {
            if (!value)
                return usage_fail(e, "option '%s' needs a value", row_name(r));
            if (r->fn == opt_kernel && value[0] == '@')
                return usage_fail(e,
                                  "--kernel '%.64s': a server reads no kernel file; send "
                                  "the matrix text",
                                  value);
            const int code = apply_row(r, value, o, &st, e);
            if (code != CLI_EXIT_OK)
                return code;
        }
        part = amp ? amp + 1 : NULL;
    }
    const int code = finish_mode_values(o, &st, e);
    if (code != CLI_EXIT_OK)
        return code;
    if (!o->kernel_text)
        return usage_fail(e, "no kernel given: use kernel=TEXT");
    if (st.backend_given && strcmp(o->backend, base->backend) != 0)
        return usage_fail(e, "--backend '%.32s': this server runs '%s'", o->backend, base->backend);
    return CLI_EXIT_OK;
}
