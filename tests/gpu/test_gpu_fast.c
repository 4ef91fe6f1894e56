/*
 * test_gpu_fast.c - every plan of the `cuda` fast path (issue 4) against the
 * float64 oracle. test_gpu_diff runs `cuda` with the planner's choices; here
 * each method is forced in turn (ic_tuning.method, the public header's
 * advanced tier; direct and sep also in forced tile shapes), so that direct,
 * separable and FFT each see the whole differential run (sizes smaller than
 * the kernel, every border, layout, pitch, channel count, alpha mode); then
 * the named separable kernels must take the separable path and pass; then
 * large images with 31x31 kernels (FFT, separable) on sampled rows.
 * Then 16-bit samples (IC_U16): the differential run with direct, sep and
 * global forced, rows and fft forced (which 16-bit jobs never take: the
 * planner falls back and --explain says so), and big 16-bit images. Then
 * the tensor method's own cases, and the rows method at 8 rows a thread on
 * separable 3x3 kernels.
 * Exits 77 (SKIPPED) without a usable CUDA device.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int quick(void)
{
    const char *q = getenv("IC_TEST_QUICK");
    return q && *q && strcmp(q, "0") != 0;
}

/* The plan of a separable kernel the rows method does not take: the
 * shared-memory passes (sep) or the tensor cores' (tensor_sep.cu, 8-bit
 * samples on sm_80 and later), whichever the planner predicts faster. */
#define SEPARABLE "method sep|a row and a column pass"

/* 1 when the plan text holds `want` or, for "a|b", a or b. */
static int plan_names(const char *plan, const char *want)
{
    const char *bar = strchr(want, '|');
    if (!bar)
        return strstr(plan, want) != NULL;
    char first[128];
    snprintf(first, sizeof first, "%.*s", (int)(bar - want), want);
    return strstr(plan, first) != NULL || plan_names(plan, bar + 1);
}

/* Filters a random image with samples of `type` with a named kernel and
 * compares rows [y0, y1) (all when y1 <= 0) with the oracle; checks that the
 * plan names `want` when given (bias in the type's units); the context is
 * tuned by `tuning` (ic_tuning_parse text; NULL: defaults). */
static int check_named_type(const char *text, int w, int h, int ch, ic_layout lay, ic_border border,
                            int correlate, float bias, const char *want, ict_rng *r, int y0, int y1,
                            ic_sample_type type, const char *tuning)
{
    ic_kernel k;
    if (ic_kernel_parse(&k, text) != IC_OK) {
        printf("FAIL cannot parse kernel %s: %s\n", text, ic_last_error());
        return 1;
    }
    ic_params p;
    ic_params_default(&p);
    p.border = border;
    p.border_value = (float)ict_range(r, 0, (int)(type == IC_U16 ? 65535 : 255));
    p.correlate = correlate;
    p.bias = bias;
    p.alpha = IC_ALPHA_INDEPENDENT; /* every channel through the backend */
    ict_buf src, dst;
    if (ict_buf_alloc_type(&src, w, h, ch, lay, (size_t)ict_range(r, 0, 9), type) ||
        ict_buf_alloc_type(&dst, w, h, ch, lay, (size_t)ict_range(r, 0, 9), type)) {
        printf("FAIL cannot allocate %dx%d\n", w, h);
        ic_kernel_free(&k);
        return 1;
    }
    ict_buf_random(&src, r, 0);
    ict_buf_fill(&dst, 0xA7);
    ic_context *ctx = NULL;
    int failed = 1;
    char plan[1024] = "";
    double *val = NULL, *slack = NULL;
    if (y1 <= 0) {
        y0 = 0;
        y1 = h;
    }
    char what[256];
    snprintf(what, sizeof what, "kernel=%s image=%dx%d ch=%d%s %s border=%s %s bias=%g", text, w, h,
             ch, type == IC_U16 ? " 16-bit" : "", ict_layout_str(lay), ict_border_str(border),
             correlate ? "correlation" : "convolution", (double)bias);
    ctx = ict_context_tuned("cuda", tuning, NULL);
    if (!ctx) {
        printf("FAIL cuda context (tuning %s): %s\n", tuning ? tuning : "none", ic_last_error());
        goto out;
    }
    /* The planner's choice depends on ceilings it measures on the device;
     * under compute-sanitizer (IC_TEST_QUICK=1) they read ~100x low and the
     * choice changes, so quick mode checks results only, not method names. */
    if (quick())
        want = NULL;
    if (want && (ic_plan_explain(ctx, &src.img, &k, &p, plan, sizeof plan) != IC_OK ||
                 !plan_names(plan, want))) {
        printf("FAIL %s: plan is not '%s':\n%s", what, want, plan);
        goto out;
    }
    if (ic_convolve(ctx, &src.img, &dst.img, &k, &p) != IC_OK) {
        printf("FAIL %s: %s\n", what, ic_last_error());
        goto out;
    }
    if (!ict_buf_padding_is(&dst, 0xA7, NULL)) {
        printf("FAIL %s: dst padding written\n", what);
        goto out;
    }
    const size_t n = (size_t)w * (size_t)(y1 - y0) * (size_t)ch;
    val = malloc(n * sizeof *val);
    slack = malloc(n * sizeof *slack);
    if (!val || !slack) {
        printf("FAIL out of memory\n");
        goto out;
    }
    ict_oracle_rows(&src.img, &k, &p, y0, y1, val, slack);
    ict_cmp cmp;
    ict_cmp_init(&cmp);
    ict_compare_rows(&cmp, &dst.img, y0, y1, val, slack);
    if (!ict_cmp_passed(&cmp)) {
        printf("FAIL %s: differs from the oracle\n", what);
        ict_cmp_print(&cmp);
        goto out;
    }
    failed = 0;
out:
    free(val);
    free(slack);
    ic_context_free(ctx);
    ict_buf_free(&src);
    ict_buf_free(&dst);
    ic_kernel_free(&k);
    return failed;
}

