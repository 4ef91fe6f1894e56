/*
 * bench_cupti.c - kernel durations by CUPTI's activity records (bench_cupti.h).
 *
 * Each run is a window of CUPTI timestamps (bc_begin .. bc_end, the caller
 * synchronising the device before bc_end); a kernel record belongs to the
 * run whose window holds its start and end (CUPTI's kernel timestamps and
 * cuptiGetTimestamp share one clock). Not external correlation ids: CUPTI
 * emits those records only along API activity records, and none came back.
 */
#include "bench_cupti.h"

#include <stdio.h>

#ifdef IC_HAVE_CUPTI

#include <cupti.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define BC_BUF_BYTES (4u << 20)
#define BC_MAX_RECS 65536

typedef struct {
    uint64_t start, end; /* ns, CUPTI's clock */
} bc_rec;

static bc_rec g_kern[BC_MAX_RECS];
static uint64_t g_win[BC_MAX_IDS + 1][2]; /* run id -> [begin, end] */
static unsigned g_cur;
static int g_nkern, g_active, g_lost;

static void CUPTIAPI buffer_requested(uint8_t **buffer, size_t *size, size_t *max_records)
{
    *buffer = (uint8_t *)aligned_alloc(8, BC_BUF_BYTES);
    *size = *buffer ? BC_BUF_BYTES : 0;
    *max_records = 0;
}

static void CUPTIAPI buffer_completed(CUcontext ctx, uint32_t stream, uint8_t *buffer, size_t size,
                                      size_t valid)
{
    (void)ctx, (void)stream, (void)size;
    CUpti_Activity *rec = NULL;
    while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
        if (rec->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL ||
            rec->kind == CUPTI_ACTIVITY_KIND_KERNEL) {
            const CUpti_ActivityKernel10 *k = (const CUpti_ActivityKernel10 *)rec;
            if (g_nkern < BC_MAX_RECS)
                g_kern[g_nkern++] = (bc_rec){k->start, k->end};
            else
                g_lost++;
        }
    }
    size_t dropped = 0;
    if (cuptiActivityGetNumDroppedRecords(ctx, stream, &dropped) == CUPTI_SUCCESS && dropped)
        g_lost += (int)dropped;
    free(buffer);
}

int bc_open(char *why, size_t n)
{
    if (g_active)
        return 0;
    const char *what = NULL;
    CUptiResult r = cuptiActivityRegisterCallbacks(buffer_requested, buffer_completed);
    if (r != CUPTI_SUCCESS)
        what = "cuptiActivityRegisterCallbacks";
    else if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL)) != CUPTI_SUCCESS)
        what = "cuptiActivityEnable(CONCURRENT_KERNEL)";
    if (what) {
        const char *s = NULL;
        cuptiGetResultString(r, &s);
        snprintf(why, n, "%s: %s", what, s ? s : "unknown CUPTI error");
        return -1;
    }
    g_active = 1;
    return 0;
}

int bc_active(void)
{
    return g_active;
}

void bc_close(void)
{
    if (!g_active)
        return;
    cuptiActivityFlushAll(1);
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    g_active = 0;
    g_nkern = g_lost = 0;
}

void bc_begin(unsigned id)
{
    if (!g_active || id < 1 || id > BC_MAX_IDS)
        return;
    g_cur = id;
    g_win[id][1] = 0;
    cuptiGetTimestamp(&g_win[id][0]);
}

void bc_end(void)
{
    if (g_active && g_cur)
        cuptiGetTimestamp(&g_win[g_cur][1]);
    g_cur = 0;
}

int bc_collect(double *ms, int nids)
{
    if (!g_active)
        return -1;
    cuptiActivityFlushAll(1);
    for (int i = 0; i < nids; i++)
        ms[i] = 0;
    if (nids > BC_MAX_IDS)
        nids = BC_MAX_IDS;
    int used = 0;
    for (int i = 0; i < g_nkern; i++)
        for (int id = 1; id <= nids; id++)
            if (g_win[id][1] && g_kern[i].start >= g_win[id][0] && g_kern[i].end <= g_win[id][1]) {
                ms[id - 1] += (double)(g_kern[i].end - g_kern[i].start) * 1e-6;
                used++;
                break;
            }
    for (int id = 1; id <= nids; id++)
        g_win[id][0] = g_win[id][1] = 0;
    g_nkern = 0;
    const int lost = g_lost;
    g_lost = 0;
    return lost ? -1 : used;
}

#else /* !IC_HAVE_CUPTI */

int bc_open(char *why, size_t n)
{
    snprintf(why, n, "imgconv-bench was built without CUPTI");
    return -1;
}

int bc_active(void)
{
    return 0;
}

void bc_close(void)
{
}

void bc_begin(unsigned id)
{
    (void)id;
}

void bc_end(void)
{
}

int bc_collect(double *ms, int nids)
{
    (void)ms, (void)nids;
    return -1;
}

#endif
