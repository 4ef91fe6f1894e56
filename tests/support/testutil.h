/*
 * testutil.h - what the tests share besides the oracle: a seeded PRNG, test
 * images with padded rows and guard bytes, random kernels, the comparison of a
 * backend's output with the float64 oracle (oracle.h), and the differential
 * test driver (diff.c) that every backend must pass.
 *
 * Acceptance rule (issue 2, "Semantics, exactly"): every sample within 1 level
 * of round(oracle), and exactly equal on at least 99.9% of samples. The oracle's
 * per-sample slack (a bound on float32 rounding) tells apart a sample that sits
 * on a rounding boundary, where a correct float32 sum may land on either side,
 * from a real error: per case at most 0.1% of samples may be off by one
 * without such a reason, and over a whole run at least 99.9% must be exact.
 * Padding bytes of dst and all of src must be left untouched.
 */
#ifndef ICT_TESTUTIL_H
#define ICT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "imgconv.h"
#include "oracle.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---- seeded PRNG (splitmix64) ------------------------------------------- */

typedef struct ict_rng {
    uint64_t s;
} ict_rng;

void ict_rng_seed(ict_rng *r, uint64_t seed);
uint64_t ict_next(ict_rng *r);
/* Uniform integer in [0, n), n >= 1. */
uint32_t ict_below(ict_rng *r, uint32_t n);
/* Uniform integer in [lo, hi]. */
int ict_range(ict_rng *r, int lo, int hi);
/* Uniform double in [0, 1). */
double ict_uniform(ict_rng *r);
/* Mixes two words into a well-spread seed (per-case seeds). */
uint64_t ict_mix(uint64_t a, uint64_t b);

/* ---- test images ------------------------------------------------------------ */

/* An image in test-owned memory: pitch = row bytes + extra, and `guard` bytes
 * after the last row, so that writes past a row or past the end show up. */
typedef struct ict_buf {
    ic_image img;
    uint8_t *mem; /* == img.data */
    size_t bytes; /* pitch * rows (rows = height, times channels for SoA) */
    size_t guard; /* bytes after `bytes` */
} ict_buf;

/* Allocates a width x height x channels image; returns 0 on success. */
int ict_buf_alloc(ict_buf *b, int width, int height, int channels, ic_layout layout,
                  size_t extra_pitch);
/* The same with samples of `type` (IC_U16: 2-byte samples, pitch kept even;
 * IC_F32: 4-byte samples, pitch a multiple of 4). */
int ict_buf_alloc_type(ict_buf *b, int width, int height, int channels, ic_layout layout,
                       size_t extra_pitch, ic_sample_type type);
void ict_buf_free(ict_buf *b);
/* Sets every byte (samples, row padding, guard) to `byte`. */
void ict_buf_fill(ict_buf *b, uint8_t byte);
/* Random samples; row padding and guard get random garbage. alpha_style for
 * 2/4 channels: 0 random alpha, 1 mostly 0 or max (255 or 65535) with some in
 * between (transparent holes), 2 opaque. 16-bit images cover 0..65535, a fifth
 * of their samples within 15 of 0 or of 65535 (next to the clamp limits). */
void ict_buf_random(ict_buf *b, ict_rng *r, int alpha_style);
/* Photograph-like content (tests/support/alpha_photo.c): smooth colour with
 * texture and a hard edge; for 2 and 4 channels an alpha channel with real
 * transparency: an opaque subject with soft (anti-aliased) and hard edges,
 * holes through it, a translucent band, fully transparent pixels whose colour
 * is random garbage, and scattered almost-transparent pixels (alpha 1..3).
 * Row padding and guard get random garbage. Any size, channels and layout. */
void ict_alpha_photo(ict_buf *b, ict_rng *r);
/* 1 when the byte at offset `off` of b->mem (guard included) is a sample. */
int ict_buf_is_sample(const ict_buf *b, size_t off);
/* 1 when every non-sample byte (row padding, guard) equals `byte`; otherwise 0
 * and *bad_off (may be NULL) gets the first offending offset. */
int ict_buf_padding_is(const ict_buf *b, uint8_t byte, size_t *bad_off);

/* ---- random kernels -------------------------------------------------------- */

enum {
    ICT_K_FLOAT = 0, /* random float coefficients, either sign, optional divisor (maybe < 0) */
    ICT_K_INT,       /* small integers, either sign, divisor odd or a power of two */
    ICT_K_BLUR,      /* non-negative, divisor = their sum (weights sum to 1) */
    ICT_K_SHARPEN,   /* negative ring, big centre, divisor = sum (weights sum to 1) */
    ICT_K_ONEHOT,    /* a single 1 somewhere: a pure shift, exact outputs */
    ICT_K_LOWRANK,   /* sum of 1-3 outer products of small integer vectors (Gaussian- and
                        Sobel-like, seed 003's mask), power-of-two divisor: exact ties */
    ICT_K_COUNT
};

/* Creates (ic_kernel_create) a random kw x kh kernel of the given type.
 * Returns the ic_kernel_create status. */
