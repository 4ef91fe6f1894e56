/* rows_k7_sep_s1.cu - the `rows` kernels (rows_impl.cuh) for 7x7 at rank 1 and 2,
 * one sample per pixel (1 channel or SoA planes). */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 7, 1, 1);
IC_ROWS_LAUNCH_R(template, 7, 1, 2);
