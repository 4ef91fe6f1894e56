/* sep_f32_k23_27.cu - the fused separable kernels (sep_impl.cuh) for float32 samples, sizes 23..27 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 23, 27, float);
