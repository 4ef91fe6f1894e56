/*
 * test_inputs.c - what ic_image_load, ic_image_decode and ic_image_probe
 * accept, through the public API: a path that is not a regular file (a FIFO,
 * a device) is refused at once; a header over the limits is refused from the
 * first bytes of a file; a JPEG with damaged entropy-coded data is refused
 * unless ic_load_options.accept_damaged, which reports it in *damaged. And
 * how a save puts its file in place: with no_replace never over anything (a
 * dangling link included); otherwise keeping the replaced file's mode.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "imgconv.h"
#include "testutil.h"

static char dir[] = "/tmp/ic_inputs.XXXXXX";

/* A test chart encoded as `name` ("x.png", "x.jpg"): *data (free() it). */
static size_t encoded(const char *name, int w, int h, uint8_t **data)
{
    ic_image img;
    *data = NULL;
    size_t n = 0;
    if (ic_image_create(&img, w, h, 3, IC_AOS) != IC_OK)
        return 0;
    for (int y = 0; y < h; y++)
        for (int x = 0; x < 3 * w; x++)
            img.data[(size_t)y * img.pitch + (size_t)x] = (uint8_t)(x * 7 + y * 3);
    if (ic_image_encode(&img, name, NULL, data, &n) != IC_OK)
        n = 0;
    ic_image_free(&img);
    return n;
}

static void on_alarm(int sig)
{
    (void)sig;
    static const char msg[] = "FAIL: a load blocked (still running after 5 s)\n";
    (void)!write(2, msg, sizeof msg - 1);
    _exit(1);
}

static void not_regular(void)
{
    char fifo[64];
    snprintf(fifo, sizeof fifo, "%s/p.png", dir);
    ICT_EXPECT(mkfifo(fifo, 0600) == 0, "mkfifo: %s", strerror(errno));
    ic_image img;
    signal(SIGALRM, on_alarm);
    alarm(5); /* opening a FIFO for reading waits for a writer */
    ic_status st = ic_image_load(&img, fifo, NULL);
    ICT_EXPECT(st == IC_ERR_IO && strstr(ic_last_error(), "not a regular file"), "a FIFO: %s (%s)",
               ic_status_str(st), ic_last_error());
    st = ic_image_load(&img, "/dev/zero", NULL);
    ICT_EXPECT(st == IC_ERR_IO && strstr(ic_last_error(), "not a regular file"),
               "/dev/zero: %s (%s)", ic_status_str(st), ic_last_error());
    alarm(0);
    st = ic_image_load(&img, dir, NULL);
    ICT_EXPECT(st == IC_ERR_IO && strstr(ic_last_error(), "directory"), "a directory: %s (%s)",
               ic_status_str(st), ic_last_error());
    unlink(fifo);
}

static void probe(void)
{
    uint8_t *png = NULL;
    const size_t n = encoded("x.png", 300, 200, &png);
    ICT_EXPECT(n > 100, "encode a PNG: %s", ic_last_error());
    int w = 0, h = 0;
    /* The header up to the first IDAT is all the probe needs. */
    ic_status st = ic_image_probe(png, 100, NULL, &w, &h);
    ICT_EXPECT(st == IC_OK && w == 300 && h == 200, "probe 100 bytes: %s (%s) %dx%d",
               ic_status_str(st), ic_last_error(), w, h);
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.max_pixels = 300 * 200 - 1; /* IHDR alone is enough to refuse it */
    st = ic_image_probe(png, 33, &lo, &w, &h);
    ICT_EXPECT(st == IC_ERR_TOO_LARGE && strstr(ic_last_error(), "--max-pixels"),
               "over max_pixels: %s (%s)", ic_status_str(st), ic_last_error());
    lo.max_pixels = 0;
    lo.max_memory = 300 * 200 * 3 - 1;
    st = ic_image_probe(png, n, &lo, &w, &h);
    ICT_EXPECT(st == IC_ERR_TOO_LARGE && strstr(ic_last_error(), "--max-memory"),
               "over max_memory: %s (%s)", ic_status_str(st), ic_last_error());
    st = ic_image_probe(png, 20, NULL, &w, &h);
    ICT_EXPECT(st == IC_ERR_FORMAT, "a cut header: %s", ic_status_str(st));
    free(png);

    uint8_t *jpg = NULL;
    const size_t jn = encoded("x.jpg", 64, 40, &jpg);
    ICT_EXPECT(jn > 100, "encode a JPEG: %s", ic_last_error());
    st = ic_image_probe(jpg, jn, NULL, &w, &h);
    ICT_EXPECT(st == IC_OK && w == 64 && h == 40, "probe a JPEG: %s %dx%d", ic_status_str(st), w,
               h);
    free(jpg);
}

/* A JPEG whose last bytes before EOI are garbage: libjpeg's "Corrupt JPEG
 * data: N extraneous bytes before marker 0xd9". */
