/*
 * intern.c - the process-lifetime string table (see intern.h).
 *
 * A chained hash table behind one mutex: interning happens when Find results are
 * exported, never on an execution path, so contention does not matter.  Nothing is
 * freed; the memory is reclaimed at process exit, like any static storage.
 */
#include "util/intern.h"

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define INTERN_BUCKETS 256

typedef struct interned {
    struct interned *next;
    char text[];
} interned;

static pthread_mutex_t intern_lock = PTHREAD_MUTEX_INITIALIZER;
static interned *buckets[INTERN_BUCKETS];

static uint32_t hash_text(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

const char *cf_intern(const char *s)
{
    if (!s)
        return NULL;
    interned **slot = &buckets[hash_text(s) % INTERN_BUCKETS];
    const char *found = NULL;
    pthread_mutex_lock(&intern_lock);
    for (interned *e = *slot; e && !found; e = e->next)
        if (strcmp(e->text, s) == 0)
            found = e->text;
    if (!found) {
        size_t len = strlen(s) + 1;
        interned *e = malloc(sizeof *e + len);
        if (e) {
            memcpy(e->text, s, len);
            e->next = *slot;
            *slot = e;
            found = e->text;
        }
    }
    pthread_mutex_unlock(&intern_lock);
    return found;
}
