/*
 * fma_probe.h - a measurement of the CPU's FMA throughput at 512 bits against 256 bits
 * (fma_probe_avx512.c), behind cf_cpu_fma512_full_rate() (cpu/isa.h).
 */
#ifndef CONVFIND_CPU_FMA_PROBE_H
#define CONVFIND_CPU_FMA_PROBE_H

/* Multiply-adds per second of 512-bit FMAs over those of 256-bit FMAs, each timed as
 * independent chains on the calling thread (the fastest of a few tries, about 0.1 ms in
 * all): about 2 where the CPU has as many 512-bit FMA units as 256-bit ones (Intel's
 * Xeon Gold and Platinum, Zen 5), about 1 where a 512-bit FMA takes two 256-bit units
 * (Zen 4) or the CPU has one 512-bit unit.  Only on x86-64, and only where the machine
 * runs AVX-512F (cf_isa_machine). */
double cf_fma_probe_ratio(void);

#endif /* CONVFIND_CPU_FMA_PROBE_H */
