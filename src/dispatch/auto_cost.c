/*
 * auto_cost.c - ic_backend_choose: the whole job's predicted wall time on
 * `cpu` and on `cuda`, start-up and codecs included, and the faster of the
 * two (docs/backends.md, "Auto: the whole job").
 *
 * cpu:  a context, then per image decode + filter + encode; one image spreads
 *       its filter (and the codecs that have parallel paths) over the cores, a
 *       batch keeps one image per core.
 * cuda: the driver and context (overlapped with the first decode where the
 *       CLI starts it on a thread), the runtime's tear-down at exit, and per
 *       image the bus both ways, the filter and the host codecs; a batch of
 *       JPEGs with nvJPEG decodes on the cores and the hardware decoder at
 *       once and encodes on the device.
 */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "core/blur_fit.h"
#include "core/error.h"
#include "dispatch/dispatch.h"

#define N_FMT 6 /* ic_format's values, IC_FMT_UNKNOWN to IC_FMT_WEBP */

void ic_auto_rates_default(ic_auto_rates *r, int threads)
{
    if (!r)
        return;
    memset(r, 0, sizeof *r);
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    r->cpu_cores = n < 1 ? 1 : n > 4096 ? 4096 : (int)n;
    if (threads > 0 && threads < r->cpu_cores)
        r->cpu_cores = threads;
    r->cpu_init_s = 0.004;
    /* a core's direct sums with AVX-512 (a full-rank 31x31 kernel on a
     * 6000x4000 JPEG took 0.24 s whole on 16 cores; bench/results/wholejob.md) */
    r->cpu_mac_direct = 2.5e10;
    r->cpu_mac_sep = 8e9;
    /* one core, per 3-channel megapixel: libjpeg-turbo (the 16-core batch's
     * 532 HD photos/s), the PNG coders (about 250 MB/s in, 70 MB/s out) */
    static const double dec[N_FMT] = {0, 0.0015, 0.012, 0.0075, 0.015, 0.010};
    static const double enc[N_FMT] = {0, 0.002, 0.040, 0.0045, 0.045, 0.060};
    static const double enc_par[N_FMT] = {1, 1, 8, 3, 1, 1}; /* PNG strips, JPEG rows */
    for (int f = 0; f < N_FMT; f++) {
        r->cpu_decode_s[f] = dec[f];
        r->cpu_encode_s[f] = enc[f];
        r->cpu_encode_par[f] = enc_par[f];
        r->cpu_decode_par[f] = 1;
    }
    r->gpu_init_s = 0.30; /* cuInit 0.18 s, the primary context 0.13 s */
    r->gpu_exit_s = 0.05;
    r->gpu_codec_init_s = 0.27; /* one nvJPEG handle */
    r->gpu_codec_overlap = 0.7;
    r->gpu_mac_per_s = 1e13;
    r->gpu_launch_s = 0.0002;
    r->bus_bps = 5e9;
    /* what the batch pipeline gets of nvJPEG: 887 HD photos/s steady, 744
     * whole, with 16 cores */
    r->gpu_decode_s = 0.005;
    r->gpu_encode_s = 0.000545;
    /* the blur method's target on an H200 (sigma 120 on HD RGB in 1 ms is
     * 6.2e9 samples/s), halved until bench/suites/blur.sh measures it */
    r->gpu_blur_per_s = 3e9;
}

static double at_least(double v, double lo)
{
    return v > lo ? v : lo;
}

static double min2(double a, double b)
{
    return a < b ? a : b;
}

/* Where the time goes, per image and for the job. */
typedef struct cost {
    double mp;           /* codec megapixels (3-channel 8-bit equivalents) */
    double bytes;        /* one image's samples */
    double dec, enc;     /* host codecs, core-seconds */
    double dec_w, enc_w; /* ... wall seconds of one image on every core */
    double filt_cpu;     /* core-seconds */
    double filt_gpu;     /* device seconds, launches included */
    double cpu_s, cuda_s;
    double start_s; /* the GPU start-up the cuda run pays and does not hide */
} cost;

