/*
 * cufft_lazy.h - cuFFT opened on first use (internal; cufft_lazy.cu).
 *
 * libcufft is ~280 MB of shared library: linked normally, the dynamic loader
 * maps and relocates it at every start of every process, also of one that
 * filters on the CPU or never picks the FFT method. Only the fast path's FFT
 * method (fft.cu) needs it, so it is dlopen'ed the first time an FFT
 * plan is prepared, and its functions are called through this table.
 */
#ifndef IC_CUDA_CUFFT_LAZY_H
#define IC_CUDA_CUFFT_LAZY_H

#include <cufft.h>
#include <cufftXt.h>
#include <stddef.h>

typedef struct ic_cufft_fns {
    cufftResult (*create)(cufftHandle *plan);
    cufftResult (*destroy)(cufftHandle plan);
    cufftResult (*set_auto_allocation)(cufftHandle plan, int auto_allocate);
    cufftResult (*make_plan_many)(cufftHandle plan, int rank, int *n, int *inembed, int istride,
                                  int idist, int *onembed, int ostride, int odist, cufftType type,
                                  int batch, size_t *work_size);
    cufftResult (*set_work_area)(cufftHandle plan, void *work_area);
    cufftResult (*plan_2d)(cufftHandle *plan, int nx, int ny, cufftType type);
    cufftResult (*exec_r2c)(cufftHandle plan, cufftReal *in, cufftComplex *out);
    cufftResult (*exec_c2r)(cufftHandle plan, cufftComplex *in, cufftReal *out);
    cufftResult (*set_stream)(cufftHandle plan, cudaStream_t stream);
    /* Optional (NULL when this cuFFT lacks it, or has the pre-13 signature):
     * an LTO callback linked into the plan's kernels (fft.cu fuses its own
     * kernels into the transforms with it, else runs them apart). */
    cufftResult (*xt_set_jit_callback)(cufftHandle plan, const char *symbol, const void *fatbin,
                                       size_t fatbin_size, cufftXtCallbackType type,
                                       void **caller_info);
} ic_cufft_fns;

/* The cuFFT functions, loading the library on the first call (thread-safe;
 * later calls return the same table at once). Tries libcufft.so.<major of the
 * cufft.h built against> through the usual search (LD_LIBRARY_PATH, the
 * loader's cache), then in the CUDA toolkit's library directory of the
 * build. NULL when it cannot be loaded: err then says which file and why
 * (the answer is remembered; every later call fails the same way). */
const ic_cufft_fns *ic_cufft_load(char *err, size_t errlen);

/* The table after a successful ic_cufft_load, else NULL. */
const ic_cufft_fns *ic_cufft_loaded(void);

#endif /* IC_CUDA_CUFFT_LAZY_H */
