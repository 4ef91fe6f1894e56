/* rows_k7_full_s4.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at full rank (RANK 0),
 * RGBA. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 7, 4, 0);
