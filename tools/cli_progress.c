/*
 * cli_progress.c - batch mode's progress bar (cli_progress.h).
 */
#include "cli_progress.h"

#include <stdio.h>

#include "cli.h"

void cli_progress_clear(cli_progress *p)
{
    if (p->shown) {
        fputs("\r\033[K", stderr);
        p->shown = 0;
    }
}

void cli_progress_draw(cli_progress *p, int done, int total, double bytes, int force)
{
    const double now = cli_now_ms();
    if (!p->on || (!force && now - p->last_draw < 100.0))
        return;
    p->last_draw = now;
    const double s = (now - p->t0) / 1e3;
    const double ips = s > 0 ? done / s : 0, mbs = s > 0 ? bytes / 1e6 / s : 0;
    const double eta = ips > 0 ? (total - done) / ips : 0;
    char bar[31];
    const int fill = total ? (int)(30.0 * done / total) : 30;
    for (int i = 0; i < 30; i++)
        bar[i] = i < fill ? '#' : '-';
    bar[30] = '\0';
    fprintf(stderr, "\r\033[K[%s] %d/%d files  %.1f images/s  %.1f MB/s  ETA %d:%02d", bar, done,
            total, ips, mbs, (int)eta / 60, (int)eta % 60);
    p->shown = 1;
}
