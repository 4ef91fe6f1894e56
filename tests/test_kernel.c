/*
 * test_kernel.c - the kernel model as a specification: named kernels (sums,
 * symmetry, known values), the matrix text grammar and kernel files (matrix
 * text and libvips .mat), every rejection with its message, the separable
 * factorisation (ranks and reconstruction), and a seeded fuzz loop over the
 * parser that must never crash and only ever return IC_OK or IC_ERR_KERNEL.
 *
 * Each failure prints the input (escaped) and, for random cases, the seed.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imgconv.h"
#include "testutil.h"

/* Printable form of arbitrary bytes for failure messages. */
static const char *esc(const char *s, size_t n)
{
    static char buf[4][512];
    static int slot = 0;
    char *o = buf[slot = (slot + 1) % 4];
    size_t k = 0;
    for (size_t i = 0; i < n && k + 5 < sizeof buf[0]; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c < 0x7f && c != '\\')
            o[k++] = (char)c;
        else
            k += (size_t)snprintf(o + k, sizeof buf[0] - k, "\\x%02x", c);
    }
    o[k] = '\0';
    return o;
}
#define ESC(s) esc((s), strlen(s))

static ict_rng g_rng; /* seeded per random case: the seed is in every failure message */

static double W(const ic_kernel *k, int i, int j)
{
    return ic_kernel_weight(k, i, j);
}

/* Parses text that must succeed; returns 1 on success (k filled). */
static int parse_ok(ic_kernel *k, const char *text)
{
    ic_status st = ic_kernel_parse(k, text);
    ICT_EXPECT(st == IC_OK, "parse '%s': status %d (%s): %s", ESC(text), st, ic_status_str(st),
               ic_last_error());
    return st == IC_OK;
}

/* Parses text that must fail with `want` and a message containing `needle`. */
static void parse_bad(const char *text, ic_status want, const char *needle)
{
    ic_kernel k;
    ic_status st = ic_kernel_parse(&k, text);
    ICT_EXPECT(st == want, "parse '%s': status %d, expected %d (ic_last_error(): %s)", ESC(text),
               st, want, ic_last_error());
    ICT_EXPECT(strstr(ic_last_error(), needle) != NULL,
               "parse '%s': message '%s' does not mention '%s'", ESC(text), ic_last_error(),
               needle);
    ICT_EXPECT(strchr(ic_last_error(), '\n') == NULL, "parse '%s': message is not one line: '%s'",
               ESC(text), ESC(ic_last_error()));
    ICT_EXPECT(k.coef == NULL && k.width == 0, "parse '%s': failed parse left a kernel behind",
               ESC(text));
    if (st == IC_OK)
        ic_kernel_free(&k);
}

static void expect_weights(const char *text, int w, int h, const double *want, double tol)
{
    ic_kernel k;
    if (!parse_ok(&k, text))
        return;
    ICT_EXPECT(k.width == w && k.height == h, "'%s': size %dx%d, expected %dx%d", ESC(text),
               k.width, k.height, w, h);
    if (k.width == w && k.height == h)
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++)
                ICT_EXPECT(fabs(W(&k, i, j) - want[j * w + i]) <= tol,
                           "'%s': weight (%d,%d) = %.9g, expected %.9g", ESC(text), i, j,
                           W(&k, i, j), want[j * w + i]);
    ic_kernel_free(&k);
}

/* ------------------------------------------------------------------------ */
/* Named kernels                                                             */
/* ------------------------------------------------------------------------ */

static int is_edge(const char *name)
{
    return strstr(name, "sobel") || strstr(name, "prewitt") || strstr(name, "scharr") ||
           strcmp(name, "laplacian") == 0;
}

static void test_named_table(void)
{
    int n = 0;
    const ic_named_kernel_info *t = ic_kernel_list(&n);
    ICT_EXPECT(t != NULL && n >= 14, "named kernel table has %d entries", n);
    const char *expect[] = {"identity",  "box",      "gaussian", "sharpen",   "unsharp",
                            "laplacian", "sobel-x",  "sobel-y",  "prewitt-x", "prewitt-y",
                            "scharr-x",  "scharr-y", "emboss",   "motion"};
    for (size_t e = 0; e < sizeof expect / sizeof expect[0]; e++) {
        int found = 0;
        for (int i = 0; i < n; i++)
            found |= strcmp(t[i].name, expect[e]) == 0;
        ICT_EXPECT(found, "named kernel '%s' missing from the table", expect[e]);
    }
    for (int i = 0; i < n; i++) {
        ICT_EXPECT(t[i].name && t[i].args && t[i].summary && t[i].summary[0],
                   "table entry %d incomplete", i);
        ic_kernel k;
        if (!parse_ok(&k, t[i].name))
            continue;
        ICT_EXPECT((k.width & 1) && (k.height & 1), "%s: size %dx%d not odd", t[i].name, k.width,
                   k.height);
        ICT_EXPECT(k.name[0] != '\0', "%s: no kernel name", t[i].name);
        const double sum = ic_kernel_sum(&k);
        const double want = is_edge(t[i].name) ? 0.0 : 1.0;
        ICT_EXPECT(fabs(sum - want) < 1e-6, "%s: weights sum to %.9g, expected %g", t[i].name, sum,
                   want);
        /* Upper-case names are accepted too. */
        char up[32];
        snprintf(up, sizeof up, "%s", t[i].name);
        for (char *c = up; *c; c++)
            if (*c >= 'a' && *c <= 'z')
                *c = (char)(*c - 'a' + 'A');
        ic_kernel k2;
        if (parse_ok(&k2, up)) {
            ICT_EXPECT(k2.width == k.width && k2.height == k.height &&
                           memcmp(k2.coef, k.coef, sizeof(float) * k.width * k.height) == 0,
                       "'%s' differs from '%s'", up, t[i].name);
            ic_kernel_free(&k2);
        }
        ic_kernel_free(&k);
    }
}

