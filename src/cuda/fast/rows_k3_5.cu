/* rows_k3_5.cu - the `rows` kernels (rows_impl.cuh) for 3x3 and 5x5, every rank. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 3, 0);
IC_ROWS_LAUNCH_C(template, 3, 1);
IC_ROWS_LAUNCH_C(template, 3, 2);
IC_ROWS_LAUNCH_C(template, 5, 0);
IC_ROWS_LAUNCH_C(template, 5, 1);
IC_ROWS_LAUNCH_C(template, 5, 2);
