/*
 * brlock.c - the big-reader lock (see brlock.h).
 */
#include "cache/brlock.h"

#include <sched.h>

static atomic_uint next_slot;
static _Thread_local int my_slot = -1;

static int slot_index(void)
{
    if (my_slot < 0)
        my_slot = (int)(atomic_fetch_add_explicit(&next_slot, 1, memory_order_relaxed) %
                        CF_BR_SLOTS);
    return my_slot;
}

void cf_brlock_init(cf_brlock *l)
{
    for (int i = 0; i < CF_BR_SLOTS; i++) {
        atomic_init(&l->slot[i].readers, 0);
        atomic_init(&l->slot[i].tally, 0);
    }
    atomic_init(&l->writer, 0);
    pthread_mutex_init(&l->mu, NULL);
}

void cf_brlock_destroy(cf_brlock *l)
{
    pthread_mutex_destroy(&l->mu);
}

cf_br_slot *cf_brlock_read(cf_brlock *l)
{
    cf_br_slot *s = &l->slot[slot_index()];
    for (;;) {
        atomic_fetch_add_explicit(&s->readers, 1, memory_order_seq_cst);
        if (!atomic_load_explicit(&l->writer, memory_order_seq_cst))
            return s;
        atomic_fetch_sub_explicit(&s->readers, 1, memory_order_release);
        /* A writer is in (or entering) its critical section: wait for it to leave. */
        pthread_mutex_lock(&l->mu);
        pthread_mutex_unlock(&l->mu);
    }
}

void cf_brlock_read_unlock(cf_br_slot *s)
{
    atomic_fetch_sub_explicit(&s->readers, 1, memory_order_release);
}

void cf_brlock_write(cf_brlock *l)
{
    pthread_mutex_lock(&l->mu);
    atomic_store_explicit(&l->writer, 1, memory_order_seq_cst);
    for (int i = 0; i < CF_BR_SLOTS; i++)
        while (atomic_load_explicit(&l->slot[i].readers, memory_order_seq_cst) != 0)
            sched_yield();
}

void cf_brlock_write_unlock(cf_brlock *l)
{
    atomic_store_explicit(&l->writer, 0, memory_order_release);
    pthread_mutex_unlock(&l->mu);
}

uint64_t cf_brlock_tally(cf_brlock *l)
{
    uint64_t sum = 0;
    for (int i = 0; i < CF_BR_SLOTS; i++)
        sum += atomic_load_explicit(&l->slot[i].tally, memory_order_relaxed);
    return sum;
}
