/*
 * startup_probe.cu - where a CUDA imgconv process spends its first second
 * (start-up). A diagnostic, not a test: it times, one after the
 * other in one fresh process, every step a `imgconv --backend cuda` run of one
 * JPEG pays once, each step's own duration and the time since the process was
 * exec'd (from /proc/self/stat, 10 ms resolution at 100 Hz ticks, so the
 * dynamic loading of libcudart/libnvjpeg/libimgconv before main shows up):
 *
 *   CUDA runtime: cudaGetDeviceCount (cuInit, driver load), cudaSetDevice,
 *     cudaFree(0) (primary context creation);
 *   nvJPEG: nvjpegCreateSimple, nvjpegCreateEx with the HARDWARE backend, with
 *     the DEFAULT (hybrid) backend (order swapped with --default-first: the
 *     first handle may pay nvJPEG's own one-time set-up for both);
 *   the hardware batched decode of JPEG (state/stream creation,
 *     nvjpegDecodeBatchedInitialize, first and second nvjpegDecodeBatched,
 *     each synchronised), then the hybrid decode (nvjpegDecode) first and second;
 *   nvJPEG encoder: state and parameters creation, first and second encode of
 *     the decoded image (quality 92, 4:2:0, as the CLI does), bitstream retrieved;
 *   memory: cudaHostAlloc of 72 MB (and the first touch of its pages),
 *     cudaMalloc of 72 MB, one 72 MB copy host->device;
 *   imgconv's `cuda` backend through the public API: ic_context_create, the
 *     first and second ic_convolve of a 64x64 RGB host image (gaussian 3x3),
 *     then of the decoded photograph as a device image (gaussian 9x9, device ->
 *     device: the CLI's GPU path), first and second, with ic_context_timing's
 *     kernel time beside the wall time; ic_gpu_codec_create (what the CLI pays
 *     for its codec: nvJPEG opened again inside imgconv, in this warm process).
 *
 *   --concurrent: first of all after the context, the hardware handle and
 *     its decoder state on one thread while the default handle, its decoder
 *     state and an encoder state are made on another (what ic_nvjpeg_open does
 *     with IC_NVJPEG_OPEN=concurrent), each thread's steps timed: does nvJPEG
 *     serialise creation inside? The serial rows that follow then show what
 *     the same objects cost a second time in the process.
 *
 *   --why: first of all after the context, why one nvJPEG handle costs so
 *     much: a DEFAULT handle made with nvjpegCreateExV2 and logging allocators
 *     (cudaMalloc/cudaHostAlloc underneath: count, bytes, largest, time inside
 *     per step), its decoder and encoder states and their destroys, each step
 *     with the process's thread count before and after; then the same again
 *     with the creating thread's stack sampled (SIGPROF every 1 ms from a
 *     sampler thread, backtrace() into a preallocated ring, dladdr() after the
 *     step), then with nvJPEG's own allocators (nvjpegCreateEx), sampled. The
 *     sample tables (leaf library and symbol, deepest libnvjpeg frame, what it
 *     called, libc leaves such as ioctl/futex/nanosleep) follow the rows: is
 *     the time sleeping, waiting on the driver, allocating or computing? Also
 *     prints CUDA_CACHE_DISABLE, CUDA_CACHE_PATH, CUDA_MODULE_LOADING and
 *     whether ~/.nv/ComputeCache (the JIT cache) exists.
 *
 *   --backends: first of all after the context, per nvJPEG backend
 *     (GPU_HYBRID, HYBRID, DEFAULT, HARDWARE): handle, encoder, two encodes
 *     of a 6000x4000 device image, decoder state, two decodes of FILE, each
 *     timed (probe_backends).
 *
 * usage: startup_probe [--default-first] [--concurrent] [--why] [--backends] [--no-nvjpeg] FILE.jpg
 * Prints a table (markdown) on stdout; exit 0, or 1 when a step failed (the
 * table up to it is printed, the failing step named). Built only in CUDA
 * builds with nvJPEG (CMakeLists.txt); run by `scripts/gpu-check.sh startup`.
 * Compare the first and second rows of a step: the difference is its one-time
 * cost (lazy module load, allocation, planning) that a single-image process pays.
 */
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <dlfcn.h>
#include <errno.h>
#include <execinfo.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "imgconv_gpu_codec.h"

static double g_exec_ms; /* CLOCK_BOOTTIME ms at exec, from /proc/self/stat */
static double g_last;

static double boot_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_BOOTTIME, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Process start (field 22 of /proc/self/stat, clock ticks since boot). */
static double exec_boot_ms(void)
{
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f)
        return -1;
    char buf[2048];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')'); /* the command name may hold spaces */
    if (!p)
        return -1;
    p += 2; /* field 3 starts here */
    unsigned long long start = 0;
    for (int field = 3; field < 22 && *p; p++)
        if (*p == ' ')
            field++;
    if (sscanf(p, "%llu", &start) != 1)
        return -1;
    return start * 1e3 / (double)sysconf(_SC_CLK_TCK);
}

static void row(const char *step, const char *note)
{
    double now = boot_ms();
    printf("| %9.1f | %9.3f | %s | %s |\n", now - g_exec_ms, now - g_last, step, note ? note : "");
    fflush(stdout);
    g_last = boot_ms();
}

static int fail(const char *step, const char *what)
{
    printf("| - | - | %s | FAILED: %s |\n", step, what);
    return 1;
}

#define CU(step, call)                                                                             \
    do {                                                                                           \
        cudaError_t e_ = (call);                                                                   \
        if (e_ != cudaSuccess)                                                                     \
            return fail(step, cudaGetErrorString(e_));                                             \
    } while (0)
#define NJ(step, call)                                                                             \
    do {                                                                                           \
        nvjpegStatus_t s_ = (call);                                                                \
        if (s_ != NVJPEG_STATUS_SUCCESS) {                                                         \
            char m_[64];                                                                           \
            snprintf(m_, sizeof m_, "nvjpegStatus %d", (int)s_);                                   \
            return fail(step, m_);                                                                 \
        }                                                                                          \
    } while (0)
#define IC(step, call)                                                                             \
    do {                                                                                           \
        ic_status s_ = (call);                                                                     \
        if (s_ != IC_OK)                                                                           \
            return fail(step, ic_last_error()[0] ? ic_last_error() : ic_status_str(s_));           \
    } while (0)

static unsigned char *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    unsigned char *b = n > 0 ? (unsigned char *)malloc((size_t)n) : NULL;
    if (b && fread(b, 1, (size_t)n, f) != (size_t)n) {
        free(b);
        b = NULL;
    }
    fclose(f);
    *len = (size_t)n;
    return b;
}

/* ---- --concurrent: nvJPEG's objects created side by side ------------------------ */

/* One thread's share of the concurrent creation: a handle of `backend`, its
 * decoder state, and (default backend) an encoder state; each step timed. */
