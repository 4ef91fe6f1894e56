/* sep_k23_27.cu - the fused separable kernels (sep_impl.cuh) for sizes 23..27 (odd). */
#include "cuda/fast/sep_impl.cuh"

IC_SEP_LAUNCH_K(template, 23, 27, uint8_t);
