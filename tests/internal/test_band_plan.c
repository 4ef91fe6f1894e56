/*
 * test_band_plan.c - the band planner of the CUDA backends' asynchronous
 * pipeline (src/cuda/cuda_async.cu, ic_cuda_async_plan and _rows): host
 * arithmetic only, so it runs in CI without a GPU. For random image shapes,
 * kernels, border modes, row ranges and device-memory limits:
 *   - with no limit the bands are aligned (their first source row a multiple
 *     of 16: the tensor kernels' column sums then group the same rows as on
 *     the whole image) and cover every output row;
 *   - at exactly plan.min_bytes a plan exists (unaligned where the aligned
 *     halo does not fit), one byte less is IC_ERR_TOO_LARGE;
 *   - under any limit at or above it, the plan's device bytes stay within
 *     the limit, and every band's source rows, as the pipeline takes them
 *     (y0 - ry rounded down to the plan's alignment, clipped at the image for
 *     a constant border), fit the slot the plan sized.
 * Exits 77 (SKIPPED) in a build without CUDA.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "imgconv.h"

#ifdef IC_HAVE_CUDA
#include "cuda/cuda_async.h"

static int failures;

static unsigned long long rng_state = 0x5eedba4dull;
static int below(int n)
{
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    return (int)((rng_state >> 33) % (unsigned long long)n);
}

/* i rounded down to a multiple of al (i may be negative). */
static int floor_to(int i, int al)
{
    return i >= 0 ? i / al * al : -((-i + al - 1) / al * al);
}

/* Checks plan p for output rows [r0, r1) of job a: coverage, alignment and
 * that every band's source rows fit the slot of (dev_bytes - weights) /
 * slots bytes. */
static void check_bands(const ic_cuda_args *a, int r0, int r1, const ic_cuda_band_plan *p,
                        const char *what)
{
    const int ry = (a->kh - 1) / 2, planes = a->soa ? a->channels : 1;
    const int constant = a->border == IC_BORDER_CONSTANT;
    const size_t wbytes = (size_t)a->kw * (size_t)a->kh * sizeof(float);
    if (p->bands < 1 || p->slots < 1 || p->band_rows < 1 ||
        (long long)p->bands * p->band_rows < r1 - r0 ||
        (long long)(p->bands - 1) * p->band_rows >= r1 - r0 ||
        (p->row_align != 1 && p->row_align != 16) || p->dev_bytes < wbytes) {
        printf("FAIL %s: bands %d x %d rows on %d slots, align %d, %zu bytes for rows %d..%d\n",
               what, p->bands, p->band_rows, p->slots, p->row_align, p->dev_bytes, r0, r1);
        failures++;
        return;
    }
    const size_t slot_rows =
        (p->dev_bytes - wbytes) / (size_t)p->slots / 2u / (size_t)planes / p->dev_pitch;
    for (int b = 0; b < p->bands; b++) {
        const int y0 = r0 + b * p->band_rows;
        const int y1 = y0 + p->band_rows < r1 ? y0 + p->band_rows : r1;
        const int s0 = constant && y0 - ry < 0 ? 0 : floor_to(y0 - ry, p->row_align);
        const int s1 = constant && y1 + ry > a->height ? a->height : y1 + ry;
        if ((size_t)(s1 - s0) > slot_rows || (s0 > 0 && s0 % p->row_align)) {
            printf("FAIL %s: band %d (rows %d..%d) needs source rows %d..%d, the slot holds %zu\n",
                   what, b, y0, y1, s0, s1, slot_rows);
            failures++;
            return;
        }
    }
}

static ic_status plan(const ic_cuda_args *a, int r0, int r1, size_t limit, ic_cuda_band_plan *p)
{
    char err[256];
    memset(p, 0, sizeof *p);
    return r0 == 0 && r1 == a->height
               ? ic_cuda_async_plan(a, limit, p, err, sizeof err)
               : ic_cuda_async_plan_rows(a, r0, r1, limit, p, err, sizeof err);
}

int main(void)
{
    int cases = 0, unaligned = 0;
    for (int i = 0; i < 3000; i++) {
        ic_cuda_args a;
        memset(&a, 0, sizeof a);
        a.width = 1 + below(i % 7 == 0 ? 5000 : 700);
        a.height = 1 + below(i % 5 == 0 ? 3000 : 300);
        a.channels = 1 + below(4);
        a.soa = below(2);
        a.u16 = below(2);
        a.kw = 1 + 2 * below(16);
        a.kh = 1 + 2 * below(32);
        a.border = below(5);
        int r0 = 0, r1 = a.height;
        if (below(3) == 0) { /* a row range, as the multi-GPU split asks */
            r0 = below(a.height);
            r1 = r0 + 1 + below(a.height - r0);
        }
        char what[160];
        snprintf(what, sizeof what, "%dx%d ch=%d soa=%d u16=%d k=%dx%d border=%d rows %d..%d",
                 a.width, a.height, a.channels, a.soa, a.u16, a.kw, a.kh, a.border, r0, r1);
        ic_cuda_band_plan p;
        if (plan(&a, r0, r1, 0, &p) != IC_OK || p.row_align != 16) {
            printf("FAIL %s: no aligned plan without a limit\n", what);
            failures++;
            continue;
        }
        check_bands(&a, r0, r1, &p, what);
        const size_t min = p.min_bytes;
        if (plan(&a, r0, r1, min, &p) != IC_OK) {
            printf("FAIL %s: no plan at min_bytes %zu\n", what, min);
            failures++;
            continue;
        }
        if (p.dev_bytes > min) {
            printf("FAIL %s: %zu bytes planned under a limit of %zu\n", what, p.dev_bytes, min);
            failures++;
        }
        check_bands(&a, r0, r1, &p, what);
        unaligned += p.row_align == 1;
        if (min > 1 && plan(&a, r0, r1, min - 1, &p) != IC_ERR_TOO_LARGE) {
            printf("FAIL %s: a plan under %zu bytes, below min_bytes\n", what, min - 1);
            failures++;
        }
        const size_t limit = min + (size_t)below(4) * min + (size_t)below(1 << 16);
        if (plan(&a, r0, r1, limit, &p) != IC_OK || p.dev_bytes > limit) {
            printf("FAIL %s: no plan within %zu bytes (%zu planned)\n", what, limit, p.dev_bytes);
            failures++;
            continue;
        }
        check_bands(&a, r0, r1, &p, what);
        cases++;
    }
    printf("band plans: %d cases (%d unaligned at min_bytes), %d failures\n", cases, unaligned,
           failures);
    return failures ? 1 : 0;
}

#else

int main(void)
{
    printf("SKIPPED: built without CUDA\n");
    return 77;
}

#endif
