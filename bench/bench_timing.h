/*
 * bench_timing.h - the benchmark's one timing protocol, shared by every contender so
 * that they are measured the same way: warm-up runs, then repeats until both a count
 * and a time budget are reached, ranked by the median.
 */
#ifndef CONVFIND_BENCH_TIMING_H
#define CONVFIND_BENCH_TIMING_H

/* Runs fn(arg) `warmups` times untimed, then at least min_reps times and for at least
 * min_seconds (at most 1000 times), and returns the median milliseconds; negative
 * when fn returns nonzero. */
double bench_median_ms(int (*fn)(void *arg), void *arg, int warmups, int min_reps,
                       double min_seconds);

#endif /* CONVFIND_BENCH_TIMING_H */
