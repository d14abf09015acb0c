/*
 * env.c - the environment of a context (see env.h).
 */
#include "core/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <strings.h>

static const char *const policy_names[] = {"default", "heuristic", "exhaustive",
                                           "hybrid",  "replay",    "deferred"};

convfind_find_policy cf_env_find_policy(const char *s)
{
    for (int i = CONVFIND_FIND_HEURISTIC; s && i <= CONVFIND_FIND_DEFERRED; i++)
        if (strcasecmp(s, policy_names[i]) == 0)
            return (convfind_find_policy)i;
    return CONVFIND_FIND_DEFAULT;
}

static const char *nonempty(const char *name)
{
    const char *v = getenv(name);
    return v && v[0] ? v : NULL;
}

static void warn(cf_env *env, const char *name, const char *value, const char *accepted)
{
    if (env->n_warnings < CF_ENV_WARNINGS)
        snprintf(env->warnings[env->n_warnings++], sizeof env->warnings[0],
                 "%s=%.40s is not one of %s; ignoring it", name, value, accepted);
}

void cf_env_read(cf_env *env)
{
    env->n_warnings = 0;
    const char *v = nonempty("CONVFIND_FIND_POLICY");
    env->find_policy = cf_env_find_policy(v);
    if (v && env->find_policy == CONVFIND_FIND_DEFAULT)
        warn(env, "CONVFIND_FIND_POLICY", v, "heuristic, exhaustive, hybrid, replay, deferred");
    v = nonempty("CONVFIND_LOG");
    env->log_level = cf_log_level_parse(v);
    if (v && env->log_level == CONVFIND_LOG_DEFAULT)
        warn(env, "CONVFIND_LOG", v, "error, warning, info, debug");
}

void cf_env_report(const cf_env *env, const cf_log *log)
{
    for (int i = 0; i < env->n_warnings; i++)
        cf_log_msg(log, CONVFIND_LOG_WARNING, "%s", env->warnings[i]);
}
