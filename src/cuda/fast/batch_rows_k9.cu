/* batch_rows_k9.cu - the batched rows kernels (batch_impl.cuh) for 9x9. */
#include "cuda/fast/batch_impl.cuh"

IC_BATCH_ROWS(template, 9);
