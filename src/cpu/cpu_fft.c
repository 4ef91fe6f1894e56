/*
 * cpu_fft.c - the `cpu` backend's FFT path: correlation through KissFFT
 * (float32), for large full-rank kernels whose direct sum costs kw*kh
 * multiply-adds a sample.
 *
 * Overlap-save, as the cuda fast path's fft.cu: each plane is cut into tiles
 * of nx x ny input samples, tile t(u, v) = in(X0 + u - cx, Y0 + v - cy) - centre
 * read through ic_border_map (so every border mode keeps its meaning, and an
 * image smaller than the kernel is read as the definitions say), and the
 * circular correlation of t with the zero-padded weights is exact on its
 * first vx x vy samples:
 *   out = IFFT(FFT(t) * conj(FFT(w))) / (nx ny) + centre * sum(w) + bias,
 * rounded and clamped as the direct path rounds its float32 sums.
 * Centring (minus 128, or 32768 at 16 bits) halves the magnitudes and so the
 * rounding error; core/fft_model.c bounds what is left.
 *
 * One task is one tile of one plane, on one worker's buffers: real FFTs of
 * the ny rows into an ny x (nx/2 + 1) spectrum, then, COLS columns at a time
 * (one cache line of each row), the column FFT, the multiply by the kernel's
 * spectrum and the inverse column FFT while the column is in L1, and real
 * inverse FFTs of only the vy rows that hold outputs. The kernel's spectrum
 * is made once per weights and tile size and kept in the context.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu/cpu_fft.h"
#include "cpu/cpu_internal.h"

#ifdef IC_HAVE_KISSFFT

#include "core/border.h"
#include "kiss_fft.h"
#include "kiss_fftr.h"

const int ic_cpu_fft_built = 1;

/* Columns gathered at once: 8 complex floats are one 64-byte line of a row. */
enum { COLS = 8 };

typedef struct fft_worker {
    int nx, ny;           /* what the plans and buffers are for (0: none) */
    kiss_fftr_cfg rf, ri; /* real rows of nx, forward and inverse (not shareable: scratch inside) */
    kiss_fft_cfg cf, ci;  /* complex columns of ny */
    kiss_fft_cpx *spec;   /* ny rows of nx/2 + 1 */
    kiss_fft_cpx *col;    /* COLS columns of ny, then one of scratch */
    float *line;          /* nx */
    int *xmap;            /* nx: mapped x of each tile column, -1 for the border value */
} fft_worker;

struct cpu_fft {
    int nthreads;
    fft_worker *wk;
    /* conj(FFT(weights)) / (nx ny), column-major: (nx/2 + 1) columns of ny */
    kiss_fft_cpx *g;
    float *g_w;
    int g_kw, g_kh, g_nx, g_ny;
    double g_sum; /* sum of the weights, in float64 */
};

static void worker_free(fft_worker *w)
{
    kiss_fftr_free(w->rf);
    kiss_fftr_free(w->ri);
    kiss_fft_free(w->cf);
    kiss_fft_free(w->ci);
    free(w->spec);
    free(w->col);
    free(w->line);
    free(w->xmap);
    memset(w, 0, sizeof *w);
}

static ic_status worker_reserve(fft_worker *w, int nx, int ny)
{
    if (w->nx == nx && w->ny == ny)
        return IC_OK;
    worker_free(w);
    const size_t nh = (size_t)nx / 2 + 1;
    w->rf = kiss_fftr_alloc(nx, 0, NULL, NULL);
    w->ri = kiss_fftr_alloc(nx, 1, NULL, NULL);
    w->cf = kiss_fft_alloc(ny, 0, NULL, NULL);
    w->ci = kiss_fft_alloc(ny, 1, NULL, NULL);
    w->spec = malloc(nh * (size_t)ny * sizeof *w->spec);
    w->col = malloc((size_t)(COLS + 1) * (size_t)ny * sizeof *w->col);
    w->line = malloc((size_t)nx * sizeof *w->line);
    w->xmap = malloc((size_t)nx * sizeof *w->xmap);
    if (!w->rf || !w->ri || !w->cf || !w->ci || !w->spec || !w->col || !w->line || !w->xmap) {
        worker_free(w);
        return IC_ERR_NOMEM;
    }
    w->nx = nx;
    w->ny = ny;
    return IC_OK;
}

ic_status ic_cpu_fft_create(cpu_fft **f, int nthreads)
{
    *f = calloc(1, sizeof **f);
    if (!*f)
        return IC_ERR_NOMEM;
    (*f)->wk = calloc((size_t)nthreads, sizeof *(*f)->wk);
    if (!(*f)->wk) {
        free(*f);
        *f = NULL;
        return IC_ERR_NOMEM;
    }
    (*f)->nthreads = nthreads;
    return IC_OK;
}

void ic_cpu_fft_free(cpu_fft *f)
{
    if (!f)
        return;
    for (int i = 0; i < f->nthreads; i++)
        worker_free(&f->wk[i]);
    free(f->wk);
    free(f->g);
    free(f->g_w);
    free(f);
}

