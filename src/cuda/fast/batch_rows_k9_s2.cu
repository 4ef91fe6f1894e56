/* batch_rows_k9_s2.cu - the batched rows kernels (batch_impl.cuh) for 9x9,
 * grey + alpha. */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 9, 2);
