/* rows_k7_sep.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at rank 1 and 2. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 7, 1);
IC_ROWS_LAUNCH_C(template, 7, 2);
