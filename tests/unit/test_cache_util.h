/*
 * test_cache_util.h - helpers shared by the Find, decision-cache and API tests: small
 * problems, hermetic contexts and their statistics, deterministic tensors, the expected
 * output from the reference, and fake algorithms for the host backend's list
 * (cf_test_control, CF_TEST_ALGORITHMS) that need workspace, are wrong, pack their
 * weights, or delegate to the reference under another name.
 */
#ifndef CONVFIND_TEST_CACHE_UTIL_H
#define CONVFIND_TEST_CACHE_UTIL_H

#include <stdatomic.h>
#include <stddef.h>

#include "algo/algo.h"
#include "convfind.h"

/* A 2-D f32 NCHW Conv with bias and ReLU: n x c x h x w input, m x c/g x k x k weights,
 * stride 1, pad k/2.  Aborts the test on failure. */
convfind_problem *tu_conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k,
                            int64_t group);

/* A context for a test: `o` (NULL: the defaults) with an in-memory find-db (hermetic: no
 * decisions from earlier runs), `policy`, `threads` and a Find budget of 10 ms.  Aborts
 * the test when it cannot be created. */
convfind_context *tu_context_with(convfind_context_options *o, convfind_find_policy policy,
                                  int threads);
convfind_context *tu_context(convfind_find_policy policy, int threads);

/* The context's statistics.  Aborts the test on failure. */
convfind_context_stats tu_stats(const convfind_context *ctx);

/* Caller-side buffers of one problem, filled from `seed`, and the reference's output. */
typedef struct tu_data {
    float *x, *w, *b, *z, *y, *expect;
    size_t ny;
} tu_data;

void tu_data_init(tu_data *d, const convfind_problem *p, unsigned seed);
void tu_data_free(tu_data *d);
convfind_tensors tu_tensors(const tu_data *d, const convfind_problem *p);

/* 1 when y matches the expected output within 1e-4 * (1 + |expected|) everywhere. */
int tu_matches(const tu_data *d);

/* Fake algorithms, all applicable to every f32 problem, all correct except tu_algo_wrong:
 *   tu_algo_ws      family "direct", needs 256 bytes of workspace (checks it is writable)
 *   tu_algo_plain   family "gemm", no workspace
 *   tu_algo_wrong   family "direct", adds 1 to every output */
extern const cf_algo tu_algo_ws, tu_algo_plain, tu_algo_wrong;

/* Packing, counted: tu_pack_copy packs W as a copy of it (tu_packs), tu_free_copy frees a
 * pack (tu_frees), tu_packed_extent gives a pack's extent (tu_extents); tu_run_counted computes the reference's result, counting the run by
 * whether it got packed weights (tu_runs_packed, tu_runs_unpacked), and fails when the
 * packed weights are not a copy of the W it got (a pack made for other weights).
 * tu_algo_packs ("test.packs", family "direct") is the algorithm made of them;
 * tu_counts_reset zeroes the counters. */
extern atomic_int tu_packs, tu_frees, tu_extents, tu_runs_packed, tu_runs_unpacked;
convfind_status tu_pack_copy(const cf_problem *p, const void *state, const void *w,
                             void **packed);
void tu_free_copy(void *packed);
size_t tu_packed_extent(const cf_problem *p, const void *packed, const void **start);
convfind_status tu_run_counted(const cf_problem *p, const cf_exec_args *a);
void tu_counts_reset(void);
extern const cf_algo tu_algo_packs;
extern const cf_algo cf_algo_cpu_reference;

#endif /* CONVFIND_TEST_CACHE_UTIL_H */
