/*
 * cli_signal.c - `imgconv --signal`: reads a 1D signal, filters it with
 * ic_conv1d_f32 (seed 001's stencil grown into seed 002's 1D convolution) and
 * writes it back in the same format, e.g. to smooth a sensor trace.
 *
 * Formats:
 *   text  numbers separated by newlines, commas or blanks ('#' starts a
 *         comment); written one per line, or comma-separated on one line when
 *         the input used commas; "%.9g" so float32 values survive the trip;
 *   f32   raw little-endian float32, 4 bytes a sample, any host byte order.
 * The format is --format, else f32 for INPUT ending in .f32/.raw/.bin, else text.
 *
 * The kernel comes from the library's kernel text (--kernel, --kernel-file):
 * a one-row or one-column kernel is used as it is; a 2D kernel is reduced to
 * its column sums, the 1D filter it applies to an image whose rows all equal
 * the signal (gaussian:5 gives the 5-tap Gaussian, "1 2 1; 2 4 2; 1 2 1 / 16"
 * gives 1 2 1 / 4). OUTPUT is written to a temporary file beside it and
 * renamed, so a failure never leaves a partial file.
 */
#include "cli_signal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgconv.h"

typedef enum sig_format { FMT_AUTO = 0, FMT_TEXT, FMT_F32 } sig_format;

typedef struct sig_options {
    int help;
    sig_format format;
    const char *kernel_text, *kernel_file;
    ic_params params;
    const char *backend;
    const char *input, *output;
} sig_options;

/* A signal in memory, and how its text form separated the values. */
typedef struct signal_buf {
    float *v;
    size_t n, cap;
    int commas;
} signal_buf;

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

/* ---- arguments ------------------------------------------------------------ */

/* When argv[*i] is option `name` (as "--name VALUE" or "--name=VALUE"), stores
 * its value and returns 1; returns -1 when the value is missing, 0 otherwise. */
static int opt_value(int argc, char **argv, int *i, const char *name, const char **value)
{
    const char *a = argv[*i];
    const size_t n = strlen(name);
    if (strncmp(a, name, n) != 0)
        return 0;
    if (a[n] == '=') {
        *value = a + n + 1;
        return 1;
    }
    if (a[n] != '\0')
        return 0;
    if (*i + 1 >= argc)
        return -1;
    *value = argv[++*i];
    return 1;
}

/* Parses a finite float32 value; 1 on success. */
static int parse_float(const char *s, float *out)
{
    char *end;
    errno = 0;
    const double d = strtod(s, &end);
    if (end == s || *end != '\0' || errno == ERANGE || !isfinite(d) || fabs(d) > FLT_MAX)
        return 0;
    *out = (float)d;
    return 1;
}

static int missing_value(cli_err *e, const char *option)
{
    return cli_fail(e, CLI_EXIT_USAGE, NULL, "option '%s' needs a value", option);
}

