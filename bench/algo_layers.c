/*
 * algo_layers.c - times one named algorithm on every layer of a benchmark CSV (the
 * 2-D layer lists such as data/resnet50_convs.csv, or any suite of data/suites: 1-D to
 * 3-D, Conv and ConvTranspose, bench/suite_format.py) and checks each result against
 * cpu.reference, through the public API alone.
 *
 *   algo_layers CSV ALGO THREADS [REPEATS] [nchw|nhwc] [FILTER]
 *
 * Per layer: median and minimum milliseconds of REPEATS executions (after two warm-up
 * runs), GFLOP/s from the median, and the largest |y - ref| / max|ref|.  Each layer is
 * a plan forcing ALGO with constant weights, packed once outside the timing as a runtime
 * would; layout conversion of X and Y is inside it.  Layers the algorithm cannot run are
 * listed as "n/a"; an execution that had to fall back (the algorithm failed at run time)
 * is an error.  FILTER keeps only layers whose name contains it.  Problems have strict
 * math unless the environment says ALGO_LAYERS_MATH=relaxed (CONVFIND_MATH_ALLOW_TF32:
 * cpu.winograd_f6x3 needs it).  The CSV is read by the CLI's suite reader
 * (tools/layers.h), so it means here what it means to `convfind tune` and the benchmark.
 * A development tool for kernel work, not a test: nothing here asserts a timing.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convfind.h"
#include "layers.h"

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static float *random_buffer(size_t n, unsigned *seed)
{
    float *v = aligned_alloc(64, (n * sizeof(float) + 63) & ~(size_t)63);
    for (size_t i = 0; v && i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[i] = (float)((*seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

static uint64_t fallbacks(const convfind_context *ctx)
{
    convfind_context_stats s = {.struct_size = sizeof s};
    convfind_context_stats_get(ctx, &s);
    return s.fallbacks;
}

/* A plan of `p` forcing `algo`, with the constant weights `w` when given. */
static convfind_status forced_plan(convfind_context *ctx, const convfind_problem *p,
                                   const char *algo, const float *w, convfind_plan **out)
{
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.algorithm = algo;
    o.weights = w;
    return convfind_plan_create_ex(ctx, p, &o, out);
}

/* Times `plan` REPEATS times after two warm-up runs; NULL on failure. */
static double *timed_runs(convfind_context *ctx, const convfind_plan *plan,
                          const convfind_tensors *t, int repeats)
{
    double *ms = calloc((size_t)repeats, sizeof *ms);
    const uint64_t before = fallbacks(ctx);
    for (int i = 0; ms && i < repeats + 2; i++) {
        double t0 = now_ms();
        if (convfind_execute(plan, t) != CONVFIND_OK || fallbacks(ctx) != before) {
            free(ms);
            return NULL;
        }
        if (i >= 2)
            ms[i - 2] = now_ms() - t0;
    }
    return ms;
}

