/*
 * startup_probe.cu - where a CUDA imgconv process spends its first second
 * (issue 11, start-up). A diagnostic, not a test: it times, one after the
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
 * usage: startup_probe [--default-first] [--concurrent] [--no-nvjpeg] FILE.jpg
 * Prints a table (markdown) on stdout; exit 0, or 1 when a step failed (the
 * table up to it is printed, the failing step named). Built only in CUDA
 * builds with nvJPEG (CMakeLists.txt); run by `scripts/gpu-check.sh startup`.
 * Compare the first and second rows of a step: the difference is its one-time
 * cost (lazy module load, allocation, planning) that a single-image process pays.
 */
#include <cuda_runtime.h>
#include <nvjpeg.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "imgconv.h"

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
    int default_first = 0, no_nvjpeg = 0, concurrent = 0;
    const char *path = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--default-first"))
            default_first = 1;
        else if (!strcmp(argv[i], "--no-nvjpeg"))
            no_nvjpeg = 1;
        else if (!strcmp(argv[i], "--concurrent"))
            concurrent = 1;
        else
            path = argv[i];
    }
    if (!path && !no_nvjpeg) {
        fprintf(stderr, "usage: %s [--default-first] [--concurrent] [--no-nvjpeg] FILE.jpg\n",
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
