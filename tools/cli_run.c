/*
 * cli_run.c - the filtering command of imgconv: seed 004's pipeline, through
 * the public API only.
 *
 *   load INPUT -> ic_convolve on a context -> save OUTPUT
 *
 * With a CUDA backend a JPEG input takes the GPU codec instead (ic_gpu_codec):
 * the file's bytes are decoded by nvJPEG into a device image, ic_convolve
 * filters device to device, and the output is encoded on the device when it
 * is JPEG (else copied back once and encoded on the host), so only compressed
 * bytes cross the bus. --codec cpu keeps the host path.
 *
 * run --repeat N times with per-stage timing (seed 004's "Convolve: execute the
 * convolution several times and calculate the average execution time"), here
 * reported as mean and median per stage: load, upload, kernel, download, save.
 * Everything that can be checked cheaply (kernel text, output path, backend) is
 * checked before the input is read, so a bad request costs nothing and never
 * leaves a file behind.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_args.h"
#include "cli_files.h"
#include "cli_warm.h"

double cli_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

int cli_exit_for_input(ic_status s)
{
    switch (s) {
    case IC_OK:
        return CLI_EXIT_OK;
    case IC_ERR_IO:
    case IC_ERR_FORMAT:
    case IC_ERR_TOO_LARGE:
    case IC_ERR_UNSUPPORTED:
    case IC_ERR_KERNEL:
        return CLI_EXIT_INPUT;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

int cli_exit_for_output(ic_status s)
{
    switch (s) {
    case IC_OK:
        return CLI_EXIT_OK;
    case IC_ERR_IO:
    case IC_ERR_UNSUPPORTED:
    case IC_ERR_FORMAT:
    case IC_ERR_TOO_LARGE:
        return CLI_EXIT_OUTPUT;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

int cli_exit_for_backend(ic_status s)
{
    switch (s) {
    case IC_OK:
        return CLI_EXIT_OK;
    case IC_ERR_NO_BACKEND:
    case IC_ERR_DEVICE:
    case IC_ERR_UNSUPPORTED:
        return CLI_EXIT_DEVICE;
    default:
        return CLI_EXIT_INTERNAL;
    }
}

ic_status cli_noted(ic_status s, char *buf, size_t buflen)
{
    if (s != IC_OK)
        snprintf(buf, buflen, "%s", ic_last_error());
    return s;
}

/* The library's one-line reason, or the generic text of the status. */
static const char *reason(const char *buf, ic_status s)
{
    return (buf && buf[0]) ? buf : ic_status_str(s);
}

int cli_check_output(const char *output, const char *input, cli_err *e)
{
    ic_format f = ic_format_from_path(output);
    if (f == IC_FMT_UNKNOWN)
        return cli_fail(e, CLI_EXIT_OUTPUT, output,
                        "unknown output format: use .png, .jpg, .jpeg, .pgm, .ppm or .pnm");
    if (!ic_format_supported(f))
        return cli_fail(e, CLI_EXIT_OUTPUT, output,
                        "%s support was not built into this imgconv (see --formats)",
                        ic_format_name(f));
    return cli_check_output_path(output, input, e);
}

int cli_check_output_path(const char *output, const char *input, cli_err *e)
{
    struct stat so, si;
    int out_exists = stat(output, &so) == 0;
    if (input && (strcmp(input, output) == 0 || (out_exists && stat(input, &si) == 0 &&
                                                 si.st_dev == so.st_dev && si.st_ino == so.st_ino)))
        return cli_fail(e, CLI_EXIT_OUTPUT, output,
                        "is the same file as the input; refusing to overwrite it");
    if (out_exists && S_ISDIR(so.st_mode))
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "is a directory");

    /* The directory the temporary file and the rename happen in. */
    char dir[4096];
    size_t n = strlen(output);
    if (n >= sizeof dir)
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "path too long");
    memcpy(dir, output, n + 1);
    char *slash = strrchr(dir, '/');
    if (!slash)
        snprintf(dir, sizeof dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    struct stat sd;
    if (stat(dir, &sd) != 0)
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "cannot write: directory %s: %s", dir,
                        strerror(errno));
    if (!S_ISDIR(sd.st_mode))
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "cannot write: %s is not a directory", dir);
    if (access(dir, W_OK | X_OK) != 0)
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "cannot write into directory %s: %s", dir,
                        strerror(errno));
    return CLI_EXIT_OK;
}

