/*
 * evict.h - drops memory from the CPU caches, so that the next access reads it from
 * memory: how CPU Find times a layer's weights as a network finds them (cpu/find.c).
 */
#ifndef CONVFIND_CPU_EVICT_H
#define CONVFIND_CPU_EVICT_H

#include <stddef.h>

/* Writes the cache lines of [p, p + bytes) back and drops them from every level of every
 * core's caches.  x86: clflushopt where the CPU has it (0.5 ms for 9.4 MB on the Xeon VM
 * against 6-12 ms for clflush, which orders each flush after the last), else clflush
 * (every x86-64 has it); AArch64: `dc civac`, which Linux lets user space use; other
 * architectures: nothing is evicted.  Thread-safe. */
void cf_cpu_evict(const void *p, size_t bytes);

#endif /* CONVFIND_CPU_EVICT_H */