typedef struct conc_job {
    nvjpegBackend_t backend;
    int encoder;
    double t_handle, t_state, t_enc, t_end; /* ms since the threads were started */
    nvjpegStatus_t st;
    nvjpegHandle_t h;
    nvjpegJpegState_t js;
    nvjpegEncoderState_t es;
    cudaStream_t stream;
} conc_job;

static double g_conc_t0;

static void *conc_main(void *arg)
{
    conc_job *j = (conc_job *)arg;
    cudaSetDevice(0);
    j->st = nvjpegCreateEx(j->backend, NULL, NULL, 0, &j->h);
    j->t_handle = boot_ms() - g_conc_t0;
    if (j->st == NVJPEG_STATUS_SUCCESS)
        j->st = nvjpegJpegStateCreate(j->h, &j->js);
    j->t_state = boot_ms() - g_conc_t0;
    if (j->st == NVJPEG_STATUS_SUCCESS && j->encoder)
        j->st = nvjpegEncoderStateCreate(j->h, &j->es, j->stream);
    j->t_enc = boot_ms() - g_conc_t0;
    j->t_end = j->t_enc;
    return NULL;
}

/* The hardware handle + state on one thread, the default handle + state +
 * encoder state on another, at the same time (what ic_nvjpeg_open does with
 * IC_NVJPEG_OPEN=concurrent). Against the serial rows of the same objects
 * (a run without --concurrent), it says whether nvJPEG serialises creation
 * inside: side by side the wall time is the longer thread's if not, the sum
 * of both if so. */
static int probe_concurrent(cudaStream_t st)
{
    conc_job hw, def;
    memset(&hw, 0, sizeof hw);
    memset(&def, 0, sizeof def);
    hw.backend = NVJPEG_BACKEND_HARDWARE;
    def.backend = NVJPEG_BACKEND_DEFAULT;
    def.encoder = 1;
    hw.stream = def.stream = st;
    pthread_t th[2];
    g_last = boot_ms();
    g_conc_t0 = g_last;
    if (pthread_create(&th[0], NULL, conc_main, &hw) != 0)
        return fail("concurrent creation", "pthread_create");
    if (pthread_create(&th[1], NULL, conc_main, &def) != 0) {
        pthread_join(th[0], NULL);
        return fail("concurrent creation", "pthread_create");
    }
    pthread_join(th[0], NULL);
    pthread_join(th[1], NULL);
    char note[240];
    snprintf(note, sizeof note,
             "thread HW: handle done at %.1f, state at %.1f ms (status %d); thread DEFAULT: handle "
             "%.1f, state %.1f, encoder state %.1f ms (status %d)",
             hw.t_handle, hw.t_state, (int)hw.st, def.t_handle, def.t_state, def.t_enc,
             (int)def.st);
    row("nvJPEG HW (handle+state) || DEFAULT (handle+state+encoder state)", note);
    const double sum = hw.t_state + def.t_enc,
                 longest = hw.t_state > def.t_enc ? hw.t_state : def.t_enc;
    snprintf(note, sizeof note,
             "the threads' own spans add up to %.1f ms, the longer is %.1f ms: a wall near the "
             "longer means no serialisation inside nvJPEG",
             sum, longest);
    row("(concurrent creation: summary)", note);
    if (def.es)
        nvjpegEncoderStateDestroy(def.es);
    if (def.js)
        nvjpegJpegStateDestroy(def.js);
    if (def.h)
        nvjpegDestroy(def.h);
    if (hw.js)
        nvjpegJpegStateDestroy(hw.js);
    if (hw.h)
        nvjpegDestroy(hw.h);
    row("nvjpegDestroy (the concurrent objects)", NULL);
    if (def.st != NVJPEG_STATUS_SUCCESS)
        return fail("concurrent DEFAULT creation", "nvJPEG status (see the row above)");
    return 0;
}

/* ---- --why: what one nvJPEG handle/state creation spends its time on ------------ */

/* Allocation log of the nvjpegCreateExV2 allocators (ctx: one per kind). */
typedef struct alloc_log {
    const char *kind; /* "device", "pinned" */
    pthread_mutex_t mu;
    long n, nfree;
    size_t bytes, largest;
    double ms, free_ms; /* time spent inside cudaMalloc/cudaHostAlloc, the frees */
} alloc_log;

static alloc_log g_dev_log = {"device", PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0};
static alloc_log g_pin_log = {"pinned", PTHREAD_MUTEX_INITIALIZER, 0, 0, 0, 0, 0, 0};

static void log_add(alloc_log *l, int is_free, size_t size, double ms)
{
    pthread_mutex_lock(&l->mu);
    if (is_free) {
        l->nfree++;
        l->free_ms += ms;
    } else {
        l->n++;
        l->bytes += size;
        if (size > l->largest)
            l->largest = size;
        l->ms += ms;
    }
    pthread_mutex_unlock(&l->mu);
}

static int why_dev_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    (void)s;
    double t0 = boot_ms();
    int rc = (int)cudaMalloc(p, size);
    log_add((alloc_log *)ctx, 0, size, boot_ms() - t0);
    return rc;
}
static int why_dev_free(void *ctx, void *p, size_t size, cudaStream_t s)
{
    (void)s;
    double t0 = boot_ms();
    int rc = (int)cudaFree(p);
    log_add((alloc_log *)ctx, 1, size, boot_ms() - t0);
    return rc;
}
static int why_pin_malloc(void *ctx, void **p, size_t size, cudaStream_t s)
{
    (void)s;
    double t0 = boot_ms();
    int rc = (int)cudaHostAlloc(p, size, cudaHostAllocDefault);
    log_add((alloc_log *)ctx, 0, size, boot_ms() - t0);
    return rc;
}
static int why_pin_free(void *ctx, void *p, size_t size, cudaStream_t s)
{
    (void)s;
    double t0 = boot_ms();
    int rc = (int)cudaFreeHost(p);
    log_add((alloc_log *)ctx, 1, size, boot_ms() - t0);
    return rc;
}

/* "device allocs 3, 12.0 MiB (largest 8.0), 1.2 ms inside, frees 0 0.0 ms" for
 * the difference between the log now and `before`. */
static int log_note(char *buf, size_t cap, const alloc_log *before, alloc_log *l)
{
    pthread_mutex_lock(&l->mu);
    alloc_log now = *l;
    pthread_mutex_unlock(&l->mu);
    return snprintf(
        buf, cap,
        "%s allocs %ld, %.1f MiB (largest so far %.1f), %.1f ms inside; frees %ld, %.1f ms inside",
        l->kind, now.n - before->n, (double)(now.bytes - before->bytes) / 1048576.0,
        (double)now.largest / 1048576.0, now.ms - before->ms, now.nfree - before->nfree,
        now.free_ms - before->free_ms);
}

static int thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    int n = -1;
    while (fgets(line, sizeof line, f))
        if (sscanf(line, "Threads: %d", &n) == 1)
            break;
    fclose(f);
    return n;
}

/* Wall-clock stack sampling of one thread: a sampler thread sends SIGPROF to
 * it every millisecond; the handler stores backtrace()'s raw addresses into a
 * preallocated ring (no allocation, no locks of ours in the handler). */
