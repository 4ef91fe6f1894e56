/*
 * cli_queue.h - the bounded queues between the stages of batch mode (decoders,
 * filter, encoders; the GPU pipeline's readers and writers): a fixed ring of
 * items guarded by one mutex, blocking producers when full and consumers
 * when empty, closed when its last producer is done.
 */
#ifndef IC_TOOLS_CLI_QUEUE_H
#define IC_TOOLS_CLI_QUEUE_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

#include "imgconv_gpu_codec.h"

/* One file on its way through batch mode. */
typedef struct item {
    int idx;
    int budgeted; /* counted in the batch's in-flight budget (decoded on the host) */
    size_t held;  /* ... with these bytes of samples */
    ic_image img, out;
    ic_metadata meta; /* the input's ICC profile and EXIF, for the output */
    uint8_t *bytes;   /* the file as read (GPU side), or the encoded file (host side) */
    size_t nbytes;
    int dev;      /* the device pipeline it was handed to (batch mode) */
    int slot;     /* GPU pipeline: the codec slot holding img and out */
    ic_bytes enc; /* GPU pipeline: the encoded file, held by the slot */
    int wide;     /* the encoded image had 16-bit samples (the depth notice) */
} item;

/* Frees an item with whatever it still holds. */
void cli_item_free(item *it);

/* A board that workers of several queues wait on: every change of a queue
 * linked to it (an item pushed or taken, a producer done) raises its sequence
 * number, so that a worker that found nothing to do anywhere can sleep until
 * something changed (cli_board_wait) without missing a wake-up. */
typedef struct cli_board {
    pthread_mutex_t mu;
    pthread_cond_t changed;
    unsigned long seq;
} cli_board;

void cli_board_init(cli_board *b);
void cli_board_destroy(cli_board *b);
/* The current sequence number: read it before looking at the queues. */
unsigned long cli_board_seq(cli_board *b);
/* Something changed: wakes every waiter. */
void cli_board_poke(cli_board *b);
/* Sleeps until the sequence number differs from seen. */
void cli_board_wait(cli_board *b, unsigned long seen);

typedef struct queue {
    pthread_mutex_t mu;
    pthread_cond_t not_empty, not_full;
    item **v;
    int cap, head, count, producers; /* closed when producers reaches 0 */
    cli_board *board;                /* poked at every change (NULL: none) */
} queue;

/* A queue of cap items fed by `producers` producers. Returns 0, or -1 when
 * out of memory. */
int cli_queue_init(queue *q, int cap, int producers);
void cli_queue_destroy(queue *q);

/* Adds an item, waiting while the queue is full. */
void cli_queue_push(queue *q, item *it);

/* Waits for one item, then takes up to max-1 more that are already there.
 * Returns how many (0 once the queue is empty and every producer is done). */
int cli_queue_pop_n(queue *q, item **out, int max);

/* NULL once the queue is empty and every producer is done. */
item *cli_queue_pop(queue *q);

/* Takes an item without waiting: 1 (*out set), 0 (empty for now), -1 (empty
 * and every producer done). */
int cli_queue_try_pop(queue *q, item **out);

/* The items waiting now (a hint: it may change at once). */
int cli_queue_count(queue *q);

/* One producer is done; the last one closes the queue. */
void cli_queue_producer_done(queue *q);

#endif /* IC_TOOLS_CLI_QUEUE_H */
