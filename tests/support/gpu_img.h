/*
 * gpu_img.h - test images for the GPU tests: test-owned memory with guard
 * bytes (ict_buf) or page-locked memory (cudaHostAlloc), which the async
 * transfer path copies by DMA directly; and a sample-by-sample comparison.
 * Shared by tests/gpu/test_gpu_async.c and test_gpu_multi.c. The pinned
 * variant needs CUDA (IC_HAVE_CUDA); without it ict_img_alloc refuses it.
 */
#ifndef ICT_GPU_IMG_H
#define ICT_GPU_IMG_H

#include <stddef.h>
#include <stdint.h>

#include "testutil.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct ict_img {
    ict_buf buf; /* when !pinned */
    ic_image im;
    uint8_t *pin; /* when pinned: cudaHostAlloc'd rows of `extra` padding bytes */
    int pinned;
} ict_img;

/* Allocates a w x h x c image in layout l with `extra` bytes after each row;
 * pinned: page-locked. Returns 0 on success. */
int ict_img_alloc(ict_img *m, int w, int h, int c, ic_layout l, size_t extra, int pinned);
/* The same with samples of `type` (IC_U16: pitch kept even). */
int ict_img_alloc_type(ict_img *m, int w, int h, int c, ic_layout l, size_t extra, int pinned,
                       ic_sample_type type);
void ict_img_free(ict_img *m);
/* Random samples (pinned: random padding too; test-owned: ict_buf_random). */
void ict_img_random(ict_img *m, ict_rng *r);
/* Sets every byte (samples, padding, guards) to v. */
void ict_img_poison(ict_img *m, uint8_t v);
/* 1 when every byte outside the samples still holds v (guard bytes too for
 * test-owned images, row padding for pinned ones); else 0 and *off. */
int ict_img_untouched(const ict_img *m, uint8_t v, size_t *off);
/* First differing sample of two equal-shaped images (1, and where), or 0. */
int ict_first_diff(const ic_image *a, const ic_image *b, int *x, int *y, int *c);

#ifdef __cplusplus
}
#endif

#endif /* ICT_GPU_IMG_H */
