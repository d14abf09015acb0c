/*
 * bench_firstpass.c - what the find database buys at process start: the time from a
 * fresh process to the first execution of every ResNet-50 layer, against the time of
 * the same pass once everything is warm (steady state).
 *
 *   bench_firstpass [--layers data/resnet50_convs.csv] [--threads N] [--budget-ms MS]
 *
 * Three fresh processes (this program re-executed), in this order, sharing one new
 * database file:
 *   cold       EXHAUSTIVE: every layer is measured (Find) and stored;
 *   warm       HYBRID: every decision comes from the database the cold run wrote;
 *   heuristic  HEURISTIC: nothing measured, nothing stored.
 * Each prints: the first pass (context creation, then per layer in network order:
 * problem and plan -- the decision -- and `count` executions), with the context
 * creation and the decisions broken out; the steady-state pass (median of at least 5
 * passes and 1 s over the same plans, after 3 warm-up passes); their ratio; and the
 * Finds and database hits.  The target for the warm process is a ratio within 1.2.
 * All tensors are filled before the clock starts: they are the application's.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "bench_timing.h"
#include "convfind.h"
#include "layers.h"

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct layer_run {
    convfind_problem *problem;
    convfind_plan *plan;
    float *x, *w, *b, *y; /* b: NULL unless the row has a bias */
    int64_t count;
} layer_run;

typedef struct net {
    layer_run *l;
    size_t n;
} net;

static float *filled(size_t n, unsigned seed)
{
    float *v = malloc((n ? n : 1) * sizeof *v);
    for (size_t i = 0; v && i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        v[i] = (float)((seed >> 8) & 0xffff) / 32768.0f - 1.0f;
    }
    return v;
}

static int execute_layer(const layer_run *r)
{
    convfind_tensors t = {r->x, r->w, r->b, NULL, r->y};
    for (int64_t k = 0; k < r->count; k++)
        if (convfind_execute(r->plan, &t) != CONVFIND_OK)
            return 1;
    return 0;
}

static int steady_pass(void *arg)
{
    const net *nt = arg;
    for (size_t i = 0; i < nt->n; i++)
        if (execute_layer(&nt->l[i]) != 0)
            return 1;
    return 0;
}

