/*
 * kernel.c - the kernel model: creation and validation, the matrix text grammar
 * of --kernel, kernel files (matrix text and libvips .mat) and effective weights.
 *
 * Seed 004 lists the kernels the system applies (box, Gaussian, edge detection,
 * sharpen, unsharp mask); seeds 001 and 003 apply an odd (2r+1)^2 mask centred
 * on the pixel. We keep any odd width x odd height up to IC_MAX_KERNEL, stored
 * as float coefficients over a double divisor, so that integer kernels such as
 * "1 2 1; 2 4 2; 1 2 1 / 16" stay exact.
 *
 * Matrix text (docs/definitions.md, "Kernel text"):
 *   text    := row { (';' | newline) row } [ '/' number ]
 *   row     := number { (space | tab | ',') number }    (rows with no values are skipped)
 *   '#' starts a comment that runs to the end of the line.
 * Parsing works on (pointer, length) and touches every byte at most a few
 * times; all counts are bounded by IC_MAX_KERNEL before anything is stored.
 */
#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "kernel_internal.h"

/* Kernel files larger than this are refused before reading them whole
 * (255x255 numbers with comments fit in a small fraction of it). */
#define IC_KERNEL_FILE_MAX ((size_t)16 << 20)
/* Longest number token we read (digits beyond float precision are pointless). */
#define IC_NUMBER_MAX 128

/* ------------------------------------------------------------------------ */
/* Small shared helpers                                                      */
/* ------------------------------------------------------------------------ */

void ic__kernel_quote(char *dst, size_t dstlen, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    const size_t shown = n > 24 ? 24 : n;
    size_t o = 0;
    if (!dst || dstlen == 0)
        return;
    /* Worst case per byte is 4 chars (\xNN), plus quotes, "..." and NUL. */
    if (dstlen < 4 * shown + 6) {
        snprintf(dst, dstlen, "(token)");
        return;
    }
    dst[o++] = '\'';
    for (size_t i = 0; i < shown; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\' && c != '\'') {
            dst[o++] = (char)c;
        } else {
            dst[o++] = '\\';
            dst[o++] = 'x';
            dst[o++] = hex[c >> 4];
            dst[o++] = hex[c & 15];
        }
    }
    if (shown < n) {
        memcpy(dst + o, "...", 3);
        o += 3;
    }
    dst[o++] = '\'';
    dst[o] = '\0';
}

static int lower_eq(const char *s, size_t n, const char *word)
{
    size_t i = 0;
    for (; i < n && word[i]; i++)
        if (tolower((unsigned char)s[i]) != word[i])
            return 0;
    return i == n && word[i] == '\0';
}

/* Decimal to double without strtod, so the process locale cannot change what
 * "0.5" means. Up to 19 significant digits are kept (far beyond float); the
 * scaling is exact for the usual short numbers and within an ulp otherwise. */
