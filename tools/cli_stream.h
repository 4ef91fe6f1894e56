/*
 * cli_stream.h - the raw frame stream of imgconv:
 * imgconv --stream WxHxC[:16] [OPTIONS] < frames > frames. Definitions in
 * cli_stream.c.
 */
#ifndef IC_TOOLS_CLI_STREAM_H
#define IC_TOOLS_CLI_STREAM_H

#include "cli.h"

struct cli_options;

/* Reads raw interleaved frames of o->stream_w x o->stream_h x o->stream_c
 * samples of o->stream_type (IC_U16: little-endian) from standard input until
 * end of file, filters each, and writes it to standard output. A short final
 * frame is an input error (3). */
int cli_run_stream(const struct cli_options *o, cli_err *e);

#endif /* IC_TOOLS_CLI_STREAM_H */
