/*
 * test_gpu_devimg.c - device images in the public API (issue 11, item 2):
 * ic_convolve on images that live in CUDA device memory (ic_image_wrap_device)
 * gives, bit for bit, what it gives on the same pixels in host memory.
 *
 * For every CUDA backend, seeded random cases (sizes 1..150, 1..4 channels,
 * AoS and SoA on either side, layouts that differ (converted on the device),
 * every border mode, kernels 1x1..15x15 (and a 31x31 for `cuda`, its FFT
 * method), bias, convolution and correlation, alpha keep (done on the device)
 * or independent) run three ways: device -> device, host -> device and
 * device -> host, with device buffers from cudaMallocPitch or from cudaMalloc
 * with an odd pitch, on the legacy default stream or on a non-blocking stream
 * (and, for device -> device, source and destination on two different
 * streams). The result must equal the host -> host run sample for sample and
 * the float64 oracle's acceptance rule; no byte of the destination outside
 * the samples may change, and the source must be left as it was. The result
 * is read back with a plain cudaMemcpy right after ic_convolve returns, which
 * on a non-blocking stream is only right when ic_convolve returns after
 * completion, as documented.
 *
 * Refusals: the CPU backends refuse device images with IC_ERR_UNSUPPORTED and
 * leave the destination alone; an image whose `device` is not the context's
 * device, or that claims IC_MEM_DEVICE for host memory, gives
 * IC_ERR_INVALID_ARG; a context split across devices (n_devices 2) and a
 * device_memory limit with a host image on one side give IC_ERR_UNSUPPORTED;
 * premultiplied alpha gives IC_ERR_UNSUPPORTED unless the backend
 * premultiplies itself (then it must match the host run).
 *
 * Every backend runs half as many cases again with 16-bit samples (IC_U16:
 * full-range values, border value and bias scaled by 257, even pitches).
 *
 * Without a GPU: exit 77 (SKIPPED). IC_TEST_QUICK=1 (compute-sanitizer) runs
 * a few small cases per backend. ICT_SEED=N and ICT_CASES=N narrow a run.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpu_img.h"
#include "testutil.h"

#ifndef IC_HAVE_CUDA
int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}
#else

#include <cuda_runtime_api.h>

#define SEED 0xDE71CE11A6E2026ull
#define CASES 30
#define QUICK_CASES 3

/* A device image: its own allocation, `bytes` in all, rows `pitch` apart. */
typedef struct dev_img {
    ic_image im;
    uint8_t *p;
    size_t bytes;
} dev_img;

static size_t img_rows(int h, int c, ic_layout l)
{
    return (size_t)h * (size_t)(l == IC_SOA ? c : 1);
}

static size_t img_row_bytes(int w, int c, ic_layout l, ic_sample_type t)
{
    return (size_t)w * (size_t)(l == IC_AOS ? c : 1) * (t == IC_U16 ? 2u : 1u);
}

/* extra < 0: cudaMallocPitch; else cudaMalloc with pitch = row bytes + extra
 * (even for IC_U16). */
static int dev_alloc(dev_img *d, int w, int h, int c, ic_layout l, int extra, int device,
                     cudaStream_t stream, ic_sample_type type)
{
    memset(d, 0, sizeof *d);
    const size_t row = img_row_bytes(w, c, l, type), rows = img_rows(h, c, l);
    if (type == IC_U16 && extra > 0)
        extra &= ~1;
    size_t pitch = row + (size_t)(extra < 0 ? 0 : extra);
    void *p = NULL;
    if (extra < 0) {
        if (cudaMallocPitch(&p, &pitch, row, rows) != cudaSuccess)
            return 1;
    } else if (cudaMalloc(&p, pitch * rows) != cudaSuccess) {
        return 1;
    }
    d->p = (uint8_t *)p;
    d->bytes = pitch * rows;
    /* Row padding is downloaded whole (dev_download); give it a value, so that
     * compute-sanitizer's initcheck sees no read of memory nothing wrote. */
    if (cudaMemset(p, 0xA5, d->bytes) != cudaSuccess)
        return 1;
    if (ic_image_wrap_device(&d->im, p, w, h, c, l, pitch, device, stream) != IC_OK)
        return 1;
    d->im.type = type; /* the pitch already holds the wider rows */
    return 0;
}

