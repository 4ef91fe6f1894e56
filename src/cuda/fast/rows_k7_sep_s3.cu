/* rows_k7_sep_s3.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at rank 1 and 2,
 * RGB. */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 7, 3, 1);
IC_ROWS_LAUNCH_R(template, 7, 3, 2);
