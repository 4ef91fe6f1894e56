/*
 * cpu_simd_body.h - the vector inner loops of the `cpu` backend, written once
 * and included by one file per instruction set (cpu_simd_avx2.c,
 * cpu_simd_avx512.c), which first define:
 *
 *   SIMD_TGT          function attribute enabling the ISA (target("..."))
 *   SIMD_NAME         "avx2", ...
 *   V, VL             float vector type and its lane count
 *   VLOAD/VSTORE      unaligned load/store of VL floats
 *   VZERO(), VSET1(x), VFMA(a, b, c) = a*b + c, VADD(a, b)
 *   simd_widen(p)     VL uint8 at p -> V
 *   simd_widen16(p)   VL uint16 at p -> V
 *   simd_put(out, a, nv)   rounds nv vectors (already biased) to uint8 at out
 *   simd_put_part(out, a, m) the same for the first m < VL lanes of one vector
 *   simd_put16, simd_put16_part  the same to uint16 (clamped to 65535)
 *   VMUL(a, b)        a*b
 *   simd_alpha_or_one(a, ch)  per pixel of ch = 2 or 4 lanes: its alpha lane
 *                     in the colour lanes, 1 in the alpha lane
 *   simd_colour(a, ch)  per pixel: colour lanes FC/FA (0 where FA <= 0, FA
 *                     being the pixel's alpha lane), the alpha lane FA
 *
 * Premultiplied alpha (premul nonzero; step is then the channel count, 2 or
 * 4, and VL a multiple of 4, so every vector holds whole pixels): the sums are
 * un-premultiplied in registers right before they are rounded (simd_finish).
 *
 * Rounding in simd_put* must be ic_round_u8's: clamp to [0, 255] (NaN -> 0),
 * then round to nearest even (cvtps2dq in the default MXCSR mode); simd_put16*
 * is ic_round_u16 (clamp to [0, 65535]).
 *
 * 16-bit and float samples: every loop takes `type` (an ic_sample_type) as a
 * compile-time constant (the exported functions branch on it once per row and
 * call an instance), so the uint8 instances are the code they were before the
 * other types existed. Float32 outputs are the biased sums stored as they are.
 *
 * The loops are seed 004's weighted sum vectorised across x: NACC independent
 * accumulators of VL samples hide the FMA latency; taps are broadcast from the
 * weight array. Common kernel sizes are instantiated with constant kw, kh so
 * the compiler unrolls the taps. Loads may run up to VL-1 floats past n: the
 * rows carry CPU_SLACK floats of slack (cpu_internal.h).
 */
#ifndef SIMD_TGT
#error "include cpu_simd_body.h from an ISA file that defines SIMD_TGT and friends"
#endif

#include <stdint.h>
#include <string.h>

/* Independent accumulators per iteration: two FMA pipes x 4 cycles latency. */
#define NACC CPU_NACC

#define SIMD_INLINE SIMD_TGT static inline __attribute__((always_inline))

#define SIMD_WIDEN_ROW(NAME, T, WIDEN)                                                             \
    SIMD_TGT static void NAME(const T *src, float *dst, int n)                                     \
    {                                                                                              \
        int k = 0;                                                                                 \
        for (; k + VL <= n; k += VL)                                                               \
            VSTORE(dst + k, WIDEN(src + k));                                                       \
        for (; k < n; k++)                                                                         \
            dst[k] = (float)src[k];                                                                \
    }
SIMD_WIDEN_ROW(simd_widen_row, uint8_t, simd_widen)
SIMD_WIDEN_ROW(simd_widen16_row, uint16_t, simd_widen16)

/* nv rounded vectors at output sample s of a row of the type (float32: stored
 * as they are). */
SIMD_INLINE void put_any(void *out, int s, const V *a, int nv, const int type)
{
    if (type == IC_F32)
        for (int v = 0; v < nv; v++)
            VSTORE((float *)out + s + v * VL, a[v]);
    else if (type == IC_U16)
        simd_put16((uint16_t *)out + s, a, nv);
    else
        simd_put((uint8_t *)out + s, a, nv);
}