/* Symmetry classes: +1 symmetric, -1 antisymmetric, 0 unchecked. */
static void check_symmetry(const char *text, int sx, int sy, int point)
{
    ic_kernel k;
    if (!parse_ok(&k, text))
        return;
    const int w = k.width, h = k.height;
    for (int j = 0; j < h; j++)
        for (int i = 0; i < w; i++) {
            const double v = W(&k, i, j);
            if (sx)
                ICT_EXPECT(fabs(W(&k, w - 1 - i, j) - sx * v) < 1e-7,
                           "'%s': x mirror of (%d,%d) breaks symmetry %+d", text, i, j, sx);
            if (sy)
                ICT_EXPECT(fabs(W(&k, i, h - 1 - j) - sy * v) < 1e-7,
                           "'%s': y mirror of (%d,%d) breaks symmetry %+d", text, i, j, sy);
            if (point)
                ICT_EXPECT(fabs(W(&k, w - 1 - i, h - 1 - j) - v) < 1e-7,
                           "'%s': point mirror of (%d,%d) differs", text, i, j);
        }
    ic_kernel_free(&k);
}

static void test_named_values(void)
{
    /* gaussian:3 takes sigma = 0.3*((3-1)/2 - 1) + 0.8 = 0.8. */
    {
        const double e = exp(-1.0 / (2 * 0.8 * 0.8)), s = 1 + 2 * e;
        const double g[3] = {e / s, 1 / s, e / s};
        double want[9];
        for (int j = 0; j < 3; j++)
            for (int i = 0; i < 3; i++)
                want[j * 3 + i] = g[j] * g[i];
        expect_weights("gaussian:3", 3, 3, want, 1e-7);
        expect_weights("gaussian:3,0.8", 3, 3, want, 1e-7);
        expect_weights("gaussian:sigma=0.8,size=3", 3, 3, want, 1e-7);
        ICT_EXPECT(fabs(g[1] - 0.522011) < 1e-5 && fabs(g[0] - 0.238994) < 1e-5,
                   "gaussian:3 1D values %.6f %.6f", g[0], g[1]);
    }
    {
        ic_kernel k;
        if (parse_ok(&k, "gaussian:5")) {
            ICT_EXPECT(strcmp(k.name, "gaussian:5x5 s=1.10") == 0, "gaussian:5 name '%s'", k.name);
            ic_kernel_free(&k);
        }
        if (parse_ok(&k, "gaussian:sigma=1.5")) { /* size = 2*ceil(4.5)+1 */
            ICT_EXPECT(k.width == 11 && k.height == 11, "gaussian:sigma=1.5 is %dx%d", k.width,
                       k.height);
            ic_kernel_free(&k);
        }
        if (parse_ok(&k, "gaussian:5x3")) {
            ICT_EXPECT(k.width == 5 && k.height == 3, "gaussian:5x3 is %dx%d", k.width, k.height);
            ICT_EXPECT(fabs(ic_kernel_sum(&k) - 1) < 1e-6, "gaussian:5x3 sum %.9g",
                       ic_kernel_sum(&k));
            ic_kernel_free(&k);
        }
        ic_kernel a, b;
        if (parse_ok(&a, "gaussian:7,1.5")) {
            if (parse_ok(&b, " Gaussian : size = 7 , sigma = 1.5 ")) {
                ICT_EXPECT(a.width == 7 && b.width == 7 &&
                               memcmp(a.coef, b.coef, 49 * sizeof(float)) == 0,
                           "gaussian:7,1.5 and the key=value form differ");
                ic_kernel_free(&b);
            }
            ic_kernel_free(&a);
        }
        if (parse_ok(&k, "gaussian:255")) {
            ICT_EXPECT(k.width == 255 && fabs(ic_kernel_sum(&k) - 1) < 1e-6,
                       "gaussian:255: %dx%d sum %.9g", k.width, k.height, ic_kernel_sum(&k));
            ic_kernel_free(&k);
        }
    }
    {
        const double b[9] = {1 / 9., 1 / 9., 1 / 9., 1 / 9., 1 / 9.,
                             1 / 9., 1 / 9., 1 / 9., 1 / 9.};
        expect_weights("box:3", 3, 3, b, 1e-15);
        expect_weights("box", 3, 3, b, 1e-15);
        double b35[15];
        for (int i = 0; i < 15; i++)
            b35[i] = 1 / 15.;
        expect_weights("box:3x5", 3, 5, b35, 1e-15);
        expect_weights("box:size=3X5", 3, 5, b35, 1e-15);
    }
    {
        const double sx[9] = {-1, 0, 1, -2, 0, 2, -1, 0, 1};
        const double sy[9] = {-1, -2, -1, 0, 0, 0, 1, 2, 1};
        const double px[9] = {-1, 0, 1, -1, 0, 1, -1, 0, 1};
        const double py[9] = {-1, -1, -1, 0, 0, 0, 1, 1, 1};
        const double cx[9] = {-3, 0, 3, -10, 0, 10, -3, 0, 3};
        const double cy[9] = {-3, -10, -3, 0, 0, 0, 3, 10, 3};
        const double sh[9] = {0, -1, 0, -1, 5, -1, 0, -1, 0};
        const double em[9] = {-2, -1, 0, -1, 1, 1, 0, 1, 2};
        const double l4[9] = {0, 1, 0, 1, -4, 1, 0, 1, 0};
        const double l8[9] = {1, 1, 1, 1, -8, 1, 1, 1, 1};
        const double id[1] = {1};
        double id5[25] = {0};
        id5[12] = 1;
        expect_weights("sobel-x", 3, 3, sx, 0);
        expect_weights("sobel-y", 3, 3, sy, 0);
        expect_weights("prewitt-x", 3, 3, px, 0);
        expect_weights("prewitt-y", 3, 3, py, 0);
        expect_weights("scharr-x", 3, 3, cx, 0);
        expect_weights("scharr-y", 3, 3, cy, 0);
        expect_weights("sharpen", 3, 3, sh, 0);
        expect_weights("emboss", 3, 3, em, 0);
        expect_weights("laplacian", 3, 3, l4, 0);
        expect_weights("laplacian:4", 3, 3, l4, 0);
        expect_weights("laplacian:neighbours=8", 3, 3, l8, 0);
        expect_weights("identity", 1, 1, id, 0);
        expect_weights("identity:5", 5, 5, id5, 0);
    }
    {
        /* unsharp = (1+a) delta - a G with G the 5x5 gaussian (sigma 1.1). */
        ic_kernel u, g;
        if (parse_ok(&u, "unsharp") && parse_ok(&g, "gaussian:5")) {
            ICT_EXPECT(u.width == 5 && u.height == 5, "unsharp default is %dx%d", u.width,
                       u.height);
            for (int j = 0; j < 5; j++)
                for (int i = 0; i < 5; i++) {
                    const double want = (i == 2 && j == 2 ? 2.0 : 0.0) - W(&g, i, j);
                    ICT_EXPECT(fabs(W(&u, i, j) - want) < 1e-6, "unsharp (%d,%d) = %.9g, want %.9g",
                               i, j, W(&u, i, j), want);
                }
            ic_kernel_free(&u);
            ic_kernel_free(&g);
        }
        if (parse_ok(&u, "unsharp:3,amount=2")) {
            ICT_EXPECT(u.width == 3 && fabs(ic_kernel_sum(&u) - 1) < 1e-6, "unsharp:3,amount=2");
            ic_kernel_free(&u);
        }
    }
    {
        /* motion: a horizontal length-5 line is 1x5 of 1/5; vertical the transpose. */
        const double m5[5] = {.2, .2, .2, .2, .2};
        expect_weights("motion:5", 5, 1, m5, 1e-7);
        expect_weights("motion:5,90", 1, 5, m5, 1e-7);
        expect_weights("motion:length=5,angle=-180", 5, 1, m5, 1e-7);
        const double one[1] = {1};
        expect_weights("motion:1,33", 1, 1, one, 0);
        ic_kernel k;
        if (parse_ok(&k, "motion:9,45")) {
            ICT_EXPECT(k.width == k.height && k.width >= 7 && k.width <= 9, "motion:9,45 is %dx%d",
                       k.width, k.height);
            /* 45 degrees counter-clockwise on screen: up and to the right. */
            ICT_EXPECT(W(&k, k.width - 1, 0) > 0 && W(&k, 0, 0) == 0,
                       "motion:9,45 does not run from bottom-left to top-right");
            ICT_EXPECT(fabs(ic_kernel_sum(&k) - 1) < 1e-6, "motion:9,45 sum %.9g",
                       ic_kernel_sum(&k));
            ic_kernel_free(&k);
        }
        if (parse_ok(&k, "motion:21,30")) {
            ICT_EXPECT(k.width > k.height && k.height > 1, "motion:21,30 is %dx%d", k.width,
                       k.height);
            ic_kernel_free(&k);
        }
        if (parse_ok(&k, "motion:253,17")) {
            ICT_EXPECT(k.width <= IC_MAX_KERNEL && k.height <= IC_MAX_KERNEL, "motion:253,17 %dx%d",
                       k.width, k.height);
            ic_kernel_free(&k);
        }
    }
    check_symmetry("gaussian:7", 1, 1, 1);
    check_symmetry("gaussian:9x5,2", 1, 1, 1);
    check_symmetry("box:5x3", 1, 1, 1);
    check_symmetry("unsharp:7,1.5,0.7", 1, 1, 1);
    check_symmetry("laplacian:8", 1, 1, 1);
    check_symmetry("sharpen", 1, 1, 1);
    check_symmetry("sobel-x", -1, 1, 0);
    check_symmetry("prewitt-x", -1, 1, 0);
    check_symmetry("scharr-y", 1, -1, 0);
    check_symmetry("motion:15,30", 0, 0, 1);
    check_symmetry("motion:12.5,-71", 0, 0, 1);
}

