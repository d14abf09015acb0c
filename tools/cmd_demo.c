/*
 * cmd_demo.c - `convfind demo`: tunes a real network's convolutions into the find
 * database at its default place, prints the decisions, shows that a fresh context
 * measures nothing, and shows what the decisions buy when the network runs.
 *
 * Pass 1 plans every row of --layers FILE (default data/resnet50_convs.csv, relative to
 * the current directory, which is the repository root where the README runs it) on a
 * HYBRID context with the default database location: a layer the database knows is
 * read back, any other is measured by Find and stored.  Pass 2 plans every layer again
 * on a new context, whose only source of decisions is the database file, exactly as a
 * new process would start; its Find count comes from the context statistics.  Last,
 * every layer runs with pass 2's plans and with the plan an untuned context picks (the
 * HEURISTIC policy), and the totals weighted by each row's count are compared.
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cli_common.h"
#include "decide.h"
#include "layers.h"

#define DEMO_DEFAULT_LAYERS "data/resnet50_convs.csv"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* `db_path` NULL is the default location order, which is what the demo is about. */
static int open_context(const cli_args *o, convfind_find_policy policy, const char *db_path,
                        convfind_context **ctx)
{
    convfind_context_options opt;
    convfind_context_options_init(&opt);
    opt.num_threads = o->threads;
    opt.find_policy = policy;
    opt.db_path = db_path;
    opt.find_time_budget_s = o->budget_ms / 1000.0;
    convfind_status st = convfind_context_create(&opt, ctx);
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

/* The outcome of planning every layer once on one context. */
typedef struct pass_result {
    double seconds;      /* wall time of all plan creations */
    uint64_t finds;      /* Find runs, from the context statistics */
    double find_seconds; /* their wall time, likewise */
    size_t db_hits;      /* decisions read from the database */
} pass_result;

/* Plans every layer on `ctx`; with `plans` not NULL the plans are kept there.  With
 * `show` each decision is printed as it is made, because Find takes a while. */
static int plan_all(const cli_command *cmd, convfind_context *ctx, const cli_layer *layers,
                    size_t n, bool show, cli_decision *rows, convfind_plan **plans,
                    pass_result *r)
{
    memset(r, 0, sizeof *r);
    if (show)
        cli_decision_header();
    for (size_t i = 0; i < n; i++) {
        convfind_conv_desc desc;
        cli_layer_desc(&layers[i], &desc);
        snprintf(rows[i].name, sizeof rows[i].name, "%s", layers[i].name);
        cli_decide(ctx, &desc, true, false, NULL, &rows[i], plans ? &plans[i] : NULL);
        if (show && rows[i].status == CONVFIND_OK) {
            cli_decision_row(&rows[i]);
            fflush(stdout);
        }
        if (rows[i].status != CONVFIND_OK)
            return cli_failure(cmd, "layer %s: %s: %s", layers[i].name,
                               convfind_status_name(rows[i].status), rows[i].error);
        r->seconds += rows[i].seconds;
        r->db_hits += rows[i].source == CONVFIND_SOURCE_STORED;
    }
    convfind_context_stats stats = {.struct_size = sizeof stats};
    convfind_status st = convfind_context_stats_get(ctx, &stats);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    r->finds = stats.finds;
    r->find_seconds = stats.find_seconds;
    return CLI_EXIT_OK;
}

static void print_pass(int pass, size_t n, const pass_result *r)
{
    printf("pass %d: layers=%zu finds=%llu db_hits=%zu seconds=%.3f\n", pass, n,
           (unsigned long long)r->finds, r->db_hits, r->seconds);
}

static int pass_one(const cli_command *cmd, const cli_args *o, const cli_layer *layers,
                    size_t n, cli_decision *rows, pass_result *r)
{
    convfind_context *ctx = NULL;
    int rc = open_context(o, CONVFIND_FIND_HYBRID, NULL, &ctx);
    if (rc != CLI_EXIT_OK)
        return rc;
    convfind_db_info info = {.struct_size = sizeof info};
    convfind_status st = convfind_db_get_info(convfind_context_db(ctx), &info);
    if (st != CONVFIND_OK) {
        convfind_context_destroy(ctx);
        return cli_library_error(st);
    }
    printf("find database: %s\n", info.path);
    if (!info.persistent || info.read_only)
        printf("  (not a file: decisions last only as long as each context, so pass 2 "
               "will measure again)\n");
    printf("\npass 1: plan every layer; the database answers what it knows, Find measures "
           "the rest and stores it\n");
    rc = plan_all(cmd, ctx, layers, n, true, rows, NULL, r);
    convfind_context_destroy(ctx);
    if (rc != CLI_EXIT_OK)
        return rc;
    print_pass(1, n, r);
    if (r->finds == 0)
        printf("all %zu decisions were already in the database from an earlier run: nothing "
               "was measured (delete the file above to measure again)\n",
               n);
    else
        printf("Find measured %llu layers in %.2f s and stored the decisions\n",
               (unsigned long long)r->finds, r->find_seconds);
    return CLI_EXIT_OK;
}

static void report_pass_two(size_t n, const pass_result *p1, const pass_result *p2)
{
    print_pass(2, n, p2);
    if (p2->finds != 0) {
        printf("Find ran again for %llu layers: the database did not keep the decisions\n",
               (unsigned long long)p2->finds);
        return;
    }
    if (p1->finds != 0)
        printf("nothing was re-measured: every decision came from the database in %.3f s "
               "instead of %.2f s (%.2f s saved)\n",
               p2->seconds, p1->seconds, p1->seconds - p2->seconds);
    else
        printf("nothing was re-measured: every decision came from the database in %.3f s\n",
               p2->seconds);
}

static int compare_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median milliseconds of `repeats` executions after one untimed warm-up, which brings
 * code, weights and pages in as in steady state.  The plans hold constant weights,
 * packed once as an inference runtime does, and as Find measured the candidates. */
static convfind_status time_plan(const convfind_plan *plan, const convfind_tensors *t,
                                 int repeats, double *times, double *median_ms)
{
    convfind_status st = CONVFIND_OK;
    for (int i = -1; i < repeats && st == CONVFIND_OK; i++) {
        double start = now_s();
        st = convfind_execute(plan, t);
        if (st == CONVFIND_OK && i >= 0)
            times[i] = (now_s() - start) * 1e3;
    }
    if (st != CONVFIND_OK)
        return st;
    qsort(times, (size_t)repeats, sizeof(double), compare_double);
    *median_ms = repeats % 2 ? times[repeats / 2]
                             : 0.5 * (times[repeats / 2 - 1] + times[repeats / 2]);
    return CONVFIND_OK;
}

/* Deterministic values in [-1, 1): timings should not depend on denormals or zeros. */
static void fill(float *v, size_t n, uint32_t seed)
{
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)(seed >> 8) / 8388608.0f - 1.0f;
    }
}

