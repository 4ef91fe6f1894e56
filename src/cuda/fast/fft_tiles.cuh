/*
 * fft_tiles.cuh - the overlap-save tile geometry of the FFT method (fft.cu)
 * and what its cuFFT callback reads (fft_cb.lto.cu, compiled to LTO-IR and
 * linked into cuFFT's R2C kernel at plan time).
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

/* Position of spatial tile s (tiles s * channels .. s * channels + channels - 1). */
__device__ __forceinline__ void ic_fft_tile_pos(const ic_fft_geo &g, int s, int &tx, int &ty)
{
    ty = s / g.tiles_x;
    tx = s - ty * g.tiles_x;
}

/* What the multiply callback reads (device memory, one per ic_fast_fft,
 * uploaded when the spectrum changes). */
struct ic_fft_cb_info {
    const cufftComplex *gs; /* conj(FFT(weights)) / n^2 */
    unsigned nc;            /* n * (n / 2 + 1): complex elements per tile (a batch's
                             * spectrum has fewer than 2^32 elements: fft.cu) */
};

/* The callback's name in the LTO-IR fatbin (fft_cb.lto.cu). */
#define IC_FFT_CB_MUL "ic_fft_cb_mul"

#endif /* IC_CUDA_FAST_FFT_TILES_CUH */
