/*
 * multi.h - internal: one image split across several GPUs. The dispatcher
 * (context.c) holds an ic_multi instead of one backend state when
 * ic_context_options.n_devices >= 2 and the backend is a GPU one.
 */
#ifndef IC_DISPATCH_MULTI_H
#define IC_DISPATCH_MULTI_H

#include "dispatch/backend.h"

/* One backend state per listed device. */
typedef struct ic_multi ic_multi;

/* Opens be once per entry of opts->devices[0 .. opts->n_devices) (2 or more),
 * each with a copy of opts whose `device` is that entry and n_devices 0. On
 * failure nothing stays open and err names the device. */
ic_status ic__multi_open(ic_multi **m, const ic_backend *be, const ic_context_options *opts,
                         char *err, size_t errlen);

/* Closes every state (NULL-safe). */
void ic__multi_close(ic_multi *m);

/* Runs job (all rows of dst) as n row shares, share i = rows [i*H/n, (i+1)*H/n)
 * on the i-th state, concurrently (one thread per non-empty share). t gets the
 * largest upload, kernel and download time over the shares. On failure err
 * holds the first failing share's message, prefixed with its device. */
ic_status ic__multi_run(ic_multi *m, const ic_job *job, ic_timing *t, char *err, size_t errlen);

/* "split across N devices" and the first state's plan for the whole job. */
ic_status ic__multi_explain(ic_multi *m, const ic_job *job, char *buf, size_t buflen);

/* The first state's plan for the whole job (ic_plan_get), as explain's. */
ic_status ic__multi_plan(ic_multi *m, const ic_job *job, ic_plan *plan, char *err, size_t errlen);

#endif
