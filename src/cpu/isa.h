/*
 * isa.h - which CPU instruction set the kernels may use, and the cache sizes they block for.
 *
 * One binary runs on any x86-64 (and builds on other architectures): kernels for wider
 * instruction sets live in their own files compiled with per-file flags, and are only
 * called from the kernel table of the level cf_isa_active() allows (cpu/kernel_table.h).
 * Detection uses libcpuinfo once per process
 * (pthread_once); everything here is thread-safe and cheap enough to call per execution.
 *
 * Forcing a lower level, so that every kernel path can be tested on one machine:
 *   - environment: CONVFIND_ISA=portable|avx2|avx512, read once at first use;
 *   - in-process:  cf_isa_force(), for tests that walk every level in one process.
 * A level above what the machine supports is refused (a warning on stderr for the
 * environment variable, CONVFIND_ERR_UNSUPPORTED for cf_isa_force) and never executed.
 *
 * The ISA level is part of a decision's key (DESIGN.md non-negotiable 1): a decision or
 * packed weights made at one level say so, and code that receives packed data made at
 * another level repacks instead of running the wrong kernel.
 */
#ifndef CONVFIND_CPU_ISA_H
#define CONVFIND_CPU_ISA_H

#include <stddef.h>

#include "convfind.h"

/* Ordered: a higher value includes every lower one. */
typedef enum cf_isa {
    CF_ISA_PORTABLE = 0, /* plain C, any architecture */
    CF_ISA_AVX2_FMA = 1, /* x86-64 AVX2 + FMA3 (256-bit) */
    CF_ISA_AVX512F = 2   /* x86-64 AVX-512 F, BW, DQ, VL + FMA3 (512-bit, 32 zmm registers) */
} cf_isa;

#define CF_ISA_COUNT 3

/* The highest level this machine and OS support (AVX-512 needs OS zmm state support,
 * which libcpuinfo checks).  CF_ISA_PORTABLE on non-x86 or when detection fails. */
cf_isa cf_isa_machine(void);

/* The level kernels must use now: the machine level, lowered by CONVFIND_ISA and by
 * cf_isa_force().  Always <= cf_isa_machine().  Thread-safe (an atomic read). */
cf_isa cf_isa_active(void);

/* Forces the active level for the whole process (tests).  `level` must be a valid
 * cf_isa not above cf_isa_machine(), else CONVFIND_ERR_UNSUPPORTED (message names it)
 * and nothing changes.  Overrides CONVFIND_ISA.  cf_isa_unforce() returns to the
 * environment's (or the machine's) level.  Plans executing concurrently pick up the
 * new level at their next execution. */
convfind_status cf_isa_force(cf_isa level);
void cf_isa_unforce(void);

/* "portable", "avx2", "avx512" (the CONVFIND_ISA spellings); "unknown" otherwise. */
const char *cf_isa_name(cf_isa level);

/* Parses a CONVFIND_ISA spelling (case-insensitive); -1 when `s` is none of them. */
int cf_isa_parse(const char *s);

/* Data cache sizes in bytes as seen by one core: l1d and l2 are per core, l3 is the
 * share of one core (total L3 / cores sharing it), so blocking for one thread's working
 * set can use them directly.  Never zero: when detection fails or reports nothing, the
 * defaults 32 KiB / 512 KiB / 2 MiB are used.  Static storage, thread-safe. */
typedef struct cf_cache_sizes {
    size_t l1d, l2, l3;
} cf_cache_sizes;

const cf_cache_sizes *cf_cpu_caches(void);

/* A short description of the CPU (vendor and model as libcpuinfo names the package),
 * for the backend fingerprint; "unknown cpu" when detection fails.  Static storage. */
const char *cf_cpu_name(void);

#endif /* CONVFIND_CPU_ISA_H */