enum { WHY_MAXS = 8192, WHY_DEPTH = 64 };
static void *g_ring[WHY_MAXS][WHY_DEPTH];
static int g_depth[WHY_MAXS];
static volatile sig_atomic_t g_nsamp, g_armed;
static int g_sampler_run; /* __atomic */
static long g_sent;
static pthread_t g_target;
static int g_target_tid;
/* Every tick, before the signal: /proc/self/task/TID/syscall (the kernel's
 * view, no interruption): -2 running, else the syscall it is blocked in and
 * its second argument (ioctl's request). */
static long g_sys_nr[WHY_MAXS];
static unsigned long g_sys_arg[WHY_MAXS];
static int g_nticks;

/* The syscall the target is blocked in (-2: running, -3: unreadable). */
static long target_syscall(unsigned long *arg1)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/syscall", g_target_tid);
    int fd = open(path, O_RDONLY);
    if (fd < 0)
        return -3;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -3;
    buf[n] = 0;
    if (!strncmp(buf, "running", 7))
        return -2;
    long nr = -3;
    unsigned long a0 = 0;
    *arg1 = 0;
    if (sscanf(buf, "%ld 0x%lx 0x%lx", &nr, &a0, arg1) < 1)
        return -3;
    return nr;
}

/* Sleeps that a signal would cut short (EINTR whatever SA_RESTART says, and
 * usleep does not resume): not signalled, only counted from /proc. */
static int is_sleep_syscall(long nr)
{
#ifdef __x86_64__
    return nr == 35 || nr == 230 || nr == 7 || nr == 271 || nr == 23 || nr == 270 || nr == 232 ||
           nr == 281;
#else
    (void)nr;
    return 0;
#endif
}

static const char *syscall_name(long nr)
{
#ifdef __x86_64__
    switch (nr) {
    case 0:
        return "read";
    case 1:
        return "write";
    case 7:
        return "poll";
    case 9:
        return "mmap";
    case 10:
        return "mprotect";
    case 11:
        return "munmap";
    case 16:
        return "ioctl";
    case 23:
        return "select";
    case 24:
        return "sched_yield";
    case 28:
        return "madvise";
    case 35:
        return "nanosleep";
    case 56:
        return "clone";
    case 202:
        return "futex";
    case 230:
        return "clock_nanosleep";
    case 232:
        return "epoll_wait";
    case 257:
        return "openat";
    case 270:
        return "pselect6";
    case 271:
        return "ppoll";
    case 281:
        return "epoll_pwait";
    case 435:
        return "clone3";
    }
#endif
    return NULL;
}

static void why_on_signal(int sig)
{
    (void)sig;
    if (!g_armed)
        return;
    int i = g_nsamp;
    if (i >= WHY_MAXS)
        return;
    int saved = errno;
    g_depth[i] = backtrace(g_ring[i], WHY_DEPTH);
    g_nsamp = i + 1;
    errno = saved;
}

