/*
 * scratch.c - per-thread workspace buffers (see scratch.h).
 *
 * The buffer lives in a thread-local variable for the fast path and is also registered
 * under a pthread key so that it is freed when the thread exits.
 */
#include "core/scratch.h"

#include <pthread.h>
#include <stdlib.h>

typedef struct scratch {
    void *data;
    size_t size;
} scratch;

static _Thread_local scratch tls_scratch;
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static int scratch_key_ok;

static void scratch_free(void *data) { free(data); }

static void scratch_init(void)
{
    scratch_key_ok = pthread_key_create(&scratch_key, scratch_free) == 0;
}

void *cf_scratch_get(size_t bytes)
{
    scratch *s = &tls_scratch;
    if (s->size >= bytes)
        return s->data;
    pthread_once(&scratch_once, scratch_init);
    size_t rounded = (bytes + 63) & ~(size_t)63;
    if (rounded < bytes)
        return NULL;
    void *fresh = aligned_alloc(64, rounded);
    if (!fresh)
        return NULL;
    free(s->data);
    s->data = fresh;
    s->size = rounded;
    if (scratch_key_ok)
        pthread_setspecific(scratch_key, fresh);
    return fresh;
}
