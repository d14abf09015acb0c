/*
 * fleet_context.c - the fleet tier through the public API: a context with
 * convfind_context_options.fleet_db measures a problem and pushes it; a context of
 * another machine (its own user database) then plans it with no Find, from the fleet,
 * and its statistics say so; fleet_db "" turns the tier off even when
 * $CONVFIND_FLEET_DB names one; a context whose fleet tier cannot be reached creates and
 * executes its plans all the same; a database handle opened on the fleet tier alone
 * lists what the contexts pushed.
 */
#include "convfind.h"
#include "fleet_fixture.h"

/* Plans the problem on a new context of machine `m` and returns its statistics. */
static convfind_context_stats plan_on(const char *dir, int m, const char *fleet_db)
{
    char path[512];
    snprintf(path, sizeof path, "%s/ctx%d.sqlite", dir, m);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.db_path = path;
    o.find_time_budget_s = 0.05;
    o.fleet_db = fleet_db;
    convfind_context *ctx = NULL;
    FL_CHECK(convfind_context_create(&o, &ctx) == CONVFIND_OK, "context: %s",
             convfind_last_error());
    convfind_problem *p = fx_small_problem();
    FL_CHECK(p, "problem: %s", convfind_last_error());
    convfind_plan *plan = NULL;
    FL_CHECK(convfind_plan_create(ctx, p, &plan) == CONVFIND_OK, "plan: %s",
             convfind_last_error());
    float x[4 * 8 * 8], w[8 * 4 * 3 * 3], y[8 * 8 * 8];
    for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
        x[i] = (float)(i % 7) - 3.0f;
    for (size_t i = 0; i < sizeof w / sizeof w[0]; i++)
        w[i] = (float)(i % 5) * 0.25f;
    convfind_tensors t;
    memset(&t, 0, sizeof t);
    t.x = x;
    t.w = w;
    t.y = y;
    FL_CHECK(convfind_execute(plan, &t) == CONVFIND_OK, "execute: %s", convfind_last_error());
    convfind_context_stats s = {.struct_size = sizeof s};
    FL_CHECK(convfind_context_stats_get(ctx, &s) == CONVFIND_OK, "stats: %s",
             convfind_last_error());
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
    return s;
}

static int count_fleet_record(void *user, const convfind_db_record *r)
{
    FL_CHECK(strcmp(r->tier, "fleet") == 0, "record of tier %s on a fleet handle", r->tier);
    ++*(int *)user;
    return 0;
}

/* A convfind_db handle on the fleet tier alone (convfind_db_options.fleet_db): it sees
 * the `n` records the contexts pushed, refuses what is for SQLite files, and one on a
 * server that does not answer, or named with a user tier too, is not opened. */
static void fleet_handle(const char *conninfo, const char *dead, int n)
{
    convfind_db_options o;
    convfind_db_options_init(&o);
    o.mode = CONVFIND_DB_READ_ONLY;
    o.fleet_db = conninfo;
    convfind_db *db = NULL;
    FL_CHECK(convfind_db_open(&o, &db) == CONVFIND_OK, "fleet handle: %s", convfind_last_error());
    convfind_db_info info = {.struct_size = sizeof info};
    FL_CHECK(convfind_db_get_info(db, &info) == CONVFIND_OK && info.records == (size_t)n &&
                 strstr(info.path, "user=convfind") != NULL,
             "fleet info: %zu records at %s", info.records, info.path);
    int seen = 0;
    FL_CHECK(convfind_db_foreach(db, NULL, count_fleet_record, &seen) == CONVFIND_OK &&
                 seen == n,
             "fleet foreach: %d records", seen);
    FL_CHECK(convfind_db_verify(db, NULL) == CONVFIND_ERR_UNSUPPORTED, "verify on the fleet");
    FL_CHECK(convfind_db_prune(db, NULL) == CONVFIND_ERR_UNSUPPORTED, "prune on READ_ONLY");
    convfind_db_close(db);
    o.fleet_db = dead;
    FL_CHECK(convfind_db_open(&o, &db) == CONVFIND_ERR_IO && !db, "dead fleet handle opened");
    o.fleet_db = conninfo;
    o.path = "x.sqlite";
    FL_CHECK(convfind_db_open(&o, &db) == CONVFIND_ERR_INVALID_ATTRIBUTE && !db,
             "fleet_db with a path");
}

int main(void)
{
    char dir[256], conninfo[512], dead[600];
    fx_tmpdir(dir, sizeof dir);
    fl_start(dir, conninfo, sizeof conninfo);

    convfind_context_stats s = plan_on(dir, 0, conninfo);
    FL_CHECK(s.finds == 1 && s.fleet_pushed == 1 && s.fleet_connected && s.fleet_faults == 0,
             "first machine: finds %llu, pushed %llu, connected %d",
             (unsigned long long)s.finds, (unsigned long long)s.fleet_pushed,
             s.fleet_connected);
    s = plan_on(dir, 1, conninfo);
    FL_CHECK(s.finds == 0 && s.fleet_hits == 1, "second machine: finds %llu, fleet hits %llu",
             (unsigned long long)s.finds, (unsigned long long)s.fleet_hits);

    /* "" is no fleet tier, whatever the environment says. */
    setenv("CONVFIND_FLEET_DB", conninfo, 1);
    s = plan_on(dir, 2, "");
    FL_CHECK(s.finds == 1 && s.fleet_hits == 0 && !s.fleet_connected,
             "fleet_db \"\": finds %llu, fleet hits %llu", (unsigned long long)s.finds,
             (unsigned long long)s.fleet_hits);
    /* NULL is the environment's. */
    s = plan_on(dir, 3, NULL);
    FL_CHECK(s.finds == 0 && s.fleet_hits == 1, "$CONVFIND_FLEET_DB was not used");
    unsetenv("CONVFIND_FLEET_DB");

    /* No server: plans are made and executed all the same. */
    snprintf(dead, sizeof dead, "host=%s/nothing-here user=convfind dbname=postgres", dir);
    s = plan_on(dir, 4, dead);
    FL_CHECK(s.finds == 1 && s.fleet_faults >= 1 && !s.fleet_connected,
             "without a server: finds %llu, faults %llu", (unsigned long long)s.finds,
             (unsigned long long)s.fleet_faults);

    fleet_handle(conninfo, dead, 1);

    fl_finish(dir);
    printf("fleet_context: a decision measured by one context served another machine's "
           "context from the fleet tier\n");
    return 0;
}
