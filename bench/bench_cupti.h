/*
 * bench_cupti.h - kernel durations by CUPTI (the GPU's own start and end
 * timestamps of every kernel), the way CV-CUDA's and PyTorch's profilers time
 * kernels, beside imgconv-bench's CUDA-event times (bench_gpu.h). Event times
 * include the GPU's launch processing between the two events; CUPTI times do
 * not, so the two differ most for the smallest images.
 *
 * Usage: bc_open() once; bc_begin(id) before the launches of run `id`
 * (1..BC_MAX_IDS) and bc_end() after the device finished them (synchronise
 * first: a run is a window of time); then bc_collect() flushes the records
 * and gives, per id, the sum of its kernels' durations.
 * Memory copies and memsets are not counted (only kernels). Built only with
 * IC_HAVE_CUPTI; without it bc_open reports "not built".
 */
#ifndef IC_BENCH_CUPTI_H
#define IC_BENCH_CUPTI_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define BC_MAX_IDS 512

/* 0 when CUPTI records kernels from now on; -1 and a reason otherwise. */
int bc_open(char *why, size_t n);
/* 1 after a successful bc_open (until bc_close). */
int bc_active(void);
/* Stops recording (kernels are timed by events only again). */
void bc_close(void);
/* Opens and closes the time window of run id (1..BC_MAX_IDS): kernels that
 * start and end inside it are that run's. Synchronise before bc_end. */
void bc_begin(unsigned id);
void bc_end(void);
/* Flushes CUPTI's buffers (after the device is synchronised) and writes the
 * kernel milliseconds of runs 1..nids into ms[0..nids-1] (0 for a run that
 * launched no kernel); forgets them afterwards. Returns the number of kernel
 * records attributed, -1 when CUPTI is not active. */
int bc_collect(double *ms, int nids);

#ifdef __cplusplus
}
#endif

#endif /* IC_BENCH_CUPTI_H */
