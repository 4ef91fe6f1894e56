/* rows_k9_rank2.cu - the `rows` kernels (rows_impl.cuh) for 9x9 at rank 2. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 9, 2);
