/*
 * chain_ops.h - the pointwise CUDA work of the device chain engine
 * (internal): samples to float32 planes, the magnitude and |sum| combine, and
 * the rounded store, behind the backend table's ic_chain_ops (backend.h).
 */
#ifndef IC_CUDA_CHAIN_OPS_H
#define IC_CUDA_CHAIN_OPS_H

#include "dispatch/backend.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The entries of ic_chain_ops for CUDA backends (chain_ops.cu). */
extern const ic_chain_ops ic__cuda_chain_ops;

#ifdef __cplusplus
}
#endif

#endif /* IC_CUDA_CHAIN_OPS_H */