static int child(const char *mode, const char *db, const char *csv, int threads, int budget_ms)
{
    cli_layer *rows = NULL;
    size_t nrows = 0;
    char err[256];
    if (cli_layers_read(csv, &rows, &nrows, err, sizeof err) != 0) {
        fprintf(stderr, "bench_firstpass: %s: %s\n", csv, err);
        return 1;
    }
    net nt = {calloc(nrows, sizeof(layer_run)), nrows};
    for (size_t i = 0; nt.l && i < nrows; i++) {
        convfind_conv_desc d;
        cli_layer_desc(&rows[i], &d);
        size_t xs, ws, ys, bs;
        if (convfind_problem_create(&d, &nt.l[i].problem) != CONVFIND_OK ||
            convfind_problem_sizes(nt.l[i].problem, &xs, &ws, &ys, &bs) != CONVFIND_OK) {
            fprintf(stderr, "bench_firstpass: %s: %s\n", rows[i].name, convfind_last_error());
            return 1;
        }
        /* The problem is described again inside the timed pass; this one only sizes
         * the application's buffers. */
        convfind_problem_destroy(nt.l[i].problem);
        nt.l[i].problem = NULL;
        nt.l[i].x = filled(xs, 1u + (unsigned)i);
        nt.l[i].w = filled(ws, 7u + (unsigned)i);
        nt.l[i].b = bs ? filled(bs, 13u + (unsigned)i) : NULL;
        nt.l[i].y = filled(ys, 0); /* touched too: page faults are not convfind's cost */
        nt.l[i].count = rows[i].count;
    }

    convfind_context_options o;
    convfind_context_options_init(&o);
    o.num_threads = threads;
    o.db_path = db;
    o.find_time_budget_s = budget_ms / 1000.0;
    o.find_policy = strcmp(mode, "cold") == 0   ? CONVFIND_FIND_EXHAUSTIVE
                    : strcmp(mode, "warm") == 0 ? CONVFIND_FIND_HYBRID
                                                : CONVFIND_FIND_HEURISTIC;
    if (strcmp(mode, "heuristic") == 0)
        o.db_path = ":memory:";

    double t0 = now_s();
    convfind_context *ctx = NULL;
    int rc = convfind_context_create(&o, &ctx) != CONVFIND_OK;
    double context_s = now_s() - t0, decide_s = 0;
    int db_hits = 0;
    for (size_t i = 0; !rc && i < nt.n; i++) {
        convfind_conv_desc d;
        cli_layer_desc(&rows[i], &d);
        convfind_plan_info info;
        double t1 = now_s();
        rc = convfind_problem_create(&d, &nt.l[i].problem) != CONVFIND_OK ||
             convfind_plan_create(ctx, nt.l[i].problem, &nt.l[i].plan) != CONVFIND_OK ||
             convfind_plan_get_info(nt.l[i].plan, &info) != CONVFIND_OK;
        decide_s += now_s() - t1;
        rc = rc || execute_layer(&nt.l[i]) != 0;
        db_hits += !rc && info.source == CONVFIND_SOURCE_STORED;
    }
    double first = now_s() - t0;
    if (rc) {
        fprintf(stderr, "bench_firstpass %s: %s\n", mode, convfind_last_error());
        return 1;
    }
    double steady_ms = bench_median_ms(steady_pass, &nt, 3, 5, 1.0);
    convfind_context_stats st = {.struct_size = sizeof st};
    convfind_context_stats_get(ctx, &st);
    double ratio = first / (steady_ms / 1000.0);
    printf("%-9s first_pass_s=%.3f (context %.3f, decisions %.3f) steady_pass_s=%.3f "
           "ratio=%.2f finds=%llu db_hits=%d%s\n",
           mode, first, context_s, decide_s, steady_ms / 1000.0, ratio,
           (unsigned long long)st.finds, db_hits,
           strcmp(mode, "warm") == 0 ? (ratio <= 1.2 ? "  (target <= 1.2: met)"
                                                     : "  (target <= 1.2: missed)")
                                     : "");
    fflush(stdout);
    for (size_t i = 0; i < nt.n; i++) {
        convfind_plan_destroy(nt.l[i].plan);
        convfind_problem_destroy(nt.l[i].problem);
        free(nt.l[i].x);
        free(nt.l[i].w);
        free(nt.l[i].b);
        free(nt.l[i].y);
    }
    convfind_context_destroy(ctx);
    free(nt.l);
    free(rows);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc == 7 && strcmp(argv[1], "--child") == 0)
        return child(argv[2], argv[3], argv[4], atoi(argv[5]), atoi(argv[6]));
    const char *csv = "data/resnet50_convs.csv";
    int threads = 0, budget_ms = 1000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--layers") == 0 && i + 1 < argc)
            csv = argv[++i];
        else if (strcmp(argv[i], "--threads") == 0 && i + 1 < argc)
            threads = atoi(argv[++i]);
        else if (strcmp(argv[i], "--budget-ms") == 0 && i + 1 < argc)
            budget_ms = atoi(argv[++i]);
        else {
            fprintf(stderr, "usage: bench_firstpass [--layers CSV] [--threads N] "
                            "[--budget-ms MS]\n");
            return 2;
        }
    }
    if (threads < 0 || budget_ms < 1) {
        fprintf(stderr, "bench_firstpass: --threads must be >= 0 and --budget-ms >= 1\n");
        return 2;
    }
    char dir[] = "/tmp/convfind-firstpass-XXXXXX", db[64], th[16], bud[16];
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    snprintf(db, sizeof db, "%s/finddb.sqlite", dir);
    snprintf(th, sizeof th, "%d", threads);
    snprintf(bud, sizeof bud, "%d", budget_ms);
    printf("bench_firstpass: %s, threads %s, Find budget %d ms per problem, db %s\n", csv,
           threads ? th : "all", budget_ms, db);
    fflush(stdout);
    static const char *const modes[] = {"cold", "warm", "heuristic"};
    int rc = 0;
    for (int m = 0; m < 3 && rc == 0; m++) {
        pid_t pid = fork();
        if (pid == 0) {
            char *args[] = {argv[0], "--child", (char *)modes[m], db, (char *)csv, th, bud,
                            NULL};
            execv("/proc/self/exe", args);
            _exit(127);
        }
        int status = 0;
        rc = pid < 0 || waitpid(pid, &status, 0) != pid || !WIFEXITED(status) ||
             WEXITSTATUS(status) != 0;
    }
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench_firstpass: could not remove %s\n", dir);
    return rc;
}