int cli_check_memory(const cli_options *o, const ic_context *ctx, const ic_image *src,
                     const ic_kernel *k, const char *file, cli_err *e)
{
    const uint64_t need = ic_convolve_bytes(ctx, src, k, o->layout);
    if (need <= o->max_memory)
        return CLI_EXIT_OK;
    char a[32], b[32];
    ic_bytes_text(a, b, sizeof a, need, o->max_memory);
    return cli_fail(e, CLI_EXIT_INPUT, file,
                    "filtering this %dx%d image needs %s, over the memory limit %s (raise it with "
                    "--max-memory)",
                    src->width, src->height, a, b);
}

/* Reads the kernel named by the options. Bad text is a usage error (2); a
 * kernel file that cannot be read or is malformed is an input error (3). */
int cli_get_kernel(const cli_options *o, ic_kernel *k, cli_err *e)
{
    char buf[256] = "";
    ic_status s;
    if (o->kernel_file) {
        s = cli_noted(ic_kernel_load(k, o->kernel_file), buf, sizeof buf);
        if (s != IC_OK)
            return cli_fail(e, cli_exit_for_input(s), o->kernel_file, "%s%s",
                            s == IC_ERR_KERNEL ? "bad kernel file: " : "", reason(buf, s));
        return CLI_EXIT_OK;
    }
    s = cli_noted(ic_kernel_parse(k, o->kernel_text), buf, sizeof buf);
    if (s == IC_OK)
        return CLI_EXIT_OK;
    int shown = (int)strlen(o->kernel_text);
    const char *ellipsis = "";
    if (shown > 60) {
        shown = 57;
        ellipsis = "...";
    }
    return cli_fail(e, s == IC_ERR_KERNEL ? CLI_EXIT_USAGE : CLI_EXIT_INTERNAL, NULL,
                    "--kernel '%.*s%s': %s", shown, o->kernel_text, ellipsis, reason(buf, s));
}

/* What batch and stream mode set up before any file: the kernel, the
 * parameters (the kernel's .mat offset added to --bias, as for one file) and
 * one context with options c. On failure nothing is left to free. */
int cli_open_filter(const cli_options *o, const ic_context_options *c, ic_kernel *k, ic_params *p,
                    ic_context **ctx, cli_err *e)
{
    memset(k, 0, sizeof *k);
    if (ctx)
        *ctx = NULL;
    int code = cli_get_kernel(o, k, e);
    if (code != CLI_EXIT_OK)
        return code;
    *p = o->params;
    p->bias = (float)((double)p->bias + k->offset);
    if (!ctx) /* the kernel and parameters only */
        return CLI_EXIT_OK;
    char msg[256] = "";
    const ic_status s = cli_noted(ic_context_create(ctx, o->backend, c), msg, sizeof msg);
    if (s != IC_OK) {
        ic_kernel_free(k);
        return cli_fail(e, cli_exit_for_backend(s), NULL, "%s", msg[0] ? msg : ic_status_str(s));
    }
    return CLI_EXIT_OK;
}

/* What ic_convolve will do with alpha, for --explain (the library decides). */
static const char *alpha_plan(const cli_options *o, const ic_kernel *k, int channels)
{
    if (channels != 2 && channels != 4)
        return "none (no alpha channel)";
    switch (o->params.alpha) {
    case IC_ALPHA_AUTO:
        return fabs(ic_kernel_sum(k) - 1.0) < 1e-6 ? "auto: premultiply (weights sum to 1)"
                                                   : "auto: keep (weights do not sum to 1)";
    case IC_ALPHA_PREMULTIPLY:
        return "premultiply";
    case IC_ALPHA_KEEP:
        return "keep (alpha copied)";
    default:
        return "independent (every channel filtered alone)";
    }
}

