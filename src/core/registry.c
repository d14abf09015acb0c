/*
 * registry.c - the table of every algorithm compiled into this build.
 *
 * Adding an algorithm is one line here (and its own file).  Order matters only as the
 * heuristic's tie-break: earlier entries are preferred among applicable ones, so the
 * specialised fast paths come first and the reference, which is always applicable and
 * is everyone's last resort, comes last.
 */
#include <string.h>

#include "core/algo.h"

extern const cf_algo cf_algo_cpu_direct_blocked;
extern const cf_algo cf_algo_cpu_depthwise;
extern const cf_algo cf_algo_cpu_winograd_f4x3;
extern const cf_algo cf_algo_cpu_winograd_f2x3;
extern const cf_algo cf_algo_cpu_gemm_1x1;
extern const cf_algo cf_algo_cpu_im2col_gemm;
extern const cf_algo cf_algo_cpu_convtranspose_gemm;
extern const cf_algo cf_algo_cpu_reference;

static const cf_algo *const registry[] = {
    &cf_algo_cpu_gemm_1x1,
    &cf_algo_cpu_depthwise,
    &cf_algo_cpu_direct_blocked,
    &cf_algo_cpu_winograd_f4x3,
    &cf_algo_cpu_winograd_f2x3,
    &cf_algo_cpu_im2col_gemm,
    &cf_algo_cpu_convtranspose_gemm,
    &cf_algo_cpu_reference,
};

const cf_algo *const *cf_registry(int *count)
{
    *count = (int)(sizeof registry / sizeof registry[0]);
    return registry;
}

const cf_algo *cf_registry_find(const char *name)
{
    int n;
    const cf_algo *const *all = cf_registry(&n);
    for (int i = 0; name && i < n; i++)
        if (strcmp(all[i]->name, name) == 0)
            return all[i];
    return NULL;
}

int convfind_algorithm_count(void)
{
    int n;
    cf_registry(&n);
    return n;
}

const char *convfind_algorithm_name(int index)
{
    int n;
    const cf_algo *const *all = cf_registry(&n);
    return index >= 0 && index < n ? all[index]->name : NULL;
}
