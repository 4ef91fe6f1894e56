/*
 * bench_linalg.cu - the course exercises' benchmark (bench_linalg.h): the 1D convolution
 * (seed 001's stencil generalised to seed 002's shared-memory tiles with halo
 * cells) measured against the device-to-device copy ceiling, and seed 002's
 * matrix products (naive, 16x16 tiled, register-blocked) against cuBLAS SGEMM
 * on the same inputs, both measured in the same run.
 *
 * Timing follows bench_gpu.h: warm-up, then a spin kernel holds the GPU while
 * the host queues the timed runs, each between two CUDA events, so launch gaps
 * stay out; the median is reported. Inputs are random (a hash of the index and
 * a fixed seed, generated on the device), never zero; every result is checked
 * (conv1d: sampled outputs against a float64 host sum; products: every entry
 * against cuBLAS).
 */
#include <cuda_runtime.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef IC_HAVE_CUBLAS
#include <cublas_v2.h>
#endif

#include "bench_linalg.h"
#define IC_ADVANCED_API /* ic_conv1d_device, ic_matmul_device */
#include "imgconv_course.h"

#define LB_MAX_REPS 32
#define LB_SEED 0x1d7c0de5ULL
#define LB_CHECK_LEN 4096        /* outputs checked per conv1d chunk (3 chunks) */
#define LB_MAX_KLEN 127          /* longest kernel this benchmark runs */
#define LB_CONV_TOL 1e-4         /* conv1d f32: |out - ref| / (|bias| + sum |w x|) */
#define LB_MM_TOL 1e-3           /* matmul: max |C - C_cublas| / max |C_cublas| */
#define LB_SPIN_CYCLES 4000000LL /* ~2 ms: room to queue the timed runs */

/* ---- failures, output ---------------------------------------------------------------- */

static int lb_fail(const char *what, const char *why, int line)
{
    fprintf(stderr, "bench_linalg: %s failed: %s (bench_linalg.cu:%d)\n", what, why, line);
    (void)cudaGetLastError();
    return -1;
}