static void *why_sampler(void *arg)
{
    (void)arg;
    struct timespec next;
    clock_gettime(CLOCK_MONOTONIC, &next);
    while (__atomic_load_n(&g_sampler_run, __ATOMIC_ACQUIRE)) {
        next.tv_nsec += 1000000;
        if (next.tv_nsec >= 1000000000) {
            next.tv_nsec -= 1000000000;
            next.tv_sec++;
        }
        clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
        if (!__atomic_load_n(&g_sampler_run, __ATOMIC_ACQUIRE))
            break;
        unsigned long a1 = 0;
        long nr = target_syscall(&a1);
        if (g_nticks < WHY_MAXS) {
            g_sys_nr[g_nticks] = nr;
            g_sys_arg[g_nticks++] = a1;
        }
        if (!is_sleep_syscall(nr)) {
            pthread_kill(g_target, SIGPROF);
            g_sent++;
        }
        struct timespec now; /* behind (a descheduled sampler): no burst */
        clock_gettime(CLOCK_MONOTONIC, &now);
        if (now.tv_sec > next.tv_sec || (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
            next = now;
    }
    return NULL;
}

static pthread_t g_sampler;

static int why_sample_start(void)
{
    g_nsamp = 0;
    g_sent = 0;
    g_target = pthread_self();
    g_target_tid = (int)syscall(SYS_gettid);
    g_nticks = 0;
    g_armed = 1;
    __atomic_store_n(&g_sampler_run, 1, __ATOMIC_RELEASE);
    if (pthread_create(&g_sampler, NULL, why_sampler, NULL) != 0) {
        g_armed = 0;
        return -1;
    }
    return 0;
}

static void why_sample_stop(void)
{
    __atomic_store_n(&g_sampler_run, 0, __ATOMIC_RELEASE);
    pthread_join(g_sampler, NULL);
    g_armed = 0;
}

/* A count per text key (linear search: a few hundred keys at most). */
typedef struct why_count {
    char key[200];
    int n;
} why_count;
typedef struct why_tally {
    why_count *c;
    int len, cap;
} why_tally;

static void tally(why_tally *t, const char *key)
{
    for (int i = 0; i < t->len; i++)
        if (!strcmp(t->c[i].key, key)) {
            t->c[i].n++;
            return;
        }
    if (t->len == t->cap) {
        int cap = t->cap ? 2 * t->cap : 64;
        why_count *c = (why_count *)realloc(t->c, (size_t)cap * sizeof *c);
        if (!c)
            return;
        t->c = c;
        t->cap = cap;
    }
    snprintf(t->c[t->len].key, sizeof t->c[t->len].key, "%s", key);
    t->c[t->len++].n = 1;
}

static int by_count(const void *a, const void *b)
{
    return ((const why_count *)b)->n - ((const why_count *)a)->n;
}

/* Print the top `top` of a tally as a markdown table (then frees it). */
static void tally_print(FILE *o, why_tally *t, int top, int total, const char *what)
{
    qsort(t->c, (size_t)t->len, sizeof *t->c, by_count);
    fprintf(o, "| samples | %% | %s |\n|---:|---:|---|\n", what);
    for (int i = 0; i < t->len && i < top; i++)
        fprintf(o, "| %d | %.0f | %s |\n", t->c[i].n, 100.0 * t->c[i].n / (total ? total : 1),
                t->c[i].key);
    if (t->len > top) {
        int rest = 0;
        for (int i = top; i < t->len; i++)
            rest += t->c[i].n;
        fprintf(o, "| %d | %.0f | (%d others) |\n", rest, 100.0 * rest / (total ? total : 1),
                t->len - top);
    }
    fprintf(o, "\n");
    free(t->c);
    memset(t, 0, sizeof *t);
}

static const char *base_name(const char *p)
{
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "?";
}

/* One frame as "lib: symbol+0xoff" (symbol: dladdr's nearest exported one,
 * far off in a stripped library) or "lib+0xoff" or "[anonymous] 0xaddr"
 * (JIT-compiled or generated code). `exact`: keep the offsets (a call site),
 * else the symbol only. `ret`: a return address (looked up at addr-1). */
static const char *frame_key(char *buf, size_t cap, void *addr, int ret, int exact, Dl_info *di)
{
    char *a = (char *)addr - (ret ? 1 : 0);
    if (!dladdr(a, di) || !di->dli_fname) {
        memset(di, 0, sizeof *di);
        snprintf(buf, cap, "[anonymous memory] %s%p", exact ? "" : "e.g. ", addr);
        return buf;
    }
    const char *lib = base_name(di->dli_fname);
    const unsigned long off = (unsigned long)(a - (char *)di->dli_fbase);
    if (di->dli_sname && exact)
        snprintf(buf, cap, "%s+0x%lx (%s+0x%lx)", lib, off, di->dli_sname,
                 (unsigned long)(a - (char *)di->dli_saddr));
    else if (di->dli_sname)
        snprintf(buf, cap, "%s: %s", lib, di->dli_sname);
    else
        snprintf(buf, cap, "%s+0x%lx", lib, exact ? off : off & ~0xffful);
    return buf;
}

static int starts(const char *s, const char *p)
{
    return s && !strncmp(s, p, strlen(p));
}

/* The samples of one step, resolved and tallied: leaf (library: symbol),
 * deepest libnvjpeg frame (its call site), what libnvjpeg called there, the
 * libc leaves and the leaf libraries. */
static void why_report(FILE *o, const char *step, double ms)
{
    const int ns = g_nsamp;
    fprintf(o, "**%s**: %.1f ms, %d samples of %ld signals sent (1 ms period)", step, ms, ns,
            g_sent);
    fprintf(o, "\n\n");
    char key[200];
    why_tally sys = {0, 0, 0};
    for (int i = 0; i < g_nticks; i++) {
        const long nr = g_sys_nr[i];
        const char *nm = syscall_name(nr);
        if (nr == -2)
            snprintf(key, sizeof key, "running");
        else if (nr == -3)
            snprintf(key, sizeof key, "(unreadable)");
        else if (nr == 16)
            snprintf(key, sizeof key, "ioctl 0x%lx", g_sys_arg[i]);
        else if (nm)
            snprintf(key, sizeof key, "%s%s", nm, is_sleep_syscall(nr) ? " (not signalled)" : "");
        else
            snprintf(key, sizeof key, "syscall %ld", nr);
        tally(&sys, key);
    }
    qsort(sys.c, (size_t)sys.len, sizeof *sys.c, by_count);
    fprintf(o, "Kernel's view, every tick (/proc/self/task/TID/syscall): ");
    for (int i = 0; i < sys.len && i < 12; i++)
        fprintf(o, "%s%s %d", i ? ", " : "", sys.c[i].key, sys.c[i].n);
    fprintf(o, " (of %d ticks; running: on a CPU or runnable, in user or kernel mode).\n\n",
            g_nticks);
    free(sys.c);
    if (ns < 10) {
        fprintf(o, "Too few stack samples for tables.\n\n");
        return;
    }
    why_tally leaf = {0, 0, 0}, nvj = {0, 0, 0}, callee = {0, 0, 0}, libs = {0, 0, 0},
              libc = {0, 0, 0};
    int in_libc = 0, no_nvj = 0;
    for (int s = 0; s < ns; s++) {
        Dl_info di;
        /* skip the handler's own frames: up to and with the signal trampoline */
        int k0 = 0;
        for (int k = 0; k < g_depth[s] && k < 4; k++)
            if (dladdr(g_ring[s][k], &di) && di.dli_sname && strstr(di.dli_sname, "restore_rt"))
                k0 = k + 1;
        if (k0 == 0)
            k0 = 2; /* handler + trampoline, unnamed */
        if (k0 >= g_depth[s])
            continue;
        frame_key(key, sizeof key, g_ring[s][k0], 0, 0, &di);
        tally(&leaf, key);
        const char *lib = di.dli_fname ? base_name(di.dli_fname) : "[anonymous memory]";
        tally(&libs, lib);
        if (starts(lib, "libc.so") || starts(lib, "libc-") || starts(lib, "libpthread")) {
            in_libc++;
            if (di.dli_sname)
                tally(&libc, di.dli_sname);
            else {
                snprintf(key, sizeof key, "%s+0x%lx", base_name(di.dli_fname),
                         (unsigned long)((char *)g_ring[s][k0] - (char *)di.dli_fbase));
                tally(&libc, key);
            }
        }
        int found = 0;
        for (int k = k0; k < g_depth[s]; k++) {
            Dl_info fi;
            if (dladdr((char *)g_ring[s][k] - (k > k0), &fi) &&
                starts(base_name(fi.dli_fname), "libnvjpeg")) {
                tally(&nvj, frame_key(key, sizeof key, g_ring[s][k], k > k0, 1, &fi));
                if (k > k0) {
                    Dl_info ci;
                    tally(&callee,
                          frame_key(key, sizeof key, g_ring[s][k - 1], k - 1 > k0, 1, &ci));
                } else
                    tally(&callee, "(leaf is in libnvjpeg itself: computing)");
                found = 1;
                break;
            }
        }
        if (!found)
            no_nvj++;
    }
    fprintf(o, "Leaf libraries: ");
    qsort(libs.c, (size_t)libs.len, sizeof *libs.c, by_count);
    for (int i = 0; i < libs.len; i++)
        fprintf(o, "%s%s %d (%.0f%%)", i ? ", " : "", libs.c[i].key, libs.c[i].n,
                100.0 * libs.c[i].n / ns);
    free(libs.c);
    fprintf(o, ". Samples without a libnvjpeg frame: %d.\n\n", no_nvj);
    tally_print(o, &leaf, 8, ns, "leaf (library: nearest exported symbol)");
    tally_print(o, &nvj, 8, ns, "deepest libnvjpeg frame (offset; nearest export)");
    tally_print(o, &callee, 8, ns, "what that libnvjpeg frame called (outside libnvjpeg)");
    if (in_libc) {
        fprintf(o, "libc leaves (%d samples, %.0f%%): ", in_libc, 100.0 * in_libc / ns);
        qsort(libc.c, (size_t)libc.len, sizeof *libc.c, by_count);
        for (int i = 0; i < libc.len && i < 12; i++)
            fprintf(o, "%s%s %d", i ? ", " : "", libc.c[i].key, libc.c[i].n);
        fprintf(o, " (ioctl: the driver; futex/pthread_cond: a lock or another thread; nanosleep/"
                   "usleep/sched_yield: polling; mmap/madvise/memset: memory).\n\n");
    }
    free(libc.c);
}

/* One --why step: the thread count and the allocators' counters around it,
 * optionally sampled; prints its row, keeps the sample report for later. */
typedef struct why_step {
    int sampled;
    int th0;
    alloc_log d0, p0;
    double t0;
} why_step;

static void why_begin(why_step *w, int sampled)
{
    w->sampled = sampled;
    w->th0 = thread_count();
    pthread_mutex_lock(&g_dev_log.mu);
    w->d0 = g_dev_log;
    pthread_mutex_unlock(&g_dev_log.mu);
    pthread_mutex_lock(&g_pin_log.mu);
    w->p0 = g_pin_log;
    pthread_mutex_unlock(&g_pin_log.mu);
    if (sampled && why_sample_start() != 0)
        w->sampled = 0;
    g_last = w->t0 = boot_ms();
}

/* Samples' reports, printed after the table (a buffer: the rows go first). */
static FILE *g_why_out;

static void why_end(why_step *w, const char *step, nvjpegStatus_t st)
{
    const double ms = boot_ms() - w->t0;
    if (w->sampled)
        why_sample_stop();
    char note[600];
    int n = snprintf(note, sizeof note, "status %d; threads %d -> %d; ", (int)st, w->th0,
                     thread_count());
    n += log_note(note + n, sizeof note - (size_t)n, &w->d0, &g_dev_log);
    n += snprintf(note + n, sizeof note - (size_t)n, "; ");
    n += log_note(note + n, sizeof note - (size_t)n, &w->p0, &g_pin_log);
    if (w->sampled)
        snprintf(note + n, sizeof note - (size_t)n, "; %d stack samples (below)", (int)g_nsamp);
    g_last = boot_ms() - ms; /* the row's step time: the call's, not the sampler's stop */
    row(step, note);
    if (w->sampled && g_why_out)
        why_report(g_why_out, step, ms);
}

/* --why: a DEFAULT handle, its decoder and encoder states and their destroys,
 * three times: (A) with logging allocators (nvjpegCreateExV2), (B) the same
 * again with the creating thread's stack sampled every millisecond, (C) with
 * nvJPEG's own allocators (nvjpegCreateEx, as the other rows), sampled. Rows
 * in the table; the sample tables follow it. A against B: what sampling
 * itself costs; A against C: whether nvJPEG's default allocation is the time. */
static int probe_why(cudaStream_t st)
{
    const char *cd = getenv("CUDA_CACHE_DISABLE"), *cp = getenv("CUDA_CACHE_PATH"),
               *ml = getenv("CUDA_MODULE_LOADING"), *home = getenv("HOME");
    char cache[512] = "(no $HOME)";
    if (home) {
        char p[400];
        snprintf(p, sizeof p, "%s/.nv/ComputeCache", home);
        struct stat sb;
        snprintf(cache, sizeof cache, "%s %s", p,
                 stat(p, &sb) == 0 ? (S_ISDIR(sb.st_mode) ? "exists" : "exists (not a directory)")
                                   : "absent");
    }
    int maj = 0, min = 0, pat = 0;
    nvjpegGetProperty(MAJOR_VERSION, &maj);
    nvjpegGetProperty(MINOR_VERSION, &min);
    nvjpegGetProperty(PATCH_LEVEL, &pat);
    char note[900];
    snprintf(
        note, sizeof note,
        "nvJPEG %d.%d.%d; CUDA_CACHE_DISABLE=%s CUDA_CACHE_PATH=%s CUDA_MODULE_LOADING=%s; JIT "
        "cache %s; threads %d",
        maj, min, pat, cd ? cd : "(unset)", cp ? cp : "(unset)", ml ? ml : "(unset)", cache,
        thread_count());
    row("--why: environment", note);

    char *rep = NULL;
    size_t rep_len = 0;
    g_why_out = open_memstream(&rep, &rep_len);
    void *warm[4];
    backtrace(warm, 4); /* loads libgcc's unwinder before any signal */
    struct sigaction sa, old;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = why_on_signal;
    sa.sa_flags = SA_RESTART;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGPROF, &sa, &old);
    alarm(120); /* a deadlock inside the sampled unwinding ends the process */

    nvjpegDevAllocatorV2_t da = {why_dev_malloc, why_dev_free, &g_dev_log};
    nvjpegPinnedAllocatorV2_t pa = {why_pin_malloc, why_pin_free, &g_pin_log};
    static const char *const pass_name[3] = {"logged", "logged, sampled",
                                             "nvJPEG's allocators, sampled"};
    int rc = 0;
    g_last = boot_ms();
    for (int pass = 0; pass < 3 && rc == 0; pass++) {
        nvjpegHandle_t h = NULL;
        nvjpegJpegState_t js = NULL;
        nvjpegEncoderState_t es = NULL;
        char step[160];
        why_step w;
        nvjpegStatus_t s;
        why_begin(&w, pass > 0);
        s = pass < 2 ? nvjpegCreateExV2(NVJPEG_BACKEND_DEFAULT, &da, &pa, 0, &h)
                     : nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &h);
        snprintf(step, sizeof step, "[why %c: %s] %s(DEFAULT)", 'A' + pass, pass_name[pass],
                 pass < 2 ? "nvjpegCreateExV2" : "nvjpegCreateEx");
        why_end(&w, step, s);
        if (s != NVJPEG_STATUS_SUCCESS) {
            rc = 1;
            break;
        }
        why_begin(&w, pass > 0);
        s = nvjpegJpegStateCreate(h, &js);
        snprintf(step, sizeof step, "[why %c: %s] nvjpegJpegStateCreate", 'A' + pass,
                 pass_name[pass]);
        why_end(&w, step, s);
        if (s != NVJPEG_STATUS_SUCCESS)
            js = NULL, rc = 1;
        why_begin(&w, pass > 0);
        s = nvjpegEncoderStateCreate(h, &es, st);
        snprintf(step, sizeof step, "[why %c: %s] nvjpegEncoderStateCreate", 'A' + pass,
                 pass_name[pass]);
        why_end(&w, step, s);
        if (s != NVJPEG_STATUS_SUCCESS)
            es = NULL, rc = 1;
        if (es) {
            why_begin(&w, pass > 0);
            s = nvjpegEncoderStateDestroy(es);
            snprintf(step, sizeof step, "[why %c: %s] nvjpegEncoderStateDestroy", 'A' + pass,
                     pass_name[pass]);
            why_end(&w, step, s);
        }
        if (js) {
            why_begin(&w, pass > 0);
            s = nvjpegJpegStateDestroy(js);
            snprintf(step, sizeof step, "[why %c: %s] nvjpegJpegStateDestroy", 'A' + pass,
                     pass_name[pass]);
            why_end(&w, step, s);
        }
        why_begin(&w, pass > 0);
        s = nvjpegDestroy(h);
        snprintf(step, sizeof step, "[why %c: %s] nvjpegDestroy", 'A' + pass, pass_name[pass]);
        why_end(&w, step, s);
    }
    alarm(0);
    sigaction(SIGPROF, &old, NULL);
    if (g_why_out) {
        fclose(g_why_out);
        g_why_out = NULL;
        printf("\nStack samples of the --why steps (SIGPROF every 1 ms to the creating thread, "
               "backtrace(), dladdr(): libnvjpeg exports few symbols, so its frames are given as "
               "offsets, the export named is only the nearest one before):\n\n%s",
               rep ? rep : "");
        free(rep);
        printf("| since exec ms | step ms | step | note |\n|---:|---:|---|---|\n");
        g_last = boot_ms();
    }
    if (rc)
        return fail("--why", "an nvJPEG call failed (its status is in its row)");
    return 0;
}