/* The first m < VL lanes of a at output sample s. */
SIMD_INLINE void put_part_any(void *out, int s, V a, int m, const int type)
{
    if (type == IC_F32) {
        float lanes[VL];
        VSTORE(lanes, a);
        memcpy((float *)out + s, lanes, (size_t)m * sizeof(float));
    } else if (type == IC_U16)
        simd_put16_part((uint16_t *)out + s, a, m);
    else
        simd_put_part((uint8_t *)out + s, a, m);
}

/* A vector of sums made ready for rounding: un-premultiplied when premul
 * (step = channels), then biased. */
SIMD_INLINE V simd_finish(V a, V vb, const int premul, const int step)
{
    if (premul && (step == 2 || step == 4))
        a = simd_colour(a, step);
    return VADD(a, vb);
}

/* out[s] = round(bias + sum_j sum_i w[j*kw+i] * rows[j][s + i*step]) for
 * s0 <= s < n (un-premultiplied first when premul) */
SIMD_INLINE void direct_k(const float *const *rows, const float *w, const int kw, const int kh,
                          const int step, float bias, const int premul, const int type, void *out,
                          int s0, int n)
{
    const V vb = VSET1(bias);
    int s = s0;
    for (; s + NACC * VL <= n; s += NACC * VL) {
        V a[NACC];
        for (int v = 0; v < NACC; v++)
            a[v] = VZERO();
        for (int j = 0; j < kh; j++) {
            const float *r = rows[j] + s;
            for (int i = 0; i < kw; i++) {
                const V wv = VSET1(w[j * kw + i]);
                const float *p = r + i * step;
                for (int v = 0; v < NACC; v++)
                    a[v] = VFMA(wv, VLOAD(p + v * VL), a[v]);
            }
        }
        for (int v = 0; v < NACC; v++)
            a[v] = simd_finish(a[v], vb, premul, step);
        put_any(out, s, a, NACC, type);
    }
    for (; s < n; s += VL) {
        V a = VZERO();
        for (int j = 0; j < kh; j++) {
            const float *r = rows[j] + s;
            for (int i = 0; i < kw; i++)
                a = VFMA(VSET1(w[j * kw + i]), VLOAD(r + i * step), a);
        }
        a = simd_finish(a, vb, premul, step);
        if (n - s >= VL)
            put_any(out, s, &a, 1, type);
        else
            put_part_any(out, s, a, n - s, type);
    }
}

/* Two output rows at once: rows[0..kh] feed out0 (through rows 0..kh-1) and
 * out1 (rows 1..kh), so every vector loaded serves both rows and the loads per
 * output fall from kw*kh to kw*(kh+1)/2 (the general kernels are bound by
 * loads, half of them split across cache lines in AoS). NACC/2 accumulators
 * per row keep the NACC chains the FMA latency needs. */
SIMD_INLINE void direct2_k(const float *const *rows, const float *w, const int kw, const int kh,
                           const int step, float bias, const int premul, const int type, void *out0,
                           void *out1, int n)
{
    enum { H = NACC / 2 };
    const V vb = VSET1(bias);
    int s = 0;
    for (; s + H * VL <= n; s += H * VL) {
        V a0[H], a1[H];
        for (int v = 0; v < H; v++)
            a0[v] = a1[v] = VZERO();
        for (int r = 0; r <= kh; r++) {
            const float *p = rows[r] + s;
            for (int i = 0; i < kw; i++) {
                V x[H];
                for (int v = 0; v < H; v++)
                    x[v] = VLOAD(p + i * step + v * VL);
                if (r < kh) {
                    const V wv = VSET1(w[r * kw + i]);
                    for (int v = 0; v < H; v++)
                        a0[v] = VFMA(wv, x[v], a0[v]);
                }
                if (r > 0) {
                    const V wv = VSET1(w[(r - 1) * kw + i]);
                    for (int v = 0; v < H; v++)
                        a1[v] = VFMA(wv, x[v], a1[v]);
                }
            }
        }
        for (int v = 0; v < H; v++) {
            a0[v] = simd_finish(a0[v], vb, premul, step);
            a1[v] = simd_finish(a1[v], vb, premul, step);
        }
        put_any(out0, s, a0, H, type);
        put_any(out1, s, a1, H, type);
    }
    if (s < n) {
        direct_k(rows, w, kw, kh, step, bias, premul, type, out0, s, n);
        direct_k(rows + 1, w, kw, kh, step, bias, premul, type, out1, s, n);
    }
}

