/*
 * cache.c - the sharded, single-flight, byte-bounded decision cache (see cache.h).
 */
#include "cache/cache.h"

#include <stdlib.h>
#include <string.h>

#include "cache/brlock.h"
#include "util/error.h"

#define SHARD_BITS 6
#define SHARDS (1u << SHARD_BITS)
#define INITIAL_BUCKETS 8

typedef struct shard {
    /* The read side of the lock writes only the calling thread's slot line, and hits
     * are tallied there too, so threads hitting one shard share no written line: what
     * lets hit throughput scale with threads (brlock.h). */
    cf_brlock lock;
    _Alignas(64) cf_cache_entry **buckets;
    size_t nbuckets; /* power of two */
    size_t count;
    atomic_uint_fast64_t misses, waits;
} shard;

struct cf_cache {
    shard shards[SHARDS];
    size_t budget;
    size_t per_entry;          /* charge of one entry */
    atomic_size_t bytes;       /* charged by linked entries and reservations */
    atomic_size_t peak;
    atomic_uint_fast64_t evictions;
    pthread_mutex_t evict_mu;  /* one sweeper at a time; never held with a shard lock */
    unsigned hand;             /* clock hand: next shard to sweep (under evict_mu) */
};

static shard *shard_of(cf_cache *c, uint64_t hash)
{
    return &c->shards[hash & (SHARDS - 1)];
}

static size_t bucket_of(const shard *s, uint64_t hash)
{
    return (size_t)(hash >> SHARD_BITS) & (s->nbuckets - 1);
}

cf_cache *cf_cache_create(size_t budget, int max_candidates)
{
    cf_cache *c = aligned_alloc(64, sizeof *c);
    if (!c)
        return NULL;
    memset(c, 0, sizeof *c);
    c->budget = budget;
    c->per_entry = sizeof(cf_cache_entry) + (size_t)(max_candidates > 0 ? max_candidates : 1) *
                                                sizeof(cf_candidate_stats);
    pthread_mutex_init(&c->evict_mu, NULL);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        s->buckets = calloc(INITIAL_BUCKETS, sizeof *s->buckets);
        if (!s->buckets) {
            for (unsigned j = 0; j < i; j++) {
                free(c->shards[j].buckets);
                cf_brlock_destroy(&c->shards[j].lock);
            }
            pthread_mutex_destroy(&c->evict_mu);
            free(c);
            return NULL;
        }
        s->nbuckets = INITIAL_BUCKETS;
        cf_brlock_init(&s->lock);
    }
    return c;
}

static void entry_free(cf_cache_entry *e)
{
    cf_cache_release(atomic_load_explicit(&e->successor, memory_order_acquire));
    cf_decision_clear(&e->decision);
    pthread_mutex_destroy(&e->mu);
    pthread_cond_destroy(&e->cv);
    free(e);
}

void cf_cache_retain(cf_cache_entry *e)
{
    atomic_fetch_add_explicit(&e->refs, 1, memory_order_relaxed);
}

void cf_cache_release(cf_cache_entry *e)
{
    if (e && atomic_fetch_sub_explicit(&e->refs, 1, memory_order_acq_rel) == 1)
        entry_free(e);
}

void cf_cache_destroy(cf_cache *c)
{
    if (!c)
        return;
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        for (size_t b = 0; b < s->nbuckets; b++) {
            cf_cache_entry *e = s->buckets[b];
            while (e) {
                cf_cache_entry *next = e->next;
                e->linked = false;
                cf_cache_release(e);
                e = next;
            }
        }
        free(s->buckets);
        cf_brlock_destroy(&s->lock);
    }
    pthread_mutex_destroy(&c->evict_mu);
    free(c);
}

/* Under the shard lock (read or write). */
static cf_cache_entry *find_locked(shard *s, const cf_key *key)
{
    for (cf_cache_entry *e = s->buckets[bucket_of(s, key->hash)]; e; e = e->next)
        if (cf_key_equal(&e->key, key))
            return e;
    return NULL;
}

