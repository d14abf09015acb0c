/*
 * lister.c - a device's listing threads (see lister.h).
 */
#include "cuda/lister.h"

#include <pthread.h>
#include <stdlib.h>

#include "util/error.h"

/* Threads per device: a Find has at most five lists (algos.c), two of them split lists
 * only under CONVFIND_MATH_ALLOW_SPLIT_TF32, and its own thread makes the first. */
#define LISTERS 3

struct cf_cuda_lister {
    const cf_cuda_device *d;
    pthread_mutex_t mu;
    pthread_cond_t work;         /* a job was queued, or stop */
    pthread_cond_t done;         /* a job finished */
    cf_cuda_list_job *head, *tail; /* jobs not yet taken, oldest first */
    pthread_t threads[LISTERS];
    int started;
    bool stop;
};

/* Makes one list on the calling thread's own handle. */
static void make(const cf_cuda_device *d, cf_cuda_list_job *j)
{
    cf_cuda_thread *t;
    j->count = 0;
    if (cf_cuda_thread_get(d, &t) != CONVFIND_OK ||
        cf_cudnn_enumerate(t->handle, j->p, j->layout, j->kind, &j->limits, j->out, j->cap,
                           &j->count) != CONVFIND_OK)
        j->count = 0;
    cf_clear_error();
}

/* Takes the oldest queued job, or with `own` the first queued one of own[0..n). */
static cf_cuda_list_job *take(cf_cuda_lister *l, const cf_cuda_list_job *own, int n)
{
    cf_cuda_list_job **link = &l->head, *prev = NULL;
    for (cf_cuda_list_job *j = l->head; j; prev = j, link = &j->next, j = j->next) {
        if (own && !(j >= own && j < own + n))
            continue;
        *link = j->next;
        if (l->tail == j)
            l->tail = prev;
        j->next = NULL;
        return j;
    }
    return NULL;
}

static void *worker(void *arg)
{
    cf_cuda_lister *l = arg;
    cf_cuda_enter(l->d); /* this thread works on the device until it ends */
    pthread_mutex_lock(&l->mu);
    for (;;) {
        cf_cuda_list_job *j = NULL;
        while (!l->stop && !(j = take(l, NULL, 0)))
            pthread_cond_wait(&l->work, &l->mu);
        if (!j)
            break;
        pthread_mutex_unlock(&l->mu);
        make(l->d, j);
        pthread_mutex_lock(&l->mu);
        j->finished = true;
        pthread_cond_broadcast(&l->done);
    }
    pthread_mutex_unlock(&l->mu);
    return NULL;
}

cf_cuda_lister *cf_cuda_lister_create(const cf_cuda_device *d)
{
    cf_cuda_lister *l = calloc(1, sizeof *l);
    if (!l)
        return NULL;
    l->d = d;
    pthread_mutex_init(&l->mu, NULL);
    pthread_cond_init(&l->work, NULL);
    pthread_cond_init(&l->done, NULL);
    while (l->started < LISTERS &&
           pthread_create(&l->threads[l->started], NULL, worker, l) == 0)
        l->started++;
    if (l->started == 0) {
        cf_cuda_lister_destroy(l);
        return NULL;
    }
    return l;
}

void cf_cuda_lister_destroy(cf_cuda_lister *l)
{
    if (!l)
        return;
    pthread_mutex_lock(&l->mu);
    l->stop = true;
    pthread_cond_broadcast(&l->work);
    pthread_mutex_unlock(&l->mu);
    for (int i = 0; i < l->started; i++)
        pthread_join(l->threads[i], NULL);
    pthread_cond_destroy(&l->done);
    pthread_cond_destroy(&l->work);
    pthread_mutex_destroy(&l->mu);
    free(l);
}

void cf_cuda_list(cf_cuda_lister *l, const cf_cuda_device *d, cf_cuda_list_job *jobs, int n)
{
    if (n <= 0)
        return;
    if (l) {
        pthread_mutex_lock(&l->mu);
        for (int i = 1; i < n; i++) {
            jobs[i].finished = false;
            jobs[i].next = NULL;
            if (l->tail)
                l->tail->next = &jobs[i];
            else
                l->head = &jobs[i];
            l->tail = &jobs[i];
        }
        pthread_cond_broadcast(&l->work);
        pthread_mutex_unlock(&l->mu);
    }
    make(d, &jobs[0]);
    if (!l) {
        for (int i = 1; i < n; i++)
            make(d, &jobs[i]);
        return;
    }
    pthread_mutex_lock(&l->mu);
    for (;;) {
        cf_cuda_list_job *j = take(l, jobs, n);
        if (j) { /* not taken yet: made here rather than waited for */
            pthread_mutex_unlock(&l->mu);
            make(d, j);
            pthread_mutex_lock(&l->mu);
            j->finished = true;
            continue;
        }
        bool all = true;
        for (int i = 1; i < n && all; i++)
            all = jobs[i].finished;
        if (all)
            break;
        pthread_cond_wait(&l->done, &l->mu);
    }
    pthread_mutex_unlock(&l->mu);
}
