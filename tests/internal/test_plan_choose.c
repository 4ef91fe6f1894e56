/*
 * test_plan_choose.c - the fast path's choice between its methods
 * (src/cuda/fast/plan_choose.c) as a specification. Times are the cost
 * model's predictions in seconds, 0 where a method cannot run the job:
 *   1. no method: global; direct alone: direct;
 *   2. sep wins ties against direct: within 3% over it, sep; 4% over, direct;
 *   3. fft must be more than 3% under the best to be taken;
 *   4. tensor, a full-rank sum: more than 3% under the best, at any size;
 *      the passes of a rank-1 kernel: as much, and only from 16,777,216
 *      samples...
 *   5. ... but from 11x11 and 3.5M samples, unless more than 5% over the best;
 *   6. rows, where it applies, whatever the others predict, but for
 *      a rank-1 9x9 at 2 rows a thread from 2M samples (sep, when sep can run
 *      it) and a full-rank sum from 3.5M samples whose tensor prediction is
 *      more than 3% under rows' (tensor);
 *   7. a forced method is taken when it can run the job, global always; one
 *      that cannot leaves the choice of 1-5 (rows is the rules' choice under
 *      auto only).
 * Needs no GPU: the choice is host arithmetic.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/fast/plan_choose.h"

static int failures;

static const char *name(ic_fast_method m)
{
    static const char *const names[] = {"auto", "direct", "sep", "fft", "global", "rows", "tensor"};
    return (int)m >= 0 && (int)m <= 6 ? names[m] : "?";
}

/* A job of `samples` samples and a k x k kernel that only direct can run in 1 ms. */
static ic_fast_choice job(double samples, int k)
{
    ic_fast_choice c;
    memset(&c, 0, sizeof c);
    c.t_direct = 1e-3;
    c.samples = samples;
    c.kw = c.kh = k;
    c.force = IC_FAST_AUTO;
    return c;
}

static void expect(const ic_fast_choice *c, ic_fast_method want, const char *what)
{
    const ic_fast_method got = ic_fast_choose(c);
    if (got != want) {
        printf("FAIL %s: %s, want %s (direct %g sep %g fft %g tensor %g rows %g, %g samples, "
               "%dx%d, tensor rank-1 %d, rows rank %d x%d, forced %s)\n",
               what, name(got), name(want), c->t_direct, c->t_sep, c->t_fft, c->t_tensor, c->t_rows,
               c->samples, c->kw, c->kh, c->tensor_rank1, c->rows_rank, c->rows_per_thread,
               name(c->force));
        failures++;
    }
}

static void model_ties(void)
{
    ic_fast_choice c = job(2e6, 5);
    c.t_direct = 0;
    expect(&c, IC_FAST_GLOBAL, "1. nothing runs it");
    c = job(2e6, 5);
    expect(&c, IC_FAST_DIRECT, "1. direct alone");
    c.t_sep = 1e-3;
    expect(&c, IC_FAST_SEP, "2. sep equal to direct");
    c.t_sep = 1.029e-3;
    expect(&c, IC_FAST_SEP, "2. sep 2.9% over direct");
    c.t_sep = 1.04e-3;
    expect(&c, IC_FAST_DIRECT, "2. sep 4% over direct");
    c.t_direct = 0;
    expect(&c, IC_FAST_SEP, "2. sep alone");
    c = job(2e6, 5);
    c.t_fft = 0.98e-3;
    expect(&c, IC_FAST_DIRECT, "3. fft 2% under direct");
    c.t_fft = 0.96e-3;
    expect(&c, IC_FAST_FFT, "3. fft 4% under direct");
    c.t_sep = 0.95e-3;
    expect(&c, IC_FAST_SEP, "3. fft 1% over sep");
    c.t_fft = 0.9e-3;
    expect(&c, IC_FAST_FFT, "3. fft 5% under sep");
}