static int check_named(const char *text, int w, int h, int ch, ic_layout lay, ic_border border,
                       int correlate, float bias, const char *want, ict_rng *r, int y0, int y1)
{
    return check_named_type(text, w, h, ch, lay, border, correlate, bias, want, r, y0, y1, IC_U8,
                            NULL);
}

/* The fixed full-rank 31x31 kernel of the big-image checks (FFT): rows of a
 * ramp times a different ramp per row, as kernel text. */
static void full_rank_31(char *text, size_t n)
{
    int o = 0, sum = 0;
    for (int y = 0; y < 31; y++)
        for (int x = 0; x < 31; x++) {
            const int v = 1 + (x * 7 + y * y * 3 + x * y) % 23;
            sum += v;
            o += snprintf(text + o, n - (size_t)o, "%d%s", v, x == 30 ? (y == 30 ? "" : ";") : " ");
        }
    snprintf(text + o, n - (size_t)o, " / %d", sum);
}

/* Kernel text of the kw x kh weights w (row-major), or NULL without memory. */
static char *weights_text(const double *w, int kw, int kh)
{
    const size_t n = (size_t)kw * kh * 20 + 16;
    char *text = malloc(n);
    if (!text)
        return NULL;
    size_t o = 0;
    for (int y = 0; y < kh; y++)
        for (int x = 0; x < kw; x++)
            o += (size_t)snprintf(text + o, n - o, "%.9g%s", w[(size_t)y * kw + x],
                                  x == kw - 1 ? (y == kh - 1 ? "" : ";") : " ");
    return text;
}

/* Random kw x kh kernel text: weights of mixed sign over four decades (the
 * tensor method's split into two fp16 halves must keep the small ones). */
static char *random_kernel_text(int kw, int kh, ict_rng *r)
{
    double *w = malloc(sizeof(double) * (size_t)kw * kh);
    if (!w)
        return NULL;
    for (int i = 0; i < kw * kh; i++) {
        const double mag = pow(10.0, -4.0 * ict_uniform(r)) / (kw * kh);
        w[i] = ict_below(r, 4) ? mag : -mag;
    }
    char *text = weights_text(w, kw, kh);
    free(w);
    return text;
}