static void print_plan(const cli_options *o, ic_context *ctx, const ic_kernel *k,
                       const ic_image *src, const ic_params *p)
{
    printf("plan:\n");
    printf("  input     %s: %dx%d, %d channel%s of %d bits, filtered in %s layout\n", o->input,
           src->width, src->height, src->channels, src->channels == 1 ? "" : "s",
           src->type == IC_U16 ? 16 : 8,
           o->layout == IC_SOA ? "planar (soa)" : "interleaved (aos)");
    printf("  kernel    %s (%dx%d), divisor %g, weights sum %g\n", k->name, k->width, k->height,
           k->divisor, ic_kernel_sum(k));
    ic_factors f;
    memset(&f, 0, sizeof f);
    ic_status s = ic_kernel_factor(k, 0.0, 0, &f);
    long full = (long)k->width * k->height;
    if (s != IC_OK)
        printf("  factors   not computed (%s)\n", ic_status_str(s));
    else if (f.rank == 0)
        printf("  factors   not separable at a useful rank: %ld multiply-adds per sample\n", full);
    else
        printf("  factors   rank %d (max error %.2g): %ld multiply-adds per sample when "
               "separated, %ld direct\n",
               f.rank, f.max_err, (long)f.rank * (k->width + k->height), full);
    ic_factors_free(&f);
    printf("  operation %s\n",
           p->correlate ? "correlation (kernel not flipped)" : "convolution (kernel flipped)");
    if (p->border == IC_BORDER_CONSTANT)
        printf("  border    constant, value %g\n", (double)p->border_value);
    else
        printf("  border    %s\n", ic_border_name(p->border));
    printf("  bias      %g%s\n", (double)p->bias, k->offset != 0.0 ? " (incl. kernel offset)" : "");
    printf("  alpha     %s\n", alpha_plan(o, k, src->channels));
    printf("  backend   %s%s", ic_context_backend(ctx),
           strcmp(o->backend, "auto") == 0 ? " (auto)" : "");
    if (o->ctx.threads > 0)
        printf(", %d threads", o->ctx.threads);
    if (o->ctx.transfer == IC_TRANSFER_ASYNC || o->ctx.device_memory > 0)
        printf(", async transfers");
    else if (o->ctx.transfer == IC_TRANSFER_SYNC)
        printf(", sync transfers");
    if (o->ctx.device_memory > 0)
        printf(" within %zu device bytes", o->ctx.device_memory);
    if (o->ctx.n_devices >= 1) {
        printf(o->ctx.n_devices == 1 ? ", device " : ", split across devices ");
        for (int i = 0; i < o->ctx.n_devices; i++)
            printf("%s%d", i ? "," : "", o->ctx.devices[i]);
    }
    printf("\n");
    /* The backend's own plan (method, launch shape, predicted time). */
    char plan[2048] = "";
    if (ic_explain(ctx, src, k, p, plan, sizeof plan) == IC_OK && plan[0]) {
        for (char *line = plan; line && *line;) {
            char *nl = strchr(line, '\n');
            if (nl)
                *nl = '\0';
            if (*line)
                printf("            %s\n", line);
            line = nl ? nl + 1 : NULL;
        }
    }
    const ic_format of = ic_format_from_path(o->output);
    printf("  output    %s (%s, %d bits)\n", o->output, ic_format_name(of),
           src->type == IC_U16 && ic_format_depth(of) >= 16 ? 16 : 8);
}

