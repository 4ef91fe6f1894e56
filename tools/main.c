/*
 * main.c - entry point of the imgconv command-line tool: parse the arguments,
 * run the command they ask for, and print the one error line if it failed.
 *
 * This is the only place in the project that writes an error message:
 *   imgconv: error: FILE: what went wrong          (a file is concerned)
 *   imgconv: error: what went wrong (see --help)   (a usage error)
 * and the exit code says which kind of error it was (see cli.h).
 */
#include <signal.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cli.h"
#include "cli_args.h"
#include "cli_batch.h"
#include "cli_signal.h"
#include "cli_stream.h"
#include "serve.h"

int cli_vfail(cli_err *e, int code, const char *file, const char *fmt, va_list ap)
{
    e->code = code;
    snprintf(e->file, sizeof e->file, "%s", file ? file : "");
    vsnprintf(e->msg, sizeof e->msg, fmt, ap);
    /* One line, whatever the library or the user handed us. */
    for (char *p = e->msg; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = ' ';
    for (char *p = e->file; *p; p++)
        if (*p == '\n' || *p == '\r')
            *p = '?';
    return code;
}

int cli_fail(cli_err *e, int code, const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int r = cli_vfail(e, code, file, fmt, ap);
    va_end(ap);
    return r;
}

static void print_error(const cli_err *e)
{
    fflush(stdout); /* keep any --time/--explain lines before the error */
    if (e->code == CLI_EXIT_USAGE && e->file[0] == '\0')
        fprintf(stderr, "imgconv: error: %s (see --help)\n", e->msg);
    else if (e->file[0] != '\0')
        fprintf(stderr, "imgconv: error: %s: %s\n", e->file, e->msg);
    else
        fprintf(stderr, "imgconv: error: %s\n", e->msg);
}

static int run_info(const cli_options *o)
{
    if (o->help && o->signal)
        cli_print_signal_help();
    else if (o->help)
        cli_print_help();
    if (o->version)
        cli_print_version();
    if (o->formats)
        cli_print_formats();
    if (o->list_filters)
        cli_print_filters();
    if (o->list_backends)
        cli_print_backends();
    return CLI_EXIT_OK;
}

static atomic_int g_output_busy, g_dying;

int cli_output_begin(void)
{
    atomic_fetch_add(&g_output_busy, 1);
    if (atomic_load(&g_dying)) {
        atomic_fetch_sub(&g_output_busy, 1);
        return 0;
    }
    return 1;
}

void cli_output_end(void)
{
    atomic_fetch_sub(&g_output_busy, 1);
}

/* A fatal signal: let a unit of output being written finish (at most about
 * two seconds), remove the temporaries of saves in progress, then die of the
 * same signal (SA_RESETHAND restored the default action). */
static void on_fatal_signal(int sig)
{
    atomic_store(&g_dying, 1);
    for (int i = 0; i < 2000 && atomic_load(&g_output_busy) > 0; i++) {
        const struct timespec ms = {0, 1000000};
        nanosleep(&ms, NULL);
    }
    ic_image_save_cleanup();
    raise(sig);
}

/* SIGINT, SIGTERM, SIGHUP and SIGPIPE leave no temporary file behind (batch
 * mode replaces SIGINT's handler with its own, which lets the files being
 * written finish). A signal the caller ignores stays ignored. */
static void install_signal_handlers(void)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGPIPE};
    for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++) {
        struct sigaction sa, old;
        if (sigaction(sigs[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        memset(&sa, 0, sizeof sa);
        sa.sa_handler = on_fatal_signal;
        sa.sa_flags = (int)SA_RESETHAND;
        sigemptyset(&sa.sa_mask);
        sigaction(sigs[i], &sa, NULL);
    }
}

int main(int argc, char **argv)
{
    install_signal_handlers();
    cli_options opts;
    cli_err err;
    memset(&err, 0, sizeof err);

    int code = cli_parse(argc, argv, &opts, &err);
    if (code == CLI_EXIT_OK) {
        switch (opts.mode) {
        case CLI_MODE_INFO:
            code = run_info(&opts);
            break;
        case CLI_MODE_CHART:
            code = cli_run_chart(&opts, &err);
            break;
        case CLI_MODE_FILTER:
            code = opts.server ? cli_run_client(&opts, &err) : cli_run_filter(&opts, &err);
            break;
        case CLI_MODE_SERVE:
            code = cli_run_serve(&opts, &err);
            break;
        case CLI_MODE_BATCH:
            code = cli_run_batch(&opts, &err);
            break;
        case CLI_MODE_STREAM:
            code = cli_run_stream(&opts, &err);
            break;
        case CLI_MODE_SIGNAL:
            code = cli_run_signal(&opts, &err);
            break;
        }
    }
    if (code != CLI_EXIT_OK) {
        if (err.msg[0] == '\0')
            cli_fail(&err, code, NULL, "failed without a message (a bug)");
        print_error(&err);
    }
    if (fflush(stdout) != 0 && code == CLI_EXIT_OK) {
        fprintf(stderr, "imgconv: error: cannot write to standard output\n");
        code = CLI_EXIT_OUTPUT;
    }
    return code;
}
