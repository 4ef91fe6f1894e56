/* rows_k9_full.cu - the `rows` kernels (rows_impl.cuh) for 9x9 at full rank (RANK 0). */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_C(template, 9, 0);
