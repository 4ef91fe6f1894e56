/* batch_rows_k5_s2.cu - the batched rows kernels (batch_impl.cuh) for 5x5,
 * grey + alpha. */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 5, 2);