static void dev_free(dev_img *d)
{
    if (d->p)
        (void)cudaFree(d->p);
    memset(d, 0, sizeof *d);
}

/* The whole allocation of d, padding included, in a host copy described as a
 * host image with d's pitch. Read with the legacy stream and no other sync. */
static int dev_download(const dev_img *d, uint8_t **mem, ic_image *view)
{
    *mem = (uint8_t *)malloc(d->bytes);
    if (!*mem || cudaMemcpy(*mem, d->p, d->bytes, cudaMemcpyDeviceToHost) != cudaSuccess)
        return 1;
    *view = d->im;
    view->data = *mem;
    view->memory = IC_MEM_HOST;
    view->device = 0;
    view->stream = NULL;
    return 0;
}

/* Fills the device image's rows from a host image of the same layout and
 * shape (the padding keeps whatever was there). */
static int dev_upload(dev_img *d, const ic_image *h)
{
    return cudaMemcpy2D(d->p, d->im.pitch, h->data, h->pitch,
                        img_row_bytes(h->width, h->channels, h->layout, h->type),
                        img_rows(h->height, h->channels, h->layout),
                        cudaMemcpyHostToDevice) != cudaSuccess;
}

/* 1 when every byte of the downloaded image outside its samples is v. */
static int padding_is(const ic_image *v, size_t bytes, uint8_t val, size_t *off)
{
    const size_t row = img_row_bytes(v->width, v->channels, v->layout, v->type);
    for (size_t i = 0; i < bytes; i++)
        if (i % v->pitch >= row && v->data[i] != val) {
            *off = i;
            return 0;
        }
    return 1;
}

enum { DEV_DEV, HOST_DEV, DEV_HOST, N_MODES };
static const char *const kModes[N_MODES] = {"device->device", "host->device", "device->host"};

typedef struct stats {
    int cases, failures, streamed, converted, kept;
} stats;

