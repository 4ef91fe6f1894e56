/*
 * test_seeds.c - the seeds' worked examples, verbatim:
 *  - seed 004 ("Padding"): the constant / replicate / mirror tables around the
 *    3x3 corner 165 95 215 / 222 144 199 / 255 172 83, rebuilt with the
 *    library's public mapping ic_border_index() and shown through ic_convolve()
 *    by a one-hot kernel that shifts the image by one pixel, so that the
 *    padding itself becomes the output (seq, and cpu when present);
 *  - seed 003 (Kirk & Hwu ch. 7, the in-text 5x5 example): P[2][2] = 321, from
 *    the oracle and, scaled into uint8 range by divisors and biases, from
 *    ic_convolve();
 *  - seed 002 ("Blocchi e halo"): the printed 12x12 shared-memory tiles of
 *    matrix A with RAD = 2 and zero-padded halos ("Block 0,0", "Block 1,1",
 *    "Block 2,0"), rebuilt from matrix A with IC_BORDER_CONSTANT;
 *  - the worked rounding example: ties to even and clamping.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* ---- seed 004: padding tables -------------------------------------------------- */

/* The top-left 3x3 corner of the seed's image. */
static const uint8_t corner[3][3] = {{165, 95, 215}, {222, 144, 199}, {255, 172, 83}};

/* The seed's tables: padded rows -1..2, columns -1..2 (one pixel of padding
 * above and to the left of the corner). The constant table's "o" in the
 * seed's text is a 0 read by OCR. */
static const uint8_t table_constant[4][4] = {
    {0, 0, 0, 0}, {0, 165, 95, 215}, {0, 222, 144, 199}, {0, 255, 172, 83}};
static const uint8_t table_replicate[4][4] = {
    {165, 165, 95, 215}, {165, 165, 95, 215}, {222, 222, 144, 199}, {255, 255, 172, 83}};
static const uint8_t table_mirror[4][4] = {
    {144, 222, 144, 199}, {95, 165, 95, 215}, {144, 222, 144, 199}, {172, 255, 172, 83}};

static const uint8_t (*table_for(ic_border b))[4]
{
    return b == IC_BORDER_CONSTANT    ? table_constant
           : b == IC_BORDER_REPLICATE ? table_replicate
                                      : table_mirror;
}

static const ic_border seed004_modes[3] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE,
                                           IC_BORDER_MIRROR};

/* The tables from ic_border_index() over images whose top-left 3x3 is the
 * corner: the corner alone (3x3) and inside a larger 6x5 image. */
static void seed004_tables_by_index(void)
{
    static const int sizes[2][2] = {{3, 3}, {6, 5}};
    for (int s = 0; s < 2; s++) {
        const int w = sizes[s][0], h = sizes[s][1];
        uint8_t img[5][6];
        for (int y = 0; y < h; y++)
            for (int x = 0; x < w; x++)
                img[y][x] = (y < 3 && x < 3) ? corner[y][x] : (uint8_t)(17 * x + 31 * y + 1);
        for (int m = 0; m < 3; m++) {
            const ic_border b = seed004_modes[m];
            const uint8_t(*want)[4] = table_for(b);
            for (int y = -1; y <= 2; y++) {
                for (int x = -1; x <= 2; x++) {
                    int mx = ic_border_index(x, w, b), my = ic_border_index(y, h, b);
                    int got = (mx < 0 || my < 0) ? 0 : img[my][mx];
                    CHECK(got == want[y + 1][x + 1],
                          "seed 004 %s table via ic_border_index (image %dx%d) at (%d,%d): %d, "
                          "want %d",
                          ict_border_str(b), w, h, x, y, got, want[y + 1][x + 1]);
                    /* and the tests' own mapping agrees with the seed too */
                    int ox = ict_border_map(x, w, b), oy = ict_border_map(y, h, b);
                    int own = (ox < 0 || oy < 0) ? 0 : img[oy][ox];
                    CHECK(own == want[y + 1][x + 1], "seed 004 %s table via the oracle mapping",
                          ict_border_str(b));
                }
            }
        }
    }
}