void cli_depth_notice(const char *shown, const char *name, const ic_image *img)
{
    const ic_format f = ic_format_from_path(name);
    if (img->type != IC_U16 || ic_format_depth(f) >= 16)
        return;
    fprintf(stderr, "imgconv: %s: 16-bit samples written as 8-bit (%s holds 8 bits)\n", shown,
            f == IC_FMT_JPEG   ? "JPEG"
            : f == IC_FMT_WEBP ? "WebP"
                               : ic_format_name(f));
}

/* Per-stage samples of the --repeat runs. */
enum { ST_LOAD, ST_UPLOAD, ST_KERNEL, ST_DOWNLOAD, ST_FILTER, ST_SAVE, ST_TOTAL, ST_COUNT };
static const char *const stage_names[ST_COUNT] = {"load",   "upload", "kernel", "download",
                                                  "filter", "save",   "total"};
static const char *const stage_notes[ST_COUNT] = {
    "read + decode INPUT",    "host -> device",        "the convolution",     "device -> host",
    "whole ic_convolve call", "encode + write OUTPUT", "load + filter + save"};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Once-per-process costs that --time prints before the per-run stages. */
typedef struct once_times {
    double start_ms;   /* exec to the first run (loading, options); -1 unknown */
    double init_ms;    /* ic_context_create */
    double codec_ms;   /* ic_gpu_codec_create (nvJPEG handles); 0 without */
    double cleanup_ms; /* ic_gpu_codec_free + ic_context_free */
    double warm_ms;    /* the warm-up filter (cli_warm.c); 0 without */
    double wait_ms;    /* the main thread waiting for the start-up after its decode */
    int background;    /* init, codec-init and warm-up ran on their own thread */
} once_times;

/* Milliseconds since this process was exec'd, from /proc/self/stat's start
 * time (clock ticks since boot, so ~10 ms resolution); -1 where unknown. */