ic_status ict_kernel_random(ic_kernel *k, ict_rng *r, int kw, int kh, int type);
const char *ict_kernel_type_name(int type);

/* Names for messages, written here so that a broken library name table cannot
 * hide a failure. */
const char *ict_border_str(ic_border b);
const char *ict_alpha_str(ic_alpha a);
const char *ict_layout_str(ic_layout l);

/* ---- comparison with the oracle ---------------------------------------------- */

typedef struct ict_cmp {
    long long samples;     /* compared */
    long long exact;       /* got == round(oracle) */
    long long bad;         /* outside round(oracle -/+ slack) -/+ 1 */
    long long unexplained; /* off round(oracle) without a rounding-boundary reason */
    int has_first;         /* first bad sample, else first unexplained one */
    int x, y, c, got, want;
    double expected, slack;
} ict_cmp;

void ict_cmp_init(ict_cmp *c);
/* Compares rows y0 <= y < y1 of dst with oracle values indexed as by
 * ict_oracle_rows (val/slack start at row y0). slack may be NULL (zero). */
void ict_compare_rows(ict_cmp *cmp, const ic_image *dst, int y0, int y1, const double *val,
                      const double *slack);
/* Compares one row y of dst with oracle values for that row only. */
void ict_compare_row(ict_cmp *cmp, const ic_image *dst, int y, const double *val,
                     const double *slack);
/* 1 when no sample is bad and at most 0.1% are unexplained. */
int ict_cmp_passed(const ict_cmp *c);
/* Rows y0 <= y < y1 of dst against the oracle of src, k, p (p may be NULL):
 * 1 when they pass (ict_cmp_passed), 0 when not, -1 out of memory. cmp gets
 * the counts (for ict_cmp_print). */
int ict_oracle_check(const ic_image *src, const ic_kernel *k, const ic_params *p,
                     const ic_image *dst, int y0, int y1, ict_cmp *cmp);
/* Prints the counts and the first bad sample, indented, to stdout. */
void ict_cmp_print(const ict_cmp *c);

/* Share of samples that must equal round(oracle) exactly over a whole run:
 * 99.9% at 8 bits; 99% at 16 bits, where float32's 24 bits leave 8 bits
 * below one level instead of 16, so about 256 times more correct float32
 * sums land within their rounding error of a .5 boundary (each such sample
 * must still be explained by the oracle's slack: ict_cmp_passed). Measured
 * on test_gpu_diff's 16-bit cases (H100, 7700942): 99.25% on every CUDA
 * backend (fused multiply-adds), 99.88-99.94% on the CPU ones. */
#define ICT_EXACT_MIN(type) ((type) == IC_U16 ? 0.99 : 0.999)

/* ---- differential cases (diff.c) --------------------------------------------- */

/* The run every backend goes through (test_diff_cpu, test_gpu_diff): the same
 * seed, number of cases and size cap, so that CPU and GPU see the same cases. */
#define ICT_DIFF_SEED 0x1C0C0DE2024ull
#define ICT_DIFF_CASES 400
#define ICT_DIFF_MAX_DIM 130

/* One random case; everything about it follows from (seed, index, max_dim). */
typedef struct ict_case {
    uint64_t seed;      /* the run's seed */
    int index;          /* case number in the run */
    uint64_t case_seed; /* derived: drives image content and kernel coefficients */
    int width, height, channels;
    ic_layout src_layout, dst_layout;
    size_t src_extra, dst_extra; /* pitch - row bytes */
    int kw, kh, ktype;
    ic_params params;
    int null_params;     /* pass NULL instead of params (params hold the defaults) */
    int alpha_style;     /* ict_buf_random's 0..2, or 3: ict_alpha_photo */
    ic_sample_type type; /* IC_U8 (what ict_case_make gives) or IC_U16 */
} ict_case;

/* Builds case `index` of the run `seed`. The list cycles systematically through
 * border modes, convolution/correlation, channels 1..4, alpha modes, layout
 * pairs (AoS/SoA for src and dst, mismatched too), a list of kernel shapes
 * (1x1..15x15, 1xN, Nx1, 3x7, 15x1...) and of odd image sizes (1x1, 1xN, Nx1,
 * 7x5, 33x17, 129x65...), with random shapes, sizes, images smaller than the
 * kernel, pitches, bias and border values in between. max_dim caps sizes. */
void ict_case_make(ict_case *c, uint64_t seed, int index, int max_dim);
/* Turns a case into its 16-bit twin: IC_U16 images, bias and border value
 * times 257 (the same place in the 0..65535 range). */
void ict_case_u16(ict_case *c);
/* One line describing the case (for failure messages). */
void ict_case_describe(const ict_case *c, const ic_kernel *k, char *buf, size_t n);

/* Running totals of a backend run. */
typedef struct ict_totals {
    int cases, failures;
    long long samples, exact, unexplained;
} ict_totals;