/* Random rank-1 k x k kernel text col[j] * row[i]: both vectors of mixed
 * sign over three decades (the factors the planner finds are what the
 * tensor method's two passes run). */
static char *rank1_kernel_text(int k, ict_rng *r)
{
    double row[32], col[32], w[32 * 32];
    for (int i = 0; i < k; i++) {
        row[i] = pow(10.0, -3.0 * ict_uniform(r)) * (ict_below(r, 4) ? 1 : -1);
        col[i] = pow(10.0, -3.0 * ict_uniform(r)) * (ict_below(r, 4) ? 1 : -1);
    }
    for (int y = 0; y < k; y++)
        for (int x = 0; x < k; x++)
            w[y * k + x] = col[y] * row[x] / k;
    return weights_text(w, k, k);
}

/* One forced tensor case of a kw x kh kernel text: case number i picks
 * whether the image is smaller than the kernel (every 5th), its channels,
 * layout and border mode; its size, bias and correlation are random; the
 * plan must name `want` (NULL: any). */
static int tensor_case(const char *text, int kw, int kh, int i, int q, ict_rng *r, const char *want,
                       const char *tuning)
{
    const int tiny = i % 5 == 4; /* smaller than the kernel */
    const int w = tiny ? ict_range(r, 1, kw) : ict_range(r, 1, q ? 200 : 400);
    const int h = tiny ? ict_range(r, 1, kh) : ict_range(r, 1, q ? 150 : 300);
    const int ch = 1 + i % 4;
    const ic_layout lay = i % 3 == 1 ? IC_SOA : IC_AOS;
    const float bias = ict_below(r, 2) ? 0.0f : (float)(ict_uniform(r) * 40 - 20);
    return check_named_type(text, w, h, ch, lay, (ic_border)(i % 5), (int)ict_below(r, 2), bias,
                            want, r, 0, 0, IC_U8, tuning);
}

/* The tensor method on rank-1 kernels (tensor_sep.cu: a row and a column
 * pass): every width class, random factors and Gaussians, the same
 * borders, channels, layouts, tile shapes and tiny images as below. */
static int tensor_sep_cases(int q, ict_rng *r, const char *const *tunings)
{
    static const int sizes[] = {3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31};
    const int ns = (int)(sizeof sizes / sizeof sizes[0]);
    int failures = 0, cases = 0;
    for (int rep = 0; rep < (q ? 1 : 2); rep++)
        for (int s = 0; s < ns; s++) {
            const int k = sizes[s];
            char gauss[32];
            snprintf(gauss, sizeof gauss, "gaussian:%d", k);
            char *text = (s + rep) % 3 == 2 ? NULL : rank1_kernel_text(k, r);
            if ((s + rep) % 3 != 2 && !text) {
                printf("FAIL out of memory\n");
                return failures + 1;
            }
            failures += tensor_case(text ? text : gauss, k, k, s + rep, q, r,
                                    "a row and a column pass", tunings[(s + rep) % 4]);
            free(text);
            cases++;
        }
    /* the big blocks (tensor_sep.cu, one an SM): every channel of 64 rows
     * of an RGB image (768 threads) or of a 2-channel one (512), of 32 rows
     * of an RGBA one (512); random factors and Gaussians of both k-step
     * classes, every border mode, images from smaller than the kernel to
     * several blocks */
    static const int big[] = {19, 5, 31, 15, 25, 3, 21, 17};
    static const struct {
        int ch, rows;
        const char *want;
    } blocks[] = {{3, 64, "768 threads"}, {4, 32, "512 threads"}, {2, 64, "512 threads"}};
    for (int j = 0; j < (q ? 6 : 24); j++) {
        const int k = big[j % 8], bl = j % 3;
        char gauss[32], tuning[64];
        snprintf(gauss, sizeof gauss, "gaussian:%d", k);
        snprintf(tuning, sizeof tuning, "method=tensor,tile-rows=%d,tile-channels=2",
                 blocks[bl].rows);
        const int named = (j + j / 3) % 3 == 2;
        char *text = named ? NULL : rank1_kernel_text(k, r);
        if (!named && !text) {
            printf("FAIL out of memory\n");
            return failures + 1;
        }
        const int tiny = j % 4 == 3;
        const int w = tiny ? ict_range(r, 1, k) : ict_range(r, 1, q ? 300 : 600);
        const int h = tiny ? ict_range(r, 1, k) : ict_range(r, 1, q ? 200 : 300);
        const float bias = ict_below(r, 2) ? 0.0f : (float)(ict_uniform(r) * 40 - 20);
        failures +=
            check_named_type(text ? text : gauss, w, h, blocks[bl].ch, IC_AOS, (ic_border)(j % 5),
                             (int)ict_below(r, 2), bias, blocks[bl].want, r, 0, 0, IC_U8, tuning);
        free(text);
        cases++;
    }
    printf("tensor method, rank 1: %d cases, %d failures\n", cases, failures);
    return failures;
}

