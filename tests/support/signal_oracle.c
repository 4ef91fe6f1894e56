/*
 * signal_oracle.c - float64 references and suites for ic_conv1d_f32/u8,
 * ic_stencil1d and ic_matmul (see signal_oracle.h). Worked examples are
 * written out by hand below; random cases are seeded (ICT_SEED overrides the
 * seed) and every failure prints the seed and the parameters of its case.
 */
#include "signal_oracle.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle.h"
#include "testutil.h"

#define SIGNAL_SEED 0x5161A1ull

/* ---- references --------------------------------------------------------------- */

double ict_conv1d_at(const double *x, int n, const float *k, int klen, const ic_params *p, int i,
                     double *mag)
{
    const int c = (klen - 1) / 2;
    double sum = 0.0, m = 0.0;
    for (int j = 0; j < klen; j++) {
        /* convolution: out[i] = sum_j k[j] in[i - j + c]; correlation: in[i + j - c] */
        const int at = p->correlate ? i + j - c : i - j + c;
        const int s = ict_border_map(at, n, p->border);
        const double term = (double)k[j] * (s < 0 ? (double)p->border_value : x[s]);
        sum += term;
        m += fabs(term);
    }
    if (mag)
        *mag = m + fabs((double)p->bias);
    return sum + (double)p->bias;
}

void ict_matmul_ref(const float *A, const float *B, int M, int K, int N, double *C, double *mag)
{
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            double s = 0.0, m = 0.0;
            for (int k = 0; k < K; k++) {
                const double t = (double)A[(size_t)i * K + k] * (double)B[(size_t)k * N + j];
                s += t;
                m += fabs(t);
            }
            C[(size_t)i * N + j] = s;
            if (mag)
                mag[(size_t)i * N + j] = m;
        }
}

double ict_sum_tolerance(int terms, double mag)
{
    return ((double)terms + 2.0) * ldexp(1.0, -23) * mag + 1e-30;
}

/* IC_TEST_QUICK=1 (scripts/gpu-check.sh under compute-sanitizer): fewer,
 * smaller cases. */
