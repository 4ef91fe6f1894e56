/*
 * cpu_band.c - one task of the `cpu` backend: a row band of one column strip
 * of one plane, filtered through a ring of kh+1 float rows.
 *
 * Seed 004's sequential convolution visits kw*kh input samples per output
 * sample and converts each one from uint8 on the fly. Here every input row a
 * task needs is converted once (from uint8 or uint16: the converter is chosen
 * per row) into a padded float row: the horizontal border
 * (ic_border_map) is applied while converting, the vertical one by choosing
 * which source row fills the ring slot of a virtual row index. Virtual row v
 * lives in slot v mod (kh+1), so the kh+1 rows of two output rows (the direct
 * path makes two at a time) always sit in distinct slots and moving down
 * converts only the new rows.
 *
 * Column strips keep the ring inside the L2 cache for tall kernels on wide
 * images; row bands give the thread pool its tasks.
 */
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "core/border.h"
#include "cpu/cpu_internal.h"

/* Ring budget per worker: half of a typical 1 MiB L2, in floats. */
#ifndef RING_FLOATS
#define RING_FLOATS (128 * 1024)
#endif
/* Narrowest strip worth its halo, in samples. */
#define MIN_STRIP 512
/* Tasks per worker: enough for the atomic hand-out to balance the cores. */
#define TASKS_PER_WORKER 4
/* Fewest rows in a band: the band re-reads kh-1 halo rows. */
#define MIN_BAND_ROWS 8
/* How many rows ahead load_row prefetches the source. */
#ifndef PREFETCH_ROWS
#define PREFETCH_ROWS 2
#endif
/* Samples per separable pass: the temporary row stays in L1. */
#ifndef SEP_CHUNK
#define SEP_CHUNK 2048
#endif

static size_t round_up(size_t v, size_t a)
{
    return (v + a - 1) / a * a;
}

void ic_cpu_plan_tasks(cpu_plan *plan, int workers)
{
    const ic_job *job = plan->job;
    int w = job->src->width, h = job->src->height;
    int step = plan->step;
    long halo = (long)(job->kw - 1) * step;
    long strip = RING_FLOATS / job->kh - halo;
    if (strip < MIN_STRIP)
        strip = MIN_STRIP;
    long px = plan->tiny ? 5 : strip / step;
    if (px >= w)
        px = w;
    plan->strip_px = (int)px;
    plan->nstrips = (int)((w + px - 1) / px);

    int per_band = plan->planes * plan->nstrips;
    int target = workers > 1 ? workers * TASKS_PER_WORKER : 1;
    int nbands = (target + per_band - 1) / per_band;
    if (nbands < 1)
        nbands = 1;
    int rows = (h + nbands - 1) / nbands;
    if (rows < MIN_BAND_ROWS)
        rows = MIN_BAND_ROWS;
    if (plan->tiny)
        rows = 3;
    if (rows > h)
        rows = h;
    plan->band_rows = rows;
    plan->nbands = (h + rows - 1) / rows;
    plan->chunk = plan->tiny ? 13 : SEP_CHUNK;
    if (plan->premul) /* whole pixels per pass: each is un-premultiplied right after it */
        plan->chunk -= plan->chunk % plan->step;
}

int ic_cpu_plan_ntasks(const cpu_plan *plan)
{
    return plan->planes * plan->nbands * plan->nstrips;
}

/* Floats in one ring row of a plan (padded strip + slack, rounded for alignment). */
static size_t ring_pitch(const cpu_plan *plan)
{
    size_t samples = ((size_t)plan->strip_px + (size_t)plan->job->kw - 1) * (size_t)plan->step;
    return round_up(samples + CPU_SLACK, CPU_ALIGN / sizeof(float));
}

/* Grows *buf to hold n elements of size sz, zero-filled, aligned. */
static ic_status grow(void **buf, size_t *cap, size_t n, size_t sz)
{
    if (n <= *cap)
        return IC_OK;
    if (n > SIZE_MAX / sz)
        return IC_ERR_TOO_LARGE;
    size_t bytes = round_up(n * sz, CPU_ALIGN);
    void *p = aligned_alloc(CPU_ALIGN, bytes);
    if (!p)
        return IC_ERR_NOMEM;
    memset(p, 0, bytes);
    free(*buf);
    *buf = p;
    *cap = n;
    return IC_OK;
}

