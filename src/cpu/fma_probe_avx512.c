/*
 * fma_probe_avx512.c - times 512-bit FMAs against 256-bit ones (cpu/fma_probe.h), with
 * this file's AVX-512 flags (CMakeLists.txt).
 * Empty on other architectures; cpu/isa.c calls it only where the machine runs AVX-512.
 */
#if defined(__x86_64__)
#include "cpu/fma_probe.h"

#include <immintrin.h>
#include "util/clock.h"

/* Independent chains per loop: more than an FMA's latency times the FMA units of any
 * x86 CPU (4 x 2), so the loop measures throughput, not latency. */
#define PROBE_CHAINS 12
#define PROBE_STEPS 2048
#define PROBE_TRIES 5

/* Keeps the chains' results alive, so that the compiler computes them. */
static volatile float probe_sink;

/* Times PROBE_STEPS steps of PROBE_CHAINS chains of vector type T (SET1 and FMADD its
 * intrinsics) into `seconds`, their last values in acc[].  The chains converge to 1
 * (v = 0.999 v + 0.001): no overflow, no subnormal operands. */
#define PROBE_TIME(T, SET1, FMADD, acc, seconds)                                         \
    do {                                                                                 \
        const T a_ = SET1(0.999f), b_ = SET1(0.001f);                                    \
        for (int j = 0; j < PROBE_CHAINS; j++)                                           \
            acc[j] = SET1((float)j);                                                     \
        const double t0_ = cf_now_s();                                                      \
        for (int s = 0; s < PROBE_STEPS; s++)                                            \
            _Pragma("GCC unroll 12") for (int j = 0; j < PROBE_CHAINS; j++)              \
                acc[j] = FMADD(acc[j], a_, b_);                                          \
        seconds = cf_now_s() - t0_;                                                         \
    } while (0)

/* Seconds for the FMAs of `bits` bits. */
static double time_fmas(int bits)
{
    double seconds;
    float sum = 0;
    if (bits == 512) {
        __m512 acc[PROBE_CHAINS];
        PROBE_TIME(__m512, _mm512_set1_ps, _mm512_fmadd_ps, acc, seconds);
        for (int j = 0; j < PROBE_CHAINS; j++)
            sum += _mm512_reduce_add_ps(acc[j]);
    } else {
        __m256 acc[PROBE_CHAINS];
        PROBE_TIME(__m256, _mm256_set1_ps, _mm256_fmadd_ps, acc, seconds);
        for (int j = 0; j < PROBE_CHAINS; j++) {
            float lanes[8];
            _mm256_storeu_ps(lanes, acc[j]);
            for (int l = 0; l < 8; l++)
                sum += lanes[l];
        }
    }
    probe_sink = sum;
    return seconds;
}

double cf_fma_probe_ratio(void)
{
    /* The fastest of a few tries, the two widths in turns: a try that another thread or
     * the hypervisor interrupts only ever reads slower. */
    double t512 = 1e30, t256 = 1e30;
    for (int i = 0; i < PROBE_TRIES; i++) {
        double t = time_fmas(512);
        t512 = t < t512 ? t : t512;
        t = time_fmas(256);
        t256 = t < t256 ? t : t256;
    }
    /* A 512-bit FMA does twice the multiply-adds of a 256-bit one. */
    return t512 > 0 ? 2.0 * t256 / t512 : 2.0;
}
#endif
