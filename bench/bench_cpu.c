/*
 * bench_cpu.c - convfind against its CPU peers, layer by layer, in one run.
 *
 *   bench_cpu CSV --onednn-only [--threads T] [--min-seconds S] > onednn.csv
 *   bench_cpu CSV --onednn FILE [--threads T] [--ort FILE] [--suite NAME] [--min-seconds S]
 *             [--select find|measured] [--exclude ALGO[,ALGO...]]
 *
 * CSV is a ../shared/bench problem set.  Per layer, at the same thread count:
 *   convfind  NCHW in and out through the public API (layout conversion, if an algorithm
 *             needs one, is inside the timing); packed weights made once, outside it.
 *             --select find (default): the algorithm Find chose (convfind_find on a
 *             context with an empty temporary find-db, not timed), then its plan timed.
 *             --select measured: every registered CPU algorithm timed here, the fastest
 *             kept (cpu.reference only when nothing else applies; --exclude skips some).
 *             The output says which.
 *   oneDNN    fp32 in its own blocked layouts, reorders not timed, direct and auto
 *             (Winograd allowed) both timed, the faster kept (onednn_conv.c).  Timed by
 *             this program in its own process (--onednn-only, lines "name,ms,impl"), read
 *             back from FILE: oneDNN's OpenMP workers spin between its calls
 *             (OMP_WAIT_POLICY=active, its fastest setting), and spinning threads in the
 *             same process would take the cores convfind's pool needs.
 *   ORT       read from FILE, lines "name,ms", written by bench_ort.py in the same
 *             bench/cpu.sh run (ONNX Runtime's CPU provider, one-node model per layer).
 * Prints per-layer milliseconds, ratios, % of the FMA peak measured at start, totals
 * weighted by `count`, and as the last line exactly
 *   <suite> total_ms convfind=<x> onednn=<y> onnxruntime=<z>
 * A program, not a test: nothing here asserts a timing.
 */
#include <math.h>
#include <stdio.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include "convfind.h"
#include "cpu/isa.h"
#include "bench_timing.h"
#include "fma_peak.h"
#include "onednn_conv.h"

#define MAX_LAYERS 256

static int parse_csv(const char *path, bench_layer *out, int max)
{
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "bench_cpu: cannot open %s\n", path);
        return -1;
    }
    char line[512];
    int n = 0;
    while (fgets(line, sizeof line, f) && n < max) {
        bench_layer *L = &out[n];
        long long v[15];
        if (sscanf(line, "%95[^,],%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,%lld,"
                         "%lld,%lld",
                   L->name, &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7], &v[8], &v[9],
                   &v[10], &v[11], &v[12], &v[13], &v[14]) != 16)
            continue; /* the header, or a malformed line */
        L->count = (int)v[0];
        L->n = v[1], L->c = v[2], L->h = v[3], L->w = v[4], L->k = v[5], L->r = v[6];
        L->s = v[7], L->pad_h = v[8], L->pad_w = v[9], L->stride_h = v[10];
        L->stride_w = v[11], L->dil_h = v[12], L->dil_w = v[13], L->group = v[14];
        n++;
    }
    fclose(f);
    return n;
}

/* A peer's time for layer `name` from FILE's "name,ms[,impl]" lines (-1 if absent);
 * the implementation name, when the line has one, goes to impl. */
static double peer_ms_of(const char *path, const char *name, char *impl, size_t impl_size)
{
    if (impl_size)
        impl[0] = '\0';
    if (!path)
        return -1.0;
    FILE *f = fopen(path, "r");
    if (!f)
        return -1.0;
    char line[256], key[128], what[64];
    double ms = -1.0, v;
    while (fgets(line, sizeof line, f)) {
        what[0] = '\0';
        if (sscanf(line, "%127[^,],%lf,%63[^\n]", key, &v, what) >= 2 && strcmp(key, name) == 0) {
            ms = v;
            snprintf(impl, impl_size, "%s", what);
        }
    }
    fclose(f);
    return ms;
}

/* The faster of oneDNN's direct and auto algorithms for one layer. */
static double onednn_best_ms(const bench_layer *L, double min_seconds, char *impl, size_t size)
{
    char impl_d[64], impl_a[64];
    double dn = onednn_time_ms(L, 0, 10, min_seconds, impl_d, sizeof impl_d);
    double dn_auto = onednn_time_ms(L, 1, 10, min_seconds, impl_a, sizeof impl_a);
    const char *best = impl_d;
    if (dn_auto >= 0.0 && (dn < 0.0 || dn_auto < dn)) {
        dn = dn_auto;
        best = impl_a;
    }
    snprintf(impl, size, "%s", best);
    return dn;
}

