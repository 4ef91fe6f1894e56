/*
 * kernels_named.c - the named kernels of --kernel NAME[:ARGS] and their table
 * (the single source of --list-filters).
 *
 * Seed 004 names the filters the system applies: box blur, Gaussian blur, edge
 * detection, sharpen and unsharp mask; we add the usual derivative kernels,
 * Laplacians, emboss and motion blur.
 *
 * Arguments: ARGS := ARG { ',' ARG },  ARG := VALUE | KEY '=' VALUE, positional
 * arguments first, in the order the table lists them. Sizes are "N" or "WxH"
 * (width first) where non-square makes sense.
 *
 * Orientation: weights are listed row-major as they lie over the image in
 * CORRELATION orientation (K(i,j) multiplies in(x+i-cx, y+j-cy), y down).
 * ic_convolve's default convolution flips them, so sobel-x under convolution
 * responds with the opposite sign; --correlate gives OpenCV's filter2D sign.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"
#include "kernel_internal.h"

#define NK_PARAMS 3

typedef struct named_args {
    const char *val[NK_PARAMS]; /* NULL when not given */
    size_t len[NK_PARAMS];
} named_args;

typedef struct named_spec named_spec;
typedef ic_status (*named_gen)(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                               size_t errlen);
struct named_spec {
    const char *name;
    named_gen gen;
    const float *fixed;            /* 3x3 coefficients of fixed kernels */
    const char *params[NK_PARAMS]; /* positional order; NULL-terminated */
};

