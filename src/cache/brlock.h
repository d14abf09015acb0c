/*
 * brlock.h - a "big reader" lock: a reader-writer lock whose read side writes only a
 * cache line private to the calling thread's slot.
 *
 * pthread_rwlock_rdlock increments one shared counter, so two threads taking read locks
 * on the same lock bounce its cache line between cores and read-mostly work stops
 * scaling.  Here each thread is given one of CF_BR_SLOTS slots (round robin, at its first
 * read lock) and a reader only touches its slot's line and reads the writer flag; a
 * writer, which is rare (a cache miss or an eviction), raises the flag and waits for
 * every slot to drain.  Readers and writers pair through sequentially consistent
 * operations (reader: increment own slot, then read the flag; writer: set the flag, then
 * read every slot), so one of them always sees the other.  Readers never wait for each
 * other; a reader that meets a writer steps back and waits on the writer's mutex.
 */
#ifndef CONVFIND_BRLOCK_H
#define CONVFIND_BRLOCK_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define CF_BR_SLOTS 16

typedef struct cf_br_slot {
    _Alignas(64) atomic_uint readers;
    atomic_uint_fast64_t tally; /* a counter the owner bumps under the read lock */
} cf_br_slot;

typedef struct cf_brlock {
    cf_br_slot slot[CF_BR_SLOTS];
    _Alignas(64) atomic_int writer;
    pthread_mutex_t mu; /* held by the writer for its whole critical section */
} cf_brlock;

void cf_brlock_init(cf_brlock *l);
void cf_brlock_destroy(cf_brlock *l);

/* Read side; returns the slot to hand to cf_brlock_read_unlock. */
cf_br_slot *cf_brlock_read(cf_brlock *l);
void cf_brlock_read_unlock(cf_br_slot *s);

/* Write side: excludes readers and other writers. */
void cf_brlock_write(cf_brlock *l);
void cf_brlock_write_unlock(cf_brlock *l);

/* Sum of the slots' tallies (relaxed reads). */
uint64_t cf_brlock_tally(cf_brlock *l);

#endif /* CONVFIND_BRLOCK_H */