static void test_named_errors(void)
{
    parse_bad("gaussian:4", IC_ERR_KERNEL, "odd");
    parse_bad("gaussian:0", IC_ERR_KERNEL, "1..65535");
    parse_bad("gaussian:65537", IC_ERR_KERNEL, "1..65535");
    parse_bad("gaussian:99999999999", IC_ERR_KERNEL, "not an odd integer");
    parse_bad("box:3x4", IC_ERR_KERNEL, "odd");
    parse_bad("box:x3", IC_ERR_KERNEL, "width");
    parse_bad("gaussian:abc", IC_ERR_KERNEL, "'abc'");
    parse_bad("gaussian:5.0", IC_ERR_KERNEL, "'5.0'");
    parse_bad("gaussian:size=3,size=5", IC_ERR_KERNEL, "twice");
    parse_bad("gaussian:3,size=5", IC_ERR_KERNEL, "twice");
    parse_bad("gaussian:foo=1", IC_ERR_KERNEL, "unknown argument 'foo'");
    parse_bad("gaussian:1,2,3", IC_ERR_KERNEL, "at most 2");
    parse_bad("gaussian:sigma=1,5", IC_ERR_KERNEL, "positional");
    parse_bad("gaussian:", IC_ERR_KERNEL, "empty");
    parse_bad("gaussian:3,,1", IC_ERR_KERNEL, "empty");
    parse_bad("gaussian:size=", IC_ERR_KERNEL, "no value");
    parse_bad("gaussian:sigma=-1", IC_ERR_KERNEL, "sigma");
    parse_bad("gaussian:sigma=1e9", IC_ERR_KERNEL, "sigma");
    parse_bad("gaussian:sigma=nan", IC_ERR_KERNEL, "not finite");
    parse_bad("gaussian:3,1e999", IC_ERR_KERNEL, "not finite");
    parse_bad("sobel-x:3", IC_ERR_KERNEL, "no arguments");
    parse_bad("laplacian:5", IC_ERR_KERNEL, "4 or 8");
    parse_bad("motion:0", IC_ERR_KERNEL, "length");
    parse_bad("motion:300", IC_ERR_KERNEL, "length");
    parse_bad("motion:9,inf", IC_ERR_KERNEL, "not finite");
    parse_bad("unsharp:5,1,1e300", IC_ERR_KERNEL, "amount");
    parse_bad("nosuch", IC_ERR_KERNEL, "unknown kernel 'nosuch'");
    parse_bad("nosuch:3", IC_ERR_KERNEL, "gaussian");
    parse_bad("gaussian 5", IC_ERR_KERNEL, "unknown kernel");
}

/* ------------------------------------------------------------------------ */
/* Matrix text                                                               */
/* ------------------------------------------------------------------------ */

