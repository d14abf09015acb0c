/*
 * prefetch.h - asking for memory to be brought into L2 ahead of its use.
 *
 * A prefetch of an address outside every object does no harm to the CPU, which drops
 * it, so a kernel that computes its prefetch addresses wrongly only runs slower, and no
 * test sees it.  Built with AddressSanitizer, CMake defines CONVFIND_CHECK_PREFETCH and
 * every prefetch also reads the byte it names, so that such an address fails the tests
 * there like any other out-of-bounds read.
 */
#ifndef CONVFIND_PREFETCH_H
#define CONVFIND_PREFETCH_H

#include <stddef.h>

/* Bytes one prefetch brings: a cache line on every x86-64 and most other CPUs. */
#define CF_PREFETCH_LINE 64

/* Asks for the cache line holding p to be brought into L2 (and the caches beyond), for
 * reading. */
static inline void cf_prefetch_l2(const void *p)
{
#if defined(CONVFIND_CHECK_PREFETCH)
    (void)*(const volatile char *)p;
#endif
    __builtin_prefetch(p, 0, 2);
}

/* Asks for the `bytes` bytes from p on into L2, one request per cache line.  (Asking for
 * every other line, leaving the rest to the L2's adjacent-line prefetcher, lost the whole
 * gain of cpu.direct_blocked's weight prefetches in a ResNet-50 pass on the Xeon.) */
static inline void cf_prefetch_l2_run(const void *p, size_t bytes)
{
    for (size_t i = 0; i < bytes; i += CF_PREFETCH_LINE)
        cf_prefetch_l2((const char *)p + i);
}

#endif /* CONVFIND_PREFETCH_H */
