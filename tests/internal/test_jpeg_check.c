/*
 * test_jpeg_check.c - the entropy check the GPU codec runs beside nvJPEG
 * (ic_jpeg_check, src/io/jpeg.c; its threaded batch, src/io/jpeg_check.c)
 * against the CPU decoder (ic_image_decode, libjpeg-turbo):
 *
 *  1. Clean photograph-like JPEGs (4:4:4, 4:2:2, 4:2:0, restart markers,
 *     progressive, grey; several sizes, odd ones too) pass.
 *  2. The bad files tests/gpu/test_gpu_jpeg.c makes (support/jpeg_cases.c:
 *     cuts, garbage in the entropy-coded data, a zero width), over many
 *     seeds, the GPU test's own among them: whenever the CPU decoder refuses
 *     one, the check refuses it with exactly its status and message, and it
 *     passes every file the CPU decoder takes. The garbage cases the H100 run
 *     at d565ec1 found nvJPEG decoding ("premature end of data segment") must
 *     be among the refused ones.
 *  3. The limits: a file over max_pixels gets the CPU decoder's message.
 *  4. The batch on threads gives each file the single check's verdict and
 *     leaves the files it was not asked to check alone.
 *  5. The walk that proves clean files without decoding them
 *     (ic_jpeg_scan_clean, src/io/jpeg_scan.c): it proves the clean
 *     baseline colour files of 1 and imgconv's own files in strips, and on
 *     every bad file of 2 it proves clean only what libjpeg-turbo's check
 *     (ic_jpeg_check_decode) and the CPU decoder both take.
 *
 * With IC_JPEG_CHECK_BENCH=DIR it measures instead (bench/run.sh jpeg-check):
 * for each *.jpg in DIR the check (the walk, then libjpeg-turbo's decode
 * alone) against a full decode (ic_image_decode) and against
 * jpeg_read_coefficients (the other way to an entropy-only decode), wall
 * and thread CPU time, best of several runs; then the whole set through the
 * threaded batch against the sum of single checks.
 *
 * Without libjpeg: exit 77 (SKIPPED).
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imgconv.h"
#include "io/io_internal.h"
#include "jpeg_cases.h"
#include "testutil.h"

#ifndef IC_TEST_HAVE_JPEG
int main(void)
{
    printf("SKIPPED: needs libjpeg\n");
    return 77;
}
#else

#include <jpeglib.h>

static int g_fail;

#define CHECK(cond, ...) ICT_CHECK(g_fail, cond, __VA_ARGS__)

/* The first seed of test_gpu_jpeg.c; its bad files take seed + 10 * sizes
 * (60 in the full run, 30 under IC_TEST_QUICK). */
#define GPU_TEST_SEED 0x6a70656721ull

static const ic_io_limits kLim = {.max_pixels = IC_DEFAULT_MAX_PIXELS,
                                  .max_memory = (uint64_t)1 << 32};

/* The CPU decoder's verdict on n bytes; *msg its message ("" on success). */
static ic_status cpu_verdict(const unsigned char *data, size_t n, char *msg, size_t len)
{
    ic_image img;
    const ic_status st = ic_image_decode(&img, data, n, NULL);
    snprintf(msg, len, "%s", st == IC_OK ? "" : ic_last_error());
    if (st == IC_OK)
        ic_image_free(&img);
    return st;
}

/* ---- 1. clean files ------------------------------------------------------------ */

static void clean_files(void)
{
    static const struct {
        const char *name;
        int grey;
        ictj_opts o;
    } cases[] = {
        {"444", 0, {1, 1, 0, 0, 92}},
        {"422", 0, {2, 1, 0, 0, 92}},
        {"420", 0, {2, 2, 0, 0, 92}},
        {"420-restart", 0, {2, 2, 0, 1, 92}},
        {"420-progressive", 0, {2, 2, 1, 0, 92}},
        {"grey", 1, {1, 1, 0, 0, 92}},
        {"grey-progressive", 1, {1, 1, 1, 0, 92}},
    };
    static const int sizes[][2] = {{64, 48}, {333, 251}, {17, 9}, {1, 1}, {1001, 777}};
    uint64_t seed = 77;
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
        for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
            ic_image src;
            if (ic_image_create(&src, sizes[s][0], sizes[s][1], cases[c].grey ? 1 : 3, IC_AOS) !=
                IC_OK) {
                CHECK(0, "cannot allocate");
                return;
            }
            ictj_photo_fill(&src, seed++);
            unsigned char *jpg = NULL;
            unsigned long n = 0;
            CHECK(ictj_write_jpeg(&src, &cases[c].o, &jpg, &n), "libjpeg could not write %s",
                  cases[c].name);
            char err[IC_IO_ERRLEN] = "";
            const ic_status st = ic_jpeg_check(jpg, n, &kLim, err, sizeof err);
            CHECK(st == IC_OK, "clean %s %dx%d refused: %s \"%s\"", cases[c].name, sizes[s][0],
                  sizes[s][1], ic_status_str(st), err);
            const int proven = ic_jpeg_scan_clean(jpg, n, &kLim);
            const int baseline = !cases[c].grey && !cases[c].o.progressive;
            CHECK(proven == baseline, "clean %s %dx%d: the walk %s it", cases[c].name, sizes[s][0],
                  sizes[s][1], proven ? "proves" : "does not prove");
            free(jpg);
            ic_image_free(&src);
        }
}

