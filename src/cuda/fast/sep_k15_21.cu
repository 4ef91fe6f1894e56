/* sep_k15_21.cu - the fused separable kernels (sep_impl.cuh) for sizes 15..21 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 15, 21, uint8_t);
