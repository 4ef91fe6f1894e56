/*
 * cli_signal.h - `imgconv --signal`: filter a 1D signal (seeds 001 and 002's
 * 1D convolution) read from a text file or raw little-endian float32.
 */
#ifndef IC_TOOLS_CLI_SIGNAL_H
#define IC_TOOLS_CLI_SIGNAL_H

#include "cli.h"

struct cli_options;

/* Runs `imgconv --signal [OPTIONS] INPUT OUTPUT` as parsed by cli_parse
 * (CLI_MODE_SIGNAL). Fills e and returns a CLI_EXIT_* code; prints nothing. */
int cli_run_signal(const struct cli_options *o, cli_err *e);

#endif /* IC_TOOLS_CLI_SIGNAL_H */
