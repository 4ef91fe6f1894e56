/* direct_sq9.cu - the fully unrolled direct kernel (direct_impl.cuh) for 9x9. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_ONE(template, 9, 9, uint8_t);
