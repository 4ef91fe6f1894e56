/*
 * fuzz_read_file.c - libFuzzer target for reading images from the file
 * system: the input as a regular file, through ic_image_load and the CLI's
 * bounded reader (cli_read_file, tools/cli_files.c), must get the verdict the
 * memory decoder gives the same bytes, and the bytes read must be the file's;
 * the same name as a FIFO (no writer) or a special file (/dev/zero) must be
 * refused at once, never block or be read. The header probe (ic_image_probe)
 * must agree with the decoder: a header it refuses as too large the decoder
 * refuses, and a file the decoder takes passes it.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli_files.h"
#include "imgconv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char dir[64];

static void setup(void)
{
    if (dir[0])
        return;
    snprintf(dir, sizeof dir, "%s/ic_fuzz_read.XXXXXX",
             getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
    if (!mkdtemp(dir))
        abort();
}

/* A refusal of what is not a regular file: IC_ERR_IO, one line. */
static void refused(const char *path, const ic_load_options *lo)
{
    ic_image img;
    if (ic_image_load(&img, path, lo) != IC_ERR_IO || img.data ||
        !strstr(ic_last_error(), "not a regular file"))
        abort();
    uint8_t *bytes = NULL;
    size_t n = 0;
    char msg[256] = "";
    if (cli_read_file(path, lo->max_memory, lo, &bytes, &n, msg, sizeof msg) != IC_ERR_IO ||
        bytes || !strstr(msg, "not a regular file"))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    setup();
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = (uint64_t)1 << 22;
    lo.max_memory = (uint64_t)64 << 20;

    ic_image mem;
    const ic_status want = ic_image_decode(&mem, data, size, &lo);
    if (want == IC_OK)
        ic_image_free(&mem);
    int w, h;
    const ic_status probe = ic_image_probe(data, size, &lo, &w, &h);
    if ((probe == IC_ERR_TOO_LARGE && want != IC_ERR_TOO_LARGE) ||
        (want == IC_OK && probe != IC_OK))
        abort();

    char path[128];
    snprintf(path, sizeof path, "%s/f.img", dir);
    FILE *f = fopen(path, "wb");
    if (!f || (size && fwrite(data, 1, size, f) != size) || fclose(f) != 0)
        abort();
    ic_image img;
    const ic_status got = ic_image_load(&img, path, &lo);
    if (got != want)
        abort(); /* a file and the same bytes in memory */
    if (got == IC_OK)
        ic_image_free(&img);
    uint8_t *bytes = NULL;
    size_t n = 0;
    char msg[256] = "";
    const ic_status rs = cli_read_file(path, lo.max_memory, &lo, &bytes, &n, msg, sizeof msg);
    if (rs == IC_OK && (n != size || (size && memcmp(bytes, data, size) != 0)))
        abort(); /* what was read is not the file */
    if (rs != IC_OK && (rs != IC_ERR_TOO_LARGE || want != IC_ERR_TOO_LARGE))
        abort(); /* refused early only what the decoder refuses as too large */
    free(bytes);
    unlink(path);

    snprintf(path, sizeof path, "%s/p.img", dir);
    if (mkfifo(path, 0600) != 0 && errno != EEXIST)
        abort();
    refused(path, &lo); /* without O_NONBLOCK this would wait for a writer */
    unlink(path);
    refused("/dev/zero", &lo);
    return 0;
}