/* Under the write lock.  A failed resize only lengthens chains. */
static void grow_locked(shard *s)
{
    size_t nb = s->nbuckets * 2;
    cf_cache_entry **nbk = calloc(nb, sizeof *nbk);
    if (!nbk)
        return;
    for (size_t b = 0; b < s->nbuckets; b++) {
        cf_cache_entry *e = s->buckets[b];
        while (e) {
            cf_cache_entry *next = e->next;
            size_t i = (size_t)(e->key.hash >> SHARD_BITS) & (nb - 1);
            e->next = nbk[i];
            nbk[i] = e;
            e = next;
        }
    }
    free(s->buckets);
    s->buckets = nbk;
    s->nbuckets = nb;
}

/* Under the write lock: puts `e` at the head of its chain, uncharged. */
static void link_locked(shard *s, cf_cache_entry *e)
{
    size_t b = bucket_of(s, e->key.hash);
    e->linked = true;
    e->next = s->buckets[b];
    s->buckets[b] = e;
    if (++s->count > s->nbuckets)
        grow_locked(s);
}

/* Under the write lock: removes `e` from its chain and returns its charge. */
static void unlink_locked(cf_cache *c, shard *s, cf_cache_entry *e)
{
    cf_cache_entry **pp = &s->buckets[bucket_of(s, e->key.hash)];
    while (*pp != e)
        pp = &(*pp)->next;
    *pp = e->next;
    e->next = NULL;
    e->linked = false;
    s->count--;
    atomic_fetch_sub_explicit(&c->bytes, e->charge, memory_order_relaxed);
}

/* One clock step over one shard: clears referenced bits and evicts the first READY
 * entry whose bit was already clear.  Returns true when it evicted. */
static bool sweep_shard(cf_cache *c, shard *s)
{
    cf_cache_entry *victim = NULL;
    cf_brlock_write(&s->lock);
    for (size_t b = 0; b < s->nbuckets && !victim; b++)
        for (cf_cache_entry *e = s->buckets[b]; e && !victim; e = e->next) {
            if (atomic_load_explicit(&e->state, memory_order_acquire) != CF_ENTRY_READY)
                continue;
            if (atomic_exchange_explicit(&e->referenced, 0, memory_order_relaxed) == 0)
                victim = e;
        }
    if (victim)
        unlink_locked(c, s, victim);
    cf_brlock_write_unlock(&s->lock);
    if (!victim)
        return false;
    atomic_fetch_add_explicit(&c->evictions, 1, memory_order_relaxed);
    cf_cache_release(victim); /* the table's reference */
    return true;
}

/* Evicts one entry; false when two full turns of the clock found nothing evictable. */
static bool evict_one(cf_cache *c)
{
    bool done = false;
    pthread_mutex_lock(&c->evict_mu);
    for (unsigned step = 0; step < 2 * SHARDS && !done; step++) {
        done = sweep_shard(c, &c->shards[c->hand]);
        c->hand = (c->hand + 1) & (SHARDS - 1);
    }
    pthread_mutex_unlock(&c->evict_mu);
    return done;
}

/* Reserves `bytes` of the budget, evicting as needed.  The running total never passes
 * the budget, so a reader of the byte count sees it bounded at every instant. */
static bool reserve(cf_cache *c, size_t bytes)
{
    size_t cur = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    for (;;) {
        if (bytes <= c->budget && cur <= c->budget - bytes) {
            if (atomic_compare_exchange_weak_explicit(&c->bytes, &cur, cur + bytes,
                                                      memory_order_relaxed, memory_order_relaxed))
                break;
            continue;
        }
        if (bytes > c->budget || !evict_one(c))
            return false;
        cur = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    }
    size_t now = cur + bytes, peak = atomic_load_explicit(&c->peak, memory_order_relaxed);
    while (now > peak && !atomic_compare_exchange_weak_explicit(&c->peak, &peak, now,
                                                                memory_order_relaxed,
                                                                memory_order_relaxed))
        ;
    return true;
}

