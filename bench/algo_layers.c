/*
 * algo_layers.c - times one named algorithm on every layer of a benchmark CSV
 * (the layer CSV of data/resnet50_convs.csv) and checks each result against cpu.reference, through the
 * public API alone.
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
 * cpu.winograd_f6x3 needs it), and are Conv unless it says ALGO_LAYERS_OP=conv_transpose
 * (then c is ConvTranspose's input channels and k its outputs).  A development tool for kernel work, not a test: nothing
 * here asserts a timing.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "convfind.h"

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
    size_t xn, wn, yn;
    convfind_problem_sizes(p, &xn, &wn, &yn, NULL);
    unsigned seed = 12345;
    float *x = random_buffer(xn, &seed), *w = random_buffer(wn, &seed);
    float *y = random_buffer(yn, &seed), *ref = random_buffer(yn, &seed);
    convfind_plan *plan = NULL, *reference = NULL;
    int rc = -1;
    if (!x || !w || !y || !ref) {
        fprintf(stderr, "%s: out of memory\n", name);
        goto out;
    }
    convfind_status st = forced_plan(ctx, p, algo, w, &plan);
    if (st == CONVFIND_ERR_UNSUPPORTED) {
        printf("%-36s n/a\n", name);
        rc = 0;
        goto out;
    }
    const convfind_tensors t = {.x = x, .y = y};
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

    const convfind_tensors r = {.x = x, .w = w, .y = ref};
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
    const char *op = getenv("ALGO_LAYERS_OP");
    const bool transpose = op && strcmp(op, "conv_transpose") == 0;
    FILE *f = fopen(argv[1], "r");
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads;
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    o.db_path = ":memory:";
    convfind_context *ctx = NULL;
    if (!known(algo) || !f || repeats < 1 || threads < 1 ||
        convfind_context_create(&o, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "bad algorithm, CSV, thread count or repeat count\n");
        if (f)
            fclose(f);
        return 2;
    }
    char line[512];
    int failures = 0;
    while (fgets(line, sizeof line, f)) {
        char name[128];
        long long v[15];
        if (sscanf(line, "%127[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,"
                   "%lld,%lld,%lld", name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
                   &v[7], &v[8], &v[9], &v[10], &v[11], &v[12], &v[13], &v[14]) != 16 ||
            !strstr(name, filter))
            continue;
        /* count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,group */
        convfind_conv_desc d;
        convfind_conv_desc_init(&d);
        d.layout = layout;
        d.math_mode = relaxed ? CONVFIND_MATH_ALLOW_TF32 : CONVFIND_MATH_STRICT;
        d.x_rank = d.w_rank = 4;
        d.op = transpose ? CONVFIND_OP_CONV_TRANSPOSE : CONVFIND_OP_CONV;
        int64_t xd[4] = {v[1], v[2], v[3], v[4]};
        int64_t wd[4] = {transpose ? v[2] : v[5], transpose ? v[5] / v[14] : v[2] / v[14], v[6],
                         v[7]};
        memcpy(d.x_dims, xd, sizeof xd);
        memcpy(d.w_dims, wd, sizeof wd);
        d.group = v[14];
        d.pads.count = 4;
        d.pads.v[0] = d.pads.v[2] = v[8];
        d.pads.v[1] = d.pads.v[3] = v[9];
        d.strides.count = d.dilations.count = 2;
        d.strides.v[0] = v[10];
        d.strides.v[1] = v[11];
        d.dilations.v[0] = v[12];
        d.dilations.v[1] = v[13];
        failures += run_layer(ctx, name, &d, algo, repeats) != 0;
    }
    fclose(f);
    convfind_context_destroy(ctx);
    return failures ? 1 : 0;
}
