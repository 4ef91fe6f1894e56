/*
 * alpha.c - premultiplied-alpha filtering (docs/definitions.md, "Alpha"),
 * shared by every backend: with a = alpha/max (max = 255, or 65535 for IC_U16
 * samples, 1 for IC_F32), filter c*a and a alike, then
 *   colour = F(c*a) / F(a)   (0 where F(a) <= 0)   + bias
 *   alpha  = max * F(a)                             + bias
 * (float samples are stored as computed, neither rounded nor clamped).
 * A constant border gives every channel, alpha included, the border value
 * before premultiplication. The division amplifies rounding error where F(a) is
 * small, so this path accumulates in float64 (on the CPU, for every backend).
 */
#include <math.h>
#include <stdlib.h>

#include "core/border.h"
#include "dispatch/dispatch.h"

/* Nearest (ties to even) in [0, max]; NaN gives 0. */
static unsigned round_d(double v, double max)
{
    v = v > 0 ? v : 0; /* also maps NaN to 0 */
    v = v < max ? v : max;
    return (unsigned)rint(v); /* ties to even */
}

/* idx[t] = mapped coordinate of (t - r) for t in [0, n + 2r), or -1 (constant). */
static int *border_table(int n, int r, ic_border b)
{
    int *t = malloc(((size_t)n + 2u * (size_t)r) * sizeof *t);
    if (t)
        for (int i = 0; i < n + 2 * r; i++)
            t[i] = ic_border_map(i - r, n, (int)b);
    return t;
}

ic_status ic__convolve_premultiplied(const ic_job *job)
{
    const ic_image *src = job->src;
    ic_image *dst = job->dst;
    const int w = src->width, h = src->height, ch = src->channels, ac = ch - 1;
    const int rx = job->kw / 2, ry = job->kh / 2;
    int *xm = border_table(w, rx, job->border), *ym = border_table(h, ry, job->border);
    double *acc = malloc((size_t)ch * sizeof *acc);
    ic_status st = (xm && ym && acc) ? IC_OK : IC_ERR_NOMEM;
    const double max = ic_sample_max(src->type); /* 255, or 65535 for IC_U16 */
    const double v = job->border_value, va = v / max;
    for (int y = 0; st == IC_OK && y < h; y++)
        for (int x = 0; x < w; x++) {
            for (int c = 0; c < ch; c++)
                acc[c] = 0;
            for (int j = 0; j < job->kh; j++) {
                const int sy = ym[y + j];
                for (int i = 0; i < job->kw; i++) {
                    const double wt = job->w[(size_t)j * job->kw + i];
                    const int sx = xm[x + i];
                    if (sy < 0 || sx < 0) {
                        for (int c = 0; c < ac; c++)
                            acc[c] += wt * v * va;
                        acc[ac] += wt * va;
                        continue;
                    }
                    const double a = ic_image_getf(src, sx, sy, ac) / max;
                    for (int c = 0; c < ac; c++)
                        acc[c] += wt * ic_image_getf(src, sx, sy, c) * a;
                    acc[ac] += wt * a;
                }
            }
            const double fa = acc[ac];
            if (dst->type == IC_F32) {
                for (int c = 0; c < ac; c++)
                    ic_image_setf(dst, x, y, c, (float)((fa > 0 ? acc[c] / fa : 0.0) + job->bias));
                ic_image_setf(dst, x, y, ac, (float)(fa + job->bias));
                continue;
            }
            for (int c = 0; c < ac; c++)
                ic_image_set(dst, x, y, c, round_d((fa > 0 ? acc[c] / fa : 0.0) + job->bias, max));
            ic_image_set(dst, x, y, ac, round_d(max * fa + job->bias, max));
        }
    free(xm);
    free(ym);
    free(acc);
    return st;
}
