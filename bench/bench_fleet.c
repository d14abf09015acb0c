/*
 * bench_fleet.c - what the fleet tier costs and buys (issue 20's benchmark; a program,
 * not a test), through the public API alone.
 *
 * It starts a PostgreSQL server of its own (tests/fleet/pg_server.h: pg_fixture.sh, a
 * Unix socket in a scratch directory; the server binaries and libpq must be installed)
 * and measures:
 *
 *   1. lookup latency: plan creation of N distinct problems on a new context whose
 *      decision cache is empty, so that each one asks the find database (policy REPLAY:
 *      a stored decision, else the heuristic, never a Find), each case on its own user
 *      database:
 *        miss, no fleet tier
 *        miss through the fleet tier      (user tier and fleet both miss: a round trip)
 *        first fleet hit                  (the round trip and the copy into the user tier)
 *        user tier hit, no fleet tier     (what a stored decision costs without a fleet)
 *        later hits                       (the copy: must cost what a user tier hit does;
 *                                          timed in rounds alternating with the case above)
 *      median and 90th percentile in microseconds, the plan's own construction included
 *      (the same in every case);
 *   2. warm against cold start: one context plans every problem of a small list on a
 *      fresh user database with the fleet tier empty (every problem measured, then
 *      pushed), then a context of "another machine" (a fresh user database) plans the
 *      same list from the fleet, and for comparison one with its own warm user database
 *      and no fleet tier.
 *
 * usage: bench_fleet [N problems, default 128]
 * Timings are wall-clock on whatever else the machine is doing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../tests/fleet/pg_server.h"
#include "convfind.h"

static double now_us(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec * 1e-3;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void report(const char *what, double *us, int n)
{
    qsort(us, (size_t)n, sizeof *us, by_value);
    printf("  %-34s median %8.1f us   p90 %8.1f us\n", what, us[n / 2], us[(n * 9) / 10]);
}

/* Problem i of the latency cases: a small 3x3 convolution, distinct for every i. */
static convfind_problem *problem(int i)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t c = 1 + i % 16, k = 1 + i / 16;
    const int64_t x[4] = {1, c, 6, 6}, w[4] = {k, c, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.pads = (convfind_ints){4, {1, 1, 1, 1}};
    convfind_problem *p = NULL;
    FL_CHECK(convfind_problem_create(&d, &p) == CONVFIND_OK, "%s", convfind_last_error());
    return p;
}

/* A context of one machine: its user database DIR/NAME, the fleet tier `fleet` ("":
 * none). */
static convfind_context *machine(const char *dir, const char *name, const char *fleet,
                                 convfind_find_policy policy)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.db_path = path;
    o.fleet_db = fleet;
    o.find_policy = policy;
    o.find_time_budget_s = 0.01;
    convfind_context *ctx = NULL;
    FL_CHECK(convfind_context_create(&o, &ctx) == CONVFIND_OK, "%s", convfind_last_error());
    return ctx;
}

static convfind_context_stats stats_of(const convfind_context *ctx)
{
    convfind_context_stats s = {.struct_size = sizeof s};
    FL_CHECK(convfind_context_stats_get(ctx, &s) == CONVFIND_OK, "%s", convfind_last_error());
    return s;
}

/* Times the plan creation of problems [0, n) on `ctx` into us[0, n) (NULL: untimed),
 * then destroys the context; returns its statistics. */
static convfind_context_stats plan_all(convfind_context *ctx, int n, double *us)
{
    for (int i = 0; i < n; i++) {
        convfind_problem *p = problem(i);
        convfind_plan *plan = NULL;
        double t0 = now_us();
        convfind_status st = convfind_plan_create(ctx, p, &plan);
        double t1 = now_us();
        FL_CHECK(st == CONVFIND_OK, "problem %d: %s", i, convfind_last_error());
        if (us)
            us[i] = t1 - t0;
        convfind_plan_destroy(plan);
        convfind_problem_destroy(p);
    }
    convfind_context_stats s = stats_of(ctx);
    convfind_context_destroy(ctx);
    return s;
}

#define ROUNDS 5