/* Tensors start on a cache line, as oneDNN's own allocations (DNNL_MEMORY_ALLOCATE) and
 * ONNX Runtime's CPU allocator (64-byte alignment) do: with malloc's 16-byte alignment every vector store of a
 * row-vectorized kernel straddled two lines (the MobileNetV2 stem took 0.058-0.059 ms
 * instead of 0.054 at 2 threads), a handicap the peers never had. */
static float *aligned_floats(size_t n)
{
    size_t bytes = ((n ? n : 1) * sizeof(float) + 63) & ~(size_t)63;
    return aligned_alloc(64, bytes);
}

static float *random_floats(size_t n, unsigned *seed)
{
    float *v = aligned_floats(n);
    for (size_t i = 0; v && i < n; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        v[i] = (float)(*seed >> 8) / 8388608.0f - 1.0f;
    }
    return v;
}

typedef struct cf_run {
    const convfind_plan *plan;
    convfind_tensors t;
} cf_run;

static int cf_once(void *arg)
{
    cf_run *r = arg;
    return convfind_execute(r->plan, &r->t) != CONVFIND_OK;
}

/* The fastest registered algorithm for the layer: its median ms and name. */
/* The layer as a convfind problem (NCHW, no bias), or NULL with a message. */
static convfind_problem *make_problem(const bench_layer *L)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    int64_t xd[4] = {L->n, L->c, L->h, L->w}, wd[4] = {L->k, L->c / L->group, L->r, L->s};
    memcpy(d.x_dims, xd, sizeof xd);
    memcpy(d.w_dims, wd, sizeof wd);
    d.group = L->group;
    d.strides.count = d.dilations.count = 2;
    d.strides.v[0] = L->stride_h, d.strides.v[1] = L->stride_w;
    d.dilations.v[0] = L->dil_h, d.dilations.v[1] = L->dil_w;
    d.pads.count = 4;
    d.pads.v[0] = d.pads.v[2] = L->pad_h;
    d.pads.v[1] = d.pads.v[3] = L->pad_w;
    convfind_problem *prob = NULL;
    if (convfind_problem_create(&d, &prob) != CONVFIND_OK) {
        fprintf(stderr, "bench_cpu: %s: %s\n", L->name, convfind_last_error());
        return NULL;
    }
    return prob;
}

/* True when `name` is one of the comma-separated names in `list` (NULL: none). */
static int listed(const char *list, const char *name)
{
    size_t n = strlen(name);
    for (const char *p = list; p && *p;) {
        const char *end = strchr(p, ',');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if (len == n && strncmp(p, name, n) == 0)
            return 1;
        p = end ? end + 1 : NULL;
    }
    return 0;
}

static double time_convfind(convfind_context *ctx, const bench_layer *L, double min_seconds,
                            const char *exclude, char *best_name, size_t best_size)
{
    convfind_problem *prob = make_problem(L);
    if (!prob)
        return -1.0;
    size_t xn, wn, yn;
    convfind_problem_sizes(prob, &xn, &wn, &yn, NULL);
    unsigned seed = 777u;
    float *x = random_floats(xn, &seed), *w = random_floats(wn, &seed);
    float *y = aligned_floats(yn);
    double best = -1.0;
    best_name[0] = '\0';
    int count = convfind_algorithm_count();
    for (int pass = 0; pass < 2 && best < 0.0; pass++) {
        for (int i = 0; i < count; i++) {
            const char *name = convfind_algorithm_name(i);
            /* The reference only when no fast algorithm applies (second pass). */
            if ((strcmp(name, "cpu.reference") == 0) != (pass == 1))
                continue;
            if (strncmp(name, "cpu.", 4) != 0 || listed(exclude, name))
                continue;
            convfind_plan *plan = NULL;
            if (convfind_plan_create_with_algorithm(ctx, prob, name, &plan) != CONVFIND_OK)
                continue;
            convfind_packed_weights *pw = NULL;
            convfind_packed_weights_create(plan, w, &pw);
            cf_run run = {plan, {.x = x, .w = w, .y = y, .packed_w = pw}};
            /* One probe run first: clearly slower candidates are not timed in full. */
            double probe = bench_median_ms(cf_once, &run, 1, 0.0);
            double ms = probe;
            if (probe >= 0.0 && (best < 0.0 || probe < 3.0 * best))
                ms = bench_median_ms(cf_once, &run, 10, min_seconds);
            if (ms >= 0.0 && (best < 0.0 || ms < best)) {
                best = ms;
                snprintf(best_name, best_size, "%s", name);
            }
            convfind_packed_weights_destroy(pw);
            convfind_plan_destroy(plan);
        }
    }
    free(x);
    free(w);
    free(y);
    convfind_problem_destroy(prob);
    return best;
}

