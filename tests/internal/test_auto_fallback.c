/*
 * test_auto_fallback.c - an `auto` context whose backend cannot run a kernel
 * hands the job to cpu instead of failing (src/dispatch/context.c): a box
 * past IC_MAX_KERNEL, which only backends with IC_CAP_BLUR take, on an auto
 * context that chose `seq` (without that capability) must give the cpu
 * backend's output byte for byte, explain and plan it as cpu; the same
 * context still runs small kernels itself, and a context named `seq` still
 * refuses the big box with its one-line reason. Needs no GPU.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch/dispatch.h"
#include "imgconv.h"

static int failures;

#define EXPECT(cond, ...)                                                                          \
    do {                                                                                           \
        if (!(cond)) {                                                                             \
            printf("FAIL %s:%d: ", __FILE__, __LINE__);                                            \
            printf(__VA_ARGS__);                                                                   \
            printf("\n");                                                                          \
            failures++;                                                                            \
        }                                                                                          \
    } while (0)

static void fill(ic_image *im)
{
    uint32_t s = 12345u;
    for (int y = 0; y < im->height; y++)
        for (int x = 0; x < im->width * im->channels; x++) {
            s = s * 1664525u + 1013904223u;
            ((uint8_t *)im->data)[(size_t)y * im->pitch + (size_t)x] = (uint8_t)(s >> 24);
        }
}

static int same(const ic_image *a, const ic_image *b)
{
    for (int y = 0; y < a->height; y++)
        if (memcmp((const uint8_t *)a->data + (size_t)y * a->pitch,
                   (const uint8_t *)b->data + (size_t)y * b->pitch,
                   (size_t)a->width * (size_t)a->channels) != 0)
            return 0;
    return 1;
}

int main(void)
{
    ic_image src, want, got;
    ic_kernel big, small;
    ic_context *autoc = NULL, *cpu = NULL, *seq = NULL;
    if (ic_image_create(&src, 40, 30, 3, IC_AOS) != IC_OK ||
        ic_image_create(&want, 40, 30, 3, IC_AOS) != IC_OK ||
        ic_image_create(&got, 40, 30, 3, IC_AOS) != IC_OK ||
        ic_kernel_parse(&big, "box:301") != IC_OK || ic_kernel_parse(&small, "box:3") != IC_OK ||
        ic_context_create(&cpu, "cpu", NULL) != IC_OK ||
        ic_context_create(&seq, "seq", NULL) != IC_OK ||
        ic__context_create_auto(&autoc, "seq", NULL) != IC_OK) {
        printf("FAIL setup: %s\n", ic_last_error());
        return 1;
    }
    EXPECT(big.coef == NULL, "box:301 carries weights; the test needs a shape-only kernel");
    fill(&src);
    ic_params p;
    ic_params_default(&p);

    EXPECT(ic_convolve(cpu, &src, &want, &big, &p) == IC_OK, "cpu: %s", ic_last_error());
    memset(got.data, 0xA5, got.pitch * (size_t)got.height);
    const ic_status st = ic_convolve(autoc, &src, &got, &big, &p);
    EXPECT(st == IC_OK, "auto(seq) refused box:301: %s", ic_last_error());
    EXPECT(st != IC_OK || same(&want, &got), "auto(seq) box:301 differs from cpu's");
    EXPECT(strcmp(ic_context_backend(autoc), "seq") == 0, "the context's backend changed to %s",
           ic_context_backend(autoc));

    char buf[2048] = "";
    EXPECT(ic_plan_explain(autoc, &src, &big, &p, buf, sizeof buf) == IC_OK, "explain: %s",
           ic_last_error());
    EXPECT(strncmp(buf, "cpu", 3) == 0, "explain of the fallen-back job: %.80s", buf);
    ic_plan plan;
    EXPECT(ic_plan_get(autoc, &src, &big, &p, &plan) == IC_OK, "plan: %s", ic_last_error());
    EXPECT(plan.backend && strcmp(plan.backend, "cpu") == 0, "plan backend %s",
           plan.backend ? plan.backend : "(null)");

    /* small kernels stay on the chosen backend */
    EXPECT(ic_plan_get(autoc, &src, &small, &p, &plan) == IC_OK, "plan small: %s", ic_last_error());
    EXPECT(plan.backend && strcmp(plan.backend, "seq") == 0, "small kernel planned on %s",
           plan.backend ? plan.backend : "(null)");
    EXPECT(ic_convolve(cpu, &src, &want, &small, &p) == IC_OK, "cpu small: %s", ic_last_error());
    EXPECT(ic_convolve(autoc, &src, &got, &small, &p) == IC_OK, "auto small: %s", ic_last_error());
    EXPECT(same(&want, &got), "auto(seq) box:3 differs from cpu's");

    /* a backend asked for by name still refuses, in one line */
    EXPECT(ic_convolve(seq, &src, &got, &big, &p) == IC_ERR_UNSUPPORTED,
           "seq took box:301 by name");
    EXPECT(strstr(ic_last_error(), "use backend cpu") && !strchr(ic_last_error(), '\n'),
           "seq's reason: %s", ic_last_error());

    ic_context_free(autoc);
    ic_context_free(cpu);
    ic_context_free(seq);
    ic_kernel_free(&big);
    ic_kernel_free(&small);
    ic_image_free(&src);
    ic_image_free(&want);
    ic_image_free(&got);
    if (failures)
        printf("%d failure(s)\n", failures);
    else
        printf("auto fallback: OK\n");
    return failures ? 1 : 0;
}