/* --backends: per nvJPEG backend (GPU_HYBRID, HYBRID, DEFAULT, HARDWARE), in
 * that order, a handle, an encoder state and parameters, two encodes of a
 * 6000x4000 interleaved RGB device image (quality 92, 4:2:0), then a decoder
 * state and two decodes of FILE (nvjpegDecode; the hardware backend takes
 * nvjpegDecodeBatched), and the destroys, each timed: which backend gives an
 * encoder without the hardware engine's set-up (the --why samples put the
 * DEFAULT handle's 0.28 s inside libnvcuvid, the engine's library)? */
static int probe_backends(cudaStream_t st, const unsigned char *jpg, size_t len)
{
    static const nvjpegBackend_t be[] = {NVJPEG_BACKEND_GPU_HYBRID, NVJPEG_BACKEND_HYBRID,
                                         NVJPEG_BACKEND_DEFAULT, NVJPEG_BACKEND_HARDWARE};
    static const char *const name[] = {"GPU_HYBRID", "HYBRID", "DEFAULT", "HARDWARE"};
    const int W = 6000, H = 4000;
    uint8_t *src = NULL, *dst = NULL;
    size_t spitch = 0, dpitch = 0;
    CU("cudaMallocPitch", cudaMallocPitch((void **)&src, &spitch, (size_t)W * 3, H));
    CU("cudaMallocPitch", cudaMallocPitch((void **)&dst, &dpitch, (size_t)W * 3, H));
    CU("cudaMemset2D", cudaMemset2D(src, spitch, 0x5a, (size_t)W * 3, H));
    CU("cudaDeviceSynchronize", cudaDeviceSynchronize());
    row("--backends: 6000x4000 RGB device images", "source and decode target");
    char step[160], note[200];
    for (size_t b = 0; b < sizeof be / sizeof *be; b++) {
        nvjpegHandle_t h = NULL;
        nvjpegStatus_t s = nvjpegCreateEx(be[b], NULL, NULL, 0, &h);
        snprintf(step, sizeof step, "[backends] nvjpegCreateEx(%s)", name[b]);
        snprintf(note, sizeof note, "status %d; threads %d", (int)s, thread_count());
        row(step, note);
        if (s != NVJPEG_STATUS_SUCCESS)
            continue;
        nvjpegEncoderState_t es = NULL;
        nvjpegEncoderParams_t ep = NULL;
        s = nvjpegEncoderStateCreate(h, &es, st);
        if (s == NVJPEG_STATUS_SUCCESS)
            s = nvjpegEncoderParamsCreate(h, &ep, st);
        if (s == NVJPEG_STATUS_SUCCESS)
            s = nvjpegEncoderParamsSetSamplingFactors(ep, NVJPEG_CSS_420, st);
        if (s == NVJPEG_STATUS_SUCCESS)
            s = nvjpegEncoderParamsSetQuality(ep, 92, st);
        snprintf(step, sizeof step, "[backends] %s: encoder state + parameters", name[b]);
        snprintf(note, sizeof note, "status %d", (int)s);
        row(step, note);
        for (int i = 0; i < 2 && s == NVJPEG_STATUS_SUCCESS; i++) {
            nvjpegImage_t im;
            memset(&im, 0, sizeof im);
            im.channel[0] = src;
            im.pitch[0] = spitch;
            s = nvjpegEncodeImage(h, es, ep, &im, NVJPEG_INPUT_RGBI, W, H, st);
            size_t n = 0;
            if (s == NVJPEG_STATUS_SUCCESS)
                s = nvjpegEncodeRetrieveBitstream(h, es, NULL, &n, st);
            cudaStreamSynchronize(st);
            snprintf(step, sizeof step, "[backends] %s: encode 6000x4000 call %d", name[b], i + 1);
            snprintf(note, sizeof note, "status %d, %zu bytes", (int)s, n);
            row(step, note);
        }
        if (ep)
            nvjpegEncoderParamsDestroy(ep);
        if (es)
            nvjpegEncoderStateDestroy(es);
        row("[backends] encoder destroyed", NULL);
        nvjpegJpegState_t js = NULL;
        s = jpg ? nvjpegJpegStateCreate(h, &js) : NVJPEG_STATUS_INVALID_PARAMETER;
        snprintf(step, sizeof step, "[backends] %s: nvjpegJpegStateCreate", name[b]);
        snprintf(note, sizeof note, "status %d; threads %d", (int)s, thread_count());
        row(step, note);
        for (int i = 0; i < 2 && s == NVJPEG_STATUS_SUCCESS; i++) {
            nvjpegImage_t out;
            memset(&out, 0, sizeof out);
            out.channel[0] = dst;
            out.pitch[0] = dpitch;
            if (be[b] == NVJPEG_BACKEND_HARDWARE) {
                s = i == 0 ? nvjpegDecodeBatchedInitialize(h, js, 1, 1, NVJPEG_OUTPUT_RGBI)
                           : NVJPEG_STATUS_SUCCESS;
                const unsigned char *d = jpg;
                if (s == NVJPEG_STATUS_SUCCESS)
                    s = nvjpegDecodeBatched(h, js, &d, &len, &out, st);
            } else {
                s = nvjpegDecode(h, js, jpg, len, NVJPEG_OUTPUT_RGBI, &out, st);
            }
            cudaStreamSynchronize(st);
            snprintf(step, sizeof step, "[backends] %s: decode FILE call %d", name[b], i + 1);
            snprintf(note, sizeof note, "status %d", (int)s);
            row(step, note);
        }
        if (js)
            nvjpegJpegStateDestroy(js);
        snprintf(step, sizeof step, "[backends] %s: decoder state destroyed", name[b]);
        row(step, NULL);
        nvjpegDestroy(h);
        snprintf(step, sizeof step, "[backends] nvjpegDestroy(%s)", name[b]);
        row(step, NULL);
    }
    cudaFree(src);
    cudaFree(dst);
    (void)cudaGetLastError();
    return 0;
}

