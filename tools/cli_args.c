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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Long-only options get values above any character. */
enum {
    OPT_KERNEL = 'k',
    OPT_TIME = 't',
    OPT_HELP = 'h',
    OPT_VERSION = 'V',
    OPT_KERNEL_FILE = 256,
    OPT_BORDER,
    OPT_BORDER_VALUE,
    OPT_CORRELATE,
    OPT_BIAS,
    OPT_ALPHA,
    OPT_BACKEND,
    OPT_DEVICE,
    OPT_THREADS,
    OPT_LAYOUT,
    OPT_CHANNELS,
    OPT_MAX_PIXELS,
    OPT_QUALITY,
    OPT_REPEAT,
    OPT_EXPLAIN,
    OPT_CHART,
    OPT_SEED,
    OPT_LIST_FILTERS,
    OPT_LIST_BACKENDS,
    OPT_FORMATS,
    OPT_TRANSFER,
    OPT_DEVICE_MEMORY,
    OPT_OUTDIR = 'o',
    OPT_QUIET = 'q',
    OPT_OVERWRITE = 300,
    OPT_JSON,
    OPT_FORMAT,
    OPT_STREAM,
    OPT_SKIP_EXISTING,
    OPT_LOSSLESS,
    OPT_COMPRESSION,
    OPT_DEVICES,
    OPT_MAX_MEMORY,
    OPT_RECALIBRATE,
    OPT_CODEC,
    OPT_SIGNAL,
    OPT_TUNE,
    OPT_ACCEPT_DAMAGED
};

static const struct option long_options[] = {
    {"kernel", required_argument, NULL, OPT_KERNEL},
    {"kernel-file", required_argument, NULL, OPT_KERNEL_FILE},
    {"border", required_argument, NULL, OPT_BORDER},
    {"border-value", required_argument, NULL, OPT_BORDER_VALUE},
    {"correlate", no_argument, NULL, OPT_CORRELATE},
    {"bias", required_argument, NULL, OPT_BIAS},
    {"alpha", required_argument, NULL, OPT_ALPHA},
    {"backend", required_argument, NULL, OPT_BACKEND},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"devices", required_argument, NULL, OPT_DEVICES},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"transfer", required_argument, NULL, OPT_TRANSFER},
    {"device-memory", required_argument, NULL, OPT_DEVICE_MEMORY},
    {"max-memory", required_argument, NULL, OPT_MAX_MEMORY},
    {"accept-damaged", no_argument, NULL, OPT_ACCEPT_DAMAGED},
    {"recalibrate", no_argument, NULL, OPT_RECALIBRATE},
    {"tune", required_argument, NULL, OPT_TUNE},
    {"layout", required_argument, NULL, OPT_LAYOUT},
    {"channels", required_argument, NULL, OPT_CHANNELS},
    {"max-pixels", required_argument, NULL, OPT_MAX_PIXELS},
    {"quality", required_argument, NULL, OPT_QUALITY},
    {"codec", required_argument, NULL, OPT_CODEC},
    {"repeat", required_argument, NULL, OPT_REPEAT},
    {"time", no_argument, NULL, OPT_TIME},
    {"explain", no_argument, NULL, OPT_EXPLAIN},
    {"chart", required_argument, NULL, OPT_CHART},
    {"seed", required_argument, NULL, OPT_SEED},
    {"list-filters", no_argument, NULL, OPT_LIST_FILTERS},
    {"list-backends", no_argument, NULL, OPT_LIST_BACKENDS},
    {"formats", no_argument, NULL, OPT_FORMATS},
    {"outdir", required_argument, NULL, OPT_OUTDIR},
    {"quiet", no_argument, NULL, OPT_QUIET},
    {"overwrite", no_argument, NULL, OPT_OVERWRITE},
    {"skip-existing", no_argument, NULL, OPT_SKIP_EXISTING},
    {"lossless", no_argument, NULL, OPT_LOSSLESS},
    {"compression", required_argument, NULL, OPT_COMPRESSION},
    {"json", no_argument, NULL, OPT_JSON},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"stream", required_argument, NULL, OPT_STREAM},
    {"signal", no_argument, NULL, OPT_SIGNAL},
    {"help", no_argument, NULL, OPT_HELP},
    {"version", no_argument, NULL, OPT_VERSION},
    {NULL, 0, NULL, 0}};

