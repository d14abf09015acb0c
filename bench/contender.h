/*
 * contender.h - what one benchmark contender (convfind, oneDNN 2.x, oneDNN 3.x) provides
 * to worker_main.c, which turns it into a worker process that the driver
 * (bench/cpu_driver.py) asks, one request at a time, to prepare and time layers.  One
 * contender per executable, so each peer's threading runtime lives in its own process.
 */
#ifndef CONVFIND_BENCH_CONTENDER_H
#define CONVFIND_BENCH_CONTENDER_H

#include <stddef.h>
#include <stdio.h>

#include "bench_problem.h"

typedef struct contender_options {
    int threads;
    double find_budget_s;     /* convfind: Find's time budget per problem; 0: library default */
    int channels_last;        /* convfind: X and Y NHWC (NWC, NDHWC); 0: NCHW */
} contender_options;

/* The contender's name as the report prints it ("onednn-3.2"). */
const char *contender_name(void);

/* Sets up process-wide state; writes a one-line description of how the contender is run
 * (layouts, algorithms allowed, threads) into settings.  0 on success. */
int contender_init(const contender_options *opt, char *settings, size_t size);

/* How many ways the contender can run a layer (oneDNN: direct and auto); the worker
 * times each briefly at preparation and keeps the fastest, so a peer runs at its best. */
int contender_variants(void);

/* Everything one layer needs, made outside any timing: primitives or plans, packed
 * weights, tensors filled with values in [-1, 1) in the contender's own layouts.  NULL
 * when the contender cannot run it, with the reason in info; otherwise info names the
 * implementation chosen. */
void *contender_prepare(const bench_problem *p, int variant, char *info, size_t size);

/* One execution of a prepared layer, complete when it returns; nonzero on failure. */
int contender_run(void *state);

void contender_release(void *state);

/* A request worker_main.c does not know ("find", "algos", "peak"): answers it on out and
 * returns 1, or returns 0 when the contender does not know it either. */
int contender_command(const char *verb, const char *args, FILE *out);

#endif /* CONVFIND_BENCH_CONTENDER_H */