/* Runs one case on ctx against the oracle; returns 0 when it passed, 1 when
 * not (after printing seed, backend and parameters). tot may be NULL. */
int ict_run_case(ic_context *ctx, const char *backend, const ict_case *c, ict_totals *tot);

/* Runs ncases random cases through ic_context_create(backend) + ic_convolve
 * against the oracle and returns the number of failures (a context that cannot
 * be created counts as one). Prints one summary line. The environment can
 * narrow a run for debugging: ICT_SEED=N replaces seed, ICT_CASES=N ncases,
 * ICT_CASE=I runs case I alone. */
int ict_diff_backend(const char *backend, int ncases, uint64_t seed, int max_dim);
/* A context for backend with options `base` (NULL: zeroed) tuned by
 * `tuning` (ic_tuning_parse text, e.g. "method=rows,rows-shape=2"; NULL: the
 * defaults); NULL on failure, with ic_last_error() saying why. */
ic_context *ict_context_tuned(const char *backend, const char *tuning,
                              const ic_context_options *base);

/* ict_diff_backend on a context tuned by `tuning` (as ict_context_tuned). */
int ict_diff_backend_tuned(const char *backend, const char *tuning, int ncases, uint64_t seed,
                           int max_dim);
/* ict_diff_backend with images of `type` (IC_U16: every case through ict_case_u16). */
int ict_diff_backend_type(const char *backend, int ncases, uint64_t seed, int max_dim,
                          ic_sample_type type);
/* The one differential run behind the three above: a context tuned by `tuning`
 * (NULL: defaults), images of `type`. */
int ict_diff_backend_ex(const char *backend, const char *tuning, ic_sample_type type, int ncases,
                        uint64_t seed, int max_dim);

/* A randomized test's knobs from the environment: *quick = 1 when
 * IC_TEST_QUICK is set and not "0" (the compute-sanitizer runs); *seed =
 * ICT_SEED when set, else def_seed; *cases = ICT_CASES when set, else
 * quick_cases when quick, else def_cases. */
void ict_run_env(int *quick, uint64_t *seed, uint64_t def_seed, int *cases, int def_cases,
                 int quick_cases);

/* One part of a test that a long tool run (compute-sanitizer) splits into
 * separate processes: with ICT_PART=k/n in the environment, 1 when section
 * `index` (0, 1, 2, ...) belongs to part k (index % n == k - 1), else 0;
 * without it (or malformed), always 1. */
int ict_part(int index);

/* 1 when the backend is compiled in and usable here; otherwise 0 with the
 * reason (from ic_backend_get, or "not compiled in") in why. */
int ict_backend_usable(const char *name, char *why, size_t n);

/* The worked rounding example (ties to even, clamping) on one backend:
 * averages of neighbours such as (1+2)/2 = 1.5 -> 2 and (2+3)/2 = 2.5 -> 2,
 * with biases that push results below 0 and above 255. Expected values are
 * written out by hand. Returns the number of mismatches (prints them). */
int ict_check_rounding(const char *backend);

/* A minimal ICC profile of n (>= 132) bytes for the metadata tests: a 128-byte
 * header (its size, version 2.1, class 'mntr', data colour space `space`,
 * "RGB " or "GRAY", PCS 'XYZ ', the 'acsp' signature and, when d50 is
 * nonzero, the D50 illuminant libpng requires), no tags, then payload bytes
 * that differ along the profile, so that a chunk put in the wrong place
 * shows. */
void ict_fake_icc(uint8_t *p, size_t n, const char *space, int d50);

/* Every ICT_EXPECT of a test program: checks made, checks failed. */
extern int ict_checks, ict_failed;

/* Counts a check in ict_checks; when cond is false, also in ict_failed, and
 * prints "FAIL file:line: cond: message" to stderr. */
#define ICT_EXPECT(cond, ...)                                                                      \
    do {                                                                                           \
        ict_checks++;                                                                              \
        if (!(cond)) {                                                                             \
            ict_failed++;                                                                          \
            fprintf(stderr, "FAIL %s:%d: %s: ", __FILE__, __LINE__, #cond);                        \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

/* Counts a failed check in `counter` and prints "FAIL file:line: message". */
#define ICT_CHECK(counter, cond, ...)                                                              \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            (counter)++;                                                                           \
        }                                                                                          \
    } while (0)

/* A check counted in `checks`, its failure in `failed` and reported on
 * stderr with the random seed `seed` the case was made from, so that a
 * failure can be replayed. */
#define ICT_CHECK_SEEDED(checks, failed, seed, cond, ...)                                          \
    do {                                                                                           \
        (checks)++;                                                                                \
        if (!(cond)) {                                                                             \
            (failed)++;                                                                            \
            fprintf(stderr, "FAIL %s:%d (seed %llu): %s: ", __FILE__, __LINE__,                    \
                    (unsigned long long)(seed), #cond);                                            \
            fprintf(stderr, __VA_ARGS__);                                                          \
            fputc('\n', stderr);                                                                   \
        }                                                                                          \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif /* ICT_TESTUTIL_H */
