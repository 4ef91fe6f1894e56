/*
 * backends.c - the backend table: the only place that knows every backend.
 * Order is the order of --list-backends; `auto` takes the usable backend with
 * the highest rank (a CUDA one when a device is present, else the best CPU one),
 * for 2D filtering as for the work of the optional entries (1D convolution,
 * matrix product: src/dispatch/signal.c). ic_cuda_device_count() asks the
 * backends' device_count entries.
 */
#include <pthread.h>
#include <string.h>

#include "core/error.h"
#include "dispatch/backend.h"
#include "dispatch/dispatch.h"

extern const ic_backend ic_backend_seq;
extern const ic_backend ic_backend_cpu;
#ifdef IC_HAVE_CUDA
extern const ic_backend ic_backend_cuda;
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

/* Probing a CUDA backend initialises the CUDA runtime (slow, and a process
 * that asked for a CPU backend should not pay it): each backend is probed
 * only when something asks about it, once per process. */
static int probed_usable[N_BACKENDS];
static int probed[N_BACKENDS];
static char probed_why[N_BACKENDS][160];
static pthread_mutex_t probe_lock = PTHREAD_MUTEX_INITIALIZER;

static int probe(int i)
{
    pthread_mutex_lock(&probe_lock);
    if (!probed[i]) {
        probed_why[i][0] = '\0';
        probed_usable[i] =
            table[i]->probe ? table[i]->probe(probed_why[i], sizeof probed_why[i]) : 1;
        probed[i] = 1;
    }
    const int usable = probed_usable[i];
    pthread_mutex_unlock(&probe_lock);
    return usable;
}

int ic_backend_count(void)
{
    return N_BACKENDS;
}

ic_status ic_backend_get(int i, ic_backend_info *info)
{
    if (!info || i < 0 || i >= N_BACKENDS)
        return ic_fail(IC_ERR_INVALID_ARG, "no backend %d (there are %d)", i, N_BACKENDS);
    memset(info, 0, sizeof *info);
    info->name = table[i]->name;
    info->summary = table[i]->summary;
    info->usable = probe(i);
    memcpy(info->why, probed_why[i], sizeof info->why);
    return IC_OK;
}

static int any(const ic_backend *b)
{
    (void)b;
    return 1;
}

const ic_backend *ic__backend_best(int (*has)(const ic_backend *))
{
    /* Highest rank first, stopping at the first usable one: a machine with a
     * GPU never probes the CPU backends, and the CUDA probes share one runtime
     * initialisation. Backends without what `has` asks for are not probed. */
    int done[N_BACKENDS] = {0};
    for (int n = 0; n < N_BACKENDS; n++) {
        int best = -1;
        for (int i = 0; i < N_BACKENDS; i++)
            if (!done[i] && has(table[i]) && (best < 0 || table[i]->rank > table[best]->rank))
                best = i;
        if (best < 0)
            return NULL;
        done[best] = 1;
        if (probe(best))
            return table[best];
    }
    return NULL;
}

const char *ic_backend_auto(void)
{
    const ic_backend *b = ic__backend_best(any);
    return b ? b->name : "seq";
}

const ic_backend *ic__backend_at(int i)
{
    return i >= 0 && i < N_BACKENDS ? table[i] : NULL;
}

int ic_cuda_device_count(void)
{
    /* The CUDA backends of one build see the same devices: the largest count
     * is every backend's; 0 in a build without them. */
    int n = 0;
    for (int i = 0; i < N_BACKENDS; i++)
        if (table[i]->device_count) {
            const int d = table[i]->device_count();
            n = d > n ? d : n;
        }
    return n;
}

const ic_backend *ic__backend_find(const char *name, int *usable, const char **why)
{
    for (int i = 0; i < N_BACKENDS; i++)
        if (strcmp(table[i]->name, name) == 0) {
            *usable = probe(i);
            *why = probed_why[i]; /* written once, before probed[i] was set */
            return table[i];
        }
    return NULL;
}
