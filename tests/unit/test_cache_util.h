/*
 * test_cache_util.h - helpers shared by the Find and decision-cache tests: small
 * problems, deterministic tensors, the expected output from the reference, and fake
 * algorithms for the host backend's list (algo/registry.h, cf_algos_override) that need workspace, are wrong, or
 * delegate to the reference under another name.
 */
#ifndef CONVFIND_TEST_CACHE_UTIL_H
#define CONVFIND_TEST_CACHE_UTIL_H

#include <stddef.h>

#include "algo/algo.h"
#include "convfind.h"

/* A 2-D f32 NCHW Conv with bias and ReLU: n x c x h x w input, m x c/g x k x k weights,
 * stride 1, pad k/2.  Aborts the test on failure. */
convfind_problem *tu_conv2d(int64_t n, int64_t c, int64_t h, int64_t w, int64_t m, int64_t k,
                            int64_t group);

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
extern const cf_algo cf_algo_cpu_reference;

#endif /* CONVFIND_TEST_CACHE_UTIL_H */
