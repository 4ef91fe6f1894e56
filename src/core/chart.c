/*
 * chart.c - a deterministic test chart: six regions (3 columns x 2 rows) with
 * a horizontal gradient, colour bars with hard edges, fine lines (1 and 2 px),
 * a zone plate, a checkerboard of varied cell sizes and seeded noise. Channels
 * get related but different content; an alpha channel (2 or 4 channels) is
 * opaque except for a soft-edged transparent disc, so alpha handling shows.
 */
#include <math.h>

#include "core/error.h"
#include "imgconv.h"

static uint32_t hash32(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352dU;
    x ^= x >> 15;
    x *= 0x846ca68bU;
    x ^= x >> 16;
    return x;
}

static uint8_t clamp_u8(double v)
{
    return v <= 0 ? 0 : v >= 255 ? 255 : (uint8_t)(v + 0.5);
}

static uint8_t colour_sample(int x, int y, int c, int w, int h, uint32_t seed)
{
    int rw = w / 3 > 0 ? w / 3 : 1, rh = h / 2 > 0 ? h / 2 : 1;
    int region = (x / rw < 2 ? x / rw : 2) + 3 * (y / rh < 1 ? y / rh : 1);
    int lx = x - (x / rw < 2 ? x / rw : 2) * rw, ly = y - (y / rh < 1 ? y / rh : 1) * rh;
    switch (region) {
    case 0: /* gradient: left to right, channels tilted differently */
        return clamp_u8(255.0 * (lx + c * ly / 4.0) / (rw + c * rh / 4.0));
    case 1: { /* colour bars with hard edges */
        int bar = lx * 8 / rw;
        return (uint8_t)(((bar >> (c % 3)) & 1) ? 235 : 16 + 40 * c);
    }
    case 2: /* fine lines: 1 px stripes on top, 2 px below, channel-shifted */
        return ly < rh / 2 ? (uint8_t)(((lx + c) & 1) ? 255 : 0)
                           : (uint8_t)((((lx + c) >> 1) & 1) ? 200 : 30);
    case 3: { /* zone plate: cos(k r^2), frequency rising to Nyquist at the edge */
        double cx = rw / 2.0, cy = rh / 2.0, rmax = cx > cy ? cx : cy;
        double dx = lx - cx, dy = ly - cy;
        double phase = 3.14159265358979 * (dx * dx + dy * dy) / (2.0 * (rmax > 1 ? rmax : 1));
        return clamp_u8(127.5 + 127.5 * cos(phase + c * 0.5));
    }
    case 4: { /* checkerboard, cells of 3, 8 and 16 px in three bands */
        int cell = ly < rh / 3 ? 3 : ly < 2 * rh / 3 ? 8 : 16;
        return (uint8_t)((((lx / cell) + (ly / cell) + c) & 1) ? 220 : 35);
    }
    default: /* seeded uniform noise */
        return (uint8_t)(hash32((uint32_t)x * 73856093u ^ (uint32_t)y * 19349663u ^
                                (uint32_t)c * 83492791u ^ seed) >>
                         24);
    }
}

static uint8_t alpha_sample(int x, int y, int w, int h)
{
    double cx = w * 0.75, cy = h * 0.5, r = (w < h ? w : h) * 0.2 + 1.0;
    double d = sqrt((x - cx) * (x - cx) + (y - cy) * (y - cy));
    /* transparent inside the disc, opaque outside, an 8 px ramp between */
    return clamp_u8((d - r) * 255.0 / 8.0);
}

ic_status ic_image_chart(ic_image *img, uint32_t seed)
{
    if (!img || !img->data || img->width < 1 || img->height < 1 || img->channels < 1 ||
        img->channels > 4)
        return ic_fail(IC_ERR_INVALID_ARG, "no image, or sizes < 1, or channels outside 1..4");
    if (img->memory != IC_MEM_HOST)
        return ic_fail(IC_ERR_UNSUPPORTED, "ic_image_chart draws into host images only");
    if (img->type != IC_U8 && img->type != IC_U16 && img->type != IC_F32)
        return ic_fail(IC_ERR_INVALID_ARG, "unknown sample type %d", (int)img->type);
    const int w = img->width, h = img->height, ch = img->channels;
    const int has_alpha = ch == 2 || ch == 4;
    const unsigned scale = img->type == IC_U16 ? 257u : 1u; /* 255 -> 65535 */
    for (int y = 0; y < h; y++)
        for (int x = 0; x < w; x++)
            for (int c = 0; c < ch; c++) {
                const unsigned v = (has_alpha && c == ch - 1) ? alpha_sample(x, y, w, h)
                                                              : colour_sample(x, y, c, w, h, seed);
                if (img->type == IC_F32)
                    ic_image_setf(img, x, y, c, (float)v / 255.0f);
                else
                    ic_image_set(img, x, y, c, scale * v);
            }
    return IC_OK;
}
