/*
 * fuzz_serve_query.c - libFuzzer target for the query string of imgconv
 * serve's POST /v1/filter (tools/cli_args.c: cli_parse_request), which maps
 * untrusted key=value pairs onto the command line's option table. The input
 * is the query; nothing it asks for is run, but an accepted kernel text is
 * parsed as the worker would parse it.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cli_args.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 8192)
        return 0;
    char *q = malloc(size + 1);
    if (!q)
        return 0;
    memcpy(q, data, size);
    q[size] = '\0';

    /* the server's options: imgconv serve with its defaults */
    static cli_options base;
    static int ready;
    if (!ready) {
        char *argv[] = {"imgconv", "serve", NULL};
        cli_err e0;
        if (cli_parse(2, argv, &base, &e0) != CLI_EXIT_OK)
            abort();
        base.backend = "cpu";
        ready = 1;
    }
    cli_options o;
    cli_err e;
    memset(&e, 0, sizeof e);
    const int rc = cli_parse_request(q, &base, &o, &e);
    if (rc != CLI_EXIT_OK && (rc != CLI_EXIT_USAGE || e.msg[0] == '\0' || strchr(e.msg, '\n')))
        abort();
    if (rc == CLI_EXIT_OK) {
        /* what a request may never reach: a file, or another backend */
        if (!o.kernel_text || o.kernel_file || strcmp(o.backend, "cpu") != 0 || o.input ||
            o.output || o.max_pixels != base.max_pixels || o.max_memory != base.max_memory)
            abort();
        ic_kernel k;
        if (ic_kernel_parse(&k, o.kernel_text) == IC_OK)
            ic_kernel_free(&k);
    }
    free(q);
    return 0;
}
