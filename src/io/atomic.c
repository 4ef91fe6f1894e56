/*
 * atomic.c - output files that appear only when complete, whatever happens
 * to the process (docs/cli.md#output-files: an interrupted run leaves no partial
 * file).
 *
 * On Linux the data goes to an anonymous file, open(DIR, O_TMPFILE): it has no
 * name, so a crash or SIGKILL while writing leaves nothing. Once written and
 * synced it is linked under the target's name; when the target exists
 * (linkat cannot replace a file) it is linked under a temporary name and
 * renamed over the target, atomically, with the catchable signals blocked in
 * this thread for those two calls (SIGKILL in the microseconds between them is
 * the one way to leave that temporary).
 * Where O_TMPFILE is not supported (other kernels and file systems), the data
 * goes to DIR/.BASE.XXXXXX from mkstemp, renamed when complete.
 *
 * Without replacing (no_replace) the last step is exclusive: linkat, or
 * renameat2(RENAME_NOREPLACE), else link and unlink of the temporary, fails
 * when anything is at the target, a dangling symbolic link included. A
 * replaced regular file passes its mode (and owner, where allowed: as root)
 * to the new one, as cp does; a symbolic link at the target is itself
 * replaced, never written through.
 *
 * Either way the temporary name, while it exists, is recorded in a table that
 * ic_image_save_cleanup() (async-signal-safe) walks to unlink: the CLI calls it from
 * its SIGINT/SIGTERM/SIGHUP/SIGPIPE handlers, which may run in another thread
 * than the save, so a save between linkat/rename and the end of its rename is
 * waited for rather than cut. Only SIGKILL during the mkstemp fallback can
 * leave a temporary behind.
 */
#define _GNU_SOURCE /* O_TMPFILE, linkat's AT_SYMLINK_FOLLOW */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "imgconv.h"
#include "io/io_internal.h"

/* ---- the table of temporary names ------------------------------------------ */

#define TEMP_SLOTS 64
/* LIVE: the temporary may exist, cleanup unlinks it. PUBLISHING: between
 * linkat and rename (or the fallback's rename), cleanup waits for the slot to
 * be freed, since by then the file is complete and about to be in place. */
enum { SLOT_FREE = 0, SLOT_FILLING, SLOT_LIVE, SLOT_PUBLISHING };
static struct {
    atomic_int state;
    char path[IC_IO_PATH_MAX];
} temps[TEMP_SLOTS];
/* Set by ic_image_save_cleanup: no publication starts afterwards. */
static atomic_int dying;

/* Takes a free slot and marks it FILLING (cleanup waits for such a slot);
 * -1 when the table is full (then only the signal cleanup misses the file). */
static int temp_reserve(void)
{
    for (int i = 0; i < TEMP_SLOTS; i++) {
        int expect = SLOT_FREE;
        if (atomic_compare_exchange_strong(&temps[i].state, &expect, SLOT_FILLING))
            return i;
    }
    return -1;
}

/* Gives a reserved slot its path and makes it LIVE (cleanup unlinks it). */
static void temp_fill(int slot, const char *path)
{
    if (slot < 0)
        return;
    snprintf(temps[slot].path, sizeof temps[slot].path, "%s", path);
    atomic_store(&temps[slot].state, SLOT_LIVE);
}

/* Records path; returns its slot, or -1 when the table is full. */
static int temp_register(const char *path)
{
    if (strlen(path) >= IC_IO_PATH_MAX)
        return -1;
    const int slot = temp_reserve();
    temp_fill(slot, path);
    return slot;
}

static void temp_forget(int slot)
{
    if (slot >= 0)
        atomic_store(&temps[slot].state, SLOT_FREE);
}

/* Moves a slot from LIVE to PUBLISHING; 0 when cleanup has begun (the caller
 * then gives up: the process is about to die). Sequentially consistent with
 * ic_image_save_cleanup's store and load, so one of the two sees the other. */
static int temp_publish(int slot)
{
    if (slot < 0)
        return !atomic_load(&dying);
    atomic_store(&temps[slot].state, SLOT_PUBLISHING);
    if (atomic_load(&dying)) {
        atomic_store(&temps[slot].state, SLOT_LIVE);
        return 0;
    }
    return 1;
}

void ic_image_save_cleanup(void)
{
    atomic_store(&dying, 1);
    for (int i = 0; i < TEMP_SLOTS; i++) {
        /* A save being put in place finishes (a rename takes microseconds),
         * and so does a temporary being created and recorded (another thread
         * may run this handler while the saving thread, signals blocked, is
         * between mkstemp and the record); at most about a second is spent
         * waiting. */
        for (int spins = 0; spins < 1000 && (atomic_load(&temps[i].state) == SLOT_PUBLISHING ||
                                             atomic_load(&temps[i].state) == SLOT_FILLING);
             spins++) {
            const struct timespec ms = {0, 1000000};
            nanosleep(&ms, NULL); /* async-signal-safe */
        }
        if (atomic_load(&temps[i].state) == SLOT_LIVE)
            (void)unlink(temps[i].path); /* async-signal-safe */
    }
}