/* Fixed 3x3 kernels, correlation orientation, row-major (row 0 on top). */
static const float k_sharpen[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
static const float k_sobel_x[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
static const float k_sobel_y[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
static const float k_prewitt_x[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
static const float k_prewitt_y[9] = {-1, -1, -1, 0, 0, 0, 1, 1, 1};
static const float k_scharr_x[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
static const float k_scharr_y[9] = {-3, -10, -3, 0, 0, 0, 3, 10, 3};
static const float k_emboss[9] = {-2, -1, 0, -1, 1, 1, 0, 1, 2};
static const float k_laplacian4[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
static const float k_laplacian8[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};

static ic_status gen_identity(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_box(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_gaussian(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_unsharp(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_laplacian(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_fixed(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_motion(ic_kernel *, const named_spec *, const named_args *, char *, size_t);
static ic_status gen_magnitude(ic_kernel *, const named_spec *, const named_args *, char *, size_t);

/* The table: X(name, args, summary, generator, fixed weights, param0, param1, param2). */
#define IC_NAMED_KERNELS(X)                                                                        \
    X("identity", "size=1 (N or WxH)", "copies the image: 1 at the centre, 0 elsewhere",           \
      gen_identity, NULL, "size", NULL, NULL)                                                      \
    X("box", "size=3 (N or WxH)",                                                                  \
      "box blur: the mean of a WxH window (weights 1/(W*H)), any size up to 65535", gen_box, NULL, \
      "size", NULL, NULL)                                                                          \
    X("gaussian",                                                                                  \
      "size=3 (N or WxH), sigma=0 (S or SXxSY; 0: 0.3*((size-1)/2-1)+0.8; sigma alone: "           \
      "size=2*ceil(3*sigma)+1; any sigma up to 10922, constant time per pixel)",                   \
      "Gaussian blur, separable, normalised to sum 1", gen_gaussian, NULL, "size", "sigma", NULL)  \
    X("sharpen", "(none)", "3x3 sharpen: 0 -1 0 / -1 5 -1 / 0 -1 0 (sums to 1)", gen_fixed,        \
      k_sharpen, NULL, NULL, NULL)                                                                 \
    X("unsharp", "size=5 (N or WxH), sigma=0 (as gaussian), amount=1",                             \
      "unsharp mask: identity + amount*(identity - gaussian) (sums to 1)", gen_unsharp, NULL,      \
      "size", "sigma", "amount")                                                                   \
    X("laplacian", "neighbours=4 (4 or 8)",                                                        \
      "Laplacian: 0 1 0 / 1 -4 1 / 0 1 0, or with 8: 1 1 1 / 1 -8 1 / 1 1 1 (sums to 0)",          \
      gen_laplacian, NULL, "neighbours", NULL, NULL)                                               \
    X("sobel-x", "(none)",                                                                         \
      "d/dx: -1 0 1 / -2 0 2 / -1 0 1, positive on the right in correlation orientation",          \
      gen_fixed, k_sobel_x, NULL, NULL, NULL)                                                      \
    X("sobel-y", "(none)",                                                                         \
      "d/dy: -1 -2 -1 / 0 0 0 / 1 2 1, positive at the bottom in correlation orientation",         \
      gen_fixed, k_sobel_y, NULL, NULL, NULL)                                                      \
    X("prewitt-x", "(none)",                                                                       \
      "d/dx: -1 0 1 on each row, positive on the right in correlation orientation", gen_fixed,     \
      k_prewitt_x, NULL, NULL, NULL)                                                               \
    X("prewitt-y", "(none)",                                                                       \
      "d/dy: -1 -1 -1 / 0 0 0 / 1 1 1, positive at the bottom in correlation orientation",         \
      gen_fixed, k_prewitt_y, NULL, NULL, NULL)                                                    \
    X("scharr-x", "(none)",                                                                        \
      "d/dx: -3 0 3 / -10 0 10 / -3 0 3, positive on the right in correlation orientation",        \
      gen_fixed, k_scharr_x, NULL, NULL, NULL)                                                     \
    X("scharr-y", "(none)",                                                                        \
      "d/dy: -3 -10 -3 / 0 0 0 / 3 10 3, positive at the bottom in correlation orientation",       \
      gen_fixed, k_scharr_y, NULL, NULL, NULL)                                                     \
    X("sobel", "(none)",                                                                           \
      "edge strength sqrt(gx^2 + gy^2) of sobel-x and sobel-y, unscaled as OpenCV's Sobel + "      \
      "magnitude",                                                                                 \
      gen_magnitude, k_sobel_x, NULL, NULL, NULL)                                                  \
    X("scharr", "(none)", "edge strength sqrt(gx^2 + gy^2) of scharr-x and scharr-y, unscaled",    \
      gen_magnitude, k_scharr_x, NULL, NULL, NULL)                                                 \
    X("prewitt", "(none)", "edge strength sqrt(gx^2 + gy^2) of prewitt-x and prewitt-y, unscaled", \
      gen_magnitude, k_prewitt_x, NULL, NULL, NULL)                                                \
    X("emboss", "(none)", "3x3 emboss: -2 -1 0 / -1 1 1 / 0 1 2 (sums to 1)", gen_fixed, k_emboss, \
      NULL, NULL, NULL)                                                                            \
    X("motion", "length=9, angle=0 (degrees, counter-clockwise from +x)",                          \
      "motion blur: anti-aliased line of `length` pixels through the centre, sum 1, in the "       \
      "smallest odd box holding it",                                                               \
      gen_motion, NULL, "length", "angle", NULL)

#define IC_NK_INFO(n, a, s, g, f, p0, p1, p2) {n, a, s},
#define IC_NK_SPEC(n, a, s, g, f, p0, p1, p2) {n, g, f, {p0, p1, p2}},
static const ic_named_kernel_info k_info[] = {IC_NAMED_KERNELS(IC_NK_INFO)};
static const named_spec k_spec[] = {IC_NAMED_KERNELS(IC_NK_SPEC)};
#define NK_COUNT ((int)(sizeof k_info / sizeof k_info[0]))

const ic_named_kernel_info *ic_kernel_list(int *count)
{
    if (count)
        *count = NK_COUNT;
    return k_info;
}

/* ------------------------------------------------------------------------ */
/* Arguments                                                                 */
/* ------------------------------------------------------------------------ */

static int is_blank(char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
}

static void trim(const char **s, size_t *n)
{
    while (*n > 0 && is_blank(**s)) {
        (*s)++;
        (*n)--;
    }
    while (*n > 0 && is_blank((*s)[*n - 1]))
        (*n)--;
}

/* Case-insensitive: do the n bytes at s spell word? */
static int ieq(const char *s, size_t n, const char *word)
{
    size_t i = 0;
    for (; i < n && word[i]; i++)
        if (tolower((unsigned char)s[i]) != tolower((unsigned char)word[i]))
            return 0;
    return i == n && word[i] == '\0';
}

static int param_count(const named_spec *sp)
{
    int n = 0;
    while (n < NK_PARAMS && sp->params[n])
        n++;
    return n;
}

/* "size, sigma" */
static void param_list(const named_spec *sp, char *buf, size_t len)
{
    size_t o = 0;
    buf[0] = '\0';
    for (int i = 0; i < param_count(sp) && o < len; i++) {
        int r = snprintf(buf + o, len - o, "%s%s", i ? ", " : "", sp->params[i]);
        if (r < 0)
            break;
        o += (size_t)r;
    }
}

/* Splits ARGS (the n bytes after ':') into a->val[] by position or key. */
static ic_status parse_args(const named_spec *sp, const char *s, size_t n, named_args *a, char *err,
                            size_t errlen)
{
    const int np = param_count(sp);
    char q[128], list[96];
    int pos = 0, seen_key = 0, item = 0;
    size_t i = 0;

    memset(a, 0, sizeof *a);
    param_list(sp, list, sizeof list);
    if (np == 0)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "%s takes no arguments", sp->name);
    for (;;) {
        size_t b = i;
        while (i < n && s[i] != ',')
            i++;
        const char *it = s + b;
        size_t il = i - b;
        item++;
        trim(&it, &il);
        if (il == 0)
            return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: argument %d is empty (arguments: %s)",
                           sp->name, item, list);
        const char *eq = memchr(it, '=', il);
        int idx;
        const char *val;
        size_t vl;
        if (eq) {
            const char *key = it;
            size_t kl = (size_t)(eq - it);
            trim(&key, &kl);
            val = eq + 1;
            vl = (size_t)(it + il - val);
            trim(&val, &vl);
            for (idx = 0; idx < np; idx++)
                if (ieq(key, kl, sp->params[idx]))
                    break;
            if (idx == np) {
                ic__kernel_quote(q, sizeof q, key, kl);
                return ic_errf(err, errlen, IC_ERR_KERNEL,
                               "%s: unknown argument %s (arguments: %s)", sp->name, q, list);
            }
            seen_key = 1;
        } else {
            if (seen_key) {
                ic__kernel_quote(q, sizeof q, it, il);
                return ic_errf(err, errlen, IC_ERR_KERNEL,
                               "%s: positional argument %s after key=value ones", sp->name, q);
            }
            if (pos == np)
                return ic_errf(err, errlen, IC_ERR_KERNEL, "%s takes at most %d argument%s (%s)",
                               sp->name, np, np == 1 ? "" : "s", list);
            idx = pos++;
            val = it;
            vl = il;
        }
        if (vl == 0)
            return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: argument '%s' has no value", sp->name,
                           sp->params[idx]);
        if (a->val[idx])
            return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: argument '%s' given twice", sp->name,
                           sp->params[idx]);
        a->val[idx] = val;
        a->len[idx] = vl;
        if (i == n)
            break;
        i++; /* past ',' */
    }
    return IC_OK;
}

/* One size: a decimal integer, odd, 1..max. */
static ic_status one_size(const named_spec *sp, const char *what, const char *s, size_t n, int max,
                          int *out, char *err, size_t errlen)
{
    char q[128];
    long v = 0;
    size_t i = 0;
    ic__kernel_quote(q, sizeof q, s, n);
    if (n == 0 || n > 6)
        goto bad;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)s[i]))
            goto bad;
        v = v * 10 + (s[i] - '0');
    }
    if (v < 1 || v > max)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: %s %s must be 1..%d", sp->name, what, q,
                       max);
    if (!(v & 1))
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       "%s: %s %s must be odd (the kernel needs a centre)", sp->name, what, q);
    *out = (int)v;
    return IC_OK;
bad:
    return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: %s %s is not an odd integer (N or WxH)",
                   sp->name, what, q);
}

/* Argument idx as a size "N" or "WxH" (each odd, 1..max); def when absent. */
static ic_status arg_size_max(const named_spec *sp, const named_args *a, int idx, int def, int max,
                              int *w, int *h, char *err, size_t errlen)
{
    const char *s = a->val[idx];
    size_t n = a->len[idx];
    if (!s) {
        *w = *h = def;
        return IC_OK;
    }
    const char *x = memchr(s, 'x', n);
    if (!x)
        x = memchr(s, 'X', n);
    if (!x) {
        ic_status st = one_size(sp, sp->params[idx], s, n, max, w, err, errlen);
        *h = *w;
        return st;
    }
    ic_status st = one_size(sp, "width", s, (size_t)(x - s), max, w, err, errlen);
    if (st == IC_OK)
        st = one_size(sp, "height", x + 1, n - (size_t)(x - s) - 1, max, h, err, errlen);
    return st;
}

static ic_status arg_size(const named_spec *sp, const named_args *a, int idx, int def, int *w,
                          int *h, char *err, size_t errlen)
{
    return arg_size_max(sp, a, idx, def, IC_MAX_KERNEL, w, h, err, errlen);
}

/* Argument idx as a finite real; def when absent. */
static ic_status arg_real(const named_spec *sp, const named_args *a, int idx, double def, double *v,
                          char *err, size_t errlen)
{
    char q[128];
    if (!a->val[idx]) {
        *v = def;
        return IC_OK;
    }
    int r = ic__kernel_number(a->val[idx], a->len[idx], v);
    if (r == IC_NUM_OK)
        return IC_OK;
    ic__kernel_quote(q, sizeof q, a->val[idx], a->len[idx]);
    return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: %s %s is %s", sp->name, sp->params[idx], q,
                   r == IC_NUM_NONFINITE ? "not finite" : "not a number");
}