#define LB_CHECK(call)                                                                             \
    do {                                                                                           \
        const cudaError_t lb_e_ = (call);                                                          \
        if (lb_e_ != cudaSuccess)                                                                  \
            return lb_fail(#call, cudaGetErrorString(lb_e_), __LINE__);                            \
    } while (0)

#ifdef IC_HAVE_CUBLAS
#define LB_BLAS(call)                                                                              \
    do {                                                                                           \
        const cublasStatus_t lb_s_ = (call);                                                       \
        if (lb_s_ != CUBLAS_STATUS_SUCCESS)                                                        \
            return lb_fail(#call, cublasGetStatusString(lb_s_), __LINE__);                         \
    } while (0)
#endif

static void __attribute__((format(printf, 2, 3))) md_out(FILE *md, const char *fmt, ...)
{
    if (!md)
        return;
    va_list ap;
    va_start(ap, fmt);
    vfprintf(md, fmt, ap);
    va_end(ap);
}

/* One JSON item: js_begin, then js_num / js_int / js_str fields, then js_end. */
static void js_begin(FILE *js, const char *table, const char *kase)
{
    if (js)
        fprintf(js, ",\n    {\"table\": \"%s\", \"case\": \"%s\"", table, kase);
}

static void js_num(FILE *js, const char *key, double v)
{
    if (js)
        fprintf(js, ", \"%s\": %.6g", key, isfinite(v) ? v : -1.0); /* JSON has no inf/NaN */
}

static void js_int(FILE *js, const char *key, long long v)
{
    if (js)
        fprintf(js, ", \"%s\": %lld", key, v);
}

static void js_str(FILE *js, const char *key, const char *s)
{
    if (!js)
        return;
    fprintf(js, ", \"%s\": \"", key);
    for (; *s; s++)
        if (*s == '"' || *s == '\\')
            fprintf(js, "\\%c", *s);
        else if ((unsigned char)*s >= 0x20)
            fputc(*s, js);
    fputc('"', js);
}

static void js_end(FILE *js)
{
    if (js)
        fputc('}', js);
}

/* ---- device memory, random inputs, timing -------------------------------------------- */

/* A device allocation freed on every path. */
struct dev_mem {
    void *p = nullptr;
    dev_mem() = default;
    dev_mem(const dev_mem &) = delete;
    dev_mem &operator=(const dev_mem &) = delete;
    ~dev_mem()
    {
        (void)cudaFree(p);
    }
    int alloc(size_t bytes)
    {
        LB_CHECK(cudaMalloc(&p, bytes));
        return 0;
    }
    float *f() const
    {
        return (float *)p;
    }
};

__device__ __forceinline__ unsigned long long lb_hash(unsigned long long x)
{
    x += 0x9e3779b97f4a7c15ULL; /* splitmix64's finaliser */
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/* p[i] uniform in (-1, 1) and never 0: (2k + 1 - 2^23) / 2^23 for k < 2^23,
 * an odd numerator, exact in float32. */
__global__ void lb_fill_f32(float *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const int k = (int)(lb_hash(seed * 0x100000001b3ULL + i) >> 41);
        p[i] = (float)(2 * k + 1 - (1 << 23)) * (1.0f / 8388608.0f);
    }
}

__global__ void lb_fill_u8(uint8_t *p, size_t n, unsigned long long seed)
{
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x)
        p[i] = (uint8_t)(lb_hash(seed * 0x100000001b3ULL + i) >> 56);
}

/* acc[0] = max |c - r| (inf where c is not finite), acc[1] = max |r|, as
 * float bits: non-negative floats order like their bit patterns. */
__global__ void lb_maxdiff(const float *c, const float *r, size_t n, unsigned *acc)
{
    float d = 0.0f, m = 0.0f;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        const float e = fabsf(c[i] - r[i]);
        d = fmaxf(d, e <= 3.4e38f ? e : INFINITY);
        m = fmaxf(m, fabsf(r[i]));
    }
    for (int o = 16; o > 0; o >>= 1) {
        d = fmaxf(d, __shfl_xor_sync(0xffffffffu, d, o));
        m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, o));
    }
    if ((threadIdx.x & 31) == 0) {
        atomicMax(&acc[0], __float_as_uint(d));
        atomicMax(&acc[1], __float_as_uint(m));
    }
}

__global__ void lb_spin(long long cycles, int *flag)
{
    const long long t0 = clock64();
    while (clock64() - t0 < cycles) {
    }
    if (threadIdx.x == 0 && blockIdx.x == 0)
        *flag = 1;
}

static int fill_f32(float *p, size_t n, unsigned long long seed)
{
    lb_fill_f32<<<1024, 256>>>(p, n, seed);
    LB_CHECK(cudaGetLastError());
    return 0;
}

/* The events and spin flag of the timing loop. */
struct lb_timer {
    cudaEvent_t ev[2 * LB_MAX_REPS];
    int nev = 0;
    int *flag = nullptr;
    lb_timer() = default;
    lb_timer(const lb_timer &) = delete;
    lb_timer &operator=(const lb_timer &) = delete;
    ~lb_timer()
    {
        for (int i = 0; i < nev; i++)
            (void)cudaEventDestroy(ev[i]);
        (void)cudaFree(flag);
    }
    int open()
    {
        for (; nev < 2 * LB_MAX_REPS; nev++)
            LB_CHECK(cudaEventCreate(&ev[nev]));
        LB_CHECK(cudaMalloc((void **)&flag, sizeof(int)));
        return 0;
    }
};

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median time in ms of `reps` runs of run() (an int() callable, 0 = queued
 * fine) on the default stream, after `warm` untimed runs. */
