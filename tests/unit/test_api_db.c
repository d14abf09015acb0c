/*
 * test_api_db.c - the find database as a public object (convfind_db_*).
 *
 * What an embedding runtime or a tool relies on: a context's handle is the context's
 * database; a database opened READ_ONLY changes nothing and refuses changes; export and
 * import through the caller's functions carry every record (serialization in memory);
 * and a record this build cannot use (an unknown algorithm, one that cannot run the
 * key's problem, every candidate failed) is refused on import naming the line, treated
 * as a miss on load (measured again, never run as "stored"), reported by verify and
 * removed by prune (issue 16, defect 8).  The locations come from the environment, read
 * once per convfind_db_open.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "algo/registry.h"
#include "db/db.h"
#include "test_cache_util.h"

static char dir[128];

static int make_dir(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/convfind-api-db-XXXXXX");
    assert_non_null(mkdtemp(dir));
    unsetenv("CONVFIND_DB_PATH");
    unsetenv("CONVFIND_SYSTEM_DB");
    return 0;
}

static int remove_dir(void **state)
{
    (void)state;
    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd);
}

static void path_of(const char *name, char *buf, size_t size)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

/* Stores `d` for `key` in the database `path` below the public API, which would refuse
 * a record this build cannot use: as another build or a hostile tool may have. */
static void store_raw(const char *path, const char *key, const cf_decision *d)
{
    cf_fingerprint host;
    assert_int_equal(cf_host_fingerprint(1, 0, &host), CONVFIND_OK);
    cf_db_config c;
    cf_db_config_init(&c, &host);
    c.path = path;
    c.quiet = true;
    cf_db *raw;
    assert_int_equal(cf_db_open(&c, &raw), CONVFIND_OK);
    assert_int_equal(cf_db_store(raw, &key, d, 1), CONVFIND_OK);
    cf_db_close(raw);
}

/* A context on the database `path` that measures (EXHAUSTIVE, 10 ms per problem). */
static convfind_context *context_on(const char *path, convfind_find_policy policy)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = path;
    o.num_threads = 1;
    o.find_policy = policy;
    o.find_time_budget_s = 0.01;
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    return ctx;
}

/* Plans `p` once on `ctx`; returns the plan's decision source. */
static convfind_decision_source plan_once(convfind_context *ctx, const convfind_problem *p)
{
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    convfind_plan_info info;
    assert_int_equal(convfind_plan_get_info(plan, &info), CONVFIND_OK);
    convfind_plan_destroy(plan);
    return info.source;
}

/* Stores measured decisions for two problems in the database `path`. */
static void tune_into(const char *path)
{
    convfind_context *ctx = context_on(path, CONVFIND_FIND_EXHAUSTIVE);
    for (int i = 0; i < 2; i++) {
        convfind_problem *p = tu_conv2d(1, 4, 8 + 2 * i, 8, 4, 3, 1);
        assert_int_equal(plan_once(ctx, p), CONVFIND_SOURCE_MEASURED);
        convfind_problem_destroy(p);
    }
    convfind_context_destroy(ctx);
}

static convfind_db *open_db(const char *path, convfind_db_mode mode)
{
    convfind_db_options o;
    convfind_db_options_init(&o);
    o.path = path;
    o.mode = mode;
    convfind_db *db;
    assert_int_equal(convfind_db_open(&o, &db), CONVFIND_OK);
    return db;
}

static convfind_db_info info_of(convfind_db *db)
{
    convfind_db_info i = {.struct_size = sizeof i};
    assert_int_equal(convfind_db_get_info(db, &i), CONVFIND_OK);
    return i;
}

/* A growing text buffer: the caller's side of export (write) and import (read). */
typedef struct text {
    char *s;
    size_t len, pos;
} text;

static int text_write(void *user, const void *data, size_t size)
{
    text *t = user;
    char *grown = realloc(t->s, t->len + size + 1);
    if (!grown)
        return -1;
    memcpy(grown + t->len, data, size);
    t->s = grown;
    t->len += size;
    t->s[t->len] = '\0';
    return 0;
}

