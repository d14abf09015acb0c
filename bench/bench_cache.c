/*
 * bench_cache.c - what a decision-cache hit costs a caller, and how hits scale (issue 3's
 * benchmark), through the public API alone.
 *
 * A hit is what an inference runtime pays per plan it makes for a problem the context
 * has decided: convfind_plan_create on a cached key, then convfind_plan_destroy (the
 * key is built, the cache looked up, the decision's algorithm prepared).  Measures, in
 * one run:
 *   1. hit latency, one thread;
 *   2. hit throughput with 1 and 2 threads, each thread cycling over its own keys (the
 *      realistic case: threads serving different layers), and with both threads on the
 *      same key (the worst case for the shared reference count);
 *   3. the same calls behind one global mutex, as a caller serializing them would get;
 *   4. for context, the cost of building a key alone (convfind_problem_key).
 * Throughput is reported by wall clock and as CPU time per hit: on a machine with fewer
 * idle cores than threads the wall-clock ratio only shows time slicing, while CPU time
 * per hit still shows what contention costs.  Timings are wall-clock on whatever else
 * the machine is doing: run it on an idle machine.
 *
 * usage: bench_cache [seconds per throughput run, default 1]
 */
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convfind.h"

#define KEYS 256
#define KEYS_PER_THREAD 64

static convfind_context *ctx;
static convfind_problem *problems[KEYS];
static pthread_mutex_t global_mu = PTHREAD_MUTEX_INITIALIZER;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static convfind_problem *problem_of(int i)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    int64_t x[] = {1, 16 + i % 16, 8 + i / 16, 8 + i / 16}, w[] = {32, 16 + i % 16, 3, 3};
    memcpy(d.x_dims, x, sizeof x);
    memcpy(d.w_dims, w, sizeof w);
    d.pads.count = 4;
    for (int k = 0; k < 4; k++)
        d.pads.v[k] = 1;
    d.has_bias = 1;
    d.activation = CONVFIND_ACT_RELU;
    convfind_problem *p;
    if (convfind_problem_create(&d, &p) != CONVFIND_OK) {
        fprintf(stderr, "bench_cache: %s\n", convfind_last_error());
        exit(1);
    }
    return p;
}

/* A context holding a decision for every problem (heuristic: nothing is measured). */
static void fill_context(void)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.db_path = ":memory:";
    o.cache_bytes = (size_t)64 << 20;
    if (convfind_context_create(&o, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "bench_cache: %s\n", convfind_last_error());
        exit(1);
    }
    for (int i = 0; i < KEYS; i++) {
        problems[i] = problem_of(i);
        convfind_plan *plan;
        if (convfind_plan_create(ctx, problems[i], &plan) != CONVFIND_OK) {
            fprintf(stderr, "bench_cache: %s\n", convfind_last_error());
            exit(1);
        }
        convfind_plan_destroy(plan);
    }
}

static inline void hit(const convfind_problem *p, bool global)
{
    convfind_plan *plan;
    if (global)
        pthread_mutex_lock(&global_mu);
    convfind_plan_create(ctx, p, &plan);
    convfind_plan_destroy(plan);
    if (global)
        pthread_mutex_unlock(&global_mu);
}

typedef struct run {
    int first_key, nkeys;
    bool global;
    double seconds;
    pthread_barrier_t *start;
    unsigned long long ops;
    double cpu_s; /* the thread's own CPU time */
} run;

static double thread_cpu_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static void *worker(void *arg)
{
    run *r = arg;
    pthread_barrier_wait(r->start);
    double cpu0 = thread_cpu_s();
    unsigned long long ops = 0;
    double end = now_s() + r->seconds;
    int k = 0;
    do {
        for (int i = 0; i < 1024; i++) {
            hit(problems[r->first_key + k], r->global);
            k = k + 1 == r->nkeys ? 0 : k + 1;
        }
        ops += 1024;
    } while (now_s() < end);
    r->ops = ops;
    r->cpu_s = thread_cpu_s() - cpu0;
    return NULL;
}

/* One thread's hit latency by wall clock; *cpu_ns by the thread's CPU time. */
static double latency_ns(bool global, double *cpu_ns)
{
    const int n = 1000000;
    for (int i = 0; i < 100000; i++)
        hit(problems[i & (KEYS_PER_THREAD - 1)], global);
    double t0 = now_s(), c0 = thread_cpu_s();
    for (int i = 0; i < n; i++)
        hit(problems[i & (KEYS_PER_THREAD - 1)], global);
    *cpu_ns = (thread_cpu_s() - c0) * 1e9 / n;
    return (now_s() - t0) * 1e9 / n;
}

/* Hits per second over `threads` threads (wall clock); *cpu_ns receives the CPU time
 * per hit, which exposes contention (cache-line transfers, lock waits) even when the
 * machine is too busy for the threads to run side by side all the time. */
static double throughput(int threads, bool global, bool same_key, double seconds,
                         double *cpu_ns)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_t th[2];
    run r[2];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        r[i] = (run){.first_key = same_key ? 0 : i * KEYS_PER_THREAD,
                     .nkeys = same_key ? 1 : KEYS_PER_THREAD, .global = global,
                     .seconds = seconds, .start = &start};
        pthread_create(&th[i], NULL, worker, &r[i]);
    }
    unsigned long long ops = 0;
    double cpu = 0;
    for (int i = 0; i < threads; i++) {
        pthread_join(th[i], NULL);
        ops += r[i].ops;
        cpu += r[i].cpu_s;
    }
    *cpu_ns = cpu * 1e9 / (double)ops;
    double elapsed = now_s() - t0;
    pthread_barrier_destroy(&start);
    return (double)ops / elapsed;
}

/* The key alone: building it is part of every hit. */
static void key_cost(void)
{
    char key[1024];
    const int n = 200000;
    size_t len = 0;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        len = convfind_problem_key(ctx, problems[3], CONVFIND_WEIGHTS_PER_CALL, key, sizeof key);
    printf("key build %.0f ns (key %zu bytes)\n", (now_s() - t0) * 1e9 / n, len);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(seconds > 0))
        seconds = 1.0;
    fill_context();
    printf("bench_cache: %d keys, a hit = convfind_plan_create + convfind_plan_destroy, "
           "%.2f s per throughput run\n", KEYS, seconds);
    const char *names[2] = {"the context's cache", "the same calls + one global mutex"};
    for (int g = 0; g < 2; g++) {
        bool global = g == 1;
        double lat_cpu, lat = latency_ns(global, &lat_cpu), c1, c2, cs;
        double t1 = throughput(1, global, false, seconds, &c1);
        double t2 = throughput(2, global, false, seconds, &c2);
        double s2 = throughput(2, global, true, seconds, &cs);
        printf("%s\n  hit latency %.1f ns (%.1f ns of CPU time)\n"
               "  1 thread             %7.2f Mhit/s          %6.1f cpu-ns/hit\n"
               "  2 threads            %7.2f Mhit/s (%.2fx)  %6.1f cpu-ns/hit\n"
               "  2 threads, same key  %7.2f Mhit/s (%.2fx)  %6.1f cpu-ns/hit\n",
               names[g], lat, lat_cpu, t1 * 1e-6, c1, t2 * 1e-6, t2 / t1, c2, s2 * 1e-6, s2 / t1, cs);
    }
    key_cost();
    for (int i = 0; i < KEYS; i++)
        convfind_problem_destroy(problems[i]);
    convfind_context_destroy(ctx);
    return 0;
}