/* One row (out1 NULL) or two (rows has kh+1 entries). */
SIMD_INLINE void direct_any(const float *const *rows, const float *w, const int kw, const int kh,
                            const int step, float bias, const int premul, const int type, void *out,
                            void *out1, int n)
{
    if (out1)
        direct2_k(rows, w, kw, kh, step, bias, premul, type, out, out1, n);
    else
        direct_k(rows, w, kw, kh, step, bias, premul, type, out, 0, n);
}

/* Instances with constant kw, kh and step: the taps unroll and every load
 * address becomes a constant displacement from one row pointer (with a
 * variable step, a 5x5 kernel spills its 25 tap pointers to the stack). */
#define DIRECT_STEPS(KW, KH)                                                                       \
    switch (step) {                                                                                \
    case 1:                                                                                        \
        direct_any(rows, w, KW, KH, 1, bias, premul, type, out, out1, n);                          \
        return;                                                                                    \
    case 2:                                                                                        \
        direct_any(rows, w, KW, KH, 2, bias, premul, type, out, out1, n);                          \
        return;                                                                                    \
    case 3:                                                                                        \
        direct_any(rows, w, KW, KH, 3, bias, premul, type, out, out1, n);                          \
        return;                                                                                    \
    default:                                                                                       \
        direct_any(rows, w, KW, KH, 4, bias, premul, type, out, out1, n);                          \
        return;                                                                                    \
    }

SIMD_INLINE void direct_typed(const float *const *rows, const float *w, int kw, int kh, int step,
                              float bias, int premul, const int type, void *out, void *out1, int n)
{
    if (kw == 3 && kh == 3)
        DIRECT_STEPS(3, 3)
    if (kw == 5 && kh == 5)
        DIRECT_STEPS(5, 5)
    if (kw == 7 && kh == 7)
        DIRECT_STEPS(7, 7)
    if (premul && step == 4) /* un-premultiplying needs a constant step */
        direct_any(rows, w, kw, kh, 4, bias, premul, type, out, out1, n);
    else if (premul)
        direct_any(rows, w, kw, kh, 2, bias, premul, type, out, out1, n);
    else
        direct_any(rows, w, kw, kh, step, bias, premul, type, out, out1, n);
}

SIMD_TGT static void simd_direct(const float *const *rows, const float *w, int kw, int kh, int step,
                                 float bias, int premul, int type, void *out, void *out1, int n)
{
    if (type == IC_F32)
        direct_typed(rows, w, kw, kh, step, bias, premul, IC_F32, out, out1, n);
    else if (type == IC_U16)
        direct_typed(rows, w, kw, kh, step, bias, premul, IC_U16, out, out1, n);
    else
        direct_typed(rows, w, kw, kh, step, bias, premul, 0, out, out1, n);
}

/* t[s] = sum_j col[j] * rows[j][s] */
SIMD_TGT static void simd_vpass(const float *const *rows, const float *col, int kh, float *t, int n)
{
    int s = 0;
    for (; s + NACC * VL <= n; s += NACC * VL) {
        V a[NACC];
        for (int v = 0; v < NACC; v++)
            a[v] = VZERO();
        for (int j = 0; j < kh; j++) {
            const V cj = VSET1(col[j]);
            const float *p = rows[j] + s;
            for (int v = 0; v < NACC; v++)
                a[v] = VFMA(cj, VLOAD(p + v * VL), a[v]);
        }
        for (int v = 0; v < NACC; v++)
            VSTORE(t + s + v * VL, a[v]);
    }
    for (; s < n; s += VL) {
        V a = VZERO();
        for (int j = 0; j < kh; j++)
            a = VFMA(VSET1(col[j]), VLOAD(rows[j] + s), a);
        VSTORE(t + s, a); /* may run into t's slack */
    }
}

