/* batch_rows_k3_s2.cu - the batched rows kernels (batch_impl.cuh) for 3x3,
 * grey + alpha. */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 3, 2);
