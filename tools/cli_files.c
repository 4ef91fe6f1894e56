/*
 * cli_files.c - the list of files of batch mode: INPUT arguments (files,
 * directories, globs) expanded into input files, their output names in OUTDIR
 * and the reasons some are skipped (cli_files.h); and the bounded reading of
 * an input file into memory.
 */
#include "cli_files.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int list_add(blist *l, const char *path);

/* Adds an entry that is skipped, with the reason. */
static int list_skip(blist *l, const char *path, const char *why)
{
    if (list_add(l, path) != 0)
        return -1;
    snprintf(l->v[l->n - 1].skip, sizeof l->v[l->n - 1].skip, "%s", why);
    return 0;
}

static int list_add(blist *l, const char *path)
{
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        bfile *v = realloc(l->v, (size_t)cap * sizeof *v);
        if (!v)
            return -1;
        l->v = v;
        l->cap = cap;
    }
    bfile *f = &l->v[l->n];
    memset(f, 0, sizeof *f);
    f->in = strdup(path);
    if (!f->in)
        return -1;
    l->n++;
    return 0;
}

void cli_files_free(blist *l)
{
    for (int i = 0; i < l->n; i++) {
        free(l->v[i].in);
        free(l->v[i].out);
    }
    free(l->v);
    memset(l, 0, sizeof *l);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the entries of a directory, sorted by name: image files (known
 * extensions) to filter, the others (sub-folders, other names) as skipped
 * with the reason; dotfiles are ignored. */
static int add_dir(blist *l, const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return list_add(l, dir); /* reported when loading fails */
    char **names = NULL;
    int n = 0, cap = 0, rc = 0;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? 2 * cap : 64;
            char **nn = realloc(names, (size_t)cap * sizeof *nn);
            if (!nn) {
                rc = -1;
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = -1;
            break;
        }
        n++;
    }
    closedir(d);
    if (rc == 0)
        qsort(names, (size_t)n, sizeof *names, cmp_str);
    const size_t dl = strlen(dir);
    const int slash = dl > 0 && dir[dl - 1] == '/';
    for (int i = 0; i < n; i++) {
        if (rc == 0) {
            char *p = malloc(dl + strlen(names[i]) + 2);
            if (!p) {
                rc = -1;
            } else {
                sprintf(p, "%s%s%s", dir, slash ? "" : "/", names[i]);
                struct stat st;
                const ic_format fmt = ic_format_from_path(names[i]);
                if (stat(p, &st) != 0)
                    rc = 0; /* vanished meanwhile */
                else if (S_ISDIR(st.st_mode))
                    rc = list_skip(l, p, "a folder (batch does not descend into folders)");
                else if (!S_ISREG(st.st_mode))
                    rc = list_skip(l, p, "not a regular file");
                else if (fmt == IC_FMT_UNKNOWN)
                    rc = list_skip(l, p,
                                   "not an image name (.png .jpg .jpeg .tif .tiff .webp .pgm .ppm "
                                   ".pnm)");
                else if (!ic_format_supported(fmt)) {
                    char why[64];
                    snprintf(why, sizeof why, "%s is not built in (see --formats)",
                             ic_format_name(fmt));
                    rc = list_skip(l, p, why);
                } else
                    rc = list_add(l, p);
                free(p);
            }
        }
        free(names[i]);
    }
    free(names);
    return rc;
}

int cli_files_expand(blist *l, const char *arg)
{
    struct stat st;
    if (stat(arg, &st) == 0)
        return S_ISDIR(st.st_mode) ? add_dir(l, arg) : list_add(l, arg);
    if (strpbrk(arg, "*?[")) { /* a glob the shell did not expand */
        glob_t g;
        memset(&g, 0, sizeof g);
        if (glob(arg, 0, NULL, &g) == 0) {
            int rc = 0;
            for (size_t i = 0; i < g.gl_pathc && rc == 0; i++)
                rc = (stat(g.gl_pathv[i], &st) == 0 && S_ISDIR(st.st_mode))
                         ? add_dir(l, g.gl_pathv[i])
                         : list_add(l, g.gl_pathv[i]);
            globfree(&g);
            return rc;
        }
        globfree(&g);
    }
    return list_add(l, arg); /* missing: reported when loading fails */
}

/* OUTDIR/basename, the extension replaced by --format when given. */
static void make_output_name(bfile *f, const char *outdir, const char *format)
{
    const char *base = strrchr(f->in, '/');
    base = base ? base + 1 : f->in;
    const char *dot = strrchr(base, '.');
    const size_t stem = dot && dot != base ? (size_t)(dot - base) : strlen(base);
    const char *ext = format;
    if (!ext && dot && dot != base && ic_format_from_path(base) != IC_FMT_UNKNOWN)
        ext = dot + 1;
    if (!ext) {
        snprintf(f->err, sizeof f->err,
                 "no output format for this name (use --format png|jpg|tif|webp|ppm|pgm)");
        return;
    }
    const size_t n = strlen(outdir) + stem + strlen(ext) + 3;
    f->out = malloc(n);
    if (!f->out) {
        snprintf(f->err, sizeof f->err, "out of memory");
        return;
    }
    snprintf(f->out, n, "%s/%.*s.%s", outdir, (int)stem, base, ext);
}

static int cmp_out(const void *a, const void *b)
{
    const bfile *x = *(const bfile *const *)a, *y = *(const bfile *const *)b;
    return strcmp(x->out, y->out);
}

/* Names outputs, refuses existing ones without --overwrite (skips them with
 * --skip-existing), the input itself, and two inputs that would write the
 * same output. */
