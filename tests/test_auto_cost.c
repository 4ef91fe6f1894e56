/*
 * test_auto_cost.c - ic_backend_choose, the whole-job model behind
 * --backend auto, on fixed rates (those of a 16-core H200 machine, written
 * out here so that the built-in table may change without changing what this
 * checks), as a specification:
 *
 *  1. The cases --backend auto must get right choose as the machine's
 *     measured whole processes say: cpu for a 64x64 image, an HD JPEG, a
 *     6000x4000 JPEG, a 6000x4000 PNG and an 8K RGBA PNG (the GPU's start-up
 *     is not paid back); cuda for 2,000 HD JPEGs, a 31x31 kernel and
 *     gaussian:sigma=40 on the 6000x4000 JPEG (the filter's work pays it
 *     back). 500 HD JPEGs measured a tie (0.94 s cpu, 0.99 s cuda): either is
 *     right, and the two predictions are within 1.1x of each other. A blur
 *     past 255 (gaussian:sigma=120) stays on cpu for one 64x64 image and
 *     takes cuda's blur method (gpu_blur_per_s) for 2,000 HD JPEGs.
 *  2. Where the measured times are known, the chosen backend's measured time
 *     is within 1.1x of the better one's.
 *  3. A batch amortises the start-up: cuda_s / cpu_s falls from one image to
 *     64 and from 64 to 4,096, and there is a count from which cuda is chosen
 *     and stays chosen.
 *  4. Without a GPU (gpu 0) the choice is cpu, and the reason says cuda would
 *     have been faster; a cpu choice never probes (probed 0 under gpu -1);
 *     the reason names the chosen backend and both predictions.
 *  5. gpu -1 in this build: cuda only when the library finds a usable CUDA
 *     device (ic_cuda_device_count), else cpu with the reason why.
 *  6. Bad jobs (no images, zero size, 5 channels, a format out of range,
 *     negative work, NULL) are IC_ERR_INVALID_ARG.
 */
#define IC_ADVANCED_API
#include <stdio.h>
#include <string.h>

#include "imgconv.h"
#include "testutil.h"

static int failures;

#define CHECK(cond, ...) ICT_CHECK(failures, cond, __VA_ARGS__)

/* The rates of the H200 machine (16 cores): bench/results/wholejob.md,
 * startup.md, png.md and the batch figures of docs/performance.md. */
static ic_auto_rates h200(void)
{
    ic_auto_rates r;
    memset(&r, 0, sizeof r);
    r.cpu_cores = 16;
    r.cpu_init_s = 0.004;
    r.cpu_mac_direct = 8e9;
    r.cpu_mac_sep = 8e9;
    static const double dec[6] = {0, 0.0015, 0.012, 0.0075, 0.015, 0.010};
    static const double enc[6] = {0, 0.002, 0.040, 0.0045, 0.045, 0.060};
    static const double enc_par[6] = {1, 1, 8, 3, 1, 1};
    for (int f = 0; f < 6; f++) {
        r.cpu_decode_s[f] = dec[f];
        r.cpu_encode_s[f] = enc[f];
        r.cpu_encode_par[f] = enc_par[f];
        r.cpu_decode_par[f] = 1;
    }
    r.gpu_init_s = 0.30;
    r.gpu_exit_s = 0.05;
    r.gpu_codec_init_s = 0.27;
    r.gpu_codec_overlap = 0.7;
    r.gpu_mac_per_s = 1e13;
    r.gpu_launch_s = 0.0002;
    r.bus_bps = 5e9;
    r.gpu_decode_s = 0.005;
    r.gpu_encode_s = 0.000545;
    r.gpu_blur_per_s = 3e9;
    return r;
}

/* n images of w x h x c, in -> out, filtered by a kw x kh kernel that is
 * separable (taps 2 * kw per sample) or not (kw * kh). */
static ic_auto_job job(int n, int w, int h, int c, ic_format in, ic_format out, int kw, int sep)
{
    ic_auto_job j;
    memset(&j, 0, sizeof j);
    j.n_images = n;
    j.width = w;
    j.height = h;
    j.channels = c;
    j.in_format = in;
    j.out_format = out;
    j.kw = j.kh = kw;
    j.separable = sep;
    j.macs = (double)w * h * c * (sep ? 2.0 * kw : (double)kw * kw);
    /* the CLI's rules: nvJPEG for a batch of JPEGs to JPEGs, the start-up on
     * a thread while one image decodes */
    j.gpu_codec = n >= 64 && in == IC_FMT_JPEG && out == IC_FMT_JPEG;
    j.overlap_init = n == 1;
    return j;
}

/* job() for a blur past 255: the cpu's sliding sums (ic_convolve_work:
 * 64 a sample for a gaussian), cuda's blur method by samples. */
