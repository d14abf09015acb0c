/*
 * find.h - the CPU backend's Find hooks (find.c) for its backend table (backend.c).
 */
#ifndef CONVFIND_CPU_FIND_H
#define CONVFIND_CPU_FIND_H

#include "algo/backend.h"

extern const cf_find_hooks cf_cpu_find_hooks;

/* The validation bound's factor for an algorithm family: a candidate passes when
 * max|y - ref| <= factor * FLT_EPSILON * (reduction length + 1) * (1 + max|ref|). */
double cf_cpu_error_factor(const char *family);

#endif /* CONVFIND_CPU_FIND_H */
