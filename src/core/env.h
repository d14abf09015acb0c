/*
 * env.h - the environment variables the library reads, read in this one place, once
 * per context creation and once per convfind_db_open: CONVFIND_FIND_POLICY, CONVFIND_LOG,
 * and where the find database is (CONVFIND_DB_PATH, CONVFIND_SYSTEM_DB, XDG_CACHE_HOME,
 * HOME, and the fleet tier's CONVFIND_FLEET_DB).
 *
 * The values are parsed or copied here and kept with the context (or handed to the
 * database while it opens); nothing downstream calls getenv for them.  A value that means nothing is not an error of the context's creation: it is
 * kept as a warning for the context's log (which may itself depend on CONVFIND_LOG, so
 * the warnings are logged only once the log is set up) and the default applies.
 */
#ifndef CONVFIND_CORE_ENV_H
#define CONVFIND_CORE_ENV_H

#include "convfind.h"
#include "db/db.h"
#include "util/log.h"

#define CF_ENV_WARNINGS 2

typedef struct cf_env {
    convfind_find_policy find_policy; /* CONVFIND_FIND_POLICY; DEFAULT when unset or bad */
    convfind_log_level log_level;     /* CONVFIND_LOG; DEFAULT when unset or bad */
    /* CONVFIND_DB_PATH, CONVFIND_SYSTEM_DB, XDG_CACHE_HOME, HOME, CONVFIND_FLEET_DB:
     * copies, NULL when unset or empty */
    char *db_path, *system_db, *xdg_cache_home, *home, *fleet_db;
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

/* Writes the warnings of cf_env_read to `log`. */
void cf_env_report(const cf_env *env, const cf_log *log);

/* The find policy a CONVFIND_FIND_POLICY spelling names (case-insensitive: heuristic,
 * exhaustive, hybrid, replay, deferred), or CONVFIND_FIND_DEFAULT. */
convfind_find_policy cf_env_find_policy(const char *s);

#endif /* CONVFIND_CORE_ENV_H */
