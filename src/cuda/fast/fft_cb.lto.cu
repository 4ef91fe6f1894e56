/*
 * fft_cb.lto.cu - the FFT method's spectrum multiply as a cuFFT store
 * callback (issue 17: "FFT with fused pre/post-processing"). Not part of the
 * library's objects: CMakeLists.txt compiles this file to LTO-IR (nvcc -dlto
 * -fatbin) and embeds the fatbin; fft.cu hands it to cufftXtSetJITCallback,
 * and cuFFT links it into the R2C transform's last kernel when the plan is
 * made (31-75 ms a plan on the H200, fft_cb_probe at 624e854).
 *
 * Unfused, fft_mul reads and writes the whole spectrum once more (151 us of
 * a 1268 us batch, 8K RGB 31x31 on the H100, ncu-times at 7eb13a6); as the
 * store of the R2C transform it costs that kernel about 60 us more (211
 * against 150, H200, 624e854). The arithmetic is fft_mul's.
 *
 * Measured and left out (H200, 624e854): the tile build as the R2C's load
 * callback (its first kernel 1161 us against 170 + 127 for fft_build and the
 * unfused kernel) and the store into the image as the C2R's store callback
 * (739 us against 128 + 260): a callback sees one element at a time, so each
 * does the tile's geometry and border mapping per sample and reads the image
 * one byte at a time.
 *
 * The callback has C++ linkage: cuFFT declares the name it is given with the
 * callback type's C++ signature and links against that (extern "C" names are
 * not found: every plan failed to link, CUFFT_INTERNAL_ERROR, fft_cb_probe on
 * the H200 at 218dbf3).
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
