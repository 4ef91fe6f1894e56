/*
 * fft_cb.lto.cu - the FFT method's spectrum multiply as a cuFFT store
 * callback. Not part of the library's objects: CMakeLists.txt compiles this
 * file to LTO-IR (nvcc -dlto -fatbin) and embeds the fatbin; fft.cu hands it
 * to cufftXtSetJITCallback, and cuFFT links it into the R2C transform's last
 * kernel when the plan is made (tens of ms a plan).
 *
 * Unfused, fft_mul reads and writes the whole spectrum once more; as the
 * store of the R2C transform it costs that kernel much less than that pass
 * (docs/design/tiles.md). The arithmetic is fft_mul's.
 *
 * Measured and left out: the tile build as the R2C's load callback and the
 * store into the image as the C2R's store callback, both slower than the
 * kernels they replace: a callback sees one element at a time, so each does
 * the tile's geometry and border mapping per sample and reads the image one
 * byte at a time.
 *
 * The callback has C++ linkage: cuFFT declares the name it is given with the
 * callback type's C++ signature and links against that (extern "C" names are
 * not found: every plan fails to link with CUFFT_INTERNAL_ERROR).
 */
#include "cuda/fast/fft_tiles.cuh"

/* spec *= conj(FFT(g)) / n^2 (fft_mul); offset: element of the batch's
 * [tile][n][n/2+1] spectrum. */
__device__ void ic_fft_cb_mul(void *data_out, unsigned long long offset, cufftComplex s, void *info,
                              void *shared)
{
    (void)shared;
    const ic_fft_cb_info &f = *static_cast<const ic_fft_cb_info *>(info);
    const cufftComplex k = f.gs[(unsigned)offset % f.nc];
    static_cast<cufftComplex *>(data_out)[offset] =
        make_cuComplex(s.x * k.x - s.y * k.y, s.x * k.y + s.y * k.x);
}
