/*
 * fuzz_kernel_file.c - libFuzzer target for kernel files (matrix text with
 * one row per line, libvips .mat with "W H SCALE OFFSET") through the public
 * loader ic_kernel_load. The bytes are handed over as a file without touching
 * the disk: an anonymous memory file (memfd) opened by its /proc path.
 *
 * A loaded kernel must be valid: odd sizes in range, finite coefficients, a
 * finite nonzero divisor and an OFFSET within the --bias range (issue 13).
 */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "imgconv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("ic_fuzz_kernel", 0);
        if (fd < 0)
            abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    }
    if (ftruncate(fd, 0) != 0 || pwrite(fd, data, size, 0) != (ssize_t)size)
        abort();
    ic_kernel k;
    ic_status st = ic_kernel_load(&k, path);
    if (st != IC_OK) {
        if ((st != IC_ERR_KERNEL && st != IC_ERR_IO) || ic_last_error()[0] == '\0' ||
            strchr(ic_last_error(), '\n'))
            abort();
        return 0;
    }
    if (k.width < 1 || k.height < 1 || k.width > IC_MAX_KERNEL || k.height > IC_MAX_KERNEL ||
        !(k.width & 1) || !(k.height & 1) || !isfinite(k.divisor) || k.divisor == 0 ||
        !isfinite(k.offset) || fabs(k.offset) > 1e6)
        abort();
    for (int i = 0; i < k.width * k.height; i++)
        if (!isfinite(k.coef[i]))
            abort();
    ic_factors f;
    if (ic_kernel_factor(&k, 0, 0, &f) == IC_OK)
        ic_factors_free(&f);
    ic_kernel_free(&k);
    return 0;
}
