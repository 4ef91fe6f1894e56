/*
 * fft.cu - correlation through the FFT (cuFFT, float32), the fast path's
 * method for large full-rank kernels, where a direct sum costs K^2 multiply-adds
 * per sample (31x31: 961) and the FFT a few dozen whatever K is.
 *
 * Overlap-save: each channel is cut into tiles of V x V outputs, V = N - K + 1;
 * tile t(u, v) = in(X0 + u - cx, Y0 + v - cy) for u, v < N (border-mapped by
 * ic_border_map, so every border mode is honoured), and the circular
 * correlation of t with the zero-padded weights g is exact on the V x V corner:
 *   out = IFFT(FFT(t) * conj(FFT(g))) / N^2.
 * Tiles go through cuFFT in batches (batched 2D R2C / C2R plans), so images of
 * any size fit in a bounded buffer. Samples are centred (minus 128, or 32768
 * for uint16 samples: fft_centre) before the transform, which halves the
 * magnitudes and so the float32 rounding error; centre * sum(w) is added back
 * at the end. uint16 samples go through the shared plane read and store
 * (cuda_common.cuh); their error in levels is the 8-bit error times 257
 * (the same relative error, about 0.03 levels for 31x31), which is why the
 * planner does not give 16-bit jobs to this method (plan.cu's top).
 * Error: about 1e-4 levels for 31x31 (simulated for N = 256..1024), so a few
 * samples in 1e5 that sit within that of a .5 boundary round the other way;
 * within the oracle's acceptance (1 level, 99.9% exact).
 *
 * Fused (ic_tuning.fft_fuse; the planner decides, plan.cu): the spectrum
 * multiply runs inside cuFFT's R2C transform as an LTO callback
 * (fft_cb.lto.cu, fft_mul's arithmetic), linked when the plan is made; a
 * plan whose callback cannot be linked (an older cuFFT, a GPU older than the
 * LTO-IR) runs fft_mul instead, and the context plans unfused from then on.
 */
#include <cufft.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_common.cuh"
#include "cuda/fast/cufft_lazy.h"
#include "cuda/fast/fast.h"
#include "cuda/fast/fft_tiles.cuh"
#ifdef IC_HAVE_FFT_CB
#include "fft_cb_fatbin.h" /* ic_fft_cb_fatbin: fft_cb.lto.cu as LTO-IR (CMakeLists.txt) */
#endif

/* cuFFT is opened on first use (cufft_lazy.h): ic_fast_fft_prepare loads it
 * before anything below can run, and the calls go through the loaded table
 * under their usual names (so error messages name the cuFFT call). */
#define cufftCreate ic_cufft_loaded()->create
#define cufftDestroy ic_cufft_loaded()->destroy
#define cufftSetAutoAllocation ic_cufft_loaded()->set_auto_allocation
#define cufftMakePlanMany ic_cufft_loaded()->make_plan_many
#define cufftSetWorkArea ic_cufft_loaded()->set_work_area
#define cufftPlan2d ic_cufft_loaded()->plan_2d
#define cufftExecR2C ic_cufft_loaded()->exec_r2c
#define cufftExecC2R ic_cufft_loaded()->exec_c2r
#define cufftSetStream ic_cufft_loaded()->set_stream

