/* rows_ring_k15.cu - the `rows` kernels for a separable 15x15 at many rows a
 * thread (rows_ring.cuh), every channel step. */
#include "cuda/fast/rows_ring.cuh"

IC_ROWS_LAUNCH_RING(template, 15);
