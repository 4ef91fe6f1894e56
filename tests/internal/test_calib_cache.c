/*
 * test_calib_cache.c - the device-ceiling cache file (src/core/calib_cache.c)
 * read as untrusted input: a record round-trips exactly; a missing,
 * malformed, oversized, wrong-key, out-of-range or non-regular file (a
 * directory, a FIFO, a link to /dev/zero) counts as no cache, without
 * blocking or crashing; a store replaces a corrupt file and a planted
 * symbolic link without writing through the link; no cache directory (no
 * XDG_CACHE_HOME, no HOME) means no cache.
 *
 * The one white-box unit test of the suite (tests/CMakeLists.txt): it calls
 * the internal core/calib_cache.h directly, because the public API reaches
 * the cache only through the `cuda` backend's first plan, i.e. on a GPU
 * machine, and a file parser for untrusted input wants its malformed cases
 * run everywhere (CI has no GPU).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/calib_cache.h"

static int failures;

static void check(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL %s\n", what);
        failures++;
    }
}

static void write_file(const char *path, const char *data, size_t n)
{
    unlink(path);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, n, f) != n) {
        printf("FAIL cannot write %s\n", path);
        failures++;
    }
    if (f)
        fclose(f);
}

int main(void)
{
    char dir[] = "/tmp/ic-calib-XXXXXX";
    if (!mkdtemp(dir)) {
        printf("FAIL mkdtemp\n");
        return 1;
    }
    setenv("XDG_CACHE_HOME", dir, 1);
    const char *key =
        "NVIDIA H100 80GB HBM3 uuid 0123abcd driver 13000 runtime 13000 imgconv 0.1.0";
    char path[4600];
    check(ic__calib_path(key, path, sizeof path), "a path for a key");
    char want_prefix[256];
    snprintf(want_prefix, sizeof want_prefix, "%s/imgconv/calibration-NVIDIA_H100", dir);
    check(strncmp(path, want_prefix, strlen(want_prefix)) == 0, "the path is under XDG_CACHE_HOME");
    check(!ic__calib_path("two\nlines", path + 0, 0), "no path into a zero-size buffer");
    char p2[4600];
    check(!ic__calib_path("bad\nkey", p2, sizeof p2), "a key with a newline is refused");
    check(!ic__calib_path("", p2, sizeof p2), "an empty key is refused");

    ic_calib c = {0, 0}, r = {0, 0};
    check(!ic__calib_load(key, &r), "no file: no cache");
    c.copy_bps = 3.0183412345678e12;
    c.fma_per_s = 2.77e13 / 3.0;
    check(ic__calib_store(key, &c), "store creates the directory and the file");
    struct stat sb;
    char sub[300];
    snprintf(sub, sizeof sub, "%s/imgconv", dir);
    check(stat(sub, &sb) == 0 && (sb.st_mode & 0777) == 0700, "the directory is 0700");
    check(ic__calib_load(key, &r) && r.copy_bps == c.copy_bps && r.fma_per_s == c.fma_per_s,
          "a stored record reads back exactly");
    check(!ic__calib_load("another device", &r), "another key has no record");

    /* Corrupt contents: each must read as no cache. */
    char good[512];
    const int gl = snprintf(good, sizeof good,
                            "imgconv-calibration 1\nkey %s\ncopy_bps 3e12\nfma_per_s 2e13\n", key);
    write_file(path, good, (size_t)gl);
    check(ic__calib_load(key, &r) && r.copy_bps == 3e12, "a hand-written valid record is read");
    const char *bad[] = {
        "",
        "imgconv-calibration 1\n",
        "imgconv-calibration 2\nkey K\ncopy_bps 3e12\nfma_per_s 2e13\n",
        "garbage\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps nan\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps inf\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps -3e12\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps 1e300\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps 0\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps 3e12\nfma_per_s 2e13\nextra 1\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps 3e12\nfma_per_s 2e13",
        "imgconv-calibration 1\nkey %s\ncopy_bps 3e12 \nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\nfma_per_s 2e13\ncopy_bps 3e12\n",
        "imgconv-calibration 1\nkey %sX\ncopy_bps 3e12\nfma_per_s 2e13\n",
        "imgconv-calibration 1\nkey %s\ncopy_bps  3e12\nfma_per_s 2e13\n",
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char buf[600];
        const int n = snprintf(buf, sizeof buf, bad[i], key);
        write_file(path, buf, (size_t)n);
        char what[80];
        snprintf(what, sizeof what, "corrupt record %zu reads as no cache", i);
        check(!ic__calib_load(key, &r), what);
    }
    /* an embedded NUL after a valid record */
    char nul[600];
    memcpy(nul, good, (size_t)gl);
    nul[gl] = '\0';
    nul[gl + 1] = 'x';
    write_file(path, nul, (size_t)gl + 2);
    check(!ic__calib_load(key, &r), "a record with a NUL byte reads as no cache");
    /* oversized: a valid record padded past the limit */
    char *big = malloc(IC_CALIB_MAX_BYTES * 4);
    memset(big, '\n', IC_CALIB_MAX_BYTES * 4);
    memcpy(big, good, (size_t)gl);
    write_file(path, big, IC_CALIB_MAX_BYTES * 4);
    free(big);
    check(!ic__calib_load(key, &r), "an oversized file reads as no cache");
    /* not a regular file */
    unlink(path);
    check(mkdir(path, 0700) == 0 && !ic__calib_load(key, &r), "a directory reads as no cache");
    rmdir(path);
    check(mkfifo(path, 0600) == 0 && !ic__calib_load(key, &r),
          "a FIFO reads as no cache, without blocking");
    unlink(path);
    check(symlink("/dev/zero", path) == 0 && !ic__calib_load(key, &r),
          "a link to /dev/zero reads as no cache");
    /* a store replaces a planted link instead of writing through it */
    char victim[300];
    snprintf(victim, sizeof victim, "%s/victim", dir);
    write_file(victim, "keep me\n", 8);
    unlink(path);
    check(symlink(victim, path) == 0, "plant a link");
    check(ic__calib_store(key, &c), "store over a planted link");
    char vb[32] = "";
    FILE *vf = fopen(victim, "rb");
    const size_t vn = vf ? fread(vb, 1, sizeof vb - 1, vf) : 0;
    if (vf)
        fclose(vf);
    check(vn == 8 && memcmp(vb, "keep me\n", 8) == 0, "the link's target is left alone");
    check(lstat(path, &sb) == 0 && S_ISREG(sb.st_mode), "the link was replaced by a file");
    check(ic__calib_load(key, &r) && r.copy_bps == c.copy_bps, "the new record reads back");
    /* a corrupt file is replaced by the next store */
    write_file(path, "junk", 4);
    check(ic__calib_store(key, &c) && ic__calib_load(key, &r), "a store replaces a corrupt file");
    /* out-of-range values are not stored */
    ic_calib silly = {-1, 2e13};
    check(!ic__calib_store(key, &silly), "out-of-range values are not stored");
    /* no cache directory */
    setenv("XDG_CACHE_HOME", "relative/dir", 1);
    setenv("HOME", dir, 1);
    check(ic__calib_path(key, p2, sizeof p2) && strstr(p2, "/.cache/imgconv/") != NULL,
          "a relative XDG_CACHE_HOME falls back to $HOME/.cache");
    unsetenv("XDG_CACHE_HOME");
    unsetenv("HOME");
    check(!ic__calib_path(key, p2, sizeof p2) && !ic__calib_load(key, &r) &&
              !ic__calib_store(key, &c),
          "no XDG_CACHE_HOME and no HOME: no cache");

    /* clean up */
    unlink(path);
    unlink(victim);
    char hc[300];
    snprintf(hc, sizeof hc, "%s/.cache/imgconv", dir);
    rmdir(hc);
    snprintf(hc, sizeof hc, "%s/.cache", dir);
    rmdir(hc);
    rmdir(sub);
    rmdir(dir);
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}
