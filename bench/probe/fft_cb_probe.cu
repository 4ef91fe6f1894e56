/*
 * fft_cb_probe.cu - can this cuFFT link the FFT method's LTO callbacks
 * (src/cuda/fast/fft_cb.lto.cu), and what does the link cost? A diagnostic
 * for scripts/gpu-check.sh fftjob, not a test: it prints each cuFFT call's
 * result and time, for the plan fft.cu makes (2D R2C, n = 512, 8 tiles,
 * with the spectrum multiply as its store callback), a second one, and a 1D
 * variant that tells whether a failure is the 2D plan's.
 * Build (gpu-check.sh does): nvcc -std=c++17 -I<build>/gen -o fft_cb_probe
 *   bench/probe/fft_cb_probe.cu -lcufft
 */
#include <cufft.h>
#include <cufftXt.h>
#include <stdio.h>
#include <time.h>

#include "fft_cb_fatbin.h" /* ic_fft_cb_fatbin (CMake's gen/ folder) */

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

#define STEP(what, call)                                                                           \
    do {                                                                                           \
        const double t0_ = now_ms();                                                               \
        const int r_ = (int)(call);                                                                \
        printf("  %-44s -> %d (%.1f ms)\n", what, r_, now_ms() - t0_);                             \
        ok = ok && r_ == 0;                                                                        \
    } while (0)

/* One plan: type t, with callback `sym` of type cb (sym NULL: none), and a
 * second one (sym2) when given. */
static int try_plan(const char *label, int rank, cufftType t, const char *sym,
                    cufftXtCallbackType cb, const char *sym2, cufftXtCallbackType cb2, void *info)
{
    printf("%s:\n", label);
    int ok = 1;
    cufftHandle h;
    STEP("cufftCreate", cufftCreate(&h));
    void *ci[1] = {info};
    if (sym)
        STEP(sym, cufftXtSetJITCallback(h, sym, ic_fft_cb_fatbin, sizeof ic_fft_cb_fatbin, cb, ci));
    if (sym2)
        STEP(sym2,
             cufftXtSetJITCallback(h, sym2, ic_fft_cb_fatbin, sizeof ic_fft_cb_fatbin, cb2, ci));
    int dims[2] = {512, 512};
    size_t ws = 0;
    STEP("cufftMakePlanMany", cufftMakePlanMany(h, rank, dims, NULL, 1, 0, NULL, 1, 0, t, 8, &ws));
    cufftDestroy(h);
    printf("  => %s\n", ok ? "ok" : "FAILED");
    return ok;
}

int main(void)
{
    int v = 0;
    cufftGetVersion(&v);
    printf("cuFFT %d (header %d), fatbin %zu bytes\n", v, CUFFT_VERSION, sizeof ic_fft_cb_fatbin);
    void *info = NULL;
    if (cudaMalloc(&info, 4096) != cudaSuccess) {
        printf("cudaMalloc failed\n");
        return 1;
    }
    try_plan("2D R2C, no callback", 2, CUFFT_R2C, NULL, CUFFT_CB_ST_COMPLEX, NULL,
             CUFFT_CB_ST_COMPLEX, info);
    try_plan("2D R2C, the multiply as its store (fft.cu's)", 2, CUFFT_R2C, "ic_fft_cb_mul",
             CUFFT_CB_ST_COMPLEX, NULL, CUFFT_CB_ST_COMPLEX, info);
    try_plan("the same again (a second link in the process)", 2, CUFFT_R2C, "ic_fft_cb_mul",
             CUFFT_CB_ST_COMPLEX, NULL, CUFFT_CB_ST_COMPLEX, info);
    try_plan("1D R2C, the multiply as its store", 1, CUFFT_R2C, "ic_fft_cb_mul",
             CUFFT_CB_ST_COMPLEX, NULL, CUFFT_CB_ST_COMPLEX, info);
    cudaFree(info);
    return 0;
}
