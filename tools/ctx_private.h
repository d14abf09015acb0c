/*
 * ctx_private.h - the only functions of the tool that reach below the public API into a
 * context (core/context.h, db/db.h), for what include/convfind.h does not offer yet:
 * where the context's find database is, a stored decision's timing, and how many
 * decisions could not be stored.  Each is meant to become a public call, after which
 * this file goes away (`convfind db` is the other user of db/db.h: cmd_db.c).
 */
#ifndef CONVFIND_TOOLS_CTX_PRIVATE_H
#define CONVFIND_TOOLS_CTX_PRIVATE_H

#include <stdbool.h>
#include <stddef.h>

#include "convfind.h"

/* The database file the context uses, or ":memory:". */
const char *cli_ctx_db_location(const convfind_context *ctx);

/* True when the context stores its decisions in a file it can write. */
bool cli_ctx_db_writable(const convfind_context *ctx);

/* The stored median of algorithm `algo` in the stored decision of `key`; 0 if none. */
double cli_ctx_stored_median(convfind_context *ctx, const char *key, const char *algo);

/* Writes what the database still holds back (a busy database) and returns how many
 * decisions the context could not store since it was created. */
size_t cli_ctx_db_flush(convfind_context *ctx);

#endif /* CONVFIND_TOOLS_CTX_PRIVATE_H */
