/* chain.h - internal: the steps of a chain after fusion and the device
 * engine that runs them on a GPU backend (chain.c, chain_device.c). */
#ifndef IC_DISPATCH_CHAIN_H
#define IC_DISPATCH_CHAIN_H

#include "dispatch/dispatch.h"

/* One step of a chain after fusion: correlation weights (divisor folded in,
 * flipped unless correlating) and what follows the weighted sum. */
typedef struct ic__chain_step {
    float *w;
    int kw, kh;
    int magnitude;  /* sqrt(sum^2 + (sum with transposed weights)^2) */
    int abs;        /* |sum| */
    int first, end; /* the input kernels [first, end) it stands for */
    double sum;     /* of the weights */
} ic__chain_step;

/* 1 when chains on ctx run in the device engine: its backend has chain_ops
 * (backend.h) and the context runs on one device (*device, *ops). Else 0 and
 * *why says why the host engine runs them. */
int ic__chain_device_choose(const ic_context *ctx, const ic_chain_ops **ops, int *device,
                            const char **why);

/* The steps s[0..n) from src into dst in the device engine (images checked
 * as ic_convolve checks them; host or device memory on `device`) under p with
 * the chain's alpha mode (IC_ALPHA_AUTO resolved). */
ic_status ic__chain_device_run(ic_context *ctx, const ic_chain_ops *ops, int device,
                               const ic_image *src, ic_image *dst, const ic__chain_step *s, int n,
                               const ic_params *p, ic_alpha alpha);

#endif