ic_status ic_cpu_scratch_reserve(cpu_scratch *s, const cpu_plan *plan)
{
    const ic_job *job = plan->job;
    size_t kh = (size_t)job->kh + 1, pitch = ring_pitch(plan); /* ring: kh+1 rows */
    if (pitch > SIZE_MAX / kh)
        return IC_ERR_TOO_LARGE;
    size_t halo = ((size_t)job->kw - 1) * (size_t)plan->step;
    ic_status st = grow((void **)&s->ring, &s->cap_ring, kh * pitch, sizeof(float));
    if (st == IC_OK)
        st = grow((void **)&s->rows, &s->cap_rows, 2 * kh, sizeof(float *));
    if (st == IC_OK)
        st = grow((void **)&s->tag, &s->cap_tag, kh + (size_t)job->kw, sizeof(int));
    if (st == IC_OK && plan->premul && plan->job->src->layout == IC_SOA)
        /* counted in bytes: the buffer serves 8- and 16-bit jobs in turn */
        st = grow((void **)&s->bytes, &s->cap_bytes,
                  2 * (size_t)plan->strip_px * (size_t)plan->step *
                      ic_sample_size(plan->job->src->type),
                  1);
    if (st == IC_OK && plan->path == CPU_SEP) {
        st = grow((void **)&s->tmp, &s->cap_tmp, (size_t)plan->chunk + halo + CPU_SLACK,
                  sizeof(float));
        if (st == IC_OK && plan->rank > 1)
            st =
                grow((void **)&s->acc, &s->cap_acc, (size_t)plan->chunk + CPU_SLACK, sizeof(float));
    }
    return st;
}

void ic_cpu_scratch_free(cpu_scratch *s)
{
    free(s->ring);
    free(s->tmp);
    free(s->acc);
    free(s->bytes);
    free((void *)s->rows);
    free(s->tag);
    memset(s, 0, sizeof *s);
}

/* Where one task reads and writes. */
struct task_geom {
    const uint8_t *src; /* plane base */
    size_t spitch;
    uint8_t *dst;
    size_t dpitch;
    size_t splane, dplane; /* bytes per plane (premultiplied SoA: gathered, scattered) */
    int soa_gather;        /* premultiplied SoA: rows interleave the planes */
    int type;              /* ic_sample_type of both images */
    size_t es;             /* bytes per sample: 1, 2 or 4 */
    int w, h, step;
    int x0, x1, y0, y1;
    int lo, hi;        /* pixels [lo, hi) of the padded strip come straight from the row */
    int nl, nr;        /* padding pixels left of lo and from hi on */
    const int *padmap; /* nl + nr mapped x (or -1) */
    size_t prow;       /* samples of a padded row */
};

/* Sample i of a source row, as a float (the padding and the premultiplied
 * SoA gather: a few samples per row, so the type test costs nothing). */
static inline float sample_f(const uint8_t *row, size_t i, int type)
{
    if (type == IC_F32)
        return ((const float *)(const void *)row)[i];
    return type == IC_U16 ? (float)((const uint16_t *)(const void *)row)[i] : (float)row[i];
}

/* Row sy of every plane of an SoA image, interleaved into dst (premultiplied
 * alpha needs each pixel's channels together): the padded strip's pixels
 * [lo, hi) straight from the rows, the padding through padmap. */
static void gather_row(const cpu_plan *plan, const struct task_geom *g, int sy, float *dst)
{
    const int ch = g->step, mid = g->hi - g->lo;
    const float bv = plan->job->border_value;
    for (int c = 0; c < ch; c++) {
        const uint8_t *row = g->src + (size_t)c * g->splane + (size_t)sy * g->spitch;
        float *d = dst + c;
        for (int k = 0; k < g->nl; k++, d += ch)
            *d = g->padmap[k] < 0 ? bv : sample_f(row, (size_t)g->padmap[k], g->type);
        for (int x = g->lo; x < g->lo + mid; x++, d += ch)
            *d = sample_f(row, (size_t)x, g->type);
        for (int k = 0; k < g->nr; k++, d += ch)
            *d = g->padmap[g->nl + k] < 0 ? bv
                                          : sample_f(row, (size_t)g->padmap[g->nl + k], g->type);
    }
}