static int run_case(const char *be, ic_context *ctx, cudaStream_t s1, cudaStream_t s2,
                    uint64_t seed, int index, int quick, ic_sample_type type, stats *st)
{
    ict_rng r;
    ict_rng_seed(&r, ict_mix(seed ^ (uint64_t)type, (uint64_t)index));
    const float unit = type == IC_U16 ? 257.0f : 1.0f; /* border value and bias scale */
    const int maxd = quick ? 40 : 150;
    const int w = ict_range(&r, 0, 4) == 0 ? ict_range(&r, 1, 4) : ict_range(&r, 1, maxd);
    const int h = ict_range(&r, 0, 4) == 0 ? ict_range(&r, 1, 3) : ict_range(&r, 1, maxd);
    const int ch = 1 + index % 4;
    const ic_layout sl = ict_range(&r, 0, 1) ? IC_SOA : IC_AOS;
    const ic_layout dl = ict_range(&r, 0, 2) == 0 ? (sl == IC_AOS ? IC_SOA : IC_AOS) : sl;
    const int big = !quick && strcmp(be, "cuda") == 0 && index % 10 == 9;
    const int kw = big ? 31 : 2 * ict_range(&r, 0, 7) + 1;
    const int kh = big ? 31 : 2 * ict_range(&r, 0, 7) + 1;
    const int ktype = ict_range(&r, 0, ICT_K_COUNT - 1);
    const int mode = index % N_MODES;
    const int on_stream = (index / N_MODES) % 2; /* 0: legacy default stream */
    const int two_streams = mode == DEV_DEV && on_stream && ict_range(&r, 0, 1);
    const int sx = ict_range(&r, -1, 40), dx = ict_range(&r, -1, 40); /* -1: cudaMallocPitch */
    ic_params p;
    ic_params_default(&p);
    p.border = (ic_border)(index % 5);
    p.border_value = unit * (float)ict_range(&r, 0, 255);
    p.bias = unit * (ict_range(&r, 0, 1) ? (float)(ict_uniform(&r) * 20.0 - 10.0) : 0.0f);
    p.correlate = ict_range(&r, 0, 1);
    p.alpha = (ch == 2 || ch == 4) && ict_range(&r, 0, 2) ? IC_ALPHA_KEEP : IC_ALPHA_INDEPENDENT;
    cudaStream_t ss = on_stream ? s1 : NULL, ds = two_streams ? s2 : ss;

    char what[400];
    snprintf(what, sizeof what,
             "%s case %d%s: %s, %dx%d x%d %s->%s, kernel %dx%d type %d, border %s value %g, "
             "bias %g, %s, alpha %s, pitch extra %d/%d, %s; rerun: ICT_SEED=0x%016" PRIx64,
             be, index, type == IC_U16 ? " (16-bit)" : "", kModes[mode], w, h, ch,
             ict_layout_str(sl), ict_layout_str(dl), kw, kh, ktype, ict_border_str(p.border),
             (double)p.border_value, (double)p.bias, p.correlate ? "correlation" : "convolution",
             ict_alpha_str(p.alpha), sx, dx,
             two_streams ? "two streams"
             : on_stream ? "non-blocking stream"
                         : "default stream",
             seed);

    ict_img hsrc, href, hdst;
    dev_img dsrc, ddst;
    ic_kernel k;
    uint8_t *got_mem = NULL, *src_mem = NULL;
    memset(&k, 0, sizeof k);
    memset(&hsrc, 0, sizeof hsrc);
    memset(&href, 0, sizeof href);
    memset(&hdst, 0, sizeof hdst);
    memset(&dsrc, 0, sizeof dsrc);
    memset(&ddst, 0, sizeof ddst);
    int failed = 1;
    const uint8_t poison = (uint8_t)(ict_next(&r) >> 56);
    if (ict_img_alloc_type(&hsrc, w, h, ch, sl, (size_t)ict_range(&r, 0, 5), 0, type) ||
        ict_img_alloc_type(&href, w, h, ch, dl, (size_t)ict_range(&r, 0, 5), 0, type) ||
        ict_img_alloc_type(&hdst, w, h, ch, dl, (size_t)ict_range(&r, 0, 5), 0, type) ||
        dev_alloc(&dsrc, w, h, ch, sl, sx, 0, ss, type) ||
        dev_alloc(&ddst, w, h, ch, dl, dx, 0, ds, type)) {
        printf("FAIL %s: cannot allocate the images\n  %s\n", be, what);
        goto done;
    }
    ict_img_random(&hsrc, &r);
    if (ict_kernel_random(&k, &r, kw, kh, ktype) != IC_OK) {
        printf("FAIL %s: ict_kernel_random\n  %s\n", be, what);
        goto done;
    }
    /* The reference: host images on the same context. */
    ict_img_poison(&href, poison);
    ic_status s = ic_convolve(ctx, &hsrc.im, &href.im, &k, &p);
    if (s != IC_OK) {
        printf("FAIL %s: host ic_convolve: %s: %s\n  %s\n", be, ic_status_str(s), ic_last_error(),
               what);
        goto done;
    }
    /* The same pixels in device memory; padding and destination poisoned. */
    /* cudaMemset may return before it is done, on the legacy default stream,
     * which the non-blocking streams the images carry do not wait for: the
     * device is synchronised before the call (the caller's part of the
     * contract). Without it the poison landed after the kernel's output
     * once on the H100 (cuda-tiled-cached, two streams: 6 vs 105). */
    if (cudaMemset(dsrc.p, poison ^ 0x5A, dsrc.bytes) != cudaSuccess ||
        dev_upload(&dsrc, &hsrc.im) || cudaMemset(ddst.p, poison, ddst.bytes) != cudaSuccess ||
        cudaDeviceSynchronize() != cudaSuccess) {
        printf("FAIL %s: cannot fill the device images\n  %s\n", be, what);
        goto done;
    }
    ict_img_poison(&hdst, poison);
    const ic_image *in = mode == HOST_DEV ? &hsrc.im : &dsrc.im;
    ic_image *out = mode == DEV_HOST ? &hdst.im : &ddst.im;
    s = ic_convolve(ctx, in, out, &k, &p);
    if (s != IC_OK) {
        printf("FAIL %s: %s ic_convolve: %s: %s\n  %s\n", be, kModes[mode], ic_status_str(s),
               ic_last_error(), what);
        goto done;
    }
    ic_image got;
    size_t off = 0;
    if (mode == DEV_HOST) {
        got = hdst.im;
        if (!ict_img_untouched(&hdst, poison, &off)) {
            printf("FAIL %s: byte %zu outside the host destination's samples was written\n  %s\n",
                   be, off, what);
            goto done;
        }
    } else {
        if (dev_download(&ddst, &got_mem, &got)) {
            printf("FAIL %s: cannot read the device destination back\n  %s\n", be, what);
            goto done;
        }
        if (!padding_is(&got, ddst.bytes, poison, &off)) {
            printf("FAIL %s: padding byte %zu of the device destination was written\n  %s\n", be,
                   off, what);
            goto done;
        }
    }
    int x, y, c;
    if (ict_first_diff(&href.im, &got, &x, &y, &c)) {
        printf("FAIL %s: %s differs from host->host at (%d,%d) channel %d: %d vs %d\n  %s\n", be,
               kModes[mode], x, y, c, ict_value(&got, x, y, c), ict_value(&href.im, x, y, c), what);
        goto done;
    }
    if (mode != HOST_DEV) { /* the device source is left as it was */
        ic_image sv;
        if (dev_download(&dsrc, &src_mem, &sv) || ict_first_diff(&hsrc.im, &sv, &x, &y, &c) ||
            !padding_is(&sv, dsrc.bytes, poison ^ 0x5A, &off)) {
            printf("FAIL %s: the device source changed\n  %s\n", be, what);
            goto done;
        }
    }
    ict_cmp cmp;
    const int ok = ict_oracle_check(&hsrc.im, &k, &p, &got, 0, h, &cmp);
    if (ok != 1) {
        printf("FAIL %s: %s output against the oracle\n  %s\n", be, kModes[mode], what);
        if (ok == 0)
            ict_cmp_print(&cmp);
        goto done;
    }
    failed = 0;
    st->streamed += on_stream;
    st->converted += sl != dl && mode != DEV_HOST;
    st->kept += p.alpha == IC_ALPHA_KEEP;
done:
    st->cases++;
    st->failures += failed;
    free(got_mem);
    free(src_mem);
    ic_kernel_free(&k);
    if (hsrc.im.data)
        ict_img_free(&hsrc);
    if (href.im.data)
        ict_img_free(&href);
    if (hdst.im.data)
        ict_img_free(&hdst);
    dev_free(&dsrc);
    dev_free(&ddst);
    return failed;
}

