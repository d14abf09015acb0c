/*
 * env.h - the environment variables the library reads, read in this one place, once
 * per context creation and once per convfind_db_open (and by the calls that need the
 * CUDA module's location without a context: convfind_cuda_available and the algorithm
 * list).  docs/environment.md lists them all.
 *
 * What a context's settings and Find read: CONVFIND_FIND_POLICY, CONVFIND_LOG and
 * CONVFIND_FIND_TRACE.  Where the find database is: CONVFIND_DB_PATH,
 * CONVFIND_SYSTEM_DB, XDG_CACHE_HOME, HOME, and the fleet tier's CONVFIND_FLEET_DB.
 * What the backends are asked: CONVFIND_ISA (CPU), CONVFIND_CUDNN_RUNTIME_COMPILED
 * (CUDA), and where the CUDA module is, CONVFIND_CUDA_MODULE.
 *
 * The values are parsed or copied here and kept with the context (or handed to the
 * database while it opens, or to the backend's open() through cf_backend_env); nothing
 * else in the library calls getenv.  A value that means nothing is not an error of the
 * context's creation: it is kept as a warning for the context's log (which may itself
 * depend on CONVFIND_LOG, so the warnings are logged only once the log is set up) and
 * the default applies.
 */
#ifndef CONVFIND_CORE_ENV_H
#define CONVFIND_CORE_ENV_H

#include <stdbool.h>

#include "algo/backend.h"
#include "convfind.h"
#include "db/db.h"
#include "util/log.h"

#define CF_ENV_WARNINGS 5

typedef struct cf_env {
    convfind_find_policy find_policy; /* CONVFIND_FIND_POLICY; DEFAULT when unset or bad */
    convfind_log_level log_level;     /* CONVFIND_LOG; DEFAULT when unset or bad */
    bool find_trace;                  /* CONVFIND_FIND_TRACE=1; false when unset, 0 or bad */
    int isa;                          /* CONVFIND_ISA as a cf_isa; -1 when unset or bad */
    /* CONVFIND_CUDNN_RUNTIME_COMPILED (0: NEVER, 1: ALWAYS); DEFAULT when unset or bad */
    cf_runtime_compiled runtime_compiled;
    /* CONVFIND_DB_PATH, CONVFIND_SYSTEM_DB, XDG_CACHE_HOME, HOME, CONVFIND_FLEET_DB,
     * CONVFIND_CUDA_MODULE: copies, NULL when unset or empty */
    char *db_path, *system_db, *xdg_cache_home, *home, *fleet_db, *cuda_module;
    int n_warnings;
    char warnings[CF_ENV_WARNINGS][160];
} cf_env;

/* Reads and parses the variables now.  CONVFIND_ERR_OUT_OF_MEMORY when a value cannot
 * be copied (nothing is then held).  Thread-safe as getenv is. */
convfind_status cf_env_read(cf_env *env);

/* Frees the copies.  NULL allowed. */
void cf_env_free(cf_env *env);

/* The database locations the variables name, for cf_db_config.locations (valid while
 * `env` is). */
cf_db_locations cf_env_db_locations(const cf_env *env);

/* What the variables ask of a context's backend, for cf_backend_config.env; warnings go
 * to `log` (both must outlive the backend's open()). */
cf_backend_env cf_env_backend(const cf_env *env, const cf_log *log);

/* Writes the warnings of cf_env_read to `log`. */
void cf_env_report(const cf_env *env, const cf_log *log);

/* The find policy a CONVFIND_FIND_POLICY spelling names (case-insensitive: heuristic,
 * exhaustive, hybrid, replay, deferred), or CONVFIND_FIND_DEFAULT. */
convfind_find_policy cf_env_find_policy(const char *s);

#endif /* CONVFIND_CORE_ENV_H */
