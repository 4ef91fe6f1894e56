/*
 * error.h - the one internal error formatter. Every public call that fails
 * returns an ic_status and leaves one line saying why in a thread-local
 * buffer, which ic_last_error() returns (include/imgconv.h, "Errors").
 */
#ifndef IC_CORE_ERROR_H
#define IC_CORE_ERROR_H

#include "imgconv.h"

#if defined(__GNUC__) || defined(__clang__)
#define IC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define IC_PRINTF(a, b)
#endif

#ifdef __cplusplus
extern "C" {
#endif

/* Formats the message of this thread's last error and returns `status`, so
 * that a failing path reads `return ic_fail(IC_ERR_IO, "%s: %s", path, why);`.
 * A NULL or empty fmt keeps ic_status_str(status) as the message. */
ic_status ic_fail(ic_status status, const char *fmt, ...) IC_PRINTF(2, 3);

/* The one formatter for internal code that still hands a message buffer down
 * (err, errlen) instead of failing through ic_fail: writes one line into err
 * (nothing when err is NULL or errlen is 0; line breaks become spaces, since
 * libraries sometimes end theirs with one) and returns st, so that a failing
 * path reads `return ic_errf(err, errlen, IC_ERR_IO, "...", ...);`. The public
 * call that receives the buffer hands it on with ic_fail(st, "%s", err). */
ic_status ic_errf(char *err, size_t errlen, ic_status st, const char *fmt, ...) IC_PRINTF(4, 5);

/* The public boundary of a call whose internals wrote their message into a
 * buffer: IC_OK passes through untouched; a failure makes msg (or, when msg is
 * empty, ic_status_str(st)) this thread's message. Returns st. */
ic_status ic_fail_msg(ic_status st, const char *msg);

/* Empties this thread's message (a public call that succeeds may call it). */
void ic_error_clear(void);

#ifdef __cplusplus
}
#endif

#endif
