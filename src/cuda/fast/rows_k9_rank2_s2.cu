/* rows_k9_rank2_s2.cu - the `rows` kernels (rows_impl.cuh) for 9x9 at rank 2,
 * grey + alpha. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 9, 2, 2);