static void test_matrix_grammar(void)
{
    const double b[9] = {1 / 16., 2 / 16., 1 / 16., 2 / 16., 4 / 16.,
                         2 / 16., 1 / 16., 2 / 16., 1 / 16.};
    expect_weights("1 2 1; 2 4 2; 1 2 1 / 16", 3, 3, b, 0);
    expect_weights("1,2,1;2,4,2;1,2,1/16", 3, 3, b, 0);
    expect_weights("1, 2, 1 ; 2 , 4 , 2 ;\t1 2 1 /16 ;", 3, 3, b, 0);
    expect_weights("1 2 1\n2 4 2\n1 2 1\n/ 16\n", 3, 3, b, 0);
    expect_weights("1 2 1; 2 4 2; 1 2 1 # binomial\n / 16 # divisor", 3, 3, b, 0);
    expect_weights("0.0625 0.125 0.0625; .125 .25 .125; 6.25e-2 1.25E-1 +0.0625", 3, 3, b, 0);
    const double r[3] = {-1.5, 0.5, 5};
    expect_weights("-1.5e0 +.5 5.", 3, 1, r, 0);
    expect_weights("-1.5;0.5;5", 1, 3, r, 0);
    const double five[1] = {5};
    expect_weights("  5  ", 1, 1, five, 0);
    const double half[1] = {-0.5};
    expect_weights("1 / -2", 1, 1, half, 0);

    ic_kernel k;
    if (parse_ok(&k, "1 2 1; 2 4 2; 1 2 1 / 16")) {
        ICT_EXPECT(k.divisor == 16.0 && k.coef[4] == 4.0f, "divisor %g, centre %g", k.divisor,
                   k.coef[4]);
        ICT_EXPECT(ic_kernel_sum(&k) == 1.0, "binomial sum %.17g", ic_kernel_sum(&k));
        ICT_EXPECT(strcmp(k.name, "3x3 matrix") == 0, "matrix name '%s'", k.name);
        ICT_EXPECT(ic_kernel_weight(&k, 3, 0) == 0.0 && ic_kernel_weight(&k, -1, 0) == 0.0,
                   "out-of-range weight not 0");
        ic_kernel_free(&k);
        ICT_EXPECT(k.coef == NULL && k.width == 0, "ic_kernel_free did not zero the kernel");
        ic_kernel_free(&k); /* twice is fine */
        ic_kernel_free(NULL);
    }
    /* 255 values on a row and 255 rows are the limit. */
    {
        size_t cap = 255 * 255 * 3 + 16;
        char *t = malloc(cap);
        size_t o = 0;
        for (int j = 0; j < 255; j++) {
            for (int i = 0; i < 255; i++)
                t[o++] = (char)('1' + (i + j) % 9), t[o++] = ' ';
            t[o++] = ';';
        }
        t[o] = '\0';
        if (parse_ok(&k, t)) {
            ICT_EXPECT(k.width == 255 && k.height == 255, "255x255 parsed as %dx%d", k.width,
                       k.height);
            ic_kernel_free(&k);
        }
        free(t);
    }
}

static void test_matrix_errors(void)
{
    parse_bad("1 2; 3 4", IC_ERR_KERNEL, "odd");
    parse_bad("1 2 3 4", IC_ERR_KERNEL, "odd");
    parse_bad("1;2", IC_ERR_KERNEL, "odd");
    parse_bad("1 2 1; 2 4; 1 2 1", IC_ERR_KERNEL, "row 2 has 2 values, row 1 has 3");
    parse_bad("1 2 1; 2 4 2 9 9; 1 2 1", IC_ERR_KERNEL, "row 2 has 5 values, row 1 has 3");
    parse_bad("1 x 1", IC_ERR_KERNEL, "'x'");
    parse_bad("1 2 1; 2 4 2; 1 2 1 / abc", IC_ERR_KERNEL, "'abc'");
    parse_bad("1 2 1; 2 0x10 2; 1 2 1", IC_ERR_KERNEL, "'0x10'");
    parse_bad("1 2 1; 2 1e 2; 1 2 1", IC_ERR_KERNEL, "'1e'");
    parse_bad("1 2 1; 2 - 2; 1 2 1", IC_ERR_KERNEL, "'-'");
    parse_bad("1 2 1; 2 4..2 2; 1 2 1", IC_ERR_KERNEL, "not a number");
    parse_bad("1 \x01 1", IC_ERR_KERNEL, "'\\x01'");
    parse_bad("", IC_ERR_KERNEL, "empty");
    parse_bad("   \n\t ", IC_ERR_KERNEL, "empty");
    parse_bad("# only a comment", IC_ERR_KERNEL, "empty");
    parse_bad(";;;", IC_ERR_KERNEL, "empty");
    parse_bad(", ,", IC_ERR_KERNEL, "empty");
    parse_bad("/ 4", IC_ERR_KERNEL, "empty");
    parse_bad("1 / 0", IC_ERR_KERNEL, "divisor is zero");
    parse_bad("1 / -0.0", IC_ERR_KERNEL, "divisor is zero");
    parse_bad("1 / 0e5", IC_ERR_KERNEL, "divisor is zero");
    parse_bad("1 /", IC_ERR_KERNEL, "followed by");
    parse_bad("1 / 2 3", IC_ERR_KERNEL, "after the divisor");
    parse_bad("1 / 2; 3", IC_ERR_KERNEL, "after the divisor");
    parse_bad("1 / 2 / 3", IC_ERR_KERNEL, "more than one");
    parse_bad("1 nan 1", IC_ERR_KERNEL, "not finite");
    parse_bad("1 -inf 1", IC_ERR_KERNEL, "not finite");
    parse_bad("NaN", IC_ERR_KERNEL, "not finite");
    parse_bad("inf 1 1", IC_ERR_KERNEL, "not finite");
    parse_bad("1 1e999 1", IC_ERR_KERNEL, "not finite");
    parse_bad("1 1e39 1", IC_ERR_KERNEL, "float range");
    parse_bad("1 / nan", IC_ERR_KERNEL, "not finite");
    parse_bad("1 / Infinity", IC_ERR_KERNEL, "not finite");
    parse_bad("3e38 3e38 3e38", IC_ERR_KERNEL, "overflows float");
    parse_bad("1 / 1e-300", IC_ERR_KERNEL, "overflows float");
    parse_bad("2e36", IC_ERR_KERNEL, "overflows float"); /* 2e36*255 > FLT_MAX */
    parse_bad("@", IC_ERR_KERNEL, "file name");
    {
        ic_kernel k;
        ICT_EXPECT(ic_kernel_parse(&k, NULL) == IC_ERR_INVALID_ARG &&
                       strstr(ic_last_error(), "NULL"),
                   "NULL text: '%s'", ic_last_error());
        ICT_EXPECT(ic_kernel_parse(NULL, "1") == IC_ERR_INVALID_ARG, "NULL kernel");
    }

    /* Over IC_MAX_KERNEL in either direction. */
    char *t = malloc(4096);
    size_t o = 0;
    for (int i = 0; i < 257; i++)
        t[o++] = '1', t[o++] = ' ';
    t[o] = '\0';
    parse_bad(t, IC_ERR_KERNEL, "more than 255 values");
    o = 0;
    for (int i = 0; i < 257; i++)
        t[o++] = '1', t[o++] = ';';
    t[o] = '\0';
    parse_bad(t, IC_ERR_KERNEL, "more than 255 rows");
    /* A long token is quoted cut short, never overflowing the message. */
    memset(t, 'z', 3000);
    t[0] = '1';
    t[1] = ' ';
    t[3000] = '\0';
    parse_bad(t, IC_ERR_KERNEL, "...");
    free(t);

    /* A message longer than ic_last_error()'s buffer is cut, one line. */
    t = malloc(20000);
    ICT_EXPECT(t != NULL, "out of memory");
    if (!t)
        return;
    memset(t, '(', 19999);
    t[19999] = '\0';
    ic_kernel k;
    ic_status st = ic_kernel_parse(&k, t);
    ICT_EXPECT(st == IC_ERR_KERNEL && ic_last_error()[0] && !strchr(ic_last_error(), '\n'),
               "long bad text: st %d, '%s'", st, ic_last_error());
    free(t);
}