/* Leading ':' makes getopt report a missing value as ':' rather than '?'. */
static const char short_options[] = ":k:thVo:q";

#define MAX_REPEAT 1000000
#define MAX_THREADS 4096
#define MAX_DEVICE 1023
/* |bias| and border values beyond this are certainly a mistake (samples are 0..255). */
#define MAX_BIAS IC_MAX_BIAS

void cli_print_help(void)
{
    fputs("Usage: imgconv [OPTIONS] INPUT OUTPUT\n"
          "       imgconv [OPTIONS] -o OUTDIR INPUT...     (batch: files, dirs, globs)\n"
          "       imgconv [OPTIONS] --stream WxHxC[:16] < raw-frames > raw-frames\n"
          "       imgconv --chart WxH[xC] [--seed S] OUTPUT\n"
          "       imgconv --signal [--format text|f32] --kernel K [...] IN OUT  (1D signal)\n"
          "       imgconv --list-filters | --list-backends | --formats | --version | --help\n"
          "\n"
          "Filters INPUT with a 2D convolution kernel and writes OUTPUT. Formats: binary\n"
          "PGM/PPM always, PNG, JPEG, TIFF and WebP when built in (see --formats). The\n"
          "input format comes from the file's magic bytes, the output format from\n"
          "OUTPUT's extension (.png .jpg .jpeg .tif .tiff .webp .pgm .ppm .pnm). OUTPUT\n"
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
          "                         or @FILE, the same as --kernel-file FILE\n"
          "      --kernel-file FILE matrix text with one row per line (optional '/ D',\n"
          "                         '#' comments) or a libvips .mat file, whose OFFSET\n"
          "                         is added to --bias\n"
          "      --correlate        correlation (kernel not flipped) instead of convolution\n"
          "      --border MODE      pixels outside the image: constant (zero), replicate\n"
          "                         (edge, nearest, clamp), mirror (reflect101), reflect\n"
          "                         (symmetric), wrap (periodic, circular); default:\n"
          "                         mirror (constant is the seeds' zero ghost cells)\n"
          "      --border-value V   the value for --border constant, 0..255 (default 0;\n"
          "                         0..65535 for --stream WxHxC:16)\n"
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
          "                         also caps the threads encoding one JPEG output\n"
          "      --transfer MODE    CUDA backends: auto (default: async from 1 MiB of\n"
          "                         samples, else sync), async (pinned buffers, row bands\n"
          "                         overlapped on several streams) or sync (one pageable\n"
          "                         copy each way); same results\n"
          "      --device-memory N  CUDA strategy backends: keep device buffers within N\n"
          "                         bytes, filtering band by band (implies async)\n"
          "      --recalibrate      backend cuda: measure the GPU's copy and FMA rates\n"
          "                         again and rewrite their cache (~/.cache/imgconv/)\n"
          "      --tune K=V,...     tuning knobs for tests and profiling, same results:\n"
          "                         method=auto|direct|sep|fft|global|rows, cpu-isa=\n"
          "                         auto|scalar|avx2|avx512, cpu-tiny=0|1, calibrate=\n"
          "                         auto|builtin, fft-n=N, fft-fuse=auto|always|never,\n"
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
          "                         that fails is reported and skipped, exit 3 at the end;\n"
          "                         folder entries that are not images are listed as skipped\n"
          "      --overwrite        replace existing files in DIR (default: refuse them)\n"
          "      --skip-existing    leave existing files in DIR alone and count them as\n"
          "                         skipped (exit 0): re-run a batch to finish it\n"
          "      --format EXT       output format in DIR, or of OUTPUT -: png, jpg, tif, webp,\n"
          "                         ppm, pgm, pnm\n"
          "  -q, --quiet            no progress bar and no summary line\n"
          "      --json             print a JSON summary (counts, rates, errors)\n"
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
          "                         N bytes (suffix K, M, G: KiB, MiB, GiB; default a quarter\n"
          "                         of the RAM, at most 2G), checked before allocating\n"
          "      --accept-damaged   decode a JPEG with damaged data as far as it goes, with\n"
          "                         a warning (default: refuse it, exit 3)\n"
          "      --quality Q        JPEG and WebP quality 1..100 (default 92)\n"
          "      --lossless         WebP: lossless (default: lossy at --quality)\n"
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
          "Exit status:\n"
          "  0  success\n"
          "  1  internal error or out of memory\n"
          "  2  usage error: bad option, bad value, bad kernel text\n"
          "  3  input error: INPUT or the kernel file unreadable, corrupt or too large\n"
          "  4  output error: OUTPUT cannot be written, or is the same file as INPUT\n"
          "  5  backend error: backend unknown or unusable here, CUDA failure\n"
          "Errors are printed as one line: imgconv: error: FILE: what went wrong\n",
          stdout);
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
    o->max_memory = ic_default_max_memory();
    o->repeat = 1;
    o->seed = 1;
    o->chart_c = 3;
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
     * text|f32 formats): checked once the whole line is read. */
    const char *border_value, *bias, *format;
    int device_given; /* --device, which --devices replaces */
    int chart;
} parse_state;

