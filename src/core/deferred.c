/*
 * deferred.c - the DEFERRED policy's worker thread (see deferred.h).
 */
#include "core/deferred.h"

#include <stdlib.h>

#include "core/policy.h"
#include "util/error.h"

typedef struct job {
    cf_cache_entry *entry;
    cf_problem problem;
    double budget_ms;
    struct job *next;
} job;

struct cf_deferred {
    convfind_context *ctx;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job *head, *tail;
    int queued;
    bool stop;
    atomic_bool cancel;
};

/* Tuned later, remembered for good: the measurement is stored too. */
static void tune(cf_deferred *d, job *j)
{
    if (cf_decision_remeasure(d->ctx, &j->problem, j->entry, j->budget_ms, &d->cancel) ==
        CONVFIND_OK)
        atomic_fetch_add_explicit(&d->ctx->deferred_updates, 1, memory_order_relaxed);
}

static void *worker(void *arg)
{
    cf_deferred *d = arg;
    for (;;) {
        pthread_mutex_lock(&d->mu);
        while (!d->stop && !d->head)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->stop) {
            pthread_mutex_unlock(&d->mu);
            return NULL;
        }
        job *j = d->head;
        d->head = j->next;
        if (!d->head)
            d->tail = NULL;
        d->queued--;
        pthread_mutex_unlock(&d->mu);
        tune(d, j);
        cf_cache_release(j->entry);
        free(j);
    }
}

convfind_status cf_deferred_create(convfind_context *ctx, cf_deferred **out)
{
    *out = NULL;
    cf_deferred *d = calloc(1, sizeof *d);
    if (!d)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the background tuner");
    d->ctx = ctx;
    atomic_init(&d->cancel, false);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    if (pthread_create(&d->thread, NULL, worker, d) != 0) {
        pthread_mutex_destroy(&d->mu);
        pthread_cond_destroy(&d->cv);
        free(d);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot start the background tuner thread");
    }
    *out = d;
    return CONVFIND_OK;
}

void cf_deferred_submit(cf_deferred *d, cf_cache_entry *e, const cf_problem *p, double budget_ms)
{
    job *j = malloc(sizeof *j);
    if (!j)
        return; /* the heuristic decision stays: correct, just not tuned */
    cf_cache_retain(e);
    j->entry = e;
    j->problem = *p;
    j->budget_ms = budget_ms;
    j->next = NULL;
    pthread_mutex_lock(&d->mu);
    bool full = d->queued >= CF_DEFERRED_QUEUE_MAX || d->stop;
    if (!full) {
        if (d->tail)
            d->tail->next = j;
        else
            d->head = j;
        d->tail = j;
        d->queued++;
        pthread_cond_signal(&d->cv);
    }
    pthread_mutex_unlock(&d->mu);
    if (full) {
        cf_cache_release(e);
        free(j);
    }
}

void cf_deferred_destroy(cf_deferred *d)
{
    if (!d)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    atomic_store(&d->cancel, true);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    pthread_join(d->thread, NULL);
    while (d->head) {
        job *j = d->head;
        d->head = j->next;
        cf_cache_release(j->entry);
        free(j);
    }
    pthread_mutex_destroy(&d->mu);
    pthread_cond_destroy(&d->cv);
    free(d);
}