static void test_create(void)
{
    ic_kernel k;
    const float c[15] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15};
    ICT_EXPECT(ic_kernel_create(&k, 5, 3, c, 2.0) == IC_OK, "create 5x3");
    ICT_EXPECT(k.width == 5 && k.height == 3 && k.coef != c && k.coef[14] == 15.0f &&
                   k.divisor == 2.0 && k.offset == 0.0,
               "create copies coefficients");
    ICT_EXPECT(ic_kernel_weight(&k, 4, 2) == 7.5 && ic_kernel_sum(&k) == 60.0, "weight %g sum %g",
               ic_kernel_weight(&k, 4, 2), ic_kernel_sum(&k));
    ic_kernel_free(&k);
    ICT_EXPECT(ic_kernel_create(&k, 4, 3, c, 1.0) == IC_ERR_KERNEL && k.coef == NULL, "even width");
    ICT_EXPECT(ic_kernel_create(&k, 3, 0, c, 1.0) == IC_ERR_KERNEL, "zero height");
    ICT_EXPECT(ic_kernel_create(&k, 257, 1, c, 1.0) == IC_ERR_KERNEL, "width over the limit");
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, c, 0.0) == IC_ERR_KERNEL, "zero divisor");
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, c, NAN) == IC_ERR_KERNEL, "NaN divisor");
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, c, INFINITY) == IC_ERR_KERNEL, "inf divisor");
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, NULL, 1.0) == IC_ERR_INVALID_ARG, "NULL coef");
    ICT_EXPECT(ic_kernel_create(NULL, 3, 3, c, 1.0) == IC_ERR_INVALID_ARG, "NULL kernel");
    float bad[9] = {1, 1, 1, 1, NAN, 1, 1, 1, 1};
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, bad, 1.0) == IC_ERR_KERNEL, "NaN coefficient");
    bad[4] = -INFINITY;
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, bad, 1.0) == IC_ERR_KERNEL, "inf coefficient");
    bad[4] = 3e38f;
    ICT_EXPECT(ic_kernel_create(&k, 3, 3, bad, 1.0) == IC_ERR_KERNEL, "|weights|*255 overflow");
}

/* ------------------------------------------------------------------------ */
/* Files                                                                     */
/* ------------------------------------------------------------------------ */

static char g_dir[64];

static const char *write_file(const char *name, const char *data, size_t n)
{
    static char path[4][160];
    static int slot = 0;
    char *p = path[slot = (slot + 1) % 4];
    snprintf(p, sizeof path[0], "%s/%s", g_dir, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        fprintf(stderr, "cannot write %s\n", p);
        exit(1);
    }
    fclose(f);
    return p;
}
#define WRITE(name, s) write_file((name), (s), strlen(s))

static void load_bad(const char *path, ic_status want, const char *needle)
{
    ic_kernel k;
    ic_status st = ic_kernel_load(&k, path);
    ICT_EXPECT(st == want, "load %s: status %d, expected %d (%s)", path, st, want, ic_last_error());
    ICT_EXPECT(strstr(ic_last_error(), needle) != NULL,
               "load %s: message '%s' does not mention '%s'", path, ic_last_error(), needle);
    ICT_EXPECT(k.coef == NULL, "load %s: failure left a kernel", path);
    if (st == IC_OK)
        ic_kernel_free(&k);
}