typedef struct exec_row {
    char heuristic_algo[96];
    double tuned_ms, heuristic_ms;
} exec_row;

/* What run_layer allocates, released by the caller whatever path run_layer took. */
typedef struct exec_state {
    convfind_problem *problem;
    convfind_plan *heuristic;
    float *x, *w, *b, *y; /* b: NULL unless the row has a bias */
    double *times;
} exec_state;

static int run_layer(const cli_command *cmd, convfind_context *untuned, const cli_layer *layer,
                     const convfind_plan *tuned, int repeats, exec_state *s, exec_row *r)
{
    convfind_conv_desc desc;
    cli_layer_desc(layer, &desc);
    size_t xn, wn, yn, bn;
    convfind_status st = convfind_problem_create(&desc, &s->problem);
    if (st == CONVFIND_OK)
        st = convfind_problem_sizes(s->problem, &xn, &wn, &yn, &bn);
    if (st != CONVFIND_OK)
        return cli_library_error(st);
    s->x = malloc(xn * sizeof(float));
    s->w = malloc(wn * sizeof(float));
    s->y = malloc(yn * sizeof(float));
    s->b = bn ? malloc(bn * sizeof(float)) : NULL;
    s->times = malloc((size_t)repeats * sizeof(double));
    if (!s->x || !s->w || !s->y || !s->times || (bn && !s->b))
        return cli_failure(cmd, "out of memory for layer %s", layer->name);
    fill(s->x, xn, 1);
    fill(s->w, wn, 2);
    if (bn)
        fill(s->b, bn, 3);
    convfind_plan_options po;
    convfind_plan_options_init(&po);
    po.weights = s->w;
    if ((st = convfind_plan_create_ex(untuned, s->problem, &po, &s->heuristic)) != CONVFIND_OK)
        return cli_library_error(st);
    snprintf(r->heuristic_algo, sizeof r->heuristic_algo, "%s",
             convfind_plan_algorithm(s->heuristic));
    const convfind_tensors t = {.x = s->x, .b = s->b, .y = s->y};
    st = time_plan(tuned, &t, repeats, s->times, &r->tuned_ms);
    /* One algorithm is one code path: timing it twice would only show noise as a gain. */
    if (st == CONVFIND_OK && strcmp(r->heuristic_algo, convfind_plan_algorithm(tuned)) == 0)
        r->heuristic_ms = r->tuned_ms;
    else if (st == CONVFIND_OK)
        st = time_plan(s->heuristic, &t, repeats, s->times, &r->heuristic_ms);
    return st == CONVFIND_OK ? CLI_EXIT_OK : cli_library_error(st);
}

