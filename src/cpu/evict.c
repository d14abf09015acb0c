/*
 * evict.c - cache-line eviction for CPU Find (see evict.h).
 */
#include "cpu/evict.h"

#include <stdint.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>

#include "cpu/isa.h"

#define LINE 64

__attribute__((target("clflushopt"))) static void flush_opt(uintptr_t first, uintptr_t end)
{
    for (uintptr_t line = first; line < end; line += LINE)
        _mm_clflushopt((void *)line);
}

static void flush(uintptr_t first, uintptr_t end)
{
    for (uintptr_t line = first; line < end; line += LINE)
        _mm_clflush((const void *)line);
}

void cf_cpu_evict(const void *p, size_t bytes)
{
    const uintptr_t first = (uintptr_t)p & ~(uintptr_t)(LINE - 1), end = (uintptr_t)p + bytes;
    if (cf_cpu_has_clflushopt())
        flush_opt(first, end);
    else
        flush(first, end);
    _mm_mfence(); /* the flushes are done before what follows reads the lines again */
}

#elif defined(__aarch64__)

/* The smallest data cache line of AArch64 CPUs in use; a longer line is evicted by more
 * than one of these, which costs a little time and nothing else. */
#define LINE 64

void cf_cpu_evict(const void *p, size_t bytes)
{
    const uintptr_t first = (uintptr_t)p & ~(uintptr_t)(LINE - 1), end = (uintptr_t)p + bytes;
    for (uintptr_t line = first; line < end; line += LINE)
        __asm__ volatile("dc civac, %0" : : "r"(line) : "memory");
    __asm__ volatile("dsb ish" : : : "memory");
}

#else

void cf_cpu_evict(const void *p, size_t bytes)
{
    (void)p, (void)bytes;
}

#endif
