/*
 * record_check.c - the usability check of stored decisions (see record_check.h).
 */
#include "core/record_check.h"

#include <stdio.h>

#include "algo/registry.h"
#include "problem/key.h"
#include "util/error.h"

/* Whether every candidate of `d` is an algorithm of `b` and the decision's algorithm can
 * run `p`; the reason in `why` when not. */
static bool usable_on(const cf_backend *b, const cf_problem *p, const cf_decision *d, char *why,
                      size_t size)
{
    const cf_algo *chosen = cf_backend_find(b, d->algo);
    if (!chosen) {
        snprintf(why, size, "algorithm \"%s\" is not one of this build's (%s backend)", d->algo,
                 b->name);
        return false;
    }
    for (int i = 0; i < d->n_candidates; i++)
        if (!cf_backend_find(b, d->candidates[i].algo)) {
            snprintf(why, size, "candidate \"%s\" is not an algorithm of this build (%s backend)",
                     d->candidates[i].algo, b->name);
            return false;
        }
    if (!chosen->applicable(p)) {
        snprintf(why, size, "algorithm \"%s\" cannot run the problem of the key", d->algo);
        return false;
    }
    return true;
}

/* The check of cf_record_usable (backend given) and cf_record_usable_anywhere. */
static bool usable(const cf_backend *backend, const char *cuda_module, const char *key,
                   const cf_decision *d, char *why, size_t size)
{
    cf_problem p;
    cf_fingerprint fp;
    if (cf_key_parse(key, &p, &fp) != CONVFIND_OK) {
        snprintf(why, size, "its key does not parse: %s", convfind_last_error());
        cf_clear_error();
        return false;
    }
    bool runnable = false;
    for (int i = 0; i < d->n_candidates && !runnable; i++)
        runnable = d->candidates[i].status == CF_CAND_OK ||
                   d->candidates[i].status == CF_CAND_ABANDONED;
    if (!runnable) {
        snprintf(why, size, "every candidate failed or cannot run");
        return false;
    }
    if (backend)
        return usable_on(backend, &p, d, why, size);
    const cf_backend *b[2];
    const int nb = cf_backends(cuda_module, b, 2);
    for (int i = 0; i < nb; i++)
        if (cf_backend_find(b[i], d->algo))
            return usable_on(b[i], &p, d, why, size);
    snprintf(why, size, "algorithm \"%s\" is not one of this build's", d->algo);
    return false;
}

bool cf_record_usable(void *backend, const char *key, const cf_decision *d, char *why,
                      size_t size)
{
    return usable(backend, NULL, key, d, why, size);
}

bool cf_record_usable_anywhere(void *cuda_module, const char *key, const cf_decision *d,
                               char *why, size_t size)
{
    return usable(NULL, cuda_module, key, d, why, size);
}