/* out(x,y) = in(x-1, y-1) on a 4x4 image holding the corner: the output is the
 * seed's padded table. As a correlation the 1 sits at K(0,0); as a convolution
 * (kernel flipped) at K(2,2). Every channel of a 3-channel image holds the
 * corner too, in AoS and SoA. */
static void seed004_tables_by_convolution(const char *backend)
{
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, NULL) != IC_OK) {
        CHECK(0, "ic_context_create(%s): %s", backend, ic_last_error());
        return;
    }
    static const struct {
        int channels;
        ic_layout layout;
    } images[3] = {{1, IC_AOS}, {3, IC_AOS}, {3, IC_SOA}};
    for (int im = 0; im < 3; im++) {
        for (int m = 0; m < 3; m++) {
            for (int correlate = 0; correlate <= 1; correlate++) {
                ict_buf src, dst;
                if (ict_buf_alloc(&src, 4, 4, images[im].channels, images[im].layout, 3) ||
                    ict_buf_alloc(&dst, 4, 4, images[im].channels, images[im].layout, 7)) {
                    CHECK(0, "allocation");
                    continue;
                }
                ict_buf_fill(&src, 0x11);
                ict_buf_fill(&dst, 0xA5);
                for (int y = 0; y < 4; y++)
                    for (int x = 0; x < 4; x++)
                        for (int c = 0; c < images[im].channels; c++)
                            *(uint8_t *)ict_sample(&src.img, x, y, c) =
                                (y < 3 && x < 3) ? corner[y][x] : (uint8_t)(40 + 10 * x + y);
                float coef[9] = {0};
                coef[correlate ? 0 : 8] = 1.0f;
                ic_kernel k;
                ic_params p;
                ic_params_default(&p);
                p.border = seed004_modes[m];
                p.correlate = correlate;
                if (ic_kernel_create(&k, 3, 3, coef, 1.0) != IC_OK) {
                    CHECK(0, "ic_kernel_create(one-hot 3x3)");
                } else {
                    ic_status st = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
                    CHECK(st == IC_OK, "%s: ic_convolve: %s (%s)", backend, ic_status_str(st),
                          ic_last_error());
                    const uint8_t(*want)[4] = table_for(p.border);
                    for (int y = 0; st == IC_OK && y < 4; y++)
                        for (int x = 0; x < 4; x++)
                            for (int c = 0; c < images[im].channels; c++) {
                                int got = *ict_sample(&dst.img, x, y, c);
                                CHECK(got == want[y][x],
                                      "%s: seed 004 %s table through a one-hot %s, %d ch %s, "
                                      "at padded (%d,%d) c=%d: %d, want %d",
                                      backend, ict_border_str(p.border),
                                      correlate ? "correlation" : "convolution",
                                      images[im].channels, ict_layout_str(images[im].layout), x - 1,
                                      y - 1, c, got, want[y][x]);
                            }
                    CHECK(ict_buf_padding_is(&dst, 0xA5, NULL), "%s: dst padding written", backend);
                    ic_kernel_free(&k);
                }
                ict_buf_free(&src);
                ict_buf_free(&dst);
            }
        }
    }
    ic_context_free(ctx);
}

/* ---- seed 003: the 5x5 example, P[2][2] = 321 ---------------------------------- */

/* N is the 5x5 input patch and M the 5x5 mask of the seed's in-text figure
 * (note N[4][4] = 5, as printed). M is symmetric under the flip, so
 * convolution and correlation agree. */
static const float seed003_n[5][5] = {
    {1, 2, 3, 4, 5}, {2, 3, 4, 5, 6}, {3, 4, 5, 6, 7}, {4, 5, 6, 7, 8}, {5, 6, 7, 8, 5}};
static const float seed003_m[25] = {1, 2, 3, 2, 1, 2, 3, 4, 3, 2, 3, 4, 5,
                                    4, 3, 2, 3, 4, 3, 2, 1, 2, 3, 2, 1};