/* ---- 2. bad files -------------------------------------------------------------- */

typedef struct bad_tally {
    int cases, refused, hit_marker;
    int proven;    /* bad cases the walk proves clean: the decoders take them */
    int gpu_seed;  /* the seed is test_gpu_jpeg's full run */
    int gpu_found; /* of the H100 run's two garbage cases, refused as the CPU does */
} bad_tally;

static void bad_case(void *ctx, const char *what, const unsigned char *data, size_t n)
{
    bad_tally *t = ctx;
    char msg[IC_IO_ERRLEN], err[IC_IO_ERRLEN] = "";
    const ic_status cs = cpu_verdict(data, n, msg, sizeof msg);
    const ic_status ks = ic_jpeg_check(data, n, &kLim, err, sizeof err);
    t->cases++;
    if (ic_jpeg_scan_clean(data, n, &kLim)) {
        char derr[IC_IO_ERRLEN] = "";
        const ic_status ds = ic_jpeg_check_decode(data, n, &kLim, derr, sizeof derr);
        t->proven++;
        CHECK(ds == IC_OK && cs == IC_OK,
              "%s: the walk proves it clean; libjpeg's check %s \"%s\", "
              "the CPU decoder %s \"%s\"",
              what, ic_status_str(ds), derr, ic_status_str(cs), msg);
    }
    if (cs != IC_OK) {
        t->refused++;
        CHECK(ks == cs && strcmp(err, msg) == 0, "%s: check gives %s \"%s\", CPU decoder %s \"%s\"",
              what, ic_status_str(ks), err, ic_status_str(cs), msg);
        if (strstr(msg, "premature end of data segment"))
            t->hit_marker++;
    } else {
        CHECK(ks == IC_OK, "%s: the CPU decoder takes it, the check refuses: %s", what, err);
    }
    if (t->gpu_seed &&
        (strcmp(what, "garbage at byte 9357") == 0 || strcmp(what, "garbage at byte 10519") == 0)) {
        printf("GPU test's case %-22s CPU %s \"%s\"  check %s \"%s\"\n", what, ic_status_str(cs),
               msg, ic_status_str(ks), err);
        t->gpu_found += cs == IC_ERR_FORMAT && ks == cs &&
                        strcmp(msg, "JPEG: Corrupt JPEG data: premature end of data segment") == 0;
    }
}

static void bad_files(void)
{
    bad_tally t;
    memset(&t, 0, sizeof t);
    for (uint64_t s = GPU_TEST_SEED; s < GPU_TEST_SEED + 100; s++) {
        ic_image src;
        if (ic_image_create(&src, 333, 251, 3, IC_AOS) != IC_OK)
            return;
        ictj_photo_fill(&src, s);
        const ictj_opts o = {2, 2, 0, 0, 90};
        unsigned char *jpg = NULL;
        unsigned long n = 0;
        if (ictj_write_jpeg(&src, &o, &jpg, &n)) {
            t.gpu_seed = s == GPU_TEST_SEED + 60;
            ictj_bad_cases(jpg, n, s, bad_case, &t);
        } else {
            CHECK(0, "libjpeg could not write seed %llu", (unsigned long long)s);
        }
        free(jpg);
        ic_image_free(&src);
    }
    printf("bad files: %d cases, %d refused by the CPU decoder (%d \"premature end of data "
           "segment\"), the check agreeing on each; %d proven clean by the walk\n",
           t.cases, t.refused, t.hit_marker, t.proven);
    CHECK(t.hit_marker > 0, "no garbage case ran out of data inside a Huffman code");
    CHECK(t.gpu_found == 2, "the H100 run's two garbage cases: %d of 2 refused as the CPU does",
          t.gpu_found);
}

