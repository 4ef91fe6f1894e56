/*
 * test_params.c - the parameter vocabulary of ic_convolve: border and alpha
 * names and aliases (issue 2: zero, edge/nearest/clamp, reflect101, symmetric,
 * periodic...), ic_params_default(), and ic_border_index() against the tests'
 * own border mapping (oracle.h), which is itself first checked against tables
 * written out by hand from the definitions in imgconv.h (seed 004's padding).
 */
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static void test_border_parse(void)
{
    static const struct {
        const char *name;
        ic_border want;
    } names[] = {
        {"constant", IC_BORDER_CONSTANT},   {"zero", IC_BORDER_CONSTANT},
        {"replicate", IC_BORDER_REPLICATE}, {"edge", IC_BORDER_REPLICATE},
        {"nearest", IC_BORDER_REPLICATE},   {"clamp", IC_BORDER_REPLICATE},
        {"mirror", IC_BORDER_MIRROR},       {"reflect101", IC_BORDER_MIRROR},
        {"reflect-101", IC_BORDER_MIRROR},  {"reflect", IC_BORDER_REFLECT},
        {"symmetric", IC_BORDER_REFLECT},   {"wrap", IC_BORDER_WRAP},
        {"periodic", IC_BORDER_WRAP},       {"circular", IC_BORDER_WRAP},
    };
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        ic_border b = (ic_border)99;
        ic_status st = ic_border_parse(names[i].name, &b);
        CHECK(st == IC_OK, "ic_border_parse(\"%s\") returned %d", names[i].name, (int)st);
        CHECK(b == names[i].want, "ic_border_parse(\"%s\") gave %d, want %d (%s)", names[i].name,
              (int)b, (int)names[i].want, ict_border_str(names[i].want));
    }
    static const char *const bad[] = {"", "bogus", "mirrors", "constant ", "wrapx", "reflect-10"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ic_border b = IC_BORDER_WRAP;
        ic_status st = ic_border_parse(bad[i], &b);
        CHECK(st == IC_ERR_INVALID_ARG, "ic_border_parse(\"%s\") returned %d, want INVALID_ARG",
              bad[i], (int)st);
    }
    ic_border b;
    CHECK(ic_border_parse(NULL, &b) != IC_OK, "ic_border_parse(NULL) accepted");

    /* Canonical names, and they parse back. */
    static const char *const canon[] = {"constant", "replicate", "mirror", "reflect", "wrap"};
    for (int m = 0; m < 5; m++) {
        const char *name = ic_border_name((ic_border)m);
        CHECK(name && strcmp(name, canon[m]) == 0, "ic_border_name(%d) = \"%s\", want \"%s\"", m,
              name ? name : "(null)", canon[m]);
        ic_border back = (ic_border)99;
        CHECK(name && ic_border_parse(name, &back) == IC_OK && back == (ic_border)m,
              "ic_border_name(%d) does not parse back", m);
    }
}

static void test_alpha_parse(void)
{
    static const char *const canon[] = {"auto", "premultiply", "keep", "independent"};
    static const ic_alpha modes[] = {IC_ALPHA_AUTO, IC_ALPHA_PREMULTIPLY, IC_ALPHA_KEEP,
                                     IC_ALPHA_INDEPENDENT};
    for (int i = 0; i < 4; i++) {
        ic_alpha a = (ic_alpha)99;
        ic_status st = ic_alpha_parse(canon[i], &a);
        CHECK(st == IC_OK && a == modes[i], "ic_alpha_parse(\"%s\") -> status %d, mode %d",
              canon[i], (int)st, (int)a);
        const char *name = ic_alpha_name(modes[i]);
        CHECK(name && strcmp(name, canon[i]) == 0, "ic_alpha_name(%d) = \"%s\", want \"%s\"",
              (int)modes[i], name ? name : "(null)", canon[i]);
    }
    static const char *const bad[] = {"", "premultiplied?", "none", "autox"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ic_alpha a;
        CHECK(ic_alpha_parse(bad[i], &a) == IC_ERR_INVALID_ARG, "ic_alpha_parse(\"%s\") accepted",
              bad[i]);
    }
    ic_alpha a;
    CHECK(ic_alpha_parse(NULL, &a) != IC_OK, "ic_alpha_parse(NULL) accepted");
}

static void test_defaults(void)
{
    ic_params p;
    memset(&p, 0x5A, sizeof p);
    ic_params_default(&p);
    CHECK(p.border == IC_BORDER_MIRROR, "default border %d", (int)p.border);
    CHECK(p.border_value == 0.0f, "default border_value %g", (double)p.border_value);
    CHECK(p.correlate == 0, "default correlate %d", p.correlate);
    CHECK(p.bias == 0.0f, "default bias %g", (double)p.bias);
    CHECK(p.alpha == IC_ALPHA_AUTO, "default alpha %d", (int)p.alpha);
}

/* The tests' own mapping against hand-written tables for n = 4 ("abcd"), i in
 * [-6, 9], from imgconv.h: replicate aaa|abcd|ddd, mirror (reflect-101)
 * dcb|abcd|cba, reflect (symmetric) cba|abcd|dcb, wrap bcd|abcd|abc. */
