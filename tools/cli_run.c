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
#include "cli_auto.h"
#include "cli_files.h"
#include "cli_json.h"
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

/* "an extension of a format built in: .pnm, .png, ..." from the format
 * table, so that it lists what this build writes. */
static void format_list(char *buf, size_t len)
{
    size_t n = (size_t)snprintf(buf, len, "use the extension of a format built in:");
    for (int f = IC_FMT_UNKNOWN + 1; ic_format_depth((ic_format)f) > 0 && n < len; f++)
        if (ic_format_supported((ic_format)f))
            n += (size_t)snprintf(buf + n, len - n, "%s .%s", f == IC_FMT_UNKNOWN + 1 ? "" : ",",
                                  ic_format_name((ic_format)f));
    if (n < len)
        snprintf(buf + n, len - n, " (see --formats)");
}

int cli_check_output(const char *output, const char *input, cli_err *e)
{
    struct stat so;
    if (stat(output, &so) == 0 && S_ISDIR(so.st_mode))
        return cli_fail(e, CLI_EXIT_OUTPUT, output,
                        "is a directory; to filter files into it, use -o %s INPUT...", output);
    ic_format f = ic_format_from_path(output);
    if (f == IC_FMT_UNKNOWN) {
        char list[160];
        format_list(list, sizeof list);
        return cli_fail(e, CLI_EXIT_OUTPUT, output, "unknown output format: %s", list);
    }
    if (!ic_format_supported(f))
        return cli_fail(e, CLI_EXIT_OUTPUT, output,
                        "%s support was not built into this imgconv (see --formats)",
                        ic_format_name(f));
    return cli_check_output_path(output, input, e);
}

/* 1 when the file at path starts as an image of a format built in (its first
 * bytes), so that replacing it loses a picture. */
static int holds_image(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return 0;
    unsigned char b[12] = {0};
    const size_t n = fread(b, 1, sizeof b, f);
    fclose(f);
    const ic_format fmt = cli_format_sniff(b, n);
    return fmt != IC_FMT_UNKNOWN && ic_format_supported(fmt);
}

/* Single mode: OUTPUT may not be standard input's file (INPUT -), and an
 * existing image is replaced only with --overwrite. */