int ic__kernel_number(const char *s, size_t n, double *out)
{
    size_t i = 0;
    int neg = 0;
    if (n == 0 || n > IC_NUMBER_MAX)
        return IC_NUM_SYNTAX;
    if (s[0] == '+' || s[0] == '-') {
        neg = s[0] == '-';
        i = 1;
    }
    if (lower_eq(s + i, n - i, "inf") || lower_eq(s + i, n - i, "infinity") ||
        lower_eq(s + i, n - i, "nan"))
        return IC_NUM_NONFINITE;

    uint64_t mant = 0;
    int sig = 0;    /* significant digits kept in mant */
    long dexp = 0;  /* decimal exponent adjustment of mant */
    int digits = 0; /* digits seen in the mantissa, for syntax */
    for (; i < n && isdigit((unsigned char)s[i]); i++, digits++) {
        if (sig < 19) {
            if (mant != 0 || s[i] != '0') {
                mant = mant * 10 + (uint64_t)(s[i] - '0');
                sig++;
            }
        } else {
            dexp++;
        }
    }
    if (i < n && s[i] == '.') {
        for (i++; i < n && isdigit((unsigned char)s[i]); i++, digits++) {
            if (sig < 19) {
                if (mant != 0 || s[i] != '0') {
                    mant = mant * 10 + (uint64_t)(s[i] - '0');
                    sig++;
                }
                dexp--;
            }
        }
    }
    if (digits == 0)
        return IC_NUM_SYNTAX;
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        int eneg = 0, edigits = 0;
        long e = 0;
        i++;
        if (i < n && (s[i] == '+' || s[i] == '-')) {
            eneg = s[i] == '-';
            i++;
        }
        for (; i < n && isdigit((unsigned char)s[i]); i++, edigits++)
            if (e < 100000) /* saturate: 1e100000 is inf and 1e-100000 is 0 anyway */
                e = e * 10 + (s[i] - '0');
        if (edigits == 0)
            return IC_NUM_SYNTAX;
        dexp += eneg ? -e : e;
    }
    if (i != n)
        return IC_NUM_SYNTAX;

    double v;
    if (mant == 0) {
        v = 0.0;
    } else if (dexp >= -22 && dexp <= 22 && mant < ((uint64_t)1 << 53)) {
        /* Both operands exact: one correctly rounded operation (Clinger). */
        static const double p10[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,
                                     1e8,  1e9,  1e10, 1e11, 1e12, 1e13, 1e14, 1e15,
                                     1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
        v = dexp >= 0 ? (double)mant * p10[dexp] : (double)mant / p10[-dexp];
    } else if (dexp > 400) {
        v = HUGE_VAL;
    } else if (dexp < -400) {
        v = 0.0;
    } else {
        v = (double)((long double)mant * powl(10.0L, (long double)dexp));
    }
    if (!isfinite(v))
        return IC_NUM_NONFINITE;
    *out = neg ? -v : v;
    return IC_NUM_OK;
}

/* ------------------------------------------------------------------------ */
/* Creation                                                                  */
/* ------------------------------------------------------------------------ */

ic_status ic__kernel_make(ic_kernel *k, int width, int height, const float *coef, double divisor,
                          char *err, size_t errlen)
{
    if (!k)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "no kernel to fill (NULL)");
    memset(k, 0, sizeof *k);
    if (width < 1 || height < 1 || width > IC_MAX_KERNEL || height > IC_MAX_KERNEL)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "kernel is %dx%d; each size must be 1..%d",
                       width, height, IC_MAX_KERNEL);
    if (!(width & 1) || !(height & 1))
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       "kernel is %dx%d; width and height must be odd (there is no "
                       "centre otherwise)",
                       width, height);
    if (!coef)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "no coefficients (NULL)");
    if (!isfinite(divisor))
        return ic_errf(err, errlen, IC_ERR_KERNEL, "divisor is not finite");
    if (divisor == 0.0)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "divisor is zero");

    const size_t n = (size_t)width * (size_t)height; /* <= 255*255: no overflow */
    double abs_sum = 0.0;
    for (size_t t = 0; t < n; t++) {
        if (!isfinite(coef[t]))
            return ic_errf(err, errlen, IC_ERR_KERNEL,
                           "coefficient at column %d, row %d is not finite",
                           (int)(t % (size_t)width) + 1, (int)(t / (size_t)width) + 1);
        abs_sum += fabs((double)coef[t]);
    }
    /* Backends accumulate weight * sample (<= 255) in float32: the worst case
     * sum must stay finite there. */
    const double worst = abs_sum / fabs(divisor) * 255.0;
    if (!(worst <= (double)FLT_MAX))
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       "weights too large: sum of |weights| * 255 = %g overflows float", worst);

    float *c = malloc(n * sizeof *c);
    if (!c)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    memcpy(c, coef, n * sizeof *c);
    k->width = width;
    k->height = height;
    k->coef = c;
    k->divisor = divisor;
    k->offset = 0.0;
    snprintf(k->name, sizeof k->name, "%dx%d matrix", width, height);
    return IC_OK;
}

