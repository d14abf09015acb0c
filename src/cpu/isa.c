/*
 * isa.c - runtime CPU feature and cache detection (libcpuinfo), and the level the
 * kernels use: the machine's, lowered by the first CPU context or a test.
 *
 * Detection runs once per process under pthread_once; afterwards every query is a plain
 * read of immutable data, plus atomic loads for the first context's level and the test
 * override.
 */
#include "cpu/isa.h"

#include <cpuinfo.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>

#include "cpu/fma_probe.h"
#include "util/error.h"

static pthread_once_t detect_once = PTHREAD_ONCE_INIT;
static cf_isa machine_level = CF_ISA_PORTABLE;
/* The machine level lowered by the first CPU context's CONVFIND_ISA; -1: no CPU context
 * yet (cf_isa_settle). */
static atomic_int settled_level = -1;
static cf_cache_sizes caches = {32 * 1024, 512 * 1024, 2 * 1024 * 1024};
static char cpu_name[96] = "unknown cpu";
static bool clflushopt;

/* -1: no cf_isa_force() in effect. */
static atomic_int forced_level = -1;

static void detect_caches(void)
{
    const struct cpuinfo_processor *proc = cpuinfo_get_processor(0);
    if (proc == NULL)
        return;
    if (proc->cache.l1d != NULL && proc->cache.l1d->size > 0)
        caches.l1d = proc->cache.l1d->size;
    if (proc->cache.l2 != NULL && proc->cache.l2->size > 0) {
        uint32_t sharing = proc->cache.l2->processor_count ? proc->cache.l2->processor_count : 1;
        caches.l2 = proc->cache.l2->size / sharing;
    }
    if (proc->cache.l3 != NULL && proc->cache.l3->size > 0) {
        uint32_t sharing = proc->cache.l3->processor_count ? proc->cache.l3->processor_count : 1;
        caches.l3 = proc->cache.l3->size / sharing;
    }
    /* A cache smaller than the level below it is a misreport (seen on some VMs);
     * keep the sizes monotonic so blocking never shrinks at a higher level. */
    if (caches.l2 < caches.l1d)
        caches.l2 = caches.l1d;
    if (caches.l3 < caches.l2)
        caches.l3 = caches.l2;
}

static void detect(void)
{
    if (cpuinfo_initialize()) {
        if (cpuinfo_has_x86_avx512f() && cpuinfo_has_x86_avx512bw() &&
            cpuinfo_has_x86_avx512dq() && cpuinfo_has_x86_avx512vl() && cpuinfo_has_x86_fma3())
            machine_level = CF_ISA_AVX512F;
        else if (cpuinfo_has_x86_avx2() && cpuinfo_has_x86_fma3())
            machine_level = CF_ISA_AVX2_FMA;
        detect_caches();
#if CPUINFO_ARCH_X86 || CPUINFO_ARCH_X86_64
        clflushopt = cpuinfo_isa.clflushopt;
#endif
        const struct cpuinfo_package *pkg = cpuinfo_get_package(0);
        if (pkg != NULL && pkg->name[0] != '\0')
            snprintf(cpu_name, sizeof cpu_name, "%s", pkg->name);
    }
}

static void ensure_detected(void)
{
    pthread_once(&detect_once, detect);
}

/* cf_cpu_fma512_full_rate: measured once; -1 in fma512_forced: not forced. */
static pthread_once_t fma512_once = PTHREAD_ONCE_INIT;
static bool fma512_full;
static atomic_int fma512_forced = -1;

/* 512-bit FMAs count as full rate from 1.5 times the multiply-adds per second of 256-bit
 * ones: the two kinds of CPU measure about 2 and about 1. */
#define FMA512_FULL_RATIO 1.5

static void probe_fma512(void)
{
#if defined(__x86_64__)
    if (cf_isa_machine() >= CF_ISA_AVX512F)
        fma512_full = cf_fma_probe_ratio() >= FMA512_FULL_RATIO;
#endif
}

bool cf_cpu_fma512_full_rate(void)
{
    const int forced = atomic_load(&fma512_forced);
    if (forced >= 0)
        return forced != 0;
    pthread_once(&fma512_once, probe_fma512);
    return fma512_full;
}

void cf_cpu_fma512_force(int full)
{
    atomic_store(&fma512_forced, full < 0 ? -1 : full != 0);
}

bool cf_cpu_has_clflushopt(void)
{
    ensure_detected();
    return clflushopt;
}

cf_isa cf_isa_machine(void)
{
    ensure_detected();
    return machine_level;
}

cf_isa cf_isa_active(void)
{
    ensure_detected();
    int forced = atomic_load_explicit(&forced_level, memory_order_relaxed);
    if (forced >= 0)
        return (cf_isa)forced;
    int settled = atomic_load_explicit(&settled_level, memory_order_relaxed);
    return settled >= 0 ? (cf_isa)settled : machine_level;
}

void cf_isa_settle(int level, const cf_log *log)
{
    ensure_detected();
    const bool above = level > (int)machine_level;
    const int want = level < 0 || above ? (int)machine_level : level;
    int settled = -1;
    if (!atomic_compare_exchange_strong_explicit(&settled_level, &settled, want,
                                                 memory_order_relaxed, memory_order_relaxed) &&
        level >= 0 && settled != want)
        cf_log_msg(log, CONVFIND_LOG_WARNING, "CONVFIND_ISA=%s: this process's CPU kernels "
                   "already use %s, fixed when its first CPU context was created; keeping %s",
                   cf_isa_name((cf_isa)level), cf_isa_name((cf_isa)settled),
                   cf_isa_name((cf_isa)settled));
    else if (above)
        cf_log_msg(log, CONVFIND_LOG_WARNING, "CONVFIND_ISA=%s is above this machine's level "
                   "%s; using %s", cf_isa_name((cf_isa)level), cf_isa_name(machine_level),
                   cf_isa_name((cf_isa)(settled >= 0 ? settled : want)));
}

convfind_status cf_isa_force(cf_isa level)
{
    ensure_detected();
    if ((int)level < 0 || (int)level >= CF_ISA_COUNT)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "ISA level %d is not a valid level", (int)level);
    if (level > machine_level)
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "ISA level %s is above this machine's level %s",
                       cf_isa_name(level), cf_isa_name(machine_level));
    atomic_store_explicit(&forced_level, (int)level, memory_order_relaxed);
    return CONVFIND_OK;
}

void cf_isa_unforce(void)
{
    atomic_store_explicit(&forced_level, -1, memory_order_relaxed);
}

const cf_cache_sizes *cf_cpu_caches(void)
{
    ensure_detected();
    return &caches;
}

const char *cf_cpu_name(void)
{
    ensure_detected();
    return cpu_name;
}