/* ---- creating and publishing ----------------------------------------------- */

/* The process umask without changing it (umask(2) would race with other
 * threads): Linux reports it in /proc/self/status; 022 when unavailable. */
static mode_t current_umask(void)
{
    mode_t mask = 022;
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return mask;
    char line[256];
    while (fgets(line, sizeof line, f)) {
        unsigned int v;
        if (sscanf(line, "Umask: %o", &v) == 1) {
            mask = (mode_t)(v & 0777);
            break;
        }
    }
    fclose(f);
    return mask;
}

/* Blocks the catchable signals in this thread (*old receives the mask). */
static void block_signals(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, old);
}

static void restore_signals(const sigset_t *old)
{
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* DIR and a temporary name DIR/.BASE.XXXXXX (BASE cut to fit NAME_MAX). */
static ic_status split_path(ic_out_file *o, const char *path, char *err, size_t errlen)
{
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path) : 0;
    const char *base = slash ? slash + 1 : path;
    if (!slash)
        snprintf(o->dir, sizeof o->dir, ".");
    else if (dirlen == 0)
        snprintf(o->dir, sizeof o->dir, "/");
    else if (dirlen < sizeof o->dir)
        snprintf(o->dir, sizeof o->dir, "%.*s", (int)dirlen, path);
    else {
        return ic_errf(err, errlen, IC_ERR_IO, "output path is too long");
    }
    if (strlen(o->dir) + strlen(base) + 16 > sizeof o->tmp) {
        return ic_errf(err, errlen, IC_ERR_IO, "output path is too long");
    }
    snprintf(o->tmp, sizeof o->tmp, "%s/.%.200s.XXXXXX", o->dir, base);
    return IC_OK;
}

ic_status ic_out_open(ic_out_file *o, const char *path, int no_replace, char *err, size_t errlen)
{
    memset(o, 0, sizeof *o);
    o->fd = -1;
    o->slot = -1;
    o->no_replace = no_replace;
    o->path = path;
    ic_status st = split_path(o, path, err, errlen);
    if (st != IC_OK)
        return st;
    const mode_t mode = (mode_t)(0666 & ~current_umask());
#ifdef O_TMPFILE
    if (!getenv("IC_NO_TMPFILE")) { /* tests force the fallback with it */
        o->fd = open(o->dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
        o->anon = o->fd >= 0;
    }
#endif
    if (o->fd < 0) {
        /* A slot is reserved (FILLING) before the file exists and signals are
         * blocked in this thread, so that a handler, in this thread or in
         * another one, never misses the file between mkstemp and its record. */
        sigset_t old;
        block_signals(&old);
        o->slot = strlen(o->tmp) < IC_IO_PATH_MAX ? temp_reserve() : -1;
        /* Cleanup sets `dying` before it walks the slots: a slot reserved
         * after the walk passed it sees `dying` here, and nothing is created
         * for a process about to end. */
        int saved = EINTR;
        if (!atomic_load(&dying)) {
            o->fd = mkstemp(o->tmp);
            saved = errno;
        }
        if (o->fd >= 0) {
            temp_fill(o->slot, o->tmp);
        } else {
            temp_forget(o->slot);
            o->slot = -1;
        }
        restore_signals(&old);
        if (o->fd < 0) {
            return ic_errf(err, errlen, IC_ERR_IO, "cannot create temporary file in %s: %s", o->dir,
                           strerror(saved));
        }
        /* mkstemp creates mode 0600; give the output the mode creat() would. */
        (void)fchmod(o->fd, mode);
    }
    o->f = fdopen(o->fd, "wb");
    if (!o->f) {
        ic_errf(err, errlen, IC_ERR_IO, "cannot write: %s", strerror(errno));
        ic_out_abort(o);
        return IC_ERR_IO;
    }
    return IC_OK;
}

/* Links the anonymous file into the directory under a fresh temporary name. */
static int link_anonymous(ic_out_file *o)
{
    char proc[64];
    snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
    const size_t n = strlen(o->tmp);
    for (int attempt = 0; attempt < 100; attempt++) {
        /* Six random letters in place of XXXXXX. */
        static const char letters[] =
            "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t r = (uint64_t)ts.tv_nsec * 6364136223846793005ull + (uint64_t)getpid() +
                     (uint64_t)attempt * 1442695040888963407ull + (uintptr_t)o;
        for (int i = 0; i < 6; i++, r /= 62)
            o->tmp[n - 6 + i] = letters[r % 62];
        o->slot = temp_register(o->tmp);
        if (!temp_publish(o->slot)) {
            temp_forget(o->slot);
            o->slot = -1;
            errno = EINTR;
            return -1;
        }
        if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW) == 0 ||
            linkat(o->fd, "", AT_FDCWD, o->tmp, AT_EMPTY_PATH) == 0)
            return 0;
        const int saved = errno;
        temp_forget(o->slot);
        o->slot = -1;
        if (saved != EEXIST) {
            errno = saved;
            return -1;
        }
    }
    errno = EEXIST;
    return -1;
}