static cf_cache_entry *entry_new(const cf_key *key, unsigned refs)
{
    cf_cache_entry *e = calloc(1, sizeof *e);
    if (!e)
        return NULL;
    e->key = *key;
    atomic_init(&e->state, CF_ENTRY_PENDING);
    atomic_init(&e->refs, refs);
    atomic_init(&e->referenced, 1);
    atomic_init(&e->successor, NULL);
    pthread_mutex_init(&e->mu, NULL);
    pthread_cond_init(&e->cv, NULL);
    return e;
}

/* Blocks until `e` leaves PENDING; returns its final state. */
static int wait_ready(cf_cache_entry *e)
{
    int st = atomic_load_explicit(&e->state, memory_order_acquire);
    if (st != CF_ENTRY_PENDING)
        return st;
    pthread_mutex_lock(&e->mu);
    while ((st = atomic_load_explicit(&e->state, memory_order_acquire)) == CF_ENTRY_PENDING)
        pthread_cond_wait(&e->cv, &e->mu);
    pthread_mutex_unlock(&e->mu);
    return st;
}

/* The hit path: read lock, walk, reference, unlock. */
static cf_cache_entry *lookup(shard *s, const cf_key *key)
{
    cf_br_slot *slot = cf_brlock_read(&s->lock);
    cf_cache_entry *e = find_locked(s, key);
    if (e) {
        cf_cache_retain(e);
        if (!atomic_load_explicit(&e->referenced, memory_order_relaxed))
            atomic_store_explicit(&e->referenced, 1, memory_order_relaxed);
        if (atomic_load_explicit(&e->state, memory_order_acquire) == CF_ENTRY_READY)
            atomic_fetch_add_explicit(&slot->tally, 1, memory_order_relaxed); /* a hit */
    }
    cf_brlock_read_unlock(slot);
    return e;
}

convfind_status cf_cache_acquire(cf_cache *c, const cf_key *key, cf_cache_entry **out,
                                 bool *owner)
{
    shard *s = shard_of(c, key->hash);
    *out = NULL;
    *owner = false;
    for (;;) {
        cf_cache_entry *e = lookup(s, key);
        if (e) {
            int st = atomic_load_explicit(&e->state, memory_order_acquire);
            if (st == CF_ENTRY_PENDING) {
                atomic_fetch_add_explicit(&s->waits, 1, memory_order_relaxed);
                st = wait_ready(e);
            }
            if (st == CF_ENTRY_READY) {
                *out = e;
                return CONVFIND_OK;
            }
            cf_cache_release(e); /* abandoned: try again, perhaps as the owner */
            continue;
        }
        /* Miss.  The new entry is linked in the same hold of the write lock as the
         * check that it is absent, and charged only after: a caller that reserved first
         * could evict, while reserving, the entry another thread had linked and published
         * for this key since this caller's look-up, and then measure the key a second
         * time.  Reserving outside the lock keeps eviction, which takes other shards'
         * locks, from nesting inside this one; it never takes this entry, which stays
         * PENDING until its owner publishes it. */
        cf_brlock_write(&s->lock);
        e = find_locked(s, key);
        if (e) { /* another caller linked it meanwhile */
            cf_brlock_write_unlock(&s->lock);
            continue;
        }
        e = entry_new(key, 2); /* the table's reference and the owner's */
        if (!e) {
            cf_brlock_write_unlock(&s->lock);
            return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a cache entry");
        }
        atomic_fetch_add_explicit(&s->misses, 1, memory_order_relaxed);
        link_locked(s, e);
        cf_brlock_write_unlock(&s->lock);
        bool charged = reserve(c, c->per_entry);
        cf_brlock_write(&s->lock);
        if (charged)
            e->charge = c->per_entry;
        else /* a budget below one entry, or nothing evictable: the entry serves its owner
              * and the callers already waiting for it, and leaves the table */
            unlink_locked(c, s, e);
        cf_brlock_write_unlock(&s->lock);
        if (!charged)
            cf_cache_release(e); /* the table's */
        *out = e;
        *owner = true;
        return CONVFIND_OK;
    }
}

