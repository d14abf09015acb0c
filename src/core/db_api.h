/*
 * db_api.h - the public find-database handle (convfind_db) over the database layer's
 * cf_db: a context's own, embedded in the context, or one opened alone.
 */
#ifndef CONVFIND_CORE_DB_API_H
#define CONVFIND_CORE_DB_API_H

#include <stdbool.h>

#include "convfind.h"
#include "db/db.h"

struct convfind_db {
    cf_db *db;
    bool owned;            /* opened by convfind_db_open: closed by convfind_db_close */
    bool read_only;        /* opened READ_ONLY: nothing may change the file */
    bool fleet;            /* opened with fleet_db: the fleet tier alone */
    cf_db_env env;         /* this process's environment, which makes a record current */
    char *cuda_module;     /* opened alone: its CONVFIND_CUDA_MODULE, for the record check */
    char environment[420]; /* its description, for convfind_db_info */
};

/* Makes `handle` the public face of a context's database `db` in environment `env`. */
void cf_db_handle_init(convfind_db *handle, cf_db *db, const cf_db_env *env);

#endif /* CONVFIND_CORE_DB_API_H */