/* Reads at most 7 bytes at a time: lines must be put back together across calls. */
static long text_read(void *user, void *buf, size_t size)
{
    text *t = user;
    size_t n = t->len - t->pos < size ? t->len - t->pos : size;
    n = n < 7 ? n : 7;
    memcpy(buf, t->s + t->pos, n);
    t->pos += n;
    return (long)n;
}

static long failing_read(void *user, void *buf, size_t size)
{
    (void)user;
    (void)buf;
    (void)size;
    return -1;
}

static text exported(convfind_db *db, size_t want)
{
    text t = {0};
    size_t n = 0;
    assert_int_equal(convfind_db_export(db, text_write, &t, &n), CONVFIND_OK);
    assert_int_equal(n, want);
    return t;
}

/* ------------------------------------------------------------------------- */

/* The context's handle is its database: what the context stored is there. */
static void test_context_db(void **state)
{
    (void)state;
    char path[200];
    path_of("ctx.sqlite", path, sizeof path);
    convfind_context *ctx = context_on(path, CONVFIND_FIND_HYBRID);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    assert_int_equal(plan_once(ctx, p), CONVFIND_SOURCE_MEASURED);
    convfind_db *db = convfind_context_db(ctx);
    assert_non_null(db);
    assert_null(convfind_context_db(NULL));
    assert_int_equal(convfind_db_flush(db), CONVFIND_OK);
    convfind_db_info i = info_of(db);
    assert_string_equal(i.path, path);
    assert_true(i.exists && i.persistent && !i.read_only);
    assert_int_equal(i.records, 1);
    assert_int_equal(i.current, 1);
    assert_int_equal(i.stored, 1);
    assert_int_equal(i.store_failures, 0);
    assert_int_equal(tu_stats(ctx).stored, 1);
    convfind_db_close(db); /* not the caller's: nothing happens */
    assert_int_equal(info_of(db).records, 1);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

/* What a record looks like through foreach. */
typedef struct seen {
    int n;
    char key[1024], algo[96], tier[16];
    int current, n_candidates, validated;
    double margin, median;
} seen;

static int see(void *user, const convfind_db_record *r)
{
    seen *s = user;
    if (s->n++ == 0) {
        snprintf(s->key, sizeof s->key, "%s", r->key);
        snprintf(s->algo, sizeof s->algo, "%s", r->algorithm);
        snprintf(s->tier, sizeof s->tier, "%s", r->tier);
        s->current = r->current_environment;
        s->n_candidates = r->n_candidates;
        s->validated = r->candidates[0].validated;
        s->median = r->candidates[0].median_ms;
        s->margin = r->margin;
        assert_string_equal(r->candidates[0].algorithm, r->algorithm);
        assert_true(r->time > 1700000000);
        assert_true(r->library[0] && r->backends[0] && r->device[0] && r->host[0]);
    }
    return 0;
}

static void test_foreach_and_system_tier(void **state)
{
    (void)state;
    char path[200], sys[200];
    path_of("walk.sqlite", path, sizeof path);
    path_of("system.sqlite", sys, sizeof sys);
    tune_into(path);
    tune_into(sys);
    convfind_db_options o;
    convfind_db_options_init(&o);
    o.path = path;
    o.system_path = sys;
    o.mode = CONVFIND_DB_READ_ONLY;
    convfind_db *db;
    assert_int_equal(convfind_db_open(&o, &db), CONVFIND_OK);
    seen s = {0};
    assert_int_equal(convfind_db_foreach(db, NULL, see, &s), CONVFIND_OK);
    assert_int_equal(s.n, 4); /* two of the user tier, then two of the system tier */
    assert_string_equal(s.tier, "user");
    assert_int_equal(s.current, 1);
    assert_true(s.n_candidates > 1 && s.validated && s.median > 0);
    assert_true(s.margin > -1 && s.margin < 100);
    assert_non_null(strstr(s.key, ";weights=per_call;"));
    seen one = {0};
    assert_int_equal(convfind_db_foreach(db, s.key, see, &one), CONVFIND_OK);
    assert_int_equal(one.n, 2); /* that key in each tier */
    convfind_db_info i = info_of(db);
    assert_int_equal(i.records, 2);
    assert_int_equal(i.system_records, 2);
    assert_string_equal(i.system_path, sys);
    assert_true(i.read_only);
    assert_int_equal(convfind_db_foreach(db, NULL, NULL, NULL), CONVFIND_ERR_NULL_POINTER);
    convfind_db_close(db);
}

/* Export and import through the caller's functions, in memory: every record arrives,
 * with its environment; the input may come in any pieces. */
static void test_export_import_in_memory(void **state)
{
    (void)state;
    char a[200], b[200];
    path_of("from.sqlite", a, sizeof a);
    path_of("to.sqlite", b, sizeof b);
    tune_into(a);
    convfind_db *src = open_db(a, CONVFIND_DB_READ_ONLY);
    text t = exported(src, 2);
    convfind_db_close(src);
    convfind_db *dst = open_db(b, CONVFIND_DB_READ_WRITE);
    size_t n = 0;
    assert_int_equal(convfind_db_import(dst, text_read, &t, "memory", &n), CONVFIND_OK);
    assert_int_equal(n, 2);
    text again = exported(dst, 2);
    assert_string_equal(again.s, t.s);
    assert_int_equal(convfind_db_import(dst, failing_read, NULL, "broken", &n), CONVFIND_ERR_IO);
    assert_int_equal(n, 0);
    assert_non_null(strstr(convfind_last_error(), "broken:1: read error"));
    convfind_db_close(dst);
    free(t.s);
    free(again.s);

    /* A plan in another context on the new database uses what was imported. */
    convfind_context *ctx = context_on(b, CONVFIND_FIND_HYBRID);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    assert_int_equal(plan_once(ctx, p), CONVFIND_SOURCE_STORED);
    assert_int_equal(tu_stats(ctx).finds, 0);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

/* READ_ONLY creates nothing and changes nothing. */
static void test_read_only(void **state)
{
    (void)state;
    char path[200];
    path_of("missing/never.sqlite", path, sizeof path);
    convfind_db *db = open_db(path, CONVFIND_DB_READ_ONLY);
    convfind_db_info i = info_of(db);
    assert_false(i.exists);
    assert_int_equal(i.records, 0);
    text t = {.s = strdup("\n"), .len = 1};
    assert_int_equal(convfind_db_import(db, text_read, &t, "x", NULL), CONVFIND_ERR_UNSUPPORTED);
    assert_int_equal(convfind_db_prune(db, NULL), CONVFIND_ERR_UNSUPPORTED);
    assert_int_equal(convfind_db_vacuum(db), CONVFIND_ERR_UNSUPPORTED);
    assert_int_equal(convfind_db_verify(db, NULL), CONVFIND_ERR_IO); /* it does not exist */
    convfind_db_close(db);
    char parent[200];
    path_of("missing", parent, sizeof parent);
    struct stat st;
    assert_int_not_equal(stat(parent, &st), 0);
    free(t.s);

    convfind_db_options o;
    convfind_db_options_init(&o);
    o.mode = (convfind_db_mode)7;
    assert_int_equal(convfind_db_open(&o, &db), CONVFIND_ERR_INVALID_ENUM);
    assert_null(db);
    o.mode = CONVFIND_DB_READ_ONLY;
    o.struct_size = sizeof o + 4;
    assert_int_equal(convfind_db_open(&o, &db), CONVFIND_ERR_UNSUPPORTED);
    assert_int_equal(convfind_db_open(NULL, NULL), CONVFIND_ERR_NULL_POINTER);
}

/* `line` with every occurrence of `from` replaced by `to`. */
static char *replaced(const char *line, const char *from, const char *to)
{
    size_t n = 0;
    for (const char *c = strstr(line, from); c; c = strstr(c + strlen(from), from))
        n++;
    char *out = malloc(strlen(line) + n * strlen(to) + 1);
    char *o = out;
    for (const char *c = line;;) {
        const char *at = strstr(c, from);
        if (!at) {
            strcpy(o, c);
            break;
        }
        memcpy(o, c, (size_t)(at - c));
        o += at - c;
        strcpy(o, to);
        o += strlen(to);
        c = at + strlen(from);
    }
    return out;
}

/* The first exported line of a freshly tuned database, and its decision's algorithm. */
static char *first_line(char *algo, size_t size)
{
    char path[200];
    path_of("lines.sqlite", path, sizeof path);
    tune_into(path);
    convfind_db *db = open_db(path, CONVFIND_DB_READ_ONLY);
    text t = exported(db, 2);
    seen s = {0};
    assert_int_equal(convfind_db_foreach(db, NULL, see, &s), CONVFIND_OK);
    convfind_db_close(db);
    snprintf(algo, size, "\"%s\"", s.algo);
    *strchr(t.s, '\n') = '\0';
    return t.s;
}

/* Import refuses a record this build cannot use, naming the line; nothing is stored. */
static void test_import_checks_records(void **state)
{
    (void)state;
    char algo[100];
    char *line = first_line(algo, sizeof algo);
    char *bad[3] = {replaced(line, algo, "\"cpu.nonexistent\""),
                    replaced(line, algo, "\"cpu.depthwise\""), /* group 1: not applicable */
                    NULL};
    char *no_ok = replaced(line, "\"status\":\"ok\"", "\"status\":\"failed\"");
    bad[2] = replaced(no_ok, "\"status\":\"abandoned\"", "\"status\":\"failed\"");
    free(no_ok);
    const char *why[3] = {"cpu.nonexistent", "cannot run the problem", "every candidate failed"};
    char path[200];
    path_of("checked.sqlite", path, sizeof path);
    convfind_db *db = open_db(path, CONVFIND_DB_READ_WRITE);
    for (int i = 0; i < 3; i++) {
        text t = {0};
        text_write(&t, line, strlen(line));
        text_write(&t, "\n", 1);
        text_write(&t, bad[i], strlen(bad[i]));
        text_write(&t, "\n", 1);
        size_t n = 9;
        assert_int_equal(convfind_db_import(db, text_read, &t, "hostile.jsonl", &n),
                         CONVFIND_ERR_IO);
        assert_int_equal(n, 0);
        assert_non_null(strstr(convfind_last_error(), "hostile.jsonl:2:"));
        if (!strstr(convfind_last_error(), why[i]))
            fail_msg("case %d: \"%s\" does not say %s", i, convfind_last_error(), why[i]);
        assert_int_equal(info_of(db).records, 0); /* all or nothing */
        free(t.s);
        free(bad[i]);
    }
    convfind_db_close(db);
    free(line);
}

/* A stored record this build cannot use, as another build or a hostile tool might have
 * written it: a miss on load (measured again, and the measurement replaces it), reported
 * by verify, removed by prune. */
static void test_unusable_record_on_load(void **state)
{
    (void)state;
    char path[200];
    path_of("hostile.sqlite", path, sizeof path);
    convfind_context *ctx = context_on(path, CONVFIND_FIND_HYBRID);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    char key[1024];
    assert_true(convfind_problem_key(ctx, p, CONVFIND_WEIGHTS_PER_CALL, key, sizeof key) > 0);
    convfind_context_destroy(ctx);
    cf_candidate_stats cand = {.algo = "cpu.nonexistent", .status = CF_CAND_OK, .median_ms = 0.1,
                               .repeats = 5};
    cf_decision d = {.algo = "cpu.nonexistent", .n_candidates = 1, .candidates = &cand};
    store_raw(path, key, &d);

    convfind_db *db = open_db(path, CONVFIND_DB_READ_ONLY);
    size_t bad = 0;
    assert_int_equal(convfind_db_verify(db, &bad), CONVFIND_ERR_IO);
    assert_int_equal(bad, 1);
    assert_non_null(strstr(convfind_last_error(), "cpu.nonexistent"));
    seen s = {0};
    assert_int_equal(convfind_db_foreach(db, NULL, see, &s), CONVFIND_OK);
    assert_int_equal(s.n, 0);
    assert_int_equal(info_of(db).unreadable, 1);
    convfind_db_close(db);

    ctx = context_on(path, CONVFIND_FIND_HYBRID);
    assert_int_equal(plan_once(ctx, p), CONVFIND_SOURCE_MEASURED); /* not "stored" */
    assert_int_equal(tu_stats(ctx).finds, 1);
    convfind_context_destroy(ctx);
    ctx = context_on(path, CONVFIND_FIND_HYBRID);
    assert_int_equal(plan_once(ctx, p), CONVFIND_SOURCE_STORED); /* the new measurement */
    convfind_context_destroy(ctx);
    convfind_problem_destroy(p);

    db = open_db(path, CONVFIND_DB_READ_WRITE);
    assert_int_equal(convfind_db_verify(db, &bad), CONVFIND_OK);
    assert_int_equal(bad, 0);
    convfind_db_close(db);
}

/* A record this build cannot use (its key does not parse, its one candidate failed) is
 * pruned. */
static void test_prune_removes_unusable(void **state)
{
    (void)state;
    char path[200];
    path_of("prune.sqlite", path, sizeof path);
    cf_candidate_stats cand = {.algo = "cpu.reference", .status = CF_CAND_FAILED};
    cf_decision d = {.algo = "cpu.reference", .n_candidates = 1, .candidates = &cand};
    store_raw(path, "v2;not a key", &d);
    convfind_db *db = open_db(path, CONVFIND_DB_READ_WRITE);
    size_t removed = 0;
    assert_int_equal(convfind_db_prune(db, &removed), CONVFIND_OK);
    assert_int_equal(removed, 1);
    assert_int_equal(info_of(db).records, 0);
    assert_int_equal(convfind_db_vacuum(db), CONVFIND_OK);
    convfind_db_close(db);
}

/* The environment is read once, when the handle opens; the log gets its warnings. */
static int warnings;
static char last_warning[600];

static void count_warnings(void *user, convfind_log_level level, const char *message)
{
    (void)user;
    warnings += level == CONVFIND_LOG_WARNING;
    snprintf(last_warning, sizeof last_warning, "%s", message);
}

static void test_environment_and_log(void **state)
{
    (void)state;
    char path[200], sys[200];
    path_of("env.sqlite", path, sizeof path);
    path_of("no-system.sqlite", sys, sizeof sys);
    setenv("CONVFIND_DB_PATH", path, 1);
    setenv("CONVFIND_SYSTEM_DB", sys, 1);
    convfind_db_options o;
    convfind_db_options_init(&o);
    o.log_fn = count_warnings;
    warnings = 0;
    convfind_db *db;
    assert_int_equal(convfind_db_open(&o, &db), CONVFIND_OK);
    unsetenv("CONVFIND_DB_PATH");
    unsetenv("CONVFIND_SYSTEM_DB");
    assert_string_equal(info_of(db).path, path);
    assert_int_equal(warnings, 1); /* the system tier named by the variable is missing */
    assert_non_null(strstr(last_warning, sys));
    assert_int_equal(info_of(db).warnings, 1);
    convfind_db_close(db);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_context_db),
        cmocka_unit_test(test_foreach_and_system_tier),
        cmocka_unit_test(test_export_import_in_memory),
        cmocka_unit_test(test_read_only),
        cmocka_unit_test(test_import_checks_records),
        cmocka_unit_test(test_unusable_record_on_load),
        cmocka_unit_test(test_prune_removes_unusable),
        cmocka_unit_test(test_environment_and_log),
    };
    return cmocka_run_group_tests(tests, make_dir, remove_dir);
}