/* The kernel's spectrum for tiles of nx x ny, made on worker w's buffers;
 * kept while the weights and the tile stay the same. */
static ic_status kernel_spectrum(cpu_fft *f, fft_worker *w, const ic_job *job, int nx, int ny)
{
    const size_t nw = (size_t)job->kw * job->kh, nh = (size_t)nx / 2 + 1;
    if (f->g && f->g_kw == job->kw && f->g_kh == job->kh && f->g_nx == nx && f->g_ny == ny &&
        memcmp(f->g_w, job->w, nw * sizeof(float)) == 0)
        return IC_OK;
    free(f->g);
    free(f->g_w);
    f->g = malloc(nh * (size_t)ny * sizeof *f->g);
    f->g_w = malloc(nw * sizeof(float));
    if (!f->g || !f->g_w) {
        free(f->g);
        free(f->g_w);
        f->g = NULL;
        f->g_w = NULL;
        return IC_ERR_NOMEM;
    }
    memcpy(f->g_w, job->w, nw * sizeof(float));
    f->g_kw = job->kw;
    f->g_kh = job->kh;
    f->g_nx = nx;
    f->g_ny = ny;
    f->g_sum = 0.0;
    for (size_t t = 0; t < nw; t++)
        f->g_sum += job->w[t];
    for (int v = 0; v < ny; v++) {
        if (v < job->kh) {
            memset(w->line, 0, (size_t)nx * sizeof *w->line);
            memcpy(w->line, job->w + (size_t)v * job->kw, (size_t)job->kw * sizeof(float));
            kiss_fftr(w->rf, w->line, w->spec + (size_t)v * nh);
        } else {
            memset(w->spec + (size_t)v * nh, 0, nh * sizeof *w->spec);
        }
    }
    const float scale = (float)(1.0 / ((double)nx * ny));
    kiss_fft_cpx *c = w->col, *t = w->col + ny;
    for (size_t k = 0; k < nh; k++) {
        for (int v = 0; v < ny; v++)
            c[v] = w->spec[(size_t)v * nh + k];
        kiss_fft(w->cf, c, t);
        kiss_fft_cpx *gk = f->g + k * (size_t)ny;
        for (int v = 0; v < ny; v++) {
            gk[v].r = t[v].r * scale;
            gk[v].i = -t[v].i * scale;
        }
    }
    return IC_OK;
}

/* What every task of a run reads. */
typedef struct fft_run {
    const ic_job *job;
    const cpu_fft_geom *g;
    cpu_fft *f;
    int soa, u16;
    size_t es;     /* bytes a sample */
    float centre;  /* subtracted before the transform */
    float outside; /* border value minus centre */
    float add;     /* centre * sum(w) + bias, added back after */
} fft_run;

/* Address of sample (x, y) of plane c of img. */
static inline const uint8_t *at(const fft_run *r, const ic_image *img, int x, int y, int c)
{
    if (r->soa)
        return img->data + ((size_t)c * img->height + (size_t)y) * img->pitch + (size_t)x * r->es;
    return img->data + (size_t)y * img->pitch + ((size_t)x * img->channels + (size_t)c) * r->es;
}

/* Tile row v of the task into w->line (centred, border-mapped). */
static void load_row(const fft_run *r, fft_worker *w, int y, int c)
{
    const ic_image *src = r->job->src;
    const int my = ic_border_map(y, src->height, r->job->border);
    const int nx = r->g->nx;
    if (my < 0) {
        for (int u = 0; u < nx; u++)
            w->line[u] = r->outside;
        return;
    }
    const uint8_t *row = at(r, src, 0, my, c);
    const size_t step = r->soa ? 1 : (size_t)src->channels;
    if (r->u16) {
        const uint16_t *p = (const uint16_t *)(const void *)row;
        for (int u = 0; u < nx; u++) {
            const int mx = w->xmap[u];
            w->line[u] = mx < 0 ? r->outside : (float)p[(size_t)mx * step] - r->centre;
        }
    } else {
        for (int u = 0; u < nx; u++) {
            const int mx = w->xmap[u];
            w->line[u] = mx < 0 ? r->outside : (float)row[(size_t)mx * step] - r->centre;
        }
    }
}

/* Output row y (vx samples from x0, n of them inside the image) from w->line. */
static void store_row(const fft_run *r, const fft_worker *w, int x0, int y, int c, int n)
{
    ic_image *dst = r->job->dst;
    uint8_t *row = (uint8_t *)at(r, dst, x0, y, c);
    const size_t step = r->soa ? 1 : (size_t)dst->channels;
    if (r->u16) {
        uint16_t *p = (uint16_t *)(void *)row;
        for (int a = 0; a < n; a++)
            p[(size_t)a * step] = ic_round_u16(w->line[a] + r->add);
    } else {
        for (int a = 0; a < n; a++)
            row[(size_t)a * step] = ic_round_u8(w->line[a] + r->add);
    }
}