static void test_files(void)
{
    snprintf(g_dir, sizeof g_dir, "/tmp/ic_test_kernel_XXXXXX");
    if (!mkdtemp(g_dir)) {
        fprintf(stderr, "mkdtemp failed\n");
        ict_failed++;
        return;
    }
    ic_kernel k;
    char text[256];

    /* Matrix text, a row per line, comments and blank lines, "/ D" last. */
    const char *txt = WRITE("blur.txt", "# 3x3 binomial\n\n1 2 1\r\n2 4 2   # centre row\n"
                                        "1 2 1\n\n/ 16\n");
    if (ic_kernel_load(&k, txt) == IC_OK) {
        ICT_EXPECT(k.width == 3 && k.height == 3 && k.divisor == 16 && ic_kernel_sum(&k) == 1,
                   "blur.txt: %dx%d / %g", k.width, k.height, k.divisor);
        ICT_EXPECT(strstr(k.name, "blur.txt") != NULL, "file kernel name '%s'", k.name);
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load blur.txt: %s", ic_last_error());
    }
    snprintf(text, sizeof text, "@%s", txt);
    if (parse_ok(&k, text)) {
        ICT_EXPECT(k.width == 3 && k.divisor == 16, "@blur.txt");
        ic_kernel_free(&k);
    }

    /* libvips .mat: "W H SCALE OFFSET", SCALE divides, OFFSET kept. */
    const char *mat = WRITE("edge.mat", "3 3 16 128\n1 2 1\n2 4 2\n1 2 1\n");
    if (ic_kernel_load(&k, mat) == IC_OK) {
        ICT_EXPECT(k.width == 3 && k.height == 3 && k.divisor == 16 && k.offset == 128,
                   "edge.mat: %dx%d / %g + %g", k.width, k.height, k.divisor, k.offset);
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load edge.mat: %s", ic_last_error());
    }
    mat = WRITE("wide.mat", "5 1\n-1 -2 0 2 1\n");
    if (ic_kernel_load(&k, mat) == IC_OK) {
        ICT_EXPECT(k.width == 5 && k.height == 1 && k.divisor == 1 && k.offset == 0 &&
                       k.coef[4] == 1.0f,
                   "wide.mat (2-field header)");
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load wide.mat: %s", ic_last_error());
    }
    /* A plain matrix saved as .mat (no libvips header) is read as matrix text,
     * '/ D' and comments included: issue 15. */
    mat = WRITE("plain.mat", "# my blur\n1 2 1\n2 4 2\n1 2 1 / 16\n");
    if (ic_kernel_load(&k, mat) == IC_OK) {
        ICT_EXPECT(k.width == 3 && k.height == 3 && k.divisor == 16 && k.offset == 0 &&
                       k.coef[4] == 4 && k.coef[8] == 1,
                   "plain.mat: %dx%d / %g", k.width, k.height, k.divisor);
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load plain.mat: %s", ic_last_error());
    }
    /* A .mat body under another extension is recognised by its even header. */
    mat = WRITE("vips.txt", "# from vips\n3, 1, 2, -0.5\n1 0 1\n");
    if (ic_kernel_load(&k, mat) == IC_OK) {
        ICT_EXPECT(k.width == 3 && k.height == 1 && k.divisor == 2 && k.offset == -0.5,
                   "vips.txt header detection");
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load vips.txt: %s", ic_last_error());
    }
    /* OFFSET and SCALE stay in --bias's range (IC_MAX_BIAS), and finite. */
    load_bad(WRITE("o308.mat", "3 1 1 1e308\n1 2 1\n"), IC_ERR_KERNEL,
             "offset 1e+308 is outside -1e6..1e6");
    load_bad(WRITE("o7.mat", "3 1 1 1e7\n1 2 1\n"), IC_ERR_KERNEL, "offset 1e+07 is outside");
    load_bad(WRITE("on.mat", "3 1 1 -1e30\n1 2 1\n"), IC_ERR_KERNEL, "offset -1e+30 is outside");
    load_bad(WRITE("oinf.mat", "3 1 1 inf\n1 2 1\n"), IC_ERR_KERNEL, "offset");
    load_bad(WRITE("s7.mat", "3 1 -2e6 0\n1 2 1\n"), IC_ERR_KERNEL, "scale -2e+06 is outside");
    load_bad(WRITE("stiny.mat", "3 1 1e-7 0\n1 2 1\n"), IC_ERR_KERNEL, "scale 1e-07 is outside");
    mat = WRITE("edge6.mat", "3 1 -1e6 1e6\n1 2 1\n");
    if (ic_kernel_load(&k, mat) == IC_OK) {
        ICT_EXPECT(k.divisor == -1e6 && k.offset == 1e6, "edge6.mat: / %g + %g", k.divisor,
                   k.offset);
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(0, "load edge6.mat (scale and offset at the edge of the range): %s",
                   ic_last_error());
    }
    load_bad(WRITE("short.mat", "3 3 1 0\n1 2 1\n2 4 2\n"), IC_ERR_KERNEL, "found 2 rows");
    load_bad(WRITE("long.mat", "3 3 1 0\n1 2 1\n2 4 2\n1 2 1\n1 1 1\n"), IC_ERR_KERNEL,
             "found 4 rows");
    load_bad(WRITE("wrongw.mat", "3 1 1 0\n1 2 1 4 5\n"), IC_ERR_KERNEL, "width 3");
    load_bad(WRITE("ragged.mat", "3 3\n1 2 1\n2 4\n1 2 1\n"), IC_ERR_KERNEL,
             "row 2 (line 3) has 2 values");
    load_bad(WRITE("zero.mat", "1 1 0 0\n5\n"), IC_ERR_KERNEL, "zero");
    load_bad(WRITE("even.mat", "2 2 1 0\n1 1\n1 1\n"), IC_ERR_KERNEL, "odd");
    load_bad(WRITE("big.mat", "300 1 1 0\n1\n"), IC_ERR_KERNEL, "1..255");
    load_bad(WRITE("hdr.mat", "3 3 1\n1 2 1\n"), IC_ERR_KERNEL, "expected 'WIDTH HEIGHT");
    load_bad(WRITE("hdr.mat", "3 3 1\n1 2 1\n"), IC_ERR_KERNEL, "nor is it a plain matrix");
    load_bad(WRITE("nan.mat", "1 1 nan 0\n1\n"), IC_ERR_KERNEL, "not finite");
    load_bad(WRITE("div.mat", "1 1 1 0\n1 / 2\n"), IC_ERR_KERNEL, "not allowed");
    load_bad(WRITE("empty.txt", ""), IC_ERR_KERNEL, "empty");
    load_bad(WRITE("comments.txt", "# nothing\n\n  # here\n"), IC_ERR_KERNEL, "empty");
    load_bad(WRITE("ragged.txt", "1 2 1\n\n2 4\n1 2 1\n"), IC_ERR_KERNEL,
             "row 2 (line 3) has 2 values, row 1 has 3");
    load_bad(write_file("nul.txt", "1 2 1\n2 \0 2\n1 2 1\n", 18), IC_ERR_KERNEL, "'\\x00'");
    load_bad(WRITE("text.txt", "gaussian:5\n"), IC_ERR_KERNEL, "'gaussian:5'");

    char missing[128];
    snprintf(missing, sizeof missing, "%s/missing.txt", g_dir);
    load_bad(missing, IC_ERR_IO, "cannot open");
    load_bad(g_dir, IC_ERR_IO, "cannot read"); /* a directory */
    snprintf(text, sizeof text, "@%s", missing);
    parse_bad(text, IC_ERR_IO, "missing.txt: cannot open");
    snprintf(text, sizeof text, "@%s/ragged.txt", g_dir);
    parse_bad(text, IC_ERR_KERNEL, "ragged.txt: ragged rows");

    /* Clean up everything we wrote. */
    const char *names[] = {"blur.txt",  "edge.mat",     "wide.mat",   "vips.txt",   "short.mat",
                           "plain.mat", "long.mat",     "wrongw.mat", "ragged.mat", "zero.mat",
                           "even.mat",  "big.mat",      "hdr.mat",    "nan.mat",    "div.mat",
                           "empty.txt", "comments.txt", "ragged.txt", "nul.txt",    "text.txt",
                           "fuzz.bin"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char p[160];
        snprintf(p, sizeof p, "%s/%s", g_dir, names[i]);
        unlink(p);
    }
}

