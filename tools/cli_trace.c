/*
 * cli_trace.c - the batch's stages as a Chrome trace (see cli_trace.h).
 */
#include "cli_trace.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "cli_json.h"

#define MAX_LANE 500 /* lanes are numbered below this (cli_batch.c, LANE_*) */

/* About 8 intervals a file (read, decode, upload, filter, download, encode,
 * write) with room to spare, and a hard cap: 2M intervals of 24 bytes. */
size_t cli_trace_cap(int nfiles)
{
    const size_t cap = 12 * (size_t)(nfiles > 0 ? nfiles : 0) + 64;
    return cap < ((size_t)1 << 21) ? cap : (size_t)1 << 21;
}

/* A stage's name and category, NULL for letters the trace leaves out. */
static const char *stage_name(char s, const char **cat)
{
    *cat = "cpu";
    switch (s) {
    case 'i':
        return "read";
    case 'r':
        *cat = "gpu";
        return "read";
    case 'd':
        return "decode";
    case 'G':
        *cat = "gpu";
        return "decode (nvJPEG)";
    case 'u':
        *cat = "gpu";
        return "upload";
    case 'f':
        return "filter";
    case 'F':
        *cat = "gpu";
        return "filter (device)";
    case 'o':
        *cat = "gpu";
        return "download";
    case 'e':
        return "encode";
    case 'n':
        *cat = "gpu";
        return "encode (nvJPEG)";
    case 'w':
        return "write";
    default:
        return NULL; /* 'g': the batch, given per file as 'G' */
    }
}

static const char *moment_name(char s)
{
    switch (s) {
    case 'C':
        return "filter contexts made";
    case 'S':
        return "GPU codec slots ready";
    case 'E':
        return "nvJPEG encoder open";
    case 'D':
        return "GPU decoders open (or not needed)";
    default:
        return NULL;
    }
}

static void lane_name(int lane, char *buf, size_t len)
{
    if (lane >= 400)
        snprintf(buf, len, "writer %d", lane - 400);
    else if (lane >= 300)
        snprintf(buf, len, "GPU encoder %d", lane - 300);
    else if (lane >= 200)
        snprintf(buf, len, "GPU reader and decoder");
    else if (lane >= 100)
        snprintf(buf, len, "worker %d", lane - 100);
    else
        snprintf(buf, len, "filter %d", lane);
}

int cli_trace_write(const char *path, const cli_trace_ev *ev, int n, long dropped,
                    const blist *files, char *msg, size_t msglen)
{
    FILE *f = fopen(path, "w");
    if (!f) {
        snprintf(msg, msglen, "cannot write the trace: %s", strerror(errno));
        return -1;
    }
    fprintf(f,
            "{\"displayTimeUnit\": \"ms\", \"otherData\": {\"tool\": \"imgconv batch\", "
            "\"files\": %d, \"intervals\": %d, \"dropped\": %ld},\n\"traceEvents\": [\n",
            files->n, n, dropped);
    fprintf(f, "{\"name\": \"process_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": 0, "
               "\"args\": {\"name\": \"imgconv\"}}");
    /* one name per lane that appears */
    unsigned char seen[MAX_LANE] = {0};
    for (int i = 0; i < n; i++) {
        const int l = ev[i].lane;
        if (l < 0 || l >= MAX_LANE || seen[l])
            continue;
        seen[l] = 1;
        char name[64];
        lane_name(l, name, sizeof name);
        fprintf(f,
                ",\n{\"name\": \"thread_name\", \"ph\": \"M\", \"pid\": 1, \"tid\": %d, "
                "\"args\": {\"name\": \"%s\"}}",
                l, name);
    }
    for (int i = 0; i < n; i++) {
        const cli_trace_ev *e = &ev[i];
        const char *cat, *name = stage_name(e->stage, &cat), *moment = moment_name(e->stage);
        const double ts = (double)e->t0 * 1e3, dur = (double)e->ms * 1e3;
        if (moment) {
            fprintf(f,
                    ",\n{\"name\": \"%s\", \"ph\": \"i\", \"s\": \"g\", \"ts\": %.3f, "
                    "\"pid\": 1, \"tid\": %d}",
                    moment, ts, e->lane);
            continue;
        }
        if (!name)
            continue;
        fprintf(f,
                ",\n{\"name\": \"%s\", \"cat\": \"%s\", \"ph\": \"X\", \"ts\": %.3f, "
                "\"dur\": %.3f, \"pid\": 1, \"tid\": %d",
                name, cat, ts, dur > 0 ? dur : 0, e->lane);
        if (e->idx >= 0 && e->idx < files->n) {
            fprintf(f, ", \"args\": {\"file\": ");
            cli_json_string(f, files->v[e->idx].in, (size_t)-1);
            fputc('}', f);
        }
        fputc('}', f);
    }
    fprintf(f, "\n]}\n");
    const int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
        snprintf(msg, msglen, "cannot write the trace: %s", strerror(errno));
        return -1;
    }
    return 0;
}