static void latency(const char *dir, const char *conninfo, int n)
{
    double *us = malloc((size_t)n * ROUNDS * sizeof *us);
    double *copy_us = malloc((size_t)n * ROUNDS * sizeof *copy_us);
    FL_CHECK(us && copy_us, "out of memory");
    printf("lookup latency, %d problems, one plan creation each on an empty cache:\n", n);
    plan_all(machine(dir, "miss.sqlite", "", CONVFIND_FIND_REPLAY), n, us);
    report("miss, no fleet tier", us, n);
    convfind_context_stats s =
        plan_all(machine(dir, "fleetmiss.sqlite", conninfo, CONVFIND_FIND_REPLAY), n, us);
    FL_CHECK(s.fleet_connected && s.fleet_faults == 0,
             "the fleet tier was not reached (is libpq5 installed?)");
    report("miss through the fleet tier", us, n);

    s = plan_all(machine(dir, "measured.sqlite", conninfo, CONVFIND_FIND_HYBRID), n, NULL);
    FL_CHECK(s.finds == (uint64_t)n && s.fleet_pushed == (uint64_t)n,
             "measuring: %llu finds, %llu pushed", (unsigned long long)s.finds,
             (unsigned long long)s.fleet_pushed);
    s = plan_all(machine(dir, "copied.sqlite", conninfo, CONVFIND_FIND_REPLAY), n, us);
    FL_CHECK(s.fleet_hits == (uint64_t)n, "first hits: %llu fleet hits",
             (unsigned long long)s.fleet_hits);
    report("first fleet hit (copied)", us, n);
    /* The two that must cost the same, in alternating rounds so that the machine's
     * other load falls on both alike. */
    for (int r = 0; r < ROUNDS; r++) {
        plan_all(machine(dir, "measured.sqlite", "", CONVFIND_FIND_REPLAY), n,
                 us + (size_t)r * n);
        s = plan_all(machine(dir, "copied.sqlite", conninfo, CONVFIND_FIND_REPLAY), n,
                     copy_us + (size_t)r * n);
        FL_CHECK(s.fleet_hits == 0, "later hits asked the fleet %llu times",
                 (unsigned long long)s.fleet_hits);
    }
    report("user tier hit, no fleet tier", us, n * ROUNDS);
    report("later hits (the local copy)", copy_us, n * ROUNDS);
    free(us);
    free(copy_us);
}

/* The problems of the start-up comparison: small layers of a few shapes. */
static const int64_t layers[][6] = {
    /* C, H=W, M, K, stride, pad */
    {16, 28, 16, 3, 1, 1}, {16, 28, 32, 1, 1, 0}, {32, 14, 32, 3, 1, 1}, {32, 14, 64, 1, 1, 0},
    {64, 7, 64, 3, 1, 1},  {64, 7, 128, 1, 1, 0}, {16, 28, 32, 3, 2, 1}, {8, 56, 16, 3, 1, 1},
};
#define LAYERS (int)(sizeof layers / sizeof layers[0])

/* Plans every layer on a new context; returns the seconds it took, and its stats. */
static double start(const char *db_path, const char *fleet, convfind_context_stats *s)
{
    double t0 = now_us();
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.db_path = db_path;
    o.fleet_db = fleet;
    o.find_time_budget_s = 0.1;
    convfind_context *ctx = NULL;
    FL_CHECK(convfind_context_create(&o, &ctx) == CONVFIND_OK, "%s", convfind_last_error());
    for (int l = 0; l < LAYERS; l++) {
        convfind_conv_desc d;
        convfind_conv_desc_init(&d);
        d.x_rank = d.w_rank = 4;
        const int64_t *v = layers[l];
        const int64_t x[4] = {1, v[0], v[1], v[1]}, w[4] = {v[2], v[0], v[3], v[3]};
        memcpy(d.x_dims, x, sizeof x);
        memcpy(d.w_dims, w, sizeof w);
        d.strides = (convfind_ints){2, {v[4], v[4]}};
        d.pads = (convfind_ints){4, {v[5], v[5], v[5], v[5]}};
        convfind_problem *p = NULL;
        convfind_plan *plan = NULL;
        FL_CHECK(convfind_problem_create(&d, &p) == CONVFIND_OK &&
                     convfind_plan_create(ctx, p, &plan) == CONVFIND_OK,
                 "%s", convfind_last_error());
        convfind_plan_destroy(plan);
        convfind_problem_destroy(p);
    }
    FL_CHECK(convfind_context_stats_get(ctx, s) == CONVFIND_OK, "%s", convfind_last_error());
    convfind_context_destroy(ctx);
    return (now_us() - t0) * 1e-6;
}

static void startup(const char *dir, const char *conninfo)
{
    char cold[512], warm[512];
    snprintf(cold, sizeof cold, "%s/cold.sqlite", dir);
    snprintf(warm, sizeof warm, "%s/warm.sqlite", dir);
    convfind_context_stats s = {.struct_size = sizeof s};
    printf("start-up, %d layers planned on a new context (Find budget 0.1 s, 1 thread):\n",
           LAYERS);
    double t = start(cold, conninfo, &s);
    printf("  %-34s %7.3f s   finds %llu, pushed %llu\n", "cold (empty fleet tier)", t,
           (unsigned long long)s.finds, (unsigned long long)s.fleet_pushed);
    t = start(warm, conninfo, &s);
    printf("  %-34s %7.3f s   finds %llu, fleet hits %llu\n", "warm from the fleet tier", t,
           (unsigned long long)s.finds, (unsigned long long)s.fleet_hits);
    t = start(cold, "", &s);
    printf("  %-34s %7.3f s   finds %llu\n", "warm user tier, no fleet tier", t,
           (unsigned long long)s.finds);
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 128;
    if (n < 10 || n > 256) {
        fprintf(stderr, "usage: bench_fleet [N problems, 10..256]\n");
        return 2;
    }
    char dir[256], conninfo[512];
    fl_tmpdir(dir, sizeof dir);
    fl_server_start(dir, conninfo, sizeof conninfo);
    latency(dir, conninfo, n);
    startup(dir, conninfo);
    fl_finish(dir);
    return 0;
}
