/* status.c - status code messages, the thread's last error message, the
 * library version. */
#include <stdarg.h>
#include <stdio.h>

#include "core/error.h"

const char *ic_status_str(ic_status status)
{
    switch (status) {
    case IC_OK:
        return "success";
    case IC_ERR_INVALID_ARG:
        return "invalid argument";
    case IC_ERR_NOMEM:
        return "out of memory";
    case IC_ERR_TOO_LARGE:
        return "too large";
    case IC_ERR_KERNEL:
        return "bad kernel";
    case IC_ERR_IO:
        return "input/output error";
    case IC_ERR_FORMAT:
        return "corrupt or unsupported file";
    case IC_ERR_UNSUPPORTED:
        return "not supported";
    case IC_ERR_NO_BACKEND:
        return "backend not available";
    case IC_ERR_DEVICE:
        return "device error";
    case IC_ERR_INTERNAL:
        return "internal error";
    }
    return "unknown status";
}

const char *ic_version(void)
{
    return IC_VERSION_STRING;
}

/* ---- the thread's last error message (core/error.h) ---- */

static _Thread_local char last_error[512];

ic_status ic_fail(ic_status status, const char *fmt, ...)
{
    if (!fmt || !fmt[0]) {
        snprintf(last_error, sizeof last_error, "%s", ic_status_str(status));
        return status;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(last_error, sizeof last_error, fmt, ap);
    va_end(ap);
    return status;
}

ic_status ic_errf(char *err, size_t errlen, ic_status st, const char *fmt, ...)
{
    if (!err || errlen == 0)
        return st;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    for (char *p = err; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    return st;
}

ic_status ic_fail_msg(ic_status st, const char *msg)
{
    if (st == IC_OK)
        return st;
    return msg && msg[0] ? ic_fail(st, "%s", msg) : ic_fail(st, NULL);
}

void ic_error_clear(void)
{
    last_error[0] = '\0';
}

const char *ic_last_error(void)
{
    return last_error;
}
