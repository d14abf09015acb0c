/*
 * test_api_pool.c - a caller's thread pool (convfind_context_options.parallel_for).
 *
 * A runtime that gives its own pool must not get a second one: the context starts no
 * worker thread, every parallel loop of an execution (and of Find) goes to the caller's
 * function with each index once, and the results are those of the reference.  The
 * threads of the process are counted from /proc/self/task; a context of its own with the
 * same thread count is the control that shows the count would have moved.
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "test_cache_util.h"

#define THREADS 4

static int count_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        n += e->d_name[0] != '.';
    closedir(d);
    return n;
}

/* The process's thread count once it has settled at `expected`, or what it is after 2 s.
 * pthread_join returns when the kernel clears the thread's id, which is before the
 * exiting task leaves /proc/self/task: right after a context's destruction has joined
 * its workers, one of them can still be listed for a moment (seen on a loaded machine).
 * Likewise a new worker may not be listed yet.  Waiting for the expected count keeps the
 * test exact (a thread that is never joined, or never started, stays counted). */
static int process_threads(int expected)
{
    int n = count_tasks();
    for (int i = 0; i < 2000 && n != expected; i++) {
        struct timespec ms = {0, 1000000L};
        nanosleep(&ms, NULL);
        n = count_tasks();
    }
    return n;
}

/* The caller's pool: runs every index on the calling thread, in reverse order (any order
 * is allowed), and counts loops and indices. */
typedef struct pool {
    atomic_int loops;
    atomic_size_t indices;
} pool;

static void run_all(void *user, convfind_task_fn task, void *task_context, size_t range)
{
    pool *p = user;
    atomic_fetch_add(&p->loops, 1);
    atomic_fetch_add(&p->indices, range);
    for (size_t i = range; i-- > 0;)
        task(task_context, i);
}

static convfind_context *context_with(pool *p, int threads, convfind_find_policy policy)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    if (p) {
        o.parallel_for = run_all;
        o.parallel_for_user = p;
    }
    return tu_context_with(&o, policy, threads);
}

/* Executes `algo` on a problem large enough to split; checks the result. */
static void execute_checked(convfind_context *ctx, const char *algo)
{
    convfind_problem *p = tu_conv2d(2, 16, 20, 20, 32, 3, 1);
    convfind_plan *plan;
    assert_int_equal(algo ? convfind_plan_create_with_algorithm(ctx, p, algo, &plan)
                          : convfind_plan_create(ctx, p, &plan),
                     CONVFIND_OK);
    tu_data d;
    tu_data_init(&d, p, 11);
    convfind_tensors t = tu_tensors(&d, p);
    assert_int_equal(convfind_execute(plan, &t), CONVFIND_OK);
    assert_true(tu_matches(&d));
    tu_data_free(&d);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
}

static void test_caller_pool_runs_every_loop(void **state)
{
    (void)state;
    const int before = count_tasks();
    pool p = {0};
    convfind_context *ctx = context_with(&p, THREADS, CONVFIND_FIND_HEURISTIC);
    assert_int_equal(process_threads(before), before);
    const char *algos[] = {"cpu.reference", "cpu.im2col_gemm", "cpu.direct_blocked", NULL};
    for (size_t i = 0; i < sizeof algos / sizeof algos[0]; i++) {
        const int loops = atomic_load(&p.loops);
        execute_checked(ctx, algos[i]);
        assert_true(atomic_load(&p.loops) > loops);
    }
    assert_true(atomic_load(&p.indices) > (size_t)atomic_load(&p.loops));
    assert_int_equal(process_threads(before), before);
    convfind_context_destroy(ctx);

    /* The control: a context of its own starts THREADS - 1 workers. */
    ctx = context_with(NULL, THREADS, CONVFIND_FIND_HEURISTIC);
    assert_int_equal(process_threads(before + THREADS - 1), before + THREADS - 1);
    convfind_context_destroy(ctx);
    assert_int_equal(process_threads(before), before);
}

/* Find runs its candidates the way executions will run: on the caller's pool. */
static void test_find_uses_the_caller_pool(void **state)
{
    (void)state;
    const int before = count_tasks();
    pool p = {0};
    convfind_context *ctx = context_with(&p, THREADS, CONVFIND_FIND_EXHAUSTIVE);
    execute_checked(ctx, NULL);
    assert_int_equal(tu_stats(ctx).finds, 1);
    assert_true(atomic_load(&p.loops) > 10);
    assert_int_equal(process_threads(before), before);
    convfind_context_destroy(ctx);
}

/* The thread count of the caller's pool is required, and is the key's. */
static void test_caller_pool_thread_count(void **state)
{
    (void)state;
    pool p = {0};
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = ":memory:";
    o.parallel_for = run_all;
    o.parallel_for_user = &p;
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_ERR_INVALID_ATTRIBUTE);
    assert_non_null(strstr(convfind_last_error(), "num_threads"));
    ctx = context_with(&p, 3, CONVFIND_FIND_HEURISTIC);
    convfind_problem *prob = tu_conv2d(1, 4, 8, 8, 4, 3, 1);
    char key[1024];
    assert_true(convfind_problem_key(ctx, prob, CONVFIND_WEIGHTS_PER_CALL, key, sizeof key) > 0);
    assert_non_null(strstr(key, ":t3"));
    convfind_problem_destroy(prob);
    convfind_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_caller_pool_runs_every_loop),
        cmocka_unit_test(test_find_uses_the_caller_pool),
        cmocka_unit_test(test_caller_pool_thread_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
