/*
 * env.h - the environment variables a context reads, read in this one place, once per
 * context creation: CONVFIND_FIND_POLICY and CONVFIND_LOG.
 *
 * The values are parsed here and kept in the context; nothing downstream calls getenv
 * for them.  A value that means nothing is not an error of the context's creation: it is
 * kept as a warning for the context's log (which may itself depend on CONVFIND_LOG, so
 * the warnings are logged only once the log is set up) and the default applies.
 */
#ifndef CONVFIND_CORE_ENV_H
#define CONVFIND_CORE_ENV_H

#include "convfind.h"
#include "util/log.h"

#define CF_ENV_WARNINGS 2

typedef struct cf_env {
    convfind_find_policy find_policy; /* CONVFIND_FIND_POLICY; DEFAULT when unset or bad */
    convfind_log_level log_level;     /* CONVFIND_LOG; DEFAULT when unset or bad */
    int n_warnings;
    char warnings[CF_ENV_WARNINGS][160];
} cf_env;

/* Reads and parses the variables now.  Thread-safe (getenv only). */
void cf_env_read(cf_env *env);

/* Writes the warnings of cf_env_read to `log`. */
void cf_env_report(const cf_env *env, const cf_log *log);

/* The find policy a CONVFIND_FIND_POLICY spelling names (case-insensitive: heuristic,
 * exhaustive, hybrid, replay, deferred), or CONVFIND_FIND_DEFAULT. */
convfind_find_policy cf_env_find_policy(const char *s);

#endif /* CONVFIND_CORE_ENV_H */
