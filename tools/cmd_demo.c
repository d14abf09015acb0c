/*
 * cmd_demo.c - `convfind demo`: runs real network layers and reports what happened.
 *
 * By default the layer is ResNet-50's res2 3x3 convolution (the row res2_3x3_c64_k64 of
 * data/resnet50_convs.csv, built in so the demo works from any directory), computed by
 * the reference algorithm unless --algo names another.  For each layer the demo prints
 * the resolved problem, the output shape, the algorithm and the median time of several
 * runs with the resulting GFLOP/s; with --layers FILE it does so for every row of a
 * benchmark CSV and adds the network total weighted by each row's count.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "core/algo.h"
#include "layers.h"

static const cli_layer resnet50_res2_3x3 = {
    "res2_3x3_c64_k64", 3, 1, 64, 56, 56, 64, 3, 3, 1, 1, 1, 1, 1, 1, 1,
};

typedef struct demo_options {
    const char *layers;
    const char *layer;
    const char *algo;
    int repeats;
    int threads;
} demo_options;

#define DEMO_FIELD(f) offsetof(demo_options, f)

static const cli_flag demo_flags[] = {
    {"layers", 0, "FILE", "benchmark CSV to run, e.g. data/resnet50_convs.csv", cli_apply_string,
     DEMO_FIELD(layers), NULL},
    {"layer", 0, "NAME", "run only this row of --layers", cli_apply_string, DEMO_FIELD(layer),
     NULL},
    {"algo", 0, "NAME", "algorithm to run (default: the reference)", cli_apply_string,
     DEMO_FIELD(algo), NULL},
    {"repeats", 0, "N", "timed runs after one warm-up run (default 5)", cli_apply_int,
     DEMO_FIELD(repeats), NULL},
    {"threads", 0, "N", "worker threads (default 0: all online cores)", cli_apply_int,
     DEMO_FIELD(threads), NULL},
};

/* The reference is found by family rather than by name so the demo keeps working if
 * the reference is renamed or a backend adds its own. */
