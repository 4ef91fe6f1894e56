/*
 * fuzz_cli_args.c - libFuzzer target for the command-line parser
 * (tools/cli_args.c: cli_parse), which validates every option value without
 * opening a file or running a job. The input is split at NUL bytes into
 * argv[1..]; nothing the parser accepts is executed.
 */
#include <getopt.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 48

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096)
        return 0;
    char *buf = malloc(size + 1);
    if (!buf)
        return 0;
    memcpy(buf, data, size);
    buf[size] = '\0';
    char *argv[MAX_ARGS + 2];
    int argc = 0;
    argv[argc++] = "imgconv";
    for (size_t i = 0; i <= size && argc <= MAX_ARGS;) {
        argv[argc++] = buf + i;
        i += strlen(buf + i) + 1;
    }
    argv[argc] = NULL;

    /* glibc's getopt keeps a pointer into the previous argv between calls
     * unless reinitialised with optind = 0 (cli_parse runs once per process
     * in the tool; here it runs once per input). */
    char *reset[] = {"imgconv", NULL};
    optind = 0;
    opterr = 0;
    (void)getopt(1, reset, "");

    cli_options o;
    cli_err e;
    memset(&e, 0, sizeof e);
    int rc = cli_parse(argc, argv, &o, &e);
    if (rc != CLI_EXIT_OK && (rc != CLI_EXIT_USAGE || e.msg[0] == '\0' || strchr(e.msg, '\n')))
        abort();
    free(buf);
    return 0;
}