/* The rows method's row-by-row paths forced: rows_roll (rows_impl.cuh: a
 * separable 3x3, 16 samples x 8 rows a thread) and rows_ring (rows_ring.cuh:
 * a separable 5x5, 7x7, 9x9, 8 samples x 8, 16, 32 or 64 rows a thread).
 * Random factors, Gaussians and boxes; heights up to ROWS + K - 1 (no
 * interior group: side items only), just past it (the last group overlaps
 * the one before) and random; narrow images (side chunks only); every
 * border mode; 1..4 channels AoS (grey + alpha too) and SoA. The plan must say that
 * many samples and rows a thread. */
static int rows_roll_cases(int q, ict_rng *r)
{
    static const int ks[] = {3, 5, 7, 9}, ring_rows[] = {8, 16, 32, 64};
    static const int chans[] = {1, 3, 4, 2};
    int failures = 0, cases = 0;
    for (int i = 0; i < (q ? 24 : 72); i++) {
        const int k = ks[i % 4];
        const int rows = k == 3 ? 8 : ring_rows[i / 4 % 4];
        char tuning[64], want[64], named[32];
        snprintf(tuning, sizeof tuning, "method=rows,rows-shape=%d", rows);
        snprintf(want, sizeof want, "%d samples x %d row", k == 3 ? 16 : 8, rows);
        snprintf(named, sizeof named, "%s:%d", i % 3 == 1 ? "gaussian" : "box", k);
        char *text = i % 3 == 0 ? rank1_kernel_text(k, r) : NULL;
        if (i % 3 == 0 && !text) {
            printf("FAIL out of memory\n");
            return failures + 1;
        }
        const int hc = i / 2 % 3, span = rows + k - 1;
        const int h = hc == 0   ? ict_range(r, 1, span)
                      : hc == 1 ? span + ict_range(r, 1, 2 * rows)
                                : ict_range(r, 1, q ? 150 : 300);
        const int w = i % 7 == 6 ? ict_range(r, 1, 8) : ict_range(r, 1, q ? 200 : 400);
        const int ch = chans[i / 3 % 4];
        const ic_layout lay = i % 5 == 2 ? IC_SOA : IC_AOS;
        const float bias = ict_below(r, 2) ? 0.0f : (float)(ict_uniform(r) * 40 - 20);
        failures += check_named_type(text ? text : named, w, h, ch, lay, (ic_border)(i % 5),
                                     (int)ict_below(r, 2), bias, want, r, 0, 0, IC_U8, tuning);
        free(text);
        cases++;
    }
    printf("rows method, one input row at a time: %d cases, %d failures\n", cases, failures);
    return failures;
}

/* The tensor method (tensor.cu) forced on every width class it takes (3..9:
 * one k step a half tile, 11..17: two, 19..25: two a half, 27..31: three),
 * square, wide, tall (63 rows)
 * and narrower than it takes (1: the planner's choice), weights over four
 * decades of mixed sign and the fixed full-rank 31x31, every border mode,
 * 1..4 channels, AoS and SoA, tile shapes of 1 and all channels, images
 * smaller than the kernel. */
