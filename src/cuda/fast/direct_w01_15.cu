/* direct_w01_15.cu - direct kernels (direct_impl.cuh), widths 1..15 odd, run-time height. */
#include "cuda/fast/direct_impl.cuh"

IC_DIRECT_LAUNCH_KW(template, 1, 15, uint8_t);
