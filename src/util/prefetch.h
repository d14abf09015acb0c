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

/* Asks for the cache line holding p to be brought into L2 (and the caches beyond), for
 * reading. */
static inline void cf_prefetch_l2(const void *p)
{
#if defined(CONVFIND_CHECK_PREFETCH)
    (void)*(const volatile char *)p;
#endif
    __builtin_prefetch(p, 0, 2);
}

#endif /* CONVFIND_PREFETCH_H */
