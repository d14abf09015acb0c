/*
 * compiled.c - storing and loading the code algorithms compile at run time (compiled.h).
 */
#include "core/compiled.h"

#include <stdlib.h>

#include "db/db.h"
#include "util/error.h"

void cf_compiled_store(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                       const char *algo_name)
{
    const cf_algo *a = cf_context_algo(ctx, algo_name);
    void *state = NULL, *blob = NULL;
    size_t size = 0;
    if (!a || !a->export_compiled || cf_algo_prepare(a, p, algo_name, &state) != CONVFIND_OK) {
        cf_clear_error();
        return;
    }
    if (a->export_compiled(p, state, ctx->device, &blob, &size) == CONVFIND_OK && blob &&
        cf_db_artifact_put(ctx->db, key->text, algo_name, blob, size) == CONVFIND_OK)
        atomic_fetch_add_explicit(&ctx->compiled_stored, 1, memory_order_relaxed);
    free(blob);
    if (a->release)
        a->release(state);
    cf_clear_error();
}

typedef struct fetch_arg {
    cf_db *db;
    const char *key, *name;
} fetch_arg;

static bool fetch(void *opaque, void **blob, size_t *size)
{
    const fetch_arg *f = opaque;
    return cf_db_artifact_get(f->db, f->key, f->name, blob, size) == CONVFIND_OK;
}

void cf_compiled_load(convfind_context *ctx, const cf_problem *p, const cf_key *key,
                      const cf_algo *algo, const void *state, const char *name)
{
    if (!algo->import_compiled)
        return;
    fetch_arg f = {ctx->db, key->text, name};
    if (algo->import_compiled(p, state, ctx->device, fetch, &f))
        atomic_fetch_add_explicit(&ctx->compiled_loaded, 1, memory_order_relaxed);
    cf_clear_error();
}
