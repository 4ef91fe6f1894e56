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
 * gives 1 2 1 / 4). The options come from the one parser (cli_args.c), the
 * kernel from cli_get_kernel, the file from cli_read_file, as for images; OUTPUT
 * is written with the library's atomic save (ic_bytes_save: a temporary file
 * beside it, renamed), so a failure never leaves a partial file.
 */
#include "cli_signal.h"

#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"
#include "cli_files.h"
#include "imgconv_course.h"

/* A signal in memory, and how its text form separated the values. */
typedef struct signal_buf {
    float *v;
    size_t n, cap;
    int commas;
} signal_buf;

/* ---- the kernel -------------------------------------------------------------- */

/* The 1D weights of the kernel the options name (see the top of the file). */
static int get_weights(const cli_options *o, float **w, int *klen, double *offset, cli_err *e)
{
    ic_kernel k;
    const int code = cli_get_kernel(o, &k, e);
    if (code != CLI_EXIT_OK)
        return code;
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

static int write_samples(FILE *f, const float *v, size_t n, cli_signal_format fmt, int commas)
{
    if (fmt == CLI_SIGNAL_F32) {
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

/* Writes OUTPUT with the library's atomic save. */
static int write_signal(const char *path, const float *v, size_t n, cli_signal_format fmt,
                        int commas, cli_err *e)
{
    char *data = NULL;
    size_t size = 0;
    FILE *f = open_memstream(&data, &size);
    if (!f)
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    const int ok = write_samples(f, v, n, fmt, commas);
    if (fclose(f) != 0 || !ok) {
        free(data);
        return cli_fail(e, CLI_EXIT_INTERNAL, NULL, "out of memory");
    }
    const ic_status s = ic_bytes_save(path, data, size);
    free(data);
    if (s != IC_OK)
        return cli_fail(e, cli_exit_for_output(s), path, "%s", ic_last_error());
    return CLI_EXIT_OK;
}

/* ---- the command --------------------------------------------------------------- */

static cli_signal_format format_for(const char *path)
{
    const char *dot = strrchr(path, '.');
    if (dot && strchr(dot, '/') == NULL &&
        (strcmp(dot, ".f32") == 0 || strcmp(dot, ".raw") == 0 || strcmp(dot, ".bin") == 0))
        return CLI_SIGNAL_F32;
    return CLI_SIGNAL_TEXT;
}

int cli_run_signal(const cli_options *opts, cli_err *e)
{
    cli_options o = *opts; /* the kernel's offset joins the bias */
    int code;
    float *w = NULL, *out = NULL;
    uint8_t *data = NULL;
    signal_buf sig = {NULL, 0, 0, 0};
    int klen = 0;
    double offset = 0.0;
    if ((code = get_weights(&o, &w, &klen, &offset, e)) != CLI_EXIT_OK)
        return code;
    o.params.bias = (float)((double)o.params.bias + offset);
    if ((code = cli_check_output_path(o.output, o.input, e)) != CLI_EXIT_OK)
        goto done;
    const cli_signal_format fmt =
        o.signal_format != CLI_SIGNAL_AUTO ? o.signal_format : format_for(o.input);
    size_t size = 0;
    char msg[256] = "";
    const ic_status rs = cli_read_file(o.input, o.max_memory, NULL, &data, &size, msg, sizeof msg);
    if (rs != IC_OK) {
        code = cli_fail(e, cli_exit_for_input(rs), o.input, "%s", msg[0] ? msg : ic_status_str(rs));
        goto done;
    }
    if (fmt == CLI_SIGNAL_F32)
        code = parse_f32(o.input, data, size, &sig, e);
    else
        code = parse_text(o.input, (const char *)data, (const char *)data + size, &sig, e);
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
    code = write_signal(o.output, out, sig.n, fmt, sig.commas, e);
done:
    free(w);
    free(out);
    free(data);
    free(sig.v);
    return code;
}
