/* rows_k7_sep_s4.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at rank 1 and 2,
 * RGBA. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 7, 4, 1);
IC_ROWS_LAUNCH_R(template, 7, 4, 2);