/* ------------------------------------------------------------------------ */
/* Factorisation                                                             */
/* ------------------------------------------------------------------------ */

/* Rebuilds K from the factors independently and returns the max error. */
static double recon_err(const ic_kernel *k, const ic_factors *f)
{
    double e = 0;
    for (int j = 0; j < k->height; j++)
        for (int i = 0; i < k->width; i++) {
            double s = 0;
            for (int r = 0; r < f->rank; r++)
                s += (double)f->col[r * f->height + j] * f->row[r * f->width + i];
            e = fmax(e, fabs(s - W(k, i, j)));
        }
    return e;
}

static double max_abs(const ic_kernel *k)
{
    double m = 0;
    for (int j = 0; j < k->height; j++)
        for (int i = 0; i < k->width; i++)
            m = fmax(m, fabs(W(k, i, j)));
    return m;
}

static void check_factor(const ic_kernel *k, const char *what, int want_rank, double tol)
{
    ic_factors f;
    ic_status st = ic_kernel_factor(k, tol, 0, &f);
    ICT_EXPECT(st == IC_OK, "factor %s: status %d", what, st);
    if (st != IC_OK)
        return;
    ICT_EXPECT(f.rank == want_rank, "factor %s (%dx%d): rank %d, expected %d (max_err %g)", what,
               k->width, k->height, f.rank, want_rank, f.max_err);
    if (f.rank > 0) {
        const double lim = (tol == 0 ? 1e-6 : tol) * max_abs(k);
        const double e = recon_err(k, &f);
        ICT_EXPECT(f.width == k->width && f.height == k->height, "factor %s: vector sizes", what);
        ICT_EXPECT(e <= lim && fabs(e - f.max_err) <= 1e-12 + 1e-9 * e,
                   "factor %s: reconstruction error %g (reported %g, limit %g)", what, e, f.max_err,
                   lim);
    }
    ic_factors_free(&f);
    ICT_EXPECT(f.row == NULL && f.col == NULL && f.rank == 0, "ic_factors_free did not zero");
}

static void factor_text(const char *text, int want_rank)
{
    ic_kernel k;
    if (!parse_ok(&k, text))
        return;
    check_factor(&k, text, want_rank, 0);
    ic_kernel_free(&k);
}

static void test_factor(void)
{
    const char *rank1[] = {"gaussian:3",
                           "gaussian:5",
                           "gaussian:9x5,2",
                           "gaussian:31",
                           "box:3",
                           "box:7x3",
                           "sobel-x",
                           "sobel-y",
                           "prewitt-x",
                           "prewitt-y",
                           "scharr-x",
                           "scharr-y",
                           "identity",
                           "identity:5",
                           "motion:9",
                           "motion:9,90",
                           "1 2 3 4 5",
                           "1;-2;3",
                           "7",
                           "0 0 0; 0 0 0; 0 0 0",
                           "1 2 1; 2 4 2; 1 2 1 / 16"};
    for (size_t i = 0; i < sizeof rank1 / sizeof rank1[0]; i++)
        factor_text(rank1[i], 1);
    factor_text("unsharp", 2);
    factor_text("unsharp:9,2,0.5", 2);
    factor_text("laplacian", 2);
    factor_text("laplacian:8", 2);
    factor_text("sharpen", 2);
    factor_text("emboss", 3);
    factor_text("gaussian:255", 1); /* the largest size: Jacobi must stay quick */

    /* Random kernels: full rank; sums of r outer products: rank r. */
    for (int c = 0; c < 60; c++) {
        const uint64_t seed = 1000 + (uint64_t)c;
        ict_rng_seed(&g_rng, seed);
        const int w = 1 + 2 * (int)(ict_next(&g_rng) % 6), h = 1 + 2 * (int)(ict_next(&g_rng) % 6);
        const int full = w < h ? w : h;
        const int r = 1 + (int)(ict_next(&g_rng) % (uint64_t)full);
        float *co = malloc(sizeof(float) * w * h);
        char what[96];
        for (int t = 0; t < w * h; t++)
            co[t] = (float)(ict_uniform(&g_rng) * 2 - 1);
        ic_kernel k;
        if (ic_kernel_create(&k, w, h, co, 1.0) == IC_OK) {
            snprintf(what, sizeof what, "random %dx%d seed %llu", w, h, (unsigned long long)seed);
            check_factor(&k, what, full, 0);
            ic_kernel_free(&k);
        }
        /* rank r: exact low-rank in float64, tolerance looser than the rounding */
        double *u = malloc(sizeof(double) * (w + h) * r);
        for (int t = 0; t < (w + h) * r; t++)
            u[t] = ict_uniform(&g_rng) * 2 - 1;
        for (int j = 0; j < h; j++)
            for (int i = 0; i < w; i++) {
                double s = 0;
                for (int q = 0; q < r; q++)
                    s += u[q * (w + h) + i] * u[q * (w + h) + w + j];
                co[j * w + i] = (float)s;
            }
        if (ic_kernel_create(&k, w, h, co, 1.0) == IC_OK) {
            snprintf(what, sizeof what, "rank-%d %dx%d seed %llu", r, w, h,
                     (unsigned long long)seed);
            check_factor(&k, what, r, 1e-5);
            ic_kernel_free(&k);
        }
        free(u);
        free(co);
    }

    /* A cap below the rank gives rank 0 and no vectors. */
    ic_kernel k;
    ic_factors f;
    if (parse_ok(&k, "unsharp")) {
        ICT_EXPECT(ic_kernel_factor(&k, 0, 1, &f) == IC_OK && f.rank == 0 && f.row == NULL &&
                       f.col == NULL && f.max_err > 1e-3,
                   "unsharp capped at rank 1: rank %d max_err %g", f.rank, f.max_err);
        ic_factors_free(&f);
        ICT_EXPECT(ic_kernel_factor(&k, 0, 2, &f) == IC_OK && f.rank == 2, "unsharp cap 2: rank %d",
                   f.rank);
        ic_factors_free(&f);
        ICT_EXPECT(ic_kernel_factor(&k, 0.5, 0, &f) == IC_OK && f.rank == 1,
                   "unsharp with tol 0.5: rank %d", f.rank);
        ic_factors_free(&f);
        ICT_EXPECT(ic_kernel_factor(&k, -1, 0, &f) == IC_ERR_INVALID_ARG, "negative tol");
        ICT_EXPECT(ic_kernel_factor(&k, NAN, 0, &f) == IC_ERR_INVALID_ARG, "NaN tol");
        ICT_EXPECT(ic_kernel_factor(&k, 0, -1, &f) == IC_ERR_INVALID_ARG, "negative max_rank");
        ICT_EXPECT(ic_kernel_factor(&k, 0, 0, NULL) == IC_ERR_INVALID_ARG, "NULL factors");
        ICT_EXPECT(ic_kernel_factor(NULL, 0, 0, &f) == IC_ERR_INVALID_ARG, "NULL kernel");
        ic_kernel_free(&k);
    }
    ic_factors_free(NULL);
}

