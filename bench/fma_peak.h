/*
 * fma_peak.h - the measured fp32 FMA peak of this machine, for "% of peak" columns.
 */
#ifndef CONVFIND_BENCH_FMA_PEAK_H
#define CONVFIND_BENCH_FMA_PEAK_H

/* GFLOP/s of `threads` threads each running register-only FMA chains, 512-bit wide when
 * use_512 (the caller checks the CPU has AVX-512), else 256-bit.  Takes about 0.1 s.
 * 0 when unknown (non-x86, thread creation failed). */
double fma_peak_gflops(int threads, int use_512);

#endif /* CONVFIND_BENCH_FMA_PEAK_H */