/* The plan Find decides for the layer, timed: its median ms and algorithm name. */
static double time_convfind_find(convfind_context *ctx, const bench_layer *L, double min_seconds,
                                 char *name_out, size_t name_size)
{
    convfind_problem *prob = make_problem(L);
    if (!prob)
        return -1.0;
    size_t xn, wn, yn;
    convfind_problem_sizes(prob, &xn, &wn, &yn, NULL);
    unsigned seed = 777u;
    float *x = random_floats(xn, &seed), *w = random_floats(wn, &seed);
    float *y = aligned_floats(yn);
    double ms = -1.0;
    int count = 0;
    convfind_plan *plan = NULL;
    name_out[0] = '\0';
    if (convfind_find(ctx, prob, NULL, 0, &count) != CONVFIND_OK ||
        convfind_plan_create(ctx, prob, &plan) != CONVFIND_OK) {
        fprintf(stderr, "bench_cpu: %s: Find: %s\n", L->name, convfind_last_error());
    } else {
        snprintf(name_out, name_size, "%s", convfind_plan_algorithm(plan));
        convfind_packed_weights *pw = NULL;
        convfind_packed_weights_create(plan, w, &pw);
        cf_run run = {plan, {.x = x, .w = w, .y = y, .packed_w = pw}};
        ms = bench_median_ms(cf_once, &run, 10, min_seconds);
        convfind_packed_weights_destroy(pw);
    }
    convfind_plan_destroy(plan);
    free(x);
    free(w);
    free(y);
    convfind_problem_destroy(prob);
    return ms;
}