template <class F> static int time_median(lb_timer &t, int warm, int reps, F run, double *med_ms)
{
    if (reps > LB_MAX_REPS)
        reps = LB_MAX_REPS;
    for (int i = 0; i < warm; i++)
        if (run())
            return -1;
    LB_CHECK(cudaDeviceSynchronize());
    lb_spin<<<1, 32>>>(LB_SPIN_CYCLES, t.flag);
    LB_CHECK(cudaGetLastError());
    for (int i = 0; i < reps; i++) {
        LB_CHECK(cudaEventRecord(t.ev[2 * i], 0));
        if (run())
            return -1;
        LB_CHECK(cudaEventRecord(t.ev[2 * i + 1], 0));
    }
    LB_CHECK(cudaDeviceSynchronize());
    double v[LB_MAX_REPS];
    for (int i = 0; i < reps; i++) {
        float ms = 0;
        LB_CHECK(cudaEventElapsedTime(&ms, t.ev[2 * i], t.ev[2 * i + 1]));
        v[i] = ms;
    }
    qsort(v, (size_t)reps, sizeof v[0], cmp_double);
    *med_ms = reps % 2 ? v[reps / 2] : 0.5 * (v[reps / 2 - 1] + v[reps / 2]);
    return 0;
}

/* ---- L1: copy ceiling and 1D convolution --------------------------------------------- */

/* The library's uint8 rule (include/imgconv.h): clamp to [0, 255], round to
 * nearest, ties to even (rint in the default rounding mode). */
static double round_u8(float v)
{
    return rint(v < 0.0f ? 0.0 : v > 255.0f ? 255.0 : (double)v);
}

/* Worst error of 3 chunks of LB_CHECK_LEN outputs (start, middle, end: both
 * borders and the interior) of the correlation
 *   out[i] = bias + sum_t w[t] * in[mirror(i + t - (klen-1)/2)]
 * against a float64 host sum: f32 |out - ref| / (|bias| + sum |w x|), u8 the
 * distance in levels from the rounded reference (+inf when a mapped index
 * falls outside the downloaded window, a bug of this check). */
static int check_conv1d(const void *d_in, const void *d_out, int n, int is_u8, const float *w,
                        int klen, float bias, double *worst)
{
    static float fin[LB_CHECK_LEN + LB_MAX_KLEN], fout[LB_CHECK_LEN];
    static uint8_t bin[LB_CHECK_LEN + LB_MAX_KLEN], bout[LB_CHECK_LEN];
    const size_t es = is_u8 ? 1 : sizeof(float);
    const int len = n < LB_CHECK_LEN ? n : LB_CHECK_LEN, h = (klen - 1) / 2;
    const int starts[3] = {0, (n - len) / 2, n - len};
    *worst = 0;
    for (int c = 0; c < 3; c++) {
        const int s = starts[c], lo = s - h < 0 ? 0 : s - h;
        const int hi = s + len + h > n ? n : s + len + h;
        void *hin = is_u8 ? (void *)bin : (void *)fin, *hout = is_u8 ? (void *)bout : (void *)fout;
        LB_CHECK(cudaMemcpy(hin, (const char *)d_in + (size_t)lo * es, (size_t)(hi - lo) * es,
                            cudaMemcpyDeviceToHost));
        LB_CHECK(cudaMemcpy(hout, (const char *)d_out + (size_t)s * es, (size_t)len * es,
                            cudaMemcpyDeviceToHost));
        for (int i = 0; i < len; i++) {
            double ref = bias, mag = fabs((double)bias);
            int ok = 1;
            for (int t = 0; t < klen; t++) {
                const int j = ic_border_index(s + i + t - h, n, IC_BORDER_MIRROR);
                if (j < lo || j >= hi) {
                    ok = 0;
                    break;
                }
                const double x = is_u8 ? (double)bin[j - lo] : (double)fin[j - lo];
                ref += (double)w[t] * x;
                mag += fabs((double)w[t] * x);
            }
            double e;
            if (!ok)
                e = INFINITY;
            else if (is_u8)
                e = fabs((double)bout[i] - round_u8((float)ref));
            else
                e = isfinite(fout[i]) ? fabs((double)fout[i] - ref) / (mag > 0 ? mag : 1.0)
                                      : INFINITY;
            if (!(e <= *worst))
                *worst = e;
        }
    }
    return 0;
}

