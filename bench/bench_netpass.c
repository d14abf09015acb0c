/*
 * bench_netpass.c - a suite's convolutions run as passes of a network, against each layer
 * run again and again as Find and the layer benchmarks run it.
 *
 *   bench_netpass [--layers CSV] [--threads N] [--rounds R] [--per-layer] [--cold x|y|xy]
 *
 * One plan per convolution of the network (a row's `count` copies each get weights of
 * their own, constant and packed once, as a model's layers have), made with Find (HYBRID,
 * in-memory find-db, default budget).  The activations live in two buffers of the largest
 * size, used in turn (layer i reads one and writes the other), as a runtime's arena
 * reuses memory: a layer's input was just written by the layer before, while its weights
 * were last read a whole pass ago, with every other layer's weights read since.
 * Per round, in turns: a pass (every layer once, each timed), and every layer alone (run
 * twice untimed, then once timed, on the same buffers; with --cold, X's and/or Y's buffer
 * is flushed from every cache before the timed run, the weights staying where the
 * untimed runs left them: which part of a pass's extra time is the activations').
 * Prints the total of the per-layer medians over the rounds after the first, for the
 * pass and alone, and the time plan creation with Find took; --per-layer adds a line per
 * convolution.
 *
 * Builds are compared by running each one's program in turns (the machine drifts).
 * Not a test: nothing here asserts a timing.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "bench_tensor.h"
#include "convfind.h"
#include "layers.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return 1e3 * (double)ts.tv_sec + 1e-6 * (double)ts.tv_nsec;
}

/* Writes back and drops `floats` floats from p on from every cache; false where this
 * architecture has no such instruction here (x86-64 only). */
static bool flush_floats(const float *p, size_t floats)
{
#if defined(__x86_64__)
    for (size_t i = 0; i < floats; i += 64 / sizeof(float))
        _mm_clflush(p + i);
    _mm_mfence();
    return true;
#else
    (void)p;
    (void)floats;
    return false;
#endif
}

/* n floats of the benchmark's test values (bench_tensor.h); NULL when out of memory. */
static float *filled(size_t n, unsigned seed)
{
    float *v = bench_tensor_alloc(n);
    if (v)
        bench_tensor_fill(v, n, &seed);
    return v;
}

static int cmp_double(const void *a, const void *b)
{
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return v[n / 2];
}

/* One convolution of the network and its times, one per round. */
typedef struct conv {
    const cli_layer *row;
    convfind_plan *plan;
    float *b; /* the bias, for a row that has one */
    double *pass_ms, *alone_ms;
} conv;

static int run(const conv *c, float *x, float *y, double *ms)
{
    const convfind_tensors t = {.x = x, .b = c->b, .y = y};
    const double t0 = now_ms();
    const int rc = convfind_execute(c->plan, &t) != CONVFIND_OK;
    if (ms)
        *ms = now_ms() - t0;
    return rc;
}

/* Makes a plan (Find) for every convolution of `rows` into *out (*made of them made);
 * 0 when all were made. */
static int make_plans(convfind_context *ctx, const cli_layer *rows, size_t nrows, int rounds,
                      conv **out, size_t *made, size_t *largest)
{
    size_t total = 0;
    for (size_t i = 0; i < nrows; i++)
        total += (size_t)rows[i].count;
    conv *convs = calloc(total, sizeof *convs);
    *out = convs;
    *made = *largest = 0;
    for (size_t i = 0; convs && i < nrows; i++) {
        convfind_conv_desc d;
        cli_layer_desc(&rows[i], &d);
        convfind_problem *p = NULL;
        size_t xs, ws, ys, bs;
        int bad = convfind_problem_create(&d, &p) != CONVFIND_OK ||
                  convfind_problem_sizes(p, &xs, &ws, &ys, &bs) != CONVFIND_OK;
        for (int64_t k = 0; !bad && k < rows[i].count; k++) {
            *largest = xs > *largest ? xs : *largest;
            *largest = ys > *largest ? ys : *largest;
            conv *c = &convs[*made];
            float *w = filled(ws, 7u + (unsigned)*made);
            convfind_plan_options po;
            convfind_plan_options_init(&po);
            po.weights = w;
            c->row = &rows[i];
            c->pass_ms = calloc((size_t)rounds, sizeof(double));
            c->alone_ms = calloc((size_t)rounds, sizeof(double));
            c->b = bs ? filled(bs, 13u + (unsigned)*made) : NULL;
            bad = !w || !c->pass_ms || !c->alone_ms || (bs && !c->b) ||
                  convfind_plan_create_ex(ctx, p, &po, &c->plan) != CONVFIND_OK;
            free(w); /* the plan keeps its own copy */
            ++*made; /* its buffers are freed with the others, made or not */
        }
        convfind_problem_destroy(p);
        if (bad) {
            fprintf(stderr, "bench_netpass: %s: %s\n", rows[i].name, convfind_last_error());
            return 1;
        }
    }
    return convs ? 0 : 1;
}

