/* batch_rows_k7_s2.cu - the batched rows kernels (batch_impl.cuh) for 7x7,
 * grey + alpha. */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 7, 2);