/* Runs every layer with its tuned plan and with the heuristic's, and prints both. */
static int execute_network(const cli_command *cmd, const cli_args *o,
                           const cli_layer *layers, size_t n, const cli_decision *tuned,
                           convfind_plan *const *plans)
{
    convfind_context *untuned = NULL;
    int rc = open_context(o, CONVFIND_FIND_HEURISTIC, ":memory:", &untuned);
    if (rc != CLI_EXIT_OK)
        return rc;
    printf("\nrun the network once: median of %d runs per layer with the decisions (tuned) and "
           "with the heuristic's choice (untuned)\n",
           o->repeats);
    printf("%-36s %5s %-24s %10s %-24s %10s\n", "layer", "count", "tuned", "ms", "untuned",
           "ms");
    double tuned_total = 0, heuristic_total = 0;
    long long convs = 0;
    for (size_t i = 0; i < n && rc == CLI_EXIT_OK; i++) {
        exec_state s;
        memset(&s, 0, sizeof s);
        exec_row r;
        rc = run_layer(cmd, untuned, &layers[i], plans[i], o->repeats, &s, &r);
        if (rc == CLI_EXIT_OK) {
            printf("%-36.36s %5lld %-24.24s %10.3f %-24.24s %10.3f\n", layers[i].name,
                   (long long)layers[i].count, tuned[i].algo, r.tuned_ms, r.heuristic_algo,
                   r.heuristic_ms);
            tuned_total += r.tuned_ms * (double)layers[i].count;
            heuristic_total += r.heuristic_ms * (double)layers[i].count;
            convs += layers[i].count;
        }
        free(s.times);
        free(s.x);
        free(s.w);
        free(s.b);
        free(s.y);
        convfind_plan_destroy(s.heuristic);
        convfind_problem_destroy(s.problem);
    }
    convfind_context_destroy(untuned);
    if (rc != CLI_EXIT_OK)
        return rc;
    printf("network: %zu shapes, %lld convolutions (sum of median x count): tuned %.3f ms, "
           "untuned %.3f ms\n",
           n, convs, tuned_total, heuristic_total);
    if (tuned_total <= heuristic_total)
        printf("the decisions make the network %.2fx as fast as the heuristic's choices\n",
               heuristic_total / tuned_total);
    else
        printf("the decisions were %.2fx slower than the heuristic's choices in this run: they "
               "were measured at another moment, and timings on a busy machine vary\n",
               tuned_total / heuristic_total);
    return CLI_EXIT_OK;
}

