/*
 * chain_ops.cu - the pointwise kernels of the device chain engine
 * (src/dispatch/chain_device.c): an image of any sample type and layout to
 * float32 planes (premultiplied on request), the gradient magnitude and |sum|
 * of two planes, and the planes back into an image, divided back, biased,
 * rounded and clamped as ic_convolve stores. The weighted sums themselves run
 * on the backend as float32 device jobs; these only touch one pixel each.
 */
#include <cuda_runtime.h>
#include <math.h>

#include "cuda/chain_ops.h"
#include "cuda/cuda_common.cuh"

namespace
{

/* 32x8 threads, a grid-stride loop over rows past gridDim.y's limit. */
constexpr int kBx = 32, kBy = 8;

/* An image as the kernels address it (ic_image_at's rule on the device). */
struct img_view {
    uint8_t *data;
    size_t pitch;
    int width, height, channels, soa, shift;
};

img_view view_of(const ic_image *im)
{
    const int shift = im->type == IC_F32 ? 2 : im->type == IC_U16 ? 1 : 0;
    return img_view{im->data, im->pitch, im->width, im->height, im->channels, im->layout == IC_SOA,
                    shift};
}

__device__ __forceinline__ size_t offset_of(const img_view &v, int x, int y, int c)
{
    if (v.soa)
        return ((size_t)c * (size_t)v.height + (size_t)y) * v.pitch + ((size_t)x << v.shift);
    return (size_t)y * v.pitch + (((size_t)x * (size_t)v.channels + (size_t)c) << v.shift);
}

__device__ __forceinline__ float *plane_at(float *planes, size_t pitch, int height, int x, int y,
                                           int c)
{
    return (float *)((uint8_t *)planes + ((size_t)c * (size_t)height + (size_t)y) * pitch) + x;
}

__global__ void load_kernel(const img_view src, float *planes, size_t pitch, int premul, float max)
{
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (x >= src.width)
        return;
    for (int y = (int)(blockIdx.y * blockDim.y + threadIdx.y); y < src.height;
         y += (int)(gridDim.y * blockDim.y)) {
        float v[4];
        for (int c = 0; c < src.channels; c++)
            v[c] = ic_cu_sample<false>(src.data, offset_of(src, x, y, c), src.shift);
        if (premul) { /* colour * a and a, a = alpha / max, as the host engine */
            const int ac = src.channels - 1;
            const float a = v[ac] / max;
            for (int c = 0; c < ac; c++)
                v[c] *= a;
            v[ac] = a;
        }
        for (int c = 0; c < src.channels; c++)
            *plane_at(planes, pitch, src.height, x, y, c) = v[c];
    }
}

__global__ void combine_kernel(float *a, const float *b, size_t pitch, int width, int height, int n)
{
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (x >= width)
        return;
    for (int y = (int)(blockIdx.y * blockDim.y + threadIdx.y); y < height * n;
         y += (int)(gridDim.y * blockDim.y)) {
        float *pa = (float *)((uint8_t *)a + (size_t)y * pitch) + x;
        if (b) { /* the squares pass 2^24 at 16 bits: float64 as on the host */
            const double gx = *pa,
                         gy = *((const float *)((const uint8_t *)b + (size_t)y * pitch) + x);
            *pa = (float)sqrt(gx * gx + gy * gy);
        } else {
            *pa = fabsf(*pa);
        }
    }
}

__global__ void store_kernel(const float *planes, size_t pitch, const img_view dst, float bias,
                             int premul, int keep_alpha, float max)
{
    const int x = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (x >= dst.width)
        return;
    const int ac = dst.channels - 1;
    for (int y = (int)(blockIdx.y * blockDim.y + threadIdx.y); y < dst.height;
         y += (int)(gridDim.y * blockDim.y)) {
        float v[4];
        for (int c = 0; c < dst.channels; c++)
            v[c] = *plane_at((float *)planes, pitch, dst.height, x, y, c);
        if (premul) { /* colour = F(c a) / F(a), alpha = max F(a) */
            const float a = v[ac];
            for (int c = 0; c < ac; c++)
                v[c] = a > 0.0f ? v[c] / a : 0.0f;
            v[ac] = max * a;
        }
        for (int c = 0; c < dst.channels; c++) {
            const float s = v[c] + (keep_alpha && c == ac ? 0.0f : bias);
            uint8_t *p = dst.data + offset_of(dst, x, y, c);
            if (dst.shift == 2)
                *reinterpret_cast<float *>(p) = s;
            else if (dst.shift == 1)
                *reinterpret_cast<uint16_t *>(p) = ic_cu_round_u16(s);
            else
                *p = ic_round_u8(s);
        }
    }
}

dim3 grid_for(int width, int rows)
{
    const int gy = (rows + kBy - 1) / kBy;
    return dim3((unsigned)((width + kBx - 1) / kBx), (unsigned)(gy < 65535 ? gy : 65535), 1);
}

/* The launch's own error, then the stream's (a fault in an earlier kernel). */
ic_status launched(const char *what, void *stream, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaGetLastError());
    const cudaError_t e = cudaStreamSynchronize((cudaStream_t)stream);
    if (e != cudaSuccess)
        return ic_cuda_fail(err, errlen, what, (int)e);
    return IC_OK;
}

