/*
 * fft_model.c - what is known of the `cpu` backend's FFT path (src/cpu/cpu_fft.c)
 * before running it: the tile shape of a job, its arithmetic, its modelled
 * time and its predicted float32 rounding error. Pure C without KissFFT, so
 * every build plans the same way, and in core so that the work estimate
 * (ic_convolve_work) counts what the path runs.
 *
 * Time model, in the planner's unit (one multiply-add of the direct path on a
 * small kernel, cpu.c). One tile of one plane costs
 *   FFT_UNIT * [(ny + vy) * h * (log2 h + 3)       real rows, forward + inverse
 *               + (h + 1) * ny * 2 * log2 ny      complex columns, both ways
 *               + FFT_POINT * nx * ny]            loads, the spectrum multiply, stores
 * with h = nx / 2 (a real transform of nx points is a complex one of nx/2 plus
 * a pass of twiddles). Tiles x planes are the tasks; the job's time is the
 * busiest worker's, ceil(tasks / workers) tiles, spread over the image's
 * samples so that it compares with the direct cost per sample.
 * The constants are fitted to this path's single-thread times on the 2-core
 * dev machine, an Intel Xeon with AVX-512 (docs/performance.md#large-kernels-on-the-cpu).
 *
 * Error model. Overlap-save rounds in the forward transform, the multiply and
 * the inverse; the error of an output is bounded in the RMS sense by
 *   eps * log2(nx * ny) * A * ||w||_2,   eps = 2^-24,
 * A the largest centred sample (|s - centre| <= centre, or the border value's
 * distance from it), ||w||_2 the weights' Euclidean norm; ERR_GAIN covers the
 * worst sample (measured against a float64 sum of the unrounded outputs). The
 * half-ulp of the output itself (2^-24 of it), which every float32 sum pays,
 * is not the FFT's and is left out.
 */
#include <math.h>

#include "core/fft_model.h"

/* Direct units per butterfly: 42-44 measured at kernels 15..255 (a unit is
 * about 28 ps there, a KissFFT butterfly about 1.2 ns). */
static const double FFT_UNIT = 42.0;
/* Butterflies' worth of the loads, the multiply and the stores, per point. */
static const double FFT_POINT = 4.0;
/* Largest transform side: a 2048 x 1025 complex spectrum is 16 MiB a worker. */
enum { MAX_N = IC_FFT_MAX_N };
/* Worst sample over the bound, with a margin: measured 0.5-0.7 where the
 * transforms' error shows (zero-mean kernels, 31x31 to 255x255, 8 and 16
 * bits); under blurs the output's own half-ulp hides it. */
static const double ERR_GAIN = 4.0;

/* The acceptance rule (docs/definitions.md#accuracy) lets 0.1% of 8-bit
 * samples and 1% of 16-bit ones round the other way; a sample can do so only
 * within the error of a .5, about 2e of the samples for an error e, so a
 * limit of a quarter of the share spends at most half of it. */
double ic__fft_error_limit(int u16)
{
    return u16 ? 0.01 / 4 : 0.001 / 4;
}

/* Next size >= n that is even with prime factors 2, 3 and 5 only (KissFFT's
 * fast radices), or 0 above MAX_N. */
static int smooth_at_least(int n)
{
    for (int m = n < 2 ? 2 : n; m <= MAX_N; m++) {
        if (m % 2)
            continue;
        int r = m;
        while (r % 2 == 0)
            r /= 2;
        while (r % 3 == 0)
            r /= 3;
        while (r % 5 == 0)
            r /= 5;
        if (r == 1)
            return m;
    }
    return 0;
}

/* Butterflies (and their worth of other work) of one tile of one plane. */
static double tile_butterflies(int nx, int ny, int vy)
{
    const double h = nx / 2.0;
    const double rows = (double)(ny + vy) * h * (log2(h) + 3.0);
    const double cols = (h + 1.0) * ny * 2.0 * log2((double)ny);
    return rows + cols + FFT_POINT * (double)nx * ny;
}

void ic__fft_geom(int w, int h, int kw, int kh, int planes, int workers, ic_fft_geom *g)
{
    g->cost = INFINITY;
    g->nx = g->ny = 0;
    if (workers < 1)
        workers = 1;
    /* no tile larger than the whole padded image, unless the image is
     * smaller than the smallest transform that holds the kernel */
    const int topx = smooth_at_least(w + kw - 1), topy = smooth_at_least(h + kh - 1);
    for (int nx = smooth_at_least(kw); nx && nx <= MAX_N; nx = smooth_at_least(nx + 1)) {
        if (topx && nx > topx)
            break;
        const int vx = nx - kw + 1, tx = (w + vx - 1) / vx;
        for (int ny = smooth_at_least(kh); ny && ny <= MAX_N; ny = smooth_at_least(ny + 1)) {
            if (topy && ny > topy)
                break;
            const int vy = ny - kh + 1, ty = (h + vy - 1) / vy;
            const double tasks = (double)tx * ty * planes;
            const double rounds = ceil(tasks / workers);
            const double tile = tile_butterflies(nx, ny, vy);
            const double cost =
                rounds * FFT_UNIT * tile * workers / ((double)w * (double)h * (double)planes);
            if (cost < g->cost) {
                g->cost = cost;
                g->nx = nx;
                g->ny = ny;
                g->vx = vx;
                g->vy = vy;
                g->tx = tx;
                g->ty = ty;
                g->tasks = (int)tasks;
                g->butterflies = tasks * tile;
            }
        }
    }
}

double ic__fft_error(const float *w, int kw, int kh, int nx, int ny, float centre, float bv)
{
    double norm = 0.0;
    for (int t = 0; t < kw * kh; t++) {
        norm += (double)w[t] * w[t];
    }
    double a = centre, d = fabs((double)bv - centre);
    a = d > a ? d : a;
    const double eps = ldexp(1.0, -24);
    return ERR_GAIN * eps * log2((double)nx * ny) * a * sqrt(norm);
}
