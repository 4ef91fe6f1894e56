/*
 * fuzz_kernel_text.c - libFuzzer target for the kernel text grammar
 * (ic_kernel_parse: named kernels with arguments, matrices with divisors),
 * then what a parsed kernel goes through: its SVD factoring and a small
 * filter on the CPU (a blur of any size included), whose output must be
 * finite and clamped.
 *
 * "@PATH" texts (which read files) are left to fuzz_kernel_file.
 */
#include <ctype.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* One context for the whole run: one worker thread, created on first use. */
static ic_context *cpu_context(void)
{
    static ic_context *ctx;
    if (!ctx) {
        ic_context_options co;
        memset(&co, 0, sizeof co);
        co.threads = 1;
        if (ic_context_create(&ctx, "cpu", &co) != IC_OK)
            abort();
    }
    return ctx;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = '\0';
    const char *p = text;
    while (isspace((unsigned char)*p))
        p++;
    if (*p == '@') {
        free(text);
        return 0;
    }
    ic_kernel k;
    ic_status st = ic_kernel_parse(&k, text);
    free(text);
    if (st != IC_OK) {
        if (st != IC_ERR_KERNEL || ic_last_error()[0] == '\0' || strchr(ic_last_error(), '\n'))
            abort();
        return 0;
    }
    /* a gaussian or box past IC_MAX_KERNEL carries only its shape */
    const int shape_only = k.blur && !k.coef;
    const int max = shape_only ? IC_MAX_BLUR : IC_MAX_KERNEL;
    if (k.width < 1 || k.height < 1 || k.width > max || k.height > max || !(k.width & 1) ||
        !(k.height & 1) || (!shape_only && (!k.coef || k.divisor == 0)))
        abort();

    ic_factors f;
    if (!shape_only && ic_kernel_factor(&k, 0, 0, &f) == IC_OK)
        ic_factors_free(&f);

    /* A 9x7 image, channels and border from the kernel's size. */
    const int ch = 1 + (k.width + k.height) % 4;
    ic_image src, dst;
    if (ic_image_create(&src, 9, 7, ch, IC_AOS) != IC_OK ||
        ic_image_create(&dst, 9, 7, ch, IC_AOS) != IC_OK)
        abort();
    ic_image_chart(&src, 3);
    ic_params prm;
    ic_params_default(&prm);
    prm.border = (ic_border)((k.width * 7 + k.height) % 5);
    st = ic_convolve(cpu_context(), &src, &dst, &k, &prm);
    if (st != IC_OK && st != IC_ERR_INVALID_ARG && st != IC_ERR_UNSUPPORTED)
        abort();
    ic_image_free(&src);
    ic_image_free(&dst);
    ic_kernel_free(&k);
    return 0;
}