static ic_auto_job blur_job(int n, int w, int h, int c, ic_format in, ic_format out, int kw)
{
    ic_auto_job j = job(n, w, h, c, in, out, kw, 1);
    j.blur = IC_BLUR_GAUSSIAN;
    j.macs = (double)w * h * c * 64.0;
    return j;
}

/* job() for a named Gaussian with weights (gaussian:5): blur set, as the
 * CLI's kernel carries it, the work of its separable passes. */
static ic_auto_job named_job(int n, int w, int h, int c, ic_format in, ic_format out, int kw)
{
    ic_auto_job j = job(n, w, h, c, in, out, kw, 1);
    j.blur = IC_BLUR_GAUSSIAN;
    return j;
}

typedef struct acase {
    const char *name;
    ic_auto_job j;
    const char *want;          /* "cpu", "cuda", or NULL: either (a measured tie) */
    double meas_cpu, meas_gpu; /* measured whole processes, s (0: not measured) */
} acase;

static void cases(void)
{
    const ic_auto_rates r = h200();
    const ic_format J = IC_FMT_JPEG, P = IC_FMT_PNG, M = IC_FMT_PNM;
    const acase cs[] = {
        {"64x64 PPM gaussian:3", job(1, 64, 64, 3, M, M, 3, 1), "cpu", 0.0068, 0.3337},
        {"HD JPEG gaussian:9", job(1, 1920, 1080, 3, J, J, 9, 1), "cpu", 0, 0},
        {"6000x4000 JPEG gaussian:9", job(1, 6000, 4000, 3, J, J, 9, 1), "cpu", 0.3106, 0.4762},
        {"6000x4000 PNG gaussian:9", job(1, 6000, 4000, 3, P, P, 9, 1), "cpu", 0, 0},
        {"8K RGBA PNG gaussian:9", job(1, 7680, 4320, 4, P, P, 9, 1), "cpu", 0, 0},
        {"500 HD JPEGs gaussian:5", job(500, 1920, 1080, 3, J, J, 5, 1), NULL, 0.94, 0.99},
        {"2000 HD JPEGs gaussian:5", job(2000, 1920, 1080, 3, J, J, 5, 1), "cuda", 3.76, 2.69},
        {"6000x4000 JPEG 31x31", job(1, 6000, 4000, 3, J, J, 31, 0), "cuda", 0, 0},
        {"6000x4000 JPEG gaussian:sigma=40", job(1, 6000, 4000, 3, J, J, 241, 1), "cuda", 0, 0},
        /* blurs past 255: the start-up is not paid back on one image, a batch pays it */
        {"64x64 PPM gaussian:sigma=120", blur_job(1, 64, 64, 3, M, M, 721), "cpu", 0, 0},
        {"2000 HD JPEGs gaussian:sigma=120", blur_job(2000, 1920, 1080, 3, J, J, 721), "cuda", 0,
         0},
        /* a named Gaussian under 33 taps a side: cuda's FIR, not its blur method */
        {"2000 HD JPEGs named gaussian:5", named_job(2000, 1920, 1080, 3, J, J, 5), "cuda", 3.79,
         2.52},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        const acase *c = &cs[i];
        ic_auto_choice ch;
        const ic_status s = ic_backend_choose(&c->j, &r, 1, &ch);
        CHECK(s == IC_OK, "%s: status %d", c->name, (int)s);
        if (s != IC_OK)
            continue;
        printf("%-34s %-4s cpu %.3f s, cuda %.3f s: %s\n", c->name, ch.backend, ch.cpu_s, ch.cuda_s,
               ch.reason);
        if (c->want)
            CHECK(!strcmp(ch.backend, c->want), "%s: chose %s, want %s (cpu %.3f s, cuda %.3f s)",
                  c->name, ch.backend, c->want, ch.cpu_s, ch.cuda_s);
        else
            CHECK(ch.cuda_s < 1.1 * ch.cpu_s && ch.cpu_s < 1.1 * ch.cuda_s,
                  "%s: a measured tie predicted as cpu %.3f s, cuda %.3f s", c->name, ch.cpu_s,
                  ch.cuda_s);
        if (c->meas_cpu > 0) {
            const double got = !strcmp(ch.backend, "cpu") ? c->meas_cpu : c->meas_gpu;
            const double best = c->meas_cpu < c->meas_gpu ? c->meas_cpu : c->meas_gpu;
            CHECK(got <= 1.1 * best, "%s: the chosen %s measured %.3f s, the better %.3f s",
                  c->name, ch.backend, got, best);
        }
        CHECK(!strncmp(ch.reason, ch.backend, strlen(ch.backend)) && strstr(ch.reason, "on cpu") &&
                  strstr(ch.reason, "on cuda"),
              "%s: reason '%s' names neither the choice nor both predictions", c->name, ch.reason);
        CHECK(ch.probed == 0, "%s: probed with gpu given", c->name);
    }
}

