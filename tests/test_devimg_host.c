/*
 * test_devimg_host.c - what the host side does with device images
 * (ic_image_wrap_device, issue 11), without a GPU: it never touches them.
 *
 * The device images here point at an unmapped address, so any host read or
 * write would crash the test. The host helpers (ic_image_copy, ic_image_clone,
 * ic_image_chart, ic_image_save) refuse them with IC_ERR_UNSUPPORTED,
 * ic_image_equal says 0, ic_image_free leaves them alone, and every CPU
 * backend's ic_convolve refuses them with IC_ERR_UNSUPPORTED and a message,
 * leaving a host destination untouched. ic_image_wrap_device checks its
 * arguments as ic_image_wrap does and refuses a negative device.
 */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "imgconv.h"

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

int main(void)
{
    /* An address no host code may dereference (the first page is unmapped). */
    void *nowhere = (void *)(uintptr_t)64;
    ic_image dev, host, clone;
    check(ic_image_wrap_device(&dev, nowhere, 40, 30, 3, IC_AOS, 0, 0, NULL) == IC_OK,
          "ic_image_wrap_device on a packed AoS image");
    check(dev.memory == IC_MEM_DEVICE && dev.device == 0 && dev.pitch == 120 && !dev.owner,
          "ic_image_wrap_device fills memory, device, pitch and owner");
    ic_image bad;
    check(ic_image_wrap_device(&bad, nowhere, 40, 30, 3, IC_AOS, 0, -1, NULL) == IC_ERR_INVALID_ARG,
          "a negative device is refused");
    check(ic_image_wrap_device(&bad, nowhere, 40, 30, 3, IC_AOS, 100, 0, NULL) ==
              IC_ERR_INVALID_ARG,
          "a pitch smaller than a row is refused");
    check(ic_image_wrap_device(&bad, NULL, 40, 30, 3, IC_AOS, 0, 0, NULL) == IC_ERR_INVALID_ARG,
          "a NULL pointer is refused");

    check(ic_image_create(&host, 40, 30, 3, IC_AOS) == IC_OK, "ic_image_create");
    memset(host.data, 0x5C, ic_image_size_bytes(&host));
    check(ic_image_copy(&host, &dev) == IC_ERR_UNSUPPORTED, "ic_image_copy from a device image");
    check(ic_image_copy(&dev, &host) == IC_ERR_UNSUPPORTED, "ic_image_copy into a device image");
    check(ic_image_equal(&dev, &host) == 0 && ic_image_equal(&host, &dev) == 0 &&
              ic_image_equal(&dev, &dev) == 0,
          "ic_image_equal with a device image is 0");
    check(ic_image_clone(&clone, &dev, IC_SOA) == IC_ERR_UNSUPPORTED && clone.data == NULL,
          "ic_image_clone of a device image");
    check(ic_image_chart(&dev, 1) == IC_ERR_UNSUPPORTED, "ic_image_chart into a device image");
    char path[] = "devimg-save-XXXXXX.ppm";
    check(ic_image_save(&dev, path, NULL) == IC_ERR_UNSUPPORTED && ic_last_error()[0],
          "ic_image_save of a device image");
    check(access(path, F_OK) != 0, "a refused ic_image_save leaves no file");

    ic_kernel k;
    check(ic_kernel_parse(&k, "gaussian:3") == IC_OK, "ic_kernel_parse");
    for (int b = 0; b < ic_backend_count(); b++) {
        ic_backend_info info;
        if (ic_backend_get(b, &info) != IC_OK || strncmp(info.name, "cuda", 4) == 0 || !info.usable)
            continue;
        ic_context *ctx = NULL;
        if (ic_context_create(&ctx, info.name, NULL) != IC_OK) {
            printf("FAIL %s: ic_context_create: %s\n", info.name, ic_last_error());
            failures++;
            continue;
        }
        ic_image dev2 = dev;
        dev2.data = (uint8_t *)nowhere + 4096 * 16; /* no overlap with dev */
        const ic_status s1 = ic_convolve(ctx, &dev, &host, &k, NULL);
        const int msg1 = strstr(ic_last_error(), "device") != NULL;
        const ic_status s2 = ic_convolve(ctx, &host, &dev, &k, NULL);
        const ic_status s3 = ic_convolve(ctx, &dev, &dev2, &k, NULL);
        char what[128];
        snprintf(what, sizeof what, "%s refuses device images with IC_ERR_UNSUPPORTED and says why",
                 info.name);
        check(s1 == IC_ERR_UNSUPPORTED && s2 == IC_ERR_UNSUPPORTED && s3 == IC_ERR_UNSUPPORTED &&
                  msg1,
              what);
        int untouched = 1;
        for (size_t i = 0; i < ic_image_size_bytes(&host); i++)
            untouched &= host.data[i] == 0x5C;
        snprintf(what, sizeof what, "%s leaves the host destination alone", info.name);
        check(untouched, what);
        ic_context_free(ctx);
    }
    ic_kernel_free(&k);
    ic_image_free(&dev); /* wrapped: nothing to free, the struct is zeroed */
    check(dev.data == NULL && dev.memory == IC_MEM_HOST, "ic_image_free of a device image");
    ic_image_free(&host);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
