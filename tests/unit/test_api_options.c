/*
 * test_api_options.c - the public API's versions, status messages, options structs that
 * grow (struct_size, zero means default), the find policy from the environment, and the
 * log callback.
 *
 * Each test pins one promise of include/convfind.h that a caller relies on without
 * reading the library: {0} options validate candidates (they once silently did not), an
 * options struct from a newer header is refused and one from an older header is never
 * read past its end, CONVFIND_FIND_POLICY applies only where the caller did not choose,
 * and every library warning reaches the log callback instead of stderr.
 */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "core/test_control.h"
#include "test_cache_util.h"

/* ------------------------------------------------------------------------- */
/* Helpers                                                                    */
/* ------------------------------------------------------------------------- */

/* Plans the small problem once on `ctx` and returns how many Finds that took. */
static uint64_t finds_of_one_plan(convfind_context *ctx)
{
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    convfind_plan *plan;
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    return tu_stats(ctx).finds;
}

/* A context of `o` (its policy included), completed by tu_context_with. */
static convfind_context *context_from(convfind_context_options *o)
{
    return tu_context_with(o, o->find_policy, 1);
}

/* What the log callback has received. */
typedef struct log_record {
    int count, warnings, infos;
    char last[1024];
} log_record;

static void record_log(void *user, convfind_log_level level, const char *message)
{
    log_record *r = user;
    r->count++;
    r->warnings += level == CONVFIND_LOG_WARNING;
    r->infos += level == CONVFIND_LOG_INFO;
    assert_null(strchr(message, '\n'));
    snprintf(r->last, sizeof r->last, "%s", message);
}

/* stderr redirected into a temporary file, to check that nothing was written there. */
typedef struct stderr_capture {
    int saved;
    FILE *file;
} stderr_capture;

static void capture_stderr(stderr_capture *c)
{
    fflush(stderr);
    c->file = tmpfile();
    assert_non_null(c->file);
    c->saved = dup(STDERR_FILENO);
    assert_true(c->saved >= 0);
    assert_true(dup2(fileno(c->file), STDERR_FILENO) >= 0);
}

/* Restores stderr and returns how many bytes were written to it meanwhile. */
static long release_stderr(stderr_capture *c)
{
    fflush(stderr);
    assert_true(dup2(c->saved, STDERR_FILENO) >= 0);
    close(c->saved);
    long n = lseek(fileno(c->file), 0, SEEK_END);
    fclose(c->file);
    return n;
}

static int clear_env(void **state)
{
    (void)state;
    unsetenv("CONVFIND_FIND_POLICY");
    unsetenv("CONVFIND_LOG");
    cf_test_control(CF_TEST_ALGORITHMS, NULL, 0);
    return 0;
}

/* ------------------------------------------------------------------------- */
/* Versions and statuses                                                      */
/* ------------------------------------------------------------------------- */

static void test_version_number(void **state)
{
    (void)state;
    assert_int_equal(convfind_version_number(), CONVFIND_VERSION_NUMBER);
    int major, minor, patch;
    assert_int_equal(sscanf(convfind_version_string(), "%d.%d.%d", &major, &minor, &patch), 3);
    assert_int_equal(convfind_version_number(), major * 10000 + minor * 100 + patch);
    assert_int_equal(CONVFIND_VERSION_NUMBER, CONVFIND_VERSION_MAJOR * 10000 +
                                                  CONVFIND_VERSION_MINOR * 100 +
                                                  CONVFIND_VERSION_PATCH);
}

static void test_status_messages(void **state)
{
    (void)state;
    const char *seen[CONVFIND_ERR_UNAVAILABLE + 1];
    for (int s = CONVFIND_OK; s <= CONVFIND_ERR_UNAVAILABLE; s++) {
        const char *m = convfind_status_message((convfind_status)s);
        assert_non_null(m);
        assert_true(strlen(m) > 10);
        assert_string_not_equal(m, "an unknown status");
        for (int t = 0; t < s; t++)
            assert_string_not_equal(m, seen[t]);
        seen[s] = m;
    }
    assert_string_equal(convfind_status_message(CONVFIND_ERR_NULL_POINTER),
                        "a required pointer argument was NULL");
    assert_string_equal(convfind_status_message((convfind_status)99), "an unknown status");
}