/* The long name of option code c ("--kernel" for -k too), for messages. */
static const char *option_name(int c)
{
    static char names[sizeof long_options / sizeof long_options[0]][32];
    for (size_t i = 0; long_options[i].name; i++)
        if (long_options[i].val == c) {
            snprintf(names[i], sizeof names[i], "--%s", long_options[i].name);
            return names[i];
        }
    return "?";
}

/* Options that only filtering images takes (refused with --chart). */
static int is_filter_option(int c)
{
    switch (c) {
    case OPT_KERNEL:
    case OPT_KERNEL_FILE:
    case OPT_BORDER:
    case OPT_BORDER_VALUE:
    case OPT_CORRELATE:
    case OPT_BIAS:
    case OPT_ALPHA:
    case OPT_BACKEND:
    case OPT_DEVICE:
    case OPT_DEVICES:
    case OPT_THREADS:
    case OPT_TRANSFER:
    case OPT_DEVICE_MEMORY:
    case OPT_LAYOUT:
    case OPT_CHANNELS:
    case OPT_REPEAT:
    case OPT_TIME:
    case OPT_EXPLAIN:
    case OPT_RECALIBRATE:
    case OPT_STREAM:
    case OPT_TUNE:
        return 1;
    default:
        return 0;
    }
}

/* Options that --signal takes. */
static int is_signal_option(int c)
{
    switch (c) {
    case OPT_SIGNAL:
    case OPT_KERNEL:
    case OPT_KERNEL_FILE:
    case OPT_BORDER:
    case OPT_BORDER_VALUE:
    case OPT_CORRELATE:
    case OPT_BIAS:
    case OPT_BACKEND:
    case OPT_FORMAT:
    case OPT_HELP:
        return 1;
    default:
        return 0;
    }
}

/* Each option group below returns -1 when c is not one of its options, else
 * CLI_EXIT_OK or a usage error. */

