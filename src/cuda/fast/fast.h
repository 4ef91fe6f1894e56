/*
 * fast.h - the `cuda` fast path (internal): planner and methods. The
 * benchmark and the tests reach it through the public header's advanced tier
 * (ic_plan_get, ic_convolve_async, ic_tuning).
 *
 * The fast path is one backend (ic_backend_cuda, plan.cu) with six methods,
 * chosen per job by a cost model (plan.cu):
 *   direct  direct.cu  shared-memory float tile, 4x8 outputs per thread, the
 *                      input window reused from registers;
 *   sep     sep.cu     K = sum_r col_r row_r^T (ic_kernel_factor), r row
 *                      passes + r column passes fused in shared memory;
 *   fft     fft.cu     overlap-save tiles through cuFFT (float32);
 *   rows    rows.cu    square 3..9 kernels: 16 samples of several rows a
 *                      thread from 16-byte global loads, no shared memory;
 *   tensor  tensor.cu  the direct sum as fp16 matrix products on the tensor
 *                      cores (weights split in two halves, fp32 sums);
 *                      rank-1 kernels as two such passes (tensor_sep.cu).
 *   blur    blur.cu    gaussian and box kernels of any size (shape only past
 *                      IC_MAX_KERNEL): float64 prefix sums of the
 *                      border-extended lines, constant time per sample;
 * plus `global`, the shared one-thread-per-sample kernel of cuda_common.cuh, for
 * jobs no method covers (kernels wider than the specialisations). batch.cu
 * runs many images a launch with the rows kernels and the global one.
 *
 * The method enum has the order of the public ic_method (plan.cu converts by
 * value).
 */
#ifndef IC_CUDA_FAST_H
#define IC_CUDA_FAST_H

#include <stddef.h>
#include <stdint.h>

#include "dispatch/backend.h"
#include "cuda/cuda_host.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum ic_fast_method {
    IC_FAST_AUTO = 0, /* the planner decides */
    IC_FAST_DIRECT,
    IC_FAST_SEP,
    IC_FAST_FFT,
    IC_FAST_GLOBAL,
    IC_FAST_ROWS,   /* small square kernels: register strips, 16-byte loads (rows.cu) */
    IC_FAST_TENSOR, /* large full-rank kernels on the tensor cores (tensor.cu) */
    IC_FAST_BLUR    /* gaussian and box kernels of any size, prefix sums (blur.cu) */
} ic_fast_method;

/* Widest kernel of the direct method (specialised per width), its tallest,
 * the largest separable size (square, specialised per size) and rank. */
#define IC_FAST_DIRECT_MAX_KW 31
#define IC_FAST_DIRECT_MAX_KH 63
#define IC_FAST_SEP_MAX_K 31
#define IC_FAST_SEP_MAX_RANK 8
/* Widest kernel of the tensor method (its tallest: IC_FAST_DIRECT_MAX_KH). */
#define IC_FAST_TENSOR_MAX_KW 31

/* A plan: what run() will do for a job, with the cost model's prediction. */
typedef struct ic_fast_plan {
    ic_fast_method method;
    int rank;            /* sep, rows, tensor: row/column pairs (tensor: 1 or 0); 0 otherwise */
    int cb;              /* direct/sep: channels per block (1 or all) */
    int nrg;             /* direct/sep: row groups per block (tile height 8*nrg) */
    int rows;            /* rows: output rows per thread (1, 2, 4) */
    int threads, blocks; /* launch shape (fft: of the tile-building kernel) */
    size_t smem;         /* dynamic shared memory per block */
    int fft_n, fft_valid, fft_tiles,
        fft_batch;  /* fft: tile size N, valid N-K+1, tiles, per batch */
    int fft_fused;  /* fft: the multiply runs as cuFFT's callback (planned; prepare
                     * says whether the link was made) */
    double fmas;    /* multiply-adds of this plan over the whole job */
    double bytes;   /* device-memory bytes the model counts for it */
    double pred_ms; /* predicted kernel time */
    double pred_direct_ms, pred_sep_ms, pred_fft_ms; /* every candidate (<0: not possible) */
    double pred_rows_ms;                             /* ... the rows method's (explain) */
    double pred_tensor_ms;                           /* ... the tensor method's */
    double factor_err;                               /* sep: max |K - sum col row^T| */
} ic_fast_plan;

/* Per-context state of the fast path (plan.cu). */
typedef struct ic_fast_state ic_fast_state;

/* Device ceilings the cost model uses (measured once per device, see
 * plan.cu: a device-to-device copy and a register FMA loop). */
typedef struct ic_fast_device {
    int sms;
    int cc_major; /* compute capability (the tensor method needs 8 or more) */
    size_t smem_optin, smem_per_sm;
    double copy_bps;  /* bytes read + written per second */
    double fma_per_s; /* fp32 multiply-adds per second */
    int source;       /* where copy_bps/fma_per_s come from: IC_FAST_CEIL_* */
} ic_fast_device;