/* ------------------------------------------------------------------------- */
/* Zero means the default                                                     */
/* ------------------------------------------------------------------------- */

/* {0} options (struct_size 0 included) validate every candidate: a wrong algorithm is
 * FAILED, never chosen.  find_skip_validation = 1 is what turns that off. */
static void test_zeroed_options_validate(void **state)
{
    (void)state;
    static const cf_algo *const list[] = {&tu_algo_wrong, &cf_algo_cpu_reference};
    assert_int_equal(cf_test_control(CF_TEST_ALGORITHMS, list, 2), CONVFIND_OK);
    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    for (int skip = 0; skip <= 1; skip++) {
        convfind_context_options o = {0};
        o.find_skip_validation = skip;
        convfind_context *ctx = context_from(&o);
        convfind_find_result r[2];
        int n;
        assert_int_equal(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, r, 2, &n),
                         CONVFIND_OK);
        assert_int_equal(n, 2);
        const convfind_find_result *wrong = strcmp(r[0].algorithm, "test.wrong") == 0 ? &r[0]
                                                                                    : &r[1];
        assert_string_equal(wrong->algorithm, "test.wrong");
        if (!skip) {
            assert_int_equal(wrong->status, CONVFIND_CANDIDATE_FAILED);
            assert_string_equal(r[0].algorithm, "cpu.reference");
            assert_int_equal(r[0].validated, 1);
        } else {
            assert_int_equal(wrong->status, CONVFIND_CANDIDATE_OK);
            assert_int_equal(wrong->validated, 0);
        }
        convfind_context_destroy(ctx);
    }
    convfind_problem_destroy(p);
}

/* The default policy, with no environment variable, is HYBRID: a miss with nothing
 * stored measures. */
static void test_zeroed_policy_is_hybrid(void **state)
{
    (void)state;
    convfind_context_options o = {0};
    convfind_context *ctx = context_from(&o);
    assert_int_equal(finds_of_one_plan(ctx), 1);
    convfind_context_destroy(ctx);
    convfind_context_options_init(&o);
    assert_int_equal(o.struct_size, sizeof o);
    assert_int_equal(o.find_policy, CONVFIND_FIND_DEFAULT);
    assert_int_equal(o.find_skip_validation, 0);
    assert_int_equal(o.log_level, CONVFIND_LOG_DEFAULT);
}

/* ------------------------------------------------------------------------- */
/* struct_size                                                                */
/* ------------------------------------------------------------------------- */

static void test_newer_struct_refused(void **state)
{
    (void)state;
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.struct_size = sizeof o + 16;
    convfind_context *ctx = (convfind_context *)&o;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_UNSUPPORTED);
    assert_null(ctx);
    char sizes[2][32];
    snprintf(sizes[0], sizeof sizes[0], "%zu", sizeof o + 16);
    snprintf(sizes[1], sizeof sizes[1], "%zu", sizeof o);
    assert_non_null(strstr(convfind_last_error(), sizes[0]));
    assert_non_null(strstr(convfind_last_error(), sizes[1]));
    assert_non_null(strstr(convfind_last_error(), "newer"));
    o.struct_size = 3; /* not even struct_size fits */
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ATTRIBUTE);

    convfind_problem *p = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    convfind_context_options_init(&o);
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    ctx = context_from(&o);
    convfind_plan_options po;
    convfind_plan_options_init(&po);
    po.struct_size = sizeof po + 8;
    convfind_plan *plan = NULL;
    assert_int_equal(convfind_plan_create_ex(ctx, p, &po, &plan), CONVFIND_ERR_UNSUPPORTED);
    assert_null(plan);
    assert_int_equal(convfind_plan_create(ctx, p, &plan), CONVFIND_OK);
    tu_data d;
    tu_data_init(&d, p, 3);
    convfind_tensors t = tu_tensors(&d, p);
    convfind_execute_options eo;
    convfind_execute_options_init(&eo);
    eo.struct_size = sizeof eo + 8;
    assert_int_equal(convfind_execute_ex(plan, &t, &eo), CONVFIND_ERR_UNSUPPORTED);
    convfind_context_stats st = {.struct_size = sizeof st + 8};
    assert_int_equal(convfind_context_stats_get(ctx, &st), CONVFIND_ERR_UNSUPPORTED);
    tu_data_free(&d);
    convfind_plan_destroy(plan);
    convfind_context_destroy(ctx);
    convfind_problem_destroy(p);
}