static void tensor_rules(void)
{
    ic_fast_choice c = job(1e5, 15);
    c.t_tensor = 0.96e-3;
    expect(&c, IC_FAST_TENSOR, "4. full-rank tensor 4% under direct, 100k samples");
    c.t_tensor = 0.98e-3;
    expect(&c, IC_FAST_DIRECT, "4. full-rank tensor 2% under direct");
    c = job(8e6, 9);
    c.tensor_rank1 = 1;
    c.t_tensor = 0.5e-3;
    expect(&c, IC_FAST_DIRECT, "4. rank-1 9x9 tensor at 8M samples");
    c.samples = 16777216.0;
    expect(&c, IC_FAST_TENSOR, "4. rank-1 9x9 tensor at 16,777,216 samples");

    c = job(3.5e6, 11);
    c.tensor_rank1 = 1;
    c.t_sep = 1e-3;
    c.t_tensor = 1.04e-3;
    expect(&c, IC_FAST_TENSOR, "5. rank-1 11x11 tensor 4% over sep at 3.5M samples");
    c.t_tensor = 1.06e-3;
    expect(&c, IC_FAST_SEP, "5. rank-1 11x11 tensor 6% over sep");
    c.samples = 3.4e6;
    c.t_tensor = 0.5e-3;
    expect(&c, IC_FAST_SEP, "5. rank-1 11x11 tensor under 3.5M samples");
}

static void rows_rules(void)
{
    ic_fast_choice c = job(1e6, 5);
    c.t_sep = 0.5e-3;
    c.t_rows = 2e-3;
    c.rows_per_thread = 4;
    expect(&c, IC_FAST_ROWS, "6. rows over faster predictions");

    c = job(2e6, 9);
    c.t_sep = 1e-3;
    c.t_rows = 0.5e-3;
    c.rows_rank = 1;
    c.rows_per_thread = 2;
    expect(&c, IC_FAST_SEP, "6. rank-1 9x9 at 2 rows, 2M samples: sep");
    c.samples = 1.9e6;
    expect(&c, IC_FAST_ROWS, "6. rank-1 9x9 at 2 rows under 2M samples");
    c.samples = 2e6;
    c.rows_per_thread = 4;
    expect(&c, IC_FAST_ROWS, "6. rank-1 9x9 at 4 rows");
    c.rows_per_thread = 2;
    c.t_sep = 0;
    expect(&c, IC_FAST_ROWS, "6. rank-1 9x9 at 2 rows without sep");

    c = job(3.5e6, 9);
    c.t_rows = 1e-3;
    c.t_tensor = 0.96e-3;
    expect(&c, IC_FAST_TENSOR, "6. full sum, tensor 4% under rows at 3.5M samples");
    c.t_tensor = 0.98e-3;
    expect(&c, IC_FAST_ROWS, "6. full sum, tensor 2% under rows");
    c.t_tensor = 0.5e-3;
    c.samples = 3.4e6;
    expect(&c, IC_FAST_ROWS, "6. full sum, tensor under 3.5M samples");
    c.samples = 3.5e6;
    c.rows_rank = 1;
    expect(&c, IC_FAST_ROWS, "6. separable rows, tensor faster");
}

static void forced(void)
{
    ic_fast_choice c = job(2e6, 5);
    c.t_sep = 2e-3;
    c.t_fft = 3e-3;
    c.t_tensor = 4e-3;
    c.t_rows = 5e-3;
    static const ic_fast_method ms[] = {IC_FAST_DIRECT, IC_FAST_SEP,  IC_FAST_FFT,
                                        IC_FAST_GLOBAL, IC_FAST_ROWS, IC_FAST_TENSOR};
    for (int i = 0; i < 6; i++) {
        c.force = ms[i];
        char what[64];
        snprintf(what, sizeof what, "7. %s forced", name(ms[i]));
        expect(&c, ms[i], what);
    }
    c = job(2e6, 5);
    c.t_sep = 2e-3;
    c.t_rows = 5e-3;
    c.force = IC_FAST_FFT;
    expect(&c, IC_FAST_DIRECT, "7. fft forced where it cannot run");
    c.force = IC_FAST_TENSOR;
    expect(&c, IC_FAST_DIRECT, "7. tensor forced where it cannot run");
    c.t_direct = 0;
    c.t_sep = 0;
    c.force = IC_FAST_DIRECT;
    expect(&c, IC_FAST_GLOBAL, "7. direct forced, nothing but rows runs it");
    c.force = IC_FAST_AUTO;
    expect(&c, IC_FAST_ROWS, "7. the same job under auto");
}

int main(void)
{
    model_ties();
    tensor_rules();
    rows_rules();
    forced();
    if (failures) {
        printf("%d failure(s)\n", failures);
        return 1;
    }
    printf("plan choice: all rules hold\n");
    return 0;
}
