/* status.c - status code messages and the library version. */
#include "imgconv.h"

const char *ic_status_str(ic_status status)
{
    switch (status) {
    case IC_OK: return "success";
    case IC_ERR_INVALID_ARG: return "invalid argument";
    case IC_ERR_NOMEM: return "out of memory";
    case IC_ERR_TOO_LARGE: return "too large";
    case IC_ERR_KERNEL: return "bad kernel";
    case IC_ERR_IO: return "input/output error";
    case IC_ERR_FORMAT: return "corrupt or unsupported file";
    case IC_ERR_UNSUPPORTED: return "not supported";
    case IC_ERR_NO_BACKEND: return "backend not available";
    case IC_ERR_DEVICE: return "device error";
    case IC_ERR_INTERNAL: return "internal error";
    }
    return "unknown status";
}

const char *ic_version(void)
{
    return IC_VERSION_STRING;
}