/* The kernel and what the filter computes. */
static int parse_kernel_option(int c, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    switch (c) {
    case OPT_KERNEL:
        if (arg[0] == '@') {
            if (arg[1] == '\0')
                return usage_fail(e, "--kernel '@': no file name after '@'");
            o->kernel_file = arg + 1;
            o->kernel_text = NULL;
        } else {
            o->kernel_text = arg;
            o->kernel_file = NULL;
        }
        return CLI_EXIT_OK;
    case OPT_KERNEL_FILE:
        if (arg[0] == '\0')
            return usage_fail(e, "--kernel-file: empty file name");
        o->kernel_file = arg;
        o->kernel_text = NULL;
        return CLI_EXIT_OK;
    case OPT_BORDER:
        if (ic_border_parse(arg, &o->params.border) != IC_OK)
            return usage_fail(e,
                              "--border '%s': unknown mode (constant, replicate, mirror, "
                              "reflect, wrap)",
                              arg);
        return CLI_EXIT_OK;
    case OPT_BORDER_VALUE:
        st->border_value = arg;
        return CLI_EXIT_OK;
    case OPT_CORRELATE:
        o->params.correlate = 1;
        return CLI_EXIT_OK;
    case OPT_BIAS:
        st->bias = arg;
        return CLI_EXIT_OK;
    case OPT_ALPHA:
        if (ic_alpha_parse(arg, &o->params.alpha) != IC_OK)
            return usage_fail(e,
                              "--alpha '%s': unknown mode (auto, premultiply, keep, "
                              "independent)",
                              arg);
        return CLI_EXIT_OK;
    default:
        return -1;
    }
}

/* Where and how it runs, and what it measures. */
static int parse_run_option(int c, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    switch (c) {
    case OPT_BACKEND:
        if (arg[0] == '\0')
            return usage_fail(e, "--backend: empty name");
        o->backend = arg; /* checked against the table when the context is made */
        return CLI_EXIT_OK;
    case OPT_DEVICE:
        if (!parse_int(arg, 0, MAX_DEVICE, &o->ctx.device))
            return usage_fail(e, "--device '%s': expected an integer in 0..1023", arg);
        st->device_given = 1;
        return CLI_EXIT_OK;
    case OPT_DEVICES: {
        char why[96];
        if (!parse_devices(arg, &o->ctx, why, sizeof why))
            return usage_fail(e, "--devices '%s': %s", arg, why);
        return CLI_EXIT_OK;
    }
    case OPT_THREADS:
        if (!parse_int(arg, 0, MAX_THREADS, &o->ctx.threads))
            return usage_fail(e, "--threads '%s': expected an integer in 0..4096", arg);
        return CLI_EXIT_OK;
    case OPT_TRANSFER:
        if (strcmp(arg, "auto") == 0)
            o->ctx.transfer = IC_TRANSFER_AUTO;
        else if (strcmp(arg, "sync") == 0)
            o->ctx.transfer = IC_TRANSFER_SYNC;
        else if (strcmp(arg, "async") == 0)
            o->ctx.transfer = IC_TRANSFER_ASYNC;
        else
            return usage_fail(e, "--transfer '%s': expected auto, sync or async", arg);
        return CLI_EXIT_OK;
    case OPT_DEVICE_MEMORY: {
        uint64_t v;
        if (!parse_u64(arg, 1, SIZE_MAX, &v))
            return usage_fail(e, "--device-memory '%s': expected a positive number of bytes", arg);
        o->ctx.device_memory = (size_t)v;
        return CLI_EXIT_OK;
    }
    case OPT_LAYOUT:
        if (strcmp(arg, "aos") == 0)
            o->layout = IC_AOS;
        else if (strcmp(arg, "soa") == 0)
            o->layout = IC_SOA;
        else
            return usage_fail(e, "--layout '%s': expected aos or soa", arg);
        return CLI_EXIT_OK;
    case OPT_REPEAT:
        if (!parse_int(arg, 1, MAX_REPEAT, &o->repeat))
            return usage_fail(e, "--repeat '%s': expected an integer in 1..1000000", arg);
        return CLI_EXIT_OK;
    case OPT_TIME:
        o->time = 1;
        return CLI_EXIT_OK;
    case OPT_EXPLAIN:
        o->explain = 1;
        return CLI_EXIT_OK;
    case OPT_RECALIBRATE:
        o->ctx.recalibrate = 1;
        return CLI_EXIT_OK;
    case OPT_TUNE:
        if (ic_tuning_parse(arg, &o->tuning) != IC_OK)
            return usage_fail(e, "--tune '%s': %s", arg, ic_last_error());
        return CLI_EXIT_OK;
    default:
        return -1;
    }
}