static int quick(void)
{
    const char *q = getenv("IC_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

static uint64_t run_seed(void)
{
    const char *s = getenv("ICT_SEED");
    return s && *s ? strtoull(s, NULL, 0) : SIGNAL_SEED;
}

/* ---- 1D cases ------------------------------------------------------------------ */

/* Everything that defines one 1D call, for messages. */
typedef struct c1 {
    const char *backend;
    const char *label;
    uint64_t seed; /* 0 for worked examples */
    int n, klen, u8;
    ic_params p;
} c1;

static void c1_print(const c1 *c)
{
    printf("     backend=%s case=%s seed=0x%llx n=%d klen=%d %s border=%s value=%g %s bias=%g\n",
           c->backend, c->label, (unsigned long long)c->seed, c->n, c->klen,
           c->u8 ? "uint8" : "float32", ict_border_str(c->p.border), (double)c->p.border_value,
           c->p.correlate ? "correlation" : "convolution", (double)c->p.bias);
}

static ic_params params(ic_border b, float value, int correlate, float bias)
{
    ic_params p;
    ic_params_default(&p);
    p.border = b;
    p.border_value = value;
    p.correlate = correlate;
    p.bias = bias;
    return p;
}

/* Runs the case on c->backend; returns the status and prints it when not OK. */
static ic_status c1_run(const c1 *c, const void *in, void *out, const float *k)
{
    const ic_status s = c->u8 ? ic_conv1d_u8((const uint8_t *)in, (uint8_t *)out, (size_t)c->n, k,
                                             c->klen, &c->p, c->backend)
                              : ic_conv1d_f32((const float *)in, (float *)out, (size_t)c->n, k,
                                              c->klen, &c->p, c->backend);
    if (s != IC_OK) {
        printf("FAIL %s: %s: %s\n", c->label, ic_status_str(s), ic_last_error());
        c1_print(c);
    }
    return s;
}

/* Compares every output with the reference; returns 1 on a mismatch. */
static int c1_check(const c1 *c, const double *x, const float *k, const void *out)
{
    for (int i = 0; i < c->n; i++) {
        double mag;
        const double want = ict_conv1d_at(x, c->n, k, c->klen, &c->p, i, &mag);
        const double tol = ict_sum_tolerance(c->klen + 1, mag);
        if (c->u8) {
            const int got = ((const uint8_t *)out)[i];
            const int lo = ict_round(want - tol), hi = ict_round(want + tol);
            if (got < lo || got > hi) {
                printf("FAIL %s: out[%d] = %d, want %d (float64 %.9g, tolerance %.3g)\n", c->label,
                       i, got, ict_round(want), want, tol);
                c1_print(c);
                return 1;
            }
        } else {
            const double got = ((const float *)out)[i];
            if (!(fabs(got - want) <= tol)) {
                printf("FAIL %s: out[%d] = %.9g, want %.9g (error %.3g > tolerance %.3g)\n",
                       c->label, i, got, want, fabs(got - want), tol);
                c1_print(c);
                return 1;
            }
        }
    }
    return 0;
}

/* A worked example on float samples: out must equal want exactly. */
static int example_f32(const char *backend, const char *label, const float *in, int n,
                       const float *k, int klen, ic_params p, const float *want)
{
    c1 c = {backend, label, 0, n, klen, 0, p};
    float out[64];
    if (c1_run(&c, in, out, k) != IC_OK)
        return 1;
    for (int i = 0; i < n; i++)
        if (out[i] != want[i]) {
            printf("FAIL %s: out[%d] = %.9g, want %.9g\n", label, i, (double)out[i],
                   (double)want[i]);
            c1_print(&c);
            return 1;
        }
    return 0;
}

static int example_u8(const char *backend, const char *label, const uint8_t *in, int n,
                      const float *k, int klen, ic_params p, const uint8_t *want)
{
    c1 c = {backend, label, 0, n, klen, 1, p};
    uint8_t out[64];
    if (c1_run(&c, in, out, k) != IC_OK)
        return 1;
    for (int i = 0; i < n; i++)
        if (out[i] != want[i]) {
            printf("FAIL %s: out[%d] = %d, want %d\n", label, i, out[i], want[i]);
            c1_print(&c);
            return 1;
        }
    return 0;
}

/* The seeds' examples and hand-computed cases, each value written out. */
static int worked_examples(const char *b)
{
    int f = 0;
    const ic_params zero = params(IC_BORDER_CONSTANT, 0, 0, 0);

    /* Seed 001: stencil_1d with RADIUS 3 sums 7 inputs; here over 1..50 (not a
     * multiple of the seed's BLOCK_SIZE 16) with the zero ghost cells. */
    {
        float in[50], out[50];
        for (int i = 0; i < 50; i++)
            in[i] = (float)(i + 1);
        const ic_status s = ic_stencil1d(in, out, 50, 3, NULL, b);
        const struct {
            int i;
            float v;
        } want[] = {{0, 10},   {1, 15},   {2, 21},   {3, 28},   {10, 77}, {15, 112},
                    {16, 119}, {46, 329}, {47, 285}, {48, 240}, {49, 194}};
        if (s != IC_OK) {
            printf("FAIL seed 001 stencil (radius 3, n 50) on %s: %s: %s\n", b, ic_status_str(s),
                   ic_last_error());
            f++;
        } else
            for (size_t j = 0; j < sizeof want / sizeof want[0]; j++)
                if (out[want[j].i] != want[j].v) {
                    printf("FAIL seed 001 stencil (radius 3, n 50) on %s: out[%d] = %g, want %g\n",
                           b, want[j].i, (double)out[want[j].i], (double)want[j].v);
                    f++;
                    break;
                }
    }

    /* Seed 002's convolution1D with zero halo cells, on a symmetric 5-tap mask:
     * in 1..7, mask 3 4 5 4 3; e.g. out[2] = 3*1 + 4*2 + 5*3 + 4*4 + 3*5 = 57. */
    {
        const float in[7] = {1, 2, 3, 4, 5, 6, 7}, k[5] = {3, 4, 5, 4, 3};
        const float want[7] = {22, 38, 57, 76, 95, 90, 74};
        f += example_f32(b, "seed 002 1D convolution, zero halos", in, 7, k, 5, zero, want);
    }

    /* Orientation: convolution with 1 0 -1 is in[i+1] - in[i-1]; correlation
     * is its negative. */
    {
        const float in[5] = {1, 2, 3, 4, 5}, k[3] = {1, 0, -1};
        const float conv[5] = {2, 2, 2, 2, -4}, corr[5] = {-2, -2, -2, -2, 4};
        f += example_f32(b, "convolution 1 0 -1", in, 5, k, 3, zero, conv);
        f += example_f32(b, "correlation 1 0 -1", in, 5, k, 3, params(IC_BORDER_CONSTANT, 0, 1, 0),
                         corr);
        const float k2[3] = {1, 2, 3};
        const float conv2[5] = {4, 10, 16, 22, 22}, corr2[5] = {8, 14, 20, 26, 14};
        f += example_f32(b, "convolution 1 2 3", in, 5, k2, 3, zero, conv2);
        f += example_f32(b, "correlation 1 2 3", in, 5, k2, 3, params(IC_BORDER_CONSTANT, 0, 1, 0),
                         corr2);
    }

    /* Every border mode on 1 2 4 8 with five ones: out[0] and out[3] reach two
     * cells past each end. */
    {
        const float in[4] = {1, 2, 4, 8}, k[5] = {1, 1, 1, 1, 1};
        const struct {
            ic_border b;
            float value;
            float want[4];
        } cases[] = {
            {IC_BORDER_CONSTANT, 10, {27, 25, 25, 34}}, /* 10 10 |1 2 4 8| 10 10 */
            {IC_BORDER_REPLICATE, 0, {9, 16, 23, 30}},  /* 1 1 |1 2 4 8| 8 8 */
            {IC_BORDER_MIRROR, 0, {13, 17, 19, 20}},    /* 4 2 |1 2 4 8| 4 2 */
            {IC_BORDER_REFLECT, 0, {10, 16, 23, 26}},   /* 2 1 |1 2 4 8| 8 4 */
            {IC_BORDER_WRAP, 0, {19, 23, 16, 17}},      /* 4 8 |1 2 4 8| 1 2 */
        };
        for (size_t j = 0; j < sizeof cases / sizeof cases[0]; j++) {
            char label[64];
            snprintf(label, sizeof label, "border %s on 1 2 4 8", ict_border_str(cases[j].b));
            f += example_f32(b, label, in, 4, k, 5, params(cases[j].b, cases[j].value, 0, 0),
                             cases[j].want);
        }
    }

    /* A kernel longer than the signal: seven ones over 1 2, reflections repeat. */
    {
        const float in[2] = {1, 2}, k[7] = {1, 1, 1, 1, 1, 1, 1};
        const float mirror[2] = {11, 10};    /* 2 1 2 |1 2| 1 2 1 2 */
        const float reflect[2] = {11, 10};   /* 2 2 1 |1 2| 2 1 1 2 */
        const float replicate[2] = {10, 11}; /* 1 1 1 |1 2| 2 2 2 */
        const float wrap[2] = {11, 10};      /* 2 1 2 |1 2| 1 2 1 2 */
        const float constant[2] = {3, 3};
        f += example_f32(b, "7 taps over 2 samples, mirror", in, 2, k, 7,
                         params(IC_BORDER_MIRROR, 0, 0, 0), mirror);
        f += example_f32(b, "7 taps over 2 samples, reflect", in, 2, k, 7,
                         params(IC_BORDER_REFLECT, 0, 0, 0), reflect);
        f += example_f32(b, "7 taps over 2 samples, replicate", in, 2, k, 7,
                         params(IC_BORDER_REPLICATE, 0, 0, 0), replicate);
        f += example_f32(b, "7 taps over 2 samples, wrap", in, 2, k, 7,
                         params(IC_BORDER_WRAP, 0, 0, 0), wrap);
        f += example_f32(b, "7 taps over 2 samples, constant 0", in, 2, k, 7, zero, constant);
    }

    /* Bias is added after the sum. */
    {
        const float in[3] = {1, 2, 3}, k[1] = {2};
        const float want[3] = {2.5f, 4.5f, 6.5f};
        f += example_f32(b, "bias 0.5", in, 3, k, 1, params(IC_BORDER_CONSTANT, 0, 0, 0.5f), want);
    }

    /* uint8: halves round to even, results clamp to 0..255. */
    {
        const uint8_t in[3] = {5, 9, 5};
        const float k[3] = {0.5f, 0, 0.5f};
        const uint8_t want[3] = {4, 5, 4}; /* 4.5 -> 4, 5, 4.5 -> 4 */
        f += example_u8(b, "uint8 ties to even", in, 3, k, 3, zero, want);
        const uint8_t in2[4] = {1, 2, 3, 4};
        const uint8_t want2[4] = {1, 2, 3, 2}; /* 1, 2, 3, 1.5 -> 2 */
        f += example_u8(b, "uint8 ties to even at the edge", in2, 4, k, 3, zero, want2);
        const uint8_t in3[3] = {3, 200, 0};
        const float k3[1] = {100};
        const uint8_t want3[3] = {255, 255, 0};
        f += example_u8(b, "uint8 clamps above", in3, 3, k3, 1, zero, want3);
        const uint8_t want4[3] = {0, 0, 0};
        f += example_u8(b, "uint8 clamps below", in3, 3, k3, 1,
                        params(IC_BORDER_CONSTANT, 0, 0, -30000.0f), want4);
    }
    return f;
}

/* Signal lengths around the GPU tile (2048 outputs; 1024 with IC_CONV1D_ITEMS=4)
 * and the CPU tile (2048). */
static const int awkward_n[] = {1,    2,    3,    4,    5,    7,    16,   17,   31,
                                255,  256,  257,  1023, 1024, 1025, 1026, 2047, 2048,
                                2049, 3071, 4095, 4096, 4097, 6000, 10007};

static int random_len(ict_rng *r, int big)
{
    if (ict_below(r, 3) == 0)
        return awkward_n[ict_below(r, (uint32_t)(sizeof awkward_n / sizeof awkward_n[0]))];
    const int cap = big ? 3000000 : 50000;
    return ict_below(r, 2) ? ict_range(r, 1, 5000) : ict_range(r, 1, cap);
}

static int random_klen(ict_rng *r, int n, int big)
{
    int klen;
    const uint32_t pick = ict_below(r, 20);
    if (pick == 0) /* longer than the signal */
        klen = n + ict_range(r, 1, 40);
    else if (pick == 1 && big) /* long kernels: halos wider than a block */
        klen = ict_range(r, 257, IC_MAX_KERNEL_1D);
    else if (pick == 2)
        klen = ict_range(r, 33, 301);
    else
        klen = ict_range(r, 1, 31);
    klen |= 1;
    if (klen > IC_MAX_KERNEL_1D)
        klen = IC_MAX_KERNEL_1D;
    /* keep the float64 reference affordable */
    while (klen > 1 && (double)klen * n > 4e7)
        klen = (klen / 2) | 1;
    return klen;
}

static int random_cases(const char *backend, int big, uint64_t seed)
{
    const int count = quick() ? 24 : big ? 160 : 240;
    int fails = 0;
    for (int t = 0; t < count && fails < 5; t++) {
        ict_rng r;
        c1 c;
        memset(&c, 0, sizeof c);
        c.backend = backend;
        c.label = "random";
        c.seed = ict_mix(seed, (uint64_t)t);
        ict_rng_seed(&r, c.seed);
        c.n = random_len(&r, big);
        c.klen = random_klen(&r, c.n, big);
        c.u8 = ict_below(&r, 3) == 0;
        c.p = params(
            (ic_border)ict_below(&r, 5), ict_below(&r, 2) ? (float)ict_range(&r, -50, 300) : 0.0f,
            (int)ict_below(&r, 2), ict_below(&r, 2) ? (float)(ict_uniform(&r) * 20 - 10) : 0.0f);
        double *x = malloc((size_t)c.n * sizeof *x);
        float *k = malloc((size_t)c.klen * sizeof *k);
        float *inf = malloc((size_t)c.n * sizeof *inf), *outf = malloc((size_t)c.n * sizeof *outf);
        uint8_t *in8 = malloc((size_t)c.n), *out8 = malloc((size_t)c.n);
        if (!x || !k || !inf || !outf || !in8 || !out8) {
            printf("FAIL out of memory in the test\n");
            fails++;
        } else {
            /* uint8 cases: non-negative weights summing to about 1 half the time, so
             * that results land inside 0..255 and rounding matters */
            const int blur = c.u8 && ict_below(&r, 2);
            double ksum = 0;
            for (int j = 0; j < c.klen; j++) {
                k[j] = blur ? (float)ict_uniform(&r) : (float)(ict_uniform(&r) * 2 - 1);
                ksum += k[j];
            }
            if (blur && ksum > 0)
                for (int j = 0; j < c.klen; j++)
                    k[j] = (float)(k[j] / ksum);
            for (int i = 0; i < c.n; i++) {
                if (c.u8) {
                    in8[i] = (uint8_t)ict_below(&r, 256);
                    x[i] = in8[i];
                } else {
                    inf[i] = (float)(ict_uniform(&r) * 200 - 100);
                    x[i] = inf[i];
                }
            }
            if (c1_run(&c, c.u8 ? (void *)in8 : (void *)inf, c.u8 ? (void *)out8 : (void *)outf,
                       k) != IC_OK)
                fails++;
            else
                fails += c1_check(&c, x, k, c.u8 ? (void *)out8 : (void *)outf);
        }
        free(x);
        free(k);
        free(inf);
        free(outf);
        free(in8);
        free(out8);
    }
    return fails;
}

/* Seed 001's stencil on integer samples: every sum is exact in float32. */
static int stencil_cases(const char *backend, int big, uint64_t seed)
{
    int fails = 0;
    const int count = quick() ? 8 : big ? 40 : 60;
    for (int t = 0; t < count && fails < 5; t++) {
        ict_rng r;
        c1 c;
        memset(&c, 0, sizeof c);
        c.backend = backend;
        c.label = "stencil";
        c.seed = ict_mix(seed ^ 0x57E4C11ull, (uint64_t)t);
        ict_rng_seed(&r, c.seed);
        c.n = random_len(&r, big);
        int radius = t == 0 ? (IC_MAX_KERNEL_1D - 1) / 2 : ict_range(&r, 0, 60);
        if (t == 0 && c.n > 20000)
            c.n = 20000;
        c.klen = 2 * radius + 1;
        c.p = params((ic_border)ict_below(&r, 5), (float)ict_range(&r, -5, 5), 0, 0.0f);
        const int use_null = t == 1;
        if (use_null)
            c.p = params(IC_BORDER_CONSTANT, 0, 0, 0);
        double *x = malloc((size_t)c.n * sizeof *x);
        float *in = malloc((size_t)c.n * sizeof *in), *out = malloc((size_t)c.n * sizeof *out);
        float *ones = malloc((size_t)c.klen * sizeof *ones);
        if (!x || !in || !out || !ones) {
            printf("FAIL out of memory in the test\n");
            fails++;
        } else {
            for (int i = 0; i < c.n; i++)
                x[i] = in[i] = (float)ict_range(&r, -1000, 1000);
            for (int j = 0; j < c.klen; j++)
                ones[j] = 1.0f;
            const ic_status s =
                ic_stencil1d(in, out, (size_t)c.n, radius, use_null ? NULL : &c.p, backend);
            if (s != IC_OK) {
                printf("FAIL stencil: %s: %s\n", ic_status_str(s), ic_last_error());
                c1_print(&c);
                fails++;
            } else {
                for (int i = 0; i < c.n; i++) {
                    const double want = ict_conv1d_at(x, c.n, ones, c.klen, &c.p, i, NULL);
                    if ((double)out[i] != want) {
                        printf("FAIL stencil radius %d: out[%d] = %.9g, want %.9g (exact)\n",
                               radius, i, (double)out[i], want);
                        c1_print(&c);
                        fails++;
                        break;
                    }
                }
            }
        }
        free(x);
        free(in);
        free(out);
        free(ones);
    }
    return fails;
}

/* Expects status `want` from a call; prints the call when it differs. */
static int expect(const char *what, ic_status got, ic_status want, const char *msg)
{
    if (got == want)
        return 0;
    printf("FAIL %s: got %s, want %s (%s)\n", what, ic_status_str(got), ic_status_str(want), msg);
    return 1;
}

static int conv1d_errors(const char *b)
{
    int f = 0;
    float in[8] = {1, 2, 3, 4, 5, 6, 7, 8}, out[8], k[3] = {1, 2, 1};
    const float bad[3] = {1, NAN, 1};
    ic_params p = params(IC_BORDER_CONSTANT, 0, 0, 0);
#define CALL(expr) (expr)
    f += expect("NULL input", CALL(ic_conv1d_f32(NULL, out, 8, k, 3, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("NULL kernel", CALL(ic_conv1d_f32(in, out, 8, NULL, 3, NULL, b)),
                IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("empty signal", CALL(ic_conv1d_f32(in, out, 0, k, 3, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("even kernel", CALL(ic_conv1d_f32(in, out, 8, k, 2, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("kernel length 0", CALL(ic_conv1d_f32(in, out, 8, k, 0, NULL, b)),
                IC_ERR_INVALID_ARG, ic_last_error());
    f +=
        expect("kernel too long", CALL(ic_conv1d_f32(in, out, 8, k, IC_MAX_KERNEL_1D + 2, NULL, b)),
               IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("signal too long", CALL(ic_conv1d_f32(in, out, IC_MAX_SIGNAL + 1, k, 3, NULL, b)),
                IC_ERR_TOO_LARGE, ic_last_error());
    f += expect("NaN weight", CALL(ic_conv1d_f32(in, out, 8, bad, 3, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("in-place", CALL(ic_conv1d_f32(in, in, 8, k, 3, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("overlapping buffers", CALL(ic_conv1d_f32(in, in + 2, 4, k, 3, NULL, b)),
                IC_ERR_INVALID_ARG, ic_last_error());
    p.border = (ic_border)7;
    f += expect("bad border", CALL(ic_conv1d_f32(in, out, 8, k, 3, &p, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    p = params(IC_BORDER_CONSTANT, 0, 0, INFINITY);
    f += expect("infinite bias", CALL(ic_conv1d_f32(in, out, 8, k, 3, &p, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("negative radius", CALL(ic_stencil1d(in, out, 8, -1, NULL, b)), IC_ERR_INVALID_ARG,
                ic_last_error());
    f += expect("radius too large",
                CALL(ic_stencil1d(in, out, 8, (IC_MAX_KERNEL_1D + 1) / 2, NULL, b)),
                IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("unknown backend", CALL(ic_conv1d_f32(in, out, 8, k, 3, NULL, "fpga")),
                IC_ERR_NO_BACKEND, ic_last_error());
    if (!strstr(ic_last_error(), "fpga")) {
        printf("FAIL unknown backend: message '%s' does not name it\n", ic_last_error());
        f++;
    }
    /* no error buffer is fine */
    f += expect("no error buffer", ic_conv1d_f32(in, out, 8, k, 3, NULL, b), IC_OK, "");
    f += expect("no error buffer, error", ic_conv1d_f32(NULL, out, 8, k, 3, NULL, b),
                IC_ERR_INVALID_ARG, "");
    /* "cuda" works or says why not: never a crash, never another status */
    const ic_status s = CALL(ic_conv1d_f32(in, out, 8, k, 3, NULL, "cuda"));
    if (s != IC_OK && !(s == IC_ERR_NO_BACKEND && ic_last_error()[0])) {
        printf("FAIL backend cuda: %s with message '%s'\n", ic_status_str(s), ic_last_error());
        f++;
    }
#undef CALL
    return f;
}

int ict_conv1d_suite(const char *backend, int big)
{
    const uint64_t seed = run_seed();
    if (quick())
        big = 0;
    int f = worked_examples(backend);
    f += random_cases(backend, big, seed);
    f += stencil_cases(backend, big, seed);
    f += conv1d_errors(backend);
    printf("%s 1D convolution suite on %s (seed 0x%llx): %d failure(s)\n", f ? "FAIL" : "ok",
           backend, (unsigned long long)seed, f);
    return f;
}

/* ---- matrix product --------------------------------------------------------------- */

/* Runs one product and compares it; exact: integer data, must match exactly. */
static int mm_case(const char *variant, const char *label, uint64_t seed, int M, int K, int N,
                   const float *A, const float *B, int exact)
{
    const size_t nc = (size_t)M * N;
    float *C = malloc(nc * sizeof *C);
    double *ref = malloc(nc * sizeof *ref), *mag = malloc(nc * sizeof *mag);
    int fail = 0;
    if (!C || !ref || !mag) {
        printf("FAIL out of memory in the test\n");
        fail = 1;
        goto done;
    }
    for (size_t i = 0; i < nc; i++)
        C[i] = NAN; /* every entry must be written */
    const ic_status s = ic_matmul(A, B, C, M, K, N, variant);
    if (s != IC_OK) {
        printf("FAIL %s: %s: %s\n", label, ic_status_str(s), ic_last_error());
        fail = 1;
    } else {
        ict_matmul_ref(A, B, M, K, N, ref, mag);
        for (size_t e = 0; e < nc && !fail; e++) {
            const double tol = exact ? 0.0 : ict_sum_tolerance(K, mag[e]);
            if (!(fabs((double)C[e] - ref[e]) <= tol)) {
                printf("FAIL %s: C[%zu][%zu] = %.9g, want %.9g (tolerance %.3g)\n", label, e / N,
                       e % N, (double)C[e], ref[e], tol);
                fail = 1;
            }
        }
    }
    if (fail)
        printf("     variant=%s seed=0x%llx M=%d K=%d N=%d\n", variant, (unsigned long long)seed, M,
               K, N);
done:
    free(C);
    free(ref);
    free(mag);
    return fail;
}

/* Integer-valued matrices (exact float32 sums) or uniform values in [-1, 1]. */
static int mm_random(const char *variant, const char *label, uint64_t seed, int M, int K, int N,
                     int integers)
{
    ict_rng r;
    ict_rng_seed(&r, seed);
    float *A = malloc((size_t)M * K * sizeof *A), *B = malloc((size_t)K * N * sizeof *B);
    int fail = 1;
    if (A && B) {
        for (size_t i = 0; i < (size_t)M * K; i++)
            A[i] = integers ? (float)ict_range(&r, -5, 5) : (float)(ict_uniform(&r) * 2 - 1);
        for (size_t i = 0; i < (size_t)K * N; i++)
            B[i] = integers ? (float)ict_range(&r, -5, 5) : (float)(ict_uniform(&r) * 2 - 1);
        fail = mm_case(variant, label, seed, M, K, N, A, B, integers);
    } else
        printf("FAIL out of memory in the test\n");
    free(A);
    free(B);
    return fail;
}

static const int awkward_dim[] = {1,  2,  3,  5,  7,   15,  16,  17,  31,  32,
                                  33, 63, 64, 65, 127, 128, 129, 130, 255, 257};

static int mm_dim(ict_rng *r, int cap)
{
    if (ict_below(r, 2))
        return awkward_dim[ict_below(r, (uint32_t)(sizeof awkward_dim / sizeof awkward_dim[0]))];
    return ict_range(r, 1, cap);
}

static int mm_errors(const char *v)
{
    int f = 0;
    float A[4] = {1, 2, 3, 4}, B[4] = {1, 0, 0, 1}, C[4];
    f += expect("M = 0", ic_matmul(A, B, C, 0, 2, 2, v), IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("K < 0", ic_matmul(A, B, C, 2, -1, 2, v), IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("NULL B", ic_matmul(A, NULL, C, 2, 2, 2, v), IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("C is A", ic_matmul(A, B, A, 2, 2, 2, v), IC_ERR_INVALID_ARG, ic_last_error());
    f += expect("unknown variant", ic_matmul(A, B, C, 2, 2, 2, "blas"), IC_ERR_NO_BACKEND,
                ic_last_error());
    f += expect("no error buffer", ic_matmul(A, B, C, 2, 2, 2, v), IC_OK, "");
    return f;
}

int ict_matmul_suite(const char *variant, int big)
{
    const uint64_t seed = run_seed();
    int f = 0;

    /* worked example: [1 2 3; 4 5 6] [7 8; 9 10; 11 12] = [58 64; 139 154] */
    {
        const float A[6] = {1, 2, 3, 4, 5, 6}, B[6] = {7, 8, 9, 10, 11, 12};
        const float want[4] = {58, 64, 139, 154};
        float C[4] = {0, 0, 0, 0};
        const ic_status s = ic_matmul(A, B, C, 2, 3, 2, variant);
        if (s != IC_OK || memcmp(C, want, sizeof want) != 0) {
            printf("FAIL worked 2x3 by 3x2 product on %s: %s %s; got %g %g %g %g\n", variant,
                   ic_status_str(s), ic_last_error(), (double)C[0], (double)C[1], (double)C[2],
                   (double)C[3]);
            f++;
        }
    }
    /* seed 002: square matrices in BLOCK_SIZE (16) tiles, and sizes that are not
     * multiples of it; integer entries, so every sum is exact */
    const int squares[] = {16, 32, 48, 17, 50};
    for (size_t i = 0; i < sizeof squares / sizeof squares[0]; i++) {
        const int n = squares[i];
        f += mm_random(variant, "seed 002 square product", ict_mix(seed, 1000 + i), n, n, n, 1);
    }
    /* random awkward shapes */
    const int count = quick() ? 10 : big ? 60 : 80;
    for (int t = 0; t < count && f < 5; t++) {
        ict_rng r;
        const uint64_t s = ict_mix(seed ^ 0x3A7A1ull, (uint64_t)t);
        ict_rng_seed(&r, s);
        const int cap = big ? 600 : 200;
        const int M = mm_dim(&r, cap), K = mm_dim(&r, cap), N = mm_dim(&r, cap);
        f += mm_random(variant, "random shape", s, M, K, N, (int)ict_below(&r, 4) == 0);
    }
    if (big && !quick()) {
        /* shapes the GPU kernels treat specially: a single column (cuda-gemm's
         * im2col product), a single row, K = 1, grids past the launch limits
         * (more than 65535 row tiles), and a large product */
        const struct {
            int M, K, N;
        } shapes[] = {{70001, 225, 1},   {1, 300, 5000}, {513, 1, 700},  {1100001, 3, 2},
                      {1031, 517, 1029}, {4096, 9, 1},   {129, 4097, 3}, {2, 70000, 2}};
        for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++)
            f += mm_random(variant, "special shape", ict_mix(seed, 2000 + i), shapes[i].M,
                           shapes[i].K, shapes[i].N, 0);
    }
    f += mm_errors(variant);
    printf("%s matrix product suite on %s (seed 0x%llx): %d failure(s)\n", f ? "FAIL" : "ok",
           variant, (unsigned long long)seed, f);
    return f;
}
