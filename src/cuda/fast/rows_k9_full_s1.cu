/* rows_k9_full_s1.cu - the `rows` kernels (rows_impl.cuh) for 9x9 at full rank (RANK 0),
 * one sample per pixel (1 channel or SoA planes). */
#include "cuda/fast/rows_impl.cuh"

IC_ROWS_LAUNCH_R(template, 9, 1, 0);
