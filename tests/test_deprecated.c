/*
 * test_deprecated.c - the names kept for one release after the renames of
 * docs/naming.md still build and do what their new names do: each old name
 * is called beside its new one on the same arguments and the results are
 * compared. The warnings the old names carry are the point of them, so this
 * file alone turns them off.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "imgconv_gpu_codec.h"
#include "testutil.h"

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#endif

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

static void test_getters(void)
{
    CHECK(ic_default_max_memory() == ic_max_memory_default(),
          "ic_default_max_memory %llu != ic_max_memory_default %llu",
          (unsigned long long)ic_default_max_memory(), (unsigned long long)ic_max_memory_default());
    int n_old = -1, n_new = -2;
    const ic_named_kernel_info *t_old = ic_named_kernels(&n_old);
    const ic_named_kernel_info *t_new = ic_kernel_list(&n_new);
    CHECK(t_old == t_new && n_old == n_new && n_new > 0,
          "ic_named_kernels (%d) and ic_kernel_list (%d) give different tables", n_old, n_new);
}

static void test_explain(void)
{
    ic_context *ctx = NULL;
    ic_image src;
    ic_kernel k;
    if (ic_context_create(&ctx, "cpu", NULL) != IC_OK || ic_image_create(&src, 64, 48, 3, IC_AOS) ||
        ic_kernel_parse(&k, "gaussian:5") != IC_OK) {
        CHECK(0, "set-up failed: %s", ic_last_error());
        return;
    }
    char a[2048], b[2048];
    const ic_status sa = ic_explain(ctx, &src, &k, NULL, a, sizeof a);
    const ic_status sb = ic_plan_explain(ctx, &src, &k, NULL, b, sizeof b);
    CHECK(sa == IC_OK && sb == IC_OK && strcmp(a, b) == 0,
          "ic_explain (%d) and ic_plan_explain (%d) differ:\n%s\n%s", (int)sa, (int)sb, a, b);
    /* the error path too: a NULL buffer */
    CHECK(ic_explain(ctx, &src, &k, NULL, NULL, 0) == ic_plan_explain(ctx, &src, &k, NULL, NULL, 0),
          "ic_explain and ic_plan_explain disagree on a NULL buffer");
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_context_free(ctx);
}

static void test_save_bytes(void)
{
    char dir[] = "/tmp/ict_deprecated_XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "mkdtemp failed");
        return;
    }
    char path[64];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    static const char data[] = "imgconv";
    CHECK(ic_save_bytes(path, data, sizeof data) == IC_OK, "ic_save_bytes: %s", ic_last_error());
    FILE *f = fopen(path, "rb");
    char back[16] = {0};
    const size_t got = f ? fread(back, 1, sizeof back, f) : 0;
    if (f)
        fclose(f);
    CHECK(got == sizeof data && memcmp(back, data, sizeof data) == 0,
          "ic_save_bytes wrote %zu bytes, not the %zu given", got, sizeof data);
    CHECK(ic_save_bytes(NULL, data, 1) == ic_bytes_save(NULL, data, 1),
          "ic_save_bytes and ic_bytes_save disagree on a NULL path");
    ic_save_cleanup(); /* nothing in progress: a no-op, as ic_image_save_cleanup */
    remove(path);
    rmdir(dir);
}

static void test_gpu_codec(void)
{
    /* a NULL codec is refused the same way by both names, with or without CUDA */
    ic_bytes in = {(const uint8_t *)"x", 1};
    ic_image out;
    ic_decode_result res;
    CHECK(ic_gpu_decode(NULL, 1, &in, NULL, NULL, &out, &res) ==
              ic_gpu_codec_decode(NULL, 1, &in, NULL, NULL, &out, &res),
          "ic_gpu_decode and ic_gpu_codec_decode disagree on a NULL codec");
    ic_image img;
    ic_bytes enc;
    memset(&img, 0, sizeof img);
    CHECK(ic_gpu_encode(NULL, 0, &img, "x.jpg", NULL, &enc) ==
              ic_gpu_codec_encode(NULL, 0, &img, "x.jpg", NULL, &enc),
          "ic_gpu_encode and ic_gpu_codec_encode disagree on a NULL codec");
}

int main(void)
{
    test_getters();
    test_explain();
    test_save_bytes();
    test_gpu_codec();
    if (failures) {
        printf("test_deprecated: %d failure(s)\n", failures);
        return 1;
    }
    printf("test_deprecated: all passed\n");
    return 0;
}
