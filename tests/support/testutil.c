/*
 * testutil.c - seeded PRNG, test images with padded rows and guard bytes,
 * random kernels and the oracle comparison shared by the tests (testutil.h).
 * Image addressing follows the layout definitions of imgconv.h (seed 004's
 * AoS/SoA, seed 000's pitched rows).
 */
#include "testutil.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int ict_checks, ict_failed;

/* ---- PRNG ------------------------------------------------------------------ */

void ict_rng_seed(ict_rng *r, uint64_t seed)
{
    r->s = seed;
}

uint64_t ict_next(ict_rng *r)
{
    uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

uint32_t ict_below(ict_rng *r, uint32_t n)
{
    return (uint32_t)(((ict_next(r) >> 32) * (uint64_t)n) >> 32);
}

int ict_range(ict_rng *r, int lo, int hi)
{
    return lo + (int)ict_below(r, (uint32_t)(hi - lo + 1));
}

double ict_uniform(ict_rng *r)
{
    return (double)(ict_next(r) >> 11) * 0x1.0p-53;
}

uint64_t ict_mix(uint64_t a, uint64_t b)
{
    ict_rng r;
    ict_rng_seed(&r, a ^ (b * 0xD1B54A32D192ED03ull));
    ict_next(&r);
    return ict_next(&r);
}

/* ---- test images -------------------------------------------------------------- */

static size_t row_bytes(int width, int channels, ic_layout layout, ic_sample_type type)
{
    const size_t es = type == IC_U16 ? 2u : type == IC_F32 ? 4u : 1u;
    return (layout == IC_AOS ? (size_t)width * (size_t)channels : (size_t)width) * es;
}

static size_t row_count(int height, int channels, ic_layout layout)
{
    return layout == IC_AOS ? (size_t)height : (size_t)height * (size_t)channels;
}

int ict_buf_alloc(ict_buf *b, int width, int height, int channels, ic_layout layout,
                  size_t extra_pitch)
{
    return ict_buf_alloc_type(b, width, height, channels, layout, extra_pitch, IC_U8);
}

int ict_buf_alloc_type(ict_buf *b, int width, int height, int channels, ic_layout layout,
                       size_t extra_pitch, ic_sample_type type)
{
    memset(b, 0, sizeof *b);
    if (width < 1 || height < 1 || channels < 1 || channels > 4)
        return -1;
    if (type == IC_U16)
        extra_pitch += extra_pitch & 1u; /* 16-bit rows start on even addresses */
    if (type == IC_F32)
        extra_pitch = (extra_pitch + 3u) & ~(size_t)3u; /* float rows on 4-byte addresses */
    size_t pitch = row_bytes(width, channels, layout, type) + extra_pitch;
    size_t rows = row_count(height, channels, layout);
    if (rows != 0 && pitch > ((size_t)-1 - 4096) / rows)
        return -1;
    b->bytes = pitch * rows;
    b->guard = 64;
    b->mem = malloc(b->bytes + b->guard);
    if (!b->mem)
        return -1;
    b->img.width = width;
    b->img.height = height;
    b->img.channels = channels;
    b->img.layout = layout;
    b->img.type = type;
    b->img.pitch = pitch;
    b->img.data = b->mem;
    b->img.owner = 0;
    return 0;
}

void ict_buf_free(ict_buf *b)
{
    free(b->mem);
    memset(b, 0, sizeof *b);
}

void ict_buf_fill(ict_buf *b, uint8_t byte)
{
    memset(b->mem, byte, b->bytes + b->guard);
}

int ict_buf_is_sample(const ict_buf *b, size_t off)
{
    if (off >= b->bytes)
        return 0;
    return off % b->img.pitch <
           row_bytes(b->img.width, b->img.channels, b->img.layout, b->img.type);
}

void ict_buf_random(ict_buf *b, ict_rng *r, int alpha_style)
{
    for (size_t i = 0; i < b->bytes + b->guard; i++)
        b->mem[i] = (uint8_t)(ict_next(r) >> 56);
    const ic_image *im = &b->img;
    const int max = ict_type_max(im);
    if (im->type == IC_U16) /* the full range, and a fifth of the samples at its ends */
        for (int y = 0; y < im->height; y++)
            for (int x = 0; x < im->width; x++)
                for (int c = 0; c < im->channels; c++) {
                    const uint32_t u = ict_below(r, 10);
                    if (u == 0)
                        ict_set_value(im, x, y, c, ict_range(r, 0, 15));
                    else if (u == 1)
                        ict_set_value(im, x, y, c, ict_range(r, max - 15, max));
                }
    if (im->channels != 2 && im->channels != 4)
        return;
    const int ac = im->channels - 1;
    for (int y = 0; y < im->height; y++) {
        for (int x = 0; x < im->width; x++) {
            uint32_t u = ict_below(r, 10);
            if (alpha_style == 2)
                ict_set_value(im, x, y, ac, max);
            else if (alpha_style == 1)
                ict_set_value(im, x, y, ac, u < 4 ? 0 : u < 8 ? max : ict_range(r, 1, max - 1));
        }
    }
}

int ict_buf_padding_is(const ict_buf *b, uint8_t byte, size_t *bad_off)
{
    const size_t pitch = b->img.pitch;
    const size_t used = row_bytes(b->img.width, b->img.channels, b->img.layout, b->img.type);
    for (size_t row = 0; row * pitch < b->bytes; row++) {
        for (size_t i = row * pitch + used; i < (row + 1) * pitch; i++) {
            if (b->mem[i] != byte) {
                if (bad_off)
                    *bad_off = i;
                return 0;
            }
        }
    }
    for (size_t i = b->bytes; i < b->bytes + b->guard; i++) {
        if (b->mem[i] != byte) {
            if (bad_off)
                *bad_off = i;
            return 0;
        }
    }
    return 1;
}

/* ---- random kernels ------------------------------------------------------------ */

/* Divisors whose quotients k/d are never exact ties unless float32 computes
 * them exactly too: odd numbers and powers of two. */
static const int int_divisors[] = {1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 25, 32, 49, 64, 81, 128, 255};

ic_status ict_kernel_random(ic_kernel *k, ict_rng *r, int kw, int kh, int type)
{
    const int n = kw * kh;
    float *coef = calloc((size_t)n, sizeof *coef);
    if (!coef)
        return IC_ERR_NOMEM;
    double divisor = 1.0, s = 0.0, sabs = 0.0;
    switch (type) {
    case ICT_K_FLOAT: {
        for (int i = 0; i < n; i++) {
            coef[i] = (float)(ict_uniform(r) * 2.0 - 0.7);
            sabs += fabs((double)coef[i]);
        }
        if (sabs == 0.0) {
            coef[0] = 1.0f;
            sabs = 1.0;
        }
        const double target = 0.5 + 2.0 * ict_uniform(r); /* sum of |weights| */
        if (ict_below(r, 3) == 0) {                       /* no divisor: scale the coefficients */
            for (int i = 0; i < n; i++)
                coef[i] = (float)((double)coef[i] * target / sabs);
        } else {
            divisor = sabs / target;
            if (ict_below(r, 5) == 0)
                divisor = -divisor;
        }
        break;
    }
    case ICT_K_INT: {
        for (int i = 0; i < n; i++) {
            coef[i] = (float)ict_range(r, -3, 6);
            s += (double)coef[i];
            sabs += fabs((double)coef[i]);
        }
        const double target = fmax(1.0, fmax(fabs(s), sabs / 3.0));
        const int nd = (int)(sizeof int_divisors / sizeof int_divisors[0]);
        int pick = 0;
        while (pick < nd - 1 && int_divisors[pick] < target / 2.0)
            pick++;
        pick += ict_range(r, -1, 1);
        pick = pick < 0 ? 0 : pick >= nd ? nd - 1 : pick;
        divisor = (double)int_divisors[pick];
        break;
    }
    case ICT_K_BLUR:
        for (int i = 0; i < n; i++) {
            coef[i] = ict_below(r, 6) == 0 ? 0.0f : (float)ict_uniform(r);
            s += (double)coef[i];
        }
        if (s == 0.0) {
            coef[n / 2] = 1.0f;
            s = 1.0;
        }
        divisor = s;
        break;
    case ICT_K_SHARPEN: {
        const int centre = (kh / 2) * kw + kw / 2;
        for (int i = 0; i < n; i++) {
            if (i != centre) {
                coef[i] = (float)(-ict_uniform(r) / (double)n);
                s += (double)coef[i];
            }
        }
        coef[centre] = (float)(1.0 - s);
        s += (double)coef[centre];
        divisor = s; /* float rounding of the centre: divide by the exact sum */
        break;
    }
    case ICT_K_LOWRANK: {
        const int rank = ict_range(r, 1, 3);
        for (int t = 0; t < rank; t++) {
            int col[IC_MAX_KERNEL], row[IC_MAX_KERNEL];
            for (int j = 0; j < kh; j++)
                col[j] = ict_range(r, -2, 4);
            for (int i = 0; i < kw; i++)
                row[i] = ict_range(r, -2, 4);
            for (int j = 0; j < kh; j++)
                for (int i = 0; i < kw; i++)
                    coef[j * kw + i] += (float)(col[j] * row[i]);
        }
        for (int i = 0; i < n; i++)
            sabs += fabs((double)coef[i]);
        divisor = 1.0; /* the power of two nearest to sum|coef| / 2 */
        while (divisor * 2.0 < sabs / 2.0)
            divisor *= 2.0;
        break;
    }
    default: /* ICT_K_ONEHOT */
        coef[ict_below(r, (uint32_t)n)] = 1.0f;
        break;
    }
    ic_status st = ic_kernel_create(k, kw, kh, coef, divisor);
    free(coef);
    return st;
}

const char *ict_kernel_type_name(int type)
{
    static const char *const names[] = {"float", "int", "blur", "sharpen", "onehot", "lowrank"};
    return type >= 0 && type < ICT_K_COUNT ? names[type] : "?";
}

const char *ict_border_str(ic_border b)
{
    switch (b) {
    case IC_BORDER_CONSTANT:
        return "constant";
    case IC_BORDER_REPLICATE:
        return "replicate";
    case IC_BORDER_MIRROR:
        return "mirror";
    case IC_BORDER_REFLECT:
        return "reflect";
    case IC_BORDER_WRAP:
        return "wrap";
    }
    return "?";
}

const char *ict_alpha_str(ic_alpha a)
{
    switch (a) {
    case IC_ALPHA_AUTO:
        return "auto";
    case IC_ALPHA_PREMULTIPLY:
        return "premultiply";
    case IC_ALPHA_KEEP:
        return "keep";
    case IC_ALPHA_INDEPENDENT:
        return "independent";
    }
    return "?";
}

const char *ict_layout_str(ic_layout l)
{
    return l == IC_AOS ? "aos" : l == IC_SOA ? "soa" : "?";
}

/* ---- comparison ---------------------------------------------------------------- */

void ict_cmp_init(ict_cmp *c)
{
    memset(c, 0, sizeof *c);
}

static void compare_sample(ict_cmp *cmp, int x, int y, int c, int got, double v, double s, int max)
{
    const int want = ict_round_max(v, max);
    int lo = 0, hi = max;
    if (s < ICT_SLACK_ANY) {
        lo = ict_round_max(v - s, max);
        hi = ict_round_max(v + s, max);
    }
    cmp->samples++;
    if (got == want)
        cmp->exact++;
    const int bad = got < lo - 1 || got > hi + 1;
    const int unexplained = got < lo || got > hi;
    if (bad)
        cmp->bad++;
    else if (unexplained)
        cmp->unexplained++;
    if ((bad && (!cmp->has_first || cmp->has_first == 2)) || (unexplained && !cmp->has_first)) {
        cmp->has_first = bad ? 1 : 2;
        cmp->x = x;
        cmp->y = y;
        cmp->c = c;
        cmp->got = got;
        cmp->want = want;
        cmp->expected = v;
        cmp->slack = s;
    }
}

void ict_compare_row(ict_cmp *cmp, const ic_image *dst, int y, const double *val,
                     const double *slack)
{
    const int nch = dst->channels;
    for (int x = 0; x < dst->width; x++) {
        for (int c = 0; c < nch; c++) {
            const size_t at = (size_t)x * (size_t)nch + (size_t)c;
            compare_sample(cmp, x, y, c, ict_value(dst, x, y, c), val[at], slack ? slack[at] : 0.0,
                           ict_type_max(dst));
        }
    }
}

void ict_compare_rows(ict_cmp *cmp, const ic_image *dst, int y0, int y1, const double *val,
                      const double *slack)
{
    const size_t row = (size_t)dst->width * (size_t)dst->channels;
    for (int y = y0; y < y1; y++) {
        const size_t off = (size_t)(y - y0) * row;
        ict_compare_row(cmp, dst, y, val + off, slack ? slack + off : NULL);
    }
}

int ict_cmp_passed(const ict_cmp *c)
{
    return c->bad == 0 && c->unexplained <= c->samples / 1000;
}

void ict_cmp_print(const ict_cmp *c)
{
    printf("    %lld samples: %lld exact, %lld off by more than 1 level, %lld off by 1 "
           "without a rounding-boundary reason\n",
           c->samples, c->exact, c->bad, c->unexplained);
    if (c->has_first) {
        printf("    first %s sample: x=%d y=%d c=%d got=%d expected=%.6f (round %d",
               c->has_first == 1 ? "bad" : "unexplained", c->x, c->y, c->c, c->got, c->expected,
               c->want);
        if (c->slack >= ICT_SLACK_ANY)
            printf(", any value accepted");
        else if (c->slack > 0.0)
            printf(", float32 slack %.3g", c->slack);
        printf(")\n");
    }
}

int ict_oracle_check(const ic_image *src, const ic_kernel *k, const ic_params *p,
                     const ic_image *dst, int y0, int y1, ict_cmp *cmp)
{
    ict_cmp_init(cmp);
    const size_t n = (size_t)(y1 - y0) * (size_t)src->width * (size_t)src->channels;
    double *val = malloc((n ? n : 1) * sizeof *val), *slack = malloc((n ? n : 1) * sizeof *slack);
    int r = -1;
    if (val && slack) {
        ict_oracle_rows(src, k, p, y0, y1, val, slack);
        ict_compare_rows(cmp, dst, y0, y1, val, slack);
        r = ict_cmp_passed(cmp);
    }
    free(val);
    free(slack);
    return r;
}

void ict_run_env(int *quick, uint64_t *seed, uint64_t def_seed, int *cases, int def_cases,
                 int quick_cases)
{
    const char *q = getenv("IC_TEST_QUICK");
    *quick = q && q[0] && strcmp(q, "0") != 0;
    const char *e = getenv("ICT_SEED");
    *seed = e ? strtoull(e, NULL, 0) : def_seed;
    e = getenv("ICT_CASES");
    *cases = e ? atoi(e) : *quick ? quick_cases : def_cases;
}

int ict_part(int index)
{
    const char *e = getenv("ICT_PART");
    int k = 0, n = 0;
    char tail;
    if (!e || sscanf(e, "%d/%d%c", &k, &n, &tail) != 2 || n < 1 || k < 1 || k > n)
        return 1;
    return index % n == k - 1;
}

void ict_fake_icc(uint8_t *p, size_t n, const char *space, int d50)
{
    static const uint8_t d50_xyz[12] = {0, 0, 0xF6, 0xD6, 0, 1, 0, 0, 0, 0, 0xD3, 0x2D};
    memset(p, 0, n);
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(n >> (24 - 8 * i));
    p[8] = 0x02, p[9] = 0x10; /* version 2.1 */
    memcpy(p + 12, "mntr", 4);
    memcpy(p + 16, space, 4);
    memcpy(p + 20, "XYZ ", 4);
    memcpy(p + 36, "acsp", 4);
    if (d50)
        memcpy(p + 68, d50_xyz, sizeof d50_xyz); /* X 0.9642, Y 1.0, Z 0.8249 in s15.16 */
    for (size_t i = 132; i < n; i++)
        p[i] = (uint8_t)(i * 13 + 5 + (i >> 9));
}