int main(int argc, char **argv)
{
    const char *csv = "data/resnet50_convs.csv";
    int threads = 2, rounds = 8, per_layer = 0;
    bool cold_x = false, cold_y = false;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
            csv = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc)
            rounds = atoi(argv[++i]);
        else if (strcmp(argv[i], "--per-layer") == 0)
            per_layer = 1;
        else if (strcmp(argv[i], "--cold") == 0 && i + 1 < argc && strspn(argv[i + 1], "xy") &&
                 argv[i + 1][strspn(argv[i + 1], "xy")] == '\0') {
            cold_x = strchr(argv[++i], 'x') != NULL;
            cold_y = strchr(argv[i], 'y') != NULL;
        } else {
            fprintf(stderr, "usage: bench_netpass [--layers CSV] [--threads N] [--rounds R] "
                            "[--per-layer] [--cold x|y|xy]\n");
            return 2;
        }
    }
    if ((cold_x || cold_y) && !flush_floats(NULL, 0)) {
        fprintf(stderr, "bench_netpass: --cold needs x86-64 (clflush)\n");
        return 2;
    }
    if (threads < 1 || rounds < 2) {
        fprintf(stderr, "bench_netpass: --threads must be >= 1 and --rounds >= 2\n");
        return 2;
    }
    cli_layer *rows = NULL;
    size_t nrows = 0;
    char err[256];
    if (cli_layers_read(csv, &rows, &nrows, err, sizeof err) != 0) {
        fprintf(stderr, "bench_netpass: %s: %s\n", csv, err);
        return 1;
    }
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads;
    o.db_path = ":memory:";
    convfind_context *ctx = NULL;
    if (convfind_context_create(&o, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "bench_netpass: %s\n", convfind_last_error());
        return 1;
    }
    conv *convs = NULL;
    size_t n = 0, largest = 0;
    const double t0 = now_ms();
    int rc = make_plans(ctx, rows, nrows, rounds, &convs, &n, &largest);
    const double find_s = (now_ms() - t0) / 1e3;
    float *buf[2] = {filled(largest, 1), filled(largest, 2)};
    rc = rc || !buf[0] || !buf[1];
    /* Round 0 warms up: its times are not kept. */
    for (int r = 0; !rc && r < rounds; r++) {
        for (size_t i = 0; !rc && i < n; i++)
            rc = run(&convs[i], buf[i % 2], buf[(i + 1) % 2], &convs[i].pass_ms[r]);
        for (size_t i = 0; !rc && i < n; i++) {
            rc = run(&convs[i], buf[0], buf[1], NULL) || run(&convs[i], buf[0], buf[1], NULL);
            if (cold_x)
                flush_floats(buf[0], largest);
            if (cold_y)
                flush_floats(buf[1], largest);
            rc = rc || run(&convs[i], buf[0], buf[1], &convs[i].alone_ms[r]);
        }
    }
    if (rc)
        fprintf(stderr, "bench_netpass: %s\n", convfind_last_error());
    double pass = 0, alone = 0;
    for (size_t i = 0; !rc && i < n; i++) {
        const double p = median(convs[i].pass_ms + 1, rounds - 1);
        const double a = median(convs[i].alone_ms + 1, rounds - 1);
        pass += p;
        alone += a;
        if (per_layer)
            printf("%-32s %-24s pass %8.3f ms  alone %8.3f ms\n", convs[i].row->name,
                   convfind_plan_algorithm(convs[i].plan), p, a);
    }
    if (!rc)
        printf("%s, %zu convolutions, %d threads, %d rounds: pass %.2f ms, layers alone%s "
               "%.2f ms (medians per layer, summed); plans with Find %.2f s\n",
               csv, n, threads, rounds, pass,
               cold_x && cold_y ? " (X, Y flushed)" : cold_x ? " (X flushed)"
                                                           : cold_y ? " (Y flushed)" : "",
               alone, find_s);
    for (size_t i = 0; i < n; i++) {
        convfind_plan_destroy(convs[i].plan);
        free(convs[i].pass_ms);
        free(convs[i].alone_ms);
        free(convs[i].b);
    }
    free(convs);
    free(buf[0]);
    free(buf[1]);
    free(rows);
    convfind_context_destroy(ctx);
    return rc;
}