static void seed003_example(const char *backend)
{
    ict_buf src, dst;
    if (ict_buf_alloc(&src, 5, 5, 1, IC_AOS, 0) || ict_buf_alloc(&dst, 5, 5, 1, IC_SOA, 11)) {
        CHECK(0, "allocation");
        return;
    }
    for (int y = 0; y < 5; y++)
        for (int x = 0; x < 5; x++)
            src.mem[y * 5 + x] = (uint8_t)seed003_n[y][x];

    /* divisor, bias -> hand-computed P[2][2] = 321/divisor + bias, and its uint8 */
    static const struct {
        double divisor;
        float bias;
        double value;
        int u8;
    } cases[] = {
        {1.0, 0.0f, 321.0, 255},    /* the seed's number, clamped */
        {2.0, 0.0f, 160.5, 160},    /* a tie: to even */
        {4.0, 0.0f, 80.25, 80},     /* 321/4 */
        {3.0, 0.0f, 107.0, 107},    /* 321/3, inexact weights */
        {1.0, -67.0f, 254.0, 254},  /* 321 - 67 */
        {1.0, -67.5f, 253.5, 254},  /* tie: to even (up) */
        {1.0, -68.5f, 252.5, 252},  /* tie: to even (down) */
        {-2.0, 300.0f, 139.5, 140}, /* negative divisor: -160.5 + 300, tie up to even */
        {-1.0, 0.0f, -321.0, 0},    /* clamped at 0 */
    };
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, NULL) != IC_OK) {
        CHECK(0, "ic_context_create(%s): %s", backend, ic_last_error());
        ict_buf_free(&src);
        ict_buf_free(&dst);
        return;
    }
    for (size_t t = 0; t < sizeof cases / sizeof cases[0]; t++) {
        ic_kernel k;
        if (ic_kernel_create(&k, 5, 5, seed003_m, cases[t].divisor) != IC_OK) {
            CHECK(0, "ic_kernel_create(seed 003 mask, divisor %g)", cases[t].divisor);
            continue;
        }
        for (int correlate = 0; correlate <= 1; correlate++) {
            for (int b = 0; b < 5; b++) {
                ic_params p;
                ic_params_default(&p);
                p.correlate = correlate;
                p.bias = cases[t].bias;
                p.border = (ic_border)b;
                double v;
                ict_oracle_pixel(&src.img, &k, &p, 2, 2, &v, NULL);
                CHECK(v == cases[t].value, "seed 003 oracle P[2][2] = %.17g, want %.17g", v,
                      cases[t].value);
                CHECK(ict_round(v) == cases[t].u8, "seed 003 ict_round(%.17g) = %d, want %d", v,
                      ict_round(v), cases[t].u8);
                ict_buf_fill(&dst, 0xA5);
                ic_status st = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
                CHECK(st == IC_OK, "%s: ic_convolve: %s", backend, ic_status_str(st));
                int got = *ict_sample(&dst.img, 2, 2, 0);
                CHECK(st != IC_OK || got == cases[t].u8,
                      "%s: seed 003 P[2][2] with divisor %g, bias %g, %s, %s border: %d, want %d",
                      backend, cases[t].divisor, (double)cases[t].bias,
                      correlate ? "correlation" : "convolution", ict_border_str(p.border), got,
                      cases[t].u8);
            }
        }
        ic_kernel_free(&k);
    }
    ic_context_free(ctx);
    ict_buf_free(&src);
    ict_buf_free(&dst);
}

/* ---- seed 002: zero-padded halo tiles ------------------------------------------- */

/* Matrix A (24x24): rows 0..7 as printed under "Print matrix A...", rows 8..23
 * as printed under the heading "Block 2,2" (16 rows of 24: the rest of A, as
 * the tiles below confirm; the real block 2,2 is not printed). */
