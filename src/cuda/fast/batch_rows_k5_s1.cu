/* batch_rows_k5_s1.cu - the batched rows kernels (batch_impl.cuh) for 5x5,
 * one sample per pixel (1 channel or SoA planes). */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 5, 1);