/* Loading and saving files. */
static int parse_file_option(int c, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    switch (c) {
    case OPT_CHANNELS:
        if (!parse_int(arg, 1, 4, &o->channels))
            return usage_fail(e, "--channels '%s': expected 1, 2, 3 or 4", arg);
        return CLI_EXIT_OK;
    case OPT_MAX_PIXELS:
        if (!parse_u64(arg, 1, UINT64_MAX, &o->max_pixels))
            return usage_fail(e, "--max-pixels '%s': expected a positive integer", arg);
        return CLI_EXIT_OK;
    case OPT_MAX_MEMORY:
        if (!parse_bytes(arg, &o->max_memory))
            return usage_fail(e,
                              "--max-memory '%s': expected a positive number of bytes, "
                              "optionally with K, M or G",
                              arg);
        return CLI_EXIT_OK;
    case OPT_QUALITY:
        if (!parse_int(arg, 1, 100, &o->quality))
            return usage_fail(e, "--quality '%s': expected an integer in 1..100", arg);
        return CLI_EXIT_OK;
    case OPT_LOSSLESS:
        o->lossless = 1;
        return CLI_EXIT_OK;
    case OPT_COMPRESSION:
        if (!parse_int(arg, 1, 9, &o->compression))
            return usage_fail(e, "--compression '%s': expected an integer in 1..9", arg);
        return CLI_EXIT_OK;
    case OPT_CODEC:
        if (strcmp(arg, "auto") == 0)
            o->cpu_codec = 0;
        else if (strcmp(arg, "cpu") == 0)
            o->cpu_codec = 1;
        else
            return usage_fail(e, "--codec '%s': expected auto or cpu", arg);
        return CLI_EXIT_OK;
    case OPT_FORMAT:
        st->format = arg;
        return CLI_EXIT_OK;
    default:
        return -1;
    }
}

