/*
 * calib_cache.h - the fast path's measured device ceilings kept on disk
 * (internal; calib_cache.c), so that a process does not spend its start-up
 * measuring what an earlier one measured on the same device and driver.
 *
 * One small text file per key (device, driver, runtime and imgconv version,
 * made by the caller) in $XDG_CACHE_HOME/imgconv/, or $HOME/.cache/imgconv/
 * when XDG_CACHE_HOME is unset or not absolute. The file is untrusted input:
 * it is read only when it is a regular file of at most IC_CALIB_MAX_BYTES, in
 * exactly the format written, naming the same key, with finite values inside
 * plausible ranges; anything else counts as no cache (and is replaced on the
 * next store). Stores write a temporary file in the same directory and
 * rename it over the old one, so readers never see half a file.
 */
#ifndef IC_CORE_CALIB_CACHE_H
#define IC_CORE_CALIB_CACHE_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Largest cache file read, in bytes. */
#define IC_CALIB_MAX_BYTES 1024
/* Longest key (printable ASCII, no newline). */
#define IC_CALIB_MAX_KEY 255

/* The measured values. */
typedef struct ic_calib {
    double copy_bps;  /* device memory bytes read + written per second, 1e8..1e15 */
    double fma_per_s; /* fp32 multiply-adds per second, 1e9..1e17 */
} ic_calib;

/* Writes into buf the cache file's path for key: the directory above and
 * "calibration-<name>.txt", name being key with every character outside
 * [A-Za-z0-9._-] replaced by '_' and a hash of the whole key appended.
 * Returns 0 when there is no cache directory (no XDG_CACHE_HOME and no
 * HOME), the key is empty, too long or not printable, or buf is too small. */
int ic__calib_path(const char *key, char *buf, size_t n);

/* Reads the record for key into *c. Returns 1 when a valid record was found,
 * 0 otherwise (no file, unreadable, not a regular file, too large, malformed,
 * another key, out-of-range values). Never blocks on a FIFO. */
int ic__calib_load(const char *key, ic_calib *c);

/* Writes the record for key (creating the directory, mode 0700, when
 * missing). Returns 1 on success, 0 when it could not (best effort: the
 * caller goes on with the measured values either way). */
int ic__calib_store(const char *key, const ic_calib *c);

#ifdef __cplusplus
}
#endif

#endif /* IC_CORE_CALIB_CACHE_H */
