/*
 * worker_main.c - a benchmark worker: one contender (contender.h) behind a line protocol
 * on stdin/stdout, driven by bench/cpu_driver.py, which interleaves the contenders layer
 * by layer (docs/benchmarks.md).
 *
 *   bench_worker_X --threads T [--warmups W] [--min-reps R] [--min-ms MS] [--find-budget S]
 *
 * Requests and answers, one line each:
 *   prep ID PROBLEM  -> "ok ID INFO" | "na ID REASON"   (PROBLEM: the wire line)
 *   time ID          -> "ms ID MEDIAN_MS"  (W warm-up runs, then >= R runs and >= MS ms)
 *   drop ID          -> "dropped ID"
 *   quit (or EOF)    -> exits
 * anything else goes to contender_command().  The first line written is
 * "ready NAME<TAB>SETTINGS".  A program, not a test: nothing here asserts a timing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bench_timing.h"
#include "contender.h"

#define MAX_LAYERS 4096

typedef struct worker {
    void *state[MAX_LAYERS];
    int warmups, min_reps;
    double min_seconds;
} worker;

static int run_state(void *state)
{
    return contender_run(state);
}

/* Prepares every variant, keeps the fastest in a short timing, answers. */
static void prepare(worker *wk, int id, const char *text)
{
    char info[320] = "", err[256];
    bench_problem p;
    if (bench_problem_parse(text, &p, err, sizeof err) != 0) {
        printf("na %d %s\n", id, err);
        return;
    }
    contender_release(wk->state[id]);
    wk->state[id] = NULL;
    double best_ms = -1.0;
    int variants = contender_variants();
    for (int v = 0; v < variants; v++) {
        char vinfo[256];
        void *s = contender_prepare(&p, v, vinfo, sizeof vinfo);
        if (!s) {
            if (!wk->state[id])
                snprintf(info, sizeof info, "%s", vinfo);
            continue;
        }
        double ms = variants > 1 ? bench_median_ms(run_state, s, 2, 5, 0.02) : 0.0;
        if (ms < 0.0) {
            snprintf(info, sizeof info, "%s: execution failed", vinfo);
            contender_release(s);
        } else if (!wk->state[id] || ms < best_ms) {
            contender_release(wk->state[id]);
            wk->state[id] = s;
            best_ms = ms;
            snprintf(info, sizeof info, "%s", vinfo);
        } else {
            contender_release(s);
        }
    }
    printf("%s %d %s\n", wk->state[id] ? "ok" : "na", id, info[0] ? info : "-");
}

static void serve(worker *wk)
{
    char line[2048];
    while (fgets(line, sizeof line, stdin)) {
        line[strcspn(line, "\r\n")] = '\0';
        char verb[32] = "";
        int id = -1, used = 0;
        sscanf(line, "%31s%n", verb, &used);
        const char *rest = line + used;
        while (*rest == ' ')
            rest++;
        if (strcmp(verb, "quit") == 0)
            break;
        int has_id = sscanf(rest, "%d%n", &id, &used) == 1 && id >= 0 && id < MAX_LAYERS;
        const char *after_id = has_id ? rest + used : rest;
        if (strcmp(verb, "prep") == 0 && has_id) {
            prepare(wk, id, after_id);
        } else if (strcmp(verb, "time") == 0 && has_id) {
            if (wk->state[id])
                printf("ms %d %.6f\n", id, bench_median_ms(run_state, wk->state[id],
                                                            wk->warmups, wk->min_reps,
                                                            wk->min_seconds));
            else
                printf("na %d not prepared\n", id);
        } else if (strcmp(verb, "drop") == 0 && has_id) {
            contender_release(wk->state[id]);
            wk->state[id] = NULL;
            printf("dropped %d\n", id);
        } else if (!contender_command(verb, rest, stdout)) {
            printf("error unknown or malformed request '%s'\n", line);
        }
        fflush(stdout);
    }
    for (int i = 0; i < MAX_LAYERS; i++)
        contender_release(wk->state[i]);
}

int main(int argc, char **argv)
{
    static worker wk = {.warmups = 2, .min_reps = 5, .min_seconds = 0.05};
    contender_options opt = {.threads = 2};
    int bad = argc % 2 == 0;
    for (int i = 1; !bad && i + 1 < argc; i += 2) {
        if (strcmp(argv[i], "--threads") == 0)
            opt.threads = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--warmups") == 0)
            wk.warmups = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min-reps") == 0)
            wk.min_reps = atoi(argv[i + 1]);
        else if (strcmp(argv[i], "--min-ms") == 0)
            wk.min_seconds = atof(argv[i + 1]) * 1e-3;
        else if (strcmp(argv[i], "--find-budget") == 0)
            opt.find_budget_s = atof(argv[i + 1]);
        else if (strcmp(argv[i], "--layout") == 0 && (strcmp(argv[i + 1], "nchw") == 0 ||
                                                      strcmp(argv[i + 1], "nhwc") == 0))
            opt.channels_last = strcmp(argv[i + 1], "nhwc") == 0;
        else
            bad = 1;
    }
    if (bad || opt.threads < 1 || wk.warmups < 0 || wk.min_reps < 1) {
        fprintf(stderr, "usage: %s --threads T [--warmups W] [--min-reps R] [--min-ms MS] "
                        "[--find-budget S] [--layout nchw|nhwc]\n", argv[0]);
        return 2;
    }
    char settings[1024] = "";
    if (contender_init(&opt, settings, sizeof settings) != 0) {
        fprintf(stderr, "%s: cannot start: %s\n", contender_name(), settings);
        return 1;
    }
    printf("ready %s\t%s\n", contender_name(), settings);
    fflush(stdout);
    serve(&wk);
    return 0;
}
