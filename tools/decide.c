/*
 * decide.c - one problem's decision through an ordinary plan creation, and the table
 * that prints a list of them (decide.h).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "decide.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

const char *cli_source_name(convfind_decision_source source)
{
    switch (source) {
    case CONVFIND_SOURCE_MEASURED: return "measured";
    case CONVFIND_SOURCE_STORED: return "stored";
    case CONVFIND_SOURCE_FORCED: return "forced";
    case CONVFIND_SOURCE_HEURISTIC: break;
    }
    return "heuristic";
}

/* What stored_median looks for, and what it found. */
typedef struct median_arg {
    const char *algo;
    double ms;
} median_arg;

static int find_median(void *user, const convfind_db_record *r)
{
    median_arg *m = user;
    if (strcmp(r->tier, "user") != 0 || !r->current_environment)
        return 0;
    for (int i = 0; i < r->n_candidates; i++)
        if (strcmp(r->candidates[i].algorithm, m->algo) == 0)
            m->ms = r->candidates[i].median_ms;
    return 1;
}

/* The median of `algo` in the decision the context's database holds for `key`, measured
 * in this environment; 0 if none. */
static double stored_median(convfind_context *ctx, const char *key, const char *algo)
{
    median_arg m = {.algo = algo};
    if (convfind_db_foreach(convfind_context_db(ctx), key, find_median, &m) != CONVFIND_OK)
        return 0;
    return m.ms;
}

/* Zeros of the problem's W size as constant weights, on the device with `cuda`; the
 * buffer to free (host) in *owned.  NULL with the status in *st on failure. */
static const void *zero_weights(const convfind_problem *p, cli_cuda *cuda, void **owned,
                                convfind_status *st, char *err, size_t errsize)
{
    size_t wn;
    *owned = NULL;
    if ((*st = convfind_problem_sizes(p, NULL, &wn, NULL, NULL)) != CONVFIND_OK)
        return NULL;
    const size_t bytes = (wn ? wn : 1) * sizeof(float); /* f16/bf16 need less */
    void *host = calloc(1, bytes);
    void *dev = NULL;
    if (!host || (cuda && cli_cuda_upload(cuda, host, bytes, &dev, err, errsize) != 0)) {
        free(host);
        *st = host ? CONVFIND_ERR_BACKEND : CONVFIND_ERR_OUT_OF_MEMORY;
        if (!host)
            snprintf(err, errsize, "cannot allocate %zu bytes of weights", bytes);
        return NULL;
    }
    if (cuda) {
        free(host);
        return dev;
    }
    *owned = host;
    return host;
}

void cli_decide(convfind_context *ctx, const convfind_conv_desc *desc, bool constant,
                bool retune, cli_cuda *cuda, cli_decision *out, convfind_plan **plan)
{
    double t0 = now_s();
    convfind_problem *p = NULL;
    convfind_plan *made = NULL;
    void *owned = NULL;
    out->error[0] = '\0';
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.retune = retune;
    out->status = convfind_problem_create(desc, &p);
    if (out->status == CONVFIND_OK && constant)
        o.weights = zero_weights(p, cuda, &owned, &out->status, out->error, sizeof out->error);
    if (out->status == CONVFIND_OK)
        out->status = convfind_plan_create_ex(ctx, p, &o, &made);
    free(owned); /* the plan holds its own copy */
    convfind_plan_info info;
    if (out->status == CONVFIND_OK)
        out->status = convfind_plan_get_info(made, &info);
    out->seconds = now_s() - t0;
    if (out->status != CONVFIND_OK && !out->error[0])
        snprintf(out->error, sizeof out->error, "%s", convfind_last_error());
    if (out->status == CONVFIND_OK) {
        snprintf(out->algo, sizeof out->algo, "%s", info.algorithm);
        out->source = info.source;
        out->median_ms = stored_median(ctx, info.key, info.algorithm);
    }
    if (plan && out->status == CONVFIND_OK)
        *plan = made;
    else
        convfind_plan_destroy(made);
    convfind_problem_destroy(p);
}

void cli_decision_header(void)
{
    printf("%-36s %-28s %-10s %10s %9s\n", "problem", "algorithm", "source", "median ms",
           "seconds");
}

void cli_decision_row(const cli_decision *r)
{
    if (r->status != CONVFIND_OK) {
        printf("%-36.36s %s\n", r->name, convfind_status_name(r->status));
        return;
    }
    char med[32] = "-";
    if (r->median_ms > 0)
        snprintf(med, sizeof med, "%.4f", r->median_ms);
    printf("%-36.36s %-28.28s %-10s %10s %9.3f\n", r->name, r->algo, cli_source_name(r->source),
           med, r->seconds);
}

void cli_decision_table(const cli_decision *rows, size_t count)
{
    cli_decision_header();
    for (size_t i = 0; i < count; i++)
        cli_decision_row(&rows[i]);
}
