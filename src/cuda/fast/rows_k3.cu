/* rows_k3.cu - the `rows` kernels (rows_impl.cuh) for 3x3, every rank. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 3, 0);
IC_ROWS_LAUNCH_C(template, 3, 1);
IC_ROWS_LAUNCH_C(template, 3, 2);