int ic__weights_dyadic(const float *w, size_t n, float scale)
{
    for (size_t i = 0; i < n; i++) {
        const float x = w[i] * scale;
        if (x != rintf(x))
            return 0;
    }
    return 1;
}

ic_status ic_kernel_create(ic_kernel *k, int width, int height, const float *coef, double divisor)
{
    char err[256] = "";
    return ic_fail_msg(ic__kernel_make(k, width, height, coef, divisor, err, sizeof err), err);
}

void ic_kernel_free(ic_kernel *k)
{
    if (!k)
        return;
    free(k->coef);
    memset(k, 0, sizeof *k);
}

/* Weight t of the normalised 1D blur of n taps (a blur without coefficients). */
static double blur_weight_1d(const ic_kernel *k, int n, double sigma, int t)
{
    if (k->blur == IC_BLUR_BOX)
        return 1.0 / n;
    double sum = 0.0, g = 0.0;
    for (int i = 0; i < n; i++) {
        const double x = i - (n - 1) / 2, v = exp(-(x * x) / (2.0 * sigma * sigma));
        sum += v;
        if (i == t)
            g = v;
    }
    return g / sum;
}

double ic_kernel_weight(const ic_kernel *k, int i, int j)
{
    if (!k || i < 0 || j < 0 || i >= k->width || j >= k->height)
        return 0.0;
    if (!k->coef)
        return k->blur ? blur_weight_1d(k, k->width, k->sigma_x, i) *
                             blur_weight_1d(k, k->height, k->sigma_y, j)
                       : 0.0;
    return (double)k->coef[(size_t)j * (size_t)k->width + (size_t)i] / k->divisor;
}

double ic_kernel_sum(const ic_kernel *k)
{
    if (k && !k->coef && k->blur)
        return 1.0;
    if (!k || !k->coef)
        return 0.0;
    /* Sum the coefficients first: exact for integer kernels ("/ 16" sums to 1). */
    double s = 0.0;
    const size_t n = (size_t)k->width * (size_t)k->height;
    for (size_t t = 0; t < n; t++)
        s += k->coef[t];
    return s / k->divisor;
}

/* ------------------------------------------------------------------------ */
/* Matrix text                                                               */
/* ------------------------------------------------------------------------ */

typedef struct matrix_parse {
    const char *s;
    size_t n;
    int by_line;   /* messages name file lines too */
    int line_base; /* line number of s[0] */
    int allow_div; /* 0 in .mat bodies */
    float *vals;   /* IC_MAX_KERNEL^2 */
    int w, h, cur; /* width of row 1, finished rows, values in the current row */
    int cur_line;  /* line where the current row started */
    double divisor;
    int have_div;
    char *err;
    size_t errlen;
} matrix_parse;

