/*
 * test_env.c - the environment variables the library reads are read in one place
 * (src/core/env.c), once per context creation, and reach their users from there:
 * CONVFIND_ISA the CPU kernels' level (the process's, fixed by its first CPU context),
 * CONVFIND_FIND_TRACE the Find harness, CONVFIND_CUDA_MODULE the module loader, and
 * CONVFIND_CUDNN_RUNTIME_COMPILED the CUDA backend's open() (parsed here; a GPU is
 * needed to see it used).  A variable changed after a context was created does not
 * change that context, and a value that means nothing is a warning in the context's
 * log, never a failure.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "algo/isa.h"
#include "convfind.h"
#include "core/env.h"
#include "cpu/isa.h"
#include "test_cache_util.h"

static const char *const variables[] = {"CONVFIND_ISA", "CONVFIND_FIND_TRACE",
                                        "CONVFIND_CUDNN_RUNTIME_COMPILED",
                                        "CONVFIND_CUDA_MODULE"};

static int clear_env(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof variables / sizeof variables[0]; i++)
        unsetenv(variables[i]);
    return 0;
}

/* Every warning a log callback received, one per line. */
typedef struct log_text {
    int warnings;
    char text[2048];
} log_text;

static void record_log(void *user, convfind_log_level level, const char *message)
{
    log_text *l = user;
    if (level != CONVFIND_LOG_WARNING)
        return;
    l->warnings++;
    size_t used = strlen(l->text);
    snprintf(l->text + used, sizeof l->text - used, "%s\n", message);
}

/* A CPU context (in-memory find-db, 1 thread, 10 ms Find budget) whose warnings go to
 * `log`. */
static convfind_context *context_logging(log_text *log)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.log_fn = record_log;
    o.log_user = log;
    return tu_context_with(&o, CONVFIND_FIND_EXHAUSTIVE, 1);
}

/* The ISA level in `ctx`'s keys (the fingerprint "cpu:NAME:ISA:tT"). */
static int key_isa(const convfind_context *ctx)
{
    convfind_problem *p = tu_conv2d(1, 4, 6, 6, 4, 3, 1);
    char key[1024];
    assert_true(convfind_problem_key(ctx, p, CONVFIND_WEIGHTS_PER_CALL, key, sizeof key) > 0);
    convfind_problem_destroy(p);
    for (int level = CF_ISA_COUNT - 1; level >= 0; level--) {
        char field[32];
        snprintf(field, sizeof field, ":%s:t", cf_isa_name((cf_isa)level));
        if (strstr(key, field))
            return level;
    }
    fail_msg("no ISA level in the key %s", key);
    return -1;
}

/* Runs first in this process (the level is fixed by the first CPU context): before any
 * context the machine's level; the first context's CONVFIND_ISA lowers it; a later
 * context asking for another gets a warning and the same level, and the first keeps it. */
static void test_isa_from_first_context(void **state)
{
    (void)state;
    assert_int_equal(cf_isa_active(), cf_isa_machine());
    setenv("CONVFIND_ISA", "Portable", 1);
    log_text first = {0};
    convfind_context *a = context_logging(&first);
    assert_int_equal(first.warnings, 0);
    assert_int_equal(key_isa(a), CF_ISA_PORTABLE);
    assert_int_equal(cf_isa_active(), CF_ISA_PORTABLE);

    if (cf_isa_machine() > CF_ISA_PORTABLE) {
        setenv("CONVFIND_ISA", cf_isa_name(cf_isa_machine()), 1);
        log_text second = {0};
        convfind_context *b = context_logging(&second);
        assert_int_equal(second.warnings, 1);
        assert_non_null(strstr(second.text, "keeping portable"));
        assert_int_equal(key_isa(b), CF_ISA_PORTABLE);
        assert_int_equal(key_isa(a), CF_ISA_PORTABLE);
        convfind_context_destroy(b);
    } else {
        print_message("this machine runs only the portable level: the second context's "
                      "request would not differ\n");
    }
    unsetenv("CONVFIND_ISA");
    log_text third = {0};
    convfind_context *c = context_logging(&third);
    assert_int_equal(third.warnings, 0);
    assert_int_equal(key_isa(c), CF_ISA_PORTABLE);
    convfind_context_destroy(c);
    convfind_context_destroy(a);
}

/* cf_env_read parses each variable, and keeps a warning naming each bad one. */
static void test_read_parses_and_warns(void **state)
{
    (void)state;
    setenv("CONVFIND_ISA", "AVX2", 1);
    setenv("CONVFIND_FIND_TRACE", "1", 1);
    setenv("CONVFIND_CUDNN_RUNTIME_COMPILED", "0", 1);
    setenv("CONVFIND_CUDA_MODULE", "/no/such/dir/libconvfind_cuda.so", 1);
    cf_env env;
    assert_int_equal(cf_env_read(&env), CONVFIND_OK);
    assert_int_equal(env.isa, CF_ISA_AVX2_FMA);
    assert_true(env.find_trace);
    assert_int_equal(env.runtime_compiled, CF_RUNTIME_COMPILED_NEVER);
    assert_string_equal(env.cuda_module, "/no/such/dir/libconvfind_cuda.so");
    assert_int_equal(env.n_warnings, 0);
    cf_env_free(&env);

    setenv("CONVFIND_FIND_TRACE", "0", 1);
    setenv("CONVFIND_CUDNN_RUNTIME_COMPILED", "1", 1);
    unsetenv("CONVFIND_CUDA_MODULE");
    assert_int_equal(cf_env_read(&env), CONVFIND_OK);
    assert_false(env.find_trace);
    assert_int_equal(env.runtime_compiled, CF_RUNTIME_COMPILED_ALWAYS);
    assert_null(env.cuda_module);
    assert_int_equal(env.n_warnings, 0);
    cf_env_free(&env);

    setenv("CONVFIND_ISA", "sse9", 1);
    setenv("CONVFIND_FIND_TRACE", "yes", 1);
    setenv("CONVFIND_CUDNN_RUNTIME_COMPILED", "always", 1);
    assert_int_equal(cf_env_read(&env), CONVFIND_OK);
    assert_int_equal(env.isa, -1);
    assert_false(env.find_trace);
    assert_int_equal(env.runtime_compiled, CF_RUNTIME_COMPILED_DEFAULT);
    assert_int_equal(env.n_warnings, 3);
    assert_non_null(strstr(env.warnings[0], "CONVFIND_FIND_TRACE=yes"));
    assert_non_null(strstr(env.warnings[1], "CONVFIND_ISA=sse9"));
    assert_non_null(strstr(env.warnings[2], "CONVFIND_CUDNN_RUNTIME_COMPILED=always"));
    cf_env_free(&env);
}

