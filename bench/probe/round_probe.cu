/*
 * round_probe.cu - what does cvt.rni.sat.u8.f32 (SASS F2IP.U8 on sm_90)
 * give for the inputs ic_round_u8 (src/core/border.h) has rules for: NaN
 * (0), infinities, values past 0 and 255 (clamped), ties (to even), -0?
 * The device ic_round_u8 keeps fmaxf(v, 0) before the conversion so that
 * NaN is 0 whatever the conversion does; if the conversion alone gives the
 * host rule for every input here, that fmaxf can go (one instruction of
 * about 15 an output in the rows kernels).
 *
 * Prints each input, the conversion alone, with fmaxf first, and the host
 * rule, and "all equal" or the count that differ. A diagnostic, not a test.
 * Build: nvcc -O2 -arch=sm_90 -o round_probe round_probe.cu
 */
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>

__global__ void convert(const float *x, unsigned *bare, unsigned *clamped, int n)
{
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n)
        return;
    unsigned r, s;
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(r) : "f"(x[i]));
    asm("cvt.rni.sat.u8.f32 %0, %1;" : "=r"(s) : "f"(fmaxf(x[i], 0.0f)));
    bare[i] = r;
    clamped[i] = s;
}

static unsigned host_rule(float v)
{
    v = v > 0.0f ? v : 0.0f;
    v = v < 255.0f ? v : 255.0f;
    return (unsigned)rintf(v);
}

int main(void)
{
    const float in[] = {NAN,        -NAN,   INFINITY,    -INFINITY, -0.0f,  0.0f,      0.5f,
                        1.5f,       2.5f,   0.49999997f, 127.5f,    128.5f, 254.5f,    254.50002f,
                        255.49998f, 255.5f, 256.0f,      1e30f,     -0.5f,  -0.50001f, -1.0f,
                        -1e30f,     1e-40f, -1e-40f,     3.4e38f};
    const int n = (int)(sizeof in / sizeof in[0]);
    float *dx;
    unsigned *db, *dc, hb[64], hc[64];
    if (cudaMalloc(&dx, sizeof in) != cudaSuccess || cudaMalloc(&db, n * sizeof(unsigned)) ||
        cudaMalloc(&dc, n * sizeof(unsigned))) {
        printf("round_probe: no device memory\n");
        return 1;
    }
    cudaMemcpy(dx, in, sizeof in, cudaMemcpyHostToDevice);
    convert<<<1, 64>>>(dx, db, dc, n);
    if (cudaMemcpy(hb, db, n * sizeof(unsigned), cudaMemcpyDeviceToHost) != cudaSuccess ||
        cudaMemcpy(hc, dc, n * sizeof(unsigned), cudaMemcpyDeviceToHost) != cudaSuccess) {
        printf("round_probe: %s\n", cudaGetErrorString(cudaGetLastError()));
        return 1;
    }
    int bare_off = 0, clamped_off = 0;
    printf("%-14s %6s %8s %6s\n", "input", "cvt", "fmax+cvt", "host");
    for (int i = 0; i < n; i++) {
        const unsigned h = host_rule(in[i]);
        bare_off += hb[i] != h;
        clamped_off += hc[i] != h;
        printf("%-14.9g %6u %8u %6u%s\n", in[i], hb[i], hc[i], h,
               hb[i] != h ? "  <- cvt alone differs" : "");
    }
    printf("cvt alone: %s (%d differ); fmaxf + cvt: %s (%d differ)\n",
           bare_off ? "differs" : "all equal", bare_off, clamped_off ? "differs" : "all equal",
           clamped_off);
    return 0;
}