static int is_space(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

static int is_delim(char c)
{
    return is_space(c) || c == '\n' || c == ',' || c == ';' || c == '/' || c == '#';
}

/* "row 3" or "row 3 (line 7)". */
static void row_name(const matrix_parse *p, int row, int line, char *buf, size_t len)
{
    if (p->by_line)
        snprintf(buf, len, "row %d (line %d)", row, line);
    else
        snprintf(buf, len, "row %d", row);
}

static ic_status end_row(matrix_parse *p)
{
    if (p->cur == 0)
        return IC_OK;
    if (p->h == 0) {
        p->w = p->cur;
    } else if (p->cur != p->w) {
        char where[48];
        row_name(p, p->h + 1, p->cur_line, where, sizeof where);
        return ic_errf(p->err, p->errlen, IC_ERR_KERNEL,
                       "ragged rows: %s has %d values, row 1 has %d", where, p->cur, p->w);
    }
    p->h++;
    p->cur = 0;
    return IC_OK;
}

/* Parses one number token; on success *v holds it within float range. */
static ic_status number_token(matrix_parse *p, const char *tok, size_t len, const char *what,
                              double *v)
{
    char q[128];
    int r = ic__kernel_number(tok, len, v);
    if (r == IC_NUM_OK && fabs(*v) > (double)FLT_MAX)
        r = IC_NUM_NONFINITE;
    if (r == IC_NUM_OK)
        return IC_OK;
    ic__kernel_quote(q, sizeof q, tok, len);
    if (r == IC_NUM_NONFINITE)
        return ic_errf(p->err, p->errlen, IC_ERR_KERNEL,
                       "%s %s is not finite (or out of float range)", what, q);
    return ic_errf(p->err, p->errlen, IC_ERR_KERNEL, "%s %s is not a number", what, q);
}

static ic_status matrix_run(matrix_parse *p)
{
    const char *s = p->s;
    const size_t n = p->n;
    int line = p->line_base;
    size_t i = 0;
    ic_status st;
    char q[128];

    while (i < n) {
        const char c = s[i];
        if (c == '#') {
            while (i < n && s[i] != '\n')
                i++;
        } else if (c == '\n' || c == ';') {
            if ((st = end_row(p)) != IC_OK)
                return st;
            if (c == '\n')
                line++;
            i++;
        } else if (is_space(c) || c == ',') {
            i++;
        } else if (c == '/') {
            if (!p->allow_div)
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL,
                               "'/' divisor is not allowed here (.mat files give the "
                               "scale in their header)");
            if (p->have_div)
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL, "more than one '/' divisor");
            if ((st = end_row(p)) != IC_OK)
                return st;
            for (i++; i < n && is_space(s[i]); i++)
                ;
            size_t t0 = i;
            while (i < n && !is_delim(s[i]))
                i++;
            if (i == t0)
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL,
                               "'/' must be followed by the divisor, e.g. '/ 16'");
            if ((st = number_token(p, s + t0, i - t0, "divisor", &p->divisor)) != IC_OK)
                return st;
            if (p->divisor == 0.0)
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL, "divisor is zero");
            p->have_div = 1;
        } else {
            size_t t0 = i;
            while (i < n && !is_delim(s[i]))
                i++;
            if (p->have_div) {
                ic__kernel_quote(q, sizeof q, s + t0, i - t0);
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL,
                               "unexpected %s after the divisor (the '/ D' divisor "
                               "must come last)",
                               q);
            }
            double v;
            if ((st = number_token(p, s + t0, i - t0, "coefficient", &v)) != IC_OK)
                return st;
            if (p->cur == 0) {
                if (p->h == IC_MAX_KERNEL)
                    return ic_errf(p->err, p->errlen, IC_ERR_KERNEL, "more than %d rows",
                                   IC_MAX_KERNEL);
                p->cur_line = line;
            }
            if (p->cur == IC_MAX_KERNEL) {
                char where[48];
                row_name(p, p->h + 1, p->cur_line, where, sizeof where);
                return ic_errf(p->err, p->errlen, IC_ERR_KERNEL, "%s has more than %d values",
                               where, IC_MAX_KERNEL);
            }
            /* Row 1 fixes the width; later rows store only what fits it (a
             * longer row is reported by end_row). */
            if (p->h == 0)
                p->vals[p->cur] = (float)v;
            else if (p->cur < p->w)
                p->vals[(size_t)p->h * (size_t)p->w + (size_t)p->cur] = (float)v;
            p->cur++;
        }
    }
    return end_row(p);
}

/* Parses matrix text into *k (width/height checks and coefficient checks by
 * ic__kernel_make). mat_w/mat_h > 0 require that size (.mat bodies). */