/* ------------------------------------------------------------------------ */
/* Generators                                                                */
/* ------------------------------------------------------------------------ */

/* Makes the kernel from a scratch buffer and frees the buffer. */
static ic_status finish(ic_kernel *k, int w, int h, float *c, double divisor, char *err,
                        size_t errlen)
{
    ic_status st = ic__kernel_make(k, w, h, c, divisor, err, errlen);
    free(c);
    return st;
}

/* A blur too large for coefficients: its shape only (backends with a blur path run it). */
static ic_status blur_shape(ic_kernel *k, int w, int h)
{
    memset(k, 0, sizeof *k);
    k->width = w;
    k->height = h;
    k->divisor = 1.0;
    return IC_OK;
}

static float *scratch(int w, int h)
{
    return calloc((size_t)w * (size_t)h, sizeof(float));
}

static ic_status gen_identity(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                              size_t errlen)
{
    int w, h;
    ic_status st = arg_size(sp, a, 0, 1, &w, &h, err, errlen);
    if (st != IC_OK)
        return st;
    float *c = scratch(w, h);
    if (!c)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    c[(size_t)(h / 2) * (size_t)w + (size_t)(w / 2)] = 1.0f;
    if ((st = finish(k, w, h, c, 1.0, err, errlen)) == IC_OK && (w > 1 || h > 1))
        snprintf(k->name, sizeof k->name, "identity:%dx%d", w, h);
    else if (st == IC_OK)
        snprintf(k->name, sizeof k->name, "identity");
    return st;
}