/* A caller compiled against an older header: the library never reads or writes past
 * its struct_size, and the fields it lacks take their defaults. */
static void test_older_struct_reads_defaults(void **state)
{
    (void)state;
    convfind_context_options o;
    memset(&o, 0xff, sizeof o); /* what lies past an older struct: anything */
    o.struct_size = offsetof(convfind_context_options, log_fn);
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.workspace_limit = 0;
    o.db_path = ":memory:";
    o.system_db_path = NULL;
    o.db_env_policy = CONVFIND_DB_ENV_RETUNE;
    o.cache_bytes = 0;
    o.find_time_budget_s = 0;
    o.find_skip_validation = 0;
    o.device = CONVFIND_DEVICE_CPU;
    o.device_index = 0;
    memset(&o.device_allocator, 0, sizeof o.device_allocator);
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    assert_int_equal(finds_of_one_plan(ctx), 0); /* HEURISTIC was read */

    /* Statistics: only the caller's bytes are written. */
    unsigned char buf[sizeof(convfind_context_stats) + 16];
    memset(buf, 0xab, sizeof buf);
    convfind_context_stats *st = (convfind_context_stats *)buf;
    const size_t older = offsetof(convfind_context_stats, stored);
    st->struct_size = older;
    assert_int_equal(convfind_context_stats_get(ctx, st), CONVFIND_OK);
    assert_int_equal(st->struct_size, older);
    assert_int_equal(st->misses, 1);
    for (size_t i = older; i < sizeof buf; i++)
        assert_int_equal(buf[i], 0xab);
    convfind_context_destroy(ctx);
}

/* ------------------------------------------------------------------------- */
/* CONVFIND_FIND_POLICY                                                       */
/* ------------------------------------------------------------------------- */

/* Explicit option > environment > HYBRID. */
static void test_env_policy_precedence(void **state)
{
    (void)state;
    convfind_context_options o;
    setenv("CONVFIND_FIND_POLICY", "Heuristic", 1);
    convfind_context_options_init(&o);
    convfind_context *ctx = context_from(&o);
    assert_int_equal(finds_of_one_plan(ctx), 0); /* the variable chose HEURISTIC */
    convfind_context_destroy(ctx);

    convfind_context_options_init(&o);
    o.find_policy = CONVFIND_FIND_EXHAUSTIVE;
    ctx = context_from(&o);
    assert_int_equal(finds_of_one_plan(ctx), 1); /* the option wins over the variable */
    convfind_context_destroy(ctx);

    setenv("CONVFIND_FIND_POLICY", "fastest", 1);
    log_record r = {0};
    convfind_context_options_init(&o);
    o.log_fn = record_log;
    o.log_user = &r;
    ctx = context_from(&o);
    assert_int_equal(r.warnings, 1);
    assert_non_null(strstr(r.last, "CONVFIND_FIND_POLICY=fastest"));
    assert_int_equal(finds_of_one_plan(ctx), 1); /* unusable: HYBRID */
    convfind_context_destroy(ctx);

    /* Read at creation: a context keeps the policy it was created with. */
    setenv("CONVFIND_FIND_POLICY", "exhaustive", 1);
    convfind_context_options_init(&o);
    ctx = context_from(&o);
    setenv("CONVFIND_FIND_POLICY", "heuristic", 1);
    assert_int_equal(finds_of_one_plan(ctx), 1);
    convfind_context_destroy(ctx);
}