static ic_status matrix_parse_text(ic_kernel *k, const char *s, size_t n, int by_line,
                                   int line_base, int mat_w, int mat_h, double mat_scale, char *err,
                                   size_t errlen)
{
    matrix_parse p;
    memset(&p, 0, sizeof p);
    p.s = s;
    p.n = n;
    p.by_line = by_line;
    p.line_base = line_base;
    p.allow_div = mat_w == 0;
    p.divisor = 1.0;
    p.err = err;
    p.errlen = errlen;
    p.vals = malloc((size_t)IC_MAX_KERNEL * IC_MAX_KERNEL * sizeof *p.vals);
    if (!p.vals)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");

    ic_status st = matrix_run(&p);
    if (st == IC_OK && p.h == 0)
        st = ic_errf(err, errlen, IC_ERR_KERNEL,
                     mat_w ? "no coefficient rows after the .mat header"
                           : "empty kernel (no coefficients)");
    if (st == IC_OK && mat_w && p.w != mat_w)
        st = ic_errf(err, errlen, IC_ERR_KERNEL,
                     "row 1 has %d values, the .mat header says width %d", p.w, mat_w);
    if (st == IC_OK && mat_h && p.h != mat_h)
        st = ic_errf(err, errlen, IC_ERR_KERNEL, "found %d rows, the .mat header says height %d",
                     p.h, mat_h);
    if (st == IC_OK)
        st = ic__kernel_make(k, p.w, p.h, p.vals, mat_w ? mat_scale : p.divisor, err, errlen);
    free(p.vals);
    return st;
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

static int has_mat_extension(const char *path)
{
    size_t n = strlen(path);
    return n >= 4 && lower_eq(path + n - 4, 4, ".mat");
}

/* Splits the line [s, s+n) (no comment) into at most `max` tokens separated by
 * spaces, tabs or commas; returns the token count (may exceed max). */
static int split_line(const char *s, size_t n, const char **tok, size_t *len, int max)
{
    int count = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && (is_space(s[i]) || s[i] == ','))
            i++;
        if (i == n)
            break;
        size_t t0 = i;
        while (i < n && !is_space(s[i]) && s[i] != ',')
            i++;
        if (count < max) {
            tok[count] = s + t0;
            len[count] = i - t0;
        }
        count++;
    }
    return count;
}

/* The first line holding something besides blanks and comments: its start,
 * its length without the comment and the line number; 0 when there is none. */
static int first_data_line(const char *s, size_t n, size_t *start, size_t *len, size_t *next,
                           int *lineno)
{
    size_t i = 0;
    int line = 1;
    while (i < n) {
        size_t b = i, e;
        while (i < n && s[i] != '\n')
            i++;
        e = i;
        for (size_t t = b; t < e; t++)
            if (s[t] == '#') {
                e = t;
                break;
            }
        for (size_t t = b; t < e; t++)
            if (!is_space(s[t])) {
                *start = b;
                *len = e - b;
                *next = i < n ? i + 1 : n;
                *lineno = line;
                return 1;
            }
        if (i < n)
            i++;
        line++;
    }
    return 0;
}

/* A header field that must be an integer size 1..IC_MAX_KERNEL. */
static ic_status mat_size(const char *tok, size_t len, const char *what, int *out, char *err,
                          size_t errlen)
{
    double v;
    char q[128];
    if (ic__kernel_number(tok, len, &v) != IC_NUM_OK || v != floor(v) || v < 1 ||
        v > IC_MAX_KERNEL) {
        ic__kernel_quote(q, sizeof q, tok, len);
        return ic_errf(err, errlen, IC_ERR_KERNEL, ".mat header: %s %s is not an integer in 1..%d",
                       what, q, IC_MAX_KERNEL);
    }
    *out = (int)v;
    return IC_OK;
}

static ic_status mat_real(const char *tok, size_t len, const char *what, double *out, char *err,
                          size_t errlen)
{
    char q[128];
    int r = ic__kernel_number(tok, len, out);
    if (r == IC_NUM_OK)
        return IC_OK;
    ic__kernel_quote(q, sizeof q, tok, len);
    return ic_errf(err, errlen, IC_ERR_KERNEL, ".mat header: %s %s is %s", what, q,
                   r == IC_NUM_NONFINITE ? "not finite" : "not a number");
}

