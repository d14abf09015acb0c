/*
 * decide.c - one problem's decision through an ordinary plan creation, and the table
 * that prints a list of them (decide.h).
 */
#define _POSIX_C_SOURCE 200809L /* clock_gettime */

#include "decide.h"

#include <stdio.h>
#include <time.h>

#include "ctx_private.h"

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

void cli_decide(convfind_context *ctx, const convfind_conv_desc *desc, cli_decision *out,
                convfind_plan **plan)
{
    double t0 = now_s();
    convfind_problem *p = NULL;
    convfind_plan *made = NULL;
    out->status = convfind_problem_create(desc, &p);
    if (out->status == CONVFIND_OK)
        out->status = convfind_plan_create(ctx, p, &made);
    convfind_plan_info info;
    if (out->status == CONVFIND_OK)
        out->status = convfind_plan_get_info(made, &info);
    out->seconds = now_s() - t0;
    out->error[0] = '\0';
    if (out->status != CONVFIND_OK)
        snprintf(out->error, sizeof out->error, "%s", convfind_last_error());
    if (out->status == CONVFIND_OK) {
        snprintf(out->algo, sizeof out->algo, "%s", info.algorithm);
        out->source = info.source;
        out->median_ms = cli_ctx_stored_median(ctx, info.key, info.algorithm);
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