/* The imgconv part: context, small host image, big device image, codec. */
static int probe_imgconv(uint8_t *dimg, size_t dpitch, int w, int h, cudaStream_t st)
{
    char note[160];
    ic_context *ctx = NULL;
    IC("ic_context_create(cuda)", ic_context_create(&ctx, "cuda", NULL));
    row("ic_context_create(\"cuda\")", "the CLI's \"init\" stage");

    float g3[9] = {1, 2, 1, 2, 4, 2, 1, 2, 1};
    float g9[81];
    const float b9[9] = {1, 8, 28, 56, 70, 56, 28, 8, 1};
    for (int i = 0; i < 81; i++)
        g9[i] = b9[i / 9] * b9[i % 9];
    ic_kernel k3, k9;
    IC("kernels", ic_kernel_create(&k3, 3, 3, g3, 16));
    IC("kernels", ic_kernel_create(&k9, 9, 9, g9, 65536));

    ic_image s, d;
    IC("64x64 images", ic_image_create(&s, 64, 64, 3, IC_AOS));
    IC("64x64 images", ic_image_create(&d, 64, 64, 3, IC_AOS));
    IC("64x64 chart", ic_image_chart(&s, 1));
    g_last = boot_ms();
    for (int i = 0; i < 3; i++) {
        IC("ic_convolve 64x64", ic_convolve(ctx, &s, &d, &k3, NULL));
        ic_timing t = ic_context_timing(ctx);
        snprintf(note, sizeof note,
                 "call %d; ic_context_timing: upload %.3f kernel %.3f download %.3f total %.3f ms",
                 i + 1, t.upload_ms, t.kernel_ms, t.download_ms, t.total_ms);
        row("ic_convolve 64x64 RGB host->host, 3x3", note);
    }
    ic_image_free(&s);
    ic_image_free(&d);

    if (dimg) {
        uint8_t *dout = NULL;
        size_t opitch = 0;
        CU("cudaMallocPitch out", cudaMallocPitch((void **)&dout, &opitch, (size_t)w * 3, h));
        ic_image ds, dd;
        IC("wrap", ic_image_wrap_device(&ds, dimg, w, h, 3, IC_AOS, dpitch, 0, st));
        IC("wrap", ic_image_wrap_device(&dd, dout, w, h, 3, IC_AOS, opitch, 0, st));
        g_last = boot_ms();
        for (int i = 0; i < 3; i++) {
            IC("ic_convolve device", ic_convolve(ctx, &ds, &dd, &k9, NULL));
            ic_timing t = ic_context_timing(ctx);
            snprintf(note, sizeof note, "call %d; ic_context_timing: kernel %.3f total %.3f ms",
                     i + 1, t.kernel_ms, t.total_ms);
            char step[96];
            snprintf(step, sizeof step, "ic_convolve %dx%d RGB device->device, 9x9", w, h);
            row(step, note);
        }
        cudaFree(dout);

        ic_image hs, hd;
        IC("host images", ic_image_create(&hs, w, h, 3, IC_AOS));
        IC("host images", ic_image_create(&hd, w, h, 3, IC_AOS));
        CU("download",
           cudaMemcpy2D(hs.data, hs.pitch, dimg, dpitch, (size_t)w * 3, h, cudaMemcpyDeviceToHost));
        g_last = boot_ms();
        for (int i = 0; i < 2; i++) {
            IC("ic_convolve host", ic_convolve(ctx, &hs, &hd, &k9, NULL));
            ic_timing t = ic_context_timing(ctx);
            snprintf(
                note, sizeof note,
                "call %d; ic_context_timing: upload %.3f kernel %.3f download %.3f total %.3f ms",
                i + 1, t.upload_ms, t.kernel_ms, t.download_ms, t.total_ms);
            char step[96];
            snprintf(step, sizeof step, "ic_convolve %dx%d RGB host->host, 9x9", w, h);
            row(step, note);
        }
        ic_image_free(&hs);
        ic_image_free(&hd);
    }
    ic_kernel_free(&k3);
    ic_kernel_free(&k9);

    ic_gpu_codec *codec = NULL;
    IC("ic_gpu_codec_create", ic_gpu_codec_create(&codec, ctx, 1));
    row("ic_gpu_codec_create(1 slot)",
        "nvJPEG default handle + 1 encoder, in imgconv (warm process)");
    snprintf(note, sizeof note, "engine %s: opens the hardware decoder (lazy since wholejob)",
             ic_gpu_codec_engine(codec));
    row("ic_gpu_codec_engine", note);
    ic_gpu_codec_free(codec);
    row("ic_gpu_codec_free", NULL);
    ic_context_free(ctx);
    row("ic_context_free", NULL);
    return 0;
}