static int tensor_cases(int q, ict_rng *r)
{
    static const int shapes[][2] = {{3, 3},   {5, 5},   {9, 7},   {11, 11}, {15, 15}, {17, 17},
                                    {19, 19}, {21, 13}, {25, 11}, {27, 3},  {31, 31}, {31, 5},
                                    {5, 31},  {3, 63},  {31, 63}, {1, 31},  {29, 1}};
    static const char *const tunings[] = {"method=tensor", "method=tensor,tile-channels=1",
                                          "method=tensor,tile-rows=16",
                                          "method=tensor,tile-rows=64,tile-channels=1"};
    const int ns = (int)(sizeof shapes / sizeof shapes[0]);
    int failures = 0, cases = 0;
    for (int rep = 0; rep < (q ? 1 : 3); rep++)
        for (int s = 0; s < ns; s++) {
            const int kw = shapes[s][0], kh = shapes[s][1];
            char *text = random_kernel_text(kw, kh, r);
            if (!text) {
                printf("FAIL out of memory\n");
                return failures + 1;
            }
            failures += tensor_case(text, kw, kh, s + rep, q, r, kw >= 3 ? "method tensor" : NULL,
                                    tunings[(s + rep) % 4]);
            free(text);
            cases++;
        }
    failures += tensor_sep_cases(q, r, tunings);
    char text[31 * 31 * 8 + 64];
    full_rank_31(text, sizeof text);
    failures += check_named_type(text, 517, 301, 3, IC_AOS, IC_BORDER_REFLECT, 1, 0.0f,
                                 "method tensor", r, 0, 0, IC_U8, "method=tensor");
    cases++;
    printf("tensor method: %d cases, %d failures\n", cases, failures);
    return failures;
}

/* 16-bit samples on every method: the differential run with each method
 * forced, rows refused (planned out, said by --explain), big images. */
static int sixteen_bits(int q, ict_rng *r)
{
    int failures = 0;
    const char *methods[] = {"direct", "sep", "global", "rows", "fft", "tensor"};
    for (int m = 0; m < 6; m++) {
        char tuning[32];
        snprintf(tuning, sizeof tuning, "method=%s", methods[m]);
        printf("16-bit, method %s forced%s:\n", methods[m],
               m >= 3 ? " (never taken at 16 bits: the planner's choice runs)" : "");
        failures +=
            ict_diff_backend_ex("cuda", tuning, IC_U16, q ? 24 : 160,
                                ICT_DIFF_SEED ^ 0x16B17ull ^ (uint64_t)(m + 1), ICT_DIFF_MAX_DIM);
    }
    /* fft forced, then rows, on jobs they take at 8 bits: the 16-bit plan is
     * another method and says why */
    char text[31 * 31 * 8 + 64];
    full_rank_31(text, sizeof text);
    failures += check_named_type(text, 300, 200, 3, IC_AOS, IC_BORDER_MIRROR, 1, 0.0f,
                                 "8-bit samples only", r, 0, 0, IC_U16, "method=fft");
    failures += check_named_type("gaussian:5", 640, 360, 3, IC_AOS, IC_BORDER_MIRROR, 1, 0.0f,
                                 "8-bit samples only", r, 0, 0, IC_U16, "method=rows");

    /* big 16-bit images, sampled rows: tile blocks inside and at the edges,
     * the planner's methods (sep, direct; neither rows nor fft), all channel
     * counts */
    const int bw = q ? 640 : 3840, bh = q ? 360 : 2160;
    const int rows[][2] = {{0, 6}, {bh / 2 - 3, bh / 2 + 3}, {bh - 6, bh}};
    for (int i = 0; i < 3; i++) {
        failures += check_named_type("gaussian:31", bw, bh, 3, IC_AOS, IC_BORDER_REFLECT, 1, 0.0f,
                                     "method sep", r, rows[i][0], rows[i][1], IC_U16, NULL);
        failures +=
            check_named_type(text, bw, bh, 1 + i, i == 1 ? IC_SOA : IC_AOS, (ic_border)i, 1, 0.0f,
                             "8-bit samples only", r, rows[i][0], rows[i][1], IC_U16, NULL);
        failures += check_named_type("gaussian:5", bw, bh, 4 - i, i == 2 ? IC_SOA : IC_AOS,
                                     (ic_border)(i + 1), 1, 0.0f, "8-bit samples only", r,
                                     rows[i][0], rows[i][1], IC_U16, NULL);
        failures += check_named_type("1 2 3 4 5 6 7; 7 1 2 3 4 5 6; 6 7 1 2 3 4 5; 5 6 7 1 2 3 4; "
                                     "4 5 6 7 1 2 3; 3 4 5 6 7 1 2; 2 3 4 5 6 7 1 / 196",
                                     bw, bh, i == 1 ? 1 : 4, i == 2 ? IC_SOA : IC_AOS, (ic_border)i,
                                     0, 1.5f * 257.0f, "8-bit samples only", r, rows[i][0],
                                     rows[i][1], IC_U16, NULL);
    }
    printf("16-bit: %d failures\n", failures);
    return failures;
}

