/*
 * bench_cache.c - decision-cache hit cost and scaling (issue 3's benchmark).
 *
 * Measures, in one run:
 *   1. hit latency, one thread: cf_cache_acquire + cf_cache_release of a published key;
 *   2. hit throughput with 1 and 2 threads, each thread cycling over its own keys (the
 *      realistic case: threads serving different layers), and with both threads on the
 *      same key (the worst case for the shared reference count);
 *   3. the same map behind one global mutex, same workloads;
 *   4. for context, the cost of building a key and of a whole convfind_plan_create +
 *      destroy that hits the cache.
 * Throughput is reported by wall clock and as CPU time per hit: on a machine with fewer
 * idle cores than threads the wall-clock ratio only shows time slicing, while CPU time
 * per hit still shows what contention costs.
 * Targets (issue 3): hit < 100 ns; 2-thread throughput >= 1.7x 1-thread.  Timings are
 * wall-clock on whatever else the machine is doing: run it on an idle machine.
 *
 * usage: bench_cache [seconds per throughput run, default 1]
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/registry.h"
#include "cache/cache.h"
#include "convfind.h"
#include "core/context.h"
#include "problem/key.h"

#define KEYS 256
#define KEYS_PER_THREAD 64

static cf_key keys[KEYS];
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

/* A cache holding every key with a one-candidate decision. */
static cf_cache *filled_cache(void)
{
    cf_cache *c = cf_cache_create((size_t)64 << 20, 8);
    cf_fingerprint fp;
    cf_host_fingerprint(1, 0, &fp);
    for (int i = 0; i < KEYS; i++) {
        convfind_problem *p = problem_of(i);
        cf_key_make(p, &fp, &keys[i]);
        convfind_problem_destroy(p);
        cf_cache_entry *e;
        bool owner;
        if (!c || cf_cache_acquire(c, &keys[i], &e, &owner) != CONVFIND_OK || !owner) {
            fprintf(stderr, "bench_cache: cannot fill the cache\n");
            exit(1);
        }
        cf_decision d = {.algo = "bench.algo", .n_candidates = 1,
                         .candidates = calloc(1, sizeof(cf_candidate_stats))};
        cf_cache_publish(c, e, &d, CF_SOURCE_MEASURED, false);
        cf_cache_release(e);
    }
    return c;
}

static inline void hit(cf_cache *c, const cf_key *k, bool global)
{
    cf_cache_entry *e;
    bool owner;
    if (global)
        pthread_mutex_lock(&global_mu);
    cf_cache_acquire(c, k, &e, &owner);
    cf_cache_release(e);
    if (global)
        pthread_mutex_unlock(&global_mu);
}

typedef struct run {
    cf_cache *c;
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
            hit(r->c, &keys[r->first_key + k], r->global);
            k = k + 1 == r->nkeys ? 0 : k + 1;
        }
        ops += 1024;
    } while (now_s() < end);
    r->ops = ops;
    r->cpu_s = thread_cpu_s() - cpu0;
    return NULL;
}

/* One thread's hit latency by wall clock; *cpu_ns by the thread's CPU time. */
static double latency_ns(cf_cache *c, bool global, double *cpu_ns)
{
    const int n = 4000000;
    for (int i = 0; i < 100000; i++)
        hit(c, &keys[i & (KEYS_PER_THREAD - 1)], global);
    double t0 = now_s(), c0 = thread_cpu_s();
    for (int i = 0; i < n; i++)
        hit(c, &keys[i & (KEYS_PER_THREAD - 1)], global);
    *cpu_ns = (thread_cpu_s() - c0) * 1e9 / n;
    return (now_s() - t0) * 1e9 / n;
}

/* Hits per second over `threads` threads (wall clock); *cpu_ns receives the CPU time
 * per hit, which exposes contention (cache-line transfers, lock waits) even when the
 * machine is too busy for the threads to run side by side all the time. */
static double throughput(cf_cache *c, int threads, bool global, bool same_key, double seconds,
                         double *cpu_ns)
{
    pthread_barrier_t start;
    pthread_barrier_init(&start, NULL, (unsigned)threads);
    pthread_t th[2];
    run r[2];
    double t0 = now_s();
    for (int i = 0; i < threads; i++) {
        r[i] = (run){.c = c, .first_key = same_key ? 0 : i * KEYS_PER_THREAD,
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



static void context_costs(void)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = 1;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.db_path = ":memory:";
    convfind_context *ctx;
    if (convfind_context_create(&o, &ctx) != CONVFIND_OK)
        return;
    convfind_problem *p = problem_of(3);
    cf_key k;
    const int n = 200000;
    double t0 = now_s();
    for (int i = 0; i < n; i++)
        cf_context_key(ctx, p, CF_WEIGHTS_PER_CALL, &k);
    double key_ns = (now_s() - t0) * 1e9 / n;
    convfind_plan *plan;
    convfind_plan_create(ctx, p, &plan); /* the miss */
    convfind_plan_destroy(plan);
    t0 = now_s();
    for (int i = 0; i < n; i++) {
        convfind_plan_create(ctx, p, &plan);
        convfind_plan_destroy(plan);
    }
    double plan_ns = (now_s() - t0) * 1e9 / n;
    printf("context: key build %.0f ns; plan_create+destroy on a hit %.0f ns (key %zu bytes)\n",
           key_ns, plan_ns, k.len);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
}

int main(int argc, char **argv)
{
    double seconds = argc > 1 ? atof(argv[1]) : 1.0;
    if (!(seconds > 0))
        seconds = 1.0;
    cf_cache *c = filled_cache();
    printf("bench_cache: %d keys of ~%zu bytes, %.2f s per throughput run\n", KEYS, keys[0].len,
           seconds);
    const char *names[2] = {"sharded brlock cache", "same map + global mutex"};
    for (int g = 0; g < 2; g++) {
        bool global = g == 1;
        double lat_cpu, lat = latency_ns(c, global, &lat_cpu), c1, c2, cs;
        double t1 = throughput(c, 1, global, false, seconds, &c1);
        double t2 = throughput(c, 2, global, false, seconds, &c2);
        double s2 = throughput(c, 2, global, true, seconds, &cs);
        printf("%s\n  hit latency %.1f ns (%.1f ns of CPU time)\n"
               "  1 thread             %7.2f Mhit/s          %6.1f cpu-ns/hit\n"
               "  2 threads            %7.2f Mhit/s (%.2fx)  %6.1f cpu-ns/hit\n"
               "  2 threads, same key  %7.2f Mhit/s (%.2fx)  %6.1f cpu-ns/hit\n",
               names[g], lat, lat_cpu, t1 * 1e-6, c1, t2 * 1e-6, t2 / t1, c2, s2 * 1e-6, s2 / t1, cs);
    }
    cf_cache_destroy(c);
    context_costs();
    return 0;
}