/* One tile of one plane (a cpu_task_fn). */
static void run_task(void *arg, int task, int worker)
{
    const fft_run *r = arg;
    const cpu_fft_geom *g = r->g;
    const ic_job *job = r->job;
    fft_worker *w = &r->f->wk[worker];
    const int tiles = g->tx * g->ty, c = task / tiles, tile = task % tiles;
    const int x0 = (tile % g->tx) * g->vx, y0 = (tile / g->tx) * g->vy;
    const int cx = (job->kw - 1) / 2, cy = (job->kh - 1) / 2;
    const int nx = g->nx, ny = g->ny;
    const size_t nh = (size_t)nx / 2 + 1;

    for (int u = 0; u < nx; u++)
        w->xmap[u] = ic_border_map(x0 + u - cx, job->src->width, job->border);
    for (int v = 0; v < ny; v++) {
        load_row(r, w, y0 + v - cy, c);
        kiss_fftr(w->rf, w->line, w->spec + (size_t)v * nh);
    }
    /* rows that hold outputs: the tile's first vy, those inside the image */
    int rows = job->src->height - y0;
    rows = rows < g->vy ? rows : g->vy;
    kiss_fft_cpx *t = w->col + (size_t)COLS * ny;
    for (size_t k0 = 0; k0 < nh; k0 += COLS) {
        const int nc = (int)(nh - k0 < COLS ? nh - k0 : COLS);
        for (int v = 0; v < ny; v++) {
            const kiss_fft_cpx *s = w->spec + (size_t)v * nh + k0;
            for (int j = 0; j < nc; j++)
                w->col[(size_t)j * ny + v] = s[j];
        }
        for (int j = 0; j < nc; j++) {
            kiss_fft_cpx *cj = w->col + (size_t)j * ny;
            const kiss_fft_cpx *gk = r->f->g + (k0 + (size_t)j) * ny;
            kiss_fft(w->cf, cj, t);
            for (int v = 0; v < ny; v++) {
                const float re = t[v].r * gk[v].r - t[v].i * gk[v].i;
                const float im = t[v].r * gk[v].i + t[v].i * gk[v].r;
                t[v].r = re;
                t[v].i = im;
            }
            kiss_fft(w->ci, t, cj);
        }
        for (int v = 0; v < rows; v++) {
            kiss_fft_cpx *s = w->spec + (size_t)v * nh + k0;
            for (int j = 0; j < nc; j++)
                s[j] = w->col[(size_t)j * ny + v];
        }
    }
    int cols = job->src->width - x0;
    cols = cols < g->vx ? cols : g->vx;
    for (int v = 0; v < rows; v++) {
        kiss_fftri(w->ri, w->spec + (size_t)v * nh, w->line);
        store_row(r, w, x0, y0 + v, c, cols);
    }
}

ic_status ic_cpu_fft_run(cpu_fft *f, const ic_job *job, const cpu_fft_geom *g,
                         struct cpu_pool *pool, int workers, char *err, size_t errlen)
{
    if (workers > f->nthreads)
        workers = f->nthreads;
    if (workers > g->tasks)
        workers = g->tasks;
    if (workers < 1)
        workers = 1;
    for (int i = 0; i < workers; i++)
        if (worker_reserve(&f->wk[i], g->nx, g->ny) != IC_OK) {
            snprintf(err, errlen, "cpu: cannot allocate FFT buffers of %dx%d", g->nx, g->ny);
            return IC_ERR_NOMEM;
        }
    if (kernel_spectrum(f, &f->wk[0], job, g->nx, g->ny) != IC_OK) {
        snprintf(err, errlen, "cpu: cannot allocate the kernel's spectrum");
        return IC_ERR_NOMEM;
    }
    fft_run r;
    r.job = job;
    r.g = g;
    r.f = f;
    r.soa = job->src->layout == IC_SOA;
    r.u16 = job->src->type == IC_U16;
    r.es = r.u16 ? 2 : 1;
    r.centre = r.u16 ? 32768.0f : 128.0f;
    r.outside = job->border_value - r.centre;
    r.add = (float)((double)r.centre * f->g_sum + (double)job->bias);
    ic_cpu_pool_run(pool, run_task, &r, g->tasks, workers);
    return IC_OK;
}

#else /* no KissFFT: the planner never picks the path */

const int ic_cpu_fft_built = 0;

ic_status ic_cpu_fft_create(cpu_fft **f, int nthreads)
{
    (void)nthreads;
    *f = NULL;
    return IC_ERR_UNSUPPORTED;
}

void ic_cpu_fft_free(cpu_fft *f)
{
    (void)f;
}

ic_status ic_cpu_fft_run(cpu_fft *f, const ic_job *job, const cpu_fft_geom *g,
                         struct cpu_pool *pool, int workers, char *err, size_t errlen)
{
    (void)f;
    (void)job;
    (void)g;
    (void)pool;
    (void)workers;
    snprintf(err, errlen, "cpu: this build has no FFT (KissFFT was not found)");
    return IC_ERR_UNSUPPORTED;
}

#endif
