/*
 * cpu_simd_avx512.c - the AVX-512 (F+BW) instance of the `cpu` backend's
 * vector loops (cpu_simd_body.h), 16 floats per vector. Compiled with function
 * target attributes only; ic_cpu_ops_avx512() returns the table only when the
 * CPU has AVX-512F and AVX-512BW.
 */
#include <string.h>

#include "cpu/cpu_internal.h"

#if (defined(__x86_64__) || defined(__i386__)) && defined(__GNUC__)
#include <immintrin.h>

#define SIMD_TGT __attribute__((target("avx512f,avx512bw,fma")))
#define SIMD_NAME "avx512"
typedef __m512 V;
#define VL 16
#define VLOAD(p) _mm512_loadu_ps(p)
#define VSTORE(p, v) _mm512_storeu_ps((p), (v))
#define VZERO() _mm512_setzero_ps()
#define VSET1(x) _mm512_set1_ps(x)
#define VFMA(a, b, c) _mm512_fmadd_ps((a), (b), (c))
#define VADD(a, b) _mm512_add_ps((a), (b))

SIMD_TGT static inline V simd_widen(const uint8_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)p)));
}

/* ic_round_u8 on 16 lanes: clamp (NaN -> 0, as in the AVX2 file), round to
 * nearest even (cvtps2dq, default MXCSR), narrow with unsigned saturation. */
SIMD_TGT static inline __m128i simd_pack16(V v)
{
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(255.0f));
    return _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));
}

SIMD_TGT static inline void simd_put(uint8_t *out, const V *a, int nv)
{
    for (int v = 0; v < nv; v++)
        _mm_storeu_si128((__m128i *)(out + v * VL), simd_pack16(a[v]));
}

SIMD_TGT static inline void simd_put_part(uint8_t *out, V a, int m)
{
    uint8_t tmp[16];
    _mm_storeu_si128((__m128i *)tmp, simd_pack16(a));
    memcpy(out, tmp, (size_t)m);
}

SIMD_TGT static inline V simd_widen16(const uint16_t *p)
{
    return _mm512_cvtepi32_ps(_mm512_cvtepu16_epi32(_mm256_loadu_si256((const __m256i *)p)));
}

/* ic_round_u16 on 16 lanes: clamp to [0, 65535], round, narrow. */
SIMD_TGT static inline __m256i simd_pack16x16(V v)
{
    v = _mm512_min_ps(_mm512_max_ps(v, _mm512_setzero_ps()), _mm512_set1_ps(65535.0f));
    return _mm512_cvtusepi32_epi16(_mm512_cvtps_epi32(v));
}

SIMD_TGT static inline void simd_put16(uint16_t *out, const V *a, int nv)
{
    for (int v = 0; v < nv; v++)
        _mm256_storeu_si256((__m256i *)(out + v * VL), simd_pack16x16(a[v]));
}

SIMD_TGT static inline void simd_put16_part(uint16_t *out, V a, int m)
{
    uint16_t tmp[16];
    _mm256_storeu_si256((__m256i *)tmp, simd_pack16x16(a));
    memcpy(out, tmp, (size_t)m * sizeof *out);
}

#define VMUL(a, b) _mm512_mul_ps((a), (b))

/* Per pixel of 4 (or 2) lanes: alpha lane spread over the colour lanes, 1 in
 * the alpha lane (permute works within 128-bit quarters, which hold whole pixels). */
SIMD_TGT static inline V simd_alpha_or_one(V a, int ch)
{
    const V one = _mm512_set1_ps(1.0f);
    if (ch == 4)
        return _mm512_mask_blend_ps(0x8888, _mm512_permute_ps(a, 0xFF), one);
    return _mm512_mask_blend_ps(0xAAAA, _mm512_permute_ps(a, 0xF5), one);
}

/* Colour lanes FC/FA where FA > 0, else 0; the alpha lane keeps FA. The
 * quotient uses rcp14 and one Newton step (within 1 ulp of FC/FA), as the
 * AVX2 file does; FA below FLT_MIN counts as FLT_MIN. */
SIMD_TGT static inline V simd_colour(V a, int ch)
{
    const V fa = ch == 4 ? _mm512_permute_ps(a, 0xFF) : _mm512_permute_ps(a, 0xF5);
    const __mmask16 pos = _mm512_cmp_ps_mask(fa, _mm512_setzero_ps(), _CMP_GT_OQ);
    const V d = _mm512_max_ps(fa, _mm512_set1_ps(0x1p-126f));
    V r = _mm512_rcp14_ps(d);
    r = _mm512_mul_ps(r, _mm512_fnmadd_ps(d, r, _mm512_set1_ps(2.0f)));
    const V q = _mm512_maskz_mov_ps(pos, _mm512_mul_ps(a, r));
    return _mm512_mask_blend_ps(ch == 4 ? 0x8888 : 0xAAAA, q, a);
}

#include "cpu/cpu_simd_body.h"

const cpu_ops *ic_cpu_ops_avx512(void)
{
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw"))
        return &simd_ops;
    return NULL;
}

#else

const cpu_ops *ic_cpu_ops_avx512(void)
{
    return NULL;
}

#endif
