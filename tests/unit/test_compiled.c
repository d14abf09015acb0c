/*
 * test_compiled.c - code compiled at run time, kept in the find-db (src/core/compiled.c),
 * through CPU contexts whose backend table lists one more algorithm, "fake.compiling",
 * that "compiles": export_compiled hands out a fixed blob (zero bytes inside), and
 * import_compiled records what its fetch brought back.  No GPU needed, so CI runs the
 * core's half of what test_cuda_reuse checks on a device:
 *   - storing after a Find's choice keeps that algorithm's blob for the key (counted in
 *     compiled_stored); an algorithm with nothing to export stores nothing;
 *   - a plan created with that algorithm in another context on the same file (as another
 *     process would) gets the same bytes at creation (counted in compiled_loaded); a plan
 *     of another key fetches nothing and counts nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "../db/db_fixture.h"
#include "core/compiled.h"
#include "core/context.h"
#include "db/db.h"
#include "util/error.h"

#define FAKE_NAME "fake.compiling"

static const unsigned char blob_bytes[] = {'c', 'o', 'd', 'e', 0, 1, 2, 0, 'e', 'n', 'd'};

static struct {
    int imports;          /* import_compiled calls */
    int fetched;          /* of them, those whose fetch returned a blob */
    bool same_bytes;      /* the last fetched blob equals blob_bytes */
} seen;

static bool fake_applicable(const cf_problem *p)
{
    (void)p;
    return true;
}

static convfind_status fake_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)p, (void)state, (void)a;
    return cf_fail(CONVFIND_ERR_BACKEND, "fake.compiling never runs in this test");
}

static convfind_status fake_export(const cf_problem *p, const void *state, const void *device,
                                   void **blob, size_t *size)
{
    (void)p, (void)state, (void)device;
    *blob = malloc(sizeof blob_bytes);
    assert_non_null(*blob);
    memcpy(*blob, blob_bytes, sizeof blob_bytes);
    *size = sizeof blob_bytes;
    return CONVFIND_OK;
}

static bool fake_import(const cf_problem *p, const void *state, const void *device,
                        bool (*fetch)(void *arg, void **blob, size_t *size), void *arg)
{
    (void)p, (void)state, (void)device;
    seen.imports++;
    void *blob = NULL;
    size_t size = 0;
    if (!fetch(arg, &blob, &size) || !blob)
        return false;
    seen.fetched++;
    seen.same_bytes = size == sizeof blob_bytes && memcmp(blob, blob_bytes, size) == 0;
    free(blob);
    return true;
}

static const cf_algo fake_algo = {
    .name = FAKE_NAME,
    .family = "direct",
    .applicable = fake_applicable,
    .execute = fake_execute,
    .export_compiled = fake_export,
    .import_compiled = fake_import,
};

/* The CPU backend's list with fake_algo before its reference (which stays last). */
static const cf_backend *cpu_backend;
static cf_backend fake_backend;
static const cf_algo *fake_list[64];

static const cf_algo *const *fake_algorithms(int *count)
{
    int n;
    const cf_algo *const *cpu = cpu_backend->algorithms(&n);
    assert_true(n + 1 <= (int)(sizeof fake_list / sizeof fake_list[0]));
    memcpy(fake_list, cpu, (size_t)(n - 1) * sizeof *cpu);
    fake_list[n - 1] = &fake_algo;
    fake_list[n] = cpu[n - 1];
    *count = n + 1;
    return fake_list;
}

static convfind_context *fake_context(void)
{
    char path[300];
    snprintf(path, sizeof path, "%s/finddb.sqlite", fx_dir);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.db_path = path;
    o.num_threads = 1;
    convfind_context *ctx = NULL;
    assert_int_equal(convfind_context_create(&o, &ctx), CONVFIND_OK);
    cpu_backend = ctx->backend;
    fake_backend = *cpu_backend;
    fake_backend.algorithms = fake_algorithms;
    ctx->backend = &fake_backend;
    return ctx;
}

static void destroy(convfind_context *ctx)
{
    ctx->backend = cpu_backend;
    convfind_context_destroy(ctx);
}

static convfind_context_stats stats_of(const convfind_context *ctx)
{
    convfind_context_stats s = {.struct_size = sizeof s};
    assert_int_equal(convfind_context_stats_get(ctx, &s), CONVFIND_OK);
    return s;
}

/* A plan of `p` forced to fake_algo, per-call weights; destroyed at once. */
static void plan_fake(convfind_context *ctx, const convfind_problem *p)
{
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.algorithm = FAKE_NAME;
    convfind_plan *plan = NULL;
    assert_int_equal(convfind_plan_create_ex(ctx, p, &o, &plan), CONVFIND_OK);
    assert_string_equal(convfind_plan_algorithm(plan), FAKE_NAME);
    convfind_plan_destroy(plan);
}

static void test_stored_blob_is_loaded_by_a_later_context(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    convfind_problem *p = fx_small_problem();
    assert_non_null(p);
    convfind_context *first = fake_context();
    cf_key key;
    assert_int_equal(cf_context_key(first, p, CF_WEIGHTS_PER_CALL, &key), CONVFIND_OK);
    cf_compiled_store(first, p, &key, FAKE_NAME);
    cf_compiled_store(first, p, &key, "cpu.direct_blocked"); /* nothing to export */
    assert_int_equal(stats_of(first).compiled_stored, 1);
    void *blob = NULL;
    size_t size = 0;
    assert_int_equal(cf_db_artifact_get(first->db, key.text, FAKE_NAME, &blob, &size),
                     CONVFIND_OK);
    assert_int_equal(size, sizeof blob_bytes);
    assert_memory_equal(blob, blob_bytes, size);
    free(blob);
    assert_int_equal(cf_db_artifact_get(first->db, key.text, "cpu.direct_blocked", &blob, &size),
                     CONVFIND_OK);
    assert_null(blob);
    destroy(first);

    convfind_context *second = fake_context();
    plan_fake(second, p);
    assert_int_equal(seen.imports, 1);
    assert_int_equal(seen.fetched, 1);
    assert_true(seen.same_bytes);
    assert_int_equal(stats_of(second).compiled_loaded, 1);
    assert_int_equal(stats_of(second).compiled_stored, 0);
    destroy(second);
    convfind_problem_destroy(p);
}

static void test_another_key_fetches_nothing(void **state)
{
    (void)state;
    memset(&seen, 0, sizeof seen);
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x[4] = {1, 4, 6, 6}, w[4] = {8, 4, 1, 1};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    convfind_problem *p = NULL;
    assert_int_equal(convfind_problem_create(&d, &p), CONVFIND_OK);
    convfind_context *ctx = fake_context();
    plan_fake(ctx, p);
    assert_int_equal(seen.imports, 1);
    assert_int_equal(seen.fetched, 0);
    assert_int_equal(stats_of(ctx).compiled_loaded, 0);
    destroy(ctx);
    convfind_problem_destroy(p);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_stored_blob_is_loaded_by_a_later_context, fx_setup,
                                        fx_teardown),
        cmocka_unit_test_setup_teardown(test_another_key_fetches_nothing, fx_setup,
                                        fx_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
