/*
 * registry.h - the backends of this process and their algorithm lists.
 *
 * The host backend (the CPU) is linked in; the CUDA backend is a module, loaded when
 * something first asks for it (module.h).  Contexts, Find and plans find algorithms
 * only through their own backend's list, so a name resolves to a host algorithm on a
 * CPU context and to a device algorithm on a CUDA context, never across.
 *
 * Tests can substitute the host backend's list (fake algorithms that fail, are wrong, or
 * need workspace) through cf_test_control (core/test_control.h), which sets it here with
 * cf_algos_override(): under Find and plans, because both must see the substitute.
 */
#ifndef CONVFIND_ALGO_REGISTRY_H
#define CONVFIND_ALGO_REGISTRY_H

#include "algo/backend.h"

/* The backend that runs on the host: the CPU.  Static storage. */
const cf_backend *cf_backend_host(void);

/* The backend of `device`: the host's, or the CUDA module's, loaded now from
 * `cuda_module` (CONVFIND_CUDA_MODULE of the caller's environment; NULL: the usual
 * places) unless it was (CONVFIND_ERR_UNAVAILABLE naming what is missing when it cannot
 * be; see cf_module_cuda, algo/module.h).  Thread-safe. */
convfind_status cf_backend_for(convfind_device device, const char *cuda_module,
                               const cf_backend **out);

/* Every backend this process can use, the host's first and then the CUDA module's if it
 * loads (loading it now, from `cuda_module` as above).  Writes up to `cap` into out and
 * returns how many. */
int cf_backends(const char *cuda_module, const cf_backend **out, int cap);

/* The algorithms of `b`, its reference last (for the host backend: a test's substitute
 * when one is set).  Thread-safe. */
const cf_algo *const *cf_backend_algos(const cf_backend *b, int *count);

/* The algorithm of `b` named `name`, or NULL.  A form "<name>:<parameters>" of an
 * algorithm with named forms resolves to that algorithm. */
const cf_algo *cf_backend_find(const cf_backend *b, const char *name);

/* The most candidates one decision of `b` lists (cf_backend.max_candidates). */
int cf_backend_max_candidates(const cf_backend *b);

/* The host backend's fingerprint for executions with `threads` threads under workspace
 * `limit` (0: unlimited): CPU name, the ISA level active now, threads and the limit's
 * class.  What a CPU context keys decisions by, and the find-db's environment names. */
convfind_status cf_host_fingerprint(int threads, size_t limit, cf_fingerprint *fp);

/* Replaces the host backend's list (NULL restores it); only cf_test_control calls it.
 * `list` must outlive its use and must end with the reference.  Not to be called while
 * contexts are in use. */
void cf_algos_override(const cf_algo *const *list, int count);

#endif /* CONVFIND_ALGO_REGISTRY_H */
