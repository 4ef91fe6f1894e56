/*
 * serve.h - imgconv serve, the resident HTTP service (serve*.c, over
 * libevent's evhttp), and imgconv --server, its client. Without libevent
 * both are one-line refusals. docs/serve.md describes the protocol.
 */
#ifndef IC_TOOLS_SERVE_H
#define IC_TOOLS_SERVE_H

#include "cli.h"
#include "cli_args.h"

#if defined(IC_HAVE_SERVE)
/* Runs the server until SIGTERM or SIGINT; returns an exit code. */
int cli_run_serve(const cli_options *o, cli_err *e);

/* Sends INPUT to the server of --server and writes the reply to OUTPUT as
 * the CLI writes its outputs; returns an exit code. */
int cli_run_client(const cli_options *o, cli_err *e);
#else
static inline int cli_run_serve(const cli_options *o, cli_err *e)
{
    (void)o;
    return cli_fail(e, CLI_EXIT_DEVICE, NULL,
                    "this imgconv was built without the server (libevent was not found; see "
                    "docs/serve.md)");
}
static inline int cli_run_client(const cli_options *o, cli_err *e)
{
    return cli_run_serve(o, e);
}
#endif

#endif /* IC_TOOLS_SERVE_H */