/* The file about to be replaced gives the new one its mode, and its owner
 * where the process may set it (root; otherwise fchown fails and the new
 * file keeps the process's owner). A link, or nothing, gives nothing. */
static void keep_mode(const ic_out_file *o)
{
    struct stat sb;
    if (o->no_replace || lstat(o->path, &sb) != 0 || !S_ISREG(sb.st_mode))
        return;
    (void)!fchown(o->fd, sb.st_uid, sb.st_gid); /* before fchmod: it may clear set-id bits */
    (void)fchmod(o->fd, sb.st_mode & 07777);
}

/* Moves the temporary to path without ever replacing what is there. */
static int rename_noreplace(const char *from, const char *to)
{
#ifdef RENAME_NOREPLACE
    if (renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -1;
#endif
    /* A file system without RENAME_NOREPLACE: link fails on any name. */
    if (link(from, to) != 0)
        return -1;
    (void)unlink(from);
    return 0;
}

ic_status ic_out_commit(ic_out_file *o, char *err, size_t errlen)
{
    ic_status st = IC_OK;
    if (fflush(o->f) != 0 || ferror(o->f)) {
        ic_errf(err, errlen, IC_ERR_IO, "write error: %s", strerror(errno));
        st = IC_ERR_IO;
    }
    if (st == IC_OK && fsync(o->fd) != 0 && errno != EINVAL && errno != EROFS) {
        ic_errf(err, errlen, IC_ERR_IO, "cannot sync: %s", strerror(errno));
        st = IC_ERR_IO;
    }
    if (st != IC_OK) {
        ic_out_abort(o);
        return st;
    }
    keep_mode(o);
    sigset_t old;
    block_signals(&old);
    int rc = 0, saved = 0;
    int direct = 0;
    if (o->anon) {
        /* A new output is linked under its own name at once: no temporary
         * name ever exists, even for SIGKILL. An existing one (EEXIST) is
         * replaced through a temporary name and rename. */
        char proc[64];
        snprintf(proc, sizeof proc, "/proc/self/fd/%d", o->fd);
        direct = !atomic_load(&dying) &&
                 linkat(AT_FDCWD, proc, AT_FDCWD, o->path, AT_SYMLINK_FOLLOW) == 0;
        if (!direct && o->no_replace) {
            rc = -1;
            saved = atomic_load(&dying) ? EINTR : errno;
        } else if (!direct) {
            rc = link_anonymous(o);
            saved = errno;
        }
    } else if (!temp_publish(o->slot)) {
        rc = -1;
        saved = EINTR;
    } else if (o->no_replace) {
        direct = 1;
        if (rename_noreplace(o->tmp, o->path) != 0) {
            rc = -1;
            saved = errno;
            (void)unlink(o->tmp);
        }
    }
    if (rc == 0 && !direct && rename(o->tmp, o->path) != 0) {
        rc = -1;
        saved = errno;
        (void)unlink(o->tmp);
    }
    temp_forget(o->slot);
    o->slot = -1;
    restore_signals(&old);
    if (fclose(o->f) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    o->f = NULL;
    o->fd = -1;
    if (rc != 0) {
        if (!o->anon)
            (void)unlink(o->tmp);
        if (o->no_replace && saved == EEXIST)
            return ic_errf(err, errlen, IC_ERR_IO,
                           "the output exists (it appeared while being written): not replaced");
        return ic_errf(err, errlen, IC_ERR_IO, "cannot %s the output: %s",
                       o->no_replace ? "write" : "replace", strerror(saved));
    }
    /* Make the rename itself durable; failure here loses nothing already written. */
    int dfd = open(o->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        (void)fsync(dfd);
        close(dfd);
    }
    return IC_OK;
}

void ic_out_abort(ic_out_file *o)
{
    if (o->f)
        fclose(o->f);
    else if (o->fd >= 0)
        close(o->fd);
    o->f = NULL;
    o->fd = -1;
    if (!o->anon && o->tmp[0])
        (void)unlink(o->tmp);
    temp_forget(o->slot);
    o->slot = -1;
}
