/* direct_sq3_7.cu - the fully unrolled direct kernels (direct_impl.cuh) for 3x3, 5x5 and 7x7. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_ONE(template, 3, 3, uint8_t);
IC_DIRECT_LAUNCH_ONE(template, 5, 5, uint8_t);
IC_DIRECT_LAUNCH_ONE(template, 7, 7, uint8_t);
