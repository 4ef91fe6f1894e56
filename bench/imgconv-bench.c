/*
 * imgconv-bench - reproduces seed 004's performance study and measures it
 * against the hardware:
 *   A  speedup over `seq` for 480p, 720p, HD, 4K, 8K with a 3x3 Gaussian;
 *   B  speedup at HD with 3x3, 5x5, 7x7, 9x9 Gaussians;
 *   C  memory levels: every CUDA backend on the same cases;
 *   D  AoS vs SoA;
 *   E  8K with 9x9, 15x15, 21x21, 31x31 general (random, full-rank) kernels
 *      and Gaussians up to 31x31 (the large-kernel cells the peers are compared on);
 *   F  the fast path's methods forced one by one (the planner's calibration);
 *   G  agreement of the fast path's methods with the `cpu` backend;
 *   M  many images in one launch: 64 x 480p, 64 x 720p, 256 x 64x64
 *      and 64 mixed sizes, batched vs one by one vs the floor;
 *   P  premultiplied alpha: RGBA/GA premultiplied vs independent vs
 *      the image without alpha on the fast path, and the strategy backends;
 *   R  seed 003 Fig 7.14's arithmetic-to-global-memory ratio computed for
 *      every tiled backend's tile as built (bench/fig714.h; no GPU needed;
 *      measured by `scripts/gpu-check.sh ratio`).
 * Every cell reports ms, GB/s, GFLOP/s and the fraction of its floor,
 * max(bytes in + out / copy bandwidth, multiply-adds of the cheapest exact
 * method / FMA rate), both ceilings measured in the same run; NPP side by side
 * when built with it. GPU times are kernel-only (bench_gpu.h says how); the
 * strategy backends (cuda-global ...) are timed through their contexts
 * (ic_timing.kernel_ms, CUDA events), with the image uploaded before each run.
 *
 *   imgconv-bench --out DIR --stamp STAMP [--quick]
 * writes DIR/bench-STAMP.md, DIR/bench-STAMP.json and DIR/bench-STAMP.png
 * (bench/plot.py, skipped when python3 or matplotlib is missing).
 * Without CUDA it benchmarks seq against cpu only.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define IC_ADVANCED_API /* ic_plan, ic_tuning, ic_convolve_async */
#include "bench_transfer.h"
#include "fig714.h"
#include "imgconv.h"
#ifdef IC_HAVE_CUDA
#include "bench_cupti.h"
#include "bench_gpu.h"
#include "bench_linalg.h"
#endif

/* ---- options and output -------------------------------------------------- */

static struct {
    const char *out, *stamp;
    const char *tables; /* letters of the tables to run (NULL: all) */
    int quick;
    int reps;
    FILE *md, *json;
    int json_first;
    double copy_bps, fma_per_s; /* ceilings (0: not measured) */
    int gpu;
    char device[256];
} B;

#ifdef IC_HAVE_CUDA
static bg_ctx *G;
#endif

static void md(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vfprintf(B.md, fmt, ap);
    va_end(ap);
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ---- cases ------------------------------------------------------------------- */

typedef struct size_def {
    const char *name;
    int w, h;
} size_def;

static const size_def SIZES[] = {
    {"480p", 640, 480}, {"720p", 1280, 720}, {"HD", 1920, 1080},
    {"4K", 3840, 2160}, {"8K", 7680, 4320},
};

/* A kernel of the study: "gaussian:K" or a random full-rank KxK one. */
static int make_kernel(ic_kernel *k, const char *kind, int K)
{
    if (!strcmp(kind, "gaussian")) {
        char text[32];
        snprintf(text, sizeof text, "gaussian:%d", K);
        return ic_kernel_parse(k, text) == IC_OK ? 0 : -1;
    }
    /* random: coefficients uniform in [0, 1), divisor = their sum (a blur with
     * random weights: outputs stay in range, the matrix is full rank) */
    float *c = malloc((size_t)K * K * sizeof *c);
    if (!c)
        return -1;
    unsigned long long s = 0x9E3779B97F4A7C15ull ^ (unsigned long long)K;
    double sum = 0;
    for (int i = 0; i < K * K; i++) {
        s = s * 6364136223846793005ull + 1442695040888963407ull;
        c[i] = (float)((s >> 40) / 16777216.0);
        sum += c[i];
    }
    const int r = ic_kernel_create(k, K, K, c, sum) == IC_OK ? 0 : -1;
    free(c);
    if (!r)
        snprintf(k->name, sizeof k->name, "random:%d", K);
    return r;
}

/* Multiply-adds per output sample of the cheapest exact method and the rank. */
static double cheapest_fmas(const ic_kernel *k, int *rank)
{
    const double full = (double)k->width * k->height;
    ic_factors f;
    memset(&f, 0, sizeof f);
    *rank = 0;
    if (ic_kernel_factor(k, 1e-6, 0, &f) == IC_OK && f.rank > 0) {
        *rank = f.rank;
        const double sep = (double)f.rank * (k->width + k->height);
        ic_factors_free(&f);
        return sep < full ? sep : full;
    }
    ic_factors_free(&f);
    return full;
}

typedef struct cell {
    const char *table;
    char case_name[64];
    char size[16];
    int w, h, channels;
    const char *layout;
    char kernel[32];
    int K, rank;
    char backend[32];
    char method[16];
    double ms, pred_ms;
    double cupti_ms;      /* CUPTI kernel time (--tables K), 0 when not measured */
    double samples, fmas; /* fmas per sample of the cheapest exact method */
    int batch;            /* images per call (batch cells), 0 or 1: one */
} cell;

static double floor_ms(const cell *c)
{
    if (B.copy_bps <= 0 || B.fma_per_s <= 0)
        return NAN;
    const double mem = 2.0 * c->samples / B.copy_bps;
    const double fma = c->samples * c->fmas / B.fma_per_s;
    return 1e3 * (mem > fma ? mem : fma);
}

static void json_cell(const cell *c, double seq_ms, double npp_ms, double nppg_ms)
{
    const double fl = floor_ms(c);
    fprintf(B.json,
            "%s\n    {\"table\": \"%s\", \"case\": \"%s\", \"size\": \"%s\", \"width\": %d, "
            "\"height\": %d, \"channels\": %d, \"layout\": \"%s\", \"kernel\": \"%s\", \"k\": %d, "
            "\"rank\": %d, \"backend\": \"%s\", \"method\": \"%s\", \"ms\": %.6g, "
            "\"pred_ms\": %.6g, \"gbps\": %.6g, \"gflops\": %.6g, \"floor_ms\": %.6g, "
            "\"floor_fraction\": %.4g, \"speedup_vs_seq\": %.6g, \"npp_filter32f_ms\": %.6g, "
            "\"npp_gauss_ms\": %.6g, \"cupti_ms\": %.6g, \"batch\": %d}",
            B.json_first ? "" : ",", c->table, c->case_name, c->size, c->w, c->h, c->channels,
            c->layout, c->kernel, c->K, c->rank, c->backend, c->method, c->ms,
            c->pred_ms > 0 ? c->pred_ms : -1.0, 2.0 * c->samples / (c->ms * 1e-3) / 1e9,
            2.0 * c->samples * c->fmas / (c->ms * 1e-3) / 1e9, isnan(fl) ? -1.0 : fl,
            isnan(fl) ? -1.0 : fl / c->ms, seq_ms > 0 ? seq_ms / c->ms : -1.0,
            npp_ms > 0 ? npp_ms : -1.0, nppg_ms > 0 ? nppg_ms : -1.0,
            c->cupti_ms > 0 ? c->cupti_ms : -1.0, c->batch > 1 ? c->batch : 1);
    B.json_first = 0;
}

/* ---- timing through a context (CPU backends, CUDA strategy backends) ---------- */

static int time_ctx(const char *backend, const ic_image *src, ic_image *dst, const ic_kernel *k,
                    const ic_params *p, int reps, double *med_ms)
{
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, backend, NULL) != IC_OK)
        return -1;
    double t[64];
    if (reps > 64)
        reps = 64;
    int ok = 1;
    if (reps > 1 && ic_convolve(ctx, src, dst, k, p) != IC_OK) /* warm-up */
        ok = 0;
    for (int i = 0; ok && i < reps; i++) {
        const double t0 = now_ms();
        if (ic_convolve(ctx, src, dst, k, p) != IC_OK) {
            ok = 0;
            break;
        }
        const double wall = now_ms() - t0;
        const ic_timing tm = ic_context_timing(ctx);
        t[i] = tm.kernel_ms > 0 ? tm.kernel_ms : wall;
    }
    if (!ok)
        fprintf(stderr, "imgconv-bench: %s failed: %s\n", backend, ic_last_error());
    ic_context_free(ctx);
    if (!ok)
        return -1;
    qsort(t, (size_t)reps, sizeof t[0], cmp_double);
    *med_ms = reps % 2 ? t[reps / 2] : 0.5 * (t[reps / 2 - 1] + t[reps / 2]);
    return 0;
}

/* CUDA strategy backends present and usable in this build, in table order. */
static int strategy_backends(const char **names, int max)
{
    int n = 0;
    for (int i = 0; i < ic_backend_count() && n < max; i++) {
        ic_backend_info info;
        if (ic_backend_get(i, &info) == IC_OK && info.usable && !strncmp(info.name, "cuda-", 5))
            names[n++] = info.name;
    }
    return n;
}

static void fmt_x(char *b, size_t n, double num, double den)
{
    if (num > 0 && den > 0)
        snprintf(b, n, "%.1f", num / den);
    else
        snprintf(b, n, "-");
}

static void fmt_t(char *b, size_t n, double ms)
{
    if (ms > 0)
        snprintf(b, n, ms < 0.1 ? "%.4f" : ms < 10 ? "%.3f" : "%.1f", ms);
    else
        snprintf(b, n, "-");
}

/* ---- one study row (speed-up over seq) ------------------------------------------------ */

typedef struct row_result {
    double seq, cpu, strat[16], fast, npp, nppg;
    char method[16];
    double pred;
    cell c;
} row_result;