static const uint8_t seed002_a[24][24] = {
    {3, 6, 7, 5, 3, 5, 6, 2, 9, 1, 2, 7, 0, 9, 3, 6, 0, 6, 2, 6, 1, 8, 7, 9},
    {2, 0, 2, 3, 7, 5, 9, 2, 2, 8, 9, 7, 3, 6, 1, 2, 9, 3, 1, 9, 4, 7, 8, 4},
    {5, 0, 3, 6, 1, 0, 6, 3, 2, 0, 6, 1, 5, 5, 4, 7, 6, 5, 6, 9, 3, 7, 4, 5},
    {2, 5, 4, 7, 4, 4, 3, 0, 7, 8, 6, 8, 8, 4, 3, 1, 4, 9, 2, 0, 6, 8, 9, 2},
    {6, 6, 4, 9, 5, 0, 4, 8, 7, 1, 7, 2, 7, 2, 2, 6, 1, 0, 6, 1, 5, 9, 4, 9},
    {0, 9, 1, 7, 7, 1, 1, 5, 9, 7, 7, 6, 7, 3, 6, 5, 6, 3, 9, 4, 8, 1, 2, 9},
    {3, 9, 0, 8, 8, 5, 0, 9, 6, 3, 8, 5, 6, 1, 1, 5, 9, 8, 4, 8, 1, 0, 3, 0},
    {4, 4, 4, 4, 7, 6, 3, 1, 7, 5, 9, 6, 2, 1, 7, 8, 5, 7, 4, 1, 8, 5, 9, 7},
    {5, 3, 8, 8, 3, 1, 8, 9, 6, 4, 3, 3, 3, 8, 6, 0, 4, 8, 8, 8, 9, 7, 7, 6},
    {4, 3, 0, 3, 0, 9, 2, 5, 4, 0, 5, 9, 4, 6, 9, 2, 2, 4, 7, 7, 5, 4, 8, 1},
    {2, 8, 9, 3, 6, 8, 0, 2, 1, 0, 5, 1, 1, 0, 8, 5, 0, 6, 4, 6, 2, 5, 8, 6},
    {2, 8, 4, 7, 2, 4, 0, 6, 2, 9, 9, 0, 8, 1, 3, 1, 1, 0, 3, 4, 0, 3, 9, 1},
    {9, 6, 9, 3, 3, 8, 0, 5, 6, 6, 4, 0, 0, 4, 6, 2, 6, 7, 5, 6, 9, 8, 7, 2},
    {8, 2, 9, 9, 6, 0, 2, 7, 6, 1, 3, 2, 1, 5, 9, 9, 1, 4, 9, 1, 0, 7, 5, 8},
    {7, 0, 4, 8, 0, 4, 2, 9, 6, 1, 0, 4, 2, 2, 2, 0, 5, 5, 2, 9, 0, 2, 8, 3},
    {8, 0, 4, 0, 9, 1, 9, 6, 2, 5, 4, 4, 9, 9, 3, 6, 0, 5, 0, 2, 9, 4, 3, 5},
    {1, 7, 4, 3, 1, 4, 6, 9, 4, 2, 2, 6, 4, 1, 2, 8, 8, 9, 2, 8, 8, 8, 6, 8},
    {3, 8, 3, 3, 3, 8, 0, 4, 7, 6, 8, 9, 0, 6, 8, 7, 9, 0, 3, 3, 3, 7, 3, 2},
    {6, 5, 2, 6, 5, 8, 7, 9, 6, 0, 4, 1, 0, 4, 8, 7, 0, 8, 6, 2, 4, 7, 9, 3},
    {9, 2, 8, 3, 0, 1, 7, 8, 9, 1, 5, 4, 9, 2, 5, 7, 4, 9, 9, 4, 5, 9, 3, 5},
    {7, 0, 8, 1, 9, 9, 7, 8, 2, 5, 3, 4, 9, 0, 2, 0, 1, 9, 6, 2, 1, 2, 0, 7},
    {3, 1, 1, 9, 0, 5, 6, 7, 7, 4, 0, 6, 4, 7, 4, 8, 5, 8, 2, 6, 0, 6, 6, 4},
    {6, 2, 8, 9, 6, 0, 7, 0, 1, 0, 1, 3, 7, 7, 2, 6, 4, 5, 2, 0, 2, 9, 0, 9},
    {9, 4, 5, 1, 0, 3, 7, 8, 8, 6, 0, 4, 6, 7, 6, 0, 9, 7, 5, 9, 7, 8, 5, 3},
};
/* The printed tiles: TILE 8, RAD 2, tile(r, c) = A(8*by - 2 + r, 8*bx - 2 + c). */
static const uint8_t seed002_block00[12][12] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {0, 0, 3, 6, 7, 5, 3, 5, 6, 2, 9, 1}, {0, 0, 2, 0, 2, 3, 7, 5, 9, 2, 2, 8},
    {0, 0, 5, 0, 3, 6, 1, 0, 6, 3, 2, 0}, {0, 0, 2, 5, 4, 7, 4, 4, 3, 0, 7, 8},
    {0, 0, 6, 6, 4, 9, 5, 0, 4, 8, 7, 1}, {0, 0, 0, 9, 1, 7, 7, 1, 1, 5, 9, 7},
    {0, 0, 3, 9, 0, 8, 8, 5, 0, 9, 6, 3}, {0, 0, 4, 4, 4, 4, 7, 6, 3, 1, 7, 5},
    {0, 0, 5, 3, 8, 8, 3, 1, 8, 9, 6, 4}, {0, 0, 4, 3, 0, 3, 0, 9, 2, 5, 4, 0},
};
static const uint8_t seed002_block11[12][12] = {
    {0, 9, 6, 3, 8, 5, 6, 1, 1, 5, 9, 8}, {3, 1, 7, 5, 9, 6, 2, 1, 7, 8, 5, 7},
    {8, 9, 6, 4, 3, 3, 3, 8, 6, 0, 4, 8}, {2, 5, 4, 0, 5, 9, 4, 6, 9, 2, 2, 4},
    {0, 2, 1, 0, 5, 1, 1, 0, 8, 5, 0, 6}, {0, 6, 2, 9, 9, 0, 8, 1, 3, 1, 1, 0},
    {0, 5, 6, 6, 4, 0, 0, 4, 6, 2, 6, 7}, {2, 7, 6, 1, 3, 2, 1, 5, 9, 9, 1, 4},
    {2, 9, 6, 1, 0, 4, 2, 2, 2, 0, 5, 5}, {9, 6, 2, 5, 4, 4, 9, 9, 3, 6, 0, 5},
    {6, 9, 4, 2, 2, 6, 4, 1, 2, 8, 8, 9}, {0, 4, 7, 6, 8, 9, 0, 6, 8, 7, 9, 0},
};
static const uint8_t seed002_block20[12][12] = {
    {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}, {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0},
    {3, 6, 0, 6, 2, 6, 1, 8, 7, 9, 0, 0}, {1, 2, 9, 3, 1, 9, 4, 7, 8, 4, 0, 0},
    {4, 7, 6, 5, 6, 9, 3, 7, 4, 5, 0, 0}, {3, 1, 4, 9, 2, 0, 6, 8, 9, 2, 0, 0},
    {2, 6, 1, 0, 6, 1, 5, 9, 4, 9, 0, 0}, {6, 5, 6, 3, 9, 4, 8, 1, 2, 9, 0, 0},
    {1, 5, 9, 8, 4, 8, 1, 0, 3, 0, 0, 0}, {7, 8, 5, 7, 4, 1, 8, 5, 9, 7, 0, 0},
    {6, 0, 4, 8, 8, 8, 9, 7, 7, 6, 4, 3}, {9, 2, 2, 4, 7, 7, 5, 4, 8, 1, 2, 8},
};