static void damaged_jpeg(void)
{
    if (!ic_format_supported(IC_FMT_JPEG))
        return;
    uint8_t *jpg = NULL;
    const size_t n = encoded("x.jpg", 200, 120, &jpg);
    static const char junk[] = "garbagegarbagegarbage";
    uint8_t *bad = malloc(n + sizeof junk);
    ICT_EXPECT(n > 100 && bad, "encode a JPEG: %s", ic_last_error());
    if (!bad || n < 100) {
        free(jpg);
        free(bad);
        return;
    }
    memcpy(bad, jpg, n - 2);
    memcpy(bad + n - 2, junk, sizeof junk - 1);
    memcpy(bad + n - 2 + sizeof junk - 1, "\xff\xd9", 2);
    const size_t bn = n + sizeof junk - 1;

    ic_image img;
    ic_status st = ic_image_decode(&img, bad, bn, NULL);
    ICT_EXPECT(st == IC_ERR_FORMAT && strstr(ic_last_error(), "Corrupt JPEG data"),
               "damaged data refused: %s (%s)", ic_status_str(st), ic_last_error());
    if (st == IC_OK)
        ic_image_free(&img);

    int damaged = -1;
    ic_load_options lo;
    memset(&lo, 0, sizeof lo);
    lo.accept_damaged = 1;
    lo.damaged = &damaged;
    st = ic_image_decode(&img, bad, bn, &lo);
    ICT_EXPECT(st == IC_OK && damaged == 1 && img.width == 200,
               "accept_damaged: %s (%s), damaged %d", ic_status_str(st), ic_last_error(), damaged);
    if (st == IC_OK)
        ic_image_free(&img);
    st = ic_image_decode(&img, jpg, n, &lo);
    ICT_EXPECT(st == IC_OK && damaged == 0, "a sound file: %s, damaged %d", ic_status_str(st),
               damaged);
    if (st == IC_OK)
        ic_image_free(&img);
    free(jpg);
    free(bad);
}

static int read_text(const char *path, char *buf, size_t n)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    const size_t got = fread(buf, 1, n - 1, f);
    buf[got] = '\0';
    fclose(f);
    return (int)got;
}

static void saving(int fallback)
{
    if (fallback)
        setenv("IC_NO_TMPFILE", "1", 1);
    char path[64], link[64], buf[16];
    snprintf(path, sizeof path, "%s/out.bin", dir);
    snprintf(link, sizeof link, "%s/link.bin", dir);
    FILE *f = fopen(path, "wb");
    ICT_EXPECT(f && fputs("precious", f) >= 0 && fclose(f) == 0, "write %s", path);
    ic_save_options nr;
    memset(&nr, 0, sizeof nr);
    nr.no_replace = 1;
    ic_status st = ic_bytes_save_opts(path, "new", 3, &nr);
    ICT_EXPECT(st == IC_ERR_IO && strstr(ic_last_error(), "exists") &&
                   read_text(path, buf, sizeof buf) == 8,
               "no_replace over a file (fallback %d): %s (%s)", fallback, ic_status_str(st),
               ic_last_error());
    ICT_EXPECT(symlink("/nonexistent/ic_inputs_target", link) == 0, "symlink");
    st = ic_bytes_save_opts(link, "new", 3, &nr);
    ICT_EXPECT(st == IC_ERR_IO, "no_replace over a dangling link (fallback %d): %s", fallback,
               ic_status_str(st));
    st = ic_bytes_save(link, "new", 3);
    struct stat sb;
    ICT_EXPECT(st == IC_OK && lstat(link, &sb) == 0 && S_ISREG(sb.st_mode),
               "a link is replaced itself (fallback %d): %s", fallback, ic_status_str(st));
    unlink(link);
    ICT_EXPECT(chmod(path, 0604) == 0, "chmod");
    st = ic_bytes_save(path, "new", 3);
    ICT_EXPECT(st == IC_OK && stat(path, &sb) == 0 && (sb.st_mode & 07777) == 0604 &&
                   read_text(path, buf, sizeof buf) == 3,
               "a replaced file keeps its mode (fallback %d): %s, mode %o", fallback,
               ic_status_str(st), (unsigned)(sb.st_mode & 07777));
    unlink(path);
    st = ic_bytes_save_opts(path, "new", 3, &nr);
    ICT_EXPECT(st == IC_OK && stat(path, &sb) == 0, "no_replace, nothing there (fallback %d): %s",
               fallback, ic_status_str(st));
    unlink(path);
    unsetenv("IC_NO_TMPFILE");
}

int main(void)
{
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp: %s\n", strerror(errno));
        return 1;
    }
    not_regular();
    probe();
    damaged_jpeg();
    saving(0);
    saving(1);
    rmdir(dir);
    printf("test_inputs: %d checks, %d failed\n", ict_checks, ict_failed);
    return ict_failed ? 1 : 0;
}
