/*
 * alpha_photo.c - photograph-like test images with real transparency, for the
 * premultiplied-alpha tests of every backend (ict_alpha_photo, testutil.h).
 *
 * A cut-out photo is what users blur: smooth colour with texture and hard
 * edges, an opaque subject with anti-aliased (soft) edges, holes through it,
 * translucent parts, and around it fully transparent pixels whose colour is
 * whatever the editor left there (garbage that must not bleed in). Isolated
 * almost-transparent pixels (alpha 1..3) next to transparent ones make the
 * filtered alpha tiny, where the un-premultiplying division amplifies error.
 */
#include "testutil.h"

#include <math.h>

#define MAX_BLOBS 6

typedef struct blob {
    double cx, cy, rx, ry, soft; /* centre, radii, width of the soft edge (px) */
} blob;

/* Coverage of (x, y) by an ellipse with a soft edge: 1 inside, 0 outside, a
 * linear ramp `soft` pixels wide across the edge (0 soft: hard edge). */
static double coverage(const blob *b, double x, double y)
{
    const double dx = (x - b->cx) / b->rx, dy = (y - b->cy) / b->ry;
    const double q = sqrt(dx * dx + dy * dy);
    const double dist = (1.0 - q) * fmin(b->rx, b->ry); /* about px inside the edge */
    if (b->soft <= 0.0)
        return dist >= 0.0 ? 1.0 : 0.0;
    const double t = dist / b->soft + 0.5;
    return t < 0.0 ? 0.0 : t > 1.0 ? 1.0 : t;
}

static void random_blob(blob *b, ict_rng *r, int w, int h, double scale)
{
    b->cx = ict_uniform(r) * w;
    b->cy = ict_uniform(r) * h;
    b->rx = (0.1 + ict_uniform(r) * 0.4) * scale * w + 0.5;
    b->ry = (0.1 + ict_uniform(r) * 0.4) * scale * h + 0.5;
    const uint32_t u = ict_below(r, 4);
    b->soft = u == 0 ? 0.0 : u == 1 ? 1.0 + ict_uniform(r) : 2.0 + 6.0 * ict_uniform(r);
}

/* v in 8-bit units, as a sample of 0..max (16-bit samples: v * 257, so the
 * image spans 0..65535 with its flat parts at the clamp limits). */
static int clamp_to(double v, int max)
{
    v *= max / 255.0;
    return (int)(v < 0.0 ? 0.0 : v > max ? (double)max : floor(v + 0.5));
}

void ict_alpha_photo(ict_buf *b, ict_rng *r)
{
    /* padding and guard: garbage, as ict_buf_random leaves them */
    for (size_t i = 0; i < b->bytes + b->guard; i++)
        b->mem[i] = (uint8_t)(ict_next(r) >> 56);
    const ic_image *im = &b->img;
    const int w = im->width, h = im->height, ch = im->channels;
    const int has_alpha = ch == 2 || ch == 4, nc = has_alpha ? ch - 1 : ch;
    const int max = ict_type_max(im);

    /* colour: two low-frequency waves per channel, a hard edge across the
     * picture (a brighter side), fine texture */
    double fx[4][2], fy[4][2], ph[4][2], amp[4][2], base[4];
    for (int c = 0; c < nc; c++) {
        base[c] = 40.0 + 170.0 * ict_uniform(r);
        for (int k = 0; k < 2; k++) {
            fx[c][k] = (ict_uniform(r) * 6.0 + 0.5) / (w + 8.0);
            fy[c][k] = (ict_uniform(r) * 6.0 + 0.5) / (h + 8.0);
            ph[c][k] = ict_uniform(r) * 6.283185307179586;
            amp[c][k] = 15.0 + 45.0 * ict_uniform(r);
        }
    }
    const double ex = ict_uniform(r) * w, ey = ict_uniform(r) * h;
    const double enx = ict_uniform(r) - 0.5, eny = ict_uniform(r) - 0.5;
    const double lift = 30.0 + 60.0 * ict_uniform(r);

    /* alpha: a subject made of a few soft-edged blobs, holes through it, a
     * translucent band */
    blob subj[MAX_BLOBS], hole[MAX_BLOBS];
    const int ns = ict_range(r, 1, MAX_BLOBS), nh = ict_range(r, 0, 3);
    for (int i = 0; i < ns; i++)
        random_blob(&subj[i], r, w, h, 1.0);
    for (int i = 0; i < nh; i++)
        random_blob(&hole[i], r, w, h, 0.3);
    const double gy0 = ict_uniform(r) * h, gh = (0.05 + 0.2 * ict_uniform(r)) * h + 1.0;
    const double glass = 0.1 + 0.7 * ict_uniform(r);

    for (int y = 0; y < h; y++) {
        for (int x = 0; x < w; x++) {
            double a = 1.0;
            if (has_alpha) {
                double s = 0.0, o = 0.0;
                for (int i = 0; i < ns; i++)
                    s = fmax(s, coverage(&subj[i], x, y));
                for (int i = 0; i < nh; i++)
                    o = fmax(o, coverage(&hole[i], x, y));
                a = s * (1.0 - o);
                if (y >= gy0 && y < gy0 + gh)
                    a *= glass + (1.0 - glass) * (x / (w + 1.0));
            }
            int A = clamp_to(255.0 * a, max);
            if (has_alpha && A == 0 && ict_below(r, 50) == 0)
                A = ict_range(r, 1, 3); /* dust: almost transparent */
            const int bright = (x - ex) * enx + (y - ey) * eny > 0.0;
            for (int c = 0; c < nc; c++) {
                double v = base[c] + (bright ? lift : 0.0) + ict_range(r, -6, 6);
                for (int k = 0; k < 2; k++)
                    v += amp[c][k] *
                         sin(6.283185307179586 * (fx[c][k] * x + fy[c][k] * y) + ph[c][k]);
                /* transparent pixels keep whatever colour was there: garbage */
                ict_set_value(im, x, y, c,
                              (has_alpha && A == 0) ? (int)(ict_next(r) >> (max > 255 ? 48 : 56))
                                                    : clamp_to(v, max));
            }
            if (has_alpha)
                ict_set_value(im, x, y, ch - 1, A);
        }
    }
}
