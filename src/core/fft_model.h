/*
 * fft_model.h - the model of the `cpu` backend's FFT path (internal): tile
 * shape, arithmetic, modelled time and predicted rounding error of a job
 * (fft_model.c). Read by the cpu planner (src/cpu/cpu.c) and by the work
 * estimate (src/dispatch/work.c).
 */
#ifndef IC_CORE_FFT_MODEL_H
#define IC_CORE_FFT_MODEL_H

/* Overlap-save geometry of one job: tiles of nx x ny input samples give
 * vx x vy outputs each (v = n - k + 1), tx x ty of them cover the image. */
typedef struct ic_fft_geom {
    int nx, ny;         /* transform sizes: even, factors 2, 3 and 5 only */
    int vx, vy;         /* valid outputs per tile */
    int tx, ty;         /* tiles across and down */
    int tasks;          /* tx * ty * planes */
    double cost;        /* modelled time on `workers` workers, in direct units a sample */
    double butterflies; /* the job's transform work (fft_model.c counts it) */
} ic_fft_geom;

/* Picks the tile shape of a w x h image, kw x kh kernel, `planes` transforms
 * a tile, on `workers` workers: the smallest modelled time. */
void ic__fft_geom(int w, int h, int kw, int kh, int planes, int workers, ic_fft_geom *g);

/* Predicted worst float32 rounding error of the FFT path in output levels for
 * these weights, transform sizes and samples of half-range `centre` (128 or
 * 32768) with the border value bv. */
double ic__fft_error(const float *w, int kw, int kh, int nx, int ny, float centre, float bv);

/* The planner's error limit in levels for 8-bit (u16 0) or 16-bit samples:
 * jobs predicted above it stay direct unless the FFT is forced. */
double ic__fft_error_limit(int u16);

/* The largest transform side the geometry takes. */
#define IC_FFT_MAX_N 2048

#endif /* IC_CORE_FFT_MODEL_H */
