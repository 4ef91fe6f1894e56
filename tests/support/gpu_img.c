/*
 * gpu_img.c - test images in test-owned or page-locked memory (gpu_img.h).
 */
#include "gpu_img.h"

#include <string.h>

#ifdef IC_HAVE_CUDA
#include <cuda_runtime_api.h>
#endif

int ict_img_alloc_type(ict_img *m, int w, int h, int c, ic_layout l, size_t extra, int pinned,
                       ic_sample_type type)
{
    memset(m, 0, sizeof *m);
    m->pinned = pinned;
    if (!pinned) {
        if (ict_buf_alloc_type(&m->buf, w, h, c, l, extra, type))
            return 1;
        m->im = m->buf.img;
        return 0;
    }
#ifdef IC_HAVE_CUDA
    const size_t size = type == IC_U16 ? 2u : 1u;
    extra += extra % size; /* 16-bit rows start on even addresses */
    const size_t row = (size_t)w * (size_t)(l == IC_AOS ? c : 1) * size + extra;
    const size_t rows = (size_t)h * (size_t)(l == IC_SOA ? c : 1);
    void *p = NULL;
    if (cudaHostAlloc(&p, row * rows, cudaHostAllocDefault) != cudaSuccess)
        return 1;
    m->pin = (uint8_t *)p;
    if (ic_image_wrap(&m->im, m->pin, w, h, c, l, row) != IC_OK)
        return 1;
    m->im.type = type; /* the pitch already holds the wider rows */
    return 0;
#else
    (void)type;
    return 1;
#endif
}

int ict_img_alloc(ict_img *m, int w, int h, int c, ic_layout l, size_t extra, int pinned)
{
    return ict_img_alloc_type(m, w, h, c, l, extra, pinned, IC_U8);
}

void ict_img_free(ict_img *m)
{
#ifdef IC_HAVE_CUDA
    if (m->pinned)
        cudaFreeHost(m->pin);
    else
#endif
        ict_buf_free(&m->buf);
    memset(m, 0, sizeof *m);
}

void ict_img_random(ict_img *m, ict_rng *r)
{
    if (!m->pinned) {
        ict_buf_random(&m->buf, r, 0);
        return;
    }
    const size_t nb = ic_image_size_bytes(&m->im);
    for (size_t i = 0; i < nb; i++)
        m->pin[i] = (uint8_t)(ict_next(r) >> 56);
}

void ict_img_poison(ict_img *m, uint8_t v)
{
    if (m->pinned)
        memset(m->pin, v, ic_image_size_bytes(&m->im));
    else
        ict_buf_fill(&m->buf, v);
}

int ict_img_untouched(const ict_img *m, uint8_t v, size_t *off)
{
    if (!m->pinned)
        return ict_buf_padding_is(&m->buf, v, off);
    const size_t rb = ic_image_row_bytes(&m->im), n = ic_image_size_bytes(&m->im);
    for (size_t i = 0; i < n; i++)
        if (i % m->im.pitch >= rb && m->pin[i] != v) {
            *off = i;
            return 0;
        }
    return 1;
}

int ict_first_diff(const ic_image *a, const ic_image *b, int *x, int *y, int *c)
{
    for (*y = 0; *y < a->height; (*y)++)
        for (*x = 0; *x < a->width; (*x)++)
            for (*c = 0; *c < a->channels; (*c)++)
                if (ict_value(a, *x, *y, *c) != ict_value(b, *x, *y, *c))
                    return 1;
    return 0;
}