static int run_demo(const cli_command *cmd, const cli_args *o, const cli_layer *layers,
                    size_t n)
{
    long long convs = 0;
    for (size_t i = 0; i < n; i++)
        convs += layers[i].count;
    printf("convfind %s demo: tune the convolutions of %s (%zu shapes, %lld convolutions)\n",
           convfind_version_string(), o->layers, n, convs);
    cli_decision *rows = calloc(2 * n, sizeof *rows);
    convfind_plan **plans = calloc(n, sizeof *plans);
    pass_result p1, p2;
    convfind_context *ctx = NULL;
    int rc = rows && plans ? CLI_EXIT_OK : cli_failure(cmd, "out of memory for %zu layers", n);
    if (rc == CLI_EXIT_OK)
        rc = pass_one(cmd, o, layers, n, rows, &p1);
    if (rc == CLI_EXIT_OK) {
        printf("\npass 2: a new context, as a new process starts, plans every layer again\n");
        rc = open_context(o, CONVFIND_FIND_HYBRID, NULL, &ctx);
    }
    if (rc == CLI_EXIT_OK)
        rc = plan_all(cmd, ctx, layers, n, false, rows + n, plans, &p2);
    if (rc == CLI_EXIT_OK) {
        report_pass_two(n, &p1, &p2);
        rc = execute_network(cmd, o, layers, n, rows + n, plans);
    }
    for (size_t i = 0; plans && i < n; i++)
        convfind_plan_destroy(plans[i]);
    convfind_context_destroy(ctx);
    free(plans);
    free(rows);
    return rc;
}

static int demo_main(const cli_command *self, cli_args *a)
{
    if (!a->layers)
        a->layers = DEMO_DEFAULT_LAYERS;
    if (a->repeats < 1 || a->repeats > 1000)
        return cli_usage_error(self, "--repeats %d is out of range (1 to 1000)", a->repeats);
    if (a->budget_ms < 0)
        return cli_usage_error(self, "--budget-ms %d must be >= 0", a->budget_ms);
    cli_layer *layers;
    size_t count;
    char err[256];
    if (cli_layers_read(a->layers, &layers, &count, err, sizeof err) != 0)
        return cli_failure(self, "%s: %s%s", a->layers, err,
                           strcmp(a->layers, DEMO_DEFAULT_LAYERS) == 0
                               ? " (run it from the repository root or pass --layers FILE)"
                               : "");
    int rc = run_demo(self, a, layers, count);
    free(layers);
    return rc;
}

static const int demo_flags[] = {CLI_LAYERS, CLI_REPEATS, CLI_THREADS, CLI_BUDGET_MS, -1};
static const cli_section sections[] = {{"options", demo_flags}};

const cli_command cli_cmd_demo = {
    .name = "demo",
    .summary = "tune ResNet-50's convolutions into the find database, then show nothing is "
               "re-measured",
    .synopsis = "[--layers FILE] [--repeats N] [--threads N] [--budget-ms MS]",
    .description =
        "Tunes a real network's convolutions into the find database at its default place "
        "and shows that the decisions outlive the context that measured them. It has no "
        "--db option on purpose: it is about the default location ($CONVFIND_DB_PATH, else "
        "$XDG_CACHE_HOME/convfind/finddb.sqlite, else ~/.cache/convfind/finddb.sqlite), "
        "which it prints first.\n"
        "\n"
        "Pass 1 plans every row of --layers on a context with the hybrid policy: a decision "
        "the database holds is read back (stored), any other is measured by Find and stored "
        "(measured), each printed as it is decided; then `pass 1: layers=N finds=F "
        "db_hits=H seconds=S`. Pass 2 plans every layer again on a new context, whose only "
        "source of decisions is the database file, as a new process would, and prints "
        "`pass 2: ...` the same way: finds=0 shows that nothing was re-measured.\n"
        "\n"
        "Last it runs every layer with pass 2's plans and with the plan an untuned context "
        "picks (the heuristic policy), the median of --repeats runs after a warm-up each, "
        "and prints both network totals weighted by each row's count. Run it from the "
        "repository root, where data/resnet50_convs.csv is.",
    .sections = sections,
    .nsections = 1,
    .examples = "./build/tools/convfind demo\n"
                "convfind demo --layers data/mobilenetv2_convs.csv --budget-ms 200",
    .max_pos = 0,
    .run = demo_main,
};