struct ic_fast_fft {
    /* shape the resources were made for */
    int n, b; /* tile size, tiles per batch */
    cufftHandle r2c, c2r;
    int have_plans;
    int fused;                /* the R2C plan multiplies as it stores (fft_cb.lto.cu) */
    int fuse_failed;          /* linking it failed once: not tried again */
    ic_fft_cb_info info;      /* what info_dev holds (zero until the first upload) */
    ic_fft_cb_info *info_dev; /* what the callback reads */
    double work_ms;           /* predicted kernel ms of every job prepared (fft_fuse auto) */
    void *work;
    float *real;        /* b tiles of n*n floats */
    cufftComplex *spec; /* b tiles of n*(n/2+1) */
    cufftComplex *g;    /* conj(FFT(weights)) / n^2 */
    /* kernel and tile size the spectrum was made for */
    int kw, kh, gn;
    float *w_host;
    double sumw;
    /* job geometry of the last prepare */
    int v, tiles_x, tiles_y, tiles, channels;
    /* The tile buffers and cuFFT plans serve one launch at a time: the async
     * pipeline launches bands from several host threads on several streams.
     * lock orders the host side, and every launch waits on the GPU for the
     * previous one (done, recorded on its stream). */
    pthread_mutex_t lock;
    cudaEvent_t done;
    int have_done;
};

