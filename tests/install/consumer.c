/*
 * consumer.c - a program built against an installed imgconv (tests/install/
 * install.sh builds it with pkg-config, against the shared and the static
 * library, and with find_package(imgconv)): filters a test chart with a 5x5
 * Gaussian on the `cpu` and `seq` backends through the public header only and
 * checks that the two agree within one level, runs the 1D stencil of the
 * course header (imgconv_course.h) and compiles against the GPU codec's
 * (imgconv_gpu_codec.h), then prints "ok VERSION".
 */
#include <imgconv.h>
#include <imgconv_course.h>
#include <imgconv_gpu_codec.h>
#include <stdio.h>
#include <stdlib.h>

static int fail(const char *what, ic_status st)
{
    fprintf(stderr, "consumer: %s: %s (%s)\n", what, ic_status_str(st), ic_last_error());
    return 1;
}

int main(void)
{
    ic_image src, a, b;
    ic_kernel k;
    ic_status st;
    if ((st = ic_image_create(&src, 97, 61, 3, IC_AOS)) != IC_OK)
        return fail("create", st);
    if ((st = ic_image_chart(&src, 7)) != IC_OK)
        return fail("chart", st);
    if ((st = ic_kernel_parse(&k, "gaussian:5")) != IC_OK)
        return fail("kernel", st);
    if ((st = ic_image_create(&a, 97, 61, 3, IC_AOS)) != IC_OK ||
        (st = ic_image_create(&b, 97, 61, 3, IC_SOA)) != IC_OK)
        return fail("create", st);
    ic_params p;
    ic_params_default(&p);
    p.border = IC_BORDER_MIRROR;
    if ((st = ic_filter(&src, &a, &k, &p, "cpu")) != IC_OK)
        return fail("cpu", st);
    if ((st = ic_filter(&src, &b, &k, &p, "seq")) != IC_OK)
        return fail("seq", st);
    long changed = 0;
    for (int y = 0; y < src.height; y++)
        for (int x = 0; x < src.width; x++)
            for (int c = 0; c < 3; c++) {
                int va = *ic_image_at(&a, x, y, c), vb = *ic_image_at(&b, x, y, c);
                if (abs(va - vb) > 1) {
                    fprintf(stderr, "consumer: cpu %d != seq %d at (%d,%d,%d)\n", va, vb, x, y, c);
                    return 1;
                }
                changed += va != *ic_image_at(&src, x, y, c);
            }
    if (changed == 0)
        return fprintf(stderr, "consumer: the blur changed nothing\n"), 1;
    /* the stencil of radius 1 over 1, 2, 3 with the seed's zero ghost cells */
    const float in[3] = {1, 2, 3};
    float out[3];
    if ((st = ic_stencil1d(in, out, 3, 1, NULL, "cpu")) != IC_OK)
        return fail("stencil", st);
    if (out[0] != 3 || out[1] != 6 || out[2] != 5)
        return fprintf(stderr, "consumer: stencil %g %g %g\n", out[0], out[1], out[2]), 1;
    /* the codec header declares its calls (a CPU-only build refuses them) */
    void (*codec_free)(ic_gpu_codec *) = ic_gpu_codec_free;
    codec_free(NULL);
    printf("ok %s\n", ic_version());
    ic_kernel_free(&k);
    ic_image_free(&src);
    ic_image_free(&a);
    ic_image_free(&b);
    return 0;
}
