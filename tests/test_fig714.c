/*
 * test_fig714.c - seed 003's Figure 7.14 (arithmetic-to-global-memory access
 * ratio of the tiled 2D convolution), recomputed from the one formula that
 * imgconv-bench's table R applies to imgconv's tiles (bench/fig714.h):
 *  - the printed table, verbatim: OUT_TILE_DIM and Ratio for a 5x5 filter at
 *    IN_TILE_DIM 8/16/32 (4/12/28, 3.13/7.03/9.57, bound 12.5) and a 9x9 one
 *    at 16/32 (8/24, 10.13/22.78, bound 40.5; "-" at 8), to the printed
 *    precision;
 *  - the tile counts behind the formula, counted one thread and one tap at a
 *    time by walking the seed's kernels (Fig 7.12: which threads compute;
 *    Fig 7.15: which taps leave the tile) and imgconv's output tiles, so the
 *    closed forms the bench uses are checked against the kernels' loops;
 *  - the ratio grows with the tile and stays under the bound K*K/2.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../bench/fig714.h"
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* ---- the printed table ------------------------------------------------------------ */

typedef struct printed_row {
    int k;
    const char *out[3];   /* OUT_TILE_DIM at IN_TILE_DIM 8, 16, 32 */
    const char *ratio[3]; /* Ratio at IN_TILE_DIM 8, 16, 32 */
    const char *bound;
} printed_row;

/* Figure 7.14, as printed in seed 003. */
static const int printed_in[3] = {8, 16, 32};
static const printed_row printed[2] = {
    {5, {"4", "12", "28"}, {"3.13", "7.03", "9.57"}, "12.5"},
    {9, {"-", "8", "24"}, {"-", "10.13", "22.78"}, "40.5"},
};

static void seed_table(void)
{
    for (int r = 0; r < 2; r++) {
        const printed_row *p = &printed[r];
        for (int c = 0; c < 3; c++) {
            const fig714_tile t = fig714_input_tile(printed_in[c], p->k);
            char out[16], ratio[16];
            if (t.outputs > 0) {
                snprintf(out, sizeof out, "%d", (int)lround(sqrt(t.outputs)));
                snprintf(ratio, sizeof ratio, "%.2f", fig714_round2(fig714_ratio(t)));
            } else {
                snprintf(out, sizeof out, "-");
                snprintf(ratio, sizeof ratio, "-");
            }
            CHECK(!strcmp(out, p->out[c]), "%dx%d, IN_TILE_DIM %d: OUT_TILE_DIM %s, printed %s",
                  p->k, p->k, printed_in[c], out, p->out[c]);
            CHECK(!strcmp(ratio, p->ratio[c]), "%dx%d, IN_TILE_DIM %d: ratio %s, printed %s", p->k,
                  p->k, printed_in[c], ratio, p->ratio[c]);
            /* to the printed precision, whatever the formatting: within half a unit
             * of the last printed digit */
            if (t.outputs > 0)
                CHECK(fabs(fig714_ratio(t) - atof(p->ratio[c])) <= 0.005 + 1e-12,
                      "%dx%d, IN_TILE_DIM %d: ratio %.6f is not %s to 2 decimals", p->k, p->k,
                      printed_in[c], fig714_ratio(t), p->ratio[c]);
        }
        char bound[16];
        snprintf(bound, sizeof bound, "%.1f", fig714_bound(p->k));
        CHECK(!strcmp(bound, p->bound), "%dx%d: bound %s, printed %s", p->k, p->k, bound, p->bound);
        CHECK(fig714_bound(p->k) == fig714_seed_units((double)p->k * p->k),
              "%dx%d: bound is not K*K multiply-adds per element", p->k, p->k);
    }
}

/* ---- the counts behind the formula ------------------------------------------------ */

/* Fig 7.12 walked thread by thread: an in x in block, every thread loads one
 * element; thread (tx, ty) computes when tileCol and tileRow are in
 * [0, OUT_TILE_DIM). (An interior tile: every load and output in the image.) */
static fig714_tile walk_input_tile(int in, int k)
{
    const int r = (k - 1) / 2, out_dim = in - 2 * r;
    fig714_tile t = {0, 0, 0};
    for (int ty = 0; ty < in; ty++)
        for (int tx = 0; tx < in; tx++) {
            t.loads += 1;
            const int tc = tx - r, tr = ty - r;
            if (tc >= 0 && tc < out_dim && tr >= 0 && tr < out_dim) {
                t.outputs += 1;
                t.macs += (double)k * k;
            }
        }
    return t;
}

/* Fig 7.15 walked tap by tap: a t x t tile loads its own elements; a tap of
 * thread (tx, ty) outside the tile is a global load. */