/* ic_fast_device.source */
enum {
    IC_FAST_CEIL_DEFAULT = 0, /* built-in figures (IC_CALIBRATE_BUILTIN, or a failed probe) */
    IC_FAST_CEIL_MEASURED,    /* measured by this process (and written to the cache) */
    IC_FAST_CEIL_CACHED       /* read from the user's cache (core/calib_cache.h) */
};

/* The backend (plan.cu). */
extern const ic_backend ic_backend_cuda;

/* Method name ("direct", "sep", "fft", "global", "rows", "tensor", "auto"). */
const char *ic_fast_method_name(ic_fast_method m);

/* ---- the methods (one file each), called by plan.cu ------------------ */

/* Launch geometry shared by direct and sep (tile.cuh). */
#define IC_FAST_TW 128 /* output tile width in pixels */
#define IC_FAST_R 8    /* output rows per thread */

/* Shared memory of a direct / sep block, 0 when the method cannot take kw x kh
 * (sep: k x k of rank `rank`; rank 1 needs no buffer besides the input tile). */
size_t ic_fast_direct_smem(int kw, int kh, int cb, int nrg);
size_t ic_fast_sep_smem(int k, int cb, int nrg, int rank);

/* Launches direct correlation of a (weights w, kw*kh floats, host memory). */
ic_status ic_fast_direct_launch(const ic_cuda_args *a, const float *w, const ic_fast_plan *p,
                                char *err, size_t errlen);

/* Launches the fused separable method: rank pairs of row (kw floats each) and
 * column (kh floats each) vectors, host memory. */
ic_status ic_fast_sep_launch(const ic_cuda_args *a, const float *row, const float *col, int rank,
                             const ic_fast_plan *p, char *err, size_t errlen);

/* Shared memory of a tensor-method block (tile of direct/sep: cb channels,
 * 8*nrg rows, nrg even), 0 when the method cannot take kw x kh. */
size_t ic_fast_tensor_smem(int kw, int kh, int cb, int nrg);
/* K steps of 16 input columns the tensor method runs per kernel row and
 * 16 x 16 output tile (each step: 4 mma per half of the weights). */
int ic_fast_tensor_ksteps(int kw);
/* Launches the tensor method (weights w, kw*kh floats, host memory; a->w
 * holds their device copy). 8-bit samples, no premultiplied alpha. */
ic_status ic_fast_tensor_launch(const ic_cuda_args *a, const float *w, const ic_fast_plan *p,
                                char *err, size_t errlen);
/* The same for a rank-1 k x k kernel col row^T (k floats each, host memory):
 * a row and a column pass in one kernel (tensor_sep.cu); shared memory of
 * its block, 0 when it cannot take k. */
size_t ic_fast_tensor_sep_smem(int k, int cb, int nrg);
/* Threads of its big blocks, one an SM: 3 channels x 8 row groups, and 4 x 4
 * or 2 x 8. */
#define IC_FAST_TSEP_BIG_THREADS 768
#define IC_FAST_TSEP_BIG2_THREADS 512
/* fp16 multiply-adds per output of that method. */
double ic_fast_tensor_sep_macs(int k);
ic_status ic_fast_tensor_sep_launch(const ic_cuda_args *a, const float *row, const float *col,
                                    const ic_fast_plan *p, char *err, size_t errlen);

/* 1 when the rows method takes a kw x kh kernel on this image shape. */
int ic_fast_rows_eligible(int kw, int kh, int channels, int soa);
/* 1 when it also runs premultiplied-alpha jobs of this shape itself (RGBA
 * and grey + alpha AoS); other shapes with premultiplication take the
 * generic kernel. */
int ic_fast_rows_premultiplies(int channels, int soa);

/* Output rows per thread (1, 2, 4, and more: ic_fast_rows_run) of the
 * rows method for an image and a k x k kernel, applied as separable passes
 * or as the full sum, on `sms` SMs with a measured copy bandwidth of
 * copy_bps bytes a second (the rule and its measurements are in rows.cu).
 * ic_tuning.rows_shape overrides it (plan.cu; benchmark calibration). */
#define IC_FAST_ROWS_FILL 2048
int ic_fast_rows_shape(int width, int height, int channels, int soa, int k, int sms,
                       double copy_bps, int separable);
/* 1 when the rows method takes 8 rows per thread (one input row at a time,
 * rows_roll) for a k x k kernel of this rank: a separable 3x3. */
int ic_fast_rows_rolls(int k, int rank);
/* 1 when the rows method runs a k x k kernel of this rank at `rows` rows a
 * thread (as ic_fast_rows_run gives them) one input row at a time, 8 samples
 * a thread (rows_ring.cuh): a separable 5x5..9x9 at more than 4 rows. */
int ic_fast_rows_rings(int k, int rank, int rows);
/* The rows per thread the rows method runs for `rows` asked: 1, 2 and 4 as
 * asked; 8 for a separable 3x3 (rows_roll); any number above 4 as asked for
 * a separable 5x5..9x9 (one input row at a time, 8 samples a thread:
 * rows_ring.cuh; the planner gives it up to the image's height); else 4. */
int ic_fast_rows_run(int k, int rank, int rows);