static double since_exec_ms(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    char b[1024];
    const size_t n = fread(b, 1, sizeof b - 1, f);
    fclose(f);
    b[n] = '\0';
    const char *p = strrchr(b, ')'); /* the command name may hold spaces */
    if (!p || !p[1])
        return -1;
    p += 2; /* field 3 */
    for (int field = 3; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    unsigned long long ticks = 0;
    struct timespec ts;
    const long hz = sysconf(_SC_CLK_TCK);
    if (sscanf(p, "%llu", &ticks) != 1 || hz <= 0 || clock_gettime(CLOCK_BOOTTIME, &ts) != 0)
        return -1;
    const double d =
        (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6 - (double)ticks * 1e3 / (double)hz;
    return d >= 0 && d < 3.6e6 ? d : -1;
}

static void print_times(const cli_options *o, const char *backend, const ic_kernel *k,
                        const ic_image *src, const once_times *once, double *samples[ST_COUNT],
                        int n)
{
    printf("imgconv: backend %s: %s (%dx%d) on %dx%dx%d %s, %d run%s\n", backend, k->name, k->width,
           k->height, src->width, src->height, src->channels, o->layout == IC_SOA ? "soa" : "aos",
           n, n == 1 ? "" : "s");
    printf("  %-10s %10s %10s %10s\n", "stage", "first ms", "mean ms", "median ms");
    if (once->start_ms >= 0)
        printf("  %-10s %10.3f %10s %10s  %s\n", "start", once->start_ms, "-", "-",
               "exec to the first run (loading, options; 10 ms ticks), once");
    const char *bg = once->background ? ", during the first load" : "";
    printf("  %-10s %10.3f %10s %10s  context creation, once%s\n", "init", once->init_ms, "-", "-",
           bg);
    if (once->codec_ms > 0)
        printf("  %-10s %10.3f %10s %10s  GPU codec creation (nvJPEG), once%s\n", "codec-init",
               once->codec_ms, "-", "-", bg);
    if (once->warm_ms > 0)
        printf("  %-10s %10.3f %10s %10s  one filter of the input's size on the device, once%s\n",
               "warm-up", once->warm_ms, "-", "-", bg);
    printf("  %-10s %10.3f %10s %10s  %s\n", "wait", once->wait_ms, "-", "-",
           "first load done, start-up not yet: waited, once");
    for (int st = 0; st < ST_COUNT; st++) {
        double sum = 0.0;
        const double first = samples[st][0];
        for (int i = 0; i < n; i++)
            sum += samples[st][i];
        qsort(samples[st], (size_t)n, sizeof(double), cmp_double);
        double median =
            (n % 2) ? samples[st][n / 2] : 0.5 * (samples[st][n / 2 - 1] + samples[st][n / 2]);
        printf("  %-10s %10.3f %10.3f %10.3f  %s\n", stage_names[st], first, sum / n, median,
               stage_notes[st]);
    }
    printf("  %-10s %10.3f %10s %10s  %s\n", "cleanup", once->cleanup_ms, "-", "-",
           "GPU codec and context freed, once");
    const double end = since_exec_ms();
    if (end >= 0)
        printf("  %-10s %10.3f %10s %10s  %s\n", "end", end, "-", "-",
               "exec to this report (10 ms ticks); the process exits after it");
}

/* Reads all of standard input (INPUT -), at most cap bytes (the memory budget). */
static int read_stdin(uint64_t cap, uint8_t **data, size_t *size, cli_err *e)
{
    size_t n = 0, room = 1 << 16;
    uint8_t *p = malloc(room);
    while (p) {
        const size_t got = fread(p + n, 1, room - n, stdin);
        n += got;
        if (got == 0)
            break;
        if (n == room) {
            if ((uint64_t)room >= cap) {
                free(p);
                return cli_fail(e, CLI_EXIT_INPUT, "-",
                                "standard input is over %llu bytes (the memory limit)",
                                (unsigned long long)cap);
            }
            uint8_t *q = realloc(p, room * 2);
            if (!q)
                free(p);
            p = q;
            room *= 2;
        }
    }
    if (!p)
        return cli_fail(e, CLI_EXIT_INTERNAL, "-", "out of memory");
    if (ferror(stdin)) {
        free(p);
        return cli_fail(e, CLI_EXIT_INPUT, "-", "read error: %s", strerror(errno));
    }
    *data = p;
    *size = n;
    return CLI_EXIT_OK;
}

/* OUTPUT -: writes size bytes to standard output when `emit` (the last
 * --repeat run). */
static ic_status emit_stdout(const void *data, size_t size, int emit, char *buf, size_t buflen)
{
    if (emit && (fwrite(data, 1, size, stdout) != size || fflush(stdout) != 0)) {
        snprintf(buf, buflen, "write error: %s", strerror(errno));
        return IC_ERR_IO;
    }
    return IC_OK;
}

/* OUTPUT -: encodes dst in memory as the file `name` ("x.<format>") would be
 * and, when `emit`, writes it to standard output. */
static ic_status write_stdout(const ic_image *dst, const char *name, const ic_save_options *so,
                              int emit, char *buf, size_t buflen)
{
    uint8_t *data = NULL;
    size_t size = 0;
    ic_status s = cli_noted(ic_image_encode(dst, name, so, &data, &size), buf, buflen);
    if (s == IC_OK)
        s = emit_stdout(data, size, emit, buf, buflen);
    free(data);
    return s;
}

/* One image at a time: its JPEG encode may take every core (--threads N
 * caps it), as its filter does. The batch keeps one image per core. */
static int save_threads(const cli_options *o)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores > 1 ? (cores < 4096 ? (int)cores : 4096) : 1;
    if (o->ctx.threads > 0 && o->ctx.threads < n)
        n = o->ctx.threads;
    return n;
}

int cli_run_filter(const cli_options *o, cli_err *e)
{
    ic_kernel k;
    ic_context *ctx = NULL;
    ic_gpu_codec *codec = NULL; /* NULL: every file on the host path */
    uint8_t *bytes = NULL;      /* the input file */
    size_t nbytes = 0;
    int gpu_used = 0;
    cli_warm warm; /* the context and codec made while the input decodes */
    memset(&warm, 0, sizeof warm);
    ic_image src, dst;
    /* The ICC profile and EXIF go from the input to the output (README "Metadata"). */
    ic_metadata meta;
    memset(&meta, 0, sizeof meta);
    uint8_t *in_data = NULL; /* INPUT - */
    size_t in_size = 0;
    double *samples[ST_COUNT] = {NULL};
    memset(&k, 0, sizeof k);
    memset(&src, 0, sizeof src);
    memset(&dst, 0, sizeof dst);
    char buf[256] = "";
    int code;

    /* Cheap checks first: a usage error in the kernel text, then the output. */
    if (o->kernel_text && (code = cli_get_kernel(o, &k, e)) != CLI_EXIT_OK)
        return code;
    const int to_stdout = strcmp(o->output, "-") == 0;
    ic_format out_fmt = IC_FMT_UNKNOWN;
    char stdout_name[32] = ""; /* OUTPUT -: the name whose extension picks the format */
    if (to_stdout) {
        snprintf(stdout_name, sizeof stdout_name, "x.%s", o->format);
        out_fmt = ic_format_from_path(stdout_name);
        if (!ic_format_supported(out_fmt)) {
            code = cli_fail(e, CLI_EXIT_OUTPUT, "-",
                            "%s support was not built into this imgconv (see --formats)",
                            ic_format_name(out_fmt));
            goto done;
        }
        if (isatty(STDOUT_FILENO)) {
            code = cli_fail(e, CLI_EXIT_OUTPUT, "-",
                            "standard output is a terminal; redirect it to a file or a pipe");
            goto done;
        }
    } else if ((code = cli_check_output(o->output, o->input, e)) != CLI_EXIT_OK) {
        goto done;
    }
    /* INPUT - is read once, then decoded from memory on every --repeat run. */
    if (strcmp(o->input, "-") == 0 &&
        (code = read_stdin(o->max_memory ? o->max_memory : ic_default_max_memory(), &in_data,
                           &in_size, e)) != CLI_EXIT_OK)
        goto done;
    if (o->kernel_file && (code = cli_get_kernel(o, &k, e)) != CLI_EXIT_OK)
        goto done;

    ic_params p = o->params;
    p.bias = (float)((double)p.bias + k.offset);

    for (int st = 0; st < ST_COUNT; st++) {
        samples[st] = calloc((size_t)o->repeat, sizeof(double));
        if (!samples[st]) {
            code = cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
            goto done;
        }
    }

    ic_status s = IC_OK;
    once_times once = {since_exec_ms(), 0, 0, 0, 0, 0, 0};

    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.channels = o->channels;
    lo.layout = o->layout;
    lo.max_pixels = o->max_pixels;
    lo.max_memory = o->max_memory;
    lo.metadata = &meta;
    int damaged = 0;
    lo.accept_damaged = o->accept_damaged;
    lo.damaged = &damaged;
    ic_save_options so;
    memset(&so, 0, sizeof so);
    so.quality = o->quality;
    so.lossless = o->lossless;
    so.compression = o->compression;
    so.metadata = &meta;
    so.threads = save_threads(o);

    for (int run = 0; run < o->repeat; run++) {
        double a = cli_now_ms();
        buf[0] = '\0';
        /* INPUT - was read once into in_data; a file is read on every run. */
        ic_metadata_free(&meta); /* the previous run's */
        if (in_data) {
            s = IC_OK;
        } else {
            free(bytes);
            s = cli_read_file(o->input, o->max_memory, &lo, &bytes, &nbytes, buf, sizeof buf);
        }
        const uint8_t *ib = in_data ? in_data : bytes;
        const size_t ibn = in_data ? in_size : nbytes;
        /* The input is decoded on the CPU. On the first run, once its header
         * has passed the limits (cli_warm_header), a second thread creates the
         * context - a CUDA context takes ~0.2 s - and, when a JPEG goes to a
         * JPEG, the GPU codec, and warms the filter up, all while this thread
         * decodes the body: a refused file (a decompression bomb) costs no
         * CUDA initialisation, and an accepted one pays for the start-up and
         * the decode at once instead of one after the other. One image is
         * therefore not decoded by nvJPEG: the hardware decoder's set-up costs
         * more than it saves on one file (batches, -o, decode on the GPU), and
         * nor is it encoded by nvJPEG unless --repeat runs it several times. */
        const int jpeg = s == IC_OK && ibn >= 3 && ib[0] == 0xFF && ib[1] == 0xD8 && ib[2] == 0xFF;
        ic_load_options lr = lo;
        if (!ctx) {
            warm.backend = o->backend;
            warm.opts = &o->ctx;
            /* The GPU codec only when it encodes the image several times
             * (--repeat): nvJPEG's set-up (its default handle and an encoder,
             * ~0.65 s on the H100 machine; jpeg-single at 7700942: 1.13 s with
             * it, 0.48 s without) costs several times the CPU encode it
             * replaces once (~0.11 s for 24 MP). Batches (-o) take it. */
            warm.want_codec = jpeg && !o->cpu_codec && o->repeat > 1 &&
                              (to_stdout ? out_fmt : ic_format_from_path(o->output)) == IC_FMT_JPEG;
            warm.k = &k;
            warm.p = &p;
            warm.channels = o->channels;
            warm.layout = o->layout;
            lr.header_ok = cli_warm_header;
            lr.header_ok_user = &warm;
        }
        if (s == IC_OK)
            s = cli_noted(ic_image_decode(&src, ib, ibn, &lr), buf, sizeof buf);
        double b = cli_now_ms();
        if (s != IC_OK) {
            code = cli_fail(e, cli_exit_for_input(s), o->input, "%s", reason(buf, s));
            goto done;
        }
        if (damaged && run == 0)
            cli_damaged_notice(o->input);
        if (!ctx) {
            cli_warm_join(&warm);
            once.wait_ms = cli_now_ms() - b;
            a += once.wait_ms; /* the load stage does not include the start-up */
            b += once.wait_ms;
            once.init_ms = warm.init_ms;
            once.codec_ms = warm.codec ? warm.codec_ms : 0; /* tried on a CPU backend: ~0 */
            once.warm_ms = warm.warm_ms;
            once.background = warm.threaded;
            if (warm.st != IC_OK) {
                char what[160];
                snprintf(what, sizeof what, "backend %s", o->backend);
                const char *why = reason(warm.err, warm.st);
                code = cli_fail(e, cli_exit_for_backend(warm.st), what, "%s%s", why,
                                strstr(why, "--list-backends") ? "" : " (see --list-backends)");
                goto done;
            }
            if (warm.codec_st != IC_OK && warm.codec_st != IC_ERR_UNSUPPORTED) {
                char what[160];
                snprintf(what, sizeof what, "backend %s", ic_context_backend(warm.ctx));
                code = cli_fail(e, cli_exit_for_backend(warm.codec_st), what, "GPU codec: %s",
                                reason(warm.codec_err, warm.codec_st));
                goto done;
            }
            ctx = warm.ctx; /* taken: cli_warm_finish leaves them */
            codec = warm.codec;
            warm.ctx = NULL;
            warm.codec = NULL;
        }
        /* A codec exists only for JPEG -> JPEG: the filter writes into its
         * device buffer and nvJPEG encodes from there - unless the input
         * carries EXIF or an ICC profile, which nvJPEG cannot write and the
         * CPU writer keeps (README "Metadata"). */
        const int on_gpu = codec != NULL && !meta.exif && !meta.icc;
        if (run == 0 && o->explain)
            print_plan(o, ctx, &k, &src, &p);

        if ((code = cli_check_memory(o, ctx, &src, &k, o->input, e)) != CLI_EXIT_OK)
            goto done;
        if (on_gpu)
            s = cli_noted(ic_gpu_codec_output(codec, 0, &src, &dst), buf, sizeof buf);
        else
            s = ic_image_create_type(&dst, src.width, src.height, src.channels, o->layout,
                                     src.type);
        if (s != IC_OK) {
            code = cli_fail(e, on_gpu ? cli_exit_for_backend(s) : CLI_EXIT_INTERNAL, o->input,
                            "cannot allocate the output image: %s", reason(on_gpu ? buf : NULL, s));
            goto done;
        }
        s = ic_convolve(ctx, &src, &dst, &k, &p);
        if (s != IC_OK) {
            char what[160];
            snprintf(what, sizeof what, "backend %s", ic_context_backend(ctx));
            const char *why = ic_last_error();
            code = cli_fail(e, cli_exit_for_backend(s), what, "%s", reason(why, s));
            goto done;
        }
        ic_timing t = ic_context_timing(ctx);

        double c = cli_now_ms();
        buf[0] = '\0';
        const int emit = run + 1 == o->repeat;
        if (on_gpu) {
            ic_bytes enc;
            s = cli_noted(
                ic_gpu_encode(codec, 0, &dst, to_stdout ? stdout_name : o->output, &so, &enc), buf,
                sizeof buf);
            if (s == IC_OK)
                s = to_stdout
                        ? emit_stdout(enc.data, enc.size, emit, buf, sizeof buf)
                        : cli_noted(ic_save_bytes(o->output, enc.data, enc.size), buf, sizeof buf);
        } else {
            s = to_stdout ? write_stdout(&dst, stdout_name, &so, emit, buf, sizeof buf)
                          : cli_noted(ic_image_save(&dst, o->output, &so), buf, sizeof buf);
        }
        double d = cli_now_ms();
        if (s != IC_OK) {
            code = cli_fail(e, s == IC_ERR_DEVICE ? CLI_EXIT_DEVICE : cli_exit_for_output(s),
                            o->output, "%s", reason(buf, s));
            goto done;
        }
        if (emit)
            cli_depth_notice(o->output, to_stdout ? stdout_name : o->output, &dst);

        samples[ST_LOAD][run] = b - a;
        samples[ST_UPLOAD][run] = t.upload_ms;
        samples[ST_KERNEL][run] = t.kernel_ms;
        samples[ST_DOWNLOAD][run] = t.download_ms;
        samples[ST_FILTER][run] = t.total_ms;
        samples[ST_SAVE][run] = d - c;
        samples[ST_TOTAL][run] = d - a;
        if (run + 1 < o->repeat) {
            ic_image_free(&src); /* device images are the codec's: only forgotten */
            ic_image_free(&dst);
        }
        if (run == 0)
            gpu_used = on_gpu;
    }
    if (o->time) {
        /* The teardown is timed too (context destruction is not free). */
        char backend[64], engine[160];
        snprintf(backend, sizeof backend, "%s", ic_context_backend(ctx));
        snprintf(engine, sizeof engine, "%s",
                 gpu_used ? "cpu decode (during the GPU start-up), nvjpeg encode"
                          : "cpu (decoded and encoded on the host)");
        const ic_image shape = src; /* a device image's pointer dies with the codec */
        const double t0 = cli_now_ms();
        ic_gpu_codec_free(codec);
        ic_context_free(ctx);
        once.cleanup_ms = cli_now_ms() - t0;
        codec = NULL;
        ctx = NULL;
        print_times(o, backend, &k, &shape, &once, samples, o->repeat);
        printf("  codec      %s\n", engine);
    }
    code = CLI_EXIT_OK;

done:
    for (int st = 0; st < ST_COUNT; st++)
        free(samples[st]);
    ic_metadata_free(&meta);
    free(in_data);
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_gpu_codec_free(codec);
    free(bytes);
    ic_context_free(ctx);
    cli_warm_finish(&warm); /* what a failed run left on the thread */
    ic_kernel_free(&k);
    return code;
}
