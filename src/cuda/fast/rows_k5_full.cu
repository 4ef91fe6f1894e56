/* rows_k5_full.cu - the `rows` kernels (rows_impl.cuh) for 5x5 at full rank (RANK 0). */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 5, 0);
