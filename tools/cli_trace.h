/*
 * cli_trace.h - the batch's record of its stages (--trace FILE): one interval
 * per stage of each file, on the thread (lane) that ran it, written at the
 * end as a Chrome trace (JSON Trace Event Format: chrome://tracing, Perfetto)
 * so that a user can see where a batch waits. Definitions in cli_trace.c.
 */
#ifndef IC_TOOLS_CLI_TRACE_H
#define IC_TOOLS_CLI_TRACE_H

#include <stddef.h>

#include "cli_files.h"

/* One interval, ms from the run's start: the file it concerns (-1: none),
 * the lane (cli_batch.c's LANE_* numbering) and the stage, one letter:
 * i/r a file read (CPU worker / GPU reader), d a CPU decode, g an nvJPEG
 * batch, G one file of it, u the filter's upload, f/F the filter (host /
 * device route), o its download, e a CPU encode, n an nvJPEG encode, w a
 * write; C, S, E, D moments (ms 0): contexts made, GPU codec slots, nvJPEG
 * encoder open, decoders open. */
typedef struct cli_trace_ev {
    double t0; /* double: a long run keeps microseconds */
    float ms;
    int idx;
    short lane;
    char stage;
} cli_trace_ev;

/* Intervals recorded at most for n files: bounded whatever the batch. */
size_t cli_trace_cap(int nfiles);

/* Writes the Chrome trace of ev[0..n) to path: a "traceEvents" array of
 * complete events (name = the stage, args.file = the input), thread names
 * for the lanes, instant events for the moments; `dropped` intervals past the
 * cap are counted in "otherData". Returns 0, or -1 with msg set. */
int cli_trace_write(const char *path, const cli_trace_ev *ev, int n, long dropped,
                    const blist *files, char *msg, size_t msglen);

#endif /* IC_TOOLS_CLI_TRACE_H */
