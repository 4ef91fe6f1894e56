/*
 * conv1d.c - the CPU 1D correlation behind ic_conv1d_f32/u8 and ic_stencil1d.
 *
 * It follows the GPU algorithm of seeds 001 and 002 on purpose: the signal is
 * cut into tiles of C1_TILE outputs; each tile first gathers its C1_TILE +
 * klen - 1 input samples, halo cells included, into a float scratch row (the
 * seeds' shared-memory `temp`/`tile`), with every border rule applied there
 * and only there (ic_border_map); the weighted sums then run over the scratch
 * row without a single branch. The loop order (taps outside, outputs inside)
 * lets the compiler vectorise across outputs while every output still adds its
 * taps in increasing order, as the CUDA kernel does.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/border.h"
#include "exercises/linalg.h"

/* Outputs per tile: the scratch (tile + halo, and the sums) stays in L1/L2. */
#define C1_TILE 2048

/* The input signal, either type, read as float. */
typedef struct sig_in {
    const float *f32;
    const uint8_t *u8;
    int n, border;
    float border_value;
} sig_in;

/* x[t] = in[map(g0 + t)] for t < count: the tile with its halo cells. */
static void gather(const sig_in *in, int g0, int count, float *x)
{
    for (int t = 0; t < count; t++) {
        const int m = ic_border_map(g0 + t, in->n, in->border);
        x[t] = m < 0 ? in->border_value : in->u8 ? (float)in->u8[m] : in->f32[m];
    }
}

ic_status ic__conv1d_cpu(const void *in, void *out, int n, int is_u8, const float *w, int klen,
                         int border, float border_value, float bias, char *err, size_t errlen)
{
    const int r = (klen - 1) / 2;
    float *x = malloc(((size_t)C1_TILE + (size_t)klen - 1 + C1_TILE) * sizeof *x);
    if (!x) {
        snprintf(err, errlen, "out of memory");
        return IC_ERR_NOMEM;
    }
    float *acc = x + C1_TILE + klen - 1;
    sig_in s = {NULL, NULL, n, border, border_value};
    if (is_u8)
        s.u8 = (const uint8_t *)in;
    else
        s.f32 = (const float *)in;

    for (int base = 0; base < n; base += C1_TILE) {
        const int cnt = n - base < C1_TILE ? n - base : C1_TILE;
        gather(&s, base - r, cnt + klen - 1, x);
        float *restrict a = acc;
        for (int o = 0; o < cnt; o++)
            a[o] = 0.0f;
        for (int t = 0; t < klen; t++) {
            const float wt = w[t];
            const float *restrict xt = x + t;
            for (int o = 0; o < cnt; o++)
                a[o] += wt * xt[o];
        }
        if (is_u8) {
            uint8_t *o8 = (uint8_t *)out + base;
            for (int o = 0; o < cnt; o++)
                o8[o] = ic_round_u8(acc[o] + bias);
        } else {
            float *of = (float *)out + base;
            for (int o = 0; o < cnt; o++)
                of[o] = acc[o] + bias;
        }
    }
    free(x);
    return IC_OK;
}