static void predict(const ic_auto_job *j, const ic_auto_rates *r, cost *c)
{
    memset(c, 0, sizeof *c);
    const double px = (double)j->width * j->height;
    const double cores = r->cpu_cores > 0 ? r->cpu_cores : 1;
    const double n = j->n_images;
    c->mp = px / 1e6 * j->channels / 3.0 * (j->wide ? 2 : 1);
    c->bytes = px * j->channels * (j->wide ? 2 : 1);
    const int in = (int)j->in_format, out = (int)j->out_format;
    c->dec = r->cpu_decode_s[in] * c->mp;
    c->enc = r->cpu_encode_s[out] * c->mp;
    c->dec_w = c->dec / min2(at_least(r->cpu_decode_par[in], 1), cores);
    c->enc_w = c->enc / min2(at_least(r->cpu_encode_par[out], 1), cores);
    c->filt_cpu = j->macs / at_least(j->separable ? r->cpu_mac_sep : r->cpu_mac_direct, 1);
    /* a wide blur takes the prefix-sum method, a cost per sample whatever
     * sigma; a narrower one (gaussian:5) the FIR kernels like any other */
    const int gpu_blur =
        j->blur && (j->kw >= IC_BLUR_CUDA_MIN_SIDE || j->kh >= IC_BLUR_CUDA_MIN_SIDE);
    c->filt_gpu = (gpu_blur ? px * j->channels / at_least(r->gpu_blur_per_s, 1)
                            : j->macs / at_least(r->gpu_mac_per_s, 1)) +
                  r->gpu_launch_s;
    const double xfer = 2 * c->bytes / at_least(r->bus_bps, 1);

    if (j->n_images == 1) {
        c->cpu_s = r->cpu_init_s + c->dec_w + c->filt_cpu / cores + c->enc_w;
        c->start_s = j->overlap_init ? at_least(r->gpu_init_s - c->dec_w, 0) : r->gpu_init_s;
        c->cuda_s = c->start_s + c->dec_w + xfer + c->filt_gpu + c->enc_w + r->gpu_exit_s;
        c->start_s += r->gpu_exit_s;
        return;
    }
    /* a batch: one image per core, the first image's latency at least */
    c->cpu_s = r->cpu_init_s + at_least(n * (c->dec + c->enc + c->filt_cpu) / cores,
                                        c->dec_w + c->filt_cpu / cores + c->enc_w);
    double rate;
    c->start_s = r->gpu_init_s + r->gpu_exit_s;
    if (j->gpu_codec) {
        /* the cores and the hardware decoder decode side by side (the cores'
         * images crossing the bus once), nvJPEG encodes every image */
        const double cpu_dec = min2(cores / at_least(c->dec, 1e-9), r->bus_bps / c->bytes);
        const double dec_rate = cpu_dec + 1 / at_least(r->gpu_decode_s * c->mp, 1e-9);
        rate = min2(dec_rate, 1 / at_least(r->gpu_encode_s * c->mp, 1e-9));
        rate = min2(rate, 1 / c->filt_gpu);
        /* the workers decode while nvJPEG opens, up to the images they may hold */
        const double hidden =
            r->gpu_codec_overlap * min2(r->gpu_codec_init_s, 512 * c->dec / cores);
        c->start_s += r->gpu_codec_init_s - hidden;
    } else {
        /* host codecs on the cores, the filter and both copies on the device */
        rate = min2(cores / at_least(c->dec + c->enc, 1e-9), 1 / (xfer + c->filt_gpu));
    }
    c->cuda_s = c->start_s + at_least(n / rate, c->dec_w + xfer + c->filt_gpu + c->enc_w);
}

/* The reason line: what decided, in the model's own figures. */
static void explain(const ic_auto_job *j, const cost *c, const char *chosen, const char *why,
                    char *buf, size_t len)
{
    const char *what = j->n_images == 1 ? "one image" : "the batch";
    int o = snprintf(buf, len, "%s: %s predicted %.3g s on cpu, %.3g s on cuda", chosen, what,
                     c->cpu_s, c->cuda_s);
    if (o < 0 || (size_t)o >= len)
        return;
    if (why) {
        snprintf(buf + o, len - (size_t)o, "; %s", why);
    } else if (strcmp(chosen, "cpu") == 0) {
        snprintf(buf + o, len - (size_t)o,
                 c->start_s >= c->cpu_s
                     ? " (its start-up, %.2f s, alone exceeds the job on the cpu; GPU not probed)"
                     : " (%.2f s of GPU start-up not paid back; GPU not probed)",
                 c->start_s);
    } else if (j->n_images > 1) {
        snprintf(buf + o, len - (size_t)o, " (%d images pay back %.2f s of GPU start-up)",
                 j->n_images, c->start_s);
    } else {
        snprintf(buf + o, len - (size_t)o,
                 " (the filter's %.3g G multiply-adds pay back %.2f s of GPU start-up)",
                 j->macs / 1e9, c->start_s);
    }
}

static int fmt_ok(ic_format f)
{
    return (int)f >= 0 && (int)f < N_FMT;
}

ic_status ic_backend_choose(const ic_auto_job *job, const ic_auto_rates *rates, int gpu,
                            ic_auto_choice *out)
{
    if (!job || !out)
        return ic_fail(IC_ERR_INVALID_ARG, "ic_backend_choose: NULL job or result");
    memset(out, 0, sizeof *out);
    if (job->n_images < 1 || job->width < 1 || job->height < 1 || job->channels < 1 ||
        job->channels > 4 || !(job->macs >= 0) || !fmt_ok(job->in_format) ||
        !fmt_ok(job->out_format))
        return ic_fail(IC_ERR_INVALID_ARG,
                       "ic_backend_choose: bad job (%d images of %dx%dx%d, formats %d -> %d)",
                       job->n_images, job->width, job->height, job->channels, (int)job->in_format,
                       (int)job->out_format);
    ic_auto_rates def;
    if (!rates) {
        ic_auto_rates_default(&def, 0);
        rates = &def;
    }
    cost c;
    predict(job, rates, &c);
    out->cpu_s = c.cpu_s;
    out->cuda_s = c.cuda_s;
    out->backend = "cpu";
    if (c.cuda_s >= c.cpu_s) { /* the GPU is not even looked for */
        explain(job, &c, "cpu", NULL, out->reason, sizeof out->reason);
        return IC_OK;
    }
    char why[200] = "";
    if (gpu < 0) {
        int usable = 0;
        const char *no = "";
        out->probed = 1;
        if (!ic__backend_find("cuda", &usable, &no))
            snprintf(why, sizeof why, "cuda would be faster, but this build has no CUDA backend");
        else if (!usable)
            snprintf(why, sizeof why, "cuda would be faster, but %s", no);
        else
            gpu = 1;
    } else if (gpu == 0) {
        snprintf(why, sizeof why, "cuda would be faster, but no usable CUDA device");
    }
    if (gpu == 1)
        out->backend = "cuda";
    explain(job, &c, out->backend, why[0] ? why : NULL, out->reason, sizeof out->reason);
    return IC_OK;
}