/* Launches the rows method: rank 0 applies the full weights w (kw*kh floats,
 * host memory), rank 1..IC_FAST_ROWS_MAX_RANK the separable vectors row
 * (rank*kw) and col (rank*kh); rows = output rows per thread (as
 * ic_fast_rows_run takes it).
 * Rows that are not 16-byte aligned take the generic kernel. a->w must hold
 * the device copy of the full weights. */
#define IC_FAST_ROWS_MAX_RANK 2
ic_status ic_fast_rows_launch(const ic_cuda_args *a, const float *w, const float *row,
                              const float *col, int rank, int rows, char *err, size_t errlen);

/* FFT method: resources live in an opaque object owned by the state. */
typedef struct ic_fast_fft ic_fast_fft;
void ic_fast_fft_free(ic_fast_fft *f);
/* 0 when f's cuFFT failed to link the multiply callback (fft.cu), else 1 (also for NULL). */
int ic_fast_fft_fusable(const ic_fast_fft *f);
/* Predicted kernel ms of the FFT jobs f has prepared (0 for NULL): fft_fuse auto. */
double ic_fast_fft_work_ms(const ic_fast_fft *f);
/* Tile size for a kernel (power of two >= 2*max(kw,kh), at least 256). */
int ic_fast_fft_size(int kw, int kh);
/* Makes plans, buffers and the kernel spectrum ready for this job shape and
 * these weights (cached: a repeat call with the same shape and weights does
 * nothing). budget: device bytes the tile buffers may take. */
ic_status ic_fast_fft_prepare(ic_fast_fft **f, const ic_cuda_args *a, const float *w,
                              ic_fast_plan *p, size_t budget, char *err, size_t errlen);
ic_status ic_fast_fft_launch(ic_fast_fft *f, const ic_cuda_args *a, char *err, size_t errlen);

/* The blur method (blur.cu). Auto takes it for a blur whose support is
 * wider or taller than this: up to IC_FAST_SEP_MAX_K the separable, rows
 * and tensor FIR passes run a gaussian in a few multiply-adds a tap from
 * registers, past it only fft and global remain, each costlier than the
 * blur's few float64 terms a sample (docs/design/blur.md#the-cuda-method). */
#define IC_FAST_BLUR_MIN_SIDE (IC_FAST_SEP_MAX_K + 2)
/* Device scratch of the method (two float planes sets), owned by the state. */
typedef struct ic_fast_blur ic_fast_blur;
void ic_fast_blur_free(ic_fast_blur *b);
/* 1 when the method can run this kernel (wk->blur set) at kw x kh: a box
 * always, a gaussian whose support is within 2*ceil(4 sigma)+1. */
int ic_fast_blur_eligible(const ic_kernel *wk, int kw, int kh);
/* The cosine terms of each pass (0 for a box); deep: 16-bit or float32
 * samples (a tighter fit). 0 when not eligible. */
int ic_fast_blur_terms(const ic_kernel *wk, int kw, int kh, int deep, int *tx, int *ty);
/* Queues the blur of a (a->w unused; a->kw, a->kh the support) on
 * a->stream: row pass, column pass, store. *b is made on first use and
 * grown or shrunk to the job. */
ic_status ic_fast_blur_launch(ic_fast_blur **b, const ic_cuda_args *a, const ic_kernel *wk,
                              char *err, size_t errlen);

/* ---- batched launches (batch.cu) ------------------------------------------- */

/* One image of a batch: device pointers and pitches, size, and the method
 * its own plan gives it: IC_FAST_ROWS (16-byte aligned rows, u8; rank = the
 * plan's rank) or IC_FAST_GLOBAL (the one-thread-per-sample kernel, which
 * also computes every sample of the direct method bit for bit). */
typedef struct ic_fast_batch_item {
    const uint8_t *src;
    size_t src_pitch;
    uint8_t *dst;
    size_t dst_pitch;
    int width, height;
    ic_fast_method method;
    int rank;
} ic_fast_batch_item;

/* The descriptor tables of the batched launches: a batch of up to 64 images
 * passes its table in the kernels' parameters; a larger one uploads it into
 * a few pinned host and device buffers used in turn, each reused once the
 * launches that read it are done. Owned by the fast path's state. */
typedef struct ic_fast_batch ic_fast_batch;
void ic_fast_batch_free(ic_fast_batch *b);

/* Queues one launch per method (rows full sum, rows separable, global) for
 * the n items on base->stream: base holds what the images share (device
 * weights w, kernel size, channels, layout, type, border, bias, premultiply,
 * stream); w, row and col are the host weights (full; rank pairs of the
 * separable vectors when an item has rank > 0); sms sizes the rows-per-thread
 * choice. Items the rows launches cannot take (grid too large) go to the
 * global launch, as the one-image launch sends them. *launched = 0 (and
 * IC_OK) when the batch would need more than 2^31-1 blocks in one launch:
 * nothing is queued. *b is created on first use. */
ic_status ic_fast_batch_launch(ic_fast_batch **b, const ic_cuda_args *base, const float *w,
                               const float *row, const float *col, int sms,
                               const ic_fast_batch_item *items, int n, int *launched, char *err,
                               size_t errlen);

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_FAST_H */
