/*
 * test_advanced.c - the public header's advanced tier (IC_ADVANCED_API) on
 * the CPU backends, as a specification:
 *
 *  1. Names: ic_method_name and ic_cpu_isa_name for every value, "unknown"
 *     past the last.
 *  2. Tuning text (ic_tuning_parse): every key sets its field, later keys win,
 *     an unknown key or a bad value (fft-n not a power of two in 64..8192,
 *     rows-shape 3, cpu-tiny 2, method=bogus) is refused naming it and leaves
 *     *t unchanged; ic_context_set_tuning and ic_context_options.tuning refuse
 *     out-of-range values; ic_context_get_tuning returns what was set and
 *     NULL restores the defaults.
 *  3. The plan is what ic_plan_explain prints: on `cpu`, for kernels that take the
 *     direct path (a 3x3 binomial, a full-rank random 7x7) and the separable
 *     one (gaussian:9, unsharp:9, rank 2), ic_plan_get's method, rank,
 *     instruction set and worker count appear in ic_plan_explain's text, and
 *     ic_plan.premultiply is 1 for an RGBA image under alpha auto with a
 *     kernel summing to 1 (cpu premultiplies itself), 0 on `seq` (the float64
 *     path) whose plan has no method (AUTO) and no predictions (-1).
 *  4. Forcing: method=direct and method=sep on `cpu` are the paths that run
 *     (ic_plan_get: method and forced) and give oracle-equal output
 *     (tests/support: within 1 level, >= 99.9% exact) on random images,
 *     AoS and SoA, 1..4 channels; a method `cpu` does not have (fft, rows,
 *     global) is ignored (the planner's choice, forced 0); a knob changes the
 *     plan as documented (cpu-isa=scalar: plan.isa scalar; cpu-tiny: more
 *     workers on a small image), set on a live context.
 *  5. The library reads no environment variable to decide how to filter:
 *     IC_CPU_PATH=direct,scalar in the environment changes nothing.
 *  6. Device-resident calls refuse what they cannot do: ic_convolve_async on
 *     a CPU backend is IC_ERR_UNSUPPORTED naming the backend; ic_conv1d_device
 *     and ic_matmul_device refuse bad arguments (IC_ERR_INVALID_ARG) and, in
 *     a build without CUDA, every call (IC_ERR_NO_BACKEND).
 */
#define IC_ADVANCED_API
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv_course.h"
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static void names(void)
{
    static const char *const m[] = {"auto",   "direct", "sep",    "fft",
                                    "global", "rows",   "tensor", "blur"};
    for (int i = 0; i < 8; i++)
        CHECK(!strcmp(ic_method_name((ic_method)i), m[i]), "method %d is %s", i,
              ic_method_name((ic_method)i));
    CHECK(!strcmp(ic_method_name((ic_method)8), "unknown"), "method 8 is unknown");
    static const char *const a[] = {"auto", "scalar", "avx2", "avx512"};
    for (int i = 0; i < 4; i++)
        CHECK(!strcmp(ic_cpu_isa_name((ic_cpu_isa)i), a[i]), "isa %d is %s", i,
              ic_cpu_isa_name((ic_cpu_isa)i));
    CHECK(!strcmp(ic_cpu_isa_name((ic_cpu_isa)4), "unknown"), "isa 4 is unknown");
}