/* The samples of virtual row v of the padded strip, as they are. */
static void load_row_samples(const cpu_plan *plan, const struct task_geom *g, int v, float *dst)
{
    const ic_job *job = plan->job;
    int sy = ic_border_map(v, g->h, (int)job->border);
    float bv = job->border_value;
    if (sy < 0) {
        for (size_t k = 0; k < g->prow; k++)
            dst[k] = bv;
        return;
    }
    if (g->soa_gather) {
        gather_row(plan, g, sy, dst);
        return;
    }
    const uint8_t *row = g->src + (size_t)sy * g->spitch;
    int step = g->step;
    float *d = dst;
    for (int k = 0; k < g->nl; k++, d += step) {
        int m = g->padmap[k];
        for (int c = 0; c < step; c++)
            d[c] = m < 0 ? bv : sample_f(row, (size_t)m * (size_t)step + (size_t)c, g->type);
    }
    int mid = (g->hi - g->lo) * step;
    const uint8_t *from = row + (size_t)g->lo * (size_t)step * g->es;
    if (g->type == IC_F32)
        memcpy(d, from, (size_t)mid * sizeof(float));
    else if (g->type == IC_U16)
        plan->ops->widen16((const uint16_t *)(const void *)from, d, mid);
    else
        plan->ops->widen(from, d, mid);
    /* Start fetching the row needed PREFETCH_ROWS rows later: the direct path
     * converts two rows back to back and then computes, so the row right
     * after this one would come too late. */
    if (v >= 0 && v + PREFETCH_ROWS < g->h) {
        const uint8_t *next =
            g->src + (size_t)(v + PREFETCH_ROWS) * g->spitch + (size_t)g->lo * (size_t)step * g->es;
        for (size_t k = 0; k < (size_t)mid * g->es; k += 64)
            __builtin_prefetch(next + k, 0, 1);
    }
    d += mid;
    for (int k = 0; k < g->nr; k++, d += step) {
        int m = g->padmap[g->nl + k];
        for (int c = 0; c < step; c++)
            d[c] = m < 0 ? bv : sample_f(row, (size_t)m * (size_t)step + (size_t)c, g->type);
    }
}

/* Fills dst with virtual row v of the padded strip (colour premultiplied by
 * alpha when the plan says so). */
static void load_row(const cpu_plan *plan, const struct task_geom *g, int v, float *dst)
{
    load_row_samples(plan, g, v, dst);
    if (plan->premul)
        plan->ops->premul(dst, g->step, (int)g->prow);
}

/* One output row through the rank-r factorisation, rounded into out. */
static void sep_row(const cpu_plan *plan, cpu_scratch *s, const float *const *rows, int n, int type,
                    uint8_t *out)
{
    const ic_job *job = plan->job;
    int kw = job->kw, kh = job->kh, step = plan->step;
    const float **rs = s->rows + kh + 1;
    int halo = (kw - 1) * step;
    for (int s0 = 0; s0 < n; s0 += plan->chunk) {
        int m = n - s0 < plan->chunk ? n - s0 : plan->chunk;
        for (int j = 0; j < kh; j++)
            rs[j] = rows[j] + s0;
        for (int r = 0; r < plan->rank; r++) {
            int last = r == plan->rank - 1;
            plan->ops->vpass(rs, plan->fcol + (size_t)r * (size_t)kh, kh, s->tmp, m + halo);
            plan->ops->hpass(s->tmp, plan->frow + (size_t)r * (size_t)kw, kw, step,
                             r ? s->acc : NULL, last ? NULL : s->acc, job->bias, plan->premul, type,
                             last ? out + (size_t)s0 * ic_sample_size((ic_sample_type)type) : NULL,
                             m);
        }
    }
}

/* Where output row y of the strip is written: the image row, or for
 * premultiplied SoA an interleaved row of s->bytes (then scatter_row); rows
 * y and y + 1 never share one. */
static uint8_t *out_row(const struct task_geom *g, cpu_scratch *s, int y)
{
    if (g->soa_gather)
        return s->bytes + (size_t)(y & 1) * (size_t)(g->x1 - g->x0) * (size_t)g->step * g->es;
    return g->dst + (size_t)y * g->dpitch + (size_t)g->x0 * (size_t)g->step * g->es;
}