ic_status ops_alloc(int device, size_t n, void **p, char *err, size_t errlen)
{
    *p = NULL;
    IC_CUDA_CHECK(cudaSetDevice(device));
    IC_CUDA_CHECK(cudaMalloc(p, n));
    return IC_OK;
}

void ops_release(int device, void *p)
{
    if (p && cudaSetDevice(device) == cudaSuccess)
        (void)cudaFree(p);
    (void)cudaGetLastError(); /* a release that failed leaves no error behind */
}

ic_status ops_copy(int device, void *dst, size_t dpitch, const void *src, size_t spitch,
                   size_t row_bytes, size_t rows, void *stream, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(device));
    IC_CUDA_CHECK(cudaMemcpy2DAsync(dst, dpitch, src, spitch, row_bytes, rows, cudaMemcpyDefault,
                                    (cudaStream_t)stream));
    IC_CUDA_CHECK(cudaStreamSynchronize((cudaStream_t)stream));
    return IC_OK;
}

ic_status ops_load(const ic_image *src, float *planes, size_t pitch, int premul, void *stream,
                   char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(src->device));
    const img_view v = view_of(src);
    load_kernel<<<grid_for(v.width, v.height), dim3(kBx, kBy), 0, (cudaStream_t)stream>>>(
        v, planes, pitch, premul, (float)ic_sample_max(src->type));
    return launched("chain load kernel", stream, err, errlen);
}

ic_status ops_combine(int device, float *a, const float *b, size_t pitch, int width, int height,
                      int n, void *stream, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(device));
    combine_kernel<<<grid_for(width, height * n), dim3(kBx, kBy), 0, (cudaStream_t)stream>>>(
        a, b, pitch, width, height, n);
    return launched("chain combine kernel", stream, err, errlen);
}

ic_status ops_store(const float *planes, size_t pitch, const ic_image *dst, float bias, int premul,
                    int keep_alpha, void *stream, char *err, size_t errlen)
{
    IC_CUDA_CHECK(cudaSetDevice(dst->device));
    if (dst->stream != stream) { /* the destination's earlier work first, as ic_convolve */
        cudaEvent_t ev;
        IC_CUDA_CHECK(cudaEventCreateWithFlags(&ev, cudaEventDisableTiming));
        cudaError_t e = cudaEventRecord(ev, (cudaStream_t)dst->stream);
        if (e == cudaSuccess)
            e = cudaStreamWaitEvent((cudaStream_t)stream, ev, 0);
        (void)cudaEventDestroy(ev);
        if (e != cudaSuccess)
            return ic_cuda_fail(err, errlen, "cudaStreamWaitEvent", (int)e);
    }
    const img_view v = view_of(dst);
    store_kernel<<<grid_for(v.width, v.height), dim3(kBx, kBy), 0, (cudaStream_t)stream>>>(
        planes, pitch, v, bias, premul, keep_alpha, (float)ic_sample_max(dst->type));
    return launched("chain store kernel", stream, err, errlen);
}

} // namespace

extern "C" const ic_chain_ops ic__cuda_chain_ops = {
    ops_alloc, ops_release, ops_copy, ops_load, ops_combine, ops_store,
};
