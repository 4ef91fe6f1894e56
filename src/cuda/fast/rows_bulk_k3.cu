/* rows_bulk_k3.cu - the `rows` kernels for a separable 3x3 at many rows a warp
 * on sm_90 and later (rows_bulk.cuh), every channel step. */
#include "cuda/fast/rows_bulk.cuh"

IC_ROWS_LAUNCH_BULK(template, 3);