int main(void)
{
    char why[256];
    if (!ict_backend_usable("cuda", why, sizeof why)) {
        printf("SKIPPED: backend cuda: %s\n", why);
        return 77;
    }
    int failures = 0;
    const int q = quick();
    /* ICT_PART=k/n runs every n-th section (each tuned run, the named
     * kernels, the big images, 16 bits) from the k-th: compute-sanitizer's
     * slower tools take the test in parts (scripts/gpu-check.sh san). */

    /* 1. The differential run with each method forced; the rows method with
     * each of its shapes (1, 2, 4 and 8 output rows per thread: the planner
     * picks 1 for images this small), separable and as the full sum. */
    static const char *const runs[] = {
        "method=direct",
        "method=sep",
        "method=fft",
        "method=fft,fft-fuse=always", /* the multiply as cuFFT's callback */
        "method=rows,rows-shape=1",
        "method=rows,rows-shape=2",
        "method=rows,rows-shape=4",
        "method=rows,rows-shape=8", /* separable kernels row by row, others at 4 */
        "method=rows,rows-shape=4,rows-full=1",
        "method=rows,rows-shape=1,rows-full=1",
        /* forced tile shapes of the shared-memory methods (ic_tuning
         * tile_channels, tile_rows; a shape that does not apply or fit
         * leaves the planner's) */
        "method=sep,tile-channels=1,tile-rows=64",
        "method=sep,tile-channels=2,tile-rows=8",
        "method=direct,tile-channels=1,tile-rows=16",
        "method=tensor",
        "method=tensor,tile-channels=1,tile-rows=64",
    };
    const int nruns = (int)(sizeof runs / sizeof runs[0]);
    for (int m = 0; m < nruns; m++) {
        if (!ict_part(m))
            continue;
        printf("tuning %s:\n", runs[m]);
        failures += ict_diff_backend_tuned("cuda", runs[m], q ? 40 : 200,
                                           ICT_DIFF_SEED ^ (uint64_t)(m + 1), ICT_DIFF_MAX_DIM);
    }

    /* 2. Named low-rank kernels take the separable path (issue 4) and pass. */
    const char *named[] = {"gaussian:3",  "gaussian:5", "gaussian:7", "gaussian:9", "gaussian:15",
                           "gaussian:31", "box:5",      "box:11",     "sobel-x",    "sobel-y",
                           "prewitt-x",   "scharr-y",   "laplacian",  "unsharp:5",  "unsharp:9"};
    const int nn = (int)(sizeof named / sizeof named[0]);
    ict_rng r;
    ict_rng_seed(&r, 0xFA57F00Dull);
    int named_fail = 0, named_cases = 0;
    for (int rep = 0; rep < (ict_part(nruns) ? q ? 1 : 3 : 0); rep++)
        for (int i = 0; i < nn; i++) {
            const int w = ict_range(&r, 1, 300), h = ict_range(&r, 1, 200);
            const int ch = ict_range(&r, 1, 4);
            const ic_layout lay = ict_below(&r, 2) ? IC_SOA : IC_AOS;
            const ic_border b = (ic_border)((i + rep) % 5);
            const float bias = ict_below(&r, 2) ? 0.0f : (float)(ict_uniform(&r) * 40 - 20);
            /* The Laplacian has rank 2 and integer weights: sums land exactly on
             * .5 and only the exact direct sum rounds those ties as the oracle
             * does, so the planner keeps it direct (fast_plan.cu, dyadic). */
            /* Square kernels up to 9x9 take the rows method (fast_rows.cu),
             * separable in registers when the factors are usable; larger ones
             * the shared-memory separable method. */
            const int small = strcmp(named[i], "gaussian:15") && strcmp(named[i], "gaussian:31") &&
                              strcmp(named[i], "box:11");
            const int gauss_or_box =
                !strncmp(named[i], "gaussian", 8) || !strncmp(named[i], "box", 3);
            /* rows takes 1, 3 and 4 interleaved channels and any SoA image;
             * 2 interleaved channels stay on the shared-memory methods */
            const int rows_ok = lay == IC_SOA || ch != 2;
            /* (the rows method applies small separable kernels as row and
             * column passes in registers where that is cheaper, bench table H) */
            (void)gauss_or_box;
            const char *want = !small                                       ? SEPARABLE
                               : !strcmp(named[i], "unsharp:9") || !rows_ok ? NULL
                                                                            : "method rows";
            named_fail += check_named(named[i], w, h, ch, lay, b, (int)ict_below(&r, 2), bias, want,
                                      &r, 0, 0);
            named_cases++;
        }
    printf("named separable kernels: %d cases, %d failures\n", named_cases, named_fail);
    failures += named_fail;

    /* 3. Big images, sampled rows: FFT (31x31 full rank) and separable (Gaussian 31). */
    const int bw = q ? 1920 : 7680, bh = q ? 1080 : 4320;
    const int rows[][2] = {{0, 6}, {bh / 2 - 3, bh / 2 + 3}, {bh - 6, bh}};
    int big_fail = 0;
    for (int i = 0; i < (ict_part(nruns + 1) ? 3 : 0); i++) {
        big_fail += check_named("gaussian:31", bw, bh, 3, IC_AOS, IC_BORDER_REFLECT, 1, 0.0f,
                                SEPARABLE, &r, rows[i][0], rows[i][1]);
        /* a fixed full-rank 31x31: rows of a ramp times a different ramp per
         * row; the planner takes the tensor method (sm_80 and later), the
         * FFT forced */
        char text[31 * 31 * 8 + 64];
        full_rank_31(text, sizeof text);
        big_fail += check_named(text, bw, bh, 3, IC_AOS, (ic_border)i, 1, 0.0f, "method tensor", &r,
                                rows[i][0], rows[i][1]);
        big_fail += check_named_type(text, bw, bh, 3, IC_AOS, (ic_border)i, 1, 0.0f, "method fft",
                                     &r, rows[i][0], rows[i][1], IC_U8, "method=fft");
    }
    /* the rows method as the planner takes it on a big image (4 rows per
     * thread), direct and separable, every border mode */
    for (int i = 0; i < (ict_part(nruns + 2) ? 3 : 0); i++) {
        big_fail += check_named("gaussian:5", bw, bh, 3, IC_AOS, (ic_border)(i + 1), 1, 0.0f,
                                "method rows", &r, rows[i][0], rows[i][1]);
        big_fail += check_named("1 2 3 4 5 6 7; 7 1 2 3 4 5 6; 6 7 1 2 3 4 5; 5 6 7 1 2 3 4; "
                                "4 5 6 7 1 2 3; 3 4 5 6 7 1 2; 2 3 4 5 6 7 1 / 196",
                                bw, bh, i == 1 ? 1 : 4, i == 2 ? IC_SOA : IC_AOS, (ic_border)i, 0,
                                1.5f, "method rows", &r, rows[i][0], rows[i][1]);
    }
    printf("big images: %d failures\n", big_fail);
    failures += big_fail;

    /* 4. 16-bit samples. */
    if (ict_part(nruns + 3))
        failures += sixteen_bits(q, &r);

    /* 5. The tensor method on its own cases. */
    if (ict_part(nruns + 4))
        failures += tensor_cases(q, &r);

    /* 6. The rows method one input row at a time (8 rows a thread and more). */
    if (ict_part(nruns + 5))
        failures += rows_roll_cases(q, &r);

    printf("test_gpu_fast: %d failures\n", failures);
    return failures ? 1 : 0;
}
