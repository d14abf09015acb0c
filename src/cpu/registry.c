/*
 * registry.c - the table of every algorithm compiled into this build.
 *
 * Adding an algorithm is one line here (and its own file).  Order matters only as the
 * heuristic's tie-break: earlier entries are preferred among applicable ones, so the
 * specialised fast paths come first and the reference, which is always applicable and
 * is everyone's last resort, comes last.
 */
#include <string.h>

#include "algo/algo.h"

extern const cf_algo cf_algo_cpu_direct_blocked;
extern const cf_algo cf_algo_cpu_depthwise;
extern const cf_algo cf_algo_cpu_depthwise_3x3;
extern const cf_algo cf_algo_cpu_winograd_f6x3;
extern const cf_algo cf_algo_cpu_winograd_f4x3;
extern const cf_algo cf_algo_cpu_winograd_f2x3;
extern const cf_algo cf_algo_cpu_gemm_1x1;
extern const cf_algo cf_algo_cpu_direct_small_c;
extern const cf_algo cf_algo_cpu_im2col_gemm;
extern const cf_algo cf_algo_cpu_convtranspose_gemm;
extern const cf_algo cf_algo_cpu_convtranspose_subpixel;
extern const cf_algo cf_algo_cpu_reference;
#ifdef CONVFIND_HAVE_CUDA
extern const cf_algo cf_algo_cuda_cudnn;
extern const cf_algo cf_algo_cuda_direct;
#endif

static const cf_algo *const registry[] = {
    &cf_algo_cpu_gemm_1x1,
    &cf_algo_cpu_depthwise_3x3, /* before cpu.depthwise: faster on nearly every 3x3 layer */
    &cf_algo_cpu_depthwise,
    &cf_algo_cpu_direct_blocked,
    &cf_algo_cpu_winograd_f4x3,
    &cf_algo_cpu_winograd_f2x3,
    &cf_algo_cpu_winograd_f6x3, /* reduced-precision problems only */
    &cf_algo_cpu_direct_small_c,
    &cf_algo_cpu_im2col_gemm,
    &cf_algo_cpu_convtranspose_subpixel,
    &cf_algo_cpu_convtranspose_gemm,
#ifdef CONVFIND_HAVE_CUDA
    &cf_algo_cuda_cudnn,  /* CUDA contexts only (backend field); CPU Find skips them */
    &cf_algo_cuda_direct,
#endif
    &cf_algo_cpu_reference,
};

const cf_algo *const *cf_registry(int *count)
{
    *count = (int)(sizeof registry / sizeof registry[0]);
    return registry;
}

bool cf_algo_matches(const cf_algo *algo, const char *name)
{
    size_t len = strlen(algo->name);
    return strncmp(algo->name, name, len) == 0 &&
           (name[len] == '\0' || (name[len] == ':' && algo->variants));
}

const cf_algo *cf_registry_find(const char *name)
{
    int n;
    const cf_algo *const *all = cf_registry(&n);
    for (int i = 0; name && i < n; i++)
        if (cf_algo_matches(all[i], name))
            return all[i];
    return NULL;
}

convfind_status cf_algo_prepare(const cf_algo *algo, const cf_problem *p, const char *name,
                                void **state)
{
    *state = NULL;
    if (algo->prepare_named)
        return algo->prepare_named(p, name, state);
    return algo->prepare ? algo->prepare(p, state) : CONVFIND_OK;
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