/* Bad values reach the context's log as warnings (not stderr), and the context is
 * created with the defaults. */
static void test_bad_values_warn_in_the_context_log(void **state)
{
    (void)state;
    setenv("CONVFIND_ISA", "sse9", 1);
    setenv("CONVFIND_FIND_TRACE", "on", 1);
    setenv("CONVFIND_CUDNN_RUNTIME_COMPILED", "2", 1);
    log_text log = {0};
    convfind_context *ctx = context_logging(&log);
    assert_int_equal(log.warnings, 3);
    assert_non_null(strstr(log.text, "CONVFIND_ISA=sse9 is not one of portable, avx2, avx512"));
    assert_non_null(strstr(log.text, "CONVFIND_FIND_TRACE=on is not one of 0, 1"));
    assert_non_null(strstr(log.text, "CONVFIND_CUDNN_RUNTIME_COMPILED=2 is not one of 0, 1"));
    convfind_context_destroy(ctx);
}

/* What convfind_find on `ctx` writes to stderr, into `out`. */
static void find_stderr(convfind_context *ctx, char *out, size_t size)
{
    convfind_problem *p = tu_conv2d(1, 4, 6, 6, 4, 3, 1);
    fflush(stderr);
    FILE *f = tmpfile();
    assert_non_null(f);
    const int saved = dup(STDERR_FILENO);
    assert_true(saved >= 0);
    assert_true(dup2(fileno(f), STDERR_FILENO) >= 0);
    int count = 0;
    const convfind_status st = convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, NULL, 0, &count);
    fflush(stderr);
    assert_true(dup2(saved, STDERR_FILENO) >= 0);
    close(saved);
    assert_int_equal(st, CONVFIND_OK);
    assert_true(count > 0);
    rewind(f);
    const size_t n = fread(out, 1, size - 1, f);
    out[n] = '\0';
    fclose(f);
    convfind_problem_destroy(p);
}

/* CONVFIND_FIND_TRACE is the context's, read when it was created: a context created
 * without it does not trace when the variable is set at its Find, and one created with
 * it traces after the variable is gone. */
static void test_find_trace_is_read_at_creation(void **state)
{
    (void)state;
    convfind_context *quiet = tu_context(CONVFIND_FIND_EXHAUSTIVE, 1);
    setenv("CONVFIND_FIND_TRACE", "1", 1);
    convfind_context *traced = tu_context(CONVFIND_FIND_EXHAUSTIVE, 1);
    char text[16384];
    find_stderr(quiet, text, sizeof text);
    assert_null(strstr(text, "find: "));
    unsetenv("CONVFIND_FIND_TRACE");
    find_stderr(traced, text, sizeof text);
    assert_non_null(strstr(text, "find: candidate cpu."));
    assert_non_null(strstr(text, "find: done candidates="));
    convfind_context_destroy(quiet);
    convfind_context_destroy(traced);
}

/* The CUDA module is loaded once per process, from the CONVFIND_CUDA_MODULE of the
 * context whose request loads it (here a CPU context's plan forcing a CUDA algorithm),
 * not from the environment at the time of loading. */
static void test_cuda_module_path_is_the_contexts(void **state)
{
    (void)state;
    char dir[] = "/tmp/convfind-env-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char named[256], later[256];
    snprintf(named, sizeof named, "%s/named/libconvfind_cuda.so", dir);
    snprintf(later, sizeof later, "%s/later/libconvfind_cuda.so", dir);
    setenv("CONVFIND_CUDA_MODULE", named, 1);
    convfind_context *ctx = tu_context(CONVFIND_FIND_HEURISTIC, 1);
    setenv("CONVFIND_CUDA_MODULE", later, 1);
    convfind_problem *p = tu_conv2d(1, 4, 6, 6, 4, 3, 1);
    convfind_plan_options po;
    convfind_plan_options_init(&po);
    po.algorithm = "cuda.cudnn";
    convfind_plan *plan = NULL;
    assert_int_not_equal(convfind_plan_create_ex(ctx, p, &po, &plan), CONVFIND_OK);
    assert_null(plan);
    char why[512];
    assert_int_equal(convfind_cuda_available(0, why, sizeof why), 0);
    assert_non_null(strstr(why, named));
    assert_null(strstr(why, later));
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
    assert_int_equal(rmdir(dir), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_teardown(test_isa_from_first_context, clear_env),
        cmocka_unit_test_teardown(test_read_parses_and_warns, clear_env),
        cmocka_unit_test_teardown(test_bad_values_warn_in_the_context_log, clear_env),
        cmocka_unit_test_teardown(test_find_trace_is_read_at_creation, clear_env),
        cmocka_unit_test_teardown(test_cuda_module_path_is_the_contexts, clear_env),
    };
    return cmocka_run_group_tests(tests, clear_env, NULL);
}