/* ------------------------------------------------------------------------ */
/* Fuzz                                                                      */
/* ------------------------------------------------------------------------ */

/* A parsed kernel must satisfy every invariant ic_kernel promises. */
static int kernel_valid(const ic_kernel *k)
{
    if (!k->coef || k->width < 1 || k->height < 1 || k->width > IC_MAX_KERNEL ||
        k->height > IC_MAX_KERNEL || !(k->width & 1) || !(k->height & 1) || !isfinite(k->divisor) ||
        k->divisor == 0 || memchr(k->name, '\0', sizeof k->name) == NULL)
        return 0;
    double s = 0;
    for (int t = 0; t < k->width * k->height; t++) {
        if (!isfinite(k->coef[t]))
            return 0;
        s += fabs(k->coef[t]);
    }
    return s / fabs(k->divisor) * 255.0 <= 3.4028234663852886e38;
}

static void fuzz_one(const char *buf, size_t n, uint64_t seed, int from_file)
{
    ic_kernel k;
    ic_status st;
    if (from_file) {
        const char *p = write_file("fuzz.bin", buf, n);
        st = ic_kernel_load(&k, p);
    } else {
        st = ic_kernel_parse(&k, buf);
    }
    int at_file = 0;
    if (!from_file) {
        const char *first = buf;
        while (*first && strchr(" \t\n\r\v\f", *first))
            first++;
        at_file = *first == '@';
    }
    if (st == IC_OK) {
        ICT_EXPECT(kernel_valid(&k), "fuzz seed %llu: invalid kernel from '%s'",
                   (unsigned long long)seed, esc(buf, n));
        ic_kernel_free(&k);
    } else {
        ICT_EXPECT(st == IC_ERR_KERNEL || (at_file && st == IC_ERR_IO),
                   "fuzz seed %llu: status %d for '%s'", (unsigned long long)seed, st, esc(buf, n));
        ICT_EXPECT(ic_last_error()[0] != '\0' && !strchr(ic_last_error(), '\n'),
                   "fuzz seed %llu: no one-line message for '%s'", (unsigned long long)seed,
                   esc(buf, n));
        ICT_EXPECT(k.coef == NULL, "fuzz seed %llu: failure left coefficients",
                   (unsigned long long)seed);
    }
}

static void test_fuzz(void)
{
    static const char *pieces[] = {
        "gaussian", "box",   "motion", "unsharp", "laplacian", "sobel-x", "identity", "emboss",
        ":",        "=",     ",",      ";",       "/",         " ",       "\n",       "#",
        "size",     "sigma", "amount", "angle",   "length",    "x",       "1e999",    "nan",
        "inf",      "-0",    "255",    "256",     "3",         "5",       "1.5",      "1e-300",
        "3e38",     "0",     "-",      "+",       ".",         "e",       "@",        "\t"};
    const int npieces = (int)(sizeof pieces / sizeof pieces[0]);
    char buf[512];
    for (int c = 0; c < 20000; c++) {
        const uint64_t seed = 77000 + (uint64_t)c;
        ict_rng_seed(&g_rng, seed);
        size_t n = 0;
        const int parts = (int)(ict_next(&g_rng) % 24);
        for (int p = 0; p < parts && n < sizeof buf - 64; p++) {
            const uint64_t kind = ict_next(&g_rng) % 10;
            if (kind < 5) { /* grammar piece */
                const char *s = pieces[ict_next(&g_rng) % (uint64_t)npieces];
                /* '@' only mid-string: a leading one opens random paths */
                if (s[0] == '@' && n == 0)
                    continue;
                memcpy(buf + n, s, strlen(s));
                n += strlen(s);
            } else if (kind < 9) { /* digits */
                const int d = 1 + (int)(ict_next(&g_rng) % 4);
                for (int i = 0; i < d; i++)
                    buf[n++] = (char)('0' + ict_next(&g_rng) % 10);
            } else { /* any non-NUL byte */
                buf[n++] = (char)(1 + ict_next(&g_rng) % 255);
            }
        }
        buf[n] = '\0';
        fuzz_one(buf, n, seed, 0);
    }
    /* Files: any bytes, NUL included. */
    if (g_dir[0] == '\0')
        return;
    for (int c = 0; c < 1500; c++) {
        const uint64_t seed = 99000 + (uint64_t)c;
        ict_rng_seed(&g_rng, seed);
        size_t n = 0;
        const int parts = (int)(ict_next(&g_rng) % 30);
        for (int p = 0; p < parts && n < sizeof buf - 64; p++) {
            const uint64_t kind = ict_next(&g_rng) % 8;
            if (kind < 3) {
                const char *s = pieces[ict_next(&g_rng) % (uint64_t)npieces];
                memcpy(buf + n, s, strlen(s));
                n += strlen(s);
            } else if (kind < 7) {
                buf[n++] = (char)('0' + ict_next(&g_rng) % 10);
                buf[n++] = (char)(" \n,"[ict_next(&g_rng) % 3]);
            } else {
                buf[n++] = (char)(ict_next(&g_rng) % 256);
            }
        }
        fuzz_one(buf, n, seed, 1);
    }
    char p[160];
    snprintf(p, sizeof p, "%s/fuzz.bin", g_dir);
    unlink(p);
}

int main(void)
{
    test_named_table();
    test_named_values();
    test_named_errors();
    test_matrix_grammar();
    test_matrix_errors();
    test_create();
    test_files();
    test_factor();
    test_fuzz();
    if (g_dir[0])
        rmdir(g_dir);
    if (ict_failed) {
        fprintf(stderr, "test_kernel: %d of %d checks failed\n", ict_failed, ict_checks);
        return 1;
    }
    printf("test_kernel: all %d checks passed\n", ict_checks);
    return 0;
}