static void init_cell(cell *c, const char *table, const char *size, const ic_image *img,
                      const ic_kernel *k, const char *kind)
{
    memset(c, 0, sizeof *c);
    c->table = table;
    snprintf(c->size, sizeof c->size, "%s", size);
    c->w = img->width;
    c->h = img->height;
    c->channels = img->channels;
    c->layout = img->layout == IC_SOA ? "SoA" : "AoS";
    snprintf(c->kernel, sizeof c->kernel, "%s", kind);
    c->K = k->width;
    c->samples = (double)img->width * img->height * img->channels;
    c->fmas = cheapest_fmas(k, &c->rank);
    snprintf(c->case_name, sizeof c->case_name, "%s %s %dx%d %s", size, kind, k->width, k->height,
             c->layout);
}

static void emit(cell *c, const char *backend, const char *method, double ms, double pred,
                 double seq, double npp, double nppg)
{
    if (!(ms > 0))
        return;
    snprintf(c->backend, sizeof c->backend, "%s", backend);
    snprintf(c->method, sizeof c->method, "%s", method ? method : "");
    c->ms = ms;
    c->pred_ms = pred;
    json_cell(c, seq, npp, nppg);
}

static void study_row(const char *table, const size_def *sz, const char *kind, int K,
                      const char **strat, int nstrat, row_result *r)
{
    memset(r, 0, sizeof *r);
    ic_image src, dst;
    ic_kernel k;
    if (ic_image_create(&src, sz->w, sz->h, 3, IC_AOS) != IC_OK ||
        ic_image_create(&dst, sz->w, sz->h, 3, IC_AOS) != IC_OK || make_kernel(&k, kind, K)) {
        fprintf(stderr, "imgconv-bench: out of memory for %s\n", sz->name);
        exit(1);
    }
    ic_image_chart(&src, 1234);
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_REPLICATE;
    init_cell(&r->c, table, sz->name, &src, &k, kind);
    const int big = (double)sz->w * sz->h > 4e6;
    time_ctx("seq", &src, &dst, &k, &p, 1, &r->seq);
    time_ctx("cpu", &src, &dst, &k, &p, B.quick ? 1 : big ? 3 : 5, &r->cpu);
    emit(&r->c, "seq", NULL, r->seq, 0, r->seq, 0, 0);
    emit(&r->c, "cpu", NULL, r->cpu, 0, r->seq, 0, 0);
    for (int i = 0; i < nstrat; i++) {
        if (time_ctx(strat[i], &src, &dst, &k, &p, B.quick ? 3 : big ? 10 : 20, &r->strat[i]))
            r->strat[i] = 0;
        emit(&r->c, strat[i], NULL, r->strat[i], 0, r->seq, 0, 0);
    }
#ifdef IC_HAVE_CUDA
    if (B.gpu) {
        char err[256];
        ic_plan plan;
        memset(&plan, 0, sizeof plan);
        if (bg_set_image(G, &src, 16, err, sizeof err) ||
            bg_time_fast(G, &k, p.border, B.reps, NULL, &r->fast, &plan, err, sizeof err)) {
            fprintf(stderr, "imgconv-bench: cuda on %s: %s\n", sz->name, err);
            r->fast = 0;
        } else {
            snprintf(r->method, sizeof r->method, "%s", ic_method_name(plan.method));
            r->pred = plan.pred_ms;
        }
        if (bg_has_npp()) {
            if (bg_time_npp_filter(G, &k, B.reps, &r->npp, err, sizeof err))
                r->npp = 0;
            if (!strcmp(kind, "gaussian") &&
                bg_time_npp_gauss(G, K, B.reps, &r->nppg, err, sizeof err))
                r->nppg = 0;
        }
        emit(&r->c, "cuda", r->method, r->fast, r->pred, r->seq, r->npp, r->nppg);
        emit(&r->c, "npp-filter32f", NULL, r->npp, 0, r->seq, 0, 0);
        emit(&r->c, "npp-gaussborder", NULL, r->nppg, 0, r->seq, 0, 0);
        /* the resolution study (every size): what an empty kernel and a device copy of
         * the image take by the same method (peers_table.py's floors) */
        double fe = 0, fc = 0;
        if (!strcmp(table, "A") && bg_time_floors(G, B.reps, &fe, &fc, err, sizeof err) == 0) {
            emit(&r->c, "floor-empty-kernel", NULL, fe, 0, r->seq, 0, 0);
            emit(&r->c, "floor-d2d-copy", NULL, fc, 0, r->seq, 0, 0);
        }
    }
#endif
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
}

static void study_table(const char *table, const char *title, const size_def *sizes, int nsizes,
                        const int *ks, int nks)
{
    const char *strat[16];
    const int nstrat = B.gpu ? strategy_backends(strat, 16) : 0;
    const int nrows = nsizes > nks ? nsizes : nks;
    row_result *rows = calloc((size_t)nrows, sizeof *rows);
    if (!rows)
        exit(1);
    for (int i = 0; i < nrows; i++) {
        const size_def *sz = nsizes > 1 ? &sizes[i] : &sizes[0];
        const int K = nks > 1 ? ks[i] : ks[0];
        study_row(table, sz, "gaussian", K, strat, nstrat, &rows[i]);
        fprintf(stderr, "  %s: %s %dx%d done\n", table, sz->name, K, K);
    }
    md("\n## %s\n\nSpeedup over `seq` (seq time in ms; others: seq time / their kernel time). "
       "RGB AoS, replicate border.\n\n| case | seq ms | cpu",
       title);
    for (int i = 0; i < nstrat; i++)
        md(" | %s", strat[i]);
    md("%s |\n|---|---|---", B.gpu ? " | **cuda** | NPP Filter32f | NPP GaussBorder" : "");
    for (int i = 0; i < nstrat + (B.gpu ? 3 : 0); i++)
        md("|---");
    md("|\n");
    for (int i = 0; i < nrows; i++) {
        const row_result *r = &rows[i];
        char b[32];
        fmt_t(b, sizeof b, r->seq);
        md("| %s | %s", r->c.case_name, b);
        fmt_x(b, sizeof b, r->seq, r->cpu);
        md(" | %s", b);
        for (int j = 0; j < nstrat; j++) {
            fmt_x(b, sizeof b, r->seq, r->strat[j]);
            md(" | %s", b);
        }
        if (B.gpu) {
            fmt_x(b, sizeof b, r->seq, r->fast);
            md(" | **%s**", b);
            fmt_x(b, sizeof b, r->seq, r->npp);
            md(" | %s", b);
            fmt_x(b, sizeof b, r->seq, r->nppg);
            md(" | %s", b);
        }
        md(" |\n");
    }
    if (!B.gpu) {
        free(rows);
        return;
    }
    md("\n`cuda` against the floor and NPP (kernel-only ms, median; floor = max(bytes/copy bw, "
       "FMAs of the cheapest exact method / FMA rate)):\n\n"
       "| case | method | cuda ms | predicted ms | GB/s | GFLOP/s | floor ms | floor / cuda | "
       "NPP Filter32f ms | NPP Gauss ms | NPP F32 / cuda | NPP Gauss / cuda |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nrows; i++) {
        const row_result *r = &rows[i];
        const double fl = floor_ms(&r->c);
        char a[32], p[32], f[32], n1[32], n2[32], x1[32], x2[32];
        fmt_t(a, sizeof a, r->fast);
        fmt_t(p, sizeof p, r->pred);
        fmt_t(f, sizeof f, fl);
        fmt_t(n1, sizeof n1, r->npp);
        fmt_t(n2, sizeof n2, r->nppg);
        fmt_x(x1, sizeof x1, r->npp, r->fast);
        fmt_x(x2, sizeof x2, r->nppg, r->fast);
        md("| %s | %s | %s | %s | %.0f | %.0f | %s | %.2f | %s | %s | %s | %s |\n", r->c.case_name,
           r->method, a, p, r->fast > 0 ? 2.0 * r->c.samples / (r->fast * 1e6) : 0.0,
           r->fast > 0 ? 2.0 * r->c.samples * r->c.fmas / (r->fast * 1e6) : 0.0, f,
           r->fast > 0 ? fl / r->fast : 0.0, n1, n2, x1, x2);
    }
    free(rows);
}

/* ---- R: seed 003 Fig 7.14, the arithmetic-to-global-memory ratio ------------------------ */

static void fig714_row(const char *design, const char *tile, int k, fig714_tile t)
{
    if (t.outputs <= 0) {
        md("| %s | %s | %dx%d | - | %.0f | - | - | - |\n", design, tile, k, k, t.loads);
        return;
    }
    /* uint8: one element is one byte, 4x the seed's float32 operations per byte */
    md("| %s | %s | %dx%d | %.0f | %.0f | %.2f | %.2f | %.2f |\n", design, tile, k, k, t.outputs,
       t.loads, fig714_macs_per_element(t), fig714_round2(fig714_ratio(t)),
       fig714_round2(4.0 * fig714_ratio(t)));
}