int cli_files_plan(blist *l, const cli_options *o)
{
    bfile **byname = malloc((size_t)(l->n ? l->n : 1) * sizeof *byname);
    if (!byname)
        return -1;
    int m = 0;
    for (int i = 0; i < l->n; i++) {
        bfile *f = &l->v[i];
        if (f->skip[0])
            continue;
        make_output_name(f, o->outdir, o->format);
        if (!f->out)
            continue;
        /* lstat: a dangling link is something there, which --overwrite
         * replaces (the link, not what it names). */
        struct stat so, si;
        if (lstat(f->out, &so) == 0) {
            if (stat(f->out, &so) == 0 && stat(f->in, &si) == 0 && si.st_dev == so.st_dev &&
                si.st_ino == so.st_ino)
                snprintf(f->err, sizeof f->err, "output %s is the input file itself", f->out);
            else if (o->skip_existing)
                snprintf(f->skip, sizeof f->skip, "output %s exists (--skip-existing)", f->out);
            else if (!o->overwrite)
                snprintf(f->err, sizeof f->err,
                         "output %s exists (use --overwrite or --skip-existing)", f->out);
        }
        if (!f->err[0] && !f->skip[0])
            byname[m++] = f;
    }
    qsort(byname, (size_t)m, sizeof *byname, cmp_out);
    for (int i = 1; i < m; i++)
        if (strcmp(byname[i]->out, byname[i - 1]->out) == 0)
            snprintf(byname[i]->err, sizeof byname[i]->err, "output %s is also the output of %s",
                     byname[i]->out, byname[i - 1]->in);
    free(byname);
    return 0;
}

/* What is read before the header is checked: enough for the header of every
 * format the library reads, short of a PNG with huge chunks before IHDR's
 * neighbours (then the whole file is read, as before, within max_bytes). */
#define HEAD_BYTES 65536u

/* Reads up to want bytes at buf; returns the count, or -1 on an error. */
static ssize_t read_full(int fd, uint8_t *buf, size_t want)
{
    size_t n = 0;
    while (n < want) {
        const ssize_t r = read(fd, buf + n, want - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return -1;
        if (r == 0)
            break;
        n += (size_t)r;
    }
    return (ssize_t)n;
}

ic_status cli_read_file(const char *path, uint64_t max_bytes, const ic_load_options *lo,
                        uint8_t **data, size_t *size, char *msg, size_t msglen)
{
    *data = NULL;
    *size = 0;
    /* O_NONBLOCK: opening a FIFO for reading would wait for a writer. */
    const int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        snprintf(msg, msglen, "cannot open: %s", strerror(errno));
        return IC_ERR_IO;
    }
    ic_status st = IC_OK;
    uint8_t *buf = NULL;
    struct stat sb;
    if (fstat(fd, &sb) != 0) {
        snprintf(msg, msglen, "cannot read: %s", strerror(errno));
        st = IC_ERR_IO;
    } else if (S_ISDIR(sb.st_mode)) {
        snprintf(msg, msglen, "cannot read: %s", strerror(EISDIR));
        st = IC_ERR_IO;
    } else if (!S_ISREG(sb.st_mode)) {
        snprintf(msg, msglen, "not a regular file (a FIFO, device or socket)");
        st = IC_ERR_IO;
    } else if ((uint64_t)sb.st_size > max_bytes) {
        char a[32], b[32];
        ic_bytes_text(a, b, sizeof a, (uint64_t)sb.st_size, max_bytes);
        snprintf(msg, msglen,
                 "the file is %s, over the memory limit %s (raise it with --max-memory)", a, b);
        st = IC_ERR_TOO_LARGE;
    }
    /* The size read is the size fstat gave: a file that grows meanwhile is
     * cut there (the decoder then reports it), and one that shrinks ends
     * early. */
    const size_t total = st == IC_OK ? (size_t)sb.st_size : 0;
    if (st == IC_OK && !(buf = malloc(total ? total : 1))) {
        snprintf(msg, msglen, "out of memory");
        st = IC_ERR_NOMEM;
    }
    size_t n = 0;
    if (st == IC_OK) {
        const size_t head = total < HEAD_BYTES ? total : HEAD_BYTES;
        const ssize_t r = read_full(fd, buf, head);
        if (r < 0) {
            snprintf(msg, msglen, "read error: %s", strerror(errno));
            st = IC_ERR_IO;
        } else {
            n = (size_t)r;
        }
    }
    if (st == IC_OK && lo && n == HEAD_BYTES && n < total) {
        /* A header over the limits is refused before the rest is read. */
        int w, h;
        if (ic_image_probe(buf, n, lo, &w, &h) == IC_ERR_TOO_LARGE) {
            snprintf(msg, msglen, "%s", ic_last_error());
            st = IC_ERR_TOO_LARGE;
        }
    }
    if (st == IC_OK && n == HEAD_BYTES && n < total) {
        const ssize_t r = read_full(fd, buf + n, total - n);
        if (r < 0) {
            snprintf(msg, msglen, "read error: %s", strerror(errno));
            st = IC_ERR_IO;
        } else {
            n += (size_t)r;
        }
    }
    close(fd);
    if (st != IC_OK) {
        free(buf);
        return st;
    }
    *data = buf;
    *size = n;
    return IC_OK;
}

void cli_damaged_notice(const char *path)
{
    fprintf(stderr,
            "imgconv: warning: %s: damaged JPEG data, decoded as far as it goes "
            "(--accept-damaged)\n",
            path);
}