static ic_status gen_box(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                         size_t errlen)
{
    int w, h;
    ic_status st = arg_size_max(sp, a, 0, 3, IC_MAX_BLUR, &w, &h, err, errlen);
    if (st != IC_OK)
        return st;
    if (w <= IC_MAX_KERNEL && h <= IC_MAX_KERNEL) {
        float *c = scratch(w, h);
        if (!c)
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        for (size_t t = 0; t < (size_t)w * (size_t)h; t++)
            c[t] = 1.0f;
        /* Integer coefficients over the count keep the weights exact in float64. */
        st = finish(k, w, h, c, (double)w * h, err, errlen);
    } else {
        st = blur_shape(k, w, h);
    }
    if (st == IC_OK) {
        snprintf(k->name, sizeof k->name, "box:%dx%d", w, h);
        k->blur = IC_BLUR_BOX;
    }
    return st;
}

/* OpenCV's getGaussianKernel rule for a sigma chosen from the size. */
static double sigma_from_size(int n)
{
    return 0.3 * ((n - 1) * 0.5 - 1.0) + 0.8;
}

/* Normalised samples exp(-i^2 / (2 sigma^2)), i = -(n-1)/2 .. (n-1)/2. */
static void gauss_1d(int n, double sigma, double *g)
{
    double sum = 0.0;
    for (int i = 0; i < n; i++) {
        double x = i - (n - 1) / 2;
        /* the centre is 1 even when sigma^2 underflows (0/0 otherwise) */
        g[i] = x == 0 ? 1.0 : exp(-(x * x) / (2.0 * sigma * sigma));
        sum += g[i];
    }
    for (int i = 0; i < n; i++)
        g[i] /= sum; /* sum >= 1: the centre sample is exp(0) */
}

