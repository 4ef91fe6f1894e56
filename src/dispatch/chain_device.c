/*
 * chain_device.c - the device engine of chains, magnitudes and |sum|
 * (docs/definitions.md#chains) on a GPU backend: the source goes to float32
 * device planes once (uploaded when it is a host image), every weighted sum
 * runs as a float32 device-to-device ic_convolve on the context's backend,
 * the magnitude and |sum| combine and the final rounding into the
 * destination's type run in the backend's chain_ops, and a host destination
 * is downloaded once. Device memory: three float32 images at most (the
 * current planes, the next, and gy of a magnitude or the host staging).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/error.h"
#include "dispatch/chain.h"

int ic__chain_device_choose(const ic_context *ctx, const ic_chain_ops **ops, int *device,
                            const char **why)
{
    const ic_backend *be = NULL;
    const char *name = ic_context_backend(ctx);
    for (int i = 0; i < ic_backend_count() && !be; i++) {
        const ic_backend *b = ic__backend_at(i);
        if (b && strcmp(b->name, name) == 0)
            be = b;
    }
    const unsigned need = IC_CAP_F32 | IC_CAP_DEVICE_IMAGES;
    if (!be || !be->chain_ops || (be->caps & need) != need) {
        *why = "the backend has no device engine (it does not filter float32 device images)";
        return 0;
    }
    if (ic__context_device(ctx, device, why) != IC_OK)
        return 0;
    *ops = be->chain_ops;
    *why = "";
    return 1;
}

/* The engine's device buffers and the images that describe them. */
typedef struct dev_run {
    ic_context *ctx;
    const ic_chain_ops *ops;
    int device, width, height, channels;
    size_t pitch; /* of a float plane's rows */
    void *stream;
    float *cur, *nxt, *tmp; /* channels planes each; tmp NULL when not needed */
    char err[256];
} dev_run;

/* planes [0, n) of buf as one float32 SoA device image. */
static ic_image planes_image(const dev_run *r, float *buf, int c0, int n)
{
    ic_image im;
    memset(&im, 0, sizeof im);
    im.width = r->width;
    im.height = r->height;
    im.channels = n;
    im.layout = IC_SOA;
    im.type = IC_F32;
    im.pitch = r->pitch;
    im.data = (uint8_t *)buf + (size_t)c0 * (size_t)r->height * r->pitch;
    im.memory = IC_MEM_DEVICE;
    im.device = r->device;
    im.stream = r->stream;
    return im;
}

/* A tightly packed image of like's shape, layout and type in buf. */
static ic_image staged_image(const dev_run *r, const ic_image *like, float *buf)
{
    ic_image im = *like;
    im.pitch = ic_image_row_bytes(like);
    im.data = (uint8_t *)buf;
    im.owner = 0;
    im.memory = IC_MEM_DEVICE;
    im.device = r->device;
    im.stream = r->stream;
    return im;
}

/* Rows of an image's data: height, or channels * height for planes. */
static size_t image_rows(const ic_image *im)
{
    return (size_t)im->height * (size_t)(im->layout == IC_SOA ? im->channels : 1);
}

/* One weighted sum with correlation weights w (kw x kh) of the first
 * `filtered` planes of in into out; outside[c] is plane c's value outside
 * the image under a constant border. */
static ic_status weighted_sum(dev_run *r, const float *in, float *out, float *w, int kw, int kh,
                              int filtered, const float *outside, const ic_params *p)
{
    ic_kernel k;
    memset(&k, 0, sizeof k);
    k.width = kw;
    k.height = kh;
    k.coef = w;
    k.divisor = 1.0;
    snprintf(k.name, sizeof k.name, "chain step");
    ic_params q = *p;
    q.correlate = 1;
    q.bias = 0.0f;
    q.abs = 0;
    q.alpha = IC_ALPHA_INDEPENDENT;
    /* one call for every plane unless their outside values differ */
    int same = 1;
    for (int c = 1; c < filtered; c++)
        same &= outside[c] == outside[0];
    const int per = p->border == IC_BORDER_CONSTANT && !same;
    for (int c = 0; c < filtered; c += per ? 1 : filtered) {
        const int n = per ? 1 : filtered;
        ic_image a = planes_image(r, (float *)in, c, n), b = planes_image(r, out, c, n);
        q.border_value = outside[c];
        const ic_status st = ic_convolve(r->ctx, &a, &b, &k, &q);
        if (st != IC_OK)
            return st; /* ic_last_error() already says why */
    }
    return IC_OK;
}

/* The transpose of a square kw x kw weight array (NULL when out of memory). */
static float *transposed(const float *w, int kw)
{
    float *t = malloc((size_t)kw * (size_t)kw * sizeof *t);
    for (int j = 0; t && j < kw; j++)
        for (int i = 0; i < kw; i++)
            t[(size_t)i * kw + j] = w[(size_t)j * kw + i];
    return t;
}

#define OPS_CHECK(call)                                                                            \
    do {                                                                                           \
        const ic_status s_ = (call);                                                               \
        if (s_ != IC_OK) {                                                                         \
            st = ic_fail_msg(s_, r.err);                                                           \
            goto done;                                                                             \
        }                                                                                          \
    } while (0)

