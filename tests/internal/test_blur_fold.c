/*
 * test_blur_fold.c - the start of each line of the cpu backend's sliding blur
 * (src/cpu/cpu_blur.c, blur1d_fold): the window of 2r+1 positions, extended
 * by the border rule, folded onto the line so that a line starts in
 * O(min(2r+1, n+1)) rows. Its plain sum and its cosine-modulated sums
 * sum e^{j w t} e(t), t = -r..r, must equal the straightforward sums over
 * the extended line written here, for every border mode, lines of 1 to 9
 * samples and radii from 0 to 400 times the line; and the plain sum slid
 * through the rows each step drops and takes must equal the window sum at
 * every x. A failing case prints its parameters.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>

#include "cpu/cpu_blur.h"
#include "oracle.h" /* ict_border_map: the border rule, apart from the library */

static int failures;

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static double uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (double)(rng >> 11) / 9007199254740992.0;
}

int main(void)
{
    const ic_border borders[] = {IC_BORDER_CONSTANT, IC_BORDER_REPLICATE, IC_BORDER_MIRROR,
                                 IC_BORDER_REFLECT, IC_BORDER_WRAP};
    const int radii[] = {0, 1, 2, 3, 7, 20, 101, 999, 3600};
    const double w[] = {0.0021, 0.37, 2.9};
    const int nw = 3;
    int cases = 0;
    double worst = 0;
    for (int n = 1; n <= 9; n++)
        for (size_t ri = 0; ri < sizeof radii / sizeof radii[0]; ri++)
            for (int bi = 0; bi < 5; bi++) {
                const int r = radii[ri];
                const ic_border b = borders[bi];
                double e[9], s[9], z[2 * 3];
                for (int i = 0; i < n; i++)
                    e[i] = 255.0 * uniform();
                const double v = 170.0;
                if (!ic__cpu_blur_fold_sums(e, n, r, nw, w, b, v, s, z)) {
                    printf("FAIL: out of memory, n %d r %d\n", n, r);
                    failures++;
                    continue;
                }
                cases++;
                /* every sum is within (2r+1) * 255 of 0: compare relative to that */
                const double tol = 1e-11 * (2.0 * r + 1) * 255.0;
                for (int k = 0; k < nw; k++) {
                    double zr = 0, zi = 0;
                    for (int t = -r; t <= r; t++) {
                        const int u = ict_border_map(t, n, b);
                        const double f = u < 0 ? v : e[u];
                        zr += cos(w[k] * t) * f;
                        zi += sin(w[k] * t) * f;
                    }
                    const double d = fmax(fabs(zr - z[2 * k]), fabs(zi - z[2 * k + 1]));
                    worst = fmax(worst, d / tol);
                    if (d > tol) {
                        printf("FAIL: border %s n %d r %d w %g: folded %.9g%+.9gj, extended "
                               "%.9g%+.9gj\n",
                               ic_border_name(b), n, r, w[k], z[2 * k], z[2 * k + 1], zr, zi);
                        failures++;
                    }
                }
                for (int x = 0; x < n; x++) {
                    double want = 0;
                    for (int t = x - r; t <= x + r; t++) {
                        const int u = ict_border_map(t, n, b);
                        want += u < 0 ? v : e[u];
                    }
                    worst = fmax(worst, fabs(want - s[x]) / tol);
                    if (fabs(want - s[x]) > tol) {
                        printf("FAIL: border %s n %d r %d: window sum at x %d is %.9g, extended "
                               "%.9g\n",
                               ic_border_name(b), n, r, x, s[x], want);
                        failures++;
                    }
                }
            }
    printf("fold: %d cases, largest difference %.3g of the tolerance\n", cases, worst);
    if (failures)
        printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