typedef struct gauss_shape {
    int w, h;
    double sx, sy;
    int truncated; /* an explicit size under the support 2*ceil(3 sigma)+1 */
} gauss_shape;

/* The support 2*ceil(3 sigma)+1 of a sigma (at most (IC_MAX_BLUR-1)/6). */
static int gauss_support(double sigma)
{
    return 2 * (int)ceil(3.0 * sigma) + 1;
}

/* One sigma value: a finite number. */
static ic_status one_sigma(const named_spec *sp, const char *s, size_t n, double *v, char *err,
                           size_t errlen)
{
    char q[128];
    int r = ic__kernel_number(s, n, v);
    if (r == IC_NUM_OK)
        return IC_OK;
    ic__kernel_quote(q, sizeof q, s, n);
    return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: sigma %s is %s", sp->name, q,
                   r == IC_NUM_NONFINITE ? "not finite" : "not a number");
}

/* Argument idx as sigma "S" or "SXxSY"; 0 when absent. */
static ic_status arg_sigma(const named_spec *sp, const named_args *a, int idx, double *sx,
                           double *sy, char *err, size_t errlen)
{
    const char *s = a->val[idx];
    size_t n = a->len[idx];
    *sx = *sy = 0.0;
    if (!s)
        return IC_OK;
    const char *x = memchr(s, 'x', n);
    if (!x)
        x = memchr(s, 'X', n);
    if (!x) {
        ic_status st = one_sigma(sp, s, n, sx, err, errlen);
        *sy = *sx;
        return st;
    }
    ic_status st = one_sigma(sp, s, (size_t)(x - s), sx, err, errlen);
    if (st == IC_OK)
        st = one_sigma(sp, x + 1, n - (size_t)(x - s) - 1, sy, err, errlen);
    return st;
}

/* Size and sigma arguments (at size_idx, size_idx + 1) of gaussian and unsharp;
 * sizes up to max. sigma 0 (or absent) with a size takes OpenCV's sigma of it. */