/* Parses file contents: a libvips .mat ("W H [SCALE OFFSET]" header, then H
 * rows of W numbers) when the first line holds 2 or 4 fields (a matrix row
 * never has an even count), else matrix text by lines. A file named .mat
 * without such a header is taken as a plain matrix when it reads as one
 * (people save plain matrices under .mat); otherwise the header error says
 * what was expected. */
static ic_status parse_file_contents(ic_kernel *k, const char *s, size_t n, int force_mat,
                                     char *err, size_t errlen)
{
    size_t start, len, next;
    int lineno;
    if (!first_data_line(s, n, &start, &len, &next, &lineno))
        return ic_errf(err, errlen, IC_ERR_KERNEL, "empty kernel file (no coefficients)");

    const char *tok[4];
    size_t tlen[4];
    int count = split_line(s + start, len, tok, tlen, 4);
    int plain_chars = 1;
    for (size_t t = start; t < start + len; t++)
        if (s[t] == ';' || s[t] == '/')
            plain_chars = 0;
    const int is_mat = plain_chars && (count == 2 || count == 4);
    if (!is_mat && !force_mat)
        return matrix_parse_text(k, s, n, 1, 1, 0, 0, 1.0, err, errlen);
    if (!is_mat) {
        char merr[200] = "";
        ic_status st = matrix_parse_text(k, s, n, 1, 1, 0, 0, 1.0, merr, sizeof merr);
        if (st == IC_OK || st == IC_ERR_NOMEM)
            return st == IC_OK ? IC_OK : ic_errf(err, errlen, st, "%s", merr);
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       ".mat header (line %d) has %d fields; expected 'WIDTH HEIGHT "
                       "[SCALE OFFSET]' (nor is it a plain matrix: %s)",
                       lineno, count, merr);
    }
    int w = 0, h = 0;
    double scale = 1.0, offset = 0.0;
    ic_status st;
    if ((st = mat_size(tok[0], tlen[0], "width", &w, err, errlen)) != IC_OK ||
        (st = mat_size(tok[1], tlen[1], "height", &h, err, errlen)) != IC_OK)
        return st;
    if (count == 4) {
        if ((st = mat_real(tok[2], tlen[2], "scale", &scale, err, errlen)) != IC_OK ||
            (st = mat_real(tok[3], tlen[3], "offset", &offset, err, errlen)) != IC_OK)
            return st;
        if (scale == 0.0)
            return ic_errf(err, errlen, IC_ERR_KERNEL, ".mat header: scale (the divisor) is zero");
        /* The offset is added to --bias and the scale divides every weight:
         * both get --bias's range, so that neither overflows float32 later. */
        if (fabs(scale) > IC_MAX_BIAS || fabs(scale) < 1.0 / IC_MAX_BIAS)
            return ic_errf(err, errlen, IC_ERR_KERNEL,
                           ".mat header: scale %g is outside 1e-6..1e6 in magnitude", scale);
        if (fabs(offset) > IC_MAX_BIAS)
            return ic_errf(err, errlen, IC_ERR_KERNEL,
                           ".mat header: offset %g is outside -1e6..1e6 (the --bias range)",
                           offset);
    }
    st = matrix_parse_text(k, s + next, n - next, 1, lineno + 1, w, h, scale, err, errlen);
    if (st == IC_OK)
        k->offset = offset;
    return st;
}