/* Tile (bx, by) of A with a zero-padded halo, through ic_border_index. */
static int seed002_tile(int bx, int by, int r, int c)
{
    int x = ic_border_index(8 * bx - 2 + c, 24, IC_BORDER_CONSTANT);
    int y = ic_border_index(8 * by - 2 + r, 24, IC_BORDER_CONSTANT);
    return (x < 0 || y < 0) ? 0 : seed002_a[y][x];
}

static void seed002_blocks(void)
{
    for (int r = 0; r < 12; r++) {
        for (int c = 0; c < 12; c++) {
            CHECK(seed002_tile(0, 0, r, c) == seed002_block00[r][c],
                  "seed 002 Block 0,0 [%d][%d]: %d, printed %d", r, c, seed002_tile(0, 0, r, c),
                  seed002_block00[r][c]);
            CHECK(seed002_tile(1, 1, r, c) == seed002_block11[r][c],
                  "seed 002 Block 1,1 [%d][%d]: %d, printed %d", r, c, seed002_tile(1, 1, r, c),
                  seed002_block11[r][c]);
            /* Block 2,0's bottom-right 2x2 is the seed's own bug: its bottom-halo
             * "right corner" load lacks the (x+RAD) < W test and reads
             * A[(y+RAD)*W + x+RAD], i.e. the first columns of the next row. */
            if (r >= 10 && c >= 10) {
                CHECK(seed002_tile(2, 0, r, c) == 0, "seed 002 Block 2,0 [%d][%d] not zero", r, c);
                CHECK(seed002_block20[r][c] == seed002_a[r - 1][c - 10],
                      "seed 002 Block 2,0 [%d][%d]: the printed %d is not A[%d][%d]", r, c,
                      seed002_block20[r][c], r - 1, c - 10);
            } else {
                CHECK(seed002_tile(2, 0, r, c) == seed002_block20[r][c],
                      "seed 002 Block 2,0 [%d][%d]: %d, printed %d", r, c, seed002_tile(2, 0, r, c),
                      seed002_block20[r][c]);
            }
        }
    }
}

