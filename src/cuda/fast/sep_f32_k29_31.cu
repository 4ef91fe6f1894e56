/* sep_f32_k29_31.cu - the fused separable kernels (sep_impl.cuh) for float32 samples, sizes 29..31 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 29, 31, float);
