/*
 * env.c - the environment variables the library reads (see env.h), and the only
 * caller of getenv in the library.
 */
#include "core/env.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "algo/isa.h"
#include "util/error.h"

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

/* A copy of a variable that is set and not empty, else NULL; false when out of memory. */
static bool copy_of(const char *name, char **out)
{
    const char *v = nonempty(name);
    *out = v ? strdup(v) : NULL;
    return !v || *out;
}

/* A switch: 1 on, 0 or unset off; anything else off with a warning. */
static bool switch_of(cf_env *env, const char *name)
{
    const char *v = nonempty(name);
    if (v && strcmp(v, "1") != 0 && strcmp(v, "0") != 0)
        warn(env, name, v, "0, 1");
    return v && strcmp(v, "1") == 0;
}

void cf_env_free(cf_env *env)
{
    if (!env)
        return;
    free(env->db_path);
    free(env->system_db);
    free(env->xdg_cache_home);
    free(env->home);
    free(env->fleet_db);
    free(env->cuda_module);
    env->db_path = env->system_db = env->xdg_cache_home = env->home = env->fleet_db = NULL;
    env->cuda_module = NULL;
}

cf_db_locations cf_env_db_locations(const cf_env *env)
{
    return (cf_db_locations){.db_path = env->db_path, .system_db = env->system_db,
                             .xdg_cache_home = env->xdg_cache_home, .home = env->home,
                             .fleet_db = env->fleet_db};
}

cf_backend_env cf_env_backend(const cf_env *env, const cf_log *log)
{
    return (cf_backend_env){.log = log, .isa = env->isa,
                            .runtime_compiled = env->runtime_compiled};
}

convfind_status cf_env_read(cf_env *env)
{
    memset(env, 0, sizeof *env);
    if (!copy_of("CONVFIND_DB_PATH", &env->db_path) ||
        !copy_of("CONVFIND_SYSTEM_DB", &env->system_db) ||
        !copy_of("XDG_CACHE_HOME", &env->xdg_cache_home) || !copy_of("HOME", &env->home) ||
        !copy_of("CONVFIND_FLEET_DB", &env->fleet_db) ||
        !copy_of("CONVFIND_CUDA_MODULE", &env->cuda_module)) {
        cf_env_free(env);
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot copy the environment's paths");
    }
    const char *v = nonempty("CONVFIND_FIND_POLICY");
    env->find_policy = cf_env_find_policy(v);
    if (v && env->find_policy == CONVFIND_FIND_DEFAULT)
        warn(env, "CONVFIND_FIND_POLICY", v, "heuristic, exhaustive, hybrid, replay, deferred");
    v = nonempty("CONVFIND_LOG");
    env->log_level = cf_log_level_parse(v);
    if (v && env->log_level == CONVFIND_LOG_DEFAULT)
        warn(env, "CONVFIND_LOG", v, "error, warning, info, debug");
    env->find_trace = switch_of(env, "CONVFIND_FIND_TRACE");
    v = nonempty("CONVFIND_ISA");
    env->isa = cf_isa_parse(v);
    if (v && env->isa < 0)
        warn(env, "CONVFIND_ISA", v, "portable, avx2, avx512");
    v = nonempty("CONVFIND_CUDNN_RUNTIME_COMPILED");
    env->runtime_compiled = !v                   ? CF_RUNTIME_COMPILED_DEFAULT
                            : strcmp(v, "0") == 0 ? CF_RUNTIME_COMPILED_NEVER
                            : strcmp(v, "1") == 0 ? CF_RUNTIME_COMPILED_ALWAYS
                                                  : CF_RUNTIME_COMPILED_DEFAULT;
    if (v && env->runtime_compiled == CF_RUNTIME_COMPILED_DEFAULT)
        warn(env, "CONVFIND_CUDNN_RUNTIME_COMPILED", v, "0, 1");
    return CONVFIND_OK;
}

void cf_env_report(const cf_env *env, const cf_log *log)
{
    for (int i = 0; i < env->n_warnings; i++)
        cf_log_msg(log, CONVFIND_LOG_WARNING, "%s", env->warnings[i]);
}