static void fig714_table(void)
{
    md("\n## R. Arithmetic-to-global-memory ratio (seed 003, Fig 7.14), computed\n\n"
       "The seed's formula (bench/fig714.h, checked against the printed figure by "
       "tests/test_fig714.c) applied to each tiled backend's tile as built: a tile computes "
       "outputs x K*K multiply-adds (MAC) from `loads` elements read by its load instructions "
       "from global memory (an interior tile; caches not counted). MAC / element is unit-free; "
       "the seed's unit is operations (multiply and add) per byte of float32 elements = MAC / "
       "element x 2 / 4; imgconv's samples are uint8 (1 byte), so its operations per byte are "
       "4x that. Bound: K*K MAC per element (K*K/2 in the seed's unit). Weights are not "
       "counted (the seed keeps them in constant memory; the strategy backends read them with "
       "__ldg, one per MAC, from L1). The rows method's tile is one thread: 16 samples x 1, 2 "
       "or 4 rows in registers, three 16-sample loads per input row (the side loads mostly hit "
       "L1); the planner runs full 5x5..9x9 sums with 2 rows per thread. Measured counterpart: "
       "`scripts/gpu-check.sh ratio` (bench/results/ratio-*.md).\n\n"
       "| design (as built) | tile | filter | outputs | loads (elements) | MAC / element | OP/B "
       "float32 (seed) | OP/B uint8 |\n|---|---|---|---|---|---|---|---|\n");
    static const int ks[2] = {5, 9};
    static const int seed_in[3] = {8, 16, 32};
    for (int i = 0; i < 2; i++) {
        const int k = ks[i];
        char tile[64];
        fig714_row("Fig 7.9 = **cuda-global**", "none: one output, K*K loads", k, fig714_direct(k));
        for (int j = 0; j < 3; j++) {
            snprintf(tile, sizeof tile, "%dx%d in, %dx%d out", seed_in[j], seed_in[j],
                     seed_in[j] - k + 1, seed_in[j] - k + 1);
            fig714_row(seed_in[j] == FIG714_TILE_IN ? "Fig 7.12 = **cuda-tiled-in**" : "Fig 7.12",
                       seed_in[j] - k + 1 > 0 ? tile : "no output tile", k,
                       fig714_input_tile(seed_in[j], k));
        }
        const int o = FIG714_TILE_OUT, c = FIG714_TILE_CACHED;
        snprintf(tile, sizeof tile, "%dx%d out, %dx%d in", o, o, o + k - 1, o + k - 1);
        fig714_row("**cuda-tiled-out**, **cuda-tiled-halo**", tile, k, fig714_output_tile(o, k));
        snprintf(tile, sizeof tile, "%dx%d, halo taps as loads", c, c);
        fig714_row("Fig 7.15 = **cuda-tiled-cached**", tile, k, fig714_cached_tile(c, k, 0));
        snprintf(tile, sizeof tile, "%dx%d, halo taps from cache", c, c);
        fig714_row("Fig 7.15 = **cuda-tiled-cached**", tile, k, fig714_cached_tile(c, k, 1));
        for (int rows = 1; rows <= 4; rows *= 2) {
            snprintf(tile, sizeof tile, "thread: %dx%d out, %d rows x 48 loaded", FIG714_ROWS_CHUNK,
                     rows, rows + k - 1);
            char design[32];
            snprintf(design, sizeof design, "**cuda** rows x%d", rows);
            fig714_row(design, tile, k, fig714_rows_thread(rows, k));
        }
        md("| bound (every element used K*K times) | - | %dx%d | - | - | %d | %.2f | %.2f |\n", k,
           k, k * k, fig714_bound(k), 4.0 * fig714_bound(k));
    }
}

#ifdef IC_HAVE_CUDA
/* ---- C: memory levels ------------------------------------------------------------ */

