/*
 * cli_json.h - the JSON writer of batch mode's --json summary: strings
 * escaped as JSON wants, and the "FILE\tTEXT" notes (errors, skipped files)
 * collected during the run and printed as objects.
 */
#ifndef IC_TOOLS_CLI_JSON_H
#define IC_TOOLS_CLI_JSON_H

#include <stddef.h>
#include <stdio.h>

/* Appends "NAME\tTEXT" to a --json list (dropped when memory runs out). */
void cli_json_note(char ***list, int *n, const char *name, const char *text);

/* Writes the first n bytes of s (up to its NUL) as a JSON string. */
void cli_json_string(FILE *f, const char *s, size_t n);

/* Prints "FILE\tTEXT" notes to stdout as {"file": FILE, KEY: TEXT} objects
 * separated by commas. */
void cli_json_pairs(char *const *notes, int n, const char *key);

#endif /* IC_TOOLS_CLI_JSON_H */