static int parse_args(int argc, char **argv, sig_options *o, cli_err *e)
{
    memset(o, 0, sizeof *o);
    ic_params_default(&o->params);
    o->backend = "auto";
    int npos = 0, only_files = 0;
    const char *pos[2] = {NULL, NULL};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = NULL;
        int r = 0;
        if (only_files || a[0] != '-' || a[1] == '\0') {
            if (npos >= 2)
                return cli_fail(e, CLI_EXIT_USAGE, NULL, "--signal takes one INPUT and one OUTPUT");
            pos[npos++] = a;
            continue;
        }
        if (strcmp(a, "--") == 0) {
            only_files = 1;
        } else if (strcmp(a, "--signal") == 0) {
            /* the mode switch itself */
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            o->help = 1;
        } else if (strcmp(a, "--correlate") == 0) {
            o->params.correlate = 1;
        } else if ((r = opt_value(argc, argv, &i, "--format", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            if (strcmp(v, "text") == 0)
                o->format = FMT_TEXT;
            else if (strcmp(v, "f32") == 0)
                o->format = FMT_F32;
            else
                return cli_fail(e, CLI_EXIT_USAGE, NULL, "--format '%s': expected text or f32", v);
        } else if ((r = opt_value(argc, argv, &i, "--kernel", &v)) != 0 ||
                   (r = opt_value(argc, argv, &i, "-k", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            o->kernel_text = v;
        } else if ((r = opt_value(argc, argv, &i, "--kernel-file", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            o->kernel_file = v;
        } else if ((r = opt_value(argc, argv, &i, "--border", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            if (ic_border_parse(v, &o->params.border) != IC_OK)
                return cli_fail(e, CLI_EXIT_USAGE, NULL,
                                "--border '%s': expected constant, replicate, mirror, reflect "
                                "or wrap",
                                v);
        } else if ((r = opt_value(argc, argv, &i, "--border-value", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            if (!parse_float(v, &o->params.border_value))
                return cli_fail(e, CLI_EXIT_USAGE, NULL, "--border-value '%s': not a number", v);
        } else if ((r = opt_value(argc, argv, &i, "--bias", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            if (!parse_float(v, &o->params.bias))
                return cli_fail(e, CLI_EXIT_USAGE, NULL, "--bias '%s': not a number", v);
        } else if ((r = opt_value(argc, argv, &i, "--backend", &v)) != 0) {
            if (r < 0)
                return missing_value(e, a);
            o->backend = v;
        } else {
            return cli_fail(e, CLI_EXIT_USAGE, NULL, "unknown option '%s' for --signal", a);
        }
    }
    if (o->help)
        return CLI_EXIT_OK;
    if (npos != 2)
        return cli_fail(e, CLI_EXIT_USAGE, NULL, "--signal needs INPUT and OUTPUT");
    if (!o->kernel_text && !o->kernel_file)
        return cli_fail(e, CLI_EXIT_USAGE, NULL, "--signal needs --kernel or --kernel-file");
    if (o->kernel_text && o->kernel_file)
        return cli_fail(e, CLI_EXIT_USAGE, NULL, "give --kernel or --kernel-file, not both");
    o->input = pos[0];
    o->output = pos[1];
    return CLI_EXIT_OK;
}

/* ---- the kernel -------------------------------------------------------------- */

/* The 1D weights of the kernel the options name (see the top of the file). */
static int get_weights(const sig_options *o, float **w, int *klen, double *offset, cli_err *e)
{
    ic_kernel k;
    char buf[256] = "";
    ic_status s;
    if (o->kernel_file) {
        s = cli_noted(ic_kernel_load(&k, o->kernel_file), buf, sizeof buf);
        if (s != IC_OK)
            return cli_fail(e, s == IC_ERR_NOMEM ? CLI_EXIT_INTERNAL : CLI_EXIT_INPUT,
                            o->kernel_file, "%s%s", s == IC_ERR_KERNEL ? "bad kernel file: " : "",
                            buf[0] ? buf : ic_status_str(s));
    } else {
        s = cli_noted(ic_kernel_parse(&k, o->kernel_text), buf, sizeof buf);
        if (s == IC_ERR_IO)
            return cli_fail(e, CLI_EXIT_INPUT, o->kernel_text + (o->kernel_text[0] == '@'), "%s",
                            buf[0] ? buf : ic_status_str(s));
        if (s != IC_OK)
            return cli_fail(e, s == IC_ERR_KERNEL ? CLI_EXIT_USAGE : CLI_EXIT_INTERNAL, NULL,
                            "--kernel '%.60s': %s", o->kernel_text,
                            buf[0] ? buf : ic_status_str(s));
    }
    const int column = k.width == 1 && k.height > 1;
    *klen = column ? k.height : k.width;
    *w = malloc((size_t)*klen * sizeof **w);
    if (!*w) {
        ic_kernel_free(&k);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    }
    for (int t = 0; t < *klen; t++) {
        double sum = 0.0;
        if (column)
            sum = ic_kernel_weight(&k, 0, t);
        else
            for (int j = 0; j < k.height; j++)
                sum += ic_kernel_weight(&k, t, j);
        (*w)[t] = (float)sum;
    }
    *offset = k.offset;
    ic_kernel_free(&k);
    return CLI_EXIT_OK;
}

/* ---- reading ----------------------------------------------------------------- */

/* Reads a whole file into *data (NUL-terminated, *size bytes before the NUL). */
static int read_file(const char *path, char **data, size_t *size, cli_err *e)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return cli_fail(e, CLI_EXIT_INPUT, path, "cannot open: %s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    for (;;) {
        if (!buf) {
            fclose(f);
            return cli_fail(e, CLI_EXIT_INTERNAL, path, "out of memory");
        }
        n += fread(buf + n, 1, cap - 1 - n, f);
        if (n < cap - 1)
            break;
        if (cap > SIZE_MAX / 2) {
            free(buf);
            fclose(f);
            return cli_fail(e, CLI_EXIT_INPUT, path, "file too large");
        }
        char *grown = realloc(buf, cap * 2);
        if (!grown)
            free(buf);
        buf = grown;
        cap *= 2;
    }
    const int failed = ferror(f);
    fclose(f);
    if (failed) {
        free(buf);
        return cli_fail(e, CLI_EXIT_INPUT, path, "cannot read: %s", strerror(errno));
    }
    buf[n] = '\0';
    *data = buf;
    *size = n;
    return CLI_EXIT_OK;
}

static int push(signal_buf *s, float v)
{
    if (s->n == s->cap) {
        const size_t cap = s->cap ? s->cap * 2 : 1024;
        float *grown = realloc(s->v, cap * sizeof *grown);
        if (!grown)
            return 0;
        s->v = grown;
        s->cap = cap;
    }
    s->v[s->n++] = v;
    return 1;
}

/* Text: numbers separated by newlines, blanks or commas; a comma must stand
 * between two numbers. */
static int parse_text(const char *path, const char *p, const char *end, signal_buf *s, cli_err *e)
{
    long line = 1;
    int pending_comma = 0, value_before = 0;
    if (end - p >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0) /* UTF-8 byte order mark */
        p += 3;
    while (p < end) {
        const char c = *p;
        if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
            line += c == '\n';
            p++;
        } else if (c == '#') {
            while (p < end && *p != '\n')
                p++;
        } else if (c == ',') {
            if (!value_before || pending_comma)
                return cli_fail(e, CLI_EXIT_INPUT, path, "line %ld: empty value before ','", line);
            pending_comma = 1;
            s->commas = 1;
            p++;
        } else {
            const char *t = p;
            while (p < end && !strchr(" \t\r\n,#", *p) && *p != '\0')
                p++;
            char tok[64];
            const size_t len = (size_t)(p - t);
            if (len == 0) /* a NUL byte inside the text */
                return cli_fail(e, CLI_EXIT_INPUT, path, "line %ld: unexpected NUL byte", line);
            if (len >= sizeof tok)
                return cli_fail(e, CLI_EXIT_INPUT, path, "line %ld: '%.20s...' is not a number",
                                line, t);
            memcpy(tok, t, len);
            tok[len] = '\0';
            float v;
            if (!parse_float(tok, &v))
                return cli_fail(e, CLI_EXIT_INPUT, path,
                                "line %ld: '%s' is not a finite float32 number", line, tok);
            if (s->n >= IC_MAX_SIGNAL)
                return cli_fail(e, CLI_EXIT_INPUT, path, "more than %zu samples", IC_MAX_SIGNAL);
            if (!push(s, v))
                return cli_fail(e, CLI_EXIT_INTERNAL, path, "out of memory");
            value_before = 1;
            pending_comma = 0;
        }
    }
    if (pending_comma)
        return cli_fail(e, CLI_EXIT_INPUT, path, "line %ld: empty value after ','", line);
    return CLI_EXIT_OK;
}

static int parse_f32(const char *path, const unsigned char *p, size_t size, signal_buf *s,
                     cli_err *e)
{
    if (size % 4 != 0)
        return cli_fail(e, CLI_EXIT_INPUT, path,
                        "%zu bytes is not a whole number of float32 samples", size);
    if (size / 4 > IC_MAX_SIGNAL)
        return cli_fail(e, CLI_EXIT_INPUT, path, "more than %zu samples", IC_MAX_SIGNAL);
    s->n = s->cap = size / 4;
    s->v = malloc((s->n ? s->n : 1) * sizeof *s->v);
    if (!s->v)
        return cli_fail(e, CLI_EXIT_INTERNAL, path, "out of memory");
    for (size_t i = 0; i < s->n; i++) {
        const unsigned char *b = p + 4 * i;
        const uint32_t u =
            (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
        memcpy(&s->v[i], &u, sizeof u);
        if (!isfinite(s->v[i]))
            return cli_fail(e, CLI_EXIT_INPUT, path, "sample %zu is not finite", i);
    }
    return CLI_EXIT_OK;
}

/* ---- writing ------------------------------------------------------------------ */

static int write_samples(FILE *f, const float *v, size_t n, sig_format fmt, int commas)
{
    if (fmt == FMT_F32) {
        for (size_t i = 0; i < n; i++) {
            uint32_t u;
            memcpy(&u, &v[i], sizeof u);
            const unsigned char b[4] = {(unsigned char)u, (unsigned char)(u >> 8),
                                        (unsigned char)(u >> 16), (unsigned char)(u >> 24)};
            if (fwrite(b, 1, 4, f) != 4)
                return 0;
        }
        return 1;
    }
    for (size_t i = 0; i < n; i++)
        if (fprintf(f, "%.9g%s", (double)v[i], i + 1 == n ? "\n" : commas ? "," : "\n") < 0)
            return 0;
    return 1;
}

/* Writes OUTPUT through a temporary file in its directory and a rename. */
static int write_atomic(const char *path, const float *v, size_t n, sig_format fmt, int commas,
                        cli_err *e)
{
    const size_t len = strlen(path);
    char *tmp = malloc(len + 16);
    if (!tmp)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    memcpy(tmp, path, len);
    memcpy(tmp + len, ".tmp-XXXXXX", 12);
    const int fd = mkstemp(tmp);
    if (fd < 0) {
        const int code = cli_fail(e, CLI_EXIT_OUTPUT, path, "cannot create a temporary file: %s",
                                  strerror(errno));
        free(tmp);
        return code;
    }
    const mode_t mask = umask(0);
    umask(mask);
    int ok = fchmod(fd, 0666 & ~mask) == 0;
    int saved = errno;
    FILE *f = ok ? fdopen(fd, "wb") : NULL;
    if (!f) {
        saved = errno;
        close(fd);
        ok = 0;
    } else {
        ok = write_samples(f, v, n, fmt, commas) && fflush(f) == 0 && fsync(fileno(f)) == 0;
        saved = errno;
        if (fclose(f) != 0 && ok) {
            ok = 0;
            saved = errno;
        }
    }
    if (ok && rename(tmp, path) != 0) {
        ok = 0;
        saved = errno;
    }
    if (!ok) {
        unlink(tmp);
        free(tmp);
        return cli_fail(e, CLI_EXIT_OUTPUT, path, "cannot write: %s", strerror(saved));
    }
    free(tmp);
    return CLI_EXIT_OK;
}

/* ---- the command --------------------------------------------------------------- */

static sig_format format_for(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strchr(dot, '/') == NULL &&
        (strcmp(dot, ".f32") == 0 || strcmp(dot, ".raw") == 0 || strcmp(dot, ".bin") == 0))
        return FMT_F32;
    return FMT_TEXT;
}

static int same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    if (strcmp(a, b) == 0)
        return 1;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev &&
           sa.st_ino == sb.st_ino;
}

int cli_run_signal(int argc, char **argv, cli_err *e)
{
    sig_options o;
    int code = parse_args(argc, argv, &o, e);
    if (code != CLI_EXIT_OK)
        return code;
    if (o.help) {
        cli_print_signal_help();
        return CLI_EXIT_OK;
    }
    float *w = NULL, *out = NULL;
    char *data = NULL;
    signal_buf sig = {NULL, 0, 0, 0};
    int klen = 0;
    double offset = 0.0;
    if ((code = get_weights(&o, &w, &klen, &offset, e)) != CLI_EXIT_OK)
        return code;
    o.params.bias = (float)((double)o.params.bias + offset);
    if (same_file(o.input, o.output)) {
        code = cli_fail(e, CLI_EXIT_OUTPUT, o.output,
                        "is the same file as the input; refusing to overwrite it");
        goto done;
    }
    const sig_format fmt = o.format != FMT_AUTO ? o.format : format_for(o.input);
    size_t size = 0;
    if ((code = read_file(o.input, &data, &size, e)) != CLI_EXIT_OK)
        goto done;
    code = fmt == FMT_F32 ? parse_f32(o.input, (const unsigned char *)data, size, &sig, e)
                          : parse_text(o.input, data, data + size, &sig, e);
    if (code != CLI_EXIT_OK)
        goto done;
    if (sig.n == 0) {
        code = cli_fail(e, CLI_EXIT_INPUT, o.input, "no samples");
        goto done;
    }
    out = malloc(sig.n * sizeof *out);
    if (!out) {
        code = cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
        goto done;
    }
    const ic_status s = ic_conv1d_f32(sig.v, out, sig.n, w, klen, &o.params, o.backend);
    if (s != IC_OK) {
        const char *why = ic_last_error();
        if (s == IC_ERR_NO_BACKEND || s == IC_ERR_DEVICE || s == IC_ERR_UNSUPPORTED) {
            char what[160];
            snprintf(what, sizeof what, "backend %.100s", o.backend);
            code = cli_fail(e, CLI_EXIT_DEVICE, what, "%s", why);
        } else if (s == IC_ERR_TOO_LARGE) {
            code = cli_fail(e, CLI_EXIT_INPUT, o.input, "%s", why);
        } else {
            code = cli_fail(e, CLI_EXIT_INTERNAL, o.input, "%s", why);
        }
        goto done;
    }
    code = write_atomic(o.output, out, sig.n, fmt, sig.commas, e);
done:
    free(w);
    free(out);
    free(data);
    free(sig.v);
    return code;
}

int ic_cli_signal_main(int argc, char **argv)
{
    cli_err e;
    memset(&e, 0, sizeof e);
    const int code = cli_run_signal(argc, argv, &e);
    if (code != CLI_EXIT_OK) {
        fflush(stdout);
        if (e.code == CLI_EXIT_USAGE && e.file[0] == '\0')
            fprintf(stderr, "imgconv: error: %s (see --help)\n", e.msg);
        else if (e.file[0] != '\0')
            fprintf(stderr, "imgconv: error: %s: %s\n", e.file, e.msg);
        else
            fprintf(stderr, "imgconv: error: %s\n", e.msg);
    }
    return code;
}
