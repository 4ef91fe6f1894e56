/*
 * cli_json.c - the JSON writer of batch mode's --json summary (cli_json.h).
 */
#include "cli_json.h"

#include <stdlib.h>
#include <string.h>

void cli_json_note(char ***list, int *n, const char *name, const char *text)
{
    char **nl = realloc(*list, (size_t)(*n + 1) * sizeof *nl);
    if (!nl)
        return;
    *list = nl;
    size_t len = strlen(name) + strlen(text) + 2;
    if ((nl[*n] = malloc(len)) != NULL) {
        snprintf(nl[*n], len, "%s\t%s", name, text);
        (*n)++;
    }
}

void cli_json_string(FILE *f, const char *s, size_t n)
{
    fputc('"', f);
    for (size_t i = 0; i < n && s[i]; i++) {
        const unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\')
            fprintf(f, "\\%c", c);
        else if (c < 0x20)
            fprintf(f, "\\u%04x", c);
        else
            fputc(c, f);
    }
    fputc('"', f);
}

void cli_json_pairs(char *const *notes, int n, const char *key)
{
    for (int i = 0; i < n; i++) {
        const char *tab = strchr(notes[i], '\t');
        printf("%s{\"file\": ", i ? ", " : "");
        cli_json_string(stdout, notes[i], (size_t)(tab - notes[i]));
        printf(", \"%s\": ", key);
        cli_json_string(stdout, tab + 1, (size_t)-1);
        printf("}");
    }
}
