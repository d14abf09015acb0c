/*
 * backend.c - the CPU backend's table (algo/backend.h): linked into the library and
 * registered by its symbol, cf_backend_cpu (algo/registry.c).
 *
 * Its per-context state is the thread count one execution uses, which is part of the
 * fingerprint with the CPU's name and the ISA level the kernels use now (isa.h): both
 * can change which algorithm is fastest (DESIGN.md non-negotiable 1).  The level is the
 * process's: a context's CONVFIND_ISA lowers it only when that context is the process's
 * first CPU context (cf_isa_settle).
 */
#include <stdlib.h>
#include <string.h>

#include "algo/backend.h"
#include "cpu/find.h"
#include "cpu/isa.h"
#include "cpu/registry.h"
#include "util/error.h"

typedef struct cpu_state {
    int threads;
} cpu_state;

static convfind_status cpu_open(const cf_backend_config *config, cf_backend_state **out)
{
    cpu_state *s = malloc(sizeof *s);
    if (!s) {
        *out = NULL;
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate the CPU backend's state");
    }
    s->threads = config->threads;
    if (config->env)
        cf_isa_settle(config->env->isa, config->env->log);
    *out = (cf_backend_state *)s;
    return CONVFIND_OK;
}

static void cpu_close(cf_backend_state *s)
{
    free(s);
}

static void cpu_fingerprint(const cf_backend_state *s, cf_fingerprint *fp)
{
    memset(fp, 0, sizeof *fp);
    cf_fingerprint_text(fp->cpu, sizeof fp->cpu, cf_cpu_name());
    cf_fingerprint_text(fp->isa, sizeof fp->isa, cf_isa_name(cf_isa_active()));
    fp->threads = ((const cpu_state *)s)->threads;
}

static convfind_status cpu_weights_copy(const cf_backend_state *s, const void *w, size_t bytes,
                                        void **copy)
{
    (void)s;
    size_t rounded = (bytes + 63) & ~(size_t)63;
    *copy = rounded >= bytes ? aligned_alloc(64, rounded ? rounded : 64) : NULL;
    if (!*copy)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %zu bytes for constant "
                       "weights", bytes);
    memcpy(*copy, w, bytes);
    return CONVFIND_OK;
}

static void cpu_weights_free(const cf_backend_state *s, void *copy)
{
    (void)s;
    free(copy);
}

const cf_backend cf_backend_cpu = {
    .abi = CF_BACKEND_ABI,
    .name = "cpu",
    .device_memory = false,
    .open = cpu_open,
    .close = cpu_close,
    .fingerprint = cpu_fingerprint,
    .weights_copy = cpu_weights_copy,
    .weights_free = cpu_weights_free,
    .algorithms = cf_cpu_algorithms,
    .reference = &cf_algo_cpu_reference,
    .find = &cf_cpu_find_hooks,
};