/* ---- 3. limits ----------------------------------------------------------------- */

static void limits(void)
{
    ic_image src;
    if (ic_image_create(&src, 333, 251, 3, IC_AOS) != IC_OK)
        return;
    ictj_photo_fill(&src, 5);
    const ictj_opts o = {2, 2, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    if (ictj_write_jpeg(&src, &o, &jpg, &n)) {
        ic_load_options lo;
        memset(&lo, 0, sizeof lo);
        lo.max_pixels = 1000;
        ic_image img;
        const ic_status cs = ic_image_decode(&img, jpg, n, &lo);
        char msg[IC_IO_ERRLEN], err[IC_IO_ERRLEN] = "";
        snprintf(msg, sizeof msg, "%s", ic_last_error());
        const ic_io_limits lim = {.max_pixels = 1000, .max_memory = (uint64_t)1 << 32};
        const ic_status ks = ic_jpeg_check(jpg, n, &lim, err, sizeof err);
        CHECK(cs == IC_ERR_TOO_LARGE && ks == cs && strcmp(err, msg) == 0,
              "over max_pixels: check %s \"%s\", CPU %s \"%s\"", ic_status_str(ks), err,
              ic_status_str(cs), msg);
    }
    free(jpg);
    ic_image_free(&src);
}

/* ---- 4. the batch on threads ------------------------------------------------------ */

static void batch(void)
{
    enum { N = 11 };
    ic_image src;
    if (ic_image_create(&src, 401, 299, 3, IC_AOS) != IC_OK)
        return;
    ictj_photo_fill(&src, 9);
    const ictj_opts o = {2, 2, 0, 0, 90};
    unsigned char *jpg = NULL;
    unsigned long n = 0;
    if (!ictj_write_jpeg(&src, &o, &jpg, &n)) {
        ic_image_free(&src);
        CHECK(0, "libjpeg could not write the batch source");
        return;
    }
    /* Good, cut and garbage files; the last bad one is not to be checked. */
    unsigned char *copy[N];
    const uint8_t *data[N];
    size_t len[N];
    int todo[N], pass[N];
    ict_rng r;
    ict_rng_seed(&r, 12);
    for (int i = 0; i < N; i++) {
        copy[i] = malloc(n);
        memcpy(copy[i], jpg, n);
        len[i] = n;
        if (i % 3 == 1)
            len[i] = n / 2;
        if (i % 3 == 2)
            for (size_t j = n / 2; j < n - 2; j += 97)
                copy[i][j] = (uint8_t)ict_below(&r, 256);
        data[i] = copy[i];
        todo[i] = i != N - 2;
        pass[i] = 7;
    }
    ic_jpeg_checks *k = ic_jpeg_checks_start(N, data, len, todo, &kLim);
    ic_jpeg_checks_wait(k, N, todo, pass);
    for (int i = 0; i < N; i++) {
        char err[IC_IO_ERRLEN];
        const int good = ic_jpeg_check(data[i], len[i], &kLim, err, sizeof err) == IC_OK;
        const int want = !todo[i] || good ? 7 : 0;
        CHECK(pass[i] == want, "batch file %d (%s, %s): pass %d, not %d", i,
              i % 3 == 0   ? "good"
              : i % 3 == 1 ? "cut"
                           : "garbage",
              todo[i] ? "checked" : "not checked", pass[i], want);
        CHECK(i % 3 != 1 || !good, "batch file %d: a cut file passes", i);
        free(copy[i]);
    }
    /* Nothing to check: nothing changes. */
    int none[2] = {0, 0}, p2[2] = {5, 5};
    ic_jpeg_checks_wait(ic_jpeg_checks_start(2, data, len, none, &kLim), 2, none, p2);
    CHECK(p2[0] == 5 && p2[1] == 5, "an empty batch changed pass[]");
    free(jpg);
    ic_image_free(&src);
}

/* ---- 5. the walk ------------------------------------------------------------------ */

/* One mutation: when the walk proves it clean, both decoders take it. */
static int walk_case(const unsigned char *d, size_t n, int *proven)
{
    if (!ic_jpeg_scan_clean(d, n, &kLim))
        return 1;
    (*proven)++;
    char err[IC_IO_ERRLEN] = "", msg[IC_IO_ERRLEN];
    const ic_status ds = ic_jpeg_check_decode(d, n, &kLim, err, sizeof err);
    const ic_status cs = cpu_verdict(d, n, msg, sizeof msg);
    return ds == IC_OK && cs == IC_OK;
}

static void walk(void)
{
    /* imgconv's own large JPEG: strips joined by restart markers. */
    ic_image big;
    if (ic_image_create(&big, 1300, 900, 3, IC_AOS) != IC_OK)
        return;
    ictj_photo_fill(&big, 31);
    ic_save_options so;
    memset(&so, 0, sizeof so);
    so.threads = 3;
    uint8_t *jpg = NULL;
    size_t n = 0;
    CHECK(ic_image_encode(&big, ".jpg", &so, &jpg, &n) == IC_OK, "cannot encode: %s",
          ic_last_error());
    char err[IC_IO_ERRLEN] = "";
    CHECK(jpg && ic_jpeg_scan_clean(jpg, n, &kLim) &&
              ic_jpeg_check_decode(jpg, n, &kLim, err, sizeof err) == IC_OK,
          "imgconv's JPEG in strips is not proven clean, or libjpeg refuses it: %s", err);
    free(jpg);
    ic_image_free(&big);

    /* Every byte of two small files changed four ways, and every cut. */
    static const ictj_opts opts[] = {{2, 2, 0, 1, 90}, {1, 1, 0, 0, 75}};
    int cases = 0, proven = 0, bad = 0;
    for (size_t k = 0; k < sizeof opts / sizeof *opts; k++) {
        ic_image src;
        if (ic_image_create(&src, 72, 40, 3, IC_AOS) != IC_OK)
            return;
        ictj_photo_fill(&src, 40 + k);
        unsigned char *j = NULL;
        unsigned long jn = 0;
        if (!ictj_write_jpeg(&src, &opts[k], &j, &jn)) {
            CHECK(0, "libjpeg could not write the walk's file %zu", k);
            ic_image_free(&src);
            continue;
        }
        unsigned char *m = malloc(jn);
        static const unsigned char flips[] = {0x01, 0x10, 0x80, 0xFF};
        for (size_t i = 0; m && i < jn; i++) {
            for (size_t f = 0; f < sizeof flips; f++) {
                memcpy(m, j, jn);
                m[i] ^= flips[f];
                cases++;
                if (!walk_case(m, jn, &proven) && bad++ < 5)
                    CHECK(0, "file %zu, byte %zu ^ 0x%02x: proven clean, refused by libjpeg", k, i,
                          flips[f]);
            }
            cases++;
            int cut_proven = 0;
            (void)walk_case(j, i, &cut_proven);
            CHECK(!cut_proven, "file %zu cut at %zu bytes: proven clean", k, i);
        }
        free(m);
        free(j);
        ic_image_free(&src);
    }
    printf("walk: %d changed or cut files, %d proven clean (each taken by libjpeg)\n", cases,
           proven);
}

/* ---- IC_JPEG_CHECK_BENCH: what the check costs --------------------------------------- */

#define BENCH_FILES 64
#define BENCH_RUNS 7

static double clock_s(clockid_t id)
{
    struct timespec t;
    clock_gettime(id, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* The alternative the check does not take: jpeg_read_coefficients, which
 * keeps every coefficient of the image in memory (clean files only). */
static void read_coefficients(const uint8_t *d, size_t n)
{
    struct jpeg_decompress_struct ci;
    struct jpeg_error_mgr jerr;
    ci.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&ci);
    jpeg_mem_src(&ci, d, (unsigned long)n);
    (void)jpeg_read_header(&ci, TRUE);
    (void)jpeg_read_coefficients(&ci);
    (void)jpeg_finish_decompress(&ci);
    jpeg_destroy_decompress(&ci);
}

/* Best wall and thread CPU seconds of BENCH_RUNS runs of libjpeg's check
 * (what 0), a full decode (what 1), jpeg_read_coefficients (what 2) or the
 * walk (what 3, which must prove the file clean) of one file. */
static void time_one(const uint8_t *d, size_t n, int what, double *wall, double *cpu)
{
    *wall = *cpu = 1e9;
    for (int r = 0; r < BENCH_RUNS; r++) {
        const double w0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_THREAD_CPUTIME_ID);
        ic_status st;
        if (what == 0) {
            char err[IC_IO_ERRLEN];
            st = ic_jpeg_check_decode(d, n, &kLim, err, sizeof err);
        } else if (what == 3) {
            st = ic_jpeg_scan_clean(d, n, &kLim) ? IC_OK : IC_ERR_FORMAT;
        } else if (what == 2) {
            read_coefficients(d, n);
            st = IC_OK;
        } else {
            ic_image img;
            st = ic_image_decode(&img, d, n, NULL);
            if (st == IC_OK)
                ic_image_free(&img);
        }
        const double c = clock_s(CLOCK_THREAD_CPUTIME_ID) - c0, w = clock_s(CLOCK_MONOTONIC) - w0;
        CHECK(st == IC_OK, "bench: a file fails");
        *wall = w < *wall ? w : *wall;
        *cpu = c < *cpu ? c : *cpu;
    }
}

static int bench(const char *dir)
{
    DIR *dp = opendir(dir);
    if (!dp) {
        printf("FAIL: cannot open %s\n", dir);
        return 1;
    }
    static uint8_t *data[BENCH_FILES];
    static size_t len[BENCH_FILES];
    static int todo[BENCH_FILES], pass[BENCH_FILES];
    int nf = 0;
    double sum_check = 0;
    printf("%-18s %9s %8s | %7s %7s | %8s %7s | %9s %7s | %10s %7s | %5s %5s %5s\n", "file",
           "pixels", "bytes", "walk ms", "cpu ms", "check ms", "cpu ms", "decode ms", "cpu ms",
           "coeffs ms", "cpu ms", "walk", "check", "coefs");
    struct dirent *e;
    while ((e = readdir(dp)) && nf < BENCH_FILES) {
        const size_t nl = strlen(e->d_name);
        if (nl < 5 || strcmp(e->d_name + nl - 4, ".jpg") != 0)
            continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f)
            continue;
        fseek(f, 0, SEEK_END);
        const long sz = ftell(f);
        rewind(f);
        uint8_t *d = malloc((size_t)sz);
        if (!d || fread(d, 1, (size_t)sz, f) != (size_t)sz) {
            free(d);
            fclose(f);
            continue;
        }
        fclose(f);
        ic_image img;
        if (ic_image_decode(&img, d, (size_t)sz, NULL) != IC_OK) {
            free(d);
            continue;
        }
        const long px = (long)img.width * img.height;
        ic_image_free(&img);
        double ww, wc, cw, cc, dw, dc, kw, kc;
        time_one(d, (size_t)sz, 3, &ww, &wc);
        time_one(d, (size_t)sz, 0, &cw, &cc);
        time_one(d, (size_t)sz, 1, &dw, &dc);
        time_one(d, (size_t)sz, 2, &kw, &kc);
        sum_check += ww;
        /* The last three: CPU time against the full decode's. */
        printf("%-18s %9ld %8ld | %7.2f %7.2f | %8.2f %7.2f | %9.2f %7.2f | %10.2f %7.2f | %5.2f "
               "%5.2f %5.2f\n",
               e->d_name, px, sz, 1e3 * ww, 1e3 * wc, 1e3 * cw, 1e3 * cc, 1e3 * dw, 1e3 * dc,
               1e3 * kw, 1e3 * kc, wc / dc, cc / dc, kc / dc);
        data[nf] = d;
        len[nf] = (size_t)sz;
        todo[nf] = 1;
        nf++;
    }
    closedir(dp);
    if (nf > 0) {
        double best = 1e9;
        for (int r = 0; r < BENCH_RUNS; r++) {
            const double w0 = clock_s(CLOCK_MONOTONIC);
            ic_jpeg_checks *k =
                ic_jpeg_checks_start(nf, (const uint8_t *const *)data, len, todo, &kLim);
            ic_jpeg_checks_wait(k, nf, todo, pass);
            const double w = clock_s(CLOCK_MONOTONIC) - w0;
            best = w < best ? w : best;
        }
        printf("batch of %d files on up to %ld threads: %.2f ms wall (single checks one after "
               "another: %.2f ms)\n",
               nf, sysconf(_SC_NPROCESSORS_ONLN), 1e3 * best, 1e3 * sum_check);
    }
    for (int i = 0; i < nf; i++)
        free(data[i]);
    return g_fail ? 1 : 0;
}

int main(void)
{
    if (getenv("IC_JPEG_CHECK_BENCH"))
        return bench(getenv("IC_JPEG_CHECK_BENCH"));
    clean_files();
    bad_files();
    limits();
    batch();
    walk();
    printf("%s: %d failure%s\n", g_fail ? "FAIL" : "PASS", g_fail, g_fail == 1 ? "" : "s");
    return g_fail ? 1 : 0;
}

#endif