static ic_status gauss_args(const named_spec *sp, const named_args *a, int size_idx, int def_size,
                            int max, gauss_shape *g, char *err, size_t errlen)
{
    double sx, sy;
    ic_status st = arg_sigma(sp, a, size_idx + 1, &sx, &sy, err, errlen);
    if (st != IC_OK)
        return st;
    const int sized = a->val[size_idx] != NULL;
    if (sx < 0 || sy < 0 || (a->val[size_idx + 1] && !sized && (sx == 0 || sy == 0)))
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       "%s: sigma must be > 0 (0 only with a size: from the size)", sp->name);
    const double smax = (max - 1) / 6.0;
    if (sx > smax || sy > smax) /* before ceil(): a huge sigma would overflow the support */
        return ic_errf(err, errlen, IC_ERR_KERNEL,
                       "%s: sigma %g is over the largest, %.2f (a kernel of %d)", sp->name,
                       sx > sy ? sx : sy, smax, max);
    memset(g, 0, sizeof *g);
    if (!sized && sx > 0) {
        g->w = gauss_support(sx);
        g->h = gauss_support(sy);
    } else if ((st = arg_size_max(sp, a, size_idx, def_size, max, &g->w, &g->h, err, errlen)) !=
               IC_OK) {
        return st;
    }
    g->truncated = (sx > 0 && g->w < gauss_support(sx)) || (sy > 0 && g->h < gauss_support(sy));
    g->sx = sx > 0 ? sx : sigma_from_size(g->w);
    g->sy = sy > 0 ? sy : sigma_from_size(g->h);
    return IC_OK;
}

/* The separable Gaussian as w*h floats (outer product of the 1D ones). */
static float *gauss_2d(const gauss_shape *g)
{
    double *gx = malloc((size_t)(g->w + g->h) * sizeof *gx);
    float *c = scratch(g->w, g->h);
    if (!gx || !c) {
        free(gx);
        free(c);
        return NULL;
    }
    double *gy = gx + g->w;
    gauss_1d(g->w, g->sx, gx);
    gauss_1d(g->h, g->sy, gy);
    for (int j = 0; j < g->h; j++)
        for (int i = 0; i < g->w; i++)
            c[(size_t)j * (size_t)g->w + (size_t)i] = (float)(gy[j] * gx[i]);
    free(gx);
    return c;
}

/* "5x5 s=1.10" or "5x3 s=1.10,0.80" */
static void gauss_label(const gauss_shape *g, char *buf, size_t len)
{
    if (g->sx == g->sy)
        snprintf(buf, len, "%dx%d s=%.2f", g->w, g->h, g->sx);
    else
        snprintf(buf, len, "%dx%d s=%.2f,%.2f", g->w, g->h, g->sx, g->sy);
}

static ic_status gen_gaussian(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                              size_t errlen)
{
    gauss_shape g;
    char label[48];
    ic_status st = gauss_args(sp, a, 0, 3, IC_MAX_BLUR, &g, err, errlen);
    if (st != IC_OK)
        return st;
    if (g.w <= IC_MAX_KERNEL && g.h <= IC_MAX_KERNEL) {
        float *c = gauss_2d(&g);
        if (!c)
            return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
        st = finish(k, g.w, g.h, c, 1.0, err, errlen);
    } else {
        st = blur_shape(k, g.w, g.h);
    }
    if (st != IC_OK)
        return st;
    gauss_label(&g, label, sizeof label);
    snprintf(k->name, sizeof k->name, "gaussian:%s", label);
    k->blur = IC_BLUR_GAUSSIAN;
    k->sigma_x = g.sx;
    k->sigma_y = g.sy;
    if (g.truncated)
        snprintf(k->warning, sizeof k->warning,
                 "gaussian: size %dx%d cuts the Gaussian short of its support %dx%d (3 sigma)", g.w,
                 g.h, gauss_support(g.sx), gauss_support(g.sy));
    return IC_OK;
}