/* sum = acc_in[s] + sum_i row[i] * t[s + i*step]; stored rounded or as float */
SIMD_INLINE void hpass_k(const float *t, const float *row, const int kw, const int step,
                         const float *acc_in, float *acc_out, float bias, const int premul,
                         const int type, void *out, int n)
{
    const V vb = VSET1(bias);
    int s = 0;
    for (; s + NACC * VL <= n; s += NACC * VL) {
        V a[NACC];
        for (int v = 0; v < NACC; v++)
            a[v] = acc_in ? VLOAD(acc_in + s + v * VL) : VZERO();
        for (int i = 0; i < kw; i++) {
            const V ri = VSET1(row[i]);
            const float *p = t + s + i * step;
            for (int v = 0; v < NACC; v++)
                a[v] = VFMA(ri, VLOAD(p + v * VL), a[v]);
        }
        if (out) {
            for (int v = 0; v < NACC; v++)
                a[v] = simd_finish(a[v], vb, premul, step);
            put_any(out, s, a, NACC, type);
        } else {
            for (int v = 0; v < NACC; v++)
                VSTORE(acc_out + s + v * VL, a[v]);
        }
    }
    for (; s < n; s += VL) {
        V a = acc_in ? VLOAD(acc_in + s) : VZERO();
        for (int i = 0; i < kw; i++)
            a = VFMA(VSET1(row[i]), VLOAD(t + s + i * step), a);
        if (!out)
            VSTORE(acc_out + s, a); /* may run into the slack */
        else if (n - s >= VL) {
            a = simd_finish(a, vb, premul, step);
            put_any(out, s, &a, 1, type);
        } else {
            a = simd_finish(a, vb, premul, step);
            put_part_any(out, s, a, n - s, type);
        }
    }
}

#define HPASS_STEPS(KW)                                                                            \
    switch (step) {                                                                                \
    case 1:                                                                                        \
        hpass_k(t, row, KW, 1, acc_in, acc_out, bias, premul, type, out, n);                       \
        return;                                                                                    \
    case 2:                                                                                        \
        hpass_k(t, row, KW, 2, acc_in, acc_out, bias, premul, type, out, n);                       \
        return;                                                                                    \
    case 3:                                                                                        \
        hpass_k(t, row, KW, 3, acc_in, acc_out, bias, premul, type, out, n);                       \
        return;                                                                                    \
    default:                                                                                       \
        hpass_k(t, row, KW, 4, acc_in, acc_out, bias, premul, type, out, n);                       \
        return;                                                                                    \
    }

SIMD_INLINE void hpass_typed(const float *t, const float *row, int kw, int step,
                             const float *acc_in, float *acc_out, float bias, int premul,
                             const int type, void *out, int n)
{
    if (kw == 3)
        HPASS_STEPS(3)
    if (kw == 5)
        HPASS_STEPS(5)
    if (kw == 7)
        HPASS_STEPS(7)
    if (kw == 9)
        HPASS_STEPS(9)
    if (premul && step == 4)
        hpass_k(t, row, kw, 4, acc_in, acc_out, bias, premul, type, out, n);
    else if (premul)
        hpass_k(t, row, kw, 2, acc_in, acc_out, bias, premul, type, out, n);
    else
        hpass_k(t, row, kw, step, acc_in, acc_out, bias, premul, type, out, n);
}

SIMD_TGT static void simd_hpass(const float *t, const float *row, int kw, int step,
                                const float *acc_in, float *acc_out, float bias, int premul,
                                int type, void *out, int n)
{
    if (type == IC_F32)
        hpass_typed(t, row, kw, step, acc_in, acc_out, bias, premul, IC_F32, out, n);
    else if (type == IC_U16)
        hpass_typed(t, row, kw, step, acc_in, acc_out, bias, premul, IC_U16, out, n);
    else
        hpass_typed(t, row, kw, step, acc_in, acc_out, bias, premul, 0, out, n);
}

/* cpu_ops.premul: colour lanes times their pixel's alpha lane. */
SIMD_INLINE void premul_k(float *row, const int ch, int n)
{
    int s = 0;
    for (; s + VL <= n; s += VL) {
        V a = VLOAD(row + s);
        VSTORE(row + s, VMUL(a, simd_alpha_or_one(a, ch)));
    }
    for (; s < n; s += ch)
        for (int c = 0; c < ch - 1; c++)
            row[s + c] *= row[s + ch - 1];
}

SIMD_TGT static void simd_premul(float *row, int ch, int n)
{
    if (ch == 4)
        premul_k(row, 4, n);
    else
        premul_k(row, 2, n);
}

static const cpu_ops simd_ops = {
    SIMD_NAME, simd_widen_row, simd_widen16_row, simd_direct, simd_vpass, simd_hpass, simd_premul,
};
