/*
 * bench_cupti.c - kernel durations by CUPTI's activity records (bench_cupti.h).
 *
 * Kernel records carry a correlation id (one per launching API call); the
 * external-correlation records CUPTI emits for calls made between
 * cuptiActivityPushExternalCorrelationId and ...Pop map those ids to the run
 * ids given to bc_begin. Kernel records can arrive before or after their
 * external-correlation record, so both are kept until bc_collect.
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
    uint32_t corr;
    uint64_t value; /* kernel: duration ns; external: run id */
} bc_rec;

static bc_rec g_kern[BC_MAX_RECS], g_ext[BC_MAX_RECS];
static int g_nkern, g_next, g_active, g_lost;

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
                g_kern[g_nkern++] = (bc_rec){k->correlationId, k->end - k->start};
            else
                g_lost++;
        } else if (rec->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
            const CUpti_ActivityExternalCorrelation *e =
                (const CUpti_ActivityExternalCorrelation *)rec;
            if (g_next < BC_MAX_RECS)
                g_ext[g_next++] = (bc_rec){e->correlationId, e->externalId};
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
    else if ((r = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION)) != CUPTI_SUCCESS)
        what = "cuptiActivityEnable(EXTERNAL_CORRELATION)";
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
    cuptiActivityDisable(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
    g_active = 0;
    g_nkern = g_next = g_lost = 0;
}

void bc_begin(unsigned id)
{
    if (g_active)
        cuptiActivityPushExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
}

void bc_end(void)
{
    uint64_t last = 0;
    if (g_active)
        cuptiActivityPopExternalCorrelationId(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &last);
}

int bc_collect(double *ms, int nids)
{
    if (!g_active)
        return -1;
    cuptiActivityFlushAll(1);
    for (int i = 0; i < nids; i++)
        ms[i] = 0;
    int used = 0;
    for (int i = 0; i < g_nkern; i++)
        for (int j = 0; j < g_next; j++)
            if (g_ext[j].corr == g_kern[i].corr) {
                const uint64_t id = g_ext[j].value;
                if (id >= 1 && id <= (uint64_t)nids) {
                    ms[id - 1] += (double)g_kern[i].value * 1e-6;
                    used++;
                }
                break;
            }
    g_nkern = g_next = 0;
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
