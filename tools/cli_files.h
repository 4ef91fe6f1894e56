/*
 * cli_files.h - the list of files of batch mode (imgconv -o OUTDIR INPUT...):
 * the INPUT arguments (files, directories, globs) expanded into input files,
 * each with its output name in OUTDIR or the reason it is skipped.
 */
#ifndef IC_TOOLS_CLI_FILES_H
#define IC_TOOLS_CLI_FILES_H

#include <stddef.h>

#include "cli_args.h"

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

#endif /* IC_TOOLS_CLI_FILES_H */
