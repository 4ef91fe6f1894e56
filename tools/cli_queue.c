/*
 * cli_queue.c - the bounded queues of batch mode and the board their workers
 * wait on (cli_queue.h).
 */
#include "cli_queue.h"

#include <stdlib.h>
#include <string.h>

void cli_item_free(item *it)
{
    ic_image_free(&it->img);
    ic_image_free(&it->out);
    ic_metadata_free(&it->meta);
    free(it);
}

void cli_board_init(cli_board *b)
{
    memset(b, 0, sizeof *b);
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->changed, NULL);
}

void cli_board_destroy(cli_board *b)
{
    pthread_mutex_destroy(&b->mu);
    pthread_cond_destroy(&b->changed);
}

unsigned long cli_board_seq(cli_board *b)
{
    pthread_mutex_lock(&b->mu);
    const unsigned long s = b->seq;
    pthread_mutex_unlock(&b->mu);
    return s;
}

void cli_board_poke(cli_board *b)
{
    if (!b)
        return;
    pthread_mutex_lock(&b->mu);
    b->seq++;
    pthread_cond_broadcast(&b->changed);
    pthread_mutex_unlock(&b->mu);
}

void cli_board_wait(cli_board *b, unsigned long seen)
{
    pthread_mutex_lock(&b->mu);
    while (b->seq == seen)
        pthread_cond_wait(&b->changed, &b->mu);
    pthread_mutex_unlock(&b->mu);
}

int cli_queue_init(queue *q, int cap, int producers)
{
    memset(q, 0, sizeof *q);
    q->v = calloc((size_t)cap, sizeof *q->v);
    if (!q->v)
        return -1;
    q->cap = cap;
    q->producers = producers;
    pthread_mutex_init(&q->mu, NULL);
    pthread_cond_init(&q->not_empty, NULL);
    pthread_cond_init(&q->not_full, NULL);
    return 0;
}

void cli_queue_destroy(queue *q)
{
    free(q->v);
    pthread_mutex_destroy(&q->mu);
    pthread_cond_destroy(&q->not_empty);
    pthread_cond_destroy(&q->not_full);
}

void cli_queue_push(queue *q, item *it)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == q->cap)
        pthread_cond_wait(&q->not_full, &q->mu);
    q->v[(q->head + q->count) % q->cap] = it;
    q->count++;
    pthread_cond_signal(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    cli_board_poke(q->board);
}

int cli_queue_pop_n(queue *q, item **out, int max)
{
    pthread_mutex_lock(&q->mu);
    while (q->count == 0 && q->producers > 0)
        pthread_cond_wait(&q->not_empty, &q->mu);
    int n = 0;
    while (q->count > 0 && n < max) {
        out[n++] = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
    }
    if (n > 0)
        pthread_cond_broadcast(&q->not_full);
    pthread_mutex_unlock(&q->mu);
    if (n > 0)
        cli_board_poke(q->board);
    return n;
}

item *cli_queue_pop(queue *q)
{
    item *it = NULL;
    return cli_queue_pop_n(q, &it, 1) ? it : NULL;
}

int cli_queue_try_pop(queue *q, item **out)
{
    *out = NULL;
    pthread_mutex_lock(&q->mu);
    int r = q->count > 0 ? 1 : q->producers > 0 ? 0 : -1;
    if (r > 0) {
        *out = q->v[q->head];
        q->head = (q->head + 1) % q->cap;
        q->count--;
        pthread_cond_broadcast(&q->not_full);
    }
    pthread_mutex_unlock(&q->mu);
    if (r > 0)
        cli_board_poke(q->board);
    return r;
}

int cli_queue_count(queue *q)
{
    pthread_mutex_lock(&q->mu);
    const int n = q->count;
    pthread_mutex_unlock(&q->mu);
    return n;
}

void cli_queue_producer_done(queue *q)
{
    pthread_mutex_lock(&q->mu);
    q->producers--;
    pthread_cond_broadcast(&q->not_empty);
    pthread_mutex_unlock(&q->mu);
    cli_board_poke(q->board);
}
