/*
 * calib_cache.c - the device-ceiling cache file (calib_cache.h): where it
 * lives, how it is read without trusting it, and how it is replaced.
 *
 * Format (exactly; one record per file):
 *   imgconv-calibration 1
 *   key <the key>
 *   copy_bps <%.17g>
 *   fma_per_s <%.17g>
 */
#include "core/calib_cache.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER "imgconv-calibration 1\n"

static int key_ok(const char *key)
{
    const size_t n = key ? strlen(key) : 0;
    if (n == 0 || n > IC_CALIB_MAX_KEY)
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)key[i] < 0x20 || (unsigned char)key[i] > 0x7e)
            return 0;
    return 1;
}

/* The cache directory into buf ("" when there is none). */
static int cache_dir(char *buf, size_t n)
{
    const char *x = getenv("XDG_CACHE_HOME");
    int w;
    if (x && x[0] == '/')
        w = snprintf(buf, n, "%s/imgconv", x);
    else {
        const char *h = getenv("HOME");
        if (!h || h[0] != '/')
            return 0;
        w = snprintf(buf, n, "%s/.cache/imgconv", h);
    }
    return w > 0 && (size_t)w < n;
}

int ic__calib_path(const char *key, char *buf, size_t n)
{
    if (!buf || n == 0 || !key_ok(key))
        return 0;
    char dir[4096];
    if (!cache_dir(dir, sizeof dir))
        return 0;
    char name[IC_CALIB_MAX_KEY + 1];
    size_t i = 0;
    uint64_t hash = 1469598103934665603ull; /* FNV-1a: names that sanitise alike differ */
    for (; key[i] && i < 80; i++) {
        const char c = key[i];
        const int keep = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                         (c >= '0' && c <= '9') || c == '.' || c == '-' || c == '_';
        name[i] = keep ? c : '_';
    }
    name[i] = '\0';
    for (const char *p = key; *p; p++)
        hash = (hash ^ (unsigned char)*p) * 1099511628211ull;
    const int w =
        snprintf(buf, n, "%s/calibration-%s-%016llx.txt", dir, name, (unsigned long long)hash);
    return w > 0 && (size_t)w < n;
}

/* Parses "<label> <number>\n" at *p; advances *p. */
static int read_value(const char **p, const char *label, double lo, double hi, double *out)
{
    const size_t n = strlen(label);
    if (strncmp(*p, label, n) != 0 || (*p)[n] != ' ')
        return 0;
    const char *s = *p + n + 1;
    if (!((*s >= '0' && *s <= '9')))
        return 0; /* no sign, no blanks, no "inf"/"nan" spelled out */
    char *end = NULL;
    errno = 0;
    const double v = strtod(s, &end);
    if (errno != 0 || end == s || *end != '\n' || !isfinite(v) || v < lo || v > hi)
        return 0;
    *out = v;
    *p = end + 1;
    return 1;
}

int ic__calib_load(const char *key, ic_calib *c)
{
    char path[4500];
    if (!c || !ic__calib_path(key, path, sizeof path))
        return 0;
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return 0;
    struct stat sb;
    char buf[IC_CALIB_MAX_BYTES + 1];
    ssize_t got = -1;
    if (fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0 &&
        sb.st_size <= IC_CALIB_MAX_BYTES)
        got = read(fd, buf, sizeof buf); /* one extra byte: a file that grew is refused */
    close(fd);
    if (got <= 0 || got > IC_CALIB_MAX_BYTES)
        return 0;
    buf[got] = '\0';
    if (memchr(buf, '\0', (size_t)got)) /* embedded NULs */
        return 0;
    const char *p = buf;
    const size_t hl = strlen(HEADER), kl = strlen(key);
    if (strncmp(p, HEADER, hl) != 0)
        return 0;
    p += hl;
    if (strncmp(p, "key ", 4) != 0 || strncmp(p + 4, key, kl) != 0 || p[4 + kl] != '\n')
        return 0;
    p += 4 + kl + 1;
    ic_calib v;
    if (!read_value(&p, "copy_bps", 1e8, 1e15, &v.copy_bps) ||
        !read_value(&p, "fma_per_s", 1e9, 1e17, &v.fma_per_s) || *p != '\0')
        return 0;
    *c = v;
    return 1;
}

/* mkdir -p of the cache directory, mode 0700 for what it creates. */
static int make_dirs(const char *path)
{
    char d[4096];
    const int w = snprintf(d, sizeof d, "%s", path);
    if (w <= 0 || (size_t)w >= sizeof d)
        return 0;
    char *slash = strrchr(d, '/');
    if (!slash || slash == d)
        return 0;
    *slash = '\0'; /* the file's directory */
    for (char *p = d + 1;; p++) {
        const int last = *p == '\0';
        if (*p == '/' || last) {
            const char save = *p;
            *p = '\0';
            if (mkdir(d, 0700) != 0 && errno != EEXIST)
                return 0;
            *p = save;
        }
        if (last)
            break;
    }
    struct stat sb;
    return stat(d, &sb) == 0 && S_ISDIR(sb.st_mode);
}

int ic__calib_store(const char *key, const ic_calib *c)
{
    char path[4500], tmp[4600];
    if (!c || !isfinite(c->copy_bps) || !isfinite(c->fma_per_s) || c->copy_bps < 1e8 ||
        c->copy_bps > 1e15 || c->fma_per_s < 1e9 || c->fma_per_s > 1e17 ||
        !ic__calib_path(key, path, sizeof path) || !make_dirs(path))
        return 0;
    const int w = snprintf(tmp, sizeof tmp, "%s.XXXXXX", path);
    if (w <= 0 || (size_t)w >= sizeof tmp)
        return 0;
    const int fd = mkstemp(tmp); /* O_EXCL, mode 0600: never follows a planted link */
    if (fd < 0)
        return 0;
    char buf[IC_CALIB_MAX_BYTES + 64];
    const int n = snprintf(buf, sizeof buf, HEADER "key %s\ncopy_bps %.17g\nfma_per_s %.17g\n", key,
                           c->copy_bps, c->fma_per_s);
    int ok = n > 0 && n <= IC_CALIB_MAX_BYTES && write(fd, buf, (size_t)n) == n;
    ok = close(fd) == 0 && ok;
    if (ok)
        ok = rename(tmp, path) == 0; /* replaces a file, or a link, not its target */
    if (!ok)
        unlink(tmp);
    return ok;
}
