/*
 * bench_transfer.h - host->host timing of a 3x3 filter on the GPU, sync vs
 * async transfers vs pageable copies, against the PCIe floor (seed
 * 004's "synchronous vs asynchronous loading"). Definitions in bench_transfer.c.
 */
#ifndef IC_BENCH_TRANSFER_H
#define IC_BENCH_TRANSFER_H

#include <stdio.h>

/* Measures 480p, 720p, 1080p, 4K and 8K RGB with a 3x3 Gaussian: the sync
 * path, the async path (pageable and pinned images), plain pageable copies,
 * and the floor bytes / pinned bandwidth (both directions measured in the same
 * run). Writes a Markdown table to md and a JSON object to json (either may be
 * NULL). Returns 0, 77 when no CUDA device is usable, 1 on failure. */
int ic_bench_transfer(FILE *md, FILE *json);

#endif /* IC_BENCH_TRANSFER_H */
