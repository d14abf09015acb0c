/*
 * ctx_private.c - the tool's look below the public API (see ctx_private.h).
 */
#include "ctx_private.h"

#include "core/context.h"

const char *cli_ctx_db_location(const convfind_context *ctx)
{
    return cf_db_location(ctx->db);
}

bool cli_ctx_db_writable(const convfind_context *ctx)
{
    return cf_db_is_writable(ctx->db);
}

double cli_ctx_stored_median(convfind_context *ctx, const char *key, const char *algo)
{
    cf_decision d;
    cf_db_found found;
    double ms = 0;
    if (cf_db_lookup(ctx->db, key, &d, &found) == CONVFIND_OK && found == CF_DB_HIT) {
        const cf_candidate_stats *c = cf_decision_candidate(&d, algo);
        ms = c ? c->median_ms : 0;
    }
    cf_decision_clear(&d);
    return ms;
}

size_t cli_ctx_db_flush(convfind_context *ctx)
{
    return cf_db_flush(ctx->db);
}
