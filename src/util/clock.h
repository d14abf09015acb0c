/*
 * clock.h - the monotonic clock in seconds, for the library's own timing (Find's samples
 * and budget, the CPU's FMA probe).  Thread-safe.
 */
#ifndef CONVFIND_UTIL_CLOCK_H
#define CONVFIND_UTIL_CLOCK_H

#include <time.h>

/* Seconds on CLOCK_MONOTONIC: only differences between two readings mean anything. */
static inline double cf_now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

#endif /* CONVFIND_UTIL_CLOCK_H */
