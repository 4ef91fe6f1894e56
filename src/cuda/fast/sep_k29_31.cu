/* sep_k29_31.cu - the fused separable kernels (sep_impl.cuh) for sizes 29..31 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 29, 31, uint8_t);
