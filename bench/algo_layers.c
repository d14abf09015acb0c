/*
 * algo_layers.c - times one named CPU algorithm on every layer of a benchmark CSV
 * (../shared/bench format) and checks each result against cpu.reference.
 *
 *   algo_layers CSV ALGO THREADS [REPEATS] [nchw|nhwc] [FILTER]
 *
 * Per layer: median and minimum milliseconds of REPEATS executions (after two warm-up
 * runs), GFLOP/s from the median, and the largest |y - ref| / max|ref|.  Packed weights
 * are made once, outside the timing, as a plan would; layout conversion of X and Y is
 * inside it.  Layers the algorithm cannot run are listed as "n/a".  FILTER keeps only
 * layers whose name contains it.  Problems have strict math unless the environment says
 * ALGO_LAYERS_MATH=relaxed (CONVFIND_MATH_ALLOW_TF32: cpu.winograd_f6x3 needs it).  A
 * development tool for kernel work, not a test: nothing here asserts a timing.
 */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "algo/registry.h"

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

/* Runs one layer; returns 0 when it ran (or was not applicable), -1 on failure. */
static int run_layer(const char *name, const convfind_conv_desc *d, const cf_algo *algo,
                     cf_threadpool *pool, int repeats)
{
    convfind_problem *p;
    if (convfind_problem_create(d, &p) != CONVFIND_OK) {
        fprintf(stderr, "%s: %s\n", name, convfind_last_error());
        return -1;
    }
    if (!algo->applicable(p)) {
        printf("%-36s n/a\n", name);
        convfind_problem_destroy(p);
        return 0;
    }
    unsigned seed = 12345;
    float *x = random_buffer(p->x_elems, &seed), *w = random_buffer(p->w_elems, &seed);
    float *y = random_buffer(p->y_elems, &seed), *ref = random_buffer(p->y_elems, &seed);
    size_t ws_bytes = 0;
    void *ws = NULL, *packed = NULL, *state = NULL;
    int rc = -1;
    if (!x || !w || !y || !ref || algo->workspace(p, &ws_bytes) != CONVFIND_OK)
        goto out;
    if (algo->prepare && algo->prepare(p, &state) != CONVFIND_OK) /* as a plan does */
        goto out;
    if (ws_bytes && !(ws = aligned_alloc(64, (ws_bytes + 63) & ~(size_t)63)))
        goto out;
    if (algo->pack_weights && algo->pack_weights(p, state, w, &packed) != CONVFIND_OK)
        goto out;
    cf_exec_args a = {.x = x, .w = w, .packed_w = packed, .y = y, .workspace = ws,
                      .workspace_size = ws_bytes, .pool = pool};
    double *t = calloc((size_t)repeats, sizeof *t);
    if (!t)
        goto out;
    for (int i = 0; i < repeats + 2; i++) {
        double t0 = now_ms();
        if (algo->execute(p, state, &a) != CONVFIND_OK) {
            fprintf(stderr, "%s: %s\n", name, convfind_last_error());
            free(t);
            goto out;
        }
        if (i >= 2)
            t[i - 2] = now_ms() - t0;
    }
    qsort(t, (size_t)repeats, sizeof *t, cmp_double);
    double med = t[repeats / 2], best = t[0];
    free(t);

    extern const cf_algo cf_algo_cpu_reference;
    cf_exec_args r = {.x = x, .w = w, .y = ref, .pool = pool};
    cf_algo_cpu_reference.execute(p, NULL, &r);
    double err = 0, mag = 0;
    for (size_t i = 0; i < p->y_elems; i++) {
        err = fmax(err, fabs((double)y[i] - ref[i]));
        mag = fmax(mag, fabs((double)ref[i]));
    }
    double flops = convfind_problem_flops(p);
    printf("%-36s %9.4f ms (min %8.4f)  %7.1f GFLOP/s  err %.2e\n", name, med, best,
           flops / med * 1e-6, mag > 0 ? err / mag : err);
    rc = 0;
out:
    if (packed)
        algo->free_packed(packed);
    if (algo->release)
        algo->release(state);
    free(ws);
    free(x);
    free(w);
    free(y);
    free(ref);
    convfind_problem_destroy(p);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 4) {
        fprintf(stderr, "usage: %s CSV ALGO THREADS [REPEATS] [nchw|nhwc] [FILTER]\n", argv[0]);
        return 2;
    }
    const cf_algo *algo = cf_backend_find(cf_backend_host(), argv[2]);
    int threads = atoi(argv[3]);
    int repeats = argc > 4 ? atoi(argv[4]) : 10;
    convfind_layout layout = argc > 5 && strcmp(argv[5], "nhwc") == 0 ? CONVFIND_LAYOUT_NHWC
                                                                       : CONVFIND_LAYOUT_NCHW;
    const char *filter = argc > 6 ? argv[6] : "";
    const char *math = getenv("ALGO_LAYERS_MATH");
    const bool relaxed = math && strcmp(math, "relaxed") == 0;
    FILE *f = fopen(argv[1], "r");
    cf_threadpool *pool = NULL;
    if (!algo || !f || repeats < 1 || cf_threadpool_create(threads, &pool) != CONVFIND_OK) {
        fprintf(stderr, "bad algorithm, CSV, thread count or repeat count\n");
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
        int64_t xd[4] = {v[1], v[2], v[3], v[4]}, wd[4] = {v[5], v[2] / v[14], v[6], v[7]};
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
        failures += run_layer(name, &d, algo, pool, repeats) != 0;
    }
    fclose(f);
    cf_threadpool_destroy(pool);
    return failures ? 1 : 0;
}