/* Runs one layer; returns 0 when it ran (or was not applicable), -1 on failure. */
static int run_layer(convfind_context *ctx, const char *name, const convfind_conv_desc *d,
                     const char *algo, int repeats)
{
    convfind_problem *p;
    if (convfind_problem_create(d, &p) != CONVFIND_OK) {
        fprintf(stderr, "%s: %s\n", name, convfind_last_error());
        return -1;
    }
    size_t xn, wn, yn, bn;
    convfind_problem_sizes(p, &xn, &wn, &yn, &bn);
    unsigned seed = 12345;
    float *x = random_buffer(xn, &seed), *w = random_buffer(wn, &seed);
    float *y = random_buffer(yn, &seed), *ref = random_buffer(yn, &seed);
    float *b = bn ? random_buffer(bn, &seed) : NULL;
    convfind_plan *plan = NULL, *reference = NULL;
    int rc = -1;
    if (!x || !w || !y || !ref || (bn && !b)) {
        fprintf(stderr, "%s: out of memory\n", name);
        goto out;
    }
    convfind_status st = forced_plan(ctx, p, algo, w, &plan);
    if (st == CONVFIND_ERR_UNSUPPORTED) {
        printf("%-36s n/a\n", name);
        rc = 0;
        goto out;
    }
    const convfind_tensors t = {.x = x, .b = b, .y = y};
    double *ms = st == CONVFIND_OK ? timed_runs(ctx, plan, &t, repeats) : NULL;
    if (!ms) {
        fprintf(stderr, "%s: %s\n", name,
                convfind_last_error()[0] ? convfind_last_error() : "it fell back to another "
                                                                   "algorithm");
        goto out;
    }
    qsort(ms, (size_t)repeats, sizeof *ms, cmp_double);
    double med = ms[repeats / 2], best = ms[0];
    free(ms);

    const convfind_tensors r = {.x = x, .w = w, .b = b, .y = ref};
    if (forced_plan(ctx, p, "cpu.reference", NULL, &reference) != CONVFIND_OK ||
        convfind_execute(reference, &r) != CONVFIND_OK) {
        fprintf(stderr, "%s: cpu.reference: %s\n", name, convfind_last_error());
        goto out;
    }
    double err = 0, mag = 0;
    for (size_t i = 0; i < yn; i++) {
        err = fmax(err, fabs((double)y[i] - ref[i]));
        mag = fmax(mag, fabs((double)ref[i]));
    }
    double flops = convfind_problem_flops(p);
    printf("%-36s %9.4f ms (min %8.4f)  %7.1f GFLOP/s  err %.2e\n", name, med, best,
           flops / med * 1e-6, mag > 0 ? err / mag : err);
    rc = 0;
out:
    convfind_plan_destroy(plan);
    convfind_plan_destroy(reference);
    free(x);
    free(w);
    free(y);
    free(ref);
    free(b);
    convfind_problem_destroy(p);
    return rc;
}

/* Whether `name` is an algorithm of this build. */
static bool known(const char *name)
{
    for (int i = 0; i < convfind_algorithm_count(); i++)
        if (strcmp(convfind_algorithm_name(i), name) == 0)
            return true;
    return false;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CSV ALGO THREADS [REPEATS] [nchw|nhwc] [FILTER]\n", argv[0]);
        return 2;
    }
    const char *algo = argv[2];
    int threads = atoi(argv[3]);
    int repeats = argc > 4 ? atoi(argv[4]) : 10;
    convfind_layout layout = argc > 5 && strcmp(argv[5], "nhwc") == 0 ? CONVFIND_LAYOUT_NHWC
                                                                       : CONVFIND_LAYOUT_NCHW;
    const char *filter = argc > 6 ? argv[6] : "";
    const char *math = getenv("ALGO_LAYERS_MATH");
    const bool relaxed = math && strcmp(math, "relaxed") == 0;
    cli_layer *rows = NULL;
    size_t nrows = 0;
    char err[400];
    if (cli_layers_read(argv[1], &rows, &nrows, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", argv[1], err);
        return 2;
    }
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.db_path = ":memory:";
    convfind_context *ctx = NULL;
    if (!known(algo) || repeats < 1 || threads < 1 ||
        convfind_context_create(&o, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "bad algorithm, thread count or repeat count\n");
        free(rows);
        return 2;
    }
    int failures = 0;
    for (size_t i = 0; i < nrows; i++) {
        if (!strstr(rows[i].name, filter))
            continue;
        convfind_conv_desc d;
        cli_layer_desc(&rows[i], &d);
        d.layout = layout;
        d.math_mode = relaxed ? CONVFIND_MATH_ALLOW_TF32 : CONVFIND_MATH_STRICT;
        failures += run_layer(ctx, rows[i].name, &d, algo, repeats) != 0;
    }
    free(rows);
    convfind_context_destroy(ctx);
    return failures ? 1 : 0;
}