/* Positive weights summing to 1 (a smoothing filter, so uint8 outputs stay
 * mostly inside [0, 255]); a fixed LCG seeded by klen. */
static void make_weights(float *w, int klen)
{
    unsigned long long x = LB_SEED + (unsigned long long)klen;
    double sum = 0;
    for (int t = 0; t < klen; t++) {
        x = x * 6364136223846793005ULL + 1442695040888963407ULL;
        w[t] = 0.1f + 0.9f * (float)((x >> 40) * (1.0 / 16777216.0));
        sum += w[t];
    }
    for (int t = 0; t < klen; t++)
        w[t] = (float)(w[t] / sum);
}

static int bench_signal(lb_timer &t, FILE *md, FILE *js, int quick, int *flags)
{
    const int warm = quick ? 1 : 2, reps = quick ? 5 : 20;
    const float bias = 0.125f;
    int n = quick ? 1 << 25 : 1 << 28;
    size_t free_b = 0, total_b = 0;
    LB_CHECK(cudaMemGetInfo(&free_b, &total_b));
    /* f32 in + out, u8 in + out, and room for the runtime */
    while (n > (1 << 20) && (size_t)n * (2 * sizeof(float) + 2) + ((size_t)512 << 20) > free_b)
        n >>= 1;
    const size_t fbytes = (size_t)n * sizeof(float);
    dev_mem in, out, in8, out8, dw;
    if (in.alloc(fbytes) || out.alloc(fbytes) || in8.alloc((size_t)n) || out8.alloc((size_t)n) ||
        dw.alloc(LB_MAX_KLEN * sizeof(float)))
        return -1;
    if (fill_f32(in.f(), (size_t)n, LB_SEED))
        return -1;
    lb_fill_u8<<<1024, 256>>>((uint8_t *)in8.p, (size_t)n, LB_SEED + 1);
    LB_CHECK(cudaGetLastError());
    LB_CHECK(cudaMemset(out.p, 0xff, fbytes)); /* NaN: an output never written fails the check */
    LB_CHECK(cudaMemset(out8.p, 0xff, (size_t)n));

    double copy_ms = 0;
    if (time_median(
            t, warm, reps,
            [&]() -> int {
                LB_CHECK(cudaMemcpyAsync(out.p, in.p, fbytes, cudaMemcpyDeviceToDevice, 0));
                return 0;
            },
            &copy_ms))
        return -1;
    const double copy_gbs = 2.0 * (double)fbytes / (copy_ms * 1e6);
    LB_CHECK(cudaMemset(out.p, 0xff, fbytes));

    md_out(md,
           "\n## L1. 1D convolution vs the copy ceiling (seeds 001, 002)\n\n"
           "ic_conv1d_device on device memory: a signal of 2^%d samples (%.0f MiB as float32), "
           "random in (-1, 1) or uint8 0..255, positive random weights summing to 1, bias %g, "
           "mirror border (correlation; convolution only flips the weights). Blocks of threads "
           "with several outputs each and their halo in shared memory "
           "(src/exercises/conv1d_cuda.h). GB/s counts bytes in + out; "
           "the ceiling is a device-to-device cudaMemcpy of the same %.0f MiB measured in this "
           "run (bytes read + written / time). Gtap/s = samples x taps / time. Median of %d runs "
           "after %d warm-ups, CUDA events. Check: 3 x %d outputs (both ends and the middle) "
           "against a float64 host sum; float32: max |out - ref| / (|bias| + sum |w x|), flagged "
           "above %g; uint8: levels from the rounded reference, flagged above 1.\n\n"
           "| signal | kernel length | ms | GB/s | of copy ceiling | Gtap/s | check |\n"
           "|---|---|---|---|---|---|---|\n"
           "| cudaMemcpy D2D (ceiling) | - | %.3f | %.0f | 100%% | - | - |\n",
           (int)log2((double)n), fbytes / 1048576.0, (double)bias, fbytes / 1048576.0, reps, warm,
           LB_CHECK_LEN, LB_CONV_TOL, copy_ms, copy_gbs);
    js_begin(js, "L1", "copy");
    js_int(js, "bytes", (long long)fbytes);
    js_num(js, "ms", copy_ms);
    js_num(js, "gbps", copy_gbs);
    js_end(js);

    ic_params p1;
    ic_params_default(&p1);
    p1.border = IC_BORDER_MIRROR;
    p1.bias = bias;
    static const struct {
        int is_u8, klen;
    } cases[] = {{0, 1}, {0, 3}, {0, 7}, {0, 15}, {0, 31}, {0, 127}, {1, 3}};
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const int is_u8 = cases[c].is_u8, klen = cases[c].klen;
        float w[LB_MAX_KLEN];
        make_weights(w, klen);
        LB_CHECK(cudaMemcpy(dw.p, w, (size_t)klen * sizeof(float), cudaMemcpyHostToDevice));
        const void *src = is_u8 ? in8.p : in.p;
        void *dst = is_u8 ? out8.p : out.p;
        double ms = 0;
        if (time_median(
                t, warm, reps,
                [&]() -> int {
                    if (ic_conv1d_device(src, dst, (size_t)n, is_u8, dw.f(), klen, &p1, NULL) !=
                        IC_OK) {
                        fprintf(stderr, "bench_linalg: ic_conv1d_device failed: %s\n",
                                ic_last_error());
                        return -1;
                    }
                    return 0;
                },
                &ms))
            return -1;
        double worst = 0;
        if (check_conv1d(src, dst, n, is_u8, w, klen, bias, &worst))
            return -1;
        const int bad = is_u8 ? !(worst <= 1.0) : !(worst <= LB_CONV_TOL);
        if (bad) {
            (*flags)++;
            fprintf(stderr, "bench_linalg: conv1d %s klen %d n %d: check error %g\n",
                    is_u8 ? "u8" : "f32", klen, n, worst);
        }
        const double bytes = 2.0 * (double)n * (is_u8 ? 1.0 : 4.0);
        const double gbs = bytes / (ms * 1e6), gtaps = (double)n * klen / (ms * 1e6);
        md_out(md, "| %s | %d | %.3f | %.0f | %.0f%% | %.1f | %.2g%s |\n",
               is_u8 ? "uint8" : "float32", klen, ms, gbs, 100.0 * gbs / copy_gbs, gtaps, worst,
               bad ? " **FAIL**" : "");
        js_begin(js, "L1", "conv1d");
        js_str(js, "type", is_u8 ? "u8" : "f32");
        js_int(js, "n", n);
        js_int(js, "klen", klen);
        js_num(js, "ms", ms);
        js_num(js, "gbps", gbs);
        js_num(js, "copy_fraction", gbs / copy_gbs);
        js_num(js, "gtaps", gtaps);
        js_num(js, "check_error", worst);
        js_int(js, "check_ok", !bad);
        js_end(js);
    }
    return 0;
}

