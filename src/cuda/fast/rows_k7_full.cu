/* rows_k7_full.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at full rank (RANK 0). */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 7, 0);