/* The same tiles through ic_convolve: a 5x5 one-hot correlation with the 1 at
 * K(0,0) gives out(x,y) = A(x-2, y-2), zero outside: Block 0,0 is out[0..11]
 * [0..11] and Block 1,1 is out[8..19][8..19]. */
static void seed002_blocks_by_convolution(const char *backend)
{
    ict_buf src, dst;
    if (ict_buf_alloc(&src, 24, 24, 1, IC_AOS, 8) || ict_buf_alloc(&dst, 24, 24, 1, IC_AOS, 0)) {
        CHECK(0, "allocation");
        return;
    }
    ict_buf_fill(&src, 0x77);
    for (int y = 0; y < 24; y++)
        memcpy(src.mem + (size_t)y * src.img.pitch, seed002_a[y], 24);
    float coef[25] = {0};
    coef[0] = 1.0f;
    ic_kernel k;
    ic_params p;
    ic_params_default(&p);
    p.correlate = 1;
    p.border = IC_BORDER_CONSTANT; /* the seed's zero ghost cells, not the default */
    if (ic_kernel_create(&k, 5, 5, coef, 1.0) != IC_OK) {
        CHECK(0, "ic_kernel_create(one-hot 5x5)");
    } else {
        ic_status st = ic_filter(&src.img, &dst.img, &k, &p, backend);
        CHECK(st == IC_OK, "%s: ic_filter: %s", backend, ic_status_str(st));
        for (int r = 0; st == IC_OK && r < 12; r++)
            for (int c = 0; c < 12; c++) {
                int b00 = dst.mem[(size_t)r * 24 + (size_t)c];
                int b11 = dst.mem[(size_t)(r + 8) * 24 + (size_t)(c + 8)];
                CHECK(b00 == seed002_block00[r][c],
                      "%s: seed 002 Block 0,0 [%d][%d]: %d, printed %d", backend, r, c, b00,
                      seed002_block00[r][c]);
                CHECK(b11 == seed002_block11[r][c],
                      "%s: seed 002 Block 1,1 [%d][%d]: %d, printed %d", backend, r, c, b11,
                      seed002_block11[r][c]);
            }
        ic_kernel_free(&k);
    }
    ict_buf_free(&src);
    ict_buf_free(&dst);
}

/* ---- driver ---------------------------------------------------------------------- */

int main(void)
{
    seed004_tables_by_index();
    seed002_blocks();
    /* seq is the seeds' own algorithm and must be there; cpu too when built */
    static const char *const backends[] = {"seq", "cpu"};
    for (int b = 0; b < 2; b++) {
        char why[200] = "";
        if (!ict_backend_usable(backends[b], why, sizeof why)) {
            CHECK(b != 0, "backend seq not usable: %s", why);
            printf("(%s not usable: %s)\n", backends[b], why);
            continue;
        }
        seed004_tables_by_convolution(backends[b]);
        seed003_example(backends[b]);
        seed002_blocks_by_convolution(backends[b]);
        failures += ict_check_rounding(backends[b]);
        printf("seed examples checked on %s\n", backends[b]);
    }
    if (failures) {
        printf("test_seeds: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_seeds: all passed\n");
    return 0;
}
