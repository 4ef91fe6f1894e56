/*
 * seq.c - backend "seq": seed 004's sequential algorithm, kept plain and
 * readable as the baseline of the performance study. First pad the image by
 * the kernel radius with the border mode (seed 004 "Padding"), then for every
 * channel, row and column accumulate the weighted sum of the window in float32
 * and round it to a sample (uint8 or uint16, the job's type; float32 samples
 * get the sum itself).
 */
#include <stdlib.h>

#include "dispatch/backend.h"
#include "core/border.h"

/* One channel plane padded by (rx, ry) on each side, as float samples. */
typedef struct padded {
    int width, height; /* padded size */
    float *data;
} padded;

static ic_status pad_channel(const ic_job *job, int c, padded *p)
{
    const ic_image *src = job->src;
    const int rx = job->kw / 2, ry = job->kh / 2;
    p->width = src->width + 2 * rx;
    p->height = src->height + 2 * ry;
    p->data = malloc((size_t)p->width * (size_t)p->height * sizeof *p->data);
    if (!p->data)
        return IC_ERR_NOMEM;
    for (int y = 0; y < p->height; y++) {
        const int sy = ic_border_map(y - ry, src->height, (int)job->border);
        for (int x = 0; x < p->width; x++) {
            const int sx = ic_border_map(x - rx, src->width, (int)job->border);
            p->data[(size_t)y * p->width + x] =
                (sx < 0 || sy < 0) ? job->border_value : ic_image_getf(src, sx, sy, c);
        }
    }
    return IC_OK;
}

static ic_status seq_run(void *state, const ic_job *job, ic_timing *t, char *err, size_t errlen)
{
    (void)state;
    (void)t;
    (void)err;
    (void)errlen;
    const ic_image *src = job->src;
    for (int c = 0; c < src->channels; c++) {
        padded p;
        ic_status st = pad_channel(job, c, &p);
        if (st != IC_OK)
            return st;
        for (int y = 0; y < src->height; y++)
            for (int x = 0; x < src->width; x++) {
                float acc = 0.0f;
                for (int ky = 0; ky < job->kh; ky++)
                    for (int kx = 0; kx < job->kw; kx++)
                        acc += p.data[(size_t)(y + ky) * p.width + (x + kx)] *
                               job->w[(size_t)ky * job->kw + kx];
                if (job->dst->type == IC_F32)
                    ic_image_setf(job->dst, x, y, c, acc + job->bias);
                else if (job->dst->type == IC_U16)
                    *(uint16_t *)(void *)ic_image_at(job->dst, x, y, c) =
                        ic_round_u16(acc + job->bias);
                else
                    *ic_image_at(job->dst, x, y, c) = ic_round_u8(acc + job->bias);
            }
        free(p.data);
    }
    return IC_OK;
}

/* One padded float plane at a time (pad_channel). */
static uint64_t seq_host_bytes(const ic_job *job)
{
    return ((uint64_t)job->src->width + (uint64_t)job->kw - 1u) *
           ((uint64_t)job->src->height + (uint64_t)job->kh - 1u) * sizeof(float);
}

const ic_backend ic_backend_seq = {
    .name = "seq",
    .summary = "the plain reference: pads the image, then convolves pixel by pixel on one core",
    .is_gpu = 0,
    .rank = 1,
    .probe = NULL,
    .open = NULL,
    .close = NULL,
    .run = seq_run,
    .host_bytes = seq_host_bytes,
    .caps = IC_CAP_U16 | IC_CAP_F32,
};