/* Batch mode and the raw frame stream. */
static int parse_batch_option(int c, const char *arg, cli_options *o, cli_err *e)
{
    switch (c) {
    case OPT_OUTDIR:
        if (arg[0] == '\0')
            return usage_fail(e, "--outdir: empty directory name");
        o->outdir = arg;
        o->batch = 1;
        return CLI_EXIT_OK;
    case OPT_QUIET:
        o->quiet = 1;
        return CLI_EXIT_OK;
    case OPT_OVERWRITE:
        o->overwrite = 1;
        return CLI_EXIT_OK;
    case OPT_ACCEPT_DAMAGED:
        o->accept_damaged = 1;
        return CLI_EXIT_OK;
    case OPT_SKIP_EXISTING:
        o->skip_existing = 1;
        return CLI_EXIT_OK;
    case OPT_JSON:
        o->json = 1;
        return CLI_EXIT_OK;
    case OPT_STREAM: {
        /* WxHxC, or WxHxC:16 for 16-bit little-endian samples (ffmpeg's
         * rgb48le, gray16le, ...); :8 is the default. */
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
    default:
        return -1;
    }
}

/* The other modes: the chart, the 1D signal and the listings. */
static int parse_mode_option(int c, const char *arg, cli_options *o, parse_state *st, cli_err *e)
{
    switch (c) {
    case OPT_CHART:
        if (!parse_chart_size(arg, o))
            return usage_fail(e,
                              "--chart '%s': expected WxH or WxHxC (sizes 1..1048576, "
                              "channels 1..4)",
                              arg);
        st->chart = 1;
        return CLI_EXIT_OK;
    case OPT_SEED: {
        uint64_t s;
        st->chart_only = st->chart_only ? st->chart_only : "--seed";
        if (!parse_u64(arg, 0, UINT32_MAX, &s))
            return usage_fail(e, "--seed '%s': expected an integer in 0..4294967295", arg);
        o->seed = (uint32_t)s;
        return CLI_EXIT_OK;
    }
    case OPT_SIGNAL:
        o->signal = 1;
        return CLI_EXIT_OK;
    case OPT_LIST_FILTERS:
        o->list_filters = 1;
        return CLI_EXIT_OK;
    case OPT_LIST_BACKENDS:
        o->list_backends = 1;
        return CLI_EXIT_OK;
    case OPT_FORMATS:
        o->formats = 1;
        return CLI_EXIT_OK;
    case OPT_HELP:
        o->help = 1;
        return CLI_EXIT_OK;
    case OPT_VERSION:
        o->version = 1;
        return CLI_EXIT_OK;
    default:
        return -1;
    }
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
        /* in sample units: 0..65535 for a 16-bit stream, whose depth is known here */
        const unsigned vmax = o->stream ? ic_sample_max(o->stream_type) : 255u;
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
                              "pgm or pnm",
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
    o->input = files[0];
    o->output = files[1];
    return CLI_EXIT_OK;
}

/* imgconv [OPTIONS] -o OUTDIR INPUT... and imgconv --stream WxHxC [OPTIONS] */
static int finish_batch_stream(cli_options *o, char **files, int nfiles, cli_err *e)
{
    if (o->batch && o->stream)
        return usage_fail(e, "--stream and --outdir cannot be combined");
    if (!o->kernel_text && !o->kernel_file)
        return usage_fail(e, "no kernel given: use --kernel TEXT or --kernel-file FILE");
    if (o->stream) {
        if (nfiles != 0)
            return usage_fail(e, "--stream reads standard input: no file arguments");
        if ((uint64_t)o->stream_w * (uint64_t)o->stream_h > o->max_pixels)
            return usage_fail(e, "--stream: more pixels per frame than --max-pixels allows");
        /* Frames in flight: 3 read ahead, 3 waiting to be written, and the
         * one being filtered with its output (README "Batch and streams"). */
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
    if (o->overwrite || o->skip_existing || o->json || o->quiet)
        return usage_fail(e, "--overwrite, --skip-existing, --json and --quiet need --outdir");
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
    if (to_stdout && (o->time || o->explain))
        return usage_fail(e, "--time and --explain print to standard output, which OUTPUT - "
                             "holds the image");
    return CLI_EXIT_OK;
}

int cli_parse(int argc, char **argv, cli_options *o, cli_err *e)
{
    set_defaults(o);
    parse_state st;
    memset(&st, 0, sizeof st);

    opterr = 0;
    optind = 1;
    for (;;) {
        int idx = -1;
        const int c = getopt_long(argc, argv, short_options, long_options, &idx);
        if (c == -1)
            break;
        if (c == ':' || c == '?')
            return rejected_fail(c, argv, e);
        if (is_filter_option(c) && !st.filter_only)
            st.filter_only = option_name(c);
        if (!is_signal_option(c) && !st.not_signal)
            st.not_signal = option_name(c);
        int code = parse_kernel_option(c, optarg, o, &st, e);
        if (code < 0)
            code = parse_run_option(c, optarg, o, &st, e);
        if (code < 0)
            code = parse_file_option(c, optarg, o, &st, e);
        if (code < 0)
            code = parse_batch_option(c, optarg, o, e);
        if (code < 0)
            code = parse_mode_option(c, optarg, o, &st, e);
        if (code < 0)
            return usage_fail(e, "option '%s' is not handled (a bug)", option_name(c));
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
