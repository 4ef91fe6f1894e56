/* direct_f32_sq.cu - the fully unrolled direct kernels (direct_impl.cuh) for
 * float32 samples: 3x3, 5x5, 7x7 and 9x9. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_ONE(template, 3, 3, float);
IC_DIRECT_LAUNCH_ONE(template, 5, 5, float);
IC_DIRECT_LAUNCH_ONE(template, 7, 7, float);
IC_DIRECT_LAUNCH_ONE(template, 9, 9, float);
