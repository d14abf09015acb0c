/*
 * cache.h - the per-context decision cache: concurrent, single-flight, bounded by bytes.
 *
 * Structure: 64 shards, each a chained hash table behind its own big-reader lock
 * (brlock.h: the read side writes only a per-thread-slot cache line).  A hit takes one
 * shard's read lock for the length of a bucket walk and a reference count increment;
 * Find never runs under any shard lock (the owner of a miss benchmarks with no lock
 * held), so a hit never waits for a Find (DESIGN.md non-negotiable 2).
 *
 * Entries are reference counted.  The table holds one reference while an entry is
 * linked; every caller holding an entry holds another, so eviction only unlinks and an
 * entry in use is freed by its last user.  A READY entry's decision never changes; the
 * one thing that may be added later is a successor (a better decision published by the
 * background tuner), set once with release ordering.
 *
 * Single flight: a miss links a PENDING entry and makes the caller its owner; concurrent
 * callers of the same key find it and wait on the entry's condition variable until the
 * owner publishes (or abandons, after which they retry).
 *
 * Memory: every linked entry is charged a fixed size (struct, key text, room for every
 * registered candidate).  The charge is reserved before linking and the reservation
 * never passes the budget; when it would, a clock sweep (one "referenced" bit per
 * entry, set on hit) evicts READY entries.  If nothing can be evicted the new entry is
 * returned unlinked ("transient"): the caller still gets a correct decision.
 */
#ifndef CONVFIND_CACHE_H
#define CONVFIND_CACHE_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "convfind.h"
#include "decision/decision.h"
#include "problem/key.h"

typedef enum cf_entry_state {
    CF_ENTRY_PENDING = 0,   /* an owner is obtaining the decision */
    CF_ENTRY_READY = 1,     /* decision published; immutable from now on */
    CF_ENTRY_ABANDONED = 2  /* the owner failed; waiters retry */
} cf_entry_state;

/* Where a decision came from (public values: convfind_decision_source). */
typedef enum cf_source {
    CF_SOURCE_HEURISTIC = 0,
    CF_SOURCE_MEASURED = 1,
    CF_SOURCE_STORED = 2
} cf_source;

typedef struct cf_cache_entry cf_cache_entry;
struct cf_cache_entry {
    cf_key key;                  /* immutable */
    atomic_int state;            /* cf_entry_state */
    atomic_uint refs;
    atomic_uchar referenced;     /* clock bit */
    /* Written once by the owner before state becomes READY, read-only after. */
    cf_decision decision;
    cf_source source;
    bool provisional;            /* heuristic placeholder awaiting the background tuner */
    _Atomic(cf_cache_entry *) successor; /* a better decision for the same key, or NULL */
    size_t charge;               /* bytes charged while linked */
    /* Guarded by the shard lock. */
    bool linked;
    cf_cache_entry *next;
    /* Waiters of a PENDING entry. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
};

typedef struct cf_cache cf_cache;

typedef struct cf_cache_stats {
    uint64_t hits, misses, waits, evictions;
    size_t entries, bytes, peak_bytes, budget;
} cf_cache_stats;

/* A cache with a budget of `budget` bytes; entries are charged for `max_candidates`
 * candidates each.  NULL when out of memory. */
cf_cache *cf_cache_create(size_t budget, int max_candidates);

/* Frees the cache and drops its references; entries still held elsewhere live on until
 * released.  Must not race with any other call on the cache. */
void cf_cache_destroy(cf_cache *c);

/* Returns a referenced entry for `key` in *out.  Either it is READY (a hit, or the
 * outcome of another caller's Find that this call waited for) and *owner is false, or
 * it is a new PENDING entry and *owner is true: the caller must then call exactly one of
 * cf_cache_publish() or cf_cache_abandon() on it.  Only fails when out of memory.
 * Thread-safe. */
convfind_status cf_cache_acquire(cf_cache *c, const cf_key *key, cf_cache_entry **out,
                                 bool *owner);

/* The owner publishes the decision (ownership of its candidates moves into the entry)
 * and wakes the waiters.  The owner keeps its reference (release it when done). */
void cf_cache_publish(cf_cache *c, cf_cache_entry *e, cf_decision *decision, cf_source source,
                      bool provisional);

/* The owner gives up: the entry is unlinked, waiters retry.  Consumes the owner's
 * reference. */
void cf_cache_abandon(cf_cache *c, cf_cache_entry *e);

/* Publishes a better decision for READY entry `old`: a new READY entry takes its place
 * in the table (if `old` is still linked) and becomes old's successor, so holders of
 * `old` can follow it.  Ownership of the candidates moves.  A second replacement of the
 * same entry is ignored (and its decision freed).  Thread-safe. */
void cf_cache_replace(cf_cache *c, cf_cache_entry *old, cf_decision *decision, cf_source source);

/* The newest decision for the entry's key: `e` or the end of its successor chain.  Not
 * referenced separately: it lives as long as `e` does. */
const cf_cache_entry *cf_cache_latest(const cf_cache_entry *e);

/* Adds a reference / drops one (the last frees the entry).  NULL allowed in release. */
void cf_cache_retain(cf_cache_entry *e);
void cf_cache_release(cf_cache_entry *e);

void cf_cache_stats_get(cf_cache *c, cf_cache_stats *out);

#endif /* CONVFIND_CACHE_H */
