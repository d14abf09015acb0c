/*
 * isa.h - which CPU instruction set the kernels may use, and the cache sizes they block for.
 *
 * One binary runs on any x86-64 (and builds on other architectures): kernels for wider
 * instruction sets live in their own files compiled with per-file flags, and are only
 * called from the kernel table of the level cf_isa_active() allows (cpu/kernel_table.h).
 * Detection uses libcpuinfo once per process
 * (pthread_once); everything here is thread-safe and cheap enough to call per execution.
 *
 * The level is one for the whole process, not one per context: the kernel tables are
 * chosen per execution from cf_isa_active(), and an algorithm's packed weights record
 * the level they were made for, but neither prepare() nor pack_weights() knows which
 * context it works for.  Lowering it, so that every kernel path can be tested on one
 * machine:
 *   - environment: CONVFIND_ISA=portable|avx2|avx512, as the first CPU context's
 *     environment read (core/env.c) names it: that context's open() passes it to
 *     cf_isa_settle(), which fixes the level for the rest of the process;
 *   - in-process:  cf_isa_force(), for tests that walk every level in one process.
 * A level above what the machine supports is refused (a warning through the context's
 * log for the environment variable, CONVFIND_ERR_UNSUPPORTED for cf_isa_force) and never
 * executed.
 *
 * The ISA level is part of a decision's key (DESIGN.md non-negotiable 1): a decision or
 * packed weights made at one level say so, and code that receives packed data made at
 * another level repacks instead of running the wrong kernel.
 */
#ifndef CONVFIND_CPU_ISA_H
#define CONVFIND_CPU_ISA_H

#include <stdbool.h>
#include <stddef.h>

#include "algo/isa.h"
#include "convfind.h"
#include "util/log.h"

/* The highest level this machine and OS support (AVX-512 needs OS zmm state support,
 * which libcpuinfo checks).  CF_ISA_PORTABLE on non-x86 or when detection fails. */
cf_isa cf_isa_machine(void);

/* The level kernels must use now: the machine level, lowered by the first CPU
 * context's CONVFIND_ISA (cf_isa_settle) and by cf_isa_force().  Before any CPU context
 * is created, the machine level.  Always <= cf_isa_machine().  Thread-safe (atomic
 * reads). */
cf_isa cf_isa_active(void);

/* Called by every CPU context's open() with the level its environment asks for
 * (CONVFIND_ISA as a cf_isa; -1: none): the first call fixes the process's level to the
 * lower of that and the machine level; later calls change nothing.  Warns through `log`
 * when the level asked for is above the machine's, or differs from the one an earlier
 * context fixed.  Thread-safe. */
void cf_isa_settle(int level, const cf_log *log);

/* Forces the active level for the whole process (tests).  `level` must be a valid
 * cf_isa not above cf_isa_machine(), else CONVFIND_ERR_UNSUPPORTED (message names it)
 * and nothing changes.  Overrides CONVFIND_ISA.  cf_isa_unforce() returns to the
 * settled (or the machine's) level.  Plans executing concurrently pick up the
 * new level at their next execution. */
convfind_status cf_isa_force(cf_isa level);
void cf_isa_unforce(void);

/* Data cache sizes in bytes as seen by one core: l1d and l2 are per core, l3 is the
 * share of one core (total L3 / cores sharing it), so blocking for one thread's working
 * set can use them directly.  Never zero: when detection fails or reports nothing, the
 * defaults 32 KiB / 512 KiB / 2 MiB are used.  Static storage, thread-safe. */
typedef struct cf_cache_sizes {
    size_t l1d, l2, l3;
} cf_cache_sizes;

const cf_cache_sizes *cf_cpu_caches(void);

/* Whether this CPU runs 512-bit FMAs at the full rate of its 256-bit ones in multiply-adds
 * a cycle (two 512-bit FMA units: Intel's Xeon Gold and Platinum, Zen 5), as opposed to
 * half of it (a 512-bit FMA on two 256-bit units, as on Zen 4, or one 512-bit unit).
 * cpuinfo does not say, so it is measured (cpu/fma_probe.h): once per process, about
 * 0.1 ms on the first caller's thread, the first time it is asked.  False where the
 * machine does not run AVX-512F.  Blocking that depends on how fast the FMAs consume
 * their operands asks it (cpu.direct_blocked's shares).  Thread-safe.
 * cf_cpu_fma512_force() sets the answer for the whole process (tests: 0 half rate, 1
 * full rate; -1 returns to the measured one). */
bool cf_cpu_fma512_full_rate(void);
void cf_cpu_fma512_force(int full);

/* Whether the CPU has x86's clflushopt (cpu/evict.c).  False elsewhere. */
bool cf_cpu_has_clflushopt(void);

/* A short description of the CPU (vendor and model as libcpuinfo names the package),
 * for the backend fingerprint; "unknown cpu" when detection fails.  Static storage. */
const char *cf_cpu_name(void);

#endif /* CONVFIND_CPU_ISA_H */