static void batches(void)
{
    const ic_auto_rates r = h200();
    double ratio[3];
    int first_cuda = 0, back_to_cpu = 0, k = 0;
    for (int n = 1; n <= 4096; n *= 2) {
        ic_auto_job j = job(n, 1920, 1080, 3, IC_FMT_JPEG, IC_FMT_JPEG, 5, 1);
        ic_auto_choice ch;
        CHECK(ic_backend_choose(&j, &r, 1, &ch) == IC_OK, "batch of %d", n);
        if (n == 1 || n == 64 || n == 4096)
            ratio[k++] = ch.cuda_s / ch.cpu_s;
        if (!first_cuda && !strcmp(ch.backend, "cuda"))
            first_cuda = n;
        else if (first_cuda && strcmp(ch.backend, "cuda"))
            back_to_cpu = n;
    }
    CHECK(ratio[0] > ratio[1] && ratio[1] > ratio[2], "cuda/cpu: %.3f (1), %.3f (64), %.3f (4096)",
          ratio[0], ratio[1], ratio[2]);
    CHECK(first_cuda > 1 && !back_to_cpu, "HD JPEG batches: cuda from %d, cpu again at %d",
          first_cuda, back_to_cpu);
    printf("HD JPEG batches: cuda from %d images\n", first_cuda);
}

static void no_gpu(void)
{
    const ic_auto_rates r = h200();
    ic_auto_job heavy = job(1, 6000, 4000, 3, IC_FMT_JPEG, IC_FMT_JPEG, 31, 0);
    ic_auto_choice ch;
    CHECK(ic_backend_choose(&heavy, &r, 0, &ch) == IC_OK, "heavy, no GPU");
    CHECK(!strcmp(ch.backend, "cpu") && strstr(ch.reason, "no usable CUDA device") &&
              ch.cuda_s < ch.cpu_s,
          "heavy, no GPU: %s, '%s'", ch.backend, ch.reason);
    ic_auto_job small = job(1, 64, 64, 3, IC_FMT_PNM, IC_FMT_PNM, 3, 1);
    CHECK(ic_backend_choose(&small, &r, -1, &ch) == IC_OK, "small, gpu unknown");
    CHECK(!strcmp(ch.backend, "cpu") && ch.probed == 0 && strstr(ch.reason, "not probed"),
          "small, gpu unknown: %s, probed %d, '%s'", ch.backend, ch.probed, ch.reason);
    /* gpu -1 on a heavy job: the library looks */
    CHECK(ic_backend_choose(&heavy, &r, -1, &ch) == IC_OK, "heavy, gpu unknown");
    const int devices = ic_cuda_device_count();
    CHECK(ch.probed == 1, "heavy, gpu unknown: not probed");
    CHECK(!strcmp(ch.backend, devices > 0 ? "cuda" : "cpu"),
          "heavy, gpu unknown, %d devices: chose %s ('%s')", devices, ch.backend, ch.reason);
    if (devices == 0)
        CHECK(strstr(ch.reason, "but ") != NULL, "no device: reason '%s' does not say why",
              ch.reason);
    printf("heavy job, GPU looked for: %s\n", ch.reason);
}

static void bad_jobs(void)
{
    const ic_auto_rates r = h200();
    ic_auto_choice ch;
    ic_auto_job j = job(1, 64, 64, 3, IC_FMT_PNM, IC_FMT_PNM, 3, 1);
    ic_auto_job b = j;
    b.n_images = 0;
    CHECK(ic_backend_choose(&b, &r, 1, &ch) == IC_ERR_INVALID_ARG, "0 images");
    b = j;
    b.width = 0;
    CHECK(ic_backend_choose(&b, &r, 1, &ch) == IC_ERR_INVALID_ARG, "width 0");
    b = j;
    b.channels = 5;
    CHECK(ic_backend_choose(&b, &r, 1, &ch) == IC_ERR_INVALID_ARG, "5 channels");
    b = j;
    b.out_format = (ic_format)6;
    CHECK(ic_backend_choose(&b, &r, 1, &ch) == IC_ERR_INVALID_ARG, "format 6");
    b = j;
    b.macs = -1;
    CHECK(ic_backend_choose(&b, &r, 1, &ch) == IC_ERR_INVALID_ARG, "negative work");
    CHECK(ic_backend_choose(NULL, &r, 1, &ch) == IC_ERR_INVALID_ARG, "NULL job");
    CHECK(ic_backend_choose(&j, &r, 1, NULL) == IC_ERR_INVALID_ARG, "NULL result");
    /* the built-in rates: a valid choice for the small job, cpu */
    CHECK(ic_backend_choose(&j, NULL, 1, &ch) == IC_OK && !strcmp(ch.backend, "cpu"),
          "built-in rates, 64x64: %s", ch.backend);
}

int main(void)
{
    cases();
    batches();
    no_gpu();
    bad_jobs();
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("test_auto_cost: all passed\n");
    return 0;
}
