/*
 * bench_timing.c - the median-of-repeats timer every benchmark worker goes through.
 */
#include "bench_timing.h"

#include <stdlib.h>
#include <time.h>

#define MAX_REPS 1000

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec * 1e-6;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median_ms(int (*fn)(void *arg), void *arg, int warmups, int min_reps,
                       double min_seconds)
{
    static _Thread_local double times[MAX_REPS];
    for (int i = 0; i < warmups; i++)
        if (fn(arg) != 0)
            return -1.0;
    int reps = 0;
    double start = now_ms();
    while (reps < MAX_REPS && (reps < min_reps || now_ms() - start < min_seconds * 1e3)) {
        double t0 = now_ms();
        if (fn(arg) != 0)
            return -1.0;
        times[reps++] = now_ms() - t0;
    }
    qsort(times, (size_t)reps, sizeof times[0], cmp_double);
    return reps % 2 ? times[reps / 2] : 0.5 * (times[reps / 2 - 1] + times[reps / 2]);
}
