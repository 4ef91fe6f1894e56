/*
 * cufft_lazy.cu - dlopen of libcufft on first use (see cufft_lazy.h for why).
 */
#include <dlfcn.h>
#include <mutex>
#include <stdio.h>
#include <string.h>

#include "cuda/fast/cufft_lazy.h"

#define IC_STR2(x) #x
#define IC_STR(x) IC_STR2(x)
#define IC_CUFFT_SONAME "libcufft.so." IC_STR(CUFFT_VER_MAJOR)

static std::once_flag g_once;
static ic_cufft_fns g_fns;
static int g_ok;
static char g_why[320];

/* dlsym into *slot; 0 when the symbol is missing. */
template <typename F> static int sym(void *h, const char *name, F *slot)
{
    void *p = dlsym(h, name);
    *slot = (F)p;
    return p != NULL;
}

static void load(void)
{
    const char *tried = IC_CUFFT_SONAME;
    void *h = dlopen(IC_CUFFT_SONAME, RTLD_NOW | RTLD_LOCAL);
    char first[160] = "";
    if (!h) {
        const char *e = dlerror();
        snprintf(first, sizeof first, "%s", e ? e : "not found");
#ifdef IC_CUDA_LIBDIR
        tried = IC_CUDA_LIBDIR "/" IC_CUFFT_SONAME;
        h = dlopen(tried, RTLD_NOW | RTLD_LOCAL);
#endif
    }
    if (!h) {
        const char *e = dlerror();
        snprintf(g_why, sizeof g_why, "cuFFT cannot be loaded (%s: %s%s%s)", tried,
                 e ? e : "not found", first[0] ? "; " : "", first);
        return;
    }
    ic_cufft_fns f;
    const int ok = sym(h, "cufftCreate", &f.create) && sym(h, "cufftDestroy", &f.destroy) &&
                   sym(h, "cufftSetAutoAllocation", &f.set_auto_allocation) &&
                   sym(h, "cufftMakePlanMany", &f.make_plan_many) &&
                   sym(h, "cufftSetWorkArea", &f.set_work_area) &&
                   sym(h, "cufftPlan2d", &f.plan_2d) && sym(h, "cufftExecR2C", &f.exec_r2c) &&
                   sym(h, "cufftExecC2R", &f.exec_c2r) && sym(h, "cufftSetStream", &f.set_stream);
    if (!ok) {
        snprintf(g_why, sizeof g_why, "cuFFT (%s) lacks a function imgconv needs", tried);
        dlclose(h);
        return;
    }
    /* cuFFT 11 (CUDA 12) declared it without the symbol name: only the
     * signature of cuFFT 12 (CUDA 13) on is used, the one of the header built
     * against, in the library of the same major version. */
    f.xt_set_jit_callback = NULL;
#if CUFFT_VERSION >= 12000
    (void)sym(h, "cufftXtSetJITCallback", &f.xt_set_jit_callback);
#endif
    g_fns = f; /* the handle stays open for the life of the process */
    g_ok = 1;
}

const ic_cufft_fns *ic_cufft_load(char *err, size_t errlen)
{
    std::call_once(g_once, load);
    if (g_ok)
        return &g_fns;
    if (err && errlen)
        snprintf(err, errlen, "%s", g_why);
    return NULL;
}

const ic_cufft_fns *ic_cufft_loaded(void)
{
    return g_ok ? &g_fns : NULL;
}
