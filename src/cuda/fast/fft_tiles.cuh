/*
 * fft_tiles.cuh - the overlap-save tile geometry of the FFT method, shared by
 * its own kernels (fft.cu) and by the cuFFT callbacks that fuse them into the
 * transforms (fft_cb.lto.cu, compiled to LTO-IR and linked into cuFFT's
 * kernels at plan time).
 *
 * Tile order: channel fastest, tile = (ty * tiles_x + tx) * channels + c, so
 * the channels of one spatial tile are neighbours in a batch: their stores of
 * the same pixels (AoS: adjacent bytes) happen close together in time.
 */
#ifndef IC_CUDA_FAST_FFT_TILES_CUH
#define IC_CUDA_FAST_FFT_TILES_CUH

#include <cufft.h>

#include "cuda/cuda_common.cuh"

/* Geometry of one batch: tile index within the whole job -> channel and position. */
struct ic_fft_geo {
    int n, v, tiles_x, tiles_y, t0, count;
};

__device__ __forceinline__ void ic_fft_tile_pos(const ic_fft_geo &g, int channels, int tile, int &c,
                                                int &tx, int &ty)
{
    const int s = tile / channels;
    c = tile - s * channels;
    ty = s / g.tiles_x;
    tx = s - ty * g.tiles_x;
}

/* What the fused transforms' callbacks read (device memory, one per
 * ic_fast_fft; its t0 is rewritten before every batch, stream-ordered). */
struct ic_fft_cb_info {
    ic_cuda_args a;         /* source, destination; bias folded into add */
    ic_fft_geo g;           /* n is a power of two: 1 << lg */
    int lg;                 /* log2(n) */
    int tiles;              /* of the whole launch: later tiles of a short batch are stale */
    unsigned nc;            /* n * (n / 2 + 1): complex elements per tile */
    const cufftComplex *gs; /* conj(FFT(weights)) / n^2 */
    float centre;           /* subtracted from every sample before the transform */
    float add;              /* centre * sum(w) + bias, added back before rounding */
};

/* Names of the callbacks in the LTO-IR fatbin (fft_cb.lto.cu). */
#define IC_FFT_CB_LOAD "ic_fft_cb_load"
#define IC_FFT_CB_MUL "ic_fft_cb_mul"
#define IC_FFT_CB_STORE "ic_fft_cb_store"

#endif /* IC_CUDA_FAST_FFT_TILES_CUH */