static void test_own_mapping(void)
{
    static const int want[5][16] = {
        /* i:  -6  -5  -4  -3  -2  -1   0  1  2  3   4   5   6   7   8   9 */
        {-1, -1, -1, -1, -1, -1, 0, 1, 2, 3, -1, -1, -1, -1, -1, -1}, /* constant */
        {0, 0, 0, 0, 0, 0, 0, 1, 2, 3, 3, 3, 3, 3, 3, 3},             /* replicate */
        {0, 1, 2, 3, 2, 1, 0, 1, 2, 3, 2, 1, 0, 1, 2, 3},             /* mirror */
        {2, 3, 3, 2, 1, 0, 0, 1, 2, 3, 3, 2, 1, 0, 0, 1},             /* reflect */
        {2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 2, 3, 0, 1},             /* wrap */
    };
    for (int m = 0; m < 5; m++)
        for (int i = -6; i <= 9; i++) {
            int got = ict_border_map(i, 4, (ic_border)m);
            CHECK(got == want[m][i + 6], "oracle map %s(i=%d, n=4) = %d, want %d",
                  ict_border_str((ic_border)m), i, got, want[m][i + 6]);
        }
    /* n = 1: every mode but constant maps everything to 0; n = 2 mirror
     * alternates 0 1 0 1 (period 2), reflect repeats 0 0 1 1 (period 4). */
    for (int i = -9; i <= 9; i++) {
        for (int m = 1; m < 5; m++)
            CHECK(ict_border_map(i, 1, (ic_border)m) == 0, "oracle map %s(i=%d, n=1) != 0",
                  ict_border_str((ic_border)m), i);
        int mir = ((i % 2) + 2) % 2;
        int ref = (((i % 4) + 4) % 4) < 2 ? (((i % 4) + 4) % 4) : 3 - (((i % 4) + 4) % 4);
        CHECK(ict_border_map(i, 2, IC_BORDER_MIRROR) == mir, "oracle mirror(i=%d, n=2)", i);
        CHECK(ict_border_map(i, 2, IC_BORDER_REFLECT) == ref, "oracle reflect(i=%d, n=2)", i);
    }
}

/* The library's public mapping against the tests' own, n = 1, 2, 3, 5 (and a
 * few more), i in [-20, 20]: far outside, so reflections must repeat. */
static void test_border_index(void)
{
    static const int ns[] = {1, 2, 3, 5, 4, 7, 16};
    for (size_t t = 0; t < sizeof ns / sizeof ns[0]; t++) {
        const int n = ns[t];
        for (int m = 0; m < 5; m++) {
            for (int i = -20; i <= 20; i++) {
                int want = ict_border_map(i, n, (ic_border)m);
                int got = ic_border_index(i, n, (ic_border)m);
                CHECK(got == want, "ic_border_index(%d, %d, %s) = %d, want %d", i, n,
                      ict_border_str((ic_border)m), got, want);
            }
        }
    }
}

/* The issue-15 symptom: a blur with every default (NULL params) must neither
 * darken the frame of a uniform image nor give an opaque RGBA image a
 * transparent rim. With the mirror default every output sample of a flat
 * opaque image equals the input; with the old constant-0 default the corners
 * of a gaussian:9 came out near 1/4 of the value and alpha near 64. */
static void test_default_blur_keeps_edges(void)
{
    ic_image src, dst;
    ic_kernel k;
    if (ic_image_create(&src, 17, 11, 4, IC_AOS) != IC_OK ||
        ic_image_create(&dst, 17, 11, 4, IC_AOS) != IC_OK ||
        ic_kernel_parse(&k, "gaussian:9") != IC_OK) {
        CHECK(0, "setting up the default-blur case");
        return;
    }
    for (int y = 0; y < src.height; y++)
        for (int x = 0; x < src.width * 4; x++)
            src.data[(size_t)y * src.pitch + (size_t)x] = (uint8_t)(x % 4 == 3 ? 255 : 94);
    const ic_status st = ic_filter(&src, &dst, &k, NULL, "seq");
    CHECK(st == IC_OK, "ic_filter(NULL params): %s", ic_status_str(st));
    int bad = 0;
    for (int y = 0; st == IC_OK && y < dst.height; y++)
        for (int x = 0; x < dst.width * 4; x++) {
            const int want = x % 4 == 3 ? 255 : 94;
            const int got = dst.data[(size_t)y * dst.pitch + (size_t)x];
            if (got != want && bad++ < 4)
                CHECK(0,
                      "default blur of a flat opaque RGBA image: (%d, %d) channel %d = %d, "
                      "want %d",
                      x / 4, y, x % 4, got, want);
        }
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
}

int main(void)
{
    test_border_parse();
    test_alpha_parse();
    test_defaults();
    test_default_blur_keeps_edges();
    test_own_mapping();
    test_border_index();
    if (failures) {
        printf("test_params: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_params: all passed\n");
    return 0;
}
