/*
 * plan_choose.c - the fast path's choice between its methods: every tie and
 * margin rule of the planner, applied to plan.cu's predictions. The
 * measurements behind each threshold: docs/design/planner.md#choosing.
 */
#include "cuda/fast/plan_choose.h"

/* Predictions this close count as equal; the method with fewer
 * multiply-adds wins, and sep wins ties against direct. */
static const double TIE = 0.03;
/* A rank-1 kernel's tensor passes from here only (measured faster than sep
 * at 8K, slower at HD: per-block latency the model lacks). */
static const double TC_MIN_SAMPLES = 16777216.0;
/* From here, the tensor passes of a rank-1 kernel from 11x11 by a margin,
 * and the tensor cores over rows' full K*K sum by the model. */
static const double TC_MID_SAMPLES = 3.5e6;
/* A rank-1 kernel takes the tensor passes unless their model is 5% over
 * the best other method's. */
static const double TC_SEP_MARGIN = 1.05;
/* A rank-1 9x9 at 2 rows a thread: sep from here (rows re-reads 5 input
 * rows an output row against the shared tile's 1.25). */
static const double SEP9_MIN_SAMPLES = 2e6;

/* The cheapest shared-memory or FFT method by the model, with its ties. */
static ic_fast_method by_model(const ic_fast_choice *c)
{
    ic_fast_method m = IC_FAST_GLOBAL;
    double best = 1e30;
    if (c->t_direct > 0) {
        m = IC_FAST_DIRECT;
        best = c->t_direct;
    }
    if (c->t_sep > 0 && (c->t_sep <= best * (1 + TIE))) {
        m = IC_FAST_SEP;
        best = c->t_sep < best ? c->t_sep : best;
    }
    if (c->t_fft > 0 && c->t_fft < best * (1 - TIE)) {
        m = IC_FAST_FFT;
        best = c->t_fft;
    }
    /* full-rank sums by the model; rank-1 passes from TC_MIN_SAMPLES, or
     * by a margin from 11x11 (rows takes the smaller) and TC_MID_SAMPLES */
    const int tc_large = c->samples >= TC_MIN_SAMPLES;
    const int tc_mid = c->tensor_rank1 && c->kw >= 11 && c->samples >= TC_MID_SAMPLES;
    if (c->t_tensor > 0 && c->t_tensor < best * (tc_mid ? TC_SEP_MARGIN : 1 - TIE) &&
        (tc_large || !c->tensor_rank1 || tc_mid))
        m = IC_FAST_TENSOR;
    return m;
}

ic_fast_method ic_fast_choose(const ic_fast_choice *c)
{
    ic_fast_method m = by_model(c);
    /* rows, measured faster than direct, sep and fft wherever it applies,
     * but for a rank-1 9x9 at 2 rows a thread on a large image (sep) and a
     * full-rank sum the tensor cores' model says is faster */
    if (c->t_rows > 0 && c->force == IC_FAST_AUTO) {
        const int sep9 = c->t_sep > 0 && c->rows_rank == 1 && c->kw == 9 && c->kh == 9 &&
                         c->rows_per_thread == 2 && c->samples >= SEP9_MIN_SAMPLES;
        const int tc9 = c->t_tensor > 0 && !c->rows_rank && c->samples >= TC_MID_SAMPLES &&
                        c->t_tensor < c->t_rows * (1 - TIE);
        m = sep9 ? IC_FAST_SEP : tc9 ? IC_FAST_TENSOR : IC_FAST_ROWS;
    }
    /* a forced method is taken when it can run the job */
    const ic_fast_method f = c->force;
    if ((f == IC_FAST_DIRECT && c->t_direct > 0) || (f == IC_FAST_SEP && c->t_sep > 0) ||
        (f == IC_FAST_FFT && c->t_fft > 0) || (f == IC_FAST_ROWS && c->t_rows > 0) ||
        (f == IC_FAST_TENSOR && c->t_tensor > 0) || f == IC_FAST_GLOBAL)
        m = f;
    return m;
}
