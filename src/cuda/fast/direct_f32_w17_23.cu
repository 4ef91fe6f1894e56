/* direct_f32_w17_23.cu - direct kernels (direct_impl.cuh) for float32 samples, widths 17..23 odd, run-time height. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_KW(template, 17, 23, float);
