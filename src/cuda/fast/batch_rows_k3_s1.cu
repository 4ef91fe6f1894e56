/* batch_rows_k3_s1.cu - the batched rows kernels (batch_impl.cuh) for 3x3,
 * one sample per pixel (1 channel or SoA planes). */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 3, 1);
