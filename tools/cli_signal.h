/*
 * cli_signal.h - `imgconv --signal`: filter a 1D signal (seeds 001 and 002's
 * 1D convolution) read from a text file or raw little-endian float32.
 */
#ifndef IC_TOOLS_CLI_SIGNAL_H
#define IC_TOOLS_CLI_SIGNAL_H

#include "cli.h"

/* Runs `imgconv --signal [OPTIONS] INPUT OUTPUT`. argv is the whole command
 * line (argv[0] the program; "--signal" may stand anywhere and is skipped).
 * Fills e and returns a CLI_EXIT_* code; prints nothing but --help. */
int cli_run_signal(int argc, char **argv, cli_err *e);

/* The same, printing the one error line itself in main()'s format
 * ("imgconv: error: FILE: MSG", or "imgconv: error: MSG (see --help)" for
 * usage errors); returns the exit code. For a main() that hands over argv. */
int ic_cli_signal_main(int argc, char **argv);

/* Prints the help of --signal to stdout. */
void cli_print_signal_help(void);

#endif /* IC_TOOLS_CLI_SIGNAL_H */
