/*
 * cli_progress.h - batch mode's progress bar on stderr: files done of total,
 * images/s, MB/s and the time left, redrawn at most every 100 ms on one line.
 */
#ifndef IC_TOOLS_CLI_PROGRESS_H
#define IC_TOOLS_CLI_PROGRESS_H

typedef struct cli_progress {
    int on;           /* draw at all (stderr is a terminal, no -q) */
    int shown;        /* a bar is on the line now */
    double t0;        /* start of the run, cli_now_ms() */
    double last_draw; /* cli_now_ms() of the last drawing */
} cli_progress;

/* Redraws the bar for `done` of `total` files and `bytes` decoded sample bytes
 * so far; at most every 100 ms unless force. Nothing when p->on is 0. */
void cli_progress_draw(cli_progress *p, int done, int total, double bytes, int force);

/* Removes the bar from the line (before a message is printed). */
void cli_progress_clear(cli_progress *p);

#endif /* IC_TOOLS_CLI_PROGRESS_H */
