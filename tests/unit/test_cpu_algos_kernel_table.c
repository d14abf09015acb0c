/*
 * test_cpu_algos_kernel_table.c - the per-ISA kernel tables the CPU algorithms read
 * their kernels from (src/cpu/kernel_table.h).
 *
 * Every level this machine runs has its own kernels in every family (vector length
 * 4, 8 and 16 for portable, AVX2 and AVX-512), a level above the machine's gets the
 * machine's table, and the active table is the machine's until the first CPU context
 * is created, then follows that context's CONVFIND_ISA (ctest runs this program once
 * more with CONVFIND_ISA=portable), and cf_isa_force, exactly as cf_isa_active does.
 * The tables are built once, also when many threads ask for them first at once.
 * Beside them, cf_cpu_fma512_full_rate: the measured FMA rate the blocking of
 * cpu.direct_blocked asks for, its forcing, and the measurement it comes from.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "convfind.h"
#include "cpu/fma_probe.h"
#include "cpu/isa.h"
#include "cpu/kernel_table.h"

#define RACERS 8

static void *first_call(void *arg)
{
    (void)arg;
    return (void *)cf_kernel_table_active();
}

/* Runs first in this process: RACERS threads build the tables at once and all get the
 * same one. */
static void test_built_once_under_concurrent_first_use(void **state)
{
    (void)state;
    pthread_t t[RACERS];
    void *got[RACERS];
    for (int i = 0; i < RACERS; i++)
        assert_int_equal(pthread_create(&t[i], NULL, first_call, NULL), 0);
    for (int i = 0; i < RACERS; i++) {
        assert_int_equal(pthread_join(t[i], &got[i]), 0);
        assert_ptr_equal(got[i], got[0]);
    }
    assert_ptr_equal(got[0], cf_kernel_table_active());
}

/* Every family of a level the machine runs is that level's: its vector length, and
 * kernels of its own (the families without a vector length). */
static void test_each_level_has_its_own_kernels(void **state)
{
    (void)state;
    static const int vl[CF_ISA_COUNT] = {4, 8, 16};
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        const cf_kernel_table *t = cf_kernel_table_for((cf_isa)level);
        assert_int_equal(t->isa, level);
        assert_int_equal(t->sgemm->isa, level);
        assert_int_equal(t->direct_blocked->vl, vl[level]);
        assert_int_equal(t->direct_small_c->vl, vl[level]);
        assert_int_equal(t->depthwise->vl, vl[level]);
        for (int m = 0; m < CF_WG_TILES; m++)
            assert_int_equal(t->winograd[m]->vl, vl[level]);
        for (int other = 0; other < level; other++) {
            const cf_kernel_table *o = cf_kernel_table_for((cf_isa)other);
            assert_ptr_not_equal(o->depthwise_3x3, t->depthwise_3x3);
            assert_ptr_not_equal(o->depthwise, t->depthwise);
        }
    }
}

/* Above the machine's level (or outside the enum) nothing new: the highest it runs. */
static void test_levels_above_the_machine_get_its_table(void **state)
{
    (void)state;
    const cf_kernel_table *top = cf_kernel_table_for(cf_isa_machine());
    for (int level = (int)cf_isa_machine() + 1; level < CF_ISA_COUNT; level++)
        assert_ptr_equal(cf_kernel_table_for((cf_isa)level), top);
    assert_ptr_equal(cf_kernel_table_for((cf_isa)CF_ISA_COUNT), top);
    assert_ptr_equal(cf_kernel_table_for((cf_isa)-1), cf_kernel_table_for(CF_ISA_PORTABLE));
}

/* The active table is the table of cf_isa_active(): the machine's level until the first
 * CPU context, then lowered by that context's CONVFIND_ISA, then by cf_isa_force until
 * cf_isa_unforce. */
static void test_active_table_follows_environment_and_force(void **state)
{
    (void)state;
    assert_int_equal(cf_kernel_table_active()->isa, cf_isa_machine());
    const char *env = getenv("CONVFIND_ISA");
    int want = env && cf_isa_parse(env) >= 0 && cf_isa_parse(env) <= (int)cf_isa_machine()
                   ? cf_isa_parse(env)
                   : (int)cf_isa_machine();
    convfind_context *ctx;
    assert_int_equal(convfind_context_create(NULL, &ctx), CONVFIND_OK);
    assert_int_equal(cf_kernel_table_active()->isa, want);
    for (int level = 0; level <= (int)cf_isa_machine(); level++) {
        assert_int_equal(cf_isa_force((cf_isa)level), CONVFIND_OK);
        assert_ptr_equal(cf_kernel_table_active(), cf_kernel_table_for((cf_isa)level));
    }
    cf_isa_unforce();
    assert_int_equal(cf_kernel_table_active()->isa, want);
    convfind_context_destroy(ctx);
    assert_int_equal(cf_kernel_table_active()->isa, want); /* the process's, not the context's */
}

/* Forced answers hold until unforced; the measured one is false without AVX-512, the
 * same at every call (measured once), and comes from a ratio of the two widths' rates
 * that is near 1 or 2 (within 0.5 to 3, whatever the machine's load does to the timing). */
static void test_fma512_rate_measured_once_and_forced(void **state)
{
    (void)state;
    cf_cpu_fma512_force(0);
    assert_false(cf_cpu_fma512_full_rate());
    cf_cpu_fma512_force(1);
    assert_true(cf_cpu_fma512_full_rate());
    cf_cpu_fma512_force(-1);
    const bool measured = cf_cpu_fma512_full_rate();
    for (int i = 0; i < 3; i++)
        assert_int_equal(cf_cpu_fma512_full_rate(), measured);
    if (cf_isa_machine() < CF_ISA_AVX512F) {
        assert_false(measured);
        print_message("no AVX-512 here: 512-bit FMAs are not full rate\n");
        return;
    }
#if defined(__x86_64__)
    const double ratio = cf_fma_probe_ratio();
    print_message("512-bit FMA multiply-adds per second over 256-bit: %.2f (%s rate)\n", ratio,
                  measured ? "full" : "half");
    assert_true(ratio > 0.5 && ratio < 3.0);
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_built_once_under_concurrent_first_use),
        cmocka_unit_test(test_each_level_has_its_own_kernels),
        cmocka_unit_test(test_levels_above_the_machine_get_its_table),
        cmocka_unit_test(test_active_table_follows_environment_and_force),
        cmocka_unit_test(test_fma512_rate_measured_once_and_forced),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
