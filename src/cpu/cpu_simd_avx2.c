/*
 * cpu_simd_avx2.c - the AVX2+FMA instance of the `cpu` backend's vector loops
 * (cpu_simd_body.h). Only the functions here are compiled for AVX2 (function
 * target attributes), so the rest of the binary stays SSE2 and runs on any
 * x86-64; ic_cpu_ops_avx2() returns the table only when the CPU has AVX2 and
 * FMA (__builtin_cpu_supports).
 */
#include <string.h>

#include "cpu/cpu_internal.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>

#define SIMD_TGT __attribute__((target("avx2,fma")))
#define SIMD_NAME "avx2"
typedef __m256 V;
#define VL 8
#define VLOAD(p) _mm256_loadu_ps(p)
#define VSTORE(p, v) _mm256_storeu_ps((p), (v))
#define VZERO() _mm256_setzero_ps()
#define VSET1(x) _mm256_set1_ps(x)
#define VFMA(a, b, c) _mm256_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm256_add_ps((a), (b))

SIMD_TGT static inline V simd_widen(const uint8_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)));
}

/* ic_round_u8 on 8 lanes: max(v, 0) turns NaN into 0 (maxps returns its second
 * operand when the first is NaN), min caps at 255, cvtps2dq rounds to nearest
 * even, and the saturating packs then cannot clip. */
SIMD_TGT static inline __m256i simd_round(V v)
{
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(255.0f));
    return _mm256_cvtps_epi32(v);
}

/* Packs 8 rounded lanes into the low 8 bytes. */
SIMD_TGT static inline __m128i simd_pack8(V v)
{
    __m256i i = simd_round(v);
    __m128i w = _mm_packs_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
    return _mm_packus_epi16(w, w);
}

SIMD_TGT static inline void simd_put(uint8_t *out, const V *a, int nv)
{
    int v = 0;
    for (; v + 4 <= nv; v += 4) {
        /* packs/packus work per 128-bit lane; the permute restores x order */
        __m256i p01 = _mm256_packs_epi32(simd_round(a[v]), simd_round(a[v + 1]));
        __m256i p23 = _mm256_packs_epi32(simd_round(a[v + 2]), simd_round(a[v + 3]));
        __m256i b = _mm256_packus_epi16(p01, p23);
        b = _mm256_permutevar8x32_epi32(b, _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7));
        _mm256_storeu_si256((__m256i *)(out + v * VL), b);
    }
    for (; v < nv; v++)
        _mm_storel_epi64((__m128i *)(out + v * VL), simd_pack8(a[v]));
}

SIMD_TGT static inline void simd_put_part(uint8_t *out, V a, int m)
{
    uint8_t tmp[16];
    _mm_storel_epi64((__m128i *)tmp, simd_pack8(a));
    memcpy(out, tmp, (size_t)m);
}

SIMD_TGT static inline V simd_widen16(const uint16_t *p)
{
    return _mm256_cvtepi32_ps(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* ic_round_u16 on 8 lanes: clamp to [0, 65535] (NaN -> 0), round to nearest
 * even; packus_epi32 then narrows without clipping. */
SIMD_TGT static inline __m256i simd_round16(V v)
{
    v = _mm256_min_ps(_mm256_max_ps(v, _mm256_setzero_ps()), _mm256_set1_ps(65535.0f));
    return _mm256_cvtps_epi32(v);
}

SIMD_TGT static inline __m128i simd_pack8x16(V v)
{
    __m256i i = simd_round16(v);
    return _mm_packus_epi32(_mm256_castsi256_si128(i), _mm256_extracti128_si256(i, 1));
}

SIMD_TGT static inline void simd_put16(uint16_t *out, const V *a, int nv)
{
    int v = 0;
    for (; v + 2 <= nv; v += 2) {
        /* packus works per 128-bit lane; the permute restores x order */
        __m256i p = _mm256_packus_epi32(simd_round16(a[v]), simd_round16(a[v + 1]));
        _mm256_storeu_si256((__m256i *)(out + v * VL), _mm256_permute4x64_epi64(p, 0xD8));
    }
    for (; v < nv; v++)
        _mm_storeu_si128((__m128i *)(out + v * VL), simd_pack8x16(a[v]));
}

SIMD_TGT static inline void simd_put16_part(uint16_t *out, V a, int m)
{
    uint16_t tmp[8];
    _mm_storeu_si128((__m128i *)tmp, simd_pack8x16(a));
    memcpy(out, tmp, (size_t)m * sizeof *out);
}

#define VMUL(a, b) _mm256_mul_ps((a), (b))

/* Per pixel of 4 (or 2) lanes: alpha lane spread over the colour lanes, 1 in
 * the alpha lane (permute works within 128-bit halves, which hold whole pixels). */
SIMD_TGT static inline V simd_alpha_or_one(V a, int ch)
{
    const V one = _mm256_set1_ps(1.0f);
    if (ch == 4)
        return _mm256_blend_ps(_mm256_permute_ps(a, 0xFF), one, 0x88);
    return _mm256_blend_ps(_mm256_permute_ps(a, 0xF5), one, 0xAA);
}

/* Colour lanes FC/FA where FA > 0, else 0; the alpha lane keeps FA. The
 * quotient uses rcpps and one Newton step (within 2 ulp of FC/FA): vdivps
 * would cost as much as the separable 9x9's arithmetic. FA below FLT_MIN
 * (weights under 1e-38) counts as FLT_MIN. */
SIMD_TGT static inline V simd_colour(V a, int ch)
{
    const V fa = ch == 4 ? _mm256_permute_ps(a, 0xFF) : _mm256_permute_ps(a, 0xF5);
    const V d = _mm256_max_ps(fa, _mm256_set1_ps(0x1p-126f));
    V r = _mm256_rcp_ps(d);
    r = _mm256_mul_ps(r, _mm256_fnmadd_ps(d, r, _mm256_set1_ps(2.0f)));
    V q = _mm256_mul_ps(a, r);
    q = _mm256_and_ps(_mm256_cmp_ps(fa, _mm256_setzero_ps(), _CMP_GT_OQ), q);
    return ch == 4 ? _mm256_blend_ps(q, a, 0x88) : _mm256_blend_ps(q, a, 0xAA);
}

#include "cpu/cpu_simd_body.h"

const cpu_ops *ic_cpu_ops_avx2(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        return &simd_ops;
    return NULL;
}

#else

const cpu_ops *ic_cpu_ops_avx2(void)
{
    return NULL;
}

#endif
