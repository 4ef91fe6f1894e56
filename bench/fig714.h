/*
 * fig714.h - the arithmetic-to-global-memory access ratio of seed 003
 * (Kirk & Hwu ch. 7), Figure 7.14, as ONE formula shared by imgconv-bench
 * (--tables R) and tests/test_fig714.c (which recomputes the seed's printed
 * entries with it before the bench applies it to imgconv's tile shapes).
 *
 * The formula: a tile computes `macs` multiply-adds (outputs x K*K) from
 * `loads` elements read from global memory, so
 *     ratio = macs / loads                 multiply-adds per element
 *           = 2 * macs / (4 * loads)       the seed's unit: arithmetic operations
 *                                          (a multiply and an add) per byte of
 *                                          4-byte float elements
 * For the input-tile kernel of Fig 7.12 (IN_TILE_DIM x IN_TILE_DIM threads,
 * each loading one element, OUT_TILE_DIM = IN_TILE_DIM - K + 1 of them
 * computing K*K multiply-adds) that is OUT^2 K^2 / (2 IN^2) operations per
 * byte: 5x5, IN 8/16/32 -> 3.13/7.03/9.57; 9x9, IN 16/32 -> 10.13/22.78. The
 * bound, as the tile grows (every element loaded once, used K*K times), is
 * K*K multiply-adds per element = K*K/2 operations per byte (12.5 for 5x5,
 * 40.5 for 9x9).
 *
 * imgconv's samples are uint8: one element is one byte there, so its
 * operations per byte are 4x the seed's float32 figure for the same tile.
 *
 * The tile shapes of imgconv's backends (mirrored here from
 * src/cuda/cuda_common.cuh and src/cuda/fast/rows.cu, because bench/ may not
 * include src/; update both together):
 *   cuda-global        no tile (Fig 7.7/7.9): every tap a load
 *   cuda-tiled-in      32x32 input tile (IC_CU_TILE_IN): Fig 7.12, IN 32
 *   cuda-tiled-out     16x16 output tile (IC_CU_TILE_OUT), (16+K-1)^2 loaded
 *   cuda-tiled-halo    16x16 output tile (IC_CU_TILE_HALO), the same loads
 *   cuda-tiled-cached  32x32 tile (IC_CU_TILE_CACHED) without halo (Fig 7.15);
 *                      every tap outside the tile is a global load (__ldg)
 *   cuda, rows method  a thread's registers: 16 samples x ROWS (1, 2, 4)
 *                      outputs; per input row three aligned 16-sample loads
 */
#ifndef IC_BENCH_FIG714_H
#define IC_BENCH_FIG714_H

#include <math.h>

#define FIG714_TILE_IN 32     /* cuda-tiled-in: IC_CU_TILE_IN */
#define FIG714_TILE_OUT 16    /* cuda-tiled-out / -halo: IC_CU_TILE_OUT, IC_CU_TILE_HALO */
#define FIG714_TILE_CACHED 32 /* cuda-tiled-cached: IC_CU_TILE_CACHED */
#define FIG714_ROWS_CHUNK 16  /* rows method: samples per thread (CHUNK) */

/* One tile (or thread) of a design: what it computes and what it loads. */
typedef struct fig714_tile {
    double outputs; /* output elements (0: the tile leaves no output, "-" in the seed) */
    double macs;    /* multiply-adds: outputs x K*K */
    double loads;   /* elements read from global memory */
} fig714_tile;

/* Multiply-adds per element read from global memory (0 for an empty tile). */
static inline double fig714_macs_per_element(fig714_tile t)
{
    return t.outputs > 0 && t.loads > 0 ? t.macs / t.loads : 0.0;
}

/* The seed's unit: 2 arithmetic operations per multiply-add over 4 bytes per
 * element (float32). */
static inline double fig714_seed_units(double macs_per_element)
{
    return 2.0 * macs_per_element / 4.0;
}

/* The ratio of tile t in the seed's unit (Fig 7.14's "Ratio" rows). */
static inline double fig714_ratio(fig714_tile t)
{
    return fig714_seed_units(fig714_macs_per_element(t));
}

/* The bound of a KxK filter in the seed's unit (every element used K*K times). */
static inline double fig714_bound(int k)
{
    return fig714_seed_units((double)k * k);
}

/* Fig 7.7 / 7.9 = cuda-global: no tile, every tap of an output a global load
 * (1 multiply-add per element: 0.5 operations per byte in the seed's unit). */
static inline fig714_tile fig714_direct(int k)
{
    fig714_tile t = {1, (double)k * k, (double)k * k};
    return t;
}

/* Fig 7.12: in x in threads load one element each; (in - k + 1)^2 compute. */
static inline fig714_tile fig714_input_tile(int in, int k)
{
    const int out = in - k + 1;
    fig714_tile t = {0, 0, (double)in * in};
    if (out > 0) {
        t.outputs = (double)out * out;
        t.macs = t.outputs * k * k;
    }
    return t;
}

/* An out x out output tile loading its (out + k - 1)^2 input tile with halo
 * (cuda-tiled-out, cuda-tiled-halo: they differ in how, not what, they load). */
static inline fig714_tile fig714_output_tile(int out, int k)
{
    const double in = (double)out + k - 1;
    fig714_tile t = {(double)out * out, (double)out * out * k * k, in * in};
    return t;
}

/* Fig 7.15: a t x t tile loads its own t^2 elements; of the t^2 k^2 taps, those
 * outside the tile read global memory. Per axis, the taps inside the tile are
 * t k - r (r + 1) (r = (k - 1) / 2: the r taps nearest each edge fall out
 * 1 + 2 + ... + r times), so the halo taps are t^2 k^2 - (t k - r (r + 1))^2.
 * halo_cached = 1 counts them as cache hits (only the tile's own elements
 * are loads): the ratio is then the bound. */
static inline fig714_tile fig714_cached_tile(int t, int k, int halo_cached)
{
    const double r = (k - 1) / 2, taps = (double)t * t * k * k;
    const double inside = (double)t * k - r * (r + 1);
    fig714_tile x = {(double)t * t, taps, (double)t * t};
    if (!halo_cached)
        x.loads += taps - inside * inside;
    return x;
}

/* The rows method: one thread computes 16 samples of `rows` output rows; for
 * each of its rows + k - 1 input rows it loads the 16 samples above its
 * outputs and the 16 on either side (three 16-byte loads, 48 samples). */
static inline fig714_tile fig714_rows_thread(int rows, int k)
{
    const double outputs = (double)FIG714_ROWS_CHUNK * rows;
    fig714_tile t = {outputs, outputs * k * k, (double)(rows + k - 1) * 3 * FIG714_ROWS_CHUNK};
    return t;
}

/* x rounded to 2 decimals with halves away from zero, as the seed prints
 * (3.125 -> 3.13, 10.125 -> 10.13; printf's "%.2f" gives 3.12 for exact ties). */
static inline double fig714_round2(double x)
{
    return x < 0 ? -floor(-x * 100.0 + 0.5) / 100.0 : floor(x * 100.0 + 0.5) / 100.0;
}

#endif /* IC_BENCH_FIG714_H */