static const char *reference_algorithm(void)
{
    int count = 0;
    const cf_algo *const *algos = cf_registry(&count);
    for (int i = 0; i < count; i++)
        if (strcmp(algos[i]->family, "reference") == 0)
            return algos[i]->name;
    return NULL;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Deterministic values in [-1, 1): timings should not depend on denormals or zeros. */
static void fill(float *v, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
}

typedef struct layer_result {
    char describe[512];
    char algo[64];
    int y_rank;
    int64_t y_dims[CONVFIND_MAX_RANK];
    double median_ms, min_ms, flops;
} layer_result;

/* What measure() allocates, released by the caller whatever path measure() took. */
typedef struct measure_state {
    convfind_problem *problem;
    convfind_plan *plan;
    float *x, *w, *y;
    double *times;
} measure_state;

static int measure(const cli_command *cmd, convfind_context *ctx, const cli_layer *layer,
                   const char *algo, int repeats, measure_state *m, layer_result *r)
{
    convfind_conv_desc desc;
    cli_layer_desc(layer, &desc);
    convfind_status st = convfind_problem_create(&desc, &m->problem);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    convfind_problem_describe(m->problem, r->describe, sizeof r->describe);
    size_t xn, wn, yn;
    if ((st = convfind_problem_sizes(m->problem, &xn, &wn, &yn, NULL)) != CONVFIND_OK ||
        (st = convfind_problem_output_dims(m->problem, &r->y_rank, r->y_dims)) != CONVFIND_OK)
        return cli_library_error(st);
    if ((st = convfind_plan_create_with_algorithm(ctx, m->problem, algo, &m->plan)) !=
        CONVFIND_OK)
        return cli_library_error(st);
    snprintf(r->algo, sizeof r->algo, "%s", convfind_plan_algorithm(m->plan));

    m->x = malloc(xn * sizeof(float));
    m->w = malloc(wn * sizeof(float));
    m->y = malloc(yn * sizeof(float));
    m->times = malloc((size_t)repeats * sizeof(double));
    if (!m->x || !m->w || !m->y || !m->times)
        return cli_failure(cmd, "out of memory for layer %s", layer->name);
    fill(m->x, xn, 1);
    fill(m->w, wn, 2);
    const convfind_tensors t = {.x = m->x, .w = m->w, .y = m->y};

    /* One untimed run brings code, weights and pages in, as in steady state. */
    for (int i = -1; i < repeats; i++) {
        double start = now_ms();
        if ((st = convfind_execute(m->plan, &t)) != CONVFIND_OK)
            return cli_library_error(st);
        if (i >= 0)
            m->times[i] = now_ms() - start;
    }
    qsort(m->times, (size_t)repeats, sizeof(double), compare_double);
    r->min_ms = m->times[0];
    r->median_ms = repeats % 2 ? m->times[repeats / 2]
                               : 0.5 * (m->times[repeats / 2 - 1] + m->times[repeats / 2]);
    r->flops = convfind_problem_flops(m->problem);
    return CLI_EXIT_OK;
}

static void print_result(const cli_layer *layer, const layer_result *r, int repeats)
{
    printf("layer:      %s (x%lld in the network)\n", layer->name, (long long)layer->count);
    printf("problem:    %s\n", r->describe);
    printf("output:     (");
    for (int i = 0; i < r->y_rank; i++)
        printf("%s%lld", i ? ", " : "", (long long)r->y_dims[i]);
    printf(")\n");
    printf("algorithm:  %s\n", r->algo);
    printf("time:       median %.3f ms, min %.3f ms over %d runs (after 1 warm-up)\n",
           r->median_ms, r->min_ms, repeats);
    printf("throughput: %.2f GFLOP/s (%.3f GFLOP per run)\n\n", r->flops / (r->median_ms * 1e6),
           r->flops * 1e-9);
}

/* Measures one layer on `ctx`, prints it and adds it to the totals. */
static int run_layer(const cli_command *cmd, convfind_context *ctx, const cli_layer *layer,
                     const char *algo, int repeats, double *total_ms, double *total_flops)
{
    measure_state m;
    memset(&m, 0, sizeof m);
    layer_result r;
    int rc = measure(cmd, ctx, layer, algo, repeats, &m, &r);
    if (rc == CLI_EXIT_OK) {
        print_result(layer, &r, repeats);
        *total_ms += r.median_ms * (double)layer->count;
        *total_flops += r.flops * (double)layer->count;
    }
    free(m.times);
    free(m.x);
    free(m.w);
    free(m.y);
    convfind_plan_destroy(m.plan);
    convfind_problem_destroy(m.problem);
    return rc;
}

static int run_layers(const cli_command *cmd, const demo_options *o, const char *algo,
                      const cli_layer *layers, size_t count)
{
    convfind_context_options opts;
    convfind_context_options_init(&opts);
    opts.num_threads = o->threads;
    opts.find_policy = CONVFIND_FIND_HEURISTIC;
    convfind_context *ctx = NULL;
    convfind_status st = convfind_context_create(&opts, &ctx);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    printf("convfind %s demo\n\n", convfind_version_string());
    double total_ms = 0, total_flops = 0;
    long long convs = 0;
    size_t ran = 0;
    int rc = CLI_EXIT_OK;
    for (size_t i = 0; i < count && rc == CLI_EXIT_OK; i++) {
        if (o->layer && strcmp(o->layer, layers[i].name) != 0)
            continue;
        rc = run_layer(cmd, ctx, &layers[i], algo, o->repeats, &total_ms, &total_flops);
        convs += layers[i].count;
        ran++;
    }
    convfind_context_destroy(ctx);
    if (rc == CLI_EXIT_OK && ran == 0)
        return cli_failure(cmd, "no layer named '%s' in %s", o->layer, o->layers);
    if (rc == CLI_EXIT_OK && ran > 1)
        printf("network:    %zu shapes, %lld convolutions: %.3f ms (sum of median x count), "
               "%.2f GFLOP/s\n",
               ran, convs, total_ms, total_flops / (total_ms * 1e6));
    return rc;
}

static int demo_main(const cli_command *self, int argc, char **argv)
{
    demo_options o = {NULL, NULL, NULL, 5, 0};
    const cli_flag_group groups[] = {
        {demo_flags, (int)(sizeof demo_flags / sizeof demo_flags[0]), &o}};
    int parsed = cli_parse(self, argc, argv, groups, 1);
    if (parsed == CLI_HELP_SHOWN)
        return CLI_EXIT_OK;
    if (parsed != CLI_PARSED)
        return CLI_EXIT_USAGE;
    if (o.repeats < 1 || o.repeats > 1000)
        return cli_usage_error(self, "--repeats %d is out of range (1 to 1000)", o.repeats);
    if (o.layer && !o.layers)
        return cli_usage_error(self, "--layer selects a row of --layers FILE, which is missing");
    const char *algo = o.algo ? o.algo : reference_algorithm();
    if (!algo)
        return cli_failure(self, "this build has no reference algorithm");
    if (!o.layers)
        return run_layers(self, &o, algo, &resnet50_res2_3x3, 1);

    cli_layer *layers;
    size_t count;
    char err[256];
    if (cli_layers_read(o.layers, &layers, &count, err, sizeof err) != 0)
        return cli_failure(self, "%s: %s", o.layers, err);
    int rc = run_layers(self, &o, algo, layers, count);
    free(layers);
    return rc;
}

const cli_command cli_cmd_demo = {
    "demo",
    "run ResNet-50 layers and report the problem, output shape, algorithm and time",
    "[--layers FILE [--layer NAME]] [--algo NAME] [--repeats N] [--threads N]",
    demo_main,
};