int main(int argc, char **argv)
{
    const char *csv = NULL, *ort = NULL, *onednn = NULL, *suite = NULL, *exclude = NULL,
               *select = "find";
    int threads = 2, onednn_only = 0;
    double min_seconds = 0.2;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--ort") == 0 && i + 1 < argc)
            ort = argv[++i];
        else if (strcmp(argv[i], "--onednn") == 0 && i + 1 < argc)
            onednn = argv[++i];
        else if (strcmp(argv[i], "--onednn-only") == 0)
            onednn_only = 1;
        else if (strcmp(argv[i], "--suite") == 0 && i + 1 < argc)
            suite = argv[++i];
        else if (strcmp(argv[i], "--select") == 0 && i + 1 < argc)
            select = argv[++i];
        else if (strcmp(argv[i], "--exclude") == 0 && i + 1 < argc)
            exclude = argv[++i];
        else if (strcmp(argv[i], "--min-seconds") == 0 && i + 1 < argc)
            min_seconds = atof(argv[++i]);
        else
            csv = argv[i];
    }
    int use_find = strcmp(select, "find") == 0;
    if (!csv || threads < 1 || (!use_find && strcmp(select, "measured") != 0) ||
        (!onednn_only && !onednn)) {
        fprintf(stderr, "usage: bench_cpu CSV --onednn-only [--threads T] [--min-seconds S]\n"
                        "       bench_cpu CSV --onednn FILE [--threads T] [--ort FILE] "
                        "[--suite NAME] [--min-seconds S] [--select find|measured] "
                        "[--exclude ALGO[,ALGO...]]\n");
        return 2;
    }
    static bench_layer layers[MAX_LAYERS];
    int nl = parse_csv(csv, layers, MAX_LAYERS);
    if (nl <= 0)
        return 1;
    if (onednn_only) {
        const char *omp = getenv("OMP_NUM_THREADS");
        if (!omp || atoi(omp) != threads)
            fprintf(stderr, "bench_cpu: warning: OMP_NUM_THREADS=%s, oneDNN may not use %d "
                            "threads (bench/cpu.sh sets it)\n", omp ? omp : "(unset)", threads);
        for (int i = 0; i < nl; i++) {
            char impl[64];
            double ms = onednn_best_ms(&layers[i], min_seconds, impl, sizeof impl);
            printf("%s,%.6f,%s\n", layers[i].name, ms, impl);
            fflush(stdout);
        }
        return 0;
    }
    char suite_buf[128];
    if (!suite) {
        const char *base = strrchr(csv, '/') ? strrchr(csv, '/') + 1 : csv;
        snprintf(suite_buf, sizeof suite_buf, "%s", base);
        char *cut = strstr(suite_buf, "_convs");
        if (!cut)
            cut = strstr(suite_buf, ".csv");
        if (cut)
            *cut = '\0';
        suite = suite_buf;
    }
    int wide = cf_isa_machine() >= CF_ISA_AVX512F;
    double peak = fma_peak_gflops(threads, wide);
    printf("# suite %s, %d threads, cpu \"%s\", convfind ISA %s\n", suite, threads, cf_cpu_name(),
           cf_isa_name(cf_isa_active()));
    printf("# FMA peak measured now: %.1f GFLOP/s on %d threads (%d-bit FMAs)\n", peak, threads,
           wide ? 512 : 256);
    if (use_find)
        printf("# convfind: the algorithm Find chose (empty temporary find-db), its plan "
               "timed here, NCHW in/out, packed weights reused\n");
    else
        printf("# convfind: fastest registered CPU algorithm timed here per layer "
               "(not Find's decision), NCHW in/out, packed weights reused%s%s\n",
               exclude ? "; excluded: " : "", exclude ? exclude : "");
    printf("# oneDNN: faster of direct and auto (Winograd allowed), its own layouts, "
           "reorders not timed\n");
    printf("layer,count,gflop,convfind_ms,convfind_algo,onednn_ms,onednn_impl,ort_ms,"
           "cf_vs_onednn,cf_vs_ort,cf_pct_peak,onednn_pct_peak\n");

    convfind_context_options opt;
    convfind_context_options_init(&opt);
    opt.num_threads = threads;
    opt.find_policy = CONVFIND_FIND_HEURISTIC;
    /* Find's decisions go to a database of this run only, so every layer is measured. */
    char db_dir[] = "/tmp/convfind-bench-XXXXXX", db_path[64] = "";
    if (use_find) {
        if (!mkdtemp(db_dir)) {
            fprintf(stderr, "bench_cpu: cannot create a temporary directory\n");
            return 1;
        }
        snprintf(db_path, sizeof db_path, "%s/find.db", db_dir);
        opt.db_path = db_path;
    }
    convfind_context *ctx = NULL;
    if (convfind_context_create(&opt, &ctx) != CONVFIND_OK) {
        fprintf(stderr, "bench_cpu: context: %s\n", convfind_last_error());
        return 1;
    }
    double tot_cf = 0, tot_dn = 0, tot_ort = 0;
    int missing_ort = 0;
    for (int i = 0; i < nl; i++) {
        const bench_layer *L = &layers[i];
        int64_t oh = (L->h + 2 * L->pad_h - ((L->r - 1) * L->dil_h + 1)) / L->stride_h + 1;
        int64_t ow = (L->w + 2 * L->pad_w - ((L->s - 1) * L->dil_w + 1)) / L->stride_w + 1;
        double gflop = 2.0 * (double)(L->n * L->k * oh * ow) * (double)(L->c / L->group) *
                       (double)(L->r * L->s) * 1e-9;
        char algo[64], impl[64], unused[8];
        double cf = use_find ? time_convfind_find(ctx, L, min_seconds, algo, sizeof algo)
                             : time_convfind(ctx, L, min_seconds, exclude, algo, sizeof algo);
        double dn = peer_ms_of(onednn, L->name, impl, sizeof impl);
        double ortms = peer_ms_of(ort, L->name, unused, sizeof unused);
        if (ortms < 0.0)
            missing_ort++;
        printf("%s,%d,%.4f,%.4f,%s,%.4f,%s,%.4f,%.3f,%.3f,%.1f,%.1f\n", L->name, L->count, gflop,
               cf, algo, dn, impl, ortms, dn > 0 ? cf / dn : NAN, ortms > 0 ? cf / ortms : NAN,
               peak > 0 && cf > 0 ? 100.0 * gflop / (cf * 1e-3) / peak : NAN,
               peak > 0 && dn > 0 ? 100.0 * gflop / (dn * 1e-3) / peak : NAN);
        fflush(stdout);
        tot_cf += L->count * cf;
        tot_dn += L->count * dn;
        tot_ort += L->count * ortms;
    }
    convfind_context_destroy(ctx);
    if (use_find) {
        /* The database and whatever journal files SQLite left next to it. */
        static const char *const suffixes[] = {"", "-wal", "-shm", "-journal"};
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            char f[96];
            snprintf(f, sizeof f, "%s%s", db_path, suffixes[i]);
            unlink(f);
        }
        rmdir(db_dir);
    }
    printf("# totals weighted by count: convfind/oneDNN %.3f, convfind/ORT %.3f%s\n",
           tot_cf / tot_dn, tot_cf / tot_ort,
           missing_ort ? " (ORT missing for some layers: its total is not valid)" : "");
    printf("%s total_ms convfind=%.3f onednn=%.3f onnxruntime=%.3f\n", suite, tot_cf, tot_dn,
           missing_ort ? NAN : tot_ort);
    return 0;
}
