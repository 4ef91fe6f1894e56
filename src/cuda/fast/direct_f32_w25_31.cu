/* direct_f32_w25_31.cu - direct kernels (direct_impl.cuh) for float32 samples, widths 25..31 odd, run-time height. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_KW(template, 25, 31, float);
