/* rows_k7_sep_s2.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at rank 1 and 2,
 * grey + alpha. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 7, 2, 1);
IC_ROWS_LAUNCH_R(template, 7, 2, 2);