/* ------------------------------------------------------------------------- */
/* The log                                                                    */
/* ------------------------------------------------------------------------- */

/* A damaged database file is quarantined with one warning: it reaches the callback, and
 * nothing reaches stderr. */
static void test_db_warning_reaches_the_callback(void **state)
{
    (void)state;
    char dir[] = "/tmp/convfind-api-log-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/finddb.sqlite", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (int i = 0; i < 512; i++)
        fputs("this is not a database ", f);
    fclose(f);

    log_record r = {0};
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = path;
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HYBRID;
    o.find_time_budget_s = 0.01;
    o.log_fn = record_log;
    o.log_user = &r;
    stderr_capture c;
    capture_stderr(&c);
    convfind_context *ctx;
    convfind_status st = convfind_context_create(&o, &ctx);
    if (st == CONVFIND_OK) {
        finds_of_one_plan(ctx);
        convfind_context_destroy(ctx);
    }
    long written = release_stderr(&c);
    assert_int_equal(st, CONVFIND_OK);
    assert_true(r.warnings >= 1);
    assert_non_null(strstr(r.last, path));
    assert_int_equal(written, 0);

    char cmd[200];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

/* The level: an INFO line per published decision only when asked (option, then
 * CONVFIND_LOG), never by default. */
static void test_log_level(void **state)
{
    (void)state;
    log_record r = {0};
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.log_fn = record_log;
    o.log_user = &r;
    convfind_context *ctx = context_from(&o);
    finds_of_one_plan(ctx);
    convfind_context_destroy(ctx);
    assert_int_equal(r.count, 0);

    o.log_level = CONVFIND_LOG_INFO;
    ctx = context_from(&o);
    finds_of_one_plan(ctx);
    convfind_context_destroy(ctx);
    assert_int_equal(r.infos, 1);
    assert_non_null(strstr(r.last, "decision v2;"));
    assert_non_null(strstr(r.last, "heuristic"));

    memset(&r, 0, sizeof r);
    setenv("CONVFIND_LOG", "debug", 1);
    o.log_level = CONVFIND_LOG_DEFAULT;
    ctx = context_from(&o);
    finds_of_one_plan(ctx);
    convfind_context_destroy(ctx);
    assert_int_equal(r.infos, 1);

    memset(&r, 0, sizeof r);
    o.log_level = CONVFIND_LOG_ERROR; /* the option wins over the variable */
    ctx = context_from(&o);
    finds_of_one_plan(ctx);
    convfind_context_destroy(ctx);
    assert_int_equal(r.count, 0);

    memset(&r, 0, sizeof r);
    setenv("CONVFIND_LOG", "chatty", 1);
    o.log_level = CONVFIND_LOG_DEFAULT;
    ctx = context_from(&o);
    convfind_context_destroy(ctx);
    assert_int_equal(r.warnings, 1);
    assert_non_null(strstr(r.last, "CONVFIND_LOG=chatty"));

    o.log_level = (convfind_log_level)9;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ENUM);
}

static void test_test_control_checks(void **state)
{
    (void)state;
    assert_int_equal(cf_test_control((cf_test_op)77), CONVFIND_ERR_INVALID_ENUM);
    assert_int_equal(cf_test_control(CF_TEST_FAULT, 9), CONVFIND_ERR_INVALID_ENUM);
    static const cf_algo *const no_reference[] = {&tu_algo_plain};
    assert_int_equal(cf_test_control(CF_TEST_ALGORITHMS, no_reference, 1),
                     CONVFIND_ERR_INVALID_ATTRIBUTE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_version_number, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_status_messages, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_zeroed_options_validate, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_zeroed_policy_is_hybrid, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_newer_struct_refused, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_older_struct_reads_defaults, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_env_policy_precedence, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_db_warning_reaches_the_callback, clear_env,
                                        clear_env),
        cmocka_unit_test_setup_teardown(test_log_level, clear_env, clear_env),
        cmocka_unit_test_setup_teardown(test_test_control_checks, clear_env, clear_env),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
