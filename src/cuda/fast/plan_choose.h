/*
 * plan_choose.h - the fast path's choice between its methods (internal): the
 * tie and margin rules applied to the cost model's predictions. Pure C with
 * no CUDA, so the CPU tests check it (tests/internal/test_plan_choose.c);
 * plan.cu makes the predictions and fills the chosen plan.
 */
#ifndef IC_CUDA_FAST_PLAN_CHOOSE_H
#define IC_CUDA_FAST_PLAN_CHOOSE_H

#include "cuda/fast/fast.h"

#ifdef __cplusplus
extern "C" {
#endif

/* What the choice reads: each method's predicted time in seconds (0 or less
 * where the method cannot run the job) and the facts its rules depend on. */
typedef struct ic_fast_choice {
    double t_direct, t_sep, t_fft, t_tensor, t_rows;
    double samples;       /* width * height * channels */
    int kw, kh;           /* kernel size */
    int tensor_rank1;     /* the tensor method runs a rank-1 kernel's two passes */
    int rows_rank;        /* rows: separable rank, 0 for the full K*K sum */
    int rows_per_thread;  /* rows: output rows a thread, as the shape rule chose them */
    ic_fast_method force; /* ic_tuning.method; IC_FAST_AUTO lets the rules decide */
} ic_fast_choice;

/* The method for the job: the forced one when it can run the job, else the
 * rules' choice (IC_FAST_GLOBAL when no other method can run it). */
ic_fast_method ic_fast_choose(const ic_fast_choice *c);

#ifdef __cplusplus
}
#endif

#endif