namespace
{

const int FFT_THREADS = 256;

ic_status cufft_fail(char *err, size_t errlen, const char *what, cufftResult r)
{
    snprintf(err, errlen, "%s: cuFFT error %d", what, (int)r);
    return IC_ERR_DEVICE;
}

#define IC_CUFFT_CHECK(call)                                                                       \
    do {                                                                                           \
        const cufftResult ic_fr_ = (call);                                                         \
        if (ic_fr_ != CUFFT_SUCCESS)                                                               \
            return cufft_fail(err, errlen, #call, ic_fr_);                                         \
    } while (0)

/* The centring constant: half the sample range. */
__host__ __device__ __forceinline__ float fft_centre(const ic_cuda_args &a)
{
    return a.u16 ? 32768.0f : 128.0f;
}

/* t_c(u, v) = in_c(X0 + u - cx, Y0 + v - cy) - centre, border-mapped, for
 * every channel c of spatial tile blockIdx.y of the batch (its tiles are
 * neighbours, fft_tiles.cuh): a thread reads all the samples of a pixel, so
 * an interleaved image is read once, in whole lines (one channel a block
 * read each line three times; docs/design/tiles.md). */
__global__ void __launch_bounds__(FFT_THREADS)
    fft_build(const ic_cuda_args a, const ic_fft_geo g, float *real)
{
    const int C = a.channels, bt = (int)blockIdx.y * C; /* t0 is a multiple of C */
    int tx, ty;
    ic_fft_tile_pos(g, (g.t0 + bt) / C, tx, ty);
    const int x0 = tx * g.v - (a.kw - 1) / 2, y0 = ty * g.v - (a.kh - 1) / 2;
    const size_t nn = (size_t)g.n * g.n;
    float *t = real + (size_t)bt * nn;
    const bool inner = x0 >= 0 && y0 >= 0 && x0 + g.n <= a.width && y0 + g.n <= a.height;
    const float centre = fft_centre(a);
    /* every sample of a pixel read before any is stored (the stores may not
     * be moved above loads they could alias) */
    for (int v = (int)blockIdx.x; v < g.n; v += (int)gridDim.x)
        for (int u = (int)threadIdx.x; u < g.n; u += (int)blockDim.x) {
            float s[4];
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (c < C) {
                    const ic_cu_src in(a, c);
                    s[c] = inner ? in.at<true>(x0 + u, y0 + v) : in.fetch<true>(x0 + u, y0 + v);
                }
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (c < C)
                    t[c * nn + (size_t)v * g.n + u] = s[c] - centre;
        }
}

/* spec *= conj(FFT(g)) / n^2 (precomputed in gs); blockIdx.y = tile of the batch. */
__global__ void __launch_bounds__(FFT_THREADS)
    fft_mul(cufftComplex *spec, const cufftComplex *gs, int per_tile)
{
    cufftComplex *t = spec + (size_t)blockIdx.y * per_tile;
    for (int i = (int)(blockIdx.x * blockDim.x + threadIdx.x); i < per_tile;
         i += (int)(gridDim.x * blockDim.x)) {
        const cufftComplex s = t[i], k = gs[i];
        t[i] = make_cuComplex(s.x * k.x - s.y * k.y, s.x * k.y + s.y * k.x);
    }
}

/* gs = conj(gs) / n^2 */
__global__ void fft_conj_scale(cufftComplex *gs, size_t count, float scale)
{
    for (size_t i = (size_t)blockIdx.x * blockDim.x + threadIdx.x; i < count;
         i += (size_t)gridDim.x * blockDim.x)
        gs[i] = make_cuComplex(gs[i].x * scale, -gs[i].y * scale);
}

/* out_c(X0 + x, Y0 + y) = round(t_c + centre * sum(w) + bias) on the valid
 * corner, every channel of spatial tile blockIdx.y: a thread writes whole
 * pixels, so an interleaved image's lines are written whole by one warp
 * (one channel a block wrote every third byte, the others' bytes of the same
 * sectors long before or after). */
__global__ void __launch_bounds__(FFT_THREADS)
    fft_extract(const ic_cuda_args a, const ic_fft_geo g, const float *real, float add)
{
    const int C = a.channels, bt = (int)blockIdx.y * C; /* t0 is a multiple of C */
    int tx, ty;
    ic_fft_tile_pos(g, (g.t0 + bt) / C, tx, ty);
    const size_t nn = (size_t)g.n * g.n;
    const float *t = real + (size_t)bt * nn;
    const int x0 = tx * g.v, y0 = ty * g.v;
    const int vw = min(g.v, a.width - x0), vh = min(g.v, a.height - y0);
    /* two pixels a thread, every sample loaded before any is stored (a byte
     * store may alias any load after it) */
    const int bx = (int)blockDim.x;
    for (int y = (int)blockIdx.x; y < vh; y += (int)gridDim.x)
        for (int x = (int)threadIdx.x; x < vw; x += 2 * bx) {
            const bool two = x + bx < vw;
            float s[2][4];
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (c < C) {
                    const float *row = t + c * nn + (size_t)y * g.n;
                    s[0][c] = row[x];
                    s[1][c] = two ? row[x + bx] : 0.0f;
                }
#pragma unroll
            for (int c = 0; c < 4; c++)
                if (c < C) {
                    ic_cu_store(a, c, x0 + x, y0 + y, s[0][c] + add);
                    if (two)
                        ic_cu_store(a, c, x0 + x + bx, y0 + y, s[1][c] + add);
                }
        }
}

ic_status check_launch(const char *what, char *err, size_t errlen)
{
    const cudaError_t e = cudaGetLastError();
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, what, (int)e);
    return IC_OK;
}

void release_batch(ic_fast_fft *f)
{
    if (f->have_plans) {
        cufftDestroy(f->r2c);
        cufftDestroy(f->c2r);
        f->have_plans = 0;
    }
    (void)cudaFree(f->work);
    (void)cudaFree(f->real);
    (void)cudaFree(f->spec);
    f->work = NULL;
    f->real = NULL;
    f->spec = NULL;
    f->b = 0;
}

/* The multiply of fft_cb.lto.cu on the R2C plan (before it is made). */
ic_status set_callbacks(ic_fast_fft *f, char *err, size_t errlen)
{
#ifdef IC_HAVE_FFT_CB
    const ic_cufft_fns *fn = ic_cufft_loaded();
    if (!fn->xt_set_jit_callback) {
        snprintf(err, errlen, "cuFFT has no cufftXtSetJITCallback of CUDA 13's form");
        return IC_ERR_UNSUPPORTED;
    }
    void *info[1] = {f->info_dev};
    IC_CUFFT_CHECK(fn->xt_set_jit_callback(f->r2c, IC_FFT_CB_MUL, ic_fft_cb_fatbin,
                                           sizeof ic_fft_cb_fatbin, CUFFT_CB_ST_COMPLEX, info));
    return IC_OK;
#else
    (void)f;
    snprintf(err, errlen, "built without the FFT callbacks");
    return IC_ERR_UNSUPPORTED;
#endif
}

/* Plans and buffers for b tiles of n x n, the plans fused (callbacks) or not. */
ic_status make_batch(ic_fast_fft *f, int n, int b, int fused, char *err, size_t errlen)
{
    release_batch(f);
    int dims[2] = {n, n};
    size_t ws1 = 0, ws2 = 0;
    IC_CUFFT_CHECK(cufftCreate(&f->r2c));
    if (cufftCreate(&f->c2r) != CUFFT_SUCCESS) {
        cufftDestroy(f->r2c);
        snprintf(err, errlen, "cufftCreate failed");
        return IC_ERR_DEVICE;
    }
    f->have_plans = 1;
    f->fused = 0;
    if (fused) {
        if (!f->info_dev)
            IC_CUDA_CHECK(cudaMalloc((void **)&f->info_dev, sizeof(ic_fft_cb_info)));
        ic_status st = set_callbacks(f, err, errlen);
        if (st != IC_OK)
            return st;
        f->fused = 1;
    }
    IC_CUFFT_CHECK(cufftSetAutoAllocation(f->r2c, 0));
    IC_CUFFT_CHECK(cufftSetAutoAllocation(f->c2r, 0));
    IC_CUFFT_CHECK(cufftMakePlanMany(f->r2c, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_R2C, b, &ws1));
    IC_CUFFT_CHECK(cufftMakePlanMany(f->c2r, 2, dims, NULL, 1, 0, NULL, 1, 0, CUFFT_C2R, b, &ws2));
    const size_t ws = ws1 > ws2 ? ws1 : ws2;
    if (ws)
        IC_CUDA_CHECK(cudaMalloc(&f->work, ws));
    IC_CUFFT_CHECK(cufftSetWorkArea(f->r2c, f->work));
    IC_CUFFT_CHECK(cufftSetWorkArea(f->c2r, f->work));
    const size_t nn = (size_t)n * n, nc = (size_t)n * (n / 2 + 1);
    IC_CUDA_CHECK(cudaMalloc((void **)&f->real, nn * b * sizeof(float)));
    /* a short batch transforms all b tiles, the ones past it unused: zeros
     * (or an earlier batch's tiles) rather than never-written memory, which
     * compute-sanitizer's initcheck reported inside cuFFT's R2C kernel */
    IC_CUDA_CHECK(cudaMemset(f->real, 0, nn * b * sizeof(float)));
    IC_CUDA_CHECK(cudaMalloc((void **)&f->spec, nc * b * sizeof(cufftComplex)));
    f->n = n;
    f->b = b;
    return IC_OK;
}

/* conj(FFT(g)) / n^2 of the zero-padded weights, for tile size n. */
ic_status make_spectrum(ic_fast_fft *f, int n, int kw, int kh, const float *w, char *err,
                        size_t errlen)
{
    const size_t nn = (size_t)n * n, nc = (size_t)n * (n / 2 + 1);
    (void)cudaFree(f->g);
    f->g = NULL;
    free(f->w_host);
    f->w_host = NULL;
    float *pad = (float *)calloc(nn, sizeof(float));
    float *wcopy = (float *)malloc((size_t)kw * kh * sizeof(float));
    if (!pad || !wcopy) {
        free(pad);
        free(wcopy);
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    double sum = 0;
    for (int j = 0; j < kh; j++)
        for (int i = 0; i < kw; i++) {
            pad[(size_t)j * n + i] = w[j * kw + i];
            wcopy[j * kw + i] = w[j * kw + i];
            sum += w[j * kw + i];
        }
    float *dpad = NULL;
    cufftHandle plan;
    ic_status st = IC_OK;
    cudaError_t e = cudaMalloc((void **)&f->g, nc * sizeof(cufftComplex));
    if (e == cudaSuccess)
        e = cudaMalloc((void **)&dpad, nn * sizeof(float));
    if (e == cudaSuccess)
        e = cudaMemcpy(dpad, pad, nn * sizeof(float), cudaMemcpyHostToDevice);
    if (e != cudaSuccess) {
        st = ic_cuda_fail(err, errlen, "cudaMalloc/cudaMemcpy(fft weights)", (int)e);
    } else if (cufftPlan2d(&plan, n, n, CUFFT_R2C) != CUFFT_SUCCESS) {
        snprintf(err, errlen, "cufftPlan2d: cannot plan the weights' transform");
        st = IC_ERR_DEVICE;
    } else {
        const cufftResult r = cufftExecR2C(plan, dpad, f->g);
        if (r != CUFFT_SUCCESS)
            st = cufft_fail(err, errlen, "cufftExecR2C(weights)", r);
        else {
            fft_conj_scale<<<(unsigned)((nc + 255) / 256), 256>>>(f->g, nc, 1.0f / (float)nn);
            st = check_launch("cuda fast fft spectrum kernel", err, errlen);
        }
        e = cudaDeviceSynchronize(); /* before the plan and dpad go */
        if (st == IC_OK && e != cudaSuccess)
            st = ic_cuda_fail(err, errlen, "cudaDeviceSynchronize(fft weights)", (int)e);
        cufftDestroy(plan);
    }
    (void)cudaFree(dpad);
    free(pad);
    if (st != IC_OK) {
        free(wcopy);
        (void)cudaFree(f->g);
        f->g = NULL;
        return st;
    }
    f->w_host = wcopy;
    f->kw = kw;
    f->kh = kh;
    f->gn = n;
    f->sumw = sum;
    return IC_OK;
}

} // namespace

extern "C" int ic_fast_fft_size(int kw, int kh)
{
    /* ic_tuning.fft_n overrides it (plan.cu), for calibration runs. */
    const int k = kw > kh ? kw : kh;
    /* Fewest transformed elements per output, (N / (N - K + 1))^2, for N >= 4K:
     * 256 up to K = 31 would cost 1.28x, 512 costs 1.13x. */
    int n = 256;
    while ((n < 4 * k || (k > 15 && n < 512)) && n < 4096)
        n *= 2;
    return n;
}

extern "C" int ic_fast_fft_fusable(const ic_fast_fft *f)
{
    return !f || !f->fuse_failed;
}

extern "C" double ic_fast_fft_work_ms(const ic_fast_fft *f)
{
    return f ? f->work_ms : 0.0;
}

extern "C" void ic_fast_fft_free(ic_fast_fft *f)
{
    if (!f)
        return;
    release_batch(f);
    (void)cudaFree(f->g);
    (void)cudaFree(f->info_dev);
    free(f->w_host);
    if (f->have_done)
        (void)cudaEventDestroy(f->done);
    pthread_mutex_destroy(&f->lock);
    free(f);
}

extern "C" ic_status ic_fast_fft_prepare(ic_fast_fft **pf, const ic_cuda_args *a, const float *w,
                                         ic_fast_plan *p, size_t budget, char *err, size_t errlen)
{
    if (!ic_cufft_load(err, errlen)) /* the first FFT plan of the process opens cuFFT */
        return IC_ERR_UNSUPPORTED;
    ic_fast_fft *f = *pf;
    if (!f) {
        f = (ic_fast_fft *)calloc(1, sizeof *f);
        if (!f) {
            snprintf(err, errlen, "out of memory");
            return IC_ERR_NOMEM;
        }
        if (pthread_mutex_init(&f->lock, NULL) != 0) {
            free(f);
            snprintf(err, errlen, "cuda fast fft: cannot create a mutex");
            return IC_ERR_NOMEM;
        }
        *pf = f;
    }
    const int n = p->fft_n > 0 ? p->fft_n : ic_fast_fft_size(a->kw, a->kh);
    const int kmax = a->kw > a->kh ? a->kw : a->kh;
    if (n < kmax + 1) {
        snprintf(err, errlen, "cuda fast fft: tile %d too small for a %dx%d kernel", n, a->kw,
                 a->kh);
        return IC_ERR_UNSUPPORTED;
    }
    const int v = n - kmax + 1;
    const int tx = (a->width + v - 1) / v, ty = (a->height + v - 1) / v;
    const long long tiles = (long long)tx * ty * a->channels;
    if (tiles > (1LL << 30)) {
        snprintf(err, errlen, "cuda fast fft: too many tiles");
        return IC_ERR_TOO_LARGE;
    }
    /* real + spectrum + about as much again for cuFFT's work area */
    const size_t per_tile = (size_t)n * n * sizeof(float) * 2 + (size_t)n * (n / 2 + 1) * 8;
    long long bmax = (long long)(budget / per_tile);
    if (bmax < 1)
        bmax = 1;
    if (bmax > 65535)
        bmax = 65535; /* gridDim.y of the tile kernels */
    const long long nb = (tiles + bmax - 1) / bmax;
    int b = (int)((tiles + nb - 1) / nb);
    if (b % a->channels) { /* whole spatial tiles per batch (fft_tiles.cuh's order) */
        b += a->channels - b % a->channels;
        if (b > 65535)
            b -= a->channels;
    }
    ic_status st;
    /* Fused where the planner expects it and linking has not failed before;
     * the callback indexes a batch's spectrum with 32-bit offsets. */
    const int fuse =
        p->fft_fused && !f->fuse_failed && (unsigned long long)b * n * n < (1ull << 32);
    if (f->n != n || f->b != b || !f->have_plans || f->fused != fuse) {
        st = make_batch(f, n, b, fuse, err, errlen);
        if (st != IC_OK && fuse) { /* the documented fallback: the unfused kernels */
            f->fuse_failed = 1;
            st = make_batch(f, n, b, 0, err, errlen);
        }
        if (st != IC_OK)
            return st;
    }
    const size_t nw = (size_t)a->kw * a->kh;
    if (!f->g || !f->w_host || f->kw != a->kw || f->kh != a->kh ||
        memcmp(f->w_host, w, nw * sizeof(float)) != 0 || f->gn != n)
        if ((st = make_spectrum(f, n, a->kw, a->kh, w, err, errlen)) != IC_OK)
            return st;
    f->v = v;
    f->tiles_x = tx;
    f->tiles_y = ty;
    f->tiles = (int)tiles;
    f->channels = a->channels;
    p->fft_n = n;
    p->fft_valid = v;
    p->fft_tiles = (int)tiles;
    p->fft_batch = b;
    p->fft_fused = f->fused;
    f->work_ms += p->pred_ms > 0 ? p->pred_ms : 0.0;
    return IC_OK;
}

/* One launch over the image (or band) a: its own tile grid (a band of the
 * async pipeline is shorter than the image prepare saw), the buffers of the
 * last prepare. Called with f->lock held. */
static ic_status fft_launch_locked(ic_fast_fft *f, const ic_cuda_args *a, char *err, size_t errlen)
{
    const int n = f->n;
    const size_t nc = (size_t)n * (n / 2 + 1);
    const float add = (float)((double)fft_centre(*a) * f->sumw) + a->bias;
    ic_cuda_args ab = *a;
    ab.bias = 0.0f; /* folded into add */
    const cudaStream_t stream = (cudaStream_t)a->stream;
    const int tx = (a->width + f->v - 1) / f->v, ty = (a->height + f->v - 1) / f->v;
    const long long tiles = (long long)tx * ty * a->channels;
    if (tiles > (1LL << 30)) {
        snprintf(err, errlen, "cuda fast fft: too many tiles");
        return IC_ERR_TOO_LARGE;
    }
    if (!f->have_done) {
        IC_CUDA_CHECK(cudaEventCreateWithFlags(&f->done, cudaEventDisableTiming));
        f->have_done = 1;
    } else {
        IC_CUDA_CHECK(cudaStreamWaitEvent(stream, f->done, 0));
    }
    IC_CUFFT_CHECK(cufftSetStream(f->r2c, stream));
    IC_CUFFT_CHECK(cufftSetStream(f->c2r, stream));
    ic_status st;
    if (f->fused && (f->info.gs != f->g || f->info.nc != (unsigned)nc)) {
        /* what the multiply callback reads, when the spectrum changed: from
         * pageable memory, staged before the call returns; stream-ordered
         * after the previous launch (done) and before the transforms */
        f->info.gs = f->g;
        f->info.nc = (unsigned)nc;
        IC_CUDA_CHECK(
            cudaMemcpyAsync(f->info_dev, &f->info, sizeof f->info, cudaMemcpyHostToDevice, stream));
    }
    for (long long t0 = 0; t0 < tiles; t0 += f->b) {
        const int count = (int)(tiles - t0 < f->b ? tiles - t0 : f->b);
        if (count % a->channels) { /* whole spatial tiles (prepare's b, fft_tiles.cuh) */
            snprintf(err, errlen, "cuda fast fft: a batch of %d tiles on %d channels", count,
                     a->channels);
            return IC_ERR_INTERNAL;
        }
        const ic_fft_geo g = {n, f->v, tx, ty, (int)t0, count};
        const unsigned rows_per_block = 8, spatial = (unsigned)(count / a->channels);
        const dim3 grid((unsigned)((n + rows_per_block - 1) / rows_per_block), spatial);
        fft_build<<<grid, FFT_THREADS, 0, stream>>>(*a, g, f->real);
        if ((st = check_launch("cuda fast fft tile kernel", err, errlen)) != IC_OK)
            return st;
        /* A short last batch still transforms b tiles: the stale ones are ignored. */
        IC_CUFFT_CHECK(cufftExecR2C(f->r2c, f->real, f->spec));
        if (!f->fused) { /* else the R2C transform multiplied as it stored */
            const unsigned mb = (unsigned)((nc + FFT_THREADS * 4 - 1) / (FFT_THREADS * 4));
            fft_mul<<<dim3(mb, (unsigned)count), FFT_THREADS, 0, stream>>>(f->spec, f->g, (int)nc);
            if ((st = check_launch("cuda fast fft multiply kernel", err, errlen)) != IC_OK)
                return st;
        }
        IC_CUFFT_CHECK(cufftExecC2R(f->c2r, f->spec, f->real));
        const dim3 egrid((unsigned)((f->v + rows_per_block - 1) / rows_per_block), spatial);
        fft_extract<<<egrid, FFT_THREADS, 0, stream>>>(ab, g, f->real, add);
        if ((st = check_launch("cuda fast fft extract kernel", err, errlen)) != IC_OK)
            return st;
    }
    IC_CUDA_CHECK(cudaEventRecord(f->done, stream));
    return IC_OK;
}

extern "C" ic_status ic_fast_fft_launch(ic_fast_fft *f, const ic_cuda_args *a, char *err,
                                        size_t errlen)
{
    if (a->premultiply) { /* the planner never gives it such a job (plan.cu) */
        snprintf(err, errlen, "cuda fast fft: no premultiplied alpha");
        return IC_ERR_UNSUPPORTED;
    }
    if (!f || !f->have_plans || !f->g || f->kw != a->kw || f->kh != a->kh || f->gn != f->n ||
        a->channels != f->channels || a->width > f->tiles_x * f->v ||
        a->height > f->tiles_y * f->v) {
        snprintf(err, errlen, "cuda fast fft: not prepared");
        return IC_ERR_INTERNAL;
    }
    pthread_mutex_lock(&f->lock);
    const ic_status st = fft_launch_locked(f, a, err, errlen);
    pthread_mutex_unlock(&f->lock);
    return st;
}
