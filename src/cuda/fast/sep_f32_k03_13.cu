/* sep_f32_k03_13.cu - the fused separable kernels (sep_impl.cuh) for float32 samples, sizes 3..13 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 3, 13, float);