/* ic_convolve(ctx, src, dst) must give `want`; prints a failure otherwise. */
static int expect(const char *what, ic_context *ctx, const ic_image *src, ic_image *dst,
                  const ic_kernel *k, const ic_params *p, ic_status want)
{
    const ic_status s = ic_convolve(ctx, src, dst, k, p);
    if (s == want && (want == IC_OK || ic_last_error()[0]))
        return 0;
    printf("FAIL %s: %s: got %s (%s), want %s with a message\n", ic_context_backend(ctx), what,
           ic_status_str(s), ic_last_error(), ic_status_str(want));
    return 1;
}

static int open_ctx(ic_context **ctx, const char *be, const ic_context_options *o)
{
    if (ic_context_create(ctx, be, o) == IC_OK)
        return 0;
    printf("FAIL %s: ic_context_create: %s\n", be, ic_last_error());
    return 1;
}

/* The refusals (see the top), on backend `be`. */
static int check_refusals(const char *be, int is_cuda)
{
    int bad = 0;
    const int w = 37, h = 11, ch = 4;
    dev_img ds, dd, dd_soa;
    ict_img hs, hd;
    ic_kernel k, kb;
    memset(&k, 0, sizeof k);
    memset(&kb, 0, sizeof kb);
    if (dev_alloc(&ds, w, h, ch, IC_AOS, -1, 0, NULL, IC_U8) ||
        dev_alloc(&dd, w, h, ch, IC_AOS, -1, 0, NULL, IC_U8) ||
        dev_alloc(&dd_soa, w, h, ch, IC_SOA, 3, 0, NULL, IC_U8) ||
        ict_img_alloc(&hs, w, h, ch, IC_AOS, 0, 0) || ict_img_alloc(&hd, w, h, ch, IC_AOS, 0, 0) ||
        ic_kernel_parse(&k, "sobel-x") != IC_OK || ic_kernel_parse(&kb, "gaussian:5") != IC_OK) {
        printf("FAIL %s: refusal set-up\n", be);
        return 1;
    }
    ict_rng r;
    ict_rng_seed(&r, 7);
    ict_img_random(&hs, &r);
    (void)dev_upload(&ds, &hs.im);
    ic_params keep, pre;
    ic_params_default(&keep);
    keep.alpha = IC_ALPHA_KEEP;
    ic_params_default(&pre);
    pre.alpha = IC_ALPHA_PREMULTIPLY;
    ic_context *ctx = NULL;
    if (open_ctx(&ctx, be, NULL)) {
        bad = 1;
        goto out;
    }
    if (!is_cuda) {
        ict_img_poison(&hd, 0x33);
        bad |= expect("device source", ctx, &ds.im, &hd.im, &k, &keep, IC_ERR_UNSUPPORTED);
        bad |= expect("device destination", ctx, &hs.im, &dd.im, &k, &keep, IC_ERR_UNSUPPORTED);
        bad |= expect("device images", ctx, &ds.im, &dd.im, &k, &keep, IC_ERR_UNSUPPORTED);
        size_t off;
        if (!ict_img_untouched(&hd, 0x33, &off) || *ic_image_at(&hd.im, 0, 0, 0) != 0x33) {
            printf("FAIL %s: a refused call wrote the host destination\n", be);
            bad = 1;
        }
        goto out;
    }
    {
        /* wrong ordinal: the image claims the device after the context's */
        ic_image wrong = ds.im;
        wrong.device = 1;
        bad |= expect("source on another device ordinal", ctx, &wrong, &dd.im, &k, &keep,
                      IC_ERR_INVALID_ARG);
        wrong = dd.im;
        wrong.device = 1;
        bad |= expect("destination on another device ordinal", ctx, &ds.im, &wrong, &k, &keep,
                      IC_ERR_INVALID_ARG);
        /* host memory flagged as device memory */
        ic_image fake = hd.im;
        fake.memory = IC_MEM_DEVICE;
        bad |= expect("host memory flagged IC_MEM_DEVICE", ctx, &ds.im, &fake, &k, &keep,
                      IC_ERR_INVALID_ARG);
        if (ic_cuda_device_count() >= 2 && cudaSetDevice(1) == cudaSuccess) {
            void *p1 = NULL;
            if (cudaMalloc(&p1, ds.bytes) == cudaSuccess) {
                ic_image other = ds.im;
                other.data = (uint8_t *)p1; /* memory of device 1 that says device 0 */
                bad |= expect("device-1 memory flagged as device 0", ctx, &other, &dd.im, &k, &keep,
                              IC_ERR_INVALID_ARG);
                (void)cudaFree(p1);
            }
            (void)cudaSetDevice(0);
        }
        /* premultiplied alpha: refused, or right when the backend does it itself */
        const ic_status s = ic_convolve(ctx, &ds.im, &dd.im, &kb, &pre);
        if (s == IC_OK) {
            ic_image got;
            uint8_t *mem = NULL;
            int x, y, c;
            if (ic_convolve(ctx, &hs.im, &hd.im, &kb, &pre) != IC_OK ||
                dev_download(&dd, &mem, &got) || ict_first_diff(&hd.im, &got, &x, &y, &c)) {
                printf("FAIL %s: premultiplied device images differ from host images\n", be);
                bad = 1;
            }
            free(mem);
        } else if (s != IC_ERR_UNSUPPORTED) {
            printf("FAIL %s: premultiplied device images gave %s (%s)\n", be, ic_status_str(s),
                   ic_last_error());
            bad = 1;
        }
    }
    ic_context_free(ctx);
    ctx = NULL;
    {
        /* split across two states of device 0 */
        ic_context_options o;
        memset(&o, 0, sizeof o);
        o.n_devices = 2;
        if (open_ctx(&ctx, be, &o)) {
            bad = 1;
            goto out;
        }
        bad |= expect("device images with n_devices 2", ctx, &ds.im, &dd.im, &k, &keep,
                      IC_ERR_UNSUPPORTED);
        ic_context_free(ctx);
        ctx = NULL;
        /* a device_memory limit: fine for two device images of one layout */
        memset(&o, 0, sizeof o);
        o.device_memory = 1 << 20;
        if (open_ctx(&ctx, be, &o)) {
            bad = 1;
            goto out;
        }
        bad |= expect("device->device under a limit", ctx, &ds.im, &dd.im, &k, &keep, IC_OK);
        bad |= expect("host->device under a limit", ctx, &hs.im, &dd.im, &k, &keep,
                      IC_ERR_UNSUPPORTED);
        bad |= expect("device AoS->SoA under a limit", ctx, &ds.im, &dd_soa.im, &k, &keep,
                      IC_ERR_UNSUPPORTED);
    }
out:
    ic_context_free(ctx);
    ic_kernel_free(&k);
    ic_kernel_free(&kb);
    dev_free(&ds);
    dev_free(&dd);
    dev_free(&dd_soa);
    if (hs.im.data)
        ict_img_free(&hs);
    if (hd.im.data)
        ict_img_free(&hd);
    return bad;
}