int main(int argc, char **argv)
{
    double at_main = boot_ms();
    int default_first = 0, no_nvjpeg = 0, concurrent = 0, why = 0, backends = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--default-first"))
            default_first = 1;
        else if (!strcmp(argv[i], "--no-nvjpeg"))
            no_nvjpeg = 1;
        else if (!strcmp(argv[i], "--concurrent"))
            concurrent = 1;
        else if (!strcmp(argv[i], "--why"))
            why = 1;
        else if (!strcmp(argv[i], "--backends"))
            backends = 1;
        else
            path = argv[i];
    }
    if (!path && !no_nvjpeg) {
        fprintf(stderr,
                "usage: %s [--default-first] [--concurrent] [--why] [--backends] [--no-nvjpeg] "
                "FILE.jpg\n",
                argv[0]);
        return 2;
    }
    g_exec_ms = exec_boot_ms();
    if (g_exec_ms < 0 || g_exec_ms > at_main || at_main - g_exec_ms > 60000)
        g_exec_ms = at_main; /* no usable /proc: times count from main */
    g_last = g_exec_ms;
    const char *ml = getenv("CUDA_MODULE_LOADING");
    int drv = 0, rt = 0;
    printf("startup_probe: %s; CUDA_MODULE_LOADING=%s; order: %s\n\n", path ? path : "(no file)",
           ml ? ml : "(unset: LAZY since CUDA 12.2)",
           no_nvjpeg       ? "no nvJPEG"
           : why           ? "--why steps first, then HARDWARE handle first"
           : concurrent    ? "HARDWARE and DEFAULT created concurrently first, then as usual"
           : default_first ? "DEFAULT handle first"
                           : "HARDWARE handle first");
    printf("| since exec ms | step ms | step | note |\n|---:|---:|---|---|\n");
    g_last = g_exec_ms;
    row("exec -> main", "dynamic loading and static constructors (10 ms resolution)");

    size_t len = 0;
    unsigned char *jpg = NULL;
    if (path) {
        jpg = read_file(path, &len);
        if (!jpg)
            return fail("read", path);
        char note[64];
        snprintf(note, sizeof note, "%zu bytes", len);
        row("read the JPEG file", note);
    }

    int n = 0;
    CU("cudaGetDeviceCount", cudaGetDeviceCount(&n));
    cudaDriverGetVersion(&drv);
    cudaRuntimeGetVersion(&rt);
    char note[200];
    snprintf(note, sizeof note, "%d device(s); driver API %d, runtime %d (cuInit, driver load)", n,
             drv, rt);
    row("cudaGetDeviceCount", note);
    CU("cudaSetDevice", cudaSetDevice(0));
    row("cudaSetDevice(0)", "CUDA >= 12 creates the primary context here");
    CU("cudaFree(0)", cudaFree(0));
    row("cudaFree(0)", "context creation if not done yet");
    cudaStream_t st;
    CU("cudaStreamCreate", cudaStreamCreateWithFlags(&st, cudaStreamNonBlocking));
    row("cudaStreamCreateWithFlags", NULL);

    uint8_t *dimg = NULL;
    size_t dpitch = 0;
    int w = 0, h = 0;
    if (!no_nvjpeg && backends && probe_backends(st, jpg, len) != 0)
        return 1;
    if (!no_nvjpeg && why && probe_why(st) != 0)
        return 1;
    if (!no_nvjpeg && concurrent && probe_concurrent(st) != 0)
        return 1;
    if (!no_nvjpeg) {
        nvjpegHandle_t simple = NULL, hw = NULL, def = NULL;
        NJ("nvjpegCreateSimple", nvjpegCreateSimple(&simple));
        row("nvjpegCreateSimple", "first nvJPEG call of the process");
        nvjpegStatus_t shw = NVJPEG_STATUS_SUCCESS;
        for (int pass = 0; pass < 2; pass++) {
            if ((pass == 0) == !default_first) {
                shw = nvjpegCreateEx(NVJPEG_BACKEND_HARDWARE, NULL, NULL, 0, &hw);
                snprintf(note, sizeof note, "status %d%s", (int)shw,
                         shw == NVJPEG_STATUS_SUCCESS ? ""
                                                      : " (no hardware decoder: skipped below)");
                row("nvjpegCreateEx(HARDWARE)", note);
                if (shw != NVJPEG_STATUS_SUCCESS)
                    hw = NULL;
            } else {
                NJ("nvjpegCreateEx(DEFAULT)",
                   nvjpegCreateEx(NVJPEG_BACKEND_DEFAULT, NULL, NULL, 0, &def));
                row("nvjpegCreateEx(DEFAULT)", "the hybrid decoder and the encoder's handle");
            }
        }
        int nc = 0, ws[NVJPEG_MAX_COMPONENT], hs[NVJPEG_MAX_COMPONENT];
        nvjpegChromaSubsampling_t css;
        NJ("nvjpegGetImageInfo", nvjpegGetImageInfo(def, jpg, len, &nc, &css, ws, hs));
        w = ws[0];
        h = hs[0];
        snprintf(note, sizeof note, "%dx%d, %d components, subsampling %d", w, h, nc, (int)css);
        row("nvjpegGetImageInfo", note);
        CU("cudaMallocPitch", cudaMallocPitch((void **)&dimg, &dpitch, (size_t)w * 3, h));
        row("cudaMallocPitch of the decoded image", NULL);

        nvjpegImage_t out;
        memset(&out, 0, sizeof out);
        out.channel[0] = dimg;
        out.pitch[0] = dpitch;
        if (hw) {
            nvjpegJpegState_t hst;
            NJ("hw state", nvjpegJpegStateCreate(hw, &hst));
            row("nvjpegJpegStateCreate(hardware)", NULL);
            NJ("DecodeBatchedInitialize",
               nvjpegDecodeBatchedInitialize(hw, hst, 1, 1, NVJPEG_OUTPUT_RGBI));
            row("nvjpegDecodeBatchedInitialize(batch 1)", NULL);
            const unsigned char *d[1] = {jpg};
            size_t l[1] = {len};
            for (int i = 0; i < 3; i++) {
                NJ("nvjpegDecodeBatched", nvjpegDecodeBatched(hw, hst, d, l, &out, st));
                CU("sync", cudaStreamSynchronize(st));
                snprintf(note, sizeof note, "call %d, synchronised", i + 1);
                row("hardware nvjpegDecodeBatched", note);
            }
            nvjpegJpegStateDestroy(hst);
        }
        nvjpegJpegState_t dst_;
        NJ("hybrid state", nvjpegJpegStateCreate(def, &dst_));
        row("nvjpegJpegStateCreate(default)", NULL);
        for (int i = 0; i < 3; i++) {
            NJ("nvjpegDecode", nvjpegDecode(def, dst_, jpg, len, NVJPEG_OUTPUT_RGBI, &out, st));
            CU("sync", cudaStreamSynchronize(st));
            snprintf(note, sizeof note, "call %d, synchronised", i + 1);
            row("hybrid nvjpegDecode (default backend)", note);
        }
        nvjpegJpegStateDestroy(dst_);

        nvjpegEncoderState_t es;
        nvjpegEncoderParams_t ep;
        NJ("encoder state", nvjpegEncoderStateCreate(def, &es, st));
        row("nvjpegEncoderStateCreate", NULL);
        NJ("encoder params", nvjpegEncoderParamsCreate(def, &ep, st));
        NJ("encoder params", nvjpegEncoderParamsSetSamplingFactors(ep, NVJPEG_CSS_420, st));
        NJ("encoder params", nvjpegEncoderParamsSetQuality(ep, 92, st));
        row("nvjpegEncoderParamsCreate + set (4:2:0, q92)", NULL);
        nvjpegImage_t in = out;
        unsigned char *bits = NULL;
        for (int i = 0; i < 3; i++) {
            size_t nb = 0;
            NJ("nvjpegEncodeImage",
               nvjpegEncodeImage(def, es, ep, &in, NVJPEG_INPUT_RGBI, w, h, st));
            NJ("retrieve", nvjpegEncodeRetrieveBitstream(def, es, NULL, &nb, st));
            if (!bits)
                bits = (unsigned char *)malloc(nb * 2);
            NJ("retrieve", nvjpegEncodeRetrieveBitstream(def, es, bits, &nb, st));
            CU("sync", cudaStreamSynchronize(st));
            snprintf(note, sizeof note, "call %d, %zu bytes retrieved, synchronised", i + 1, nb);
            row("nvjpegEncodeImage + RetrieveBitstream", note);
        }
        free(bits);
        nvjpegEncoderParamsDestroy(ep);
        nvjpegEncoderStateDestroy(es);
        if (hw)
            nvjpegDestroy(hw);
        nvjpegDestroy(def);
        nvjpegDestroy(simple);
        row("nvjpegDestroy (all handles)", NULL);
    }

    const size_t big = (size_t)72 << 20;
    void *ph = NULL, *pd = NULL;
    CU("cudaHostAlloc", cudaHostAlloc(&ph, big, cudaHostAllocDefault));
    row("cudaHostAlloc 72 MiB", "pinned staging as the band pipeline uses it");
    memset(ph, 1, big);
    row("memset of the pinned 72 MiB", "first touch");
    CU("cudaMalloc", cudaMalloc(&pd, big));
    row("cudaMalloc 72 MiB", NULL);
    CU("copy", cudaMemcpy(pd, ph, big, cudaMemcpyHostToDevice));
    row("cudaMemcpy 72 MiB pinned host->device", NULL);
    void *pg = malloc(big);
    memset(pg, 1, big);
    g_last = boot_ms();
    CU("copy", cudaMemcpy(pd, pg, big, cudaMemcpyHostToDevice));
    row("cudaMemcpy 72 MiB pageable host->device", NULL);
    free(pg);
    CU("cudaFree", cudaFree(pd));
    CU("cudaFreeHost", cudaFreeHost(ph));
    row("cudaFree + cudaFreeHost 72 MiB", NULL);

    int rc = probe_imgconv(dimg, dpitch, w, h, st);
    if (dimg)
        cudaFree(dimg);
    cudaStreamDestroy(st);
    free(jpg);
    row("end", NULL);
    return rc;
}
