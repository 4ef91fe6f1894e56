/*
 * cli_batch.h - the many-files commands of imgconv (issue 6): batch mode
 * (imgconv [OPTIONS] -o OUTDIR INPUT...) and the raw frame stream
 * (imgconv --stream WxHxC [OPTIONS] < frames > frames). Definitions in
 * cli_batch.c.
 */
#ifndef IC_TOOLS_CLI_BATCH_H
#define IC_TOOLS_CLI_BATCH_H

#include "cli.h"

struct cli_options;

/* Filters every input of o->inputs (files, directories, globs) into
 * o->outdir through a pipeline of decoder threads -> one filter context ->
 * encoder threads. Per-file problems are printed as they happen, one line
 * each ("imgconv: error: FILE: problem"), and the file is skipped. Returns
 * CLI_EXIT_OK when every file was written, CLI_EXIT_INPUT (3) when some
 * failed (e says how many), CLI_EXIT_OUTPUT when OUTDIR cannot be written,
 * or the exit code of a setup failure (kernel, backend). */
int cli_run_batch(const struct cli_options *o, cli_err *e);

/* Reads raw interleaved frames of o->stream_w x o->stream_h x o->stream_c
 * bytes from standard input until end of file, filters each, and writes it
 * to standard output. A short final frame is an input error (3). */
int cli_run_stream(const struct cli_options *o, cli_err *e);

#endif /* IC_TOOLS_CLI_BATCH_H */