static ic_status gen_unsharp(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                             size_t errlen)
{
    gauss_shape g;
    double amount;
    char label[48];
    ic_status st = gauss_args(sp, a, 0, 5, IC_MAX_KERNEL, &g, err, errlen);
    if (st == IC_OK)
        st = arg_real(sp, a, 2, 1.0, &amount, err, errlen);
    if (st != IC_OK)
        return st;
    if (fabs(amount) > 1e6)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: amount %g is out of range", sp->name,
                       amount);
    float *c = gauss_2d(&g);
    if (!c)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    /* identity + amount*(identity - G), computed in double per coefficient. */
    const size_t centre = (size_t)(g.h / 2) * (size_t)g.w + (size_t)(g.w / 2);
    for (size_t t = 0; t < (size_t)g.w * (size_t)g.h; t++)
        c[t] = (float)((t == centre ? 1.0 + amount : 0.0) - amount * (double)c[t]);
    if ((st = finish(k, g.w, g.h, c, 1.0, err, errlen)) == IC_OK) {
        gauss_label(&g, label, sizeof label);
        snprintf(k->name, sizeof k->name, "unsharp:%s a=%.2f", label, amount);
    }
    return st;
}

static ic_status fixed_3x3(ic_kernel *k, const float *w, const char *name, char *err, size_t errlen)
{
    ic_status st = ic__kernel_make(k, 3, 3, w, 1.0, err, errlen);
    if (st == IC_OK)
        snprintf(k->name, sizeof k->name, "%s", name);
    return st;
}

static ic_status gen_fixed(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                           size_t errlen)
{
    (void)a;
    return fixed_3x3(k, sp->fixed, sp->name, err, errlen);
}

/* The x kernel, flagged so that its transpose (the y kernel) joins it as
 * sqrt(gx^2 + gy^2) (docs/definitions.md#edge-strength). */
static ic_status gen_magnitude(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                               size_t errlen)
{
    (void)a;
    const ic_status st = fixed_3x3(k, sp->fixed, sp->name, err, errlen);
    if (st == IC_OK)
        k->magnitude = 1;
    return st;
}

static ic_status gen_laplacian(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                               size_t errlen)
{
    double nb;
    ic_status st = arg_real(sp, a, 0, 4.0, &nb, err, errlen);
    if (st != IC_OK)
        return st;
    if (nb != 4.0 && nb != 8.0)
        return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: neighbours must be 4 or 8, got %g",
                       sp->name, nb);
    return fixed_3x3(k, nb == 4.0 ? k_laplacian4 : k_laplacian8,
                     nb == 4.0 ? "laplacian:4" : "laplacian:8", err, errlen);
}

/* Motion blur: a segment of `length` pixels (between the end pixel centres:
 * half-length h = (length-1)/2) through the centre at `angle` degrees
 * counter-clockwise on screen (y grows down). Each pixel weighs
 * max(0, 1 - distance to the segment), a tent across the line, so that a
 * horizontal length-5 line is exactly 1 1 1 1 1; normalised to sum 1. */