/* Premultiplied SoA: output row y from its interleaved row into the planes. */
static void scatter_row(const struct task_geom *g, cpu_scratch *s, int y)
{
    const int ch = g->step;
    const uint8_t *src = out_row(g, s, y);
    for (int c = 0; c < ch; c++) {
        uint8_t *row =
            g->dst + (size_t)c * g->dplane + (size_t)y * g->dpitch + (size_t)g->x0 * g->es;
        if (g->type == IC_F32)
            for (int p = 0; p < g->x1 - g->x0; p++)
                ((float *)(void *)row)[p] = ((const float *)(const void *)src)[p * ch + c];
        else if (g->type == IC_U16)
            for (int p = 0; p < g->x1 - g->x0; p++)
                ((uint16_t *)(void *)row)[p] = ((const uint16_t *)(const void *)src)[p * ch + c];
        else
            for (int p = 0; p < g->x1 - g->x0; p++)
                row[p] = src[p * ch + c];
    }
}

void ic_cpu_run_task(void *arg, int task, int worker)
{
    const cpu_plan *plan = arg;
    const ic_job *job = plan->job;
    cpu_scratch *s = &plan->scratch[worker];
    const ic_image *src = job->src;
    ic_image *dst = job->dst;
    int kw = job->kw, kh = job->kh, cx = (kw - 1) / 2, cy = (kh - 1) / 2;

    int per_plane = plan->nbands * plan->nstrips;
    int plane = task / per_plane, rem = task % per_plane;
    int band = rem / plan->nstrips, strip = rem % plan->nstrips;

    struct task_geom g;
    g.w = src->width;
    g.h = src->height;
    g.step = plan->step;
    g.spitch = src->pitch;
    g.dpitch = dst->pitch;
    g.src = src->data + (size_t)plane * src->pitch * (size_t)src->height;
    g.dst = dst->data + (size_t)plane * dst->pitch * (size_t)dst->height;
    g.splane = src->pitch * (size_t)src->height;
    g.dplane = dst->pitch * (size_t)dst->height;
    g.soa_gather = plan->premul && src->layout == IC_SOA;
    g.type = (int)src->type;
    g.es = ic_sample_size(src->type);
    g.y0 = band * plan->band_rows;
    g.y1 = g.y0 + plan->band_rows < g.h ? g.y0 + plan->band_rows : g.h;
    g.x0 = strip * plan->strip_px;
    g.x1 = g.x0 + plan->strip_px < g.w ? g.x0 + plan->strip_px : g.w;
    g.lo = g.x0 - cx > 0 ? g.x0 - cx : 0;
    g.hi = g.x1 + cx < g.w ? g.x1 + cx : g.w;
    g.nl = g.lo - (g.x0 - cx);
    g.nr = g.x1 + cx - g.hi;
    g.prow = (size_t)(g.x1 - g.x0 + kw - 1) * (size_t)g.step;

    /* ring of nslot = kh+1 slots: the direct path makes two output rows at a
     * time from kh+1 input rows */
    const int nslot = kh + 1;
    int *tag = s->tag, *padmap = s->tag + nslot;
    for (int k = 0; k < g.nl; k++)
        padmap[k] = ic_border_map(g.x0 - cx + k, g.w, (int)job->border);
    for (int k = 0; k < g.nr; k++)
        padmap[g.nl + k] = ic_border_map(g.hi + k, g.w, (int)job->border);
    g.padmap = padmap;
    for (int k = 0; k < nslot; k++)
        tag[k] = INT_MIN;

    size_t pitch = ring_pitch(plan);
    const float **rows = s->rows;
    int n = (g.x1 - g.x0) * g.step;
    for (int y = g.y0; y < g.y1;) {
        int pair = plan->path == CPU_DIRECT && y + 1 < g.y1;
        for (int j = 0; j < kh + pair; j++) {
            int v = y + j - cy, k = ic_mod(v, nslot);
            float *slot = s->ring + (size_t)k * pitch;
            if (tag[k] != v) {
                load_row(plan, &g, v, slot);
                tag[k] = v;
            }
            rows[j] = slot;
        }
        if (plan->path == CPU_DIRECT)
            plan->ops->direct(rows, job->w, kw, kh, g.step, job->bias, plan->premul, g.type,
                              out_row(&g, s, y), pair ? out_row(&g, s, y + 1) : NULL, n);
        else
            sep_row(plan, s, rows, n, g.type, out_row(&g, s, y));
        for (int r = 0; g.soa_gather && r <= pair; r++)
            scatter_row(&g, s, y + r);
        y += 1 + pair;
    }
}
