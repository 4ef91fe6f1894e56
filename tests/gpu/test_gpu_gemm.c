/*
 * test_gpu_gemm.c - backend "cuda-gemm" (im2col + tiled matrix product) on
 * what the shared differential run (test_gpu_diff) does not reach: images
 * whose column matrix exceeds the 256 MB chunk, so that a plane is cut into
 * several chunks of rows (640x480 and 701x450 with 15x15 kernels) or a row
 * into pieces (300000x2), in AoS and SoA, every border mode, convolution
 * and correlation, bias; a 255-wide kernel; images smaller than the kernel;
 * the worked rounding example; --explain's plan; and, so that this test stands
 * alone, the shared differential cases. Every sample is compared
 * with the float64 oracle (tests/support/oracle.c). Exits 77 (SKIPPED) when
 * cuda-gemm is not usable here.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "testutil.h"

static int run_case(ic_context *ctx, const char *label, uint64_t seed, int w, int h, int c,
                    ic_layout layout, int kw, int kh, int ktype, ic_border border, int correlate,
                    float bias)
{
    ict_rng r;
    ict_rng_seed(&r, seed);
    ict_buf src, dst;
    ic_kernel k;
    memset(&k, 0, sizeof k);
    if (ict_buf_alloc(&src, w, h, c, layout, 3) != 0 ||
        ict_buf_alloc(&dst, w, h, c, layout, 5) != 0) {
        printf("FAIL %s: out of memory in the test\n", label);
        return 1;
    }
    ict_buf_random(&src, &r, 0);
    ict_buf_fill(&dst, 0xA5);
    int fail = 0;
    double *val = NULL, *slack = NULL;
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        printf("FAIL %s: ict_kernel_random\n", label);
        fail = 1;
        goto done;
    }
    ic_params p;
    ic_params_default(&p);
    p.border = border;
    p.border_value = (float)ict_range(&r, 0, 255);
    p.correlate = correlate;
    p.bias = bias;
    p.alpha = IC_ALPHA_INDEPENDENT;
    const ic_status s = ic_convolve(ctx, &src.img, &dst.img, &k, &p);
    if (s != IC_OK) {
        printf("FAIL %s: ic_convolve: %s: %s\n", label, ic_status_str(s), ic_last_error());
        fail = 1;
        goto done;
    }
    size_t off = 0;
    if (!ict_buf_padding_is(&dst, 0xA5, &off)) {
        printf("FAIL %s: wrote byte %zu outside the samples\n", label, off);
        fail = 1;
    }
    const size_t n = (size_t)w * (size_t)h * (size_t)c;
    val = malloc(n * sizeof *val);
    slack = malloc(n * sizeof *slack);
    if (!val || !slack) {
        printf("FAIL %s: out of memory in the test\n", label);
        fail = 1;
        goto done;
    }
    ict_oracle_rows(&src.img, &k, &p, 0, h, val, slack);
    ict_cmp cmp;
    ict_cmp_init(&cmp);
    ict_compare_rows(&cmp, &dst.img, 0, h, val, slack);
    if (!ict_cmp_passed(&cmp)) {
        fail = 1;
        printf("FAIL %s\n", label);
        ict_cmp_print(&cmp);
    }
done:
    if (fail)
        printf("     seed=0x%llx %dx%dx%d %s kernel %dx%d %s, %s border, %s, bias %g\n",
               (unsigned long long)seed, w, h, c, ict_layout_str(layout), kw, kh,
               ict_kernel_type_name(ktype), ict_border_str(border),
               correlate ? "correlation" : "convolution", (double)bias);
    else
        printf("ok   %s\n", label);
    free(val);
    free(slack);
    ic_kernel_free(&k);
    ict_buf_free(&src);
    ict_buf_free(&dst);
    return fail;
}

int main(void)
{
    char why[256] = "";
    if (!ict_backend_usable("cuda-gemm", why, sizeof why)) {
        printf("SKIPPED: %s\n", why);
        return 77;
    }
    ic_context *ctx = NULL;
    if (ic_context_create(&ctx, "cuda-gemm", NULL) != IC_OK) {
        printf("FAIL ic_context_create(cuda-gemm): %s\n", ic_last_error());
        return 1;
    }
    int f = 0;
    /* 256 MB of column matrix holds 466 rows of 640 pixels with 225 taps: two
     * chunks per channel */
    f += run_case(ctx, "640x480 RGB AoS, 15x15, two chunks per channel", 0x6E1, 640, 480, 3, IC_AOS,
                  15, 15, ICT_K_FLOAT, IC_BORDER_MIRROR, 0, 0.0f);
    f += run_case(ctx, "701x450 RGBA SoA, 15x15 blur, correlation, bias", 0x6E2, 701, 450, 4,
                  IC_SOA, 15, 15, ICT_K_BLUR, IC_BORDER_REFLECT, 1, 3.0f);
    /* one row of 300000 pixels with 225 taps is 270 MB: each row is cut into a
     * piece of 298261 pixels and one of 1739 */
    f += run_case(ctx, "300000x2 grey, 15x15, rows cut into pieces", 0x6EC, 300000, 2, 1, IC_AOS,
                  15, 15, ICT_K_FLOAT, IC_BORDER_WRAP, 0, 1.5f);
    const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                 IC_BORDER_REFLECT, IC_BORDER_WRAP};
    for (int b = 0; b < 5; b++) {
        char label[96];
        snprintf(label, sizeof label, "5x3 image, 15x15 kernel, %s", ict_border_str(borders[b]));
        f += run_case(ctx, label, 0x6E3 + (uint64_t)b, 5, 3, 1, IC_AOS, 15, 15, ICT_K_INT,
                      borders[b], b & 1, 0.0f);
    }
    f += run_case(ctx, "300x7 grey, 255x1 kernel", 0x6E9, 300, 7, 1, IC_SOA, 255, 1, ICT_K_FLOAT,
                  IC_BORDER_WRAP, 0, -2.0f);
    f += run_case(ctx, "33x17 RGB, 1x1 kernel", 0x6EA, 33, 17, 3, IC_AOS, 1, 1, ICT_K_ONEHOT,
                  IC_BORDER_CONSTANT, 0, 0.0f);
    f += run_case(ctx, "129x65 grey, 3x7 sharpen", 0x6EB, 129, 65, 1, IC_AOS, 3, 7, ICT_K_SHARPEN,
                  IC_BORDER_REPLICATE, 1, 0.0f);
    f += ict_check_rounding("cuda-gemm");
    /* the shared differential cases (test_gpu_diff runs them on every CUDA
     * backend); not in the quick mode that runs under compute-sanitizer */
    const char *q = getenv("IC_TEST_QUICK");
    if (!(q && *q && strcmp(q, "0") != 0))
        f += ict_diff_backend("cuda-gemm", ICT_DIFF_CASES, ICT_DIFF_SEED, ICT_DIFF_MAX_DIM);

    /* the plan names the lowering */
    ict_buf img;
    if (ict_buf_alloc(&img, 640, 480, 3, IC_AOS, 0) == 0) {
        ic_kernel k;
        const float ones[225] = {0};
        if (ic_kernel_create(&k, 15, 15, ones, 1.0) == IC_OK) {
            char plan[1024] = "";
            const ic_status s = ic_plan_explain(ctx, &img.img, &k, NULL, plan, sizeof plan);
            if (s != IC_OK || !strstr(plan, "im2col") || !strstr(plan, "chunk")) {
                printf("FAIL explain: %s: '%s'\n", ic_status_str(s), plan);
                f++;
            } else
                printf("ok   explain: %s", plan);
            ic_kernel_free(&k);
        }
        ict_buf_free(&img);
    }
    ic_context_free(ctx);
    printf("%s cuda-gemm: %d failure(s)\n", f ? "FAIL" : "ok", f);
    return f ? 1 : 0;
}