static ic_status gen_motion(ic_kernel *k, const named_spec *sp, const named_args *a, char *err,
                            size_t errlen)
{
    const double max_len = IC_MAX_KERNEL - 2; /* the tent reaches one pixel past h */
    double len, angle;
    ic_status st = arg_real(sp, a, 0, 9.0, &len, err, errlen);
    if (st == IC_OK)
        st = arg_real(sp, a, 1, 0.0, &angle, err, errlen);
    if (st != IC_OK)
        return st;
    if (!(len >= 1.0 && len <= max_len))
        return ic_errf(err, errlen, IC_ERR_KERNEL, "%s: length %g must be 1..%g", sp->name, len,
                       max_len);

    double deg = fmod(angle, 360.0);
    if (deg < 0)
        deg += 360.0;
    if (deg >= 360.0)
        deg -= 360.0;
    double cs, sn; /* exact on the axes, where cos(pi/2) would leave 6e-17 */
    if (deg == 0.0) {
        cs = 1;
        sn = 0;
    } else if (deg == 90.0) {
        cs = 0;
        sn = 1;
    } else if (deg == 180.0) {
        cs = -1;
        sn = 0;
    } else if (deg == 270.0) {
        cs = 0;
        sn = -1;
    } else {
        const double r = deg * (3.14159265358979323846 / 180.0);
        cs = cos(r);
        sn = sin(r);
    }
    const double ux = cs, uy = -sn, h = (len - 1.0) / 2.0;
    const int R = (int)ceil(h + 1.0); /* <= (IC_MAX_KERNEL - 1) / 2 */
    const int side = 2 * R + 1;
    float *grid = scratch(side, side);
    if (!grid)
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    int rx = 0, ry = 0;
    for (int y = -R; y <= R; y++)
        for (int x = -R; x <= R; x++) {
            double t = x * ux + y * uy;
            t = t < -h ? -h : (t > h ? h : t);
            const double dx = x - t * ux, dy = y - t * uy;
            const double wgt = 1.0 - sqrt(dx * dx + dy * dy);
            if (wgt > 1e-9) {
                grid[(size_t)(y + R) * (size_t)side + (size_t)(x + R)] = (float)wgt;
                rx = abs(x) > rx ? abs(x) : rx;
                ry = abs(y) > ry ? abs(y) : ry;
            }
        }
    /* Crop to the smallest odd box (the weights are point-symmetric) and normalise. */
    const int w = 2 * rx + 1, hh = 2 * ry + 1;
    float *c = scratch(w, hh);
    if (!c) {
        free(grid);
        return ic_errf(err, errlen, IC_ERR_NOMEM, "out of memory");
    }
    double sum = 0.0;
    for (int y = -ry; y <= ry; y++)
        for (int x = -rx; x <= rx; x++)
            sum += grid[(size_t)(y + R) * (size_t)side + (size_t)(x + R)];
    for (int y = -ry; y <= ry; y++)
        for (int x = -rx; x <= rx; x++)
            c[(size_t)(y + ry) * (size_t)w + (size_t)(x + rx)] =
                (float)(grid[(size_t)(y + R) * (size_t)side + (size_t)(x + R)] / sum);
    free(grid);
    if ((st = finish(k, w, hh, c, 1.0, err, errlen)) == IC_OK)
        snprintf(k->name, sizeof k->name, "motion:%.4g a=%.4g", len, angle);
    return st;
}

/* ------------------------------------------------------------------------ */
/* NAME[:ARGS]                                                               */
/* ------------------------------------------------------------------------ */

ic_status ic__kernel_named(ic_kernel *k, const char *text, size_t n, char *err, size_t errlen)
{
    const char *colon = memchr(text, ':', n);
    const char *name = text;
    size_t nl = colon ? (size_t)(colon - text) : n;
    trim(&name, &nl);
    for (int i = 0; i < NK_COUNT; i++) {
        const named_spec *sp = &k_spec[i];
        if (!ieq(name, nl, sp->name))
            continue;
        named_args a;
        memset(&a, 0, sizeof a);
        if (colon) {
            ic_status st =
                parse_args(sp, colon + 1, (size_t)(text + n - (colon + 1)), &a, err, errlen);
            if (st != IC_OK)
                return st;
        }
        return sp->gen(k, sp, &a, err, errlen);
    }

    char q[128], names[256];
    size_t o = 0;
    names[0] = '\0';
    for (int i = 0; i < NK_COUNT && o < sizeof names; i++) {
        int r = snprintf(names + o, sizeof names - o, "%s%s", i ? ", " : "", k_info[i].name);
        if (r < 0)
            break;
        o += (size_t)r;
    }
    ic__kernel_quote(q, sizeof q, name, nl);
    return ic_errf(err, errlen, IC_ERR_KERNEL,
                   "unknown kernel %s (NAME[:ARGS] with NAME one of: %s; or a matrix "
                   "like '1 2 1; 2 4 2; 1 2 1 / 16')",
                   q, names);
}
