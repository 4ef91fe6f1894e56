/*
 * backends.c - the backend table: the only place that knows every backend.
 * Order is the order of --list-backends; `auto` takes the usable backend with
 * the highest rank (a CUDA one when a device is present, else the best CPU one).
 */
#include <pthread.h>
#include <string.h>

#include "core/backend.h"
#include "dispatch/dispatch.h"

extern const ic_backend ic_backend_seq;
extern const ic_backend ic_backend_cpu;
#ifdef IC_HAVE_CUDA
/* TEMPORARY while the fast path is written: weak, skipped when absent. */
extern const ic_backend ic_backend_cuda __attribute__((weak));
extern const ic_backend ic_backend_cuda_global;
extern const ic_backend ic_backend_cuda_const;
extern const ic_backend ic_backend_cuda_tiled_in;
extern const ic_backend ic_backend_cuda_tiled_out;
extern const ic_backend ic_backend_cuda_tiled_cached;
extern const ic_backend ic_backend_cuda_tiled_halo;
extern const ic_backend ic_backend_cuda_gemm;
#endif

static const ic_backend *const table[] = {
    &ic_backend_seq,
    &ic_backend_cpu,
#ifdef IC_HAVE_CUDA
    &ic_backend_cuda,
    &ic_backend_cuda_global,
    &ic_backend_cuda_const,
    &ic_backend_cuda_tiled_in,
    &ic_backend_cuda_tiled_out,
    &ic_backend_cuda_tiled_cached,
    &ic_backend_cuda_tiled_halo,
    &ic_backend_cuda_gemm,
#endif
};
#define N_BACKENDS ((int)(sizeof table / sizeof *table))

/* Probing a CUDA backend initialises the runtime (slow): do it once. The
 * compacted list skips entries whose (weak) symbol is absent from this build. */
static const ic_backend *list[N_BACKENDS];
static int n_list;
static int probed_usable[N_BACKENDS];
static char probed_why[N_BACKENDS][160];
static pthread_once_t probe_once = PTHREAD_ONCE_INIT;

static void probe_all(void)
{
    for (int i = 0; i < N_BACKENDS; i++) {
        if (!table[i])
            continue;
        const int k = n_list++;
        list[k] = table[i];
        probed_why[k][0] = '\0';
        probed_usable[k] = list[k]->probe ? list[k]->probe(probed_why[k], sizeof probed_why[k]) : 1;
    }
}

int ic_backend_count(void)
{
    pthread_once(&probe_once, probe_all);
    return n_list;
}

ic_status ic_backend_get(int i, ic_backend_info *info)
{
    pthread_once(&probe_once, probe_all);
    if (!info || i < 0 || i >= n_list)
        return IC_ERR_INVALID_ARG;
    memset(info, 0, sizeof *info);
    info->name = list[i]->name;
    info->summary = list[i]->summary;
    info->usable = probed_usable[i];
    memcpy(info->why, probed_why[i], sizeof info->why);
    return IC_OK;
}

const char *ic_backend_auto(void)
{
    pthread_once(&probe_once, probe_all);
    int best = -1;
    for (int i = 0; i < n_list; i++)
        if (probed_usable[i] && (best < 0 || list[i]->rank > list[best]->rank))
            best = i;
    return best >= 0 ? list[best]->name : "seq";
}

const ic_backend *ic__backend_find(const char *name, int *usable, const char **why)
{
    pthread_once(&probe_once, probe_all);
    for (int i = 0; i < n_list; i++)
        if (strcmp(list[i]->name, name) == 0) {
            *usable = probed_usable[i];
            *why = probed_why[i];
            return list[i];
        }
    return NULL;
}
