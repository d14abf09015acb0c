/*
 * algos.h - the candidate list Find, plans and fallbacks draw from.
 *
 * Normally this is the build's registry (core/algo.h).  Tests can substitute a list of
 * their own (fake algorithms that fail, are wrong, or need workspace) through
 * cf_algos_override(); it is compiled into the library but inert until a test calls it.
 */
#ifndef CONVFIND_ALGO_REGISTRY_H
#define CONVFIND_ALGO_REGISTRY_H

#include "algo/algo.h"

/* The current candidate list (the registry unless overridden).  Thread-safe. */
const cf_algo *const *cf_algos(int *count);

/* The candidate named `name` in the current list, or NULL. */
const cf_algo *cf_algos_find(const char *name);

/* Test only: replaces the list (NULL restores the registry).  `list` must outlive its
 * use and must end with the reference.  Not to be called while contexts are in use. */
void cf_algos_override(const cf_algo *const *list, int count);

/* Workspace of `algo` for `p` (0 when it declares none), or CONVFIND_ERR_OVERFLOW. */
convfind_status cf_algo_workspace(const cf_algo *algo, const cf_problem *p, size_t *bytes);

/* True when `algo` is a CPU algorithm that runs `p` with a workspace within `limit`
 * (0: unlimited); *workspace receives the bytes. */
bool cf_algo_usable(const cf_algo *algo, const cf_problem *p, size_t limit, size_t *workspace);

#endif /* CONVFIND_ALGO_REGISTRY_H */
