/*
 * cli_files.h - the list of files of batch mode (imgconv -o OUTDIR INPUT...):
 * the INPUT arguments (files, directories, globs) expanded into input files,
 * each with its output name in OUTDIR or the reason it is skipped.
 */
#ifndef IC_TOOLS_CLI_FILES_H
#define IC_TOOLS_CLI_FILES_H

#include <stddef.h>
#include <stdint.h>

#include "cli_args.h"
#include "imgconv.h"

typedef struct bfile {
    char *in;
    char *out;      /* NULL when no output name could be made */
    char err[320];  /* set when the file failed before decoding */
    char skip[320]; /* set when the file is skipped on purpose: why */
    size_t bytes;   /* decoded sample bytes, for MB/s */
} bfile;

typedef struct blist {
    bfile *v;
    int n, cap;
} blist;

/* Adds what one INPUT argument names: a file (also a missing one: its load
 * reports it), the entries of a directory sorted by name (image names to
 * filter, the others as skipped with the reason; dotfiles ignored), or the
 * matches of a glob the shell did not expand. Returns 0, or -1 when out of
 * memory. */
int cli_files_expand(blist *l, const char *arg);

/* Names the outputs (OUTDIR/basename, the extension replaced by --format),
 * refuses existing ones without --overwrite (skips them with
 * --skip-existing), the input itself, and two inputs that would write the
 * same output. Returns 0, or -1 when out of memory. */
int cli_files_plan(blist *l, const cli_options *o);

/* Frees every entry (the list is left empty). */
void cli_files_free(blist *l);

/* Reads a whole input file named on the command line into *data (malloc'd,
 * free() it; *size bytes), bounded by the limits: refuses at once, without
 * blocking, what is not a regular file (a FIFO, a device, a directory), a
 * file over max_bytes (the memory limit) by its size, and, when lo is not
 * NULL, a file whose header (within its first 64 KiB) declares an image
 * over lo's limits, before reading the rest. msg receives one line
 * ("cannot open: ...", "not a regular file ...", ...). Returns IC_OK,
 * IC_ERR_IO, IC_ERR_TOO_LARGE or IC_ERR_NOMEM. */
ic_status cli_read_file(const char *path, uint64_t max_bytes, const ic_load_options *lo,
                        uint8_t **data, size_t *size, char *msg, size_t msglen);

/* After a load that --accept-damaged let through damaged data: one warning
 * line on stderr naming the file. */
void cli_damaged_notice(const char *path);

#endif /* IC_TOOLS_CLI_FILES_H */