static void tuning_text(void)
{
    ic_tuning t;
    memset(&t, 0, sizeof t);
    ic_status st = ic_tuning_parse("method=rows,cpu-isa=avx2,cpu-tiny=1,calibrate=builtin,"
                                   "fft-n=512,fft-fuse=never,rows-full=1,rows-shape=2,"
                                   "tile-channels=1,tile-rows=64",
                                   &t);
    CHECK(st == IC_OK, "full tuning text: %s", ic_last_error());
    CHECK(t.method == IC_METHOD_ROWS && t.cpu_isa == IC_ISA_AVX2 && t.cpu_tiny == 1 &&
              t.calibrate == IC_CALIBRATE_BUILTIN && t.fft_n == 512 && t.fft_fuse == 2 &&
              t.rows_full == 1 && t.rows_shape == 2 && t.tile_channels == 1 && t.tile_rows == 64,
          "every key sets its field");
    st = ic_tuning_parse("method=sep,method=direct,fft-n=0", &t);
    CHECK(st == IC_OK && t.method == IC_METHOD_DIRECT && t.fft_n == 0 && t.rows_shape == 2,
          "later keys win, keys not named keep their value");
    static const int many[] = {8, 16, 32, 64}; /* separable kernels row by row */
    for (int i = 0; i < 4; i++) {
        ic_tuning tm = t;
        char text[32];
        snprintf(text, sizeof text, "rows-shape=%d", many[i]);
        CHECK(ic_tuning_parse(text, &tm) == IC_OK && tm.rows_shape == many[i], "%s is taken: %s",
              text, ic_last_error());
    }
    static const struct {
        const char *text, *names;
    } bad[] = {
        {"method=bogus", "bogus"}, {"colour=red", "colour"}, {"fft-n=300", "300"},
        {"fft-n=32", "32"},        {"fft-n=16384", "16384"}, {"rows-shape=3", "3"},
        {"rows-shape=128", "128"}, {"cpu-tiny=2", "2"},      {"cpu-isa=sse9", "sse9"},
        {"calibrate=now", "now"},  {"method", "method"},     {"rows-full=-1", "-1"},
        {"fft-n=512x", "512x"},    {"tile-rows=12", "12"},   {"tile-channels=3", "3"},
        {"tile-rows=128", "128"},  {"fft-fuse=1", "1"},      {"fft-fuse=sometimes", "sometimes"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        ic_tuning before = t, u = t;
        st = ic_tuning_parse(bad[i].text, &u);
        CHECK(st == IC_ERR_INVALID_ARG && strstr(ic_last_error(), bad[i].names) &&
                  !memcmp(&u, &before, sizeof u),
              "'%s' refused naming '%s', tuning unchanged (%s: %s)", bad[i].text, bad[i].names,
              ic_status_str(st), ic_last_error());
    }
    CHECK(ic_tuning_parse(NULL, &t) == IC_ERR_INVALID_ARG, "NULL text refused");
    CHECK(ic_tuning_parse("", &t) == IC_OK, "empty text: nothing to change");

    /* the context refuses out-of-range values, at creation and later */
    ic_context *ctx = NULL;
    ic_tuning badt;
    memset(&badt, 0, sizeof badt);
    badt.rows_shape = 3;
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.tuning = &badt;
    st = ic_context_create(&ctx, "cpu", &o);
    CHECK(st == IC_ERR_INVALID_ARG && !ctx && strstr(ic_last_error(), "rows-shape"),
          "a context with rows_shape 3 is refused (%s: %s)", ic_status_str(st), ic_last_error());
    st = ic_context_create(&ctx, "cpu", NULL);
    CHECK(st == IC_OK, "cpu context: %s", ic_last_error());
    if (st != IC_OK)
        return;
    const struct {
        ic_tuning t;
        const char *names;
    } oor[] = {
        {{.method = (ic_method)(IC_METHOD_BLUR + 1)}, "method"},
        {{.cpu_isa = (ic_cpu_isa)4}, "instruction"},
        {{.calibrate = 2}, "calibrate"},
        {{.fft_n = 100}, "fft-n"},
        {{.fft_n = -256}, "fft-n"},
        {{.rows_shape = 128}, "rows-shape"},
        {{.tile_channels = -1}, "tile-channels"},
        {{.tile_rows = 24}, "tile-rows"},
        {{.fft_fuse = 3}, "fft-fuse"},
    };
    for (size_t i = 0; i < sizeof oor / sizeof oor[0]; i++) {
        st = ic_context_set_tuning(ctx, &oor[i].t);
        CHECK(st == IC_ERR_INVALID_ARG && strstr(ic_last_error(), oor[i].names),
              "set_tuning case %zu refused naming %s (%s)", i, oor[i].names, ic_last_error());
    }
    ic_tuning got, want;
    memset(&want, 0, sizeof want);
    want.method = IC_METHOD_SEP;
    want.fft_n = 1024;
    CHECK(ic_context_set_tuning(ctx, &want) == IC_OK && ic_context_get_tuning(ctx, &got) == IC_OK &&
              !memcmp(&got, &want, sizeof got),
          "get_tuning returns what set_tuning set");
    CHECK(ic_context_set_tuning(ctx, NULL) == IC_OK && ic_context_get_tuning(ctx, &got) == IC_OK &&
              got.method == IC_METHOD_AUTO && got.fft_n == 0,
          "set_tuning(NULL) restores the defaults");
    CHECK(ic_context_set_tuning(NULL, &want) == IC_ERR_INVALID_ARG &&
              ic_context_get_tuning(ctx, NULL) == IC_ERR_INVALID_ARG,
          "NULL context or tuning refused");
    ic_context_free(ctx);
}

static ic_context *cpu_ctx(const char *tuning)
{
    ic_context_options o;
    memset(&o, 0, sizeof o);
    o.threads = 2;
    ic_context *ctx = ict_context_tuned("cpu", tuning, &o);
    CHECK(ctx, "cpu context (%s): %s", tuning ? tuning : "defaults", ic_last_error());
    return ctx;
}

/* ic_plan_get agrees with ic_plan_explain's text on ctx for src, k, p. */
static void plan_vs_explain(ic_context *ctx, const ic_image *src, const ic_kernel *k,
                            const ic_params *p, ic_method want)
{
    ic_plan plan;
    char text[1024] = "", frag[96];
    ic_status st = ic_plan_get(ctx, src, k, p, &plan);
    CHECK(st == IC_OK, "%s: ic_plan_get: %s", k->name, ic_last_error());
    st = ic_plan_explain(ctx, src, k, p, text, sizeof text);
    CHECK(st == IC_OK, "%s: ic_plan_explain: %s", k->name, ic_status_str(st));
    CHECK(!strcmp(plan.backend, "cpu"), "%s: plan of backend %s", k->name, plan.backend);
    CHECK(want == IC_METHOD_AUTO || plan.method == want, "%s: method %s, want %s", k->name,
          ic_method_name(plan.method), ic_method_name(want));
    snprintf(frag, sizeof frag, "cpu: %s loops, ", ic_cpu_isa_name(plan.isa));
    CHECK(strstr(text, frag) != NULL, "%s: explain names the ISA '%s': %s", k->name, frag, text);
    if (plan.method == IC_METHOD_SEP) {
        snprintf(frag, sizeof frag, "separable rank %d ", plan.rank);
        CHECK(plan.rank >= 1 && strstr(text, frag), "%s: explain says '%s': %s", k->name, frag,
              text);
    } else {
        snprintf(frag, sizeof frag, "direct %dx%d ", k->width, k->height);
        CHECK(plan.method == IC_METHOD_DIRECT && plan.rank == 0 && strstr(text, frag),
              "%s: explain says '%s' (plan %s rank %d): %s", k->name, frag,
              ic_method_name(plan.method), plan.rank, text);
    }
    snprintf(frag, sizeof frag, "%d of 2 threads", plan.workers);
    CHECK(plan.workers >= 1 && strstr(text, frag), "%s: explain says '%s': %s", k->name, frag,
          text);
    CHECK(plan.pred_ms == -1 && plan.copy_bps == 0 && plan.ceilings == IC_CEILINGS_NONE,
          "%s: no cost model on the CPU", k->name);
}

static void plans(void)
{
    ic_context *ctx = cpu_ctx(NULL);
    if (!ctx)
        return;
    ic_image img;
    if (ic_image_create(&img, 300, 200, 3, IC_AOS) != IC_OK) {
        CHECK(0, "out of memory");
        ic_context_free(ctx);
        return;
    }
    ic_image_chart(&img, 7);
    static const struct {
        const char *text;
        ic_method want;
    } ks[] = {{"1 2 1; 2 4 2; 1 2 1 / 16", IC_METHOD_DIRECT},
              {"gaussian:9", IC_METHOD_SEP},
              {"unsharp:9", IC_METHOD_SEP}};
    for (size_t i = 0; i < sizeof ks / sizeof ks[0]; i++) {
        ic_kernel k;
        CHECK(ic_kernel_parse(&k, ks[i].text) == IC_OK, "kernel %s", ks[i].text);
        plan_vs_explain(ctx, &img, &k, NULL, ks[i].want);
        ic_kernel_free(&k);
    }
    ict_rng r;
    ict_rng_seed(&r, 0xADFA7C3Dull);
    ic_kernel k;
    CHECK(ict_kernel_random(&k, &r, 7, 7, ICT_K_BLUR) == IC_OK, "random 7x7");
    plan_vs_explain(ctx, &img, &k, NULL, IC_METHOD_AUTO);
    ic_kernel_free(&k);
    ic_image_free(&img);

    /* premultiply: cpu does it itself, seq takes the float64 path */
    ic_image rgba;
    CHECK(ic_image_create(&rgba, 16, 16, 4, IC_AOS) == IC_OK, "rgba");
    CHECK(ic_kernel_parse(&k, "box:3") == IC_OK, "box:3");
    ic_plan plan;
    CHECK(ic_plan_get(ctx, &rgba, &k, NULL, &plan) == IC_OK && plan.premultiply == 1,
          "cpu premultiplies RGBA under alpha auto");
    ic_params p;
    ic_params_default(&p);
    p.alpha = IC_ALPHA_INDEPENDENT;
    CHECK(ic_plan_get(ctx, &rgba, &k, &p, &plan) == IC_OK && plan.premultiply == 0,
          "alpha independent: no premultiplication");
    ic_context *seq = NULL;
    CHECK(ic_context_create(&seq, "seq", NULL) == IC_OK, "seq context");
    CHECK(ic_plan_get(seq, &rgba, &k, NULL, &plan) == IC_OK && plan.premultiply == 0 &&
              plan.method == IC_METHOD_AUTO && !strcmp(plan.backend, "seq") && plan.pred_ms == -1 &&
              plan.pred_direct_ms == -1 && plan.pred_sep_ms == -1 && plan.pred_fft_ms == -1,
          "seq: no planner, the float64 premultiplied path");
    CHECK(ic_plan_get(seq, NULL, &k, NULL, &plan) == IC_ERR_INVALID_ARG &&
              ic_plan_get(seq, &rgba, NULL, NULL, &plan) == IC_ERR_INVALID_ARG &&
              ic_plan_get(seq, &rgba, &k, NULL, NULL) == IC_ERR_INVALID_ARG,
          "ic_plan_get refuses NULL arguments");
    ic_context_free(seq);
    ic_kernel_free(&k);
    ic_image_free(&rgba);
    ic_context_free(ctx);
}

/* Filters random images on ctx and checks them against the oracle; the plan
 * of each must be method `want` (forced when want is not AUTO). */
static void forced_cases(ic_context *ctx, const char *label, ic_method want, uint64_t seed,
                         int *nsep)
{
    ict_rng r;
    ict_rng_seed(&r, seed);
    for (int i = 0; i < 24; i++) {
        const int w = ict_range(&r, 1, 90), h = ict_range(&r, 1, 70), ch = ict_range(&r, 1, 4);
        const ic_layout lay = i % 2 ? IC_SOA : IC_AOS;
        const int kk = 2 * ict_range(&r, 1, 4) + 1;
        ic_kernel k;
        ict_buf src, dst;
        memset(&src, 0, sizeof src);
        memset(&dst, 0, sizeof dst);
        /* low-rank kernels: the separable path can take them */
        if (ict_kernel_random(&k, &r, kk, kk, i % 3 ? ICT_K_LOWRANK : ICT_K_BLUR) != IC_OK ||
            ict_buf_alloc(&src, w, h, ch, lay, 3) || ict_buf_alloc(&dst, w, h, ch, lay, 5)) {
            CHECK(0, "out of memory");
            ic_kernel_free(&k);
            ict_buf_free(&src);
            ict_buf_free(&dst);
            return;
        }
        ict_buf_random(&src, &r, 0);
        ict_buf_fill(&dst, 0x5A);
        ic_params p;
        ic_params_default(&p);
        p.border = (ic_border)(i % 5);
        p.alpha = IC_ALPHA_INDEPENDENT;
        ic_plan plan;
        ic_status st = ic_plan_get(ctx, &src.img, &k, &p, &plan);
        CHECK(st == IC_OK, "%s case %d: plan: %s", label, i, ic_last_error());
        if (want == IC_METHOD_DIRECT)
            CHECK(plan.method == IC_METHOD_DIRECT && plan.forced, "%s case %d: plan %s", label, i,
                  ic_method_name(plan.method));
        /* sep runs whenever factors reproduce every weight within 2^-20,
         * else direct (not forced then) */
        if (want == IC_METHOD_SEP) {
            CHECK(plan.forced == (plan.method == IC_METHOD_SEP) &&
                      (plan.method == IC_METHOD_DIRECT || plan.rank >= 1),
                  "%s case %d: plan %s rank %d forced %d", label, i, ic_method_name(plan.method),
                  plan.rank, plan.forced);
            *nsep += plan.method == IC_METHOD_SEP;
        }
        /* fft runs every kernel whose weights are not all multiples of
         * 2^-16 (the blurs here), when the build has it */
        if (want == IC_METHOD_FFT) {
            CHECK(plan.forced == (plan.method == IC_METHOD_FFT), "%s case %d: plan %s forced %d",
                  label, i, ic_method_name(plan.method), plan.forced);
            *nsep += plan.method == IC_METHOD_FFT;
        }
        if (want == IC_METHOD_AUTO)
            CHECK(!plan.forced, "%s case %d: plan says forced", label, i);
        st = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
        CHECK(st == IC_OK, "%s case %d: convolve: %s", label, i, ic_status_str(st));
        ict_cmp cmp;
        const int ok = st == IC_OK && ict_oracle_check(&src.img, &k, &p, &dst.img, 0, h, &cmp) == 1;
        CHECK(ok, "%s case %d: %dx%dx%d %s kernel %dx%d border %s differs from the oracle", label,
              i, w, h, ch, ict_layout_str(lay), kk, kk, ict_border_str(p.border));
        if (!ok && st == IC_OK)
            ict_cmp_print(&cmp);
        CHECK(ict_buf_padding_is(&dst, 0x5A, NULL), "%s case %d: padding written", label, i);
        ic_kernel_free(&k);
        ict_buf_free(&src);
        ict_buf_free(&dst);
    }
}

static void forcing(void)
{
    static const struct {
        const char *tuning;
        ic_method want;
    } runs[] = {{"method=direct", IC_METHOD_DIRECT},
                {"method=sep", IC_METHOD_SEP},
                {"method=fft", IC_METHOD_FFT},
                {"method=rows", IC_METHOD_AUTO},
                {"method=global", IC_METHOD_AUTO}};
    for (size_t i = 0; i < sizeof runs / sizeof runs[0]; i++) {
        ic_context *ctx = cpu_ctx(runs[i].tuning);
        if (!ctx)
            continue;
        int nsep = 0;
        forced_cases(ctx, runs[i].tuning, runs[i].want, 0xF0CE0000ull + i, &nsep);
        if (runs[i].want == IC_METHOD_FFT) {
            /* the blurs of every third case; none without KissFFT, which the
             * backend's summary then does not name */
            int fft_built = 0;
            for (int b = 0; b < ic_backend_count(); b++) {
                ic_backend_info info;
                if (ic_backend_get(b, &info) == IC_OK && strcmp(info.name, "cpu") == 0)
                    fft_built = info.summary && strstr(info.summary, "FFT") != NULL;
            }
            CHECK(nsep == (fft_built ? 8 : 0), "method=fft ran the FFT in %d cases of 24", nsep);
        }
        if (runs[i].want == IC_METHOD_SEP) {
            CHECK(nsep >= 4, "method=sep ran the separable path in %d cases of 24 only", nsep);
            /* named separable kernels: forced or not, sep; a 3x3 binomial is
             * direct unless forced (its exact rank-1 factors keep the ties) */
            ic_image img;
            ic_kernel k;
            ic_plan plan;
            CHECK(ic_image_create(&img, 500, 300, 3, IC_AOS) == IC_OK, "image");
            CHECK(ic_kernel_parse(&k, "1 2 1; 2 4 2; 1 2 1 / 16") == IC_OK, "binomial");
            CHECK(ic_plan_get(ctx, &img, &k, NULL, &plan) == IC_OK &&
                      plan.method == IC_METHOD_SEP && plan.forced && plan.rank == 1,
                  "method=sep takes the 3x3 binomial separably (plan %s rank %d)",
                  ic_method_name(plan.method), plan.rank);
            ic_kernel_free(&k);
            ic_image_free(&img);
        }
        ic_context_free(ctx);
    }

    /* knobs on a live context change the plan as documented */
    ic_context *ctx = cpu_ctx(NULL);
    if (!ctx)
        return;
    ic_image img;
    ic_kernel k;
    CHECK(ic_image_create(&img, 64, 48, 3, IC_AOS) == IC_OK, "image");
    CHECK(ic_kernel_parse(&k, "gaussian:5") == IC_OK, "gaussian:5");
    ic_plan a, b;
    CHECK(ic_plan_get(ctx, &img, &k, NULL, &a) == IC_OK, "plan");
    CHECK(a.workers == 1, "a small image runs on the calling thread alone (%d workers)", a.workers);
    ic_tuning t;
    memset(&t, 0, sizeof t);
    t.cpu_isa = IC_ISA_SCALAR;
    t.cpu_tiny = 1;
    t.method = IC_METHOD_DIRECT;
    CHECK(ic_context_set_tuning(ctx, &t) == IC_OK && ic_plan_get(ctx, &img, &k, NULL, &b) == IC_OK,
          "tuned plan: %s", ic_last_error());
    CHECK(b.isa == IC_ISA_SCALAR && b.method == IC_METHOD_DIRECT && b.forced && b.workers == 2,
          "cpu-isa=scalar, cpu-tiny, method=direct: plan isa %s method %s workers %d",
          ic_cpu_isa_name(b.isa), ic_method_name(b.method), b.workers);
    CHECK(ic_context_set_tuning(ctx, NULL) == IC_OK &&
              ic_plan_get(ctx, &img, &k, NULL, &b) == IC_OK && b.isa == a.isa &&
              b.method == a.method && !b.forced,
          "back to the defaults");

    /* the environment is not read */
    setenv("IC_CPU_PATH", "direct,scalar", 1);
    ic_context *env = cpu_ctx(NULL);
    unsetenv("IC_CPU_PATH");
    if (env) {
        CHECK(ic_plan_get(env, &img, &k, NULL, &b) == IC_OK && b.isa == a.isa &&
                  b.method == a.method && !b.forced,
              "IC_CPU_PATH in the environment changed the plan (isa %s method %s)",
              ic_cpu_isa_name(b.isa), ic_method_name(b.method));
        ic_context_free(env);
    }
    ic_kernel_free(&k);
    ic_image_free(&img);
    ic_context_free(ctx);
}

static int has_cuda_build(void)
{
    for (int i = 0; i < ic_backend_count(); i++) {
        ic_backend_info info;
        if (ic_backend_get(i, &info) == IC_OK && !strncmp(info.name, "cuda", 4))
            return 1;
    }
    return 0;
}

static void device_calls(void)
{
    ic_context *ctx = cpu_ctx(NULL);
    if (!ctx)
        return;
    ic_image a, b;
    ic_kernel k;
    uint8_t buf[2];
    CHECK(ic_image_wrap_device(&a, buf, 1, 1, 1, IC_AOS, 0, 0, NULL) == IC_OK &&
              ic_image_wrap_device(&b, buf + 1, 1, 1, 1, IC_AOS, 0, 0, NULL) == IC_OK,
          "wrap device");
    CHECK(ic_kernel_parse(&k, "box:3") == IC_OK, "box:3");
    ic_status st = ic_convolve_async(ctx, &a, &b, &k, NULL);
    CHECK(st == IC_ERR_UNSUPPORTED && strstr(ic_last_error(), "cpu"),
          "ic_convolve_async on cpu: %s (%s)", ic_status_str(st), ic_last_error());
    CHECK(ic_convolve_async(NULL, &a, &b, &k, NULL) == IC_ERR_INVALID_ARG, "NULL context");
    ic_kernel_free(&k);
    ic_context_free(ctx);

    float w = 1.0f;
    CHECK(ic_conv1d_device(NULL, buf, 1, 0, &w, 1, NULL, NULL) == IC_ERR_INVALID_ARG &&
              ic_conv1d_device(buf, buf, 1, 0, &w, 2, NULL, NULL) == IC_ERR_INVALID_ARG &&
              ic_conv1d_device(buf, buf, 0, 0, &w, 1, NULL, NULL) == IC_ERR_INVALID_ARG &&
              ic_conv1d_device(buf, buf, IC_MAX_SIGNAL + 1, 0, &w, 1, NULL, NULL) ==
                  IC_ERR_TOO_LARGE,
          "ic_conv1d_device refuses bad arguments");
    CHECK(ic_matmul_device((ic_matmul_kernel)3, &w, &w, &w, 1, 1, 1, NULL) == IC_ERR_INVALID_ARG &&
              ic_matmul_device(IC_MATMUL_FAST, &w, &w, &w, 0, 1, 1, NULL) == IC_ERR_INVALID_ARG,
          "ic_matmul_device refuses bad arguments");
    if (!has_cuda_build()) {
        CHECK(ic_conv1d_device(buf, buf + 1, 1, 1, &w, 1, NULL, NULL) == IC_ERR_NO_BACKEND &&
                  ic_matmul_device(IC_MATMUL_FAST, &w, &w, &w, 1, 1, 1, NULL) ==
                      IC_ERR_NO_BACKEND &&
                  !strcmp(ic_matmul_tile(IC_MATMUL_FAST, 8, 8, 8), ""),
              "a build without CUDA has no device calls");
    }
}

int main(void)
{
    names();
    tuning_text();
    plans();
    forcing();
    device_calls();
    printf("test_advanced: %s (%d failures)\n", failures ? "FAILED" : "passed", failures);
    return failures ? 1 : 0;
}