/* ---- L2: matrix product vs cuBLAS ---------------------------------------------------- */

#ifdef IC_HAVE_CUBLAS
struct blas_handle {
    cublasHandle_t h = nullptr;
    blas_handle() = default;
    blas_handle(const blas_handle &) = delete;
    blas_handle &operator=(const blas_handle &) = delete;
    ~blas_handle()
    {
        if (h)
            (void)cublasDestroy(h);
    }
};
#endif

/* max |C - R| / max |R| over n entries (inf when C holds a non-finite value). */
static int max_rel_diff(const float *dC, const float *dR, size_t n, unsigned *d_acc, double *rel)
{
    LB_CHECK(cudaMemset(d_acc, 0, 2 * sizeof(unsigned)));
    lb_maxdiff<<<528, 256>>>(dC, dR, n, d_acc);
    LB_CHECK(cudaGetLastError());
    unsigned hb[2];
    LB_CHECK(cudaMemcpy(hb, d_acc, sizeof hb, cudaMemcpyDeviceToHost));
    float d, m;
    memcpy(&d, &hb[0], sizeof d);
    memcpy(&m, &hb[1], sizeof m);
    *rel = m > 0 ? (double)d / m : (d > 0 ? INFINITY : 0.0);
    return 0;
}

static int bench_matmul(lb_timer &t, FILE *md, FILE *js, int quick, int *flags)
{
    static const struct {
        int M, K, N;
    } full[] = {{1024, 1024, 1024}, {4096, 4096, 4096}, {1000, 3000, 777}, {4097, 129, 2049}},
      fast[] = {{1024, 1024, 1024}, {2048, 2048, 2048}, {1000, 3000, 777}, {4097, 129, 2049}};
    const int ns = 4;
    const auto *sh = quick ? fast : full;
    const int warm = quick ? 1 : 2, reps = quick ? 5 : 20;
    size_t na = 0, nb = 0, nc = 0;
    for (int s = 0; s < ns; s++) {
        const size_t a = (size_t)sh[s].M * sh[s].K, b = (size_t)sh[s].K * sh[s].N,
                     c = (size_t)sh[s].M * sh[s].N;
        na = a > na ? a : na;
        nb = b > nb ? b : nb;
        nc = c > nc ? c : nc;
    }
    dev_mem A, Bm, C, R, acc;
    if (A.alloc(na * sizeof(float)) || Bm.alloc(nb * sizeof(float)) ||
        C.alloc(nc * sizeof(float)) || R.alloc(nc * sizeof(float)) ||
        acc.alloc(2 * sizeof(unsigned)))
        return -1;
    char blas_name[64] = "not built in";
#ifdef IC_HAVE_CUBLAS
    blas_handle blas;
    LB_BLAS(cublasCreate(&blas.h));
    LB_BLAS(cublasSetMathMode(blas.h, CUBLAS_DEFAULT_MATH)); /* fp32 FMAs, no TF32 */
    int ver = 0;
    LB_BLAS(cublasGetVersion(blas.h, &ver));
    snprintf(blas_name, sizeof blas_name, "cuBLAS %d.%d.%d", ver / 10000, ver / 100 % 100,
             ver % 100);
#endif
    md_out(md,
           "\n## L2. Matrix product vs cuBLAS SGEMM (seed 002)\n\n"
           "C = A B, row-major float32, A M x K and B K x N random in (-1, 1), device memory. "
           "ic_matmul_device naive (seed 002: one thread per entry, global memory), tiled (seed "
           "002: 16x16 shared-memory tiles) and register-blocked (`cuda`, tile by shape) against "
           "cublasSgemm (%s, default math: fp32, no TF32; row-major as C^T = B^T A^T) on the "
           "same buffers. GFLOP/s = 2MKN / time. Error: max |C - C_cublas| / max |C_cublas| over "
           "every entry, flagged above %g. Median of %d runs (5 for the naive kernel above 10^10 "
           "multiply-adds) after warm-up, CUDA events.\n\n"
           "| M x K x N | kernel | tile | ms | GFLOP/s | of cuBLAS | max rel. error |\n"
           "|---|---|---|---|---|---|---|\n",
           blas_name, LB_MM_TOL, reps);
    for (int s = 0; s < ns; s++) {
        const int M = sh[s].M, K = sh[s].K, N = sh[s].N;
        const double flop = 2.0 * M * (double)K * N;
        const size_t ncs = (size_t)M * N;
        if (fill_f32(A.f(), (size_t)M * K, LB_SEED + 10 + 2 * s) ||
            fill_f32(Bm.f(), (size_t)K * N, LB_SEED + 11 + 2 * s))
            return -1;
        char shape[48];
        snprintf(shape, sizeof shape, "%d x %d x %d", M, K, N);
        double blas_ms = -1;
#ifdef IC_HAVE_CUBLAS
        const float one = 1.0f, zero = 0.0f;
        if (time_median(
                t, warm, reps,
                [&]() -> int {
                    LB_BLAS(cublasSgemm(blas.h, CUBLAS_OP_N, CUBLAS_OP_N, N, M, K, &one, Bm.f(), N,
                                        A.f(), K, &zero, R.f(), N));
                    return 0;
                },
                &blas_ms))
            return -1;
        md_out(md, "| %s | cuBLAS SGEMM | - | %.3f | %.0f | 1.00 | (reference) |\n", shape, blas_ms,
               flop / (blas_ms * 1e6));
        js_begin(js, "L2", "matmul");
        js_int(js, "M", M);
        js_int(js, "K", K);
        js_int(js, "N", N);
        js_str(js, "variant", "cublas");
        js_num(js, "ms", blas_ms);
        js_num(js, "gflops", flop / (blas_ms * 1e6));
        js_end(js);
#endif
        static const struct {
            ic_matmul_kernel v;
            const char *name, *key;
        } vars[] = {{IC_MATMUL_NAIVE, "naive", "naive"},
                    {IC_MATMUL_TILED, "tiled", "tiled"},
                    {IC_MATMUL_FAST, "register-blocked", "fast"}};
        for (int v = 0; v < 3; v++) {
            const int slow = vars[v].v == IC_MATMUL_NAIVE && flop > 2e10;
            double ms = 0;
            LB_CHECK(cudaMemset(C.p, 0xff, ncs * sizeof(float))); /* NaN until written */
            if (time_median(
                    t, slow ? 1 : warm, slow ? 5 : reps,
                    [&]() -> int {
                        if (ic_matmul_device(vars[v].v, A.f(), Bm.f(), C.f(), M, K, N, NULL) !=
                            IC_OK) {
                            fprintf(stderr, "bench_linalg: ic_matmul_device failed: %s\n",
                                    ic_last_error());
                            return -1;
                        }
                        return 0;
                    },
                    &ms))
                return -1;
            const double gflops = flop / (ms * 1e6);
            double rel = -1;
            int bad = 0;
            char errcol[48] = "-", ratio[16] = "-";
            if (blas_ms > 0) {
                if (max_rel_diff(C.f(), R.f(), ncs, (unsigned *)acc.p, &rel))
                    return -1;
                bad = !(rel <= LB_MM_TOL);
                snprintf(errcol, sizeof errcol, "%.2g%s", rel, bad ? " **FAIL**" : "");
                snprintf(ratio, sizeof ratio, "%.2f", blas_ms / ms);
            }
            if (bad) {
                (*flags)++;
                fprintf(stderr, "bench_linalg: matmul %s %s: max rel. error %g vs cuBLAS\n",
                        vars[v].name, shape, rel);
            }
            const char *tile = ic_matmul_tile(vars[v].v, M, K, N);
            md_out(md, "| %s | %s | %s | %.3f | %.0f | %s | %s |\n", shape, vars[v].name, tile, ms,
                   gflops, ratio, errcol);
            js_begin(js, "L2", "matmul");
            js_int(js, "M", M);
            js_int(js, "K", K);
            js_int(js, "N", N);
            js_str(js, "variant", vars[v].key);
            js_str(js, "tile", tile);
            js_num(js, "ms", ms);
            js_num(js, "gflops", gflops);
            js_num(js, "vs_cublas", blas_ms > 0 ? blas_ms / ms : -1.0);
            js_num(js, "max_rel_err", rel);
            js_int(js, "check_ok", !bad);
            js_end(js);
        }
    }
    return 0;
}

/* ---- entry --------------------------------------------------------------------------- */

extern "C" int ic_bench_linalg(FILE *md, FILE *json_items, int quick)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess || count < 1) {
        (void)cudaGetLastError();
        fprintf(stderr, "bench_linalg: no CUDA device\n");
        return 77;
    }
    int flags = 0;
    {
        lb_timer t;
        if (t.open() || bench_signal(t, md, json_items, quick, &flags) ||
            bench_matmul(t, md, json_items, quick, &flags))
            return 1;
    }
    md_out(md, "\n");
    return flags ? 2 : 0;
}
