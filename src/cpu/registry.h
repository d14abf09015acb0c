/*
 * registry.h - the CPU backend's algorithm list and its reference (registry.c,
 * ref_conv.c), for the backend table (backend.c) and its Find hooks (find.c).
 */
#ifndef CONVFIND_CPU_REGISTRY_H
#define CONVFIND_CPU_REGISTRY_H

#include "algo/algo.h"

/* Runs every problem the library accepts: the CPU's last resort and Find's reference. */
extern const cf_algo cf_algo_cpu_reference;

/* Every CPU algorithm, the reference last.  Static storage, thread-safe. */
const cf_algo *const *cf_cpu_algorithms(int *count);

#endif /* CONVFIND_CPU_REGISTRY_H */