int main(void)
{
    char why[256];
    if (ic_cuda_device_count() < 1) {
        printf("SKIPPED: no CUDA device\n");
        return 77;
    }
    int quick, cases;
    uint64_t seed;
    ict_run_env(&quick, &seed, SEED, &cases, CASES, QUICK_CASES);
    if (cudaSetDevice(0) != cudaSuccess) {
        printf("FAIL: cudaSetDevice(0)\n");
        return 1;
    }
    cudaStream_t s1 = NULL, s2 = NULL;
    if (cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking) != cudaSuccess ||
        cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking) != cudaSuccess) {
        printf("FAIL: cudaStreamCreateWithFlags\n");
        return 1;
    }
    int failures = 0, cuda_tested = 0;
    for (int b = 0; b < ic_backend_count(); b++) {
        ic_backend_info info;
        if (ic_backend_get(b, &info) != IC_OK)
            continue;
        const int is_cuda = strncmp(info.name, "cuda", 4) == 0;
        if (!ict_backend_usable(info.name, why, sizeof why)) {
            printf("%-18s not tested: %s\n", info.name, why);
            continue;
        }
        const int rf = check_refusals(info.name, is_cuda);
        failures += rf;
        if (!is_cuda) {
            printf("%-18s refuses device images: %s\n", info.name, rf ? "FAILED" : "ok");
            continue;
        }
        cuda_tested++;
        ic_context *ctx = NULL;
        if (open_ctx(&ctx, info.name, NULL)) {
            failures++;
            continue;
        }
        stats st;
        memset(&st, 0, sizeof st);
        for (int i = 0; i < cases; i++)
            run_case(info.name, ctx, s1, s2, seed, i, quick, IC_U8, &st);
        for (int i = 0; i < (cases + 1) / 2; i++)
            run_case(info.name, ctx, s1, s2, seed, i, quick, IC_U16, &st);
        ic_context_free(ctx);
        failures += st.failures;
        printf("%-18s %d/%d cases equal to host images (%d on a non-blocking stream, %d "
               "converted on the device, %d alpha kept); refusals %s\n",
               info.name, st.cases - st.failures, st.cases, st.streamed, st.converted, st.kept,
               rf ? "FAILED" : "ok");
    }
    (void)cudaStreamDestroy(s1);
    (void)cudaStreamDestroy(s2);
    if (cuda_tested == 0) {
        printf("FAIL: no CUDA backend was usable although a device is present\n");
        return 1;
    }
    printf("%s: %d failure(s)\n", failures ? "FAIL" : "PASS", failures);
    return failures ? 1 : 0;
}

#endif