static fig714_tile walk_cached_tile(int tile, int k)
{
    const int r = (k - 1) / 2;
    fig714_tile t = {(double)tile * tile, 0, (double)tile * tile};
    for (int ty = 0; ty < tile; ty++)
        for (int tx = 0; tx < tile; tx++)
            for (int j = 0; j < k; j++)
                for (int i = 0; i < k; i++) {
                    const int sx = tx - r + i, sy = ty - r + j;
                    t.macs += 1;
                    if (sx < 0 || sx >= tile || sy < 0 || sy >= tile)
                        t.loads += 1;
                }
    return t;
}

/* cuda-tiled-out's load loop walked: element dest = t + 256 b of the
 * (out + k - 1)^2 tile, batches until the tile is covered. */
static fig714_tile walk_output_tile(int out, int k)
{
    const int tw = out + k - 1, n = tw * tw, threads = out * out;
    fig714_tile t = {(double)threads, (double)threads * k * k, 0};
    for (int tid = 0; tid < threads; tid++)
        for (int dest = tid; dest < n; dest += threads)
            t.loads += 1;
    return t;
}

static int same_tile(fig714_tile a, fig714_tile b)
{
    return a.outputs == b.outputs && a.macs == b.macs && a.loads == b.loads;
}

static void counts(void)
{
    static const int ks[] = {3, 5, 7, 9, 15};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        const int k = ks[i];
        for (int in = 8; in <= 64; in *= 2) {
            if (in - k + 1 < 1)
                continue;
            const fig714_tile f = fig714_input_tile(in, k), w = walk_input_tile(in, k);
            CHECK(same_tile(f, w), "input tile %d, %dx%d: formula %g/%g/%g, walked %g/%g/%g", in, k,
                  k, f.outputs, f.macs, f.loads, w.outputs, w.macs, w.loads);
        }
        for (int tile = 8; tile <= 32; tile *= 2) {
            const fig714_tile f = fig714_cached_tile(tile, k, 0), w = walk_cached_tile(tile, k);
            CHECK(same_tile(f, w), "cached tile %d, %dx%d: formula %g/%g/%g, walked %g/%g/%g", tile,
                  k, k, f.outputs, f.macs, f.loads, w.outputs, w.macs, w.loads);
            const fig714_tile h = fig714_cached_tile(tile, k, 1);
            CHECK(fabs(fig714_ratio(h) - fig714_bound(k)) < 1e-12,
                  "cached tile %d, %dx%d, halo from cache: ratio %g, bound %g", tile, k, k,
                  fig714_ratio(h), fig714_bound(k));
        }
        CHECK(fig714_ratio(fig714_direct(k)) == 0.5, "direct %dx%d: ratio %g, not 0.5", k, k,
              fig714_ratio(fig714_direct(k)));
        const fig714_tile f = fig714_output_tile(FIG714_TILE_OUT, k);
        const fig714_tile w = walk_output_tile(FIG714_TILE_OUT, k);
        CHECK(same_tile(f, w), "output tile 16, %dx%d: formula %g/%g/%g, walked %g/%g/%g", k, k,
              f.outputs, f.macs, f.loads, w.outputs, w.macs, w.loads);
        /* rows: 16 x rows outputs from (rows + k - 1) input rows of 48 samples */
        for (int rows = 1; rows <= 4; rows *= 2) {
            const fig714_tile t = fig714_rows_thread(rows, k);
            CHECK(t.outputs == 16.0 * rows && t.macs == 16.0 * rows * k * k &&
                      t.loads == 48.0 * (rows + k - 1),
                  "rows x%d, %dx%d: %g/%g/%g", rows, k, k, t.outputs, t.macs, t.loads);
        }
    }
}

/* The chapter's argument: larger tiles, higher ratio, never above the bound. */
static void monotone(void)
{
    for (int k = 3; k <= 15; k += 2) {
        double last = 0;
        for (int in = k; in <= 1024; in++) {
            const double x = fig714_ratio(fig714_input_tile(in, k));
            CHECK(x > last && x < fig714_bound(k),
                  "%dx%d, IN_TILE_DIM %d: ratio %g after %g, "
                  "bound %g",
                  k, k, in, x, last, fig714_bound(k));
            last = x;
        }
        CHECK(last > 0.95 * fig714_bound(k), "%dx%d: ratio %g at 1024 is not near the bound %g", k,
              k, last, fig714_bound(k));
    }
}

int main(void)
{
    seed_table();
    counts();
    monotone();
    if (failures) {
        printf("test_fig714: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_fig714: Figure 7.14 recomputed as printed; tile counts match the kernels\n");
    return 0;
}
