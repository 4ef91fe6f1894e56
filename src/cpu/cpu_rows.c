/*
 * cpu_rows.c - the portable inner loops of the `cpu` backend (the "scalar"
 * cpu_ops): what runs on a CPU without AVX2 and what the cpu_isa tuning
 * "scalar" forces.
 *
 * Each loop is seed 004's weighted sum written tap-major over a block of
 * samples (acc[s] += w * row[s + offset]), so that the compiler vectorises it
 * with the SSE2 baseline, rounding included (round_block). Premultiplied alpha
 * (premul, unpremul_block) goes one pixel at a time.
 */
#include "cpu/cpu_internal.h"

/* Samples per block: the accumulators stay in L1. */
#define BLK 256

/* out[s] = ic_round_u8(acc[s] + bias), written so that it vectorises: with
 * SSE2 alone, ic_round_u8's fminf/fmaxf/rintf are library calls (measured: 14
 * of the 16 cycles per sample of a 3x3 filter). The comparisons clamp exactly
 * as fmaxf(v, 0)/fminf(v, 255) do (NaN -> 0), and for 0 <= v <= 255 adding and
 * subtracting 1.5 * 2^23 rounds to an integer in the current rounding mode,
 * exactly as rintf does (ties to even by default). Checked against the oracle
 * by tests/test_cpu_paths.c (cpu-isa=scalar). The uint16 instance
 * (ic_round_u16, clamp to 65535) rounds the same way: 65535 < 2^22. */
#define ROUND_BLOCK(NAME, T, MAX)                                                                  \
    static void NAME(const float *restrict acc, float bias, T *restrict out, int m)                \
    {                                                                                              \
        const float magic = 12582912.0f; /* 1.5 * 2^23 */                                          \
        for (int s = 0; s < m; s++) {                                                              \
            float v = acc[s] + bias;                                                               \
            v = v > 0.0f ? v : 0.0f;                                                               \
            v = v < MAX ? v : MAX;                                                                 \
            out[s] = (T)(int)((v + magic) - magic);                                                \
        }                                                                                          \
    }
ROUND_BLOCK(round_block8, uint8_t, 255.0f)
ROUND_BLOCK(round_block16, uint16_t, 65535.0f)

/* Rounds m sums into sample s0 of an output row of the given type (float32:
 * the biased sums as they are). */
static void round_block(const float *acc, float bias, int type, void *out, int s0, int m)
{
    if (type == IC_F32) {
        float *restrict o = (float *)out + s0;
        for (int s = 0; s < m; s++)
            o[s] = acc[s] + bias;
    } else if (type == IC_U16)
        round_block16(acc, bias, (uint16_t *)out + s0, m);
    else
        round_block8(acc, bias, (uint8_t *)out + s0, m);
}

#define WIDEN_SCALAR(NAME, T)                                                                      \
    static void NAME(const T *restrict src, float *restrict dst, int n)                            \
    {                                                                                              \
        for (int k = 0; k < n; k++)                                                                \
            dst[k] = (float)src[k];                                                                \
    }
WIDEN_SCALAR(widen_scalar, uint8_t)
WIDEN_SCALAR(widen16_scalar, uint16_t)

/* Premultiplied alpha: sums of m samples (whole pixels of ch channels) to
 * colour = FA > 0 ? FC / FA : 0 and alpha = FA, in place. */
static void unpremul_block(float *acc, int ch, int m)
{
    for (int p = 0; p < m; p += ch) {
        const float fa = acc[p + ch - 1];
        for (int c = 0; c < ch - 1; c++)
            acc[p + c] = fa > 0.0f ? acc[p + c] / fa : 0.0f;
    }
}

static void direct_row(const float *const *rows, const float *w, int kw, int kh, int step,
                       float bias, int premul, int type, void *out, int n)
{
    float acc[BLK];
    for (int s0 = 0; s0 < n; s0 += BLK) {
        int m = n - s0 < BLK ? n - s0 : BLK;
        for (int s = 0; s < m; s++)
            acc[s] = 0.0f;
        for (int j = 0; j < kh; j++) {
            for (int i = 0; i < kw; i++) {
                const float wt = w[j * kw + i];
                const float *restrict p = rows[j] + s0 + i * step;
                for (int s = 0; s < m; s++)
                    acc[s] += wt * p[s];
            }
        }
        if (premul) /* BLK is a multiple of 2 and 4: blocks hold whole pixels */
            unpremul_block(acc, step, m);
        round_block(acc, bias, type, out, s0, m);
    }
}

static void direct_scalar(const float *const *rows, const float *w, int kw, int kh, int step,
                          float bias, int premul, int type, void *out, void *out1, int n)
{
    direct_row(rows, w, kw, kh, step, bias, premul, type, out, n);
    if (out1)
        direct_row(rows + 1, w, kw, kh, step, bias, premul, type, out1, n);
}

static void vpass_scalar(const float *const *rows, const float *col, int kh, float *restrict t,
                         int n)
{
    for (int s = 0; s < n; s++)
        t[s] = 0.0f;
    for (int j = 0; j < kh; j++) {
        const float cj = col[j];
        const float *restrict p = rows[j];
        for (int s = 0; s < n; s++)
            t[s] += cj * p[s];
    }
}

static void hpass_scalar(const float *t, const float *row, int kw, int step, const float *acc_in,
                         float *acc_out, float bias, int premul, int type, void *out, int n)
{
    float acc[BLK];
    for (int s0 = 0; s0 < n; s0 += BLK) {
        int m = n - s0 < BLK ? n - s0 : BLK;
        for (int s = 0; s < m; s++)
            acc[s] = acc_in ? acc_in[s0 + s] : 0.0f;
        for (int i = 0; i < kw; i++) {
            const float ri = row[i];
            const float *restrict p = t + s0 + i * step;
            for (int s = 0; s < m; s++)
                acc[s] += ri * p[s];
        }
        if (out) {
            if (premul)
                unpremul_block(acc, step, m);
            round_block(acc, bias, type, out, s0, m);
        } else {
            for (int s = 0; s < m; s++)
                acc_out[s0 + s] = acc[s];
        }
    }
}

static void premul_scalar(float *row, int ch, int n)
{
    for (int p = 0; p < n; p += ch)
        for (int c = 0; c < ch - 1; c++)
            row[p + c] *= row[p + ch - 1];
}

const cpu_ops ic_cpu_ops_scalar = {
    "scalar",     widen_scalar, widen16_scalar, direct_scalar,
    vpass_scalar, hpass_scalar, premul_scalar,
};
