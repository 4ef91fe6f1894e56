/*
 * tuning.c - the advanced tier's tuning knobs (include/imgconv.h, "Advanced
 * API"): the names of methods and instruction sets, the check of an
 * ic_tuning's values and the KEY=VALUE parser behind the CLI's --tune. The
 * knobs replace the environment variables the library used to read; the
 * backends read them from ic_job.tuning.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dispatch/dispatch.h"

static const char *const method_names[] = {"auto",   "direct", "sep",    "fft",
                                           "global", "rows",   "tensor", "blur"};
static const char *const isa_names[] = {"auto", "scalar", "avx2", "avx512"};
static const char *const calibrate_names[] = {"auto", "builtin"};

#define N_OF(a) ((int)(sizeof(a) / sizeof((a)[0])))

const char *ic_method_name(ic_method m)
{
    return (unsigned)m < (unsigned)N_OF(method_names) ? method_names[m] : "unknown";
}

const char *ic_cpu_isa_name(ic_cpu_isa isa)
{
    return (unsigned)isa < (unsigned)N_OF(isa_names) ? isa_names[isa] : "unknown";
}

/* ic_tuning.fft_fuse's values, in order */
static const char *const fuse_names[] = {"auto", "always", "never"};

static int fft_n_ok(int n)
{
    return n == 0 || (n >= 64 && n <= 8192 && (n & (n - 1)) == 0);
}

/* ic_tuning.rows_shape's values: 0 (the planner's), 1, 2, 4, and 8, 16, 32,
 * 64 (a separable kernel one input row at a time: a 3x3 at 8, a 5x5..9x9 as
 * asked; other kernels run them as 4) */
static int rows_shape_ok(int r)
{
    return r == 0 || r == 1 || r == 2 || r == 4 || r == 8 || r == 16 || r == 32 || r == 64;
}

static int tile_rows_ok(int r)
{
    return r == 0 || r == 8 || r == 16 || r == 32 || r == 64;
}

ic_status ic__tuning_check(const ic_tuning *t)
{
    if (!t)
        return IC_OK;
    if ((unsigned)t->method >= (unsigned)N_OF(method_names))
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: unknown method %d", (int)t->method);
    if ((unsigned)t->cpu_isa >= (unsigned)N_OF(isa_names))
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: unknown instruction set %d", (int)t->cpu_isa);
    if ((unsigned)t->calibrate >= (unsigned)N_OF(calibrate_names))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "tuning: calibrate %d is neither auto (0) nor builtin (1)", t->calibrate);
    if (!fft_n_ok(t->fft_n))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "tuning: fft-n %d is not 0 or a power of two in 64..8192", t->fft_n);
    if ((unsigned)t->fft_fuse >= (unsigned)N_OF(fuse_names))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "tuning: fft-fuse %d is not 0 (auto), 1 (always) or 2 (never)", t->fft_fuse);
    if (!rows_shape_ok(t->rows_shape))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "tuning: rows-shape %d is not 0, 1, 2, 4, 8, 16, 32 or 64", t->rows_shape);
    if (t->tile_channels < 0 || t->tile_channels > 2)
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: tile-channels %d is not 0, 1 or 2",
                       t->tile_channels);
    if (!tile_rows_ok(t->tile_rows))
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: tile-rows %d is not 0, 8, 16, 32 or 64",
                       t->tile_rows);
    return IC_OK;
}

/* Index of word in names[0..n), -1 when absent. */
static int name_index(const char *word, const char *const *names, int n)
{
    for (int i = 0; i < n; i++)
        if (strcmp(word, names[i]) == 0)
            return i;
    return -1;
}

/* A decimal int of the whole word, or -1 (every numeric knob is >= 0). */
static int number(const char *word)
{
    char *end = NULL;
    const long v = strtol(word, &end, 10);
    if (!*word || *end || v < 0 || v > 1 << 20)
        return -1;
    return (int)v;
}

/* Applies one KEY=VALUE to t; IC_ERR_INVALID_ARG naming it otherwise. */
static ic_status apply_item(char *item, ic_tuning *t)
{
    char *eq = strchr(item, '=');
    if (!eq)
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: '%s' is not KEY=VALUE", item);
    *eq = '\0';
    const char *key = item, *val = eq + 1;
    int v = -1;
    if (strcmp(key, "method") == 0) {
        if ((v = name_index(val, method_names, N_OF(method_names))) >= 0)
            t->method = (ic_method)v;
    } else if (strcmp(key, "cpu-isa") == 0) {
        if ((v = name_index(val, isa_names, N_OF(isa_names))) >= 0)
            t->cpu_isa = (ic_cpu_isa)v;
    } else if (strcmp(key, "calibrate") == 0) {
        if ((v = name_index(val, calibrate_names, N_OF(calibrate_names))) >= 0)
            t->calibrate = v;
    } else if (strcmp(key, "cpu-tiny") == 0 || strcmp(key, "rows-full") == 0) {
        if ((v = number(val)) == 0 || v == 1)
            *(key[0] == 'c' ? &t->cpu_tiny : &t->rows_full) = v;
        else
            v = -1;
    } else if (strcmp(key, "fft-fuse") == 0) {
        if ((v = name_index(val, fuse_names, N_OF(fuse_names))) >= 0)
            t->fft_fuse = v;
    } else if (strcmp(key, "fft-n") == 0) {
        if ((v = number(val)) >= 0 && fft_n_ok(v))
            t->fft_n = v;
        else
            v = -1;
    } else if (strcmp(key, "rows-shape") == 0) {
        if ((v = number(val)) >= 0 && rows_shape_ok(v))
            t->rows_shape = v;
        else
            v = -1;
    } else if (strcmp(key, "tile-channels") == 0) {
        if ((v = number(val)) >= 0 && v <= 2)
            t->tile_channels = v;
        else
            v = -1;
    } else if (strcmp(key, "tile-rows") == 0) {
        if ((v = number(val)) >= 0 && tile_rows_ok(v))
            t->tile_rows = v;
        else
            v = -1;
    } else {
        return ic_fail(IC_ERR_INVALID_ARG,
                       "tuning: unknown key '%s' (method, cpu-isa, cpu-tiny, calibrate, fft-n, "
                       "fft-fuse, rows-full, rows-shape, tile-channels, tile-rows)",
                       key);
    }
    if (v < 0)
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: bad value '%s' for %s", val, key);
    return IC_OK;
}

ic_status ic_tuning_parse(const char *text, ic_tuning *t)
{
    if (!text || !t)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_tuning_parse: NULL argument");
    char buf[512];
    if (strlen(text) >= sizeof buf)
        return ic_fail(IC_ERR_INVALID_ARG, "tuning: text longer than %zu bytes", sizeof buf - 1);
    snprintf(buf, sizeof buf, "%s", text);
    ic_tuning out = *t;
    for (char *save = NULL, *item = strtok_r(buf, ",", &save); item;
         item = strtok_r(NULL, ",", &save)) {
        const ic_status st = apply_item(item, &out);
        if (st != IC_OK)
            return st;
    }
    *t = out;
    return IC_OK;
}