ic_status ic__chain_device_run(ic_context *ctx, const ic_chain_ops *ops, int device,
                               const ic_image *src, ic_image *dst, const ic__chain_step *s, int n,
                               const ic_params *p, ic_alpha alpha)
{
    if ((src->memory == IC_MEM_DEVICE && src->device != device) ||
        (dst->memory == IC_MEM_DEVICE && dst->device != device))
        return ic_fail(IC_ERR_INVALID_ARG, "device image on device %d, the context's is %d",
                       src->memory == IC_MEM_DEVICE && src->device != device ? src->device
                                                                             : dst->device,
                       device);
    dev_run r;
    memset(&r, 0, sizeof r);
    r.ctx = ctx;
    r.ops = ops;
    r.device = device;
    r.width = src->width;
    r.height = src->height;
    r.channels = src->channels;
    r.pitch = ((size_t)src->width * sizeof(float) + 255u) & ~(size_t)255u; /* coalesced rows */
    r.stream = src->memory == IC_MEM_DEVICE   ? src->stream
               : dst->memory == IC_MEM_DEVICE ? dst->stream
                                              : NULL;
    const int C = src->channels, ac = C - 1;
    const int premul = alpha == IC_ALPHA_PREMULTIPLY && (C == 2 || C == 4);
    const int keep = alpha == IC_ALPHA_KEEP && (C == 2 || C == 4);
    const int filtered = keep ? C - 1 : C;
    int magnitude = 0;
    for (int i = 0; i < n; i++)
        magnitude |= s[i].magnitude;
    const int need_tmp = magnitude || src->memory == IC_MEM_HOST || dst->memory == IC_MEM_HOST;
    const size_t bytes = r.pitch * (size_t)r.height * (size_t)C; /* >= a packed image of any type */
    ic_status st = IC_OK;
    float *wt = NULL;
    OPS_CHECK(ops->alloc(device, bytes, (void **)&r.cur, r.err, sizeof r.err));
    OPS_CHECK(ops->alloc(device, bytes, (void **)&r.nxt, r.err, sizeof r.err));
    if (need_tmp)
        OPS_CHECK(ops->alloc(device, bytes, (void **)&r.tmp, r.err, sizeof r.err));

    /* the source, uploaded once when on the host, as float planes */
    const ic_image *in = src;
    ic_image stage;
    memset(&stage, 0, sizeof stage);
    if (src->memory == IC_MEM_HOST) {
        stage = staged_image(&r, src, r.tmp);
        OPS_CHECK(ops->copy(device, stage.data, stage.pitch, src->data, src->pitch,
                            ic_image_row_bytes(src), image_rows(src), r.stream, r.err,
                            sizeof r.err));
        in = &stage;
    }
    OPS_CHECK(ops->load(in, r.cur, r.pitch, premul, r.stream, r.err, sizeof r.err));
    if (keep) /* alpha stays in the last plane of both buffers: no step writes it */
        OPS_CHECK(ops->copy(device, planes_image(&r, r.nxt, ac, 1).data, r.pitch,
                            planes_image(&r, r.cur, ac, 1).data, r.pitch,
                            (size_t)r.width * sizeof(float), (size_t)r.height, r.stream, r.err,
                            sizeof r.err));

    const float max = (float)ic_sample_max(src->type), v = p->border_value;
    float outside[4];
    for (int c = 0; c < C; c++)
        outside[c] = premul ? (c == ac ? v / max : v * (v / max)) : v;
    for (int i = 0; i < n; i++) {
        st = weighted_sum(&r, r.cur, r.nxt, s[i].w, s[i].kw, s[i].kh, filtered, outside, p);
        if (st == IC_OK && s[i].magnitude) {
            free(wt);
            wt = transposed(s[i].w, s[i].kw);
            if (!wt) {
                st = ic_fail(IC_ERR_NOMEM, "out of memory");
                goto done;
            }
            st = weighted_sum(&r, r.cur, r.tmp, wt, s[i].kw, s[i].kh, filtered, outside, p);
        }
        if (st != IC_OK)
            goto done;
        if (s[i].magnitude || s[i].abs)
            OPS_CHECK(ops->combine(device, r.nxt, s[i].magnitude ? r.tmp : NULL, r.pitch, r.width,
                                   r.height, filtered, r.stream, r.err, sizeof r.err));
        float *t = r.cur;
        r.cur = r.nxt;
        r.nxt = t;
    }

    /* rounded into the destination's type, downloaded once when on the host */
    if (dst->memory == IC_MEM_DEVICE) {
        OPS_CHECK(
            ops->store(r.cur, r.pitch, dst, p->bias, premul, keep, r.stream, r.err, sizeof r.err));
    } else {
        const ic_image out = staged_image(&r, dst, r.tmp);
        OPS_CHECK(
            ops->store(r.cur, r.pitch, &out, p->bias, premul, keep, r.stream, r.err, sizeof r.err));
        OPS_CHECK(ops->copy(device, dst->data, dst->pitch, out.data, out.pitch,
                            ic_image_row_bytes(dst), image_rows(dst), r.stream, r.err,
                            sizeof r.err));
    }
done:
    free(wt);
    ops->release(device, r.cur);
    ops->release(device, r.nxt);
    ops->release(device, r.tmp);
    return st;
}