/* Reads a whole file (at most IC_KERNEL_FILE_MAX bytes) into a malloc'd buffer. */
static ic_status read_file(const char *path, char **data, size_t *size, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return ic_errf(err, errlen, IC_ERR_IO, "cannot open kernel file: %s", strerror(errno));
    size_t cap = 0, got = 0;
    char *buf = NULL;
    ic_status st = IC_OK;
    for (;;) {
        if (got == cap) {
            if (cap > IC_KERNEL_FILE_MAX)
                break; /* one byte past the limit was read: reported below */
            size_t ncap = cap ? cap * 2 : 4096;
            if (ncap > IC_KERNEL_FILE_MAX + 1)
                ncap = IC_KERNEL_FILE_MAX + 1;
            char *nb = realloc(buf, ncap);
            if (!nb) {
                st = ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
                break;
            }
            buf = nb;
            cap = ncap;
        }
        size_t r = fread(buf + got, 1, cap - got, f);
        got += r;
        if (r == 0) {
            if (ferror(f))
                st =
                    ic_errf(err, errlen, IC_ERR_IO, "cannot read kernel file: %s", strerror(errno));
            break;
        }
    }
    fclose(f);
    if (st == IC_OK && got > IC_KERNEL_FILE_MAX)
        st = ic_errf(err, errlen, IC_ERR_KERNEL, "kernel file is larger than %zu bytes",
                     IC_KERNEL_FILE_MAX);
    if (st != IC_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *size = got;
    return IC_OK;
}

static ic_status kernel_load(ic_kernel *k, const char *path, char *err, size_t errlen)
{
    if (!k || !path)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "no kernel or path (NULL)");
    memset(k, 0, sizeof *k);
    if (!path[0])
        return ic_errf(err, errlen, IC_ERR_IO, "empty kernel file name");

    char *data = NULL;
    size_t size = 0;
    ic_status st = read_file(path, &data, &size, err, errlen);
    if (st != IC_OK)
        return st;
    st = parse_file_contents(k, data, size, has_mat_extension(path), err, errlen);
    free(data);
    if (st == IC_OK) {
        const char *base = strrchr(path, '/');
        base = base ? base + 1 : path;
        snprintf(k->name, sizeof k->name, "%dx%d from %.40s", k->width, k->height, base);
    }
    return st;
}

/* ------------------------------------------------------------------------ */
/* Kernel text                                                               */
/* ------------------------------------------------------------------------ */

/* Named kernels start with a letter; "nan"/"inf" at the start are bad matrix
 * coefficients, so they get the matrix parser's message. */
static int looks_named(const char *s, size_t n)
{
    if (n == 0 || !isalpha((unsigned char)s[0]))
        return 0;
    size_t w = 0;
    while (w < n && (isalnum((unsigned char)s[w]) || s[w] == '-' || s[w] == '_'))
        w++;
    return !(lower_eq(s, w, "nan") || lower_eq(s, w, "inf") || lower_eq(s, w, "infinity"));
}

static ic_status kernel_parse(ic_kernel *k, const char *text, char *err, size_t errlen)
{
    if (!k || !text)
        return ic_errf(err, errlen, IC_ERR_INVALID_ARG, "no kernel or text (NULL)");
    memset(k, 0, sizeof *k);

    size_t n = strlen(text);
    while (n > 0 && (is_space(text[0]) || text[0] == '\n')) {
        text++;
        n--;
    }
    while (n > 0 && (is_space(text[n - 1]) || text[n - 1] == '\n'))
        n--;
    if (n == 0)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "empty kernel text");

    if (text[0] == '@') {
        if (n == 1 || is_space(text[1]))
            return ic_errf(err, errlen, IC_ERR_KERNEL,
                           "'@' must be followed by a kernel file name");
        char *path = malloc(n); /* the n-1 bytes after '@' and a NUL */
        if (!path)
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        memcpy(path, text + 1, n - 1);
        path[n - 1] = '\0';
        char sub[256] = "";
        ic_status st = kernel_load(k, path, sub, sizeof sub);
        if (st != IC_OK)
            ic_errf(err, errlen, st, "%s: %s", path, sub);
        free(path);
        return st;
    }
    if (looks_named(text, n))
        return ic__kernel_named(k, text, n, err, errlen);
    return matrix_parse_text(k, text, n, 0, 1, 0, 0, 1.0, err, errlen);
}

ic_status ic_kernel_load(ic_kernel *k, const char *path)
{
    char err[256] = "";
    return ic_fail_msg(kernel_load(k, path, err, sizeof err), err);
}

ic_status ic_kernel_parse(ic_kernel *k, const char *text)
{
    char err[256] = "";
    return ic_fail_msg(kernel_parse(k, text, err, sizeof err), err);
}