static void memory_levels(void)
{
    const char *strat[16];
    const int nstrat = strategy_backends(strat, 16);
    struct {
        const char *size;
        int w, h;
        const char *kind;
        int K;
    } cases[] = {{"HD", 1920, 1080, "gaussian", 3},
                 {"HD", 1920, 1080, "gaussian", 9},
                 {"HD", 1920, 1080, "random", 9},
                 {"4K", 3840, 2160, "random", 5}};
    const int nc = B.quick ? 2 : 4;
    double t[4][18];
    memset(t, 0, sizeof t);
    for (int i = 0; i < nc; i++) {
        ic_image src, dst;
        ic_kernel k;
        if (ic_image_create(&src, cases[i].w, cases[i].h, 3, IC_AOS) != IC_OK ||
            ic_image_create(&dst, cases[i].w, cases[i].h, 3, IC_AOS) != IC_OK ||
            make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        ic_image_chart(&src, 99);
        ic_params p;
        ic_params_default(&p);
        p.border = IC_BORDER_REPLICATE;
        cell c;
        init_cell(&c, "C", cases[i].size, &src, &k, cases[i].kind);
        for (int j = 0; j < nstrat; j++) {
            if (time_ctx(strat[j], &src, &dst, &k, &p, B.quick ? 3 : 20, &t[i][j]))
                t[i][j] = 0;
            emit(&c, strat[j], NULL, t[i][j], 0, 0, 0, 0);
        }
        if (time_ctx("cuda", &src, &dst, &k, &p, B.quick ? 3 : 20, &t[i][nstrat]))
            t[i][nstrat] = 0;
        emit(&c, "cuda (context)", NULL, t[i][nstrat], 0, 0, 0, 0);
        char err[256];
        ic_plan plan;
        memset(&plan, 0, sizeof plan);
        if (bg_set_image(G, &src, 0, err, sizeof err) ||
            bg_time_fast(G, &k, p.border, B.reps, NULL, &t[i][nstrat + 1], &plan, err, sizeof err))
            t[i][nstrat + 1] = 0;
        emit(&c, "cuda", ic_method_name(plan.method), t[i][nstrat + 1], plan.pred_ms, 0, 0, 0);
        ic_kernel_free(&k);
        ic_image_free(&src);
        ic_image_free(&dst);
        fprintf(stderr, "  C: case %d done\n", i);
    }
    md("\n## C. Memory levels\n\nKernel ms of every CUDA backend (median). Strategy backends and "
       "`cuda (context)`: ic_timing.kernel_ms of ic_convolve, CUDA events around the launch, the "
       "image uploaded just before (so it may sit in L2); `cuda (device)`: device-resident "
       "rotating inputs (bench_gpu.h). RGB AoS, replicate border.\n\n| backend");
    for (int i = 0; i < nc; i++)
        md(" | %s %s %d", cases[i].size, cases[i].kind, cases[i].K);
    md(" |\n|---");
    for (int i = 0; i < nc; i++)
        md("|---");
    md("|\n");
    for (int j = 0; j < nstrat + 2; j++) {
        md("| %s", j < nstrat ? strat[j] : j == nstrat ? "cuda (context)" : "**cuda (device)**");
        for (int i = 0; i < nc; i++) {
            char b[32];
            fmt_t(b, sizeof b, t[i][j]);
            md(" | %s", b);
        }
        md(" |\n");
    }
}

/* ---- D: AoS vs SoA ------------------------------------------------------------------ */

static void aos_soa(void)
{
    struct {
        const char *size;
        int w, h;
        const char *kind;
        int K;
    } cases[] = {{"HD", 1920, 1080, "gaussian", 3},
                 {"HD", 1920, 1080, "random", 9},
                 {"8K", 7680, 4320, "gaussian", 3},
                 {"8K", 7680, 4320, "random", 9}};
    const int nc = B.quick ? 2 : 4;
    md("\n## D. AoS vs SoA\n\nKernel ms (median), RGB, replicate border; `cuda` device-resident, "
       "`cuda-global` / `cuda-const` through their contexts.\n\n"
       "| case | cuda AoS | cuda SoA | floor | cuda-global AoS | cuda-global SoA | cuda-const AoS "
       "| cuda-const SoA |\n|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        double t[2][3];
        memset(t, 0, sizeof t);
        cell c;
        for (int l = 0; l < 2; l++) {
            const ic_layout lay = l ? IC_SOA : IC_AOS;
            ic_image src0, src, dst;
            ic_kernel k;
            if (ic_image_create(&src0, cases[i].w, cases[i].h, 3, IC_AOS) != IC_OK ||
                ic_image_create(&src, cases[i].w, cases[i].h, 3, lay) != IC_OK ||
                ic_image_create(&dst, cases[i].w, cases[i].h, 3, lay) != IC_OK ||
                make_kernel(&k, cases[i].kind, cases[i].K))
                exit(1);
            ic_image_chart(&src0, 7);
            ic_image_copy(&src, &src0);
            ic_params p;
            ic_params_default(&p);
            p.border = IC_BORDER_REPLICATE;
            init_cell(&c, "D", cases[i].size, &src, &k, cases[i].kind);
            char err[256];
            ic_plan plan;
            memset(&plan, 0, sizeof plan);
            if (bg_set_image(G, &src, 0, err, sizeof err) ||
                bg_time_fast(G, &k, p.border, B.reps, NULL, &t[l][0], &plan, err, sizeof err))
                t[l][0] = 0;
            emit(&c, "cuda", ic_method_name(plan.method), t[l][0], plan.pred_ms, 0, 0, 0);
            const int reps = B.quick ? 3 : cases[i].w > 4000 ? 10 : 20;
            if (time_ctx("cuda-global", &src, &dst, &k, &p, reps, &t[l][1]))
                t[l][1] = 0;
            emit(&c, "cuda-global", NULL, t[l][1], 0, 0, 0, 0);
            if (time_ctx("cuda-const", &src, &dst, &k, &p, reps, &t[l][2]))
                t[l][2] = 0;
            emit(&c, "cuda-const", NULL, t[l][2], 0, 0, 0, 0);
            ic_kernel_free(&k);
            ic_image_free(&src0);
            ic_image_free(&src);
            ic_image_free(&dst);
        }
        char b[6][32], f[32];
        fmt_t(b[0], 32, t[0][0]);
        fmt_t(b[1], 32, t[1][0]);
        fmt_t(b[2], 32, t[0][1]);
        fmt_t(b[3], 32, t[1][1]);
        fmt_t(b[4], 32, t[0][2]);
        fmt_t(b[5], 32, t[1][2]);
        fmt_t(f, 32, floor_ms(&c));
        md("| %s %s %d | %s | %s | %s | %s | %s | %s | %s |\n", cases[i].size, cases[i].kind,
           cases[i].K, b[0], b[1], f, b[2], b[3], b[4], b[5]);
        fprintf(stderr, "  D: case %d done\n", i);
    }
}

/* ---- E: 8K, large kernels ------------------------------------------------------------ */

static void large_kernels(void)
{
    struct {
        const char *kind;
        int K;
    } cases[] = {{"random", 9},    {"random", 15},   {"random", 21},  {"random", 31},
                 {"gaussian", 3},  {"gaussian", 5},  {"gaussian", 7}, {"gaussian", 9},
                 {"gaussian", 15}, {"gaussian", 21}, {"gaussian", 31}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    const int w = B.quick ? 1920 : 7680, h = B.quick ? 1080 : 4320;
    ic_image src;
    if (ic_image_create(&src, w, h, 3, IC_AOS) != IC_OK)
        exit(1);
    ic_image_chart(&src, 4242);
    char err[256];
    if (bg_set_image(G, &src, 16, err, sizeof err)) {
        fprintf(stderr, "imgconv-bench: %s\n", err);
        ic_image_free(&src);
        return;
    }
    md("\n## E. %s RGB, large kernels\n\nKernel ms (median, device-resident, replicate border). "
       "floor = max(bytes/copy, FMAs of the cheapest exact method (K^2 full rank, 2rK rank r) / "
       "FMA rate).\n\n| kernel | rank | method | cuda ms | predicted | GB/s | GFLOP/s | floor ms "
       "| floor / cuda | NPP Filter32f ms | NPP Gauss ms | NPP F32 / cuda | NPP Gauss / cuda |\n"
       "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n",
       B.quick ? "HD (quick)" : "8K");
    for (int i = 0; i < nc; i++) {
        ic_kernel k;
        if (make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        cell c;
        init_cell(&c, "E", B.quick ? "HD" : "8K", &src, &k, cases[i].kind);
        double t = 0, npp = 0, nppg = 0;
        ic_plan plan;
        memset(&plan, 0, sizeof plan);
        if (bg_time_fast(G, &k, IC_BORDER_REPLICATE, B.reps, NULL, &t, &plan, err, sizeof err)) {
            fprintf(stderr, "imgconv-bench: cuda %s %d: %s\n", cases[i].kind, cases[i].K, err);
            t = 0;
        }
        if (bg_has_npp()) {
            if (bg_time_npp_filter(G, &k, cases[i].K > 15 ? 5 : B.reps, &npp, err, sizeof err))
                npp = 0;
            if (!strcmp(cases[i].kind, "gaussian") &&
                bg_time_npp_gauss(G, cases[i].K, B.reps, &nppg, err, sizeof err))
                nppg = 0;
        }
        emit(&c, "cuda", ic_method_name(plan.method), t, plan.pred_ms, 0, npp, nppg);
        emit(&c, "npp-filter32f", NULL, npp, 0, 0, 0, 0);
        emit(&c, "npp-gaussborder", NULL, nppg, 0, 0, 0, 0);
        const double fl = floor_ms(&c);
        char a[32], p[32], f[32], n1[32], n2[32], x1[32], x2[32];
        fmt_t(a, sizeof a, t);
        fmt_t(p, sizeof p, plan.pred_ms);
        fmt_t(f, sizeof f, fl);
        fmt_t(n1, sizeof n1, npp);
        fmt_t(n2, sizeof n2, nppg);
        fmt_x(x1, sizeof x1, npp, t);
        fmt_x(x2, sizeof x2, nppg, t);
        md("| %s %dx%d | %d | %s | %s | %s | %.0f | %.0f | %s | %.2f | %s | %s | %s | %s |\n",
           cases[i].kind, cases[i].K, cases[i].K, c.rank, ic_method_name(plan.method), a, p,
           t > 0 ? 2.0 * c.samples / (t * 1e6) : 0.0,
           t > 0 ? 2.0 * c.samples * c.fmas / (t * 1e6) : 0.0, f, t > 0 ? fl / t : 0.0, n1, n2, x1,
           x2);
        ic_kernel_free(&k);
        fprintf(stderr, "  E: %s %d done\n", cases[i].kind, cases[i].K);
    }
    ic_image_free(&src);
}

/* ---- cells by image size (rows method, CUPTI) ---------------------------------------------- */

/* A cell: an image size (index into SIZES) and a kernel. */
typedef struct size_case {
    int size;
    const char *kind;
    int K;
} size_case;

/* Makes *src the chart image of SIZES[size] with `channels` samples a pixel
 * in `layout` on the device (bg_set_image with `halo`) unless *cur says it
 * already is. 0, or -1 with err filled. */
static int chart_shaped_on_device(ic_image *src, int *cur, int size, int channels, ic_layout layout,
                                  int halo, char *err, size_t n)
{
    const int key = size * 16 + channels * 2 + (layout == IC_SOA);
    if (key == *cur)
        return 0;
    const size_def *sz = &SIZES[size];
    ic_image_free(src);
    if (ic_image_create(src, sz->w, sz->h, channels, layout) != IC_OK)
        exit(1);
    ic_image_chart(src, 4242);
    if (bg_set_image(G, src, halo, err, n))
        return -1;
    *cur = key;
    return 0;
}

/* The same for an RGB AoS chart. */
static int chart_on_device(ic_image *src, int *cur, int size, int halo, char *err, size_t n)
{
    return chart_shaped_on_device(src, cur, size, 3, IC_AOS, halo, err, n);
}

/* ---- K: kernel time by CUPTI beside CUDA events ------------------------------------------ */

/* Times one backend on the current image: events median into *ev, CUPTI
 * median into *cu (0 when not measured). which: 0 cuda, 1 NPP Filter32f,
 * 2 NPP GaussBorder. */
static void time_both(int which, const ic_kernel *k, int K, double *ev, double *cu, ic_plan *plan)
{
    char err[256];
    int r = -1;
    *ev = *cu = 0;
    if (which == 0)
        r = bg_time_fast(G, k, IC_BORDER_REPLICATE, B.reps, NULL, ev, plan, err, sizeof err);
    else if (which == 1 && bg_has_npp())
        r = bg_time_npp_filter(G, k, K > 15 ? 9 : B.reps, ev, err, sizeof err);
    else if (which == 2 && bg_has_npp())
        r = bg_time_npp_gauss(G, K, B.reps, ev, err, sizeof err);
    if (r) {
        *ev = 0;
        return;
    }
    const double c = bg_cupti_ms(G);
    *cu = c > 0 ? c : 0;
}

static void cupti_table(void)
{
    char why[256];
    if (bc_open(why, sizeof why)) {
        md("\n## K. Kernel time by CUPTI beside CUDA events\n\nNot measured: %s.\n", why);
        return;
    }
    static const size_case cases[] = {{0, "gaussian", 3},  {1, "gaussian", 3}, {2, "gaussian", 3},
                                      {3, "gaussian", 3},  {4, "gaussian", 3}, {2, "gaussian", 5},
                                      {2, "gaussian", 7},  {2, "gaussian", 9}, {4, "gaussian", 9},
                                      {4, "gaussian", 15}, {4, "random", 9},   {4, "random", 15},
                                      {4, "random", 31}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    md("\n## K. Kernel time by CUPTI beside CUDA events\n\nThe same runs timed two ways "
       "(median of each): between two CUDA events (the other tables' method: includes the GPU's "
       "launch processing) and by CUPTI's kernel records (start to end of each kernel on the GPU, "
       "as torch.profiler times CV-CUDA). RGB AoS, replicate border, device-resident.\n\n"
       "| case | method | cuda events ms | cuda CUPTI ms | NPP F32 events | NPP F32 CUPTI | "
       "NPP Gauss events | NPP Gauss CUPTI | best NPP / cuda (CUPTI) |\n"
       "|---|---|---|---|---|---|---|---|---|\n");
    int cur = -1;
    ic_image src;
    memset(&src, 0, sizeof src);
    for (int i = 0; i < nc; i++) {
        if (B.quick && cases[i].size > 2)
            continue;
        const size_def *sz = &SIZES[cases[i].size];
        char err[256];
        if (chart_on_device(&src, &cur, cases[i].size, 16, err, sizeof err)) {
            fprintf(stderr, "imgconv-bench: %s\n", err);
            break;
        }
        ic_kernel k;
        if (make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        const int gauss = !strcmp(cases[i].kind, "gaussian");
        double ev[3], cu[3];
        ic_plan plan;
        memset(&plan, 0, sizeof plan);
        time_both(0, &k, cases[i].K, &ev[0], &cu[0], &plan);
        time_both(1, &k, cases[i].K, &ev[1], &cu[1], NULL);
        if (gauss && cases[i].K <= 15)
            time_both(2, &k, cases[i].K, &ev[2], &cu[2], NULL);
        else
            ev[2] = cu[2] = 0;
        cell c;
        init_cell(&c, "K", sz->name, &src, &k, cases[i].kind);
        static const char *const names[3] = {"cuda", "npp-filter32f", "npp-gaussborder"};
        for (int b = 0; b < 3; b++) {
            c.cupti_ms = cu[b];
            emit(&c, names[b], b == 0 ? ic_method_name(plan.method) : NULL, ev[b],
                 b == 0 ? plan.pred_ms : 0, 0, 0, 0);
        }
        double best = 0;
        for (int b = 1; b < 3; b++)
            if (cu[b] > 0 && (best == 0 || cu[b] < best))
                best = cu[b];
        char t[6][32], x[32];
        for (int b = 0; b < 3; b++) {
            fmt_t(t[2 * b], sizeof t[0], ev[b]);
            fmt_t(t[2 * b + 1], sizeof t[0], cu[b]);
        }
        fmt_x(x, sizeof x, best, cu[0]);
        md("| %s %s %dx%d | %s | %s | %s | %s | %s | %s | %s | %s |\n", sz->name, cases[i].kind,
           cases[i].K, cases[i].K, ic_method_name(plan.method), t[0], t[1], t[2], t[3], t[4], t[5],
           x);
        ic_kernel_free(&k);
        fprintf(stderr, "  K: %s %s %d done\n", sz->name, cases[i].kind, cases[i].K);
    }
    ic_image_free(&src);
    bc_close();
}

/* ---- F: methods forced ------------------------------------------------------------------ */

static void methods(void)
{
    struct {
        const char *kind;
        int K;
    } cases[] = {{"gaussian", 3},  {"gaussian", 9}, {"gaussian", 15},
                 {"gaussian", 31}, {"random", 3},   {"random", 9},
                 {"random", 15},   {"random", 21},  {"random", 31}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    const int w = B.quick ? 1920 : 7680, h = B.quick ? 1080 : 4320;
    /* the FFT with 256 and 512 tiles (unfused), and with 512 and the
     * multiply inside cuFFT's R2C transform; the tensor method */
    const ic_method ms[6] = {IC_METHOD_DIRECT, IC_METHOD_SEP, IC_METHOD_FFT,
                             IC_METHOD_FFT,    IC_METHOD_FFT, IC_METHOD_TENSOR};
    ic_image src;
    if (ic_image_create(&src, w, h, 3, IC_AOS) != IC_OK)
        exit(1);
    ic_image_chart(&src, 4242);
    char err[256];
    if (bg_set_image(G, &src, 0, err, sizeof err)) {
        ic_image_free(&src);
        return;
    }
    md("\n## F. Methods forced (planner calibration), %s RGB\n\nmeasured ms / predicted ms; "
       "`-` where the method cannot take the kernel; fft with 256x256 and 512x512 tiles, "
       "both unfused, and 512x512 with the spectrum multiply inside cuFFT's R2C "
       "transform (fft-fuse=always); tensor: the direct sum on the tensor cores.\n\n"
       "| kernel | planner picks | direct | sep | fft 256 | fft 512 | fft 512 fused | tensor |\n"
       "|---|---|---|---|---|---|---|---|\n",
       B.quick ? "HD" : "8K");
    for (int i = 0; i < nc; i++) {
        ic_kernel k;
        if (make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        cell c;
        init_cell(&c, "F", B.quick ? "HD" : "8K", &src, &k, cases[i].kind);
        ic_plan auto_plan;
        double dummy = 0;
        memset(&auto_plan, 0, sizeof auto_plan);
        bg_time_fast(G, &k, IC_BORDER_REPLICATE, 1, NULL, &dummy, &auto_plan, err, sizeof err);
        md("| %s %d | %s", cases[i].kind, cases[i].K, ic_method_name(auto_plan.method));
        for (int m = 0; m < 6; m++) {
            ic_plan plan;
            double t = 0;
            memset(&plan, 0, sizeof plan);
            ic_tuning tune;
            memset(&tune, 0, sizeof tune);
            tune.method = ms[m];
            if (m >= 2 && m <= 4)
                tune.fft_n = m == 2 ? 256 : 512;
            tune.fft_fuse = m == 4 ? 1 : 2; /* always / never: not the context's history */
            const int reps = cases[i].K >= 21 && ms[m] == IC_METHOD_DIRECT ? 5 : B.reps;
            const int bad =
                bg_time_fast(G, &k, IC_BORDER_REPLICATE, reps, &tune, &t, &plan, err, sizeof err) ||
                plan.method != ms[m];
            if (bad) {
                md(" | -");
                continue;
            }
            char name[32];
            snprintf(name, sizeof name, "cuda/%s%s", ic_method_name(ms[m]),
                     m == 2   ? "256"
                     : m == 3 ? "512"
                     : m == 4 ? "512f"
                              : "");
            emit(&c, name, ic_method_name(ms[m]), t, plan.pred_ms, 0, 0, 0);
            md(" | %.3f / %.3f", t, plan.pred_ms);
        }
        md(" |\n");
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
    fprintf(stderr, "  F done\n");
}

/* The start of a calibration case (rows, tile shapes, other layouts): the chart of
 * SIZES[size] with `channels` samples a pixel in `layout` on the device (kept
 * while the image stays), kernel `kind` K and the case's JSON cell. 1: skip
 * it (--quick leaves out 4K and 8K), -1: stop the table (no device image: the
 * error printed), 0: time it. */
static int calib_case_shaped(const char *table, int size, int channels, ic_layout layout,
                             const char *kind, int K, ic_image *src, int *cur, ic_kernel *k,
                             cell *c)
{
    char err[256];
    if (B.quick && size > 2)
        return 1;
    if (chart_shaped_on_device(src, cur, size, channels, layout, 0, err, sizeof err)) {
        fprintf(stderr, "imgconv-bench: %s\n", err);
        return -1;
    }
    if (make_kernel(k, kind, K))
        exit(1);
    init_cell(c, table, SIZES[size].name, src, k, kind);
    return 0;
}

/* The same on an RGB AoS chart. */
static int calib_case(const char *table, int size, const char *kind, int K, ic_image *src,
                      int *last_size, ic_kernel *k, cell *c)
{
    return calib_case_shaped(table, size, 3, IC_AOS, kind, K, src, last_size, k, c);
}

/* ---- H: rows method shapes (planner calibration) ------------------------------------- */

/* The rows method forced with 1, 2, 4, 8, 16, 32 and 64 output rows per
 * thread (ic_tuning.rows_shape; 8 and more for separable kernels only, a 3x3
 * at 8), separable (when the planner factors the kernel) and as the full
 * K*K sum with 1, 2 and 4 (ic_tuning.rows_full), next to the shared-memory
 * sep method and the planner's own pick: the data behind the planner's rows
 * shape rule (src/cuda/fast/rows.cu). */
static void rows_shapes(void)
{
    static const size_case cases[] = {
        {0, "gaussian", 3},  {1, "gaussian", 3},  {2, "gaussian", 3},  {3, "gaussian", 3},
        {4, "gaussian", 3},  {2, "gaussian", 5},  {2, "gaussian", 7},  {2, "gaussian", 9},
        {2, "random", 9},    {4, "gaussian", 5},  {4, "gaussian", 7},  {4, "gaussian", 9},
        {4, "random", 5},    {4, "random", 9},    {0, "gaussian", 15}, {1, "gaussian", 15},
        {2, "gaussian", 11}, {2, "gaussian", 13}, {2, "gaussian", 15}, {2, "gaussian", 17},
        {2, "gaussian", 21}, {2, "gaussian", 31}, {3, "gaussian", 15}, {3, "gaussian", 21},
        {4, "gaussian", 15}, {4, "gaussian", 21}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    static const char *const shapes[7] = {"1", "2", "4", "8", "16", "32", "64"};
    md("\n## H. The rows method: rows per thread and separable vs full sum (planner "
       "calibration)\n\nKernel ms (median, device-resident, RGB AoS, replicate border). `rows "
       "xN`: forced rows method with N output rows per thread, separable in registers where the "
       "planner factors the kernel (x8 and more: separable kernels taken one input row at a "
       "time, a 3x3 16 samples x 8 rows a thread, a 5x5..9x9 8 samples x N rows; rows takes "
       "nothing above 9x9); `full xN`: the same with the full K*K sum; `sep`: the shared-memory "
       "separable method; `tensor`: the tensor method (rank 1: a row and a column pass). The "
       "planner's pick is shown as method/rows per thread and its time.\n\n| case | planner | "
       "rows x1 | rows x2 | rows x4 | rows x8 | rows x16 | rows x32 | rows x64 | full x1 | full "
       "x2 | full x4 | sep | tensor |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"
       "\n");
    int last_size = -1;
    ic_image src;
    memset(&src, 0, sizeof src);
    char err[256];
    for (int i = 0; i < nc; i++) {
        const size_def *sd = &SIZES[cases[i].size];
        ic_kernel k;
        cell c;
        const int go =
            calib_case("H", cases[i].size, cases[i].kind, cases[i].K, &src, &last_size, &k, &c);
        if (go > 0)
            continue;
        if (go < 0) {
            ic_image_free(&src);
            return;
        }
        ic_plan plan;
        double t = 0;
        memset(&plan, 0, sizeof plan);
        /* the planner's pick timed too: its rows a thread need not be a
         * column below (rows_ring's rows by the waves) */
        const int pk =
            bg_time_fast(G, &k, IC_BORDER_REPLICATE, B.reps, NULL, &t, &plan, err, sizeof err);
        md("| %s %s %d | %s", sd->name, cases[i].kind, cases[i].K, ic_method_name(plan.method));
        if (plan.method == IC_METHOD_ROWS)
            md(" x%d%s", plan.rows_per_thread, plan.rank ? " sep" : "");
        if (!pk && t > 0) {
            emit(&c, "cuda/planner", ic_method_name(plan.method), t, plan.pred_ms, 0, 0, 0);
            md(" %.4f", t);
        }
        for (int full = 0; full < 2; full++)
            for (int sh = 0; sh < (full ? 3 : 7); sh++) {
                ic_tuning tune;
                memset(&tune, 0, sizeof tune);
                tune.method = IC_METHOD_ROWS;
                tune.rows_shape = atoi(shapes[sh]);
                tune.rows_full = full;
                memset(&plan, 0, sizeof plan);
                const int bad = bg_time_fast(G, &k, IC_BORDER_REPLICATE, B.reps, &tune, &t, &plan,
                                             err, sizeof err) ||
                                plan.method != IC_METHOD_ROWS ||
                                plan.rows_per_thread != tune.rows_shape;
                if (bad) {
                    md(" | -");
                    continue;
                }
                char name[32];
                snprintf(name, sizeof name, "cuda/rows%s-x%s", full ? "-full" : "", shapes[sh]);
                emit(&c, name, "rows", t, plan.pred_ms, 0, 0, 0);
                md(" | %.4f%s", t, !full && plan.rank ? " (sep)" : "");
            }
        static const ic_method others[2] = {IC_METHOD_SEP, IC_METHOD_TENSOR};
        for (int o = 0; o < 2; o++) {
            memset(&plan, 0, sizeof plan);
            ic_tuning tune;
            memset(&tune, 0, sizeof tune);
            tune.method = others[o];
            if (bg_time_fast(G, &k, IC_BORDER_REPLICATE, B.reps, &tune, &t, &plan, err,
                             sizeof err) ||
                plan.method != others[o]) {
                md(" | -");
                continue;
            }
            char name[32];
            snprintf(name, sizeof name, "cuda/%s", ic_method_name(others[o]));
            emit(&c, name, ic_method_name(others[o]), t, plan.pred_ms, 0, 0, 0);
            md(" | %.4f", t);
        }
        md(" |\n");
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
    fprintf(stderr, "  H done\n");
}

/* ---- S: tile shapes of the shared-memory methods (planner calibration) ----------------- */

/* The cells of one row of the tile-shape and layout tables: method m forced on the current
 * image (premultiplied alpha when pm) in the planner's tile shape
 * ("1ch"/"all" channels a block / rows, and its time), then in each shape, 1
 * and all channels a block times 8, 16, 32, 64 output rows ("-" where the
 * method cannot launch it). */
static void shape_cells(const ic_kernel *k, ic_method m, int pm, cell *c)
{
    static const int rows[4] = {8, 16, 32, 64};
    char err[256];
    ic_tuning tune;
    memset(&tune, 0, sizeof tune);
    tune.method = m;
    ic_plan plan;
    double t = 0;
    memset(&plan, 0, sizeof plan);
    if (bg_time_fast_alpha(G, k, IC_BORDER_REPLICATE, pm, B.reps, &tune, &t, &plan, err,
                           sizeof err) ||
        plan.method != m)
        md("- ");
    else {
        md("%s/%d %.4f", plan.channels_per_block == 1 ? "1ch" : "all", plan.tile_h, t);
        emit(c, "cuda/tile-planner", ic_method_name(plan.method), t, plan.pred_ms, 0, 0, 0);
    }
    for (int ch = 1; ch <= 2; ch++)
        for (int r = 0; r < 4; r++) {
            tune.tile_channels = ch;
            tune.tile_rows = rows[r];
            memset(&plan, 0, sizeof plan);
            const int applied = bg_time_fast_alpha(G, k, IC_BORDER_REPLICATE, pm, B.reps, &tune, &t,
                                                   &plan, err, sizeof err) == 0 &&
                                plan.method == m && plan.tile_h == rows[r] &&
                                (ch == 1) == (plan.channels_per_block == 1);
            if (!applied) {
                md(" | -");
                continue;
            }
            char name[24];
            snprintf(name, sizeof name, "cuda/tile-%s-x%d", ch == 1 ? "1ch" : "all", rows[r]);
            emit(c, name, ic_method_name(plan.method), t, plan.pred_ms, 0, 0, 0);
            md(" | %.4f", t);
        }
}

/* The direct, sep and tensor methods forced into every tile shape they can launch:
 * one channel or every channel per block (ic_tuning.tile_channels) times 8,
 * 16, 32 or 64 output rows per block (tile_rows), beside the planner's pick:
 * the data behind tile_shape's cost model (src/cuda/fast/plan.cu). */
static void tile_shapes(void)
{
    static const struct {
        int size;
        const char *kind;
        int K;
        ic_method method;
    } cases[] = {{4, "gaussian", 15, IC_METHOD_SEP},    {4, "gaussian", 21, IC_METHOD_SEP},
                 {4, "gaussian", 31, IC_METHOD_SEP},    {2, "gaussian", 15, IC_METHOD_SEP},
                 {4, "random", 15, IC_METHOD_DIRECT},   {4, "random", 15, IC_METHOD_TENSOR},
                 {4, "random", 31, IC_METHOD_TENSOR},   {4, "random", 9, IC_METHOD_TENSOR},
                 {4, "gaussian", 9, IC_METHOD_TENSOR},  {4, "gaussian", 15, IC_METHOD_TENSOR},
                 {4, "gaussian", 31, IC_METHOD_TENSOR}, {2, "gaussian", 9, IC_METHOD_TENSOR},
                 {4, "gaussian", 21, IC_METHOD_TENSOR}, {2, "gaussian", 15, IC_METHOD_TENSOR}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    md("\n## S. Tile shapes of the shared-memory methods (planner calibration)\n\nKernel ms "
       "(median, device-resident, RGB AoS, replicate border) of the method forced into each "
       "shape: `1ch`/`all` channels per block, 8..64 output rows per block (- where it does "
       "not launch: too many threads or too much shared memory). The planner's pick is shown "
       "as channels/rows.\n\n| case | method | planner | 1ch x8 | 1ch x16 | 1ch x32 | 1ch x64 | "
       "all x8 | all x16 | all x32 | all x64 |\n|---|---|---|---|---|---|---|---|---|---|---|\n");
    int last_size = -1;
    ic_image src;
    memset(&src, 0, sizeof src);
    for (int i = 0; i < nc; i++) {
        const size_def *sd = &SIZES[cases[i].size];
        ic_kernel k;
        cell c;
        const int go =
            calib_case("S", cases[i].size, cases[i].kind, cases[i].K, &src, &last_size, &k, &c);
        if (go > 0)
            continue;
        if (go < 0) {
            ic_image_free(&src);
            return;
        }
        md("| %s %s %d | %s | ", sd->name, cases[i].kind, cases[i].K,
           ic_method_name(cases[i].method));
        shape_cells(&k, cases[i].method, 0, &c);
        md(" |\n");
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
    fprintf(stderr, "  S done\n");
}

/* ---- N: rank-1 kernels on other layouts (planner calibration) -------------------------- */

/* Gaussians 11..31 on grey, grey + alpha, RGBA (alpha independent) and RGB
 * SoA images of HD's order, where the planner weighs the rank-1 tensor
 * passes against sep (the rows and tile-shape tables time RGB AoS only): both methods forced
 * into every tile shape (shape_cells), beside the planner's own pick; and
 * RGBA and grey + alpha with premultiplied alpha (the CLI's default for a
 * blur), which sep and direct take. */
static void layout_shapes(void)
{
    static const struct {
        int size, channels;
        ic_layout layout;
        int K, pm; /* pm: premultiplied alpha (the CLI's default for blurs) */
    } cases[] = {
        {3, 1, IC_AOS, 11, 0}, {3, 1, IC_AOS, 15, 0}, {3, 1, IC_AOS, 21, 0}, {3, 1, IC_AOS, 31, 0},
        {4, 1, IC_AOS, 15, 0}, {4, 1, IC_AOS, 21, 0}, {2, 2, IC_AOS, 15, 0}, {2, 2, IC_AOS, 21, 0},
        {2, 2, IC_AOS, 31, 0}, {3, 2, IC_AOS, 15, 0}, {3, 2, IC_AOS, 21, 0}, {3, 2, IC_AOS, 31, 0},
        {1, 4, IC_AOS, 15, 0}, {1, 4, IC_AOS, 31, 0}, {2, 4, IC_AOS, 11, 0}, {2, 4, IC_AOS, 15, 0},
        {2, 4, IC_AOS, 21, 0}, {2, 4, IC_AOS, 31, 0}, {3, 4, IC_AOS, 15, 0}, {3, 4, IC_AOS, 21, 0},
        {2, 3, IC_SOA, 11, 0}, {2, 3, IC_SOA, 15, 0}, {2, 3, IC_SOA, 21, 0}, {2, 3, IC_SOA, 31, 0},
        {3, 3, IC_SOA, 15, 0}, {3, 3, IC_SOA, 21, 0}, {0, 4, IC_AOS, 15, 1}, {1, 4, IC_AOS, 15, 1},
        {1, 4, IC_AOS, 31, 1}, {2, 4, IC_AOS, 11, 1}, {2, 4, IC_AOS, 15, 1}, {2, 4, IC_AOS, 21, 1},
        {2, 4, IC_AOS, 31, 1}, {3, 4, IC_AOS, 15, 1}, {3, 4, IC_AOS, 21, 1}, {1, 2, IC_AOS, 15, 1},
        {2, 2, IC_AOS, 15, 1}, {2, 2, IC_AOS, 31, 1}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    md("\n## N. Rank-1 kernels on other layouts (planner calibration)\n\nKernel ms "
       "(median, device-resident, replicate border, alpha independent unless premultiplied), "
       "Gaussians: the planner's pick (method, channels/rows a block), then `sep` and `tensor` "
       "(premultiplied: `sep` and `direct`) forced into each tile shape as in table S (- where "
       "it does not launch).\n\n| case | planner | "
       "method | forced | 1ch x8 | 1ch x16 | 1ch x32 | 1ch x64 | all x8 | all x16 | all x32 | "
       "all x64 |\n|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    int cur = -1;
    ic_image src;
    memset(&src, 0, sizeof src);
    char err[256];
    for (int i = 0; i < nc; i++) {
        const size_def *sd = &SIZES[cases[i].size];
        ic_kernel k;
        cell c;
        const int go = calib_case_shaped("N", cases[i].size, cases[i].channels, cases[i].layout,
                                         "gaussian", cases[i].K, &src, &cur, &k, &c);
        if (go > 0)
            continue;
        if (go < 0) {
            ic_image_free(&src);
            return;
        }
        if (cases[i].pm)
            strncat(c.case_name, " premultiplied", sizeof c.case_name - strlen(c.case_name) - 1);
        ic_plan plan;
        double t = 0;
        memset(&plan, 0, sizeof plan);
        char pick[64] = "-";
        const int pm = cases[i].pm;
        if (!bg_time_fast_alpha(G, &k, IC_BORDER_REPLICATE, pm, B.reps, NULL, &t, &plan, err,
                                sizeof err)) {
            emit(&c, "cuda/planner", ic_method_name(plan.method), t, plan.pred_ms, 0, 0, 0);
            snprintf(pick, sizeof pick, "%s %s/%d %.4f", ic_method_name(plan.method),
                     plan.channels_per_block == 1 ? "1ch" : "all", plan.tile_h, t);
        }
        /* premultiplied alpha: sep and direct (the tensor method does not
         * take it) */
        const ic_method ms[2] = {IC_METHOD_SEP, pm ? IC_METHOD_DIRECT : IC_METHOD_TENSOR};
        for (int m = 0; m < 2; m++) {
            md("| %s %dch %s%s gaussian %d | %s | %s | ", sd->name, cases[i].channels,
               cases[i].layout == IC_SOA ? "SoA" : "AoS", pm ? " premultiplied" : "", cases[i].K,
               m ? "" : pick, ic_method_name(ms[m]));
            shape_cells(&k, ms[m], pm, &c);
            md(" |\n");
        }
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
    fprintf(stderr, "  N done\n");
}

/* ---- M: many small images in one launch ------------------------------------ */

/* N device-resident RGB images with a 3x3 Gaussian: one
 * ic_convolve_batch_async per run (one launch per method for the batch)
 * against N ic_convolve_async per run, and both against the batch's floor:
 * all bytes in + out over the measured copy bandwidth (N x the per-image
 * floor). */
static void many_images(void)
{
    enum { MAXN = 256 };
    static int w[MAXN], h[MAXN];
    struct {
        const char *name, *size; /* size: the cell's, as CV-CUDA's batch cells name it */
        int n, w, h;             /* w == 0: mixed sizes */
    } cases[] = {{"64 x 480p", "480p", 64, 640, 480},
                 {"64 x 720p", "720p", 64, 1280, 720},
                 {"256 x 64x64", "64x64", 256, 64, 64},
                 {"64 mixed 16x16..HD", "mixed", 64, 0, 0}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    md("\n## M. Many images in one launch (ic_convolve_batch_async)\n\nKernel ms (median of "
       "%d runs between CUDA events, device-resident RGB AoS, 3x3 Gaussian, replicate border): "
       "`batched` is one ic_convolve_batch_async for all the images, `one by one` is one "
       "ic_convolve_async per image. The floor is all bytes in + out over the measured copy "
       "bandwidth (N x the per-image floor). Mixed sizes: seeded, 16x16 to 1920x1080.\n\n"
       "| batch | MB in+out | floor ms | batched ms | x floor | one by one ms | x floor | "
       "speed-up |\n|---|---|---|---|---|---|---|---|\n",
       B.reps);
    ic_kernel k;
    if (make_kernel(&k, "gaussian", 3))
        exit(1);
    char err[256];
    for (int i = 0; i < nc; i++) {
        const int n = cases[i].n;
        unsigned long long s = 0x5EEDB47Cull;
        double samples = 0;
        for (int j = 0; j < n; j++) {
            if (cases[i].w) {
                w[j] = cases[i].w;
                h[j] = cases[i].h;
            } else {
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                w[j] = 16 + (int)((s >> 33) % (1920 - 16 + 1));
                s = s * 6364136223846793005ull + 1442695040888963407ull;
                h[j] = 16 + (int)((s >> 33) % (1080 - 16 + 1));
            }
            samples += 3.0 * w[j] * h[j];
        }
        double tb = 0, ts = 0;
        if (bg_time_batch(G, &k, n, w, h, 3, B.reps, &tb, &ts, err, sizeof err)) {
            md("| %s | - | - | failed: %s | | | | |\n", cases[i].name, err);
            continue;
        }
        cell c;
        memset(&c, 0, sizeof c);
        c.table = "M";
        snprintf(c.case_name, sizeof c.case_name, "%s RGB gaussian 3x3", cases[i].name);
        snprintf(c.size, sizeof c.size, "%s", cases[i].size);
        c.batch = n;
        c.w = w[0];
        c.h = h[0];
        c.channels = 3;
        c.layout = "AoS";
        snprintf(c.kernel, sizeof c.kernel, "gaussian");
        c.K = 3;
        c.samples = samples;
        c.fmas = cheapest_fmas(&k, &c.rank);
        const double fl = floor_ms(&c);
        md("| %s | %.1f | %.4f | %.4f | %.2f | %.4f | %.2f | %.1f |\n", cases[i].name,
           2.0 * samples / 1e6, fl, tb, tb / fl, ts, ts / fl, ts / tb);
        emit(&c, "cuda/batch", "batch", tb, -1, 0, 0, 0);
        emit(&c, "cuda/one-by-one", "async", ts, -1, 0, 0, 0);
    }
    ic_kernel_free(&k);
    fprintf(stderr, "  M done\n");
}

/* ---- P: premultiplied alpha ------------------------------------------------ */

/* Uploads a chart image of w x h x ch in layout lay as the timed input. 0
 * on success. */
static int alpha_image(int w, int h, int ch, ic_layout lay)
{
    ic_image src;
    char err[256];
    if (ic_image_create(&src, w, h, ch, lay) != IC_OK)
        exit(1);
    ic_image_chart(&src, 777);
    const int r = bg_set_image(G, &src, 0, err, sizeof err);
    ic_image_free(&src);
    if (r)
        fprintf(stderr, "imgconv-bench: P: %s\n", err);
    return r;
}

/* Kernel ms of the fast path on the uploaded image (premultiply: the job's
 * flag; tune: forced knobs or NULL); plan gets the plan. 0 on success. */
static int time_alpha(const ic_kernel *k, int premultiply, const ic_tuning *tune, double *ms,
                      ic_plan *plan)
{
    char err[256];
    memset(plan, 0, sizeof *plan);
    const int r = bg_time_fast_alpha(G, k, IC_BORDER_REPLICATE, premultiply, B.reps, tune, ms, plan,
                                     err, sizeof err);
    if (r)
        fprintf(stderr, "imgconv-bench: P: %s\n", err);
    return r;
}

static void method_of(char *b, size_t n, const ic_plan *p)
{
    if (p->method == IC_METHOD_ROWS)
        snprintf(b, n, "rows x%d%s", p->rows_per_thread, p->rank ? " sep" : "");
    else if (p->method == IC_METHOD_SEP)
        snprintf(b, n, "sep r%d", p->rank);
    else
        snprintf(b, n, "%s", ic_method_name(p->method));
}

static void premultiplied(void)
{
    static const struct {
        int size;
        const char *kind;
        int K, ch;
        ic_layout layout;
    } cases[] = {{4, "gaussian", 9, 4, IC_AOS}, {4, "random", 9, 4, IC_AOS},
                 {2, "gaussian", 3, 4, IC_AOS}, {2, "random", 9, 4, IC_AOS},
                 {4, "gaussian", 9, 2, IC_AOS}, {4, "gaussian", 9, 4, IC_SOA},
                 {4, "random", 9, 4, IC_SOA},   {2, "gaussian", 3, 2, IC_AOS},
                 {2, "gaussian", 9, 2, IC_AOS}, {4, "gaussian", 3, 2, IC_AOS}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    md("\n## P. Premultiplied alpha on the fast path\n\nKernel ms (median, "
       "device-resident chart image with a soft-edged transparent disc, replicate border) of "
       "`cuda` with the job premultiplied (what `--alpha auto` runs for a kernel summing to 1), "
       "with `--alpha independent`, and on the same image without alpha (RGB for RGBA, grey for "
       "GA). Targets: premultiplied / independent <= 1.5 at 8K, premultiplied / no alpha <= 2 "
       "for HD RGBA gaussian:3.\n\n| case | premultiplied | method | independent | method | "
       "ratio | no alpha | method | ratio |\n|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        const size_def *sd = &SIZES[cases[i].size];
        if (B.quick && cases[i].size > 2)
            continue;
        ic_kernel k;
        if (make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        const int ch = cases[i].ch;
        double t[3] = {0, 0, 0};
        ic_plan pl[3];
        const char *names[3] = {"cuda/premultiplied", "cuda/independent", "cuda/no-alpha"};
        char m[3][32];
        for (int v = 0; v < 3; v++) {
            m[v][0] = '\0';
            if (alpha_image(sd->w, sd->h, v == 2 ? ch - 1 : ch, cases[i].layout) ||
                time_alpha(&k, v == 0, NULL, &t[v], &pl[v])) {
                t[v] = 0;
                continue;
            }
            method_of(m[v], sizeof m[v], &pl[v]);
            ic_image shape;
            memset(&shape, 0, sizeof shape);
            shape.width = sd->w;
            shape.height = sd->h;
            shape.channels = v == 2 ? ch - 1 : ch;
            shape.layout = cases[i].layout;
            cell c;
            init_cell(&c, "P", sd->name, &shape, &k, cases[i].kind);
            emit(&c, names[v], ic_method_name(pl[v].method), t[v], pl[v].pred_ms, 0, 0, 0);
        }
        char a[3][16], r1[16], r2[16];
        for (int v = 0; v < 3; v++)
            fmt_t(a[v], sizeof a[v], t[v]);
        snprintf(r1, sizeof r1, t[0] > 0 && t[1] > 0 ? "%.2f" : "-", t[1] > 0 ? t[0] / t[1] : 0);
        snprintf(r2, sizeof r2, t[0] > 0 && t[2] > 0 ? "%.2f" : "-", t[2] > 0 ? t[0] / t[2] : 0);
        md("| %s %s %s %d %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", sd->name,
           ch == 4 ? "RGBA" : "GA", cases[i].kind, cases[i].K,
           cases[i].layout == IC_SOA ? "SoA" : "AoS", a[0], m[0], a[1], m[1], r1, a[2], m[2], r2);
        ic_kernel_free(&k);
    }

    /* The rows method's rows a thread for alpha images' 3x3, forced: the
     * planner's rule (ic_fast_rows_shape) was measured on RGB images, while a
     * premultiplied thread does more work a row. */
    static const struct {
        int size, ch;
    } shaped[] = {{1, 4}, {2, 4}, {4, 4}, {2, 2}, {4, 2}};
    md("\nThe rows method forced to 1, 2, 4 and 8 output rows a thread, gaussian:3, AoS, "
       "premultiplied / independent (kernel ms):\n\n| case | planner | x1 | x2 | x4 | x8 |\n"
       "|---|---|---|---|---|---|\n");
    for (int i = 0; i < (int)(sizeof shaped / sizeof shaped[0]); i++) {
        const size_def *sd = &SIZES[shaped[i].size];
        if (B.quick && shaped[i].size > 2)
            continue;
        ic_kernel k;
        if (make_kernel(&k, "gaussian", 3))
            exit(1);
        const int up = alpha_image(sd->w, sd->h, shaped[i].ch, IC_AOS);
        md("| %s %s gaussian 3 AoS", sd->name, shaped[i].ch == 4 ? "RGBA" : "GA");
        for (int sh = 0; sh < 5; sh++) {
            ic_tuning tune;
            memset(&tune, 0, sizeof tune);
            tune.method = IC_METHOD_ROWS;
            tune.rows_shape = sh ? 1 << (sh - 1) : 0;
            double t2[2] = {0, 0};
            ic_plan pl;
            char m[32] = "";
            for (int v = 0; v < 2; v++)
                if (up || time_alpha(&k, v == 0, sh ? &tune : NULL, &t2[v], &pl) ||
                    (sh && pl.rows_per_thread != tune.rows_shape))
                    t2[v] = 0;
                else if (!sh && !v)
                    method_of(m, sizeof m, &pl);
            char a[16], b[16];
            fmt_t(a, sizeof a, t2[0]);
            fmt_t(b, sizeof b, t2[1]);
            md(" | %s%s%s / %s", m, m[0] ? " " : "", a, b);
        }
        md(" |\n");
        ic_kernel_free(&k);
    }

    /* The strategy backends through their contexts (kernel ms, CUDA events). */
    const char *strat[16];
    const int ns = strategy_backends(strat, 16);
    ic_image src, dst;
    ic_kernel k;
    if (ic_image_create(&src, 1920, 1080, 4, IC_AOS) != IC_OK ||
        ic_image_create(&dst, 1920, 1080, 4, IC_AOS) != IC_OK || make_kernel(&k, "gaussian", 3))
        exit(1);
    ic_image_chart(&src, 777);
    md("\nStrategy backends, HD RGBA AoS gaussian:3 (kernel ms through a context; cuda-gemm has "
       "no premultiplied kernel: its premultiplied time is the float64 CPU path's):\n\n| backend | "
       "premultiplied | independent | ratio |\n|---|---|---|---|\n");
    for (int i = 0; i < ns; i++) {
        double tp = 0, ti = 0;
        ic_params p;
        ic_params_default(&p);
        p.border = IC_BORDER_REPLICATE;
        p.alpha = IC_ALPHA_PREMULTIPLY;
        const int reps = B.quick ? 3 : 7;
        if (time_ctx(strat[i], &src, &dst, &k, &p, !strcmp(strat[i], "cuda-gemm") ? 1 : reps, &tp))
            tp = 0;
        p.alpha = IC_ALPHA_INDEPENDENT;
        if (time_ctx(strat[i], &src, &dst, &k, &p, reps, &ti))
            ti = 0;
        char a[16], b[16], r[16];
        fmt_t(a, sizeof a, tp);
        fmt_t(b, sizeof b, ti);
        fmt_x(r, sizeof r, tp, ti);
        md("| %s | %s | %s | %s |\n", strat[i], a, b, r);
    }
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&dst);
    fprintf(stderr, "  P done\n");
}

/* ---- G: agreement with the cpu backend ------------------------------------------------- */

static void agreement(void)
{
    struct {
        const char *kind;
        int K;
        const char *method;
    } cases[] = {{"gaussian", 3, "direct"}, {"gaussian", 3, "sep"},   {"gaussian", 15, "sep"},
                 {"gaussian", 31, "sep"},   {"gaussian", 31, "fft"},  {"random", 9, "direct"},
                 {"random", 15, "direct"},  {"random", 31, "direct"}, {"random", 31, "fft"}};
    const int nc = (int)(sizeof cases / sizeof cases[0]);
    ic_image src, a, b;
    if (ic_image_create(&src, 1000, 600, 3, IC_AOS) != IC_OK ||
        ic_image_create(&a, 1000, 600, 3, IC_AOS) != IC_OK ||
        ic_image_create(&b, 1000, 600, 3, IC_AOS) != IC_OK)
        exit(1);
    ic_image_chart(&src, 5);
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_MIRROR;
    md("\n## G. Agreement with `cpu` (1000x600 RGB, mirror border)\n\n| kernel | method | exact "
       "%% | max diff |\n|---|---|---|---|\n");
    for (int i = 0; i < nc; i++) {
        ic_kernel k;
        if (make_kernel(&k, cases[i].kind, cases[i].K))
            exit(1);
        ic_tuning tune;
        memset(&tune, 0, sizeof tune);
        ic_context_options o;
        memset(&o, 0, sizeof o);
        o.tuning = &tune;
        ic_context *cg = NULL, *cc = NULL;
        char text[32];
        snprintf(text, sizeof text, "method=%s", cases[i].method);
        int ok = ic_tuning_parse(text, &tune) == IC_OK &&
                 ic_context_create(&cg, "cuda", &o) == IC_OK &&
                 ic_context_create(&cc, "cpu", NULL) == IC_OK &&
                 ic_convolve(cg, &src, &a, &k, &p) == IC_OK &&
                 ic_convolve(cc, &src, &b, &k, &p) == IC_OK;
        long long same = 0, n = 0;
        int maxd = 0;
        if (ok)
            for (int y = 0; y < 600; y++)
                for (int x = 0; x < 1000 * 3; x++) {
                    const int d = abs((int)a.data[(size_t)y * a.pitch + x] -
                                      (int)b.data[(size_t)y * b.pitch + x]);
                    same += d == 0;
                    maxd = d > maxd ? d : maxd;
                    n++;
                }
        char pct[32];
        if (ok)
            snprintf(pct, sizeof pct, "%.4f", 100.0 * (double)same / (double)n);
        else
            snprintf(pct, sizeof pct, "failed");
        md("| %s %d | %s | %s | %d |\n", cases[i].kind, cases[i].K, cases[i].method, pct, maxd);
        ic_context_free(cg);
        ic_context_free(cc);
        ic_kernel_free(&k);
    }
    ic_image_free(&src);
    ic_image_free(&a);
    ic_image_free(&b);
}
#endif /* IC_HAVE_CUDA */

/* Whether table letter t is to run (--tables). */
static int want(char t)
{
    return !B.tables || strchr(B.tables, t) != NULL;
}

/* ---- main ---------------------------------------------------------------------------- */

static void usage(void)
{
    fprintf(stderr, "usage: imgconv-bench --out DIR --stamp STAMP [--quick] [--tables LETTERS]\n"
                    "  LETTERS: any of ABCDEFGHKLMNPRST (K: CUPTI beside CUDA events, L: 1D and\n"
                    "  matmul, M: batch, many images in one launch, N: rank-1 kernels on\n"
                    "  other layouts, P: premultiplied alpha, R: Fig 7.14 ratios, S: tile\n"
                    "  shapes, T: transfers); default all\n");
    exit(2);
}

int main(int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--out") && i + 1 < argc)
            B.out = argv[++i];
        else if (!strcmp(argv[i], "--stamp") && i + 1 < argc)
            B.stamp = argv[++i];
        else if (!strcmp(argv[i], "--quick"))
            B.quick = 1;
        else if (!strcmp(argv[i], "--tables") && i + 1 < argc)
            B.tables = argv[++i];
        else
            usage();
    }
    if (!B.out || !B.stamp)
        usage();
    B.reps = B.quick ? 5 : 20;
    mkdir(B.out, 0777);
    char path[1024], jpath[1024], ppath[1024];
    snprintf(path, sizeof path, "%s/bench-%s.md", B.out, B.stamp);
    snprintf(jpath, sizeof jpath, "%s/bench-%s.json", B.out, B.stamp);
    snprintf(ppath, sizeof ppath, "%s/bench-%s.png", B.out, B.stamp);
    B.md = fopen(path, "w");
    B.json = fopen(jpath, "w");
    if (!B.md || !B.json) {
        fprintf(stderr, "imgconv-bench: cannot write into %s\n", B.out);
        return 1;
    }
    B.json_first = 1;
    const double t0 = now_ms();
    snprintf(B.device, sizeof B.device, "none (CPU only)");
#ifdef IC_HAVE_CUDA
    char why[256];
    if (bg_available(why, sizeof why)) {
        G = bg_open(why, sizeof why);
        if (G) {
            B.gpu = 1;
            bg_describe(G, B.device, sizeof B.device);
            if (bg_ceilings(G, &B.copy_bps, &B.fma_per_s)) {
                fprintf(stderr, "imgconv-bench: ceilings could not be measured\n");
                B.copy_bps = B.fma_per_s = 0;
            }
        }
    }
    if (!B.gpu)
        fprintf(stderr, "imgconv-bench: no GPU (%s): seq vs cpu only\n", why);
#endif
    int npp = 0;
#ifdef IC_HAVE_CUDA
    npp = B.gpu && bg_has_npp();
#endif
    md("# imgconv benchmark %s\n\ndevice: %s; imgconv %s%s%s\n", B.stamp, B.device, ic_version(),
       B.quick ? "; **quick mode**" : "", B.gpu && !npp ? "; NPP not built in" : "");
    if (B.gpu)
        md("\nCeilings measured in this run by the library's probe (what the `cuda` planner uses, "
           "ic_plan): device-to-device copy %.0f GB/s (read + write, 256 MiB cudaMemcpy, best of "
           "3); fp32 FMA %.1f TFLOP/s (register FMA loop, best of 3).\n",
           B.copy_bps / 1e9, 2 * B.fma_per_s / 1e12);
    fprintf(B.json,
            "{\n  \"stamp\": \"%s\", \"device\": \"%s\", \"quick\": %d, \"npp\": %d,\n"
            "  \"copy_gbps\": %.6g, \"fma_tflops\": %.6g,\n  \"cells\": [",
            B.stamp, B.device, B.quick, npp, B.copy_bps / 1e9, 2 * B.fma_per_s / 1e12);

    static const int k3[] = {3};
    static const int ks[] = {3, 5, 7, 9};
    const int nsizes = B.quick ? 3 : 5;
    if (want('A'))
        study_table("A", "A. Speedup as the resolution changes (3x3 Gaussian)", SIZES, nsizes, k3,
                    1);
    if (want('B'))
        study_table("B", "B. Speedup as the filter size changes (HD)", &SIZES[2], 1, ks, 4);
    if (want('R'))
        fig714_table();
#ifdef IC_HAVE_CUDA
    if (B.gpu) {
        if (want('C'))
            memory_levels();
        if (want('D'))
            aos_soa();
        if (want('E'))
            large_kernels();
        if (want('F'))
            methods();
        if (want('G'))
            agreement();
        if (want('H'))
            rows_shapes();
        if (want('S'))
            tile_shapes();
        if (want('N'))
            layout_shapes();
        if (want('P'))
            premultiplied();
        if (want('K'))
            cupti_table();
        if (want('M'))
            many_images();
        /* Issue 7: 1D convolution vs the copy ceiling, matmul vs cuBLAS (rows
         * appended to "cells" with table L1/L2). */
        int rl = want('L') ? ic_bench_linalg(B.md, B.json, B.quick) : 0;
        if (rl != 0)
            fprintf(stderr, "imgconv-bench: linalg benchmark returned %d\n", rl);
    }
#endif
    fprintf(B.json, "\n  ],\n  \"transfer\": ");
    /* Issue 6: host->host sync vs async vs pageable, against the PCIe floor. */
    FILE *tj = want('T') ? tmpfile() : NULL;
    int rt = tj ? ic_bench_transfer(B.md, tj) : want('T') ? 1 : 77;
    if (rt == 0) {
        rewind(tj);
        char buf[4096];
        size_t n;
        while ((n = fread(buf, 1, sizeof buf, tj)) > 0)
            fwrite(buf, 1, n, B.json);
    } else {
        fprintf(B.json, "null");
        if (rt != 77)
            fprintf(stderr, "imgconv-bench: transfer benchmark returned %d\n", rt);
    }
    if (tj)
        fclose(tj);
    fprintf(B.json, "\n}\n");
    md("\nTotal benchmark time: %.1f s.\n", (now_ms() - t0) / 1e3);
    fclose(B.md);
    fclose(B.json);
#ifdef IC_HAVE_CUDA
    bg_close(G);
#endif
    /* The plot is optional: matplotlib may be missing. */
    const char *cands[] = {getenv("IC_BENCH_PLOT"), "bench/plot.py", "../bench/plot.py"};
    for (int i = 0; i < 3; i++) {
        if (!cands[i] || access(cands[i], R_OK) != 0)
            continue;
        char cmd[4096];
        snprintf(cmd, sizeof cmd, "python3 '%s' '%s' '%s' >/dev/null 2>&1", cands[i], jpath, ppath);
        if (system(cmd) != 0)
            fprintf(stderr, "imgconv-bench: plot skipped (python3/matplotlib failed)\n");
        break;
    }
    printf("\nwrote %s, %s\n", path, jpath);
    return 0;
}
