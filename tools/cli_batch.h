/*
 * cli_batch.h - batch mode of imgconv:
 * imgconv [OPTIONS] -o OUTDIR INPUT... Definitions in cli_batch.c.
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

#endif /* IC_TOOLS_CLI_BATCH_H */
