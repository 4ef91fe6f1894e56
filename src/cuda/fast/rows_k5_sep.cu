/* rows_k5_sep.cu - the `rows` kernels (rows_impl.cuh) for 5x5 at rank 1 and 2. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 5, 1);
IC_ROWS_LAUNCH_C(template, 5, 2);
