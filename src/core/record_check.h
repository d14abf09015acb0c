/*
 * record_check.h - whether a stored decision can be used by this build for its key.
 *
 * A record comes from disk or from another machine (convfind db import).  Before this
 * check, a record naming an algorithm this build does not have, one that cannot run the
 * key's problem, or one whose every candidate failed was accepted, and plans then ran
 * the reference (5.7x slower than the record's own best) as a "stored" decision, forever.
 * The find database asks this check (cf_db_config.usable) on every load and import: an
 * unusable record is a miss on load, re-measured under the policy, and refused on import.
 */
#ifndef CONVFIND_CORE_RECORD_CHECK_H
#define CONVFIND_CORE_RECORD_CHECK_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/backend.h"
#include "decision/decision.h"

/* cf_db_usable_fn for records of `backend` (a const cf_backend *, not NULL).  A record
 * is usable when its key parses, every candidate names an algorithm of one backend that
 * has the decision's algorithm, that algorithm can run the key's problem, and not every
 * candidate failed (one is OK or ABANDONED).  Thread-safe. */
bool cf_record_usable(void *backend, const char *key, const cf_decision *d, char *why,
                      size_t size);

/* The same for records of any backend this process can use, the CUDA module's included
 * where it loads from `cuda_module` (a const char *, the CONVFIND_CUDA_MODULE of the
 * caller's environment; NULL: the usual places; algo/module.h). */
bool cf_record_usable_anywhere(void *cuda_module, const char *key, const cf_decision *d,
                               char *why, size_t size);

#endif /* CONVFIND_CORE_RECORD_CHECK_H */