void cf_cache_publish(cf_cache *c, cf_cache_entry *e, cf_decision *decision, cf_source source,
                      bool provisional)
{
    (void)c;
    e->decision = *decision;
    memset(decision, 0, sizeof *decision);
    e->source = source;
    e->provisional = provisional;
    pthread_mutex_lock(&e->mu);
    atomic_store_explicit(&e->state, CF_ENTRY_READY, memory_order_release);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
}

void cf_cache_abandon(cf_cache *c, cf_cache_entry *e)
{
    shard *s = shard_of(c, e->key.hash);
    cf_brlock_write(&s->lock);
    bool was_linked = e->linked;
    if (was_linked)
        unlink_locked(c, s, e);
    cf_brlock_write_unlock(&s->lock);
    pthread_mutex_lock(&e->mu);
    atomic_store_explicit(&e->state, CF_ENTRY_ABANDONED, memory_order_release);
    pthread_cond_broadcast(&e->cv);
    pthread_mutex_unlock(&e->mu);
    if (was_linked)
        cf_cache_release(e); /* the table's */
    cf_cache_release(e);     /* the owner's */
}

void cf_cache_replace(cf_cache *c, cf_cache_entry *old, cf_decision *decision, cf_source source)
{
    /* refs: one for old->successor; one more if it takes old's place in the table. */
    cf_cache_entry *n = entry_new(&old->key, 2);
    if (!n) {
        cf_decision_clear(decision);
        return;
    }
    n->decision = *decision;
    memset(decision, 0, sizeof *decision);
    n->source = source;
    atomic_store_explicit(&n->state, CF_ENTRY_READY, memory_order_relaxed);
    cf_cache_entry *expected = NULL;
    if (!atomic_compare_exchange_strong_explicit(&old->successor, &expected, n,
                                                 memory_order_acq_rel, memory_order_acquire)) {
        atomic_store_explicit(&n->refs, 1, memory_order_relaxed);
        cf_cache_release(n);
        return;
    }
    shard *s = shard_of(c, old->key.hash);
    cf_brlock_write(&s->lock);
    bool swapped = old->linked;
    if (swapped) {
        cf_cache_entry **pp = &s->buckets[bucket_of(s, old->key.hash)];
        while (*pp != old)
            pp = &(*pp)->next;
        n->next = old->next;
        *pp = n;
        n->charge = old->charge;
        n->linked = true;
        old->linked = false;
        old->next = NULL;
    }
    cf_brlock_write_unlock(&s->lock);
    if (swapped)
        cf_cache_release(old); /* the table's reference moved to n */
    else
        cf_cache_release(n);   /* n is reachable only as old's successor */
}

const cf_cache_entry *cf_cache_latest(const cf_cache_entry *e)
{
    const cf_cache_entry *next;
    while ((next = atomic_load_explicit(&((cf_cache_entry *)e)->successor, memory_order_acquire)))
        e = next;
    return e;
}

void cf_cache_stats_get(cf_cache *c, cf_cache_stats *out)
{
    memset(out, 0, sizeof *out);
    for (unsigned i = 0; i < SHARDS; i++) {
        shard *s = &c->shards[i];
        out->hits += cf_brlock_tally(&s->lock);
        out->misses += atomic_load_explicit(&s->misses, memory_order_relaxed);
        out->waits += atomic_load_explicit(&s->waits, memory_order_relaxed);
        cf_br_slot *slot = cf_brlock_read(&s->lock);
        out->entries += s->count;
        cf_brlock_read_unlock(slot);
    }
    out->evictions = atomic_load_explicit(&c->evictions, memory_order_relaxed);
    out->bytes = atomic_load_explicit(&c->bytes, memory_order_relaxed);
    out->peak_bytes = atomic_load_explicit(&c->peak, memory_order_relaxed);
    out->budget = c->budget;
}
