/*
 * fft_cb.lto.cu - the FFT method's own kernels as cuFFT callbacks (issue 17:
 * "FFT with fused pre/post-processing"). Not part of the library's objects:
 * CMakeLists.txt compiles this file to LTO-IR (nvcc -dlto -fatbin) and embeds
 * the fatbin; fft.cu hands it to cufftXtSetJITCallback, and cuFFT links the
 * callbacks into its transform kernels when the plan is made.
 *
 * Unfused, one batch of tiles costs five passes over memory besides cuFFT's
 * four: fft_build writes the float tiles, fft_mul reads and writes the
 * spectrum, fft_extract reads the float tiles back (H100, 8K RGB 31x31: 176 +
 * 151 + 251 us of 1268 per batch; ncu-times in gpu-check-20261125T222019Z.log).
 * Fused, the R2C transform reads the image's samples where it would read the
 * tile (ic_fft_cb_load), multiplies by the weights' spectrum where it would
 * store (ic_fft_cb_mul), and the C2R transform rounds and stores the valid
 * corner straight into the image (ic_fft_cb_store). The arithmetic is
 * fft_build's, fft_mul's and fft_extract's.
 *
 * Offsets are element indices into the batch's arrays: reals [tile][n][n],
 * complex [tile][n][n/2+1]. The callbacks have C++ linkage: cuFFT declares
 * the name it is given with the callback type's signature and links against
 * that (extern "C" names are not found: every plan fails to link,
 * CUFFT_INTERNAL_ERROR, fft_cb_probe on the H200 at 218dbf3).
 */
#include "cuda/fast/fft_tiles.cuh"

/* t(u, v) = in(X0 + u - cx, Y0 + v - cy) - centre, border-mapped (fft_build). */
__device__ cufftReal ic_fft_cb_load(void *data_in, unsigned long long offset, void *info,
                                    void *shared)
{
    (void)data_in;
    (void)shared;
    const ic_fft_cb_info &f = *static_cast<const ic_fft_cb_info *>(info);
    const int lg = f.lg;
    const int bt = (int)(offset >> (2 * lg));
    const int r = (int)(offset & ((1ull << (2 * lg)) - 1));
    const int tile = f.g.t0 + bt;
    if (tile >= f.tiles) /* a short last batch: stale tile */
        return 0.0f;
    int c, tx, ty;
    ic_fft_tile_pos(f.g, f.a.channels, tile, c, tx, ty);
    const int x = tx * f.g.v - (f.a.kw - 1) / 2 + (r & (f.g.n - 1));
    const int y = ty * f.g.v - (f.a.kh - 1) / 2 + (r >> lg);
    const ic_cu_src in(f.a, c);
    const bool inside = x >= 0 && y >= 0 && x < f.a.width && y < f.a.height;
    return (inside ? in.at<true>(x, y) : in.fetch<true>(x, y)) - f.centre;
}

/* spec *= conj(FFT(g)) / n^2 (fft_mul). */
__device__ void ic_fft_cb_mul(void *data_out, unsigned long long offset, cufftComplex s, void *info,
                              void *shared)
{
    (void)shared;
    const ic_fft_cb_info &f = *static_cast<const ic_fft_cb_info *>(info);
    const cufftComplex k = f.gs[(unsigned)offset % f.nc];
    static_cast<cufftComplex *>(data_out)[offset] =
        make_cuComplex(s.x * k.x - s.y * k.y, s.x * k.y + s.y * k.x);
}

/* out(X0 + x, Y0 + y) = round(t + centre * sum(w) + bias) on the valid corner
 * (fft_extract); the rest of the tile is dropped. */
__device__ void ic_fft_cb_store(void *data_out, unsigned long long offset, cufftReal t, void *info,
                                void *shared)
{
    (void)data_out;
    (void)shared;
    const ic_fft_cb_info &f = *static_cast<const ic_fft_cb_info *>(info);
    const int lg = f.lg;
    const int bt = (int)(offset >> (2 * lg));
    const int r = (int)(offset & ((1ull << (2 * lg)) - 1));
    const int u = r & (f.g.n - 1), v = r >> lg;
    const int tile = f.g.t0 + bt;
    if (u >= f.g.v || v >= f.g.v || tile >= f.tiles)
        return;
    int c, tx, ty;
    ic_fft_tile_pos(f.g, f.a.channels, tile, c, tx, ty);
    const int x = tx * f.g.v + u, y = ty * f.g.v + v;
    if (x < f.a.width && y < f.a.height)
        ic_cu_store(f.a, c, x, y, t + f.add);
}