int cli_check_replace(const cli_options *o, cli_err *e)
{
    struct stat so, si;
    if (stat(o->output, &so) != 0)
        return CLI_EXIT_OK;
    if (strcmp(o->input, "-") == 0 && fstat(STDIN_FILENO, &si) == 0 && si.st_dev == so.st_dev &&
        si.st_ino == so.st_ino)
        return cli_fail(e, CLI_EXIT_OUTPUT, o->output,
                        "is the same file as standard input; refusing to overwrite it");
    if (!o->overwrite && S_ISREG(so.st_mode) && holds_image(o->output))
        return cli_fail(e, CLI_EXIT_OUTPUT, o->output,
                        "already exists and holds an image; use --overwrite to replace it");
    return CLI_EXIT_OK;
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

const char *cli_size_text(uint64_t bytes, char *buf, size_t len)
{
    static const char *const units[] = {"KiB", "MiB", "GiB", "TiB"};
    if (bytes < 1024) {
        snprintf(buf, len, "%llu bytes", (unsigned long long)bytes);
        return buf;
    }
    double v = (double)bytes / 1024.0;
    size_t u = 0;
    while (v >= 1024.0 && u + 1 < sizeof units / sizeof units[0]) {
        v /= 1024.0;
        u++;
    }
    snprintf(buf, len, "%.1f %s", v, units[u]);
    return buf;
}

int cli_check_memory(const cli_options *o, const ic_context *ctx, const ic_image *src,
                     const ic_kernel *k, const char *file, cli_err *e)
{
    const uint64_t need = ic_convolve_bytes(ctx, src, k, o->layout);
    if (need <= o->max_memory)
        return CLI_EXIT_OK;
    char a[32], b[32];
    return cli_fail(e, CLI_EXIT_INPUT, file,
                    "filtering this %dx%d image needs %s, over the memory limit %s "
                    "(raise it with --max-memory)",
                    src->width, src->height, cli_size_text(need, a, sizeof a),
                    cli_size_text(o->max_memory, b, sizeof b));
}

uint64_t cli_work_limit(const cli_options *o)
{
    if (o->max_work_given)
        return o->max_work;
    /* auto before its choice: none where a GPU may be chosen, found without
     * loading the CUDA driver (the exact bound follows the decode) */
    if (strcmp(o->backend, "auto") == 0)
        return cli_auto_gpu_possible() ? 0 : IC_DEFAULT_MAX_WORK;
    return strncmp(o->backend, "cuda", 4) == 0 ? 0 : IC_DEFAULT_MAX_WORK;
}

/* cli_check_work; `about` is "about", or "at least" when the channels are
 * not known yet. */
static int work_fail(const cli_options *o, int width, int height, int channels, const ic_kernel *k,
                     const char *about, cli_err *e)
{
    const uint64_t limit = cli_work_limit(o);
    const uint64_t work = ic_convolve_work(width, height, channels, k);
    if (limit == 0 || work <= limit)
        return CLI_EXIT_OK;
    return cli_fail(e, CLI_EXIT_INPUT, o->input,
                    "filtering this %dx%d image with a %dx%d kernel needs %s %.3g "
                    "multiply-adds, over the work limit %.3g (raise it with --max-work, "
                    "0 for no limit)",
                    width, height, k->width, k->height, about, (double)work, (double)limit);
}

int cli_check_work(const cli_options *o, int width, int height, int channels, const ic_kernel *k,
                   const char *file, cli_err *e)
{
    const int code = work_fail(o, width, height, channels, k, "about", e);
    if (code != CLI_EXIT_OK)
        snprintf(e->file, sizeof e->file, "%s", file);
    return code;
}

/* The pixel limit that keeps the filter within --max-work for an image of at
 * least `channels` channels, so that the decoder refuses a larger image from
 * its header; o->max_pixels when that is lower. */
uint64_t cli_work_pixel_cap(const cli_options *o, const ic_kernel *k, int channels)
{
    const uint64_t limit = cli_work_limit(o);
    /* the rate of a large image: the FFT's work a pixel falls as the image
     * grows, so that no image within the limit is refused from its header
     * (without the FFT the rate is the same at any size) */
    uint64_t per_pixel = ic_convolve_work(8192, 8192, channels, k) / (8192ull * 8192ull);
    if (per_pixel == 0)
        per_pixel = ic_convolve_work(1, 1, channels, k);
    if (limit == 0 || per_pixel == 0)
        return o->max_pixels;
    const uint64_t cap = limit / per_pixel;
    return cap < 1 ? 1 : cap < o->max_pixels ? cap : o->max_pixels;
}

/* After a decode refused as too large under the pixel cap of --max-work:
 * the work message when the image was within --max-pixels. */
int cli_work_refusal(const cli_options *o, const ic_kernel *k, int channels, const char *msg,
                     cli_err *e)
{
    unsigned long long w = 0, h = 0;
    if (sscanf(msg, "image %llux%llu exceeds", &w, &h) == 2) {
        if (w > IC_MAX_DIM || h > IC_MAX_DIM || w * h > o->max_pixels)
            return CLI_EXIT_OK; /* over the size or pixel limit itself: its own message */
        return work_fail(o, (int)w, (int)h, channels, k, o->channels ? "about" : "at least", e);
    }
    const uint64_t cap = cli_work_pixel_cap(o, k, channels);
    return cli_fail(e, CLI_EXIT_INPUT, o->input,
                    "image over %llu pixels: filtering it with a %dx%d kernel needs more than "
                    "the work limit %.3g multiply-adds (raise it with --max-work, 0 for no limit)",
                    (unsigned long long)cap, k->width, k->height, (double)cli_work_limit(o));
}

int cli_check_image(const cli_options *o, const ic_context *ctx, const ic_image *img,
                    const ic_kernel *k, const char *file, cli_err *e)
{
    const unsigned vmax = ic_sample_max(img->type);
    if (img->type != IC_F32 && o->params.border_value > (float)vmax) /* floats take any value */
        return cli_fail(e, CLI_EXIT_USAGE, file,
                        "--border-value %g: over %u, the largest sample of this %d-bit image",
                        (double)o->params.border_value, vmax, img->type == IC_U16 ? 16 : 8);
    int code = cli_check_work(o, img->width, img->height, img->channels, k, file, e);
    return code != CLI_EXIT_OK ? code : cli_check_memory(o, ctx, img, k, file, e);
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
    if (s == IC_OK && k->warning[0])
        fprintf(stderr, "imgconv: warning: %s\n", k->warning);
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

static void print_plan(const cli_options *o, ic_context *ctx, const ic_kernel *ks, int nk,
                       const ic_image *src, const ic_params *p, const cli_auto *pick)
{
    const ic_kernel *k = &ks[0];
    printf("plan:\n");
    printf("  input     %s: %dx%d, %d channel%s of %d bits, filtered in %s layout\n", o->input,
           src->width, src->height, src->channels, src->channels == 1 ? "" : "s",
           cli_type_bits(src->type), o->layout == IC_SOA ? "planar (soa)" : "interleaved (aos)");
    printf("  kernel    %s (%dx%d), divisor %g, weights sum %g%s\n", k->name, k->width, k->height,
           k->divisor, ic_kernel_sum(k), k->magnitude ? ", with its transpose as a magnitude" : "");
    for (int i = 1; i < nk; i++)
        printf("  then      %s (%dx%d), divisor %g, weights sum %g%s\n", ks[i].name, ks[i].width,
               ks[i].height, ks[i].divisor, ic_kernel_sum(&ks[i]),
               ks[i].magnitude ? ", with its transpose as a magnitude" : "");
    ic_factors f;
    memset(&f, 0, sizeof f);
    ic_status s = ic_kernel_factor(k, 0.0, 0, &f);
    long full = (long)k->width * k->height;
    if (s != IC_OK && k->blur && !k->coef)
        printf("  factors   rank 1 by construction (a %s past %d: its shape, no weights)\n",
               k->blur == IC_BLUR_BOX ? "box" : "gaussian", IC_MAX_KERNEL);
    else if (s != IC_OK)
        printf("  factors   not computed (%s)\n", ic_status_str(s));
    else if (f.rank == 0)
        printf("  factors   not separable at a useful rank: %ld multiply-adds per sample\n", full);
    else
        printf("  factors   rank %d (max error %.2g): %ld multiply-adds per sample when "
               "separated, %ld direct\n",
               f.rank, f.max_err, (long)f.rank * (k->width + k->height), full);
    ic_factors_free(&f);
    printf("  operation %s%s\n",
           p->correlate ? "correlation (kernel not flipped)" : "convolution (kernel flipped)",
           p->abs ? ", |sum|" : "");
    if (p->border == IC_BORDER_CONSTANT)
        printf("  border    constant, value %g\n", (double)p->border_value);
    else
        printf("  border    %s\n", ic_border_name(p->border));
    printf("  bias      %g%s\n", (double)p->bias, k->offset != 0.0 ? " (incl. kernel offset)" : "");
    printf("  alpha     %s\n", alpha_plan(o, k, src->channels));
    printf("  backend   %s%s", ic_context_backend(ctx), pick->chosen ? " (auto)" : "");
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
    if (pick->chosen)
        printf("  auto      %s\n", pick->reason);
    /* The backend's own plan (method, launch shape, predicted time). */
    char plan[2048] = "";
    const ic_status ps = nk > 1 ? ic_chain_explain(ctx, src, ks, nk, p, plan, sizeof plan)
                                : ic_plan_explain(ctx, src, k, p, plan, sizeof plan);
    if (ps == IC_OK && plan[0]) {
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
    const int bits = cli_type_bits(src->type), keeps = ic_format_depth(of);
    printf("  output    %s (%s, %d bits)\n", o->output, ic_format_name(of),
           of == IC_FMT_PFM                                        ? 32
           : of == IC_FMT_NPY || (of == IC_FMT_TIFF && bits == 32) ? bits
           : bits > keeps                                          ? keeps
                                                                   : bits);
}

void cli_depth_notice(const char *shown, const char *name, const ic_image *img)
{
    const ic_format f = ic_format_from_path(name);
    if (img->type == IC_F32) { /* TIFF, PFM and npy keep floats */
        if (f != IC_FMT_TIFF && f != IC_FMT_PFM && f != IC_FMT_NPY)
            fprintf(stderr, "imgconv: %s: float samples clamped to 0..1 and written as %d-bit\n",
                    shown, ic_format_depth(f));
        return;
    }
    if (img->type != IC_U16 || ic_format_depth(f) >= 16)
        return;
    fprintf(stderr, "imgconv: %s: 16-bit samples written as 8-bit (%s holds 8 bits)\n", shown,
            f == IC_FMT_JPEG   ? "JPEG"
            : f == IC_FMT_WEBP ? "WebP"
                               : ic_format_name(f));
}

/* Sample (x, y, c) of a host image, as a pointer to its first byte. */
static uint8_t *sample_at(const ic_image *img, int x, int y, int c)
{
    const size_t es = ic_sample_size(img->type);
    if (img->layout == IC_SOA)
        return img->data + ((size_t)c * (size_t)img->height + (size_t)y) * img->pitch +
               (size_t)x * es;
    return img->data + (size_t)y * img->pitch + ((size_t)x * (size_t)img->channels + c) * es;
}

void cli_flatten_alpha(const cli_options *o, ic_image *img, const char *name, const char *shown)
{
    if ((img->channels != 2 && img->channels != 4) || img->memory != IC_MEM_HOST ||
        ic_format_from_path(name) != IC_FMT_JPEG)
        return;
    if (!o->background_given) {
        if (!o->quiet)
            fprintf(stderr,
                    "imgconv: warning: %s: alpha dropped (JPEG holds no transparency); "
                    "--background COLOUR flattens the image onto a colour\n",
                    shown);
        return;
    }
    const double max = ic_sample_max(img->type);
    const uint8_t *bg = o->background;
    const double grey = 0.299 * bg[0] + 0.587 * bg[1] + 0.114 * bg[2];
    const int nc = img->channels - 1;
    for (int y = 0; y < img->height; y++)
        for (int x = 0; x < img->width; x++) {
            const uint8_t *pa = sample_at(img, x, y, nc);
            const double a = (img->type == IC_F32   ? (double)*(const float *)(const void *)pa
                              : img->type == IC_U16 ? (double)*(const uint16_t *)(const void *)pa
                                                    : *pa) /
                             max;
            for (int c = 0; c < nc; c++) {
                uint8_t *pc = sample_at(img, x, y, c);
                const double b = (nc == 1 ? grey : bg[c]) * (max / 255.0);
                if (img->type == IC_F32) {
                    float *q = (float *)(void *)pc;
                    *q = (float)(*q * a + b * (1.0 - a));
                } else if (img->type == IC_U16) {
                    uint16_t *q = (uint16_t *)(void *)pc;
                    *q = (uint16_t)lrint(*q * a + b * (1.0 - a));
                } else {
                    *pc = (uint8_t)lrint(*pc * a + b * (1.0 - a));
                }
            }
        }
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
int cli_read_stdin(uint64_t cap, uint8_t **data, size_t *size, cli_err *e)
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

/* One image at a time: its JPEG encode and decode and its PNG encode may
 * take every core (--threads N caps them), as its filter does. The batch
 * keeps one image per core. */
int cli_save_threads(const cli_options *o)
{
    const long cores = sysconf(_SC_NPROCESSORS_ONLN);
    int n = cores > 1 ? (cores < 4096 ? (int)cores : 4096) : 1;
    if (o->ctx.threads > 0 && o->ctx.threads < n)
        n = o->ctx.threads;
    return n;
}

/* What one filtering command holds from its set-up to its tear-down. */
typedef struct run_state {
    ic_kernel k;
    ic_kernel chain[CLI_MAX_CHAIN]; /* a chain: chain[0] is k, chain[1..] the later -k */
    ic_params p;                    /* o->params with the kernel's .mat offset */
    ic_context *ctx;                /* taken from warm once the first load is done */
    ic_gpu_codec *codec;            /* NULL: every file on the host path */
    cli_warm warm;                  /* the context and codec made while the input decodes */
    uint8_t *bytes;                 /* the input file, read on every run */
    size_t nbytes;
    uint8_t *in_data; /* INPUT -, read once */
    size_t in_size;
    ic_image src, dst;
    ic_metadata meta; /* ICC and EXIF, from the input to the output
                       * (docs/definitions.md#metadata) */
    ic_load_options lo;
    ic_save_options so;
    int damaged;               /* --accept-damaged: the decoder passed damaged data */
    int damaged_noted;         /* its warning was printed */
    int to_stdout;             /* OUTPUT - */
    ic_format out_fmt;         /* OUTPUT -: the format of --format */
    char stdout_name[32];      /* OUTPUT -: the name whose extension picks the format */
    int gpu_used;              /* the first run encoded on the GPU */
    double *samples[ST_COUNT]; /* per-stage times of the --repeat runs */
    cli_options ro;            /* the options with --backend auto resolved (pick) */
    cli_auto pick;
    once_times once;
    char buf[256]; /* the library's last message */
} run_state;

/* OUTPUT -: the format of --format must be built in, and standard output
 * must not be a terminal. */
static int check_stdout(run_state *r, const cli_options *o, cli_err *e)
{
    snprintf(r->stdout_name, sizeof r->stdout_name, "x.%s", o->format);
    r->out_fmt = ic_format_from_path(r->stdout_name);
    if (!ic_format_supported(r->out_fmt))
        return cli_fail(e, CLI_EXIT_OUTPUT, "-",
                        "%s support was not built into this imgconv (see --formats)",
                        ic_format_name(r->out_fmt));
    if (isatty(STDOUT_FILENO))
        return cli_fail(e, CLI_EXIT_OUTPUT, "-",
                        "standard output is a terminal; redirect it to a file or a pipe");
    return CLI_EXIT_OK;
}

/* A later kernel of a chain: bad text is a usage error, an unreadable or
 * malformed @FILE an input error, as cli_get_kernel says for the first. */
static int chain_kernel(const char *text, ic_kernel *k, cli_err *e)
{
    char buf[256] = "";
    const ic_status s = cli_noted(ic_kernel_parse(k, text), buf, sizeof buf);
    if (s == IC_OK)
        return CLI_EXIT_OK;
    if (text[0] == '@')
        return cli_fail(e, cli_exit_for_input(s), text + 1, "%s%s",
                        s == IC_ERR_KERNEL ? "bad kernel file: " : "", reason(buf, s));
    return cli_fail(e, s == IC_ERR_KERNEL ? CLI_EXIT_USAGE : CLI_EXIT_INTERNAL, NULL,
                    "--kernel '%.60s': %s", text, reason(buf, s));
}

/* Everything checked and read before the first run; cheap checks first (the
 * kernel text, then the output), so a bad request costs nothing. */
static int run_setup(run_state *r, const cli_options *o, cli_err *e)
{
    int code;
    if (o->kernel_text && (code = cli_get_kernel(o, &r->k, e)) != CLI_EXIT_OK)
        return code;
    r->to_stdout = strcmp(o->output, "-") == 0;
    code = r->to_stdout ? check_stdout(r, o, e) : cli_check_output(o->output, o->input, e);
    if (code == CLI_EXIT_OK && !r->to_stdout)
        code = cli_check_replace(o, e);
    if (code != CLI_EXIT_OK)
        return code;
    /* INPUT - is read once, then decoded from memory on every --repeat run. */
    if (strcmp(o->input, "-") == 0 &&
        (code = cli_read_stdin(o->max_memory ? o->max_memory : ic_max_memory_default(), &r->in_data,
                               &r->in_size, e)) != CLI_EXIT_OK)
        return code;
    if (o->kernel_file && (code = cli_get_kernel(o, &r->k, e)) != CLI_EXIT_OK)
        return code;
    r->p = o->params;
    r->p.bias = (float)((double)r->p.bias + r->k.offset);
    for (int i = 1; i < o->nchain; i++) {
        if ((code = chain_kernel(o->chain[i], &r->chain[i], e)) != CLI_EXIT_OK)
            return code;
        r->p.bias = (float)((double)r->p.bias + r->chain[i].offset);
    }
    for (int st = 0; st < ST_COUNT; st++)
        if (!(r->samples[st] = calloc((size_t)o->repeat, sizeof(double))))
            return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    r->once.start_ms = since_exec_ms();

    r->lo.channels = o->channels;
    r->lo.layout = o->layout;
    /* A file too large for --max-work is refused from its header. */
    r->lo.max_pixels = cli_work_pixel_cap(o, &r->k, o->channels > 0 ? o->channels : 1);
    r->lo.max_memory = o->max_memory;
    r->lo.metadata = &r->meta;
    r->lo.accept_damaged = o->accept_damaged;
    r->lo.damaged = &r->damaged;
    r->lo.threads = cli_save_threads(o); /* a JPEG with restart markers decodes in parts */
    r->so.quality = o->quality;
    r->so.lossless = o->lossless;
    r->so.compression = o->compression;
    r->so.metadata = &r->meta;
    r->so.threads = cli_save_threads(o);
    return CLI_EXIT_OK;
}

/* The header hook's --backend auto: the job is this one image, its start-up
 * overlapped with its decode. */
static void run_choose(void *user, int width, int height)
{
    run_state *r = user;
    const uint8_t *b = r->in_data ? r->in_data : r->bytes;
    const size_t n = r->in_data ? r->in_size : r->nbytes;
    const ic_format out = r->to_stdout ? r->out_fmt : ic_format_from_path(r->ro.output);
    cli_auto_choose(&r->ro, &r->k, 1, width, height, cli_auto_png_channels(b, n),
                    cli_format_sniff(b, n), out, r->warm.want_codec, 1, &r->pick);
    r->ro.backend = r->pick.backend;
    r->warm.backend = r->pick.backend;
}

/* Reads and decodes INPUT into r->src. On the first run, once the header has
 * passed the limits (cli_warm_header), a second thread creates the context
 * (a CUDA context takes ~0.2 s) and, when a JPEG goes to a JPEG, the GPU
 * codec, and warms the filter up, while this thread decodes the body: a
 * refused file costs no CUDA start-up, and an accepted one pays for the
 * start-up and the decode at once. One image is not decoded by nvJPEG: the
 * hardware decoder's set-up costs more than it saves on one file. */
static int run_load(run_state *r, const cli_options *o, cli_err *e)
{
    ic_status s = IC_OK;
    r->buf[0] = '\0';
    ic_metadata_free(&r->meta); /* the previous run's */
    if (!r->in_data) {
        free(r->bytes);
        s = cli_read_file(o->input, o->max_memory, &r->lo, &r->bytes, &r->nbytes, r->buf,
                          sizeof r->buf);
    }
    const uint8_t *ib = r->in_data ? r->in_data : r->bytes;
    const size_t ibn = r->in_data ? r->in_size : r->nbytes;
    const int jpeg = s == IC_OK && ibn >= 3 && ib[0] == 0xFF && ib[1] == 0xD8 && ib[2] == 0xFF;
    ic_load_options lr = r->lo;
    if (!r->ctx) {
        cli_warm *w = &r->warm;
        w->backend = o->backend;
        w->opts = &o->ctx;
        /* The GPU codec only when it encodes the image several times: its
         * set-up costs several times the one CPU encode it would replace. */
        w->want_codec = jpeg && !o->cpu_codec && o->repeat > 1 &&
                        (r->to_stdout ? r->out_fmt : ic_format_from_path(o->output)) == IC_FMT_JPEG;
        w->k = &r->k;
        w->p = &r->p;
        w->channels = o->channels;
        w->layout = o->layout;
        lr.header_ok = cli_warm_header;
        lr.header_ok_user = w;
        if (strcmp(o->backend, "auto") == 0) {
            w->choose = run_choose;
            w->choose_user = r;
        }
    }
    if (s == IC_OK)
        s = cli_noted(ic_image_decode(&r->src, ib, ibn, &lr), r->buf, sizeof r->buf);
    if (s == IC_ERR_TOO_LARGE && lr.max_pixels < o->max_pixels) {
        const int code = cli_work_refusal(o, &r->k, o->channels > 0 ? o->channels : 1, r->buf, e);
        if (code != CLI_EXIT_OK)
            return code;
    }
    if (s != IC_OK)
        return cli_fail(e, cli_exit_for_input(s), o->input, "%s", reason(r->buf, s));
    if (r->damaged && !r->damaged_noted) {
        cli_damaged_notice(o->input);
        r->damaged_noted = 1;
    }
    /* the exact bound, with the decoded image's channels */
    return cli_check_work(o, r->src.width, r->src.height, r->src.channels, &r->k, o->input, e);
}

/* After the first load: waits for the start-up thread and takes its context
 * and codec. Returns the milliseconds waited through *waited. */
static int run_take_backend(run_state *r, const cli_options *o, double *waited, cli_err *e)
{
    const double t0 = cli_now_ms();
    cli_warm *w = &r->warm;
    cli_warm_join(w);
    *waited = cli_now_ms() - t0;
    r->once.wait_ms = *waited;
    r->once.init_ms = w->init_ms;
    r->once.codec_ms = w->codec ? w->codec_ms : 0; /* tried on a CPU backend: ~0 */
    r->once.warm_ms = w->warm_ms;
    r->once.background = w->threaded;
    char what[160];
    if (w->st != IC_OK) {
        snprintf(what, sizeof what, "backend %s", o->backend);
        const char *why = reason(w->err, w->st);
        return cli_fail(e, cli_exit_for_backend(w->st), what, "%s%s", why,
                        strstr(why, "--list-backends") ? "" : " (see --list-backends)");
    }
    if (w->codec_st != IC_OK && w->codec_st != IC_ERR_UNSUPPORTED) {
        snprintf(what, sizeof what, "backend %s", ic_context_backend(w->ctx));
        return cli_fail(e, cli_exit_for_backend(w->codec_st), what, "GPU codec: %s",
                        reason(w->codec_err, w->codec_st));
    }
    r->ctx = w->ctx; /* taken: cli_warm_finish leaves them */
    r->codec = w->codec;
    w->ctx = NULL;
    w->codec = NULL;
    return CLI_EXIT_OK;
}

/* Filters r->src into r->dst, a device buffer of the codec when on_gpu. */
static int run_convolve(run_state *r, const cli_options *o, int on_gpu, cli_err *e)
{
    int code = cli_check_image(o, r->ctx, &r->src, &r->k, o->input, e);
    if (code != CLI_EXIT_OK)
        return code;
    ic_status s;
    if (on_gpu)
        s = cli_noted(ic_gpu_codec_output(r->codec, 0, &r->src, &r->dst), r->buf, sizeof r->buf);
    else
        s = ic_image_create_type(&r->dst, r->src.width, r->src.height, r->src.channels, o->layout,
                                 r->src.type);
    if (s != IC_OK)
        return cli_fail(e, on_gpu ? cli_exit_for_backend(s) : CLI_EXIT_INTERNAL, o->input,
                        "cannot allocate the output image: %s", reason(on_gpu ? r->buf : NULL, s));
    if (o->nchain > 1) {
        r->chain[0] = r->k; /* borrowed: freed as r->k */
        s = ic_convolve_chain(r->ctx, &r->src, &r->dst, r->chain, o->nchain, &r->p);
    } else {
        s = ic_convolve(r->ctx, &r->src, &r->dst, &r->k, &r->p);
    }
    if (s != IC_OK) {
        char what[160];
        snprintf(what, sizeof what, "backend %s", ic_context_backend(r->ctx));
        return cli_fail(e, cli_exit_for_backend(s), what, "%s", reason(ic_last_error(), s));
    }
    return CLI_EXIT_OK;
}

/* Encodes r->dst (on the GPU when on_gpu) and writes OUTPUT, or standard
 * output when `emit` (the last run). */
static int run_save(run_state *r, const cli_options *o, int on_gpu, int emit, cli_err *e)
{
    ic_status s;
    char *buf = r->buf;
    const size_t len = sizeof r->buf;
    buf[0] = '\0';
    if (on_gpu) {
        ic_bytes enc;
        s = cli_noted(ic_gpu_codec_encode(r->codec, 0, &r->dst,
                                          r->to_stdout ? r->stdout_name : o->output, &r->so, &enc),
                      buf, len);
        if (s == IC_OK)
            s = r->to_stdout ? emit_stdout(enc.data, enc.size, emit, buf, len)
                             : cli_noted(ic_bytes_save(o->output, enc.data, enc.size), buf, len);
    } else {
        if (emit)
            cli_flatten_alpha(o, &r->dst, r->to_stdout ? r->stdout_name : o->output, o->output);
        s = r->to_stdout ? write_stdout(&r->dst, r->stdout_name, &r->so, emit, buf, len)
                         : cli_noted(ic_image_save(&r->dst, o->output, &r->so), buf, len);
    }
    if (s != IC_OK)
        return cli_fail(e, s == IC_ERR_DEVICE ? CLI_EXIT_DEVICE : cli_exit_for_output(s), o->output,
                        "%s", reason(buf, s));
    if (emit && !o->quiet)
        cli_depth_notice(o->output, r->to_stdout ? r->stdout_name : o->output, &r->dst);
    return CLI_EXIT_OK;
}

/* One run of --repeat: load, filter, save, with each stage's time. */
static int run_once(run_state *r, const cli_options *o, int run, cli_err *e)
{
    double a = cli_now_ms();
    int code = run_load(r, o, e);
    double b = cli_now_ms();
    if (code == CLI_EXIT_OK && !r->ctx) {
        double waited = 0;
        code = run_take_backend(r, o, &waited, e);
        a += waited; /* the load stage does not include the start-up */
        b += waited;
    }
    if (code != CLI_EXIT_OK)
        return code;
    /* The filter writes into the codec's device buffer and nvJPEG encodes
     * from there, unless the input carries EXIF or an ICC profile, which
     * nvJPEG cannot write and the CPU writer keeps (docs/definitions.md#metadata). */
    /* Magnitudes, |sum| and chains run on host images (docs/definitions.md#chains). */
    const int host_only = o->nchain > 1 || r->k.magnitude || o->params.abs;
    const int on_gpu = r->codec != NULL && !r->meta.exif && !r->meta.icc && !host_only;
    if (run == 0 && o->explain) {
        r->chain[0] = r->k;
        print_plan(o, r->ctx, r->chain, o->nchain > 1 ? o->nchain : 1, &r->src, &r->p, &r->pick);
    }
    if ((code = run_convolve(r, o, on_gpu, e)) != CLI_EXIT_OK)
        return code;
    const ic_timing t = ic_context_timing(r->ctx);
    const double c = cli_now_ms();
    if ((code = run_save(r, o, on_gpu, run + 1 == o->repeat, e)) != CLI_EXIT_OK)
        return code;
    const double d = cli_now_ms();

    r->samples[ST_LOAD][run] = b - a;
    r->samples[ST_UPLOAD][run] = t.upload_ms;
    r->samples[ST_KERNEL][run] = t.kernel_ms;
    r->samples[ST_DOWNLOAD][run] = t.download_ms;
    r->samples[ST_FILTER][run] = t.total_ms;
    r->samples[ST_SAVE][run] = d - c;
    r->samples[ST_TOTAL][run] = d - a;
    if (run + 1 < o->repeat) {
        ic_image_free(&r->src); /* device images are the codec's: only forgotten */
        ic_image_free(&r->dst);
    }
    if (run == 0)
        r->gpu_used = on_gpu;
    return CLI_EXIT_OK;
}

/* --time: frees the codec and context first, since their tear-down is timed
 * too, then prints the stages. */
static void run_report(run_state *r, const cli_options *o)
{
    char backend[64], engine[160];
    snprintf(backend, sizeof backend, "%s", ic_context_backend(r->ctx));
    snprintf(engine, sizeof engine, "%s",
             r->gpu_used ? "cpu decode (during the GPU start-up), nvjpeg encode"
                         : "cpu (decoded and encoded on the host)");
    const ic_image shape = r->src; /* a device image's pointer dies with the codec */
    const double t0 = cli_now_ms();
    ic_gpu_codec_free(r->codec);
    ic_context_free(r->ctx);
    r->once.cleanup_ms = cli_now_ms() - t0;
    r->codec = NULL;
    r->ctx = NULL;
    print_times(o, backend, &r->k, &shape, &r->once, r->samples, o->repeat);
    printf("  codec      %s\n", engine);
}

/* --json in single mode: what was written, on one line. */
static void run_json(const run_state *r, const cli_options *o, double ms)
{
    printf("{\"input\": ");
    cli_json_string(stdout, o->input, (size_t)-1);
    printf(", \"output\": ");
    cli_json_string(stdout, o->output, (size_t)-1);
    printf(", \"width\": %d, \"height\": %d, \"channels\": %d, \"bits\": %d, \"backend\": ",
           r->src.width, r->src.height, r->src.channels, cli_type_bits(r->src.type));
    cli_json_string(stdout, ic_context_backend(r->ctx), (size_t)-1);
    if (r->pick.chosen) {
        printf(", \"auto\": ");
        cli_json_string(stdout, r->pick.reason, (size_t)-1);
    }
    printf(", \"seconds\": %.3f}\n", ms / 1e3);
}

static void run_teardown(run_state *r)
{
    for (int st = 0; st < ST_COUNT; st++)
        free(r->samples[st]);
    ic_metadata_free(&r->meta);
    free(r->in_data);
    ic_image_free(&r->src);
    ic_image_free(&r->dst);
    ic_gpu_codec_free(r->codec);
    free(r->bytes);
    ic_context_free(r->ctx);
    cli_warm_finish(&r->warm); /* what a failed run left on the thread */
    ic_kernel_free(&r->k);
    for (int i = 1; i < CLI_MAX_CHAIN; i++)
        ic_kernel_free(&r->chain[i]);
}

int cli_run_filter(const cli_options *o, cli_err *e)
{
    run_state r;
    memset(&r, 0, sizeof r);
    r.once.start_ms = -1;
    r.ro = *o;
    o = &r.ro; /* --backend auto is resolved in it by the header hook */
    const double t0 = cli_now_ms();
    int code = run_setup(&r, o, e);
    for (int run = 0; code == CLI_EXIT_OK && run < o->repeat; run++)
        code = run_once(&r, o, run, e);
    if (code == CLI_EXIT_OK && o->json)
        run_json(&r, o, cli_now_ms() - t0);
    if (code == CLI_EXIT_OK && o->time)
        run_report(&r, o);
    run_teardown(&r);
    return code;
}
