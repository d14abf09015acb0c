/*
 * fma_peak.c - measures the machine's fp32 FMA peak in the benchmark's own run, so
 * "% of peak" is against what this machine (and its current load) actually delivers.
 *
 * Each thread runs independent chains of 512-bit (or 256-bit without AVX-512) FMAs on
 * registers only: enough chains to cover latency x pipes on any current core, so the
 * loop is bound by FMA throughput alone.  Compiled with -mavx512f -mfma on x86-64
 * (bench/CMakeLists.txt); elsewhere it reports 0 (unknown).
 */
#include "fma_peak.h"

#include <pthread.h>
#include <time.h>

#if defined(__x86_64__)
#include <immintrin.h>

#define CHAINS 16
/* 256-bit chains: 12 accumulators plus the two operands fit the 16 ymm registers that
 * AVX2 has (and that -mavx512f without VL adds nothing to); 16 spilled one chain to the
 * stack and measured half the Zen 3 peak (55 GFLOP/s a core, under what its SGEMM
 * reached).  12 still cover 4-cycle latency on two pipes. */
#define CHAINS_256 12
#define ITERS 16000000L /* about 2.5 ms per trial at 200 GFLOP/s */
#define TRIALS 20

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static volatile float sink;

static void *fma_thread_512(void *arg)
{
    double *seconds = arg;
    __m512 acc[CHAINS];
    for (int i = 0; i < CHAINS; i++)
        acc[i] = _mm512_set1_ps((float)i * 1e-3f);
    const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
    double t0 = now_s();
    for (long it = 0; it < ITERS / 16; it++)
        for (int i = 0; i < CHAINS; i++)
            acc[i] = _mm512_fmadd_ps(acc[i], a, b);
    *seconds = now_s() - t0;
    float s = 0.0f;
    for (int i = 0; i < CHAINS; i++)
        s += _mm512_reduce_add_ps(acc[i]);
    sink = s;
    return NULL;
}

static void *fma_thread_256(void *arg)
{
    double *seconds = arg;
    __m256 acc[CHAINS_256];
    for (int i = 0; i < CHAINS_256; i++)
        acc[i] = _mm256_set1_ps((float)i * 1e-3f);
    const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
    double t0 = now_s();
    for (long it = 0; it < ITERS / 16; it++)
        for (int i = 0; i < CHAINS_256; i++)
            acc[i] = _mm256_fmadd_ps(acc[i], a, b);
    *seconds = now_s() - t0;
    float s = 0.0f;
    for (int i = 0; i < CHAINS_256; i++) {
        __m128 h = _mm_add_ps(_mm256_castps256_ps128(acc[i]), _mm256_extractf128_ps(acc[i], 1));
        s += _mm_cvtss_f32(h);
    }
    sink = s;
    return NULL;
}

/* One trial: every thread runs the loop once; the slowest thread sets the rate. */
static double trial_gflops(int threads, int use_512)
{
    pthread_t tid[256];
    double secs[256];
    void *(*fn)(void *) = use_512 ? fma_thread_512 : fma_thread_256;
    for (int t = 0; t < threads; t++)
        if (pthread_create(&tid[t], NULL, fn, &secs[t]) != 0)
            return 0.0;
    double slowest = 0.0;
    for (int t = 0; t < threads; t++) {
        pthread_join(tid[t], NULL);
        slowest = secs[t] > slowest ? secs[t] : slowest;
    }
    double lanes = use_512 ? 16.0 : 8.0;
    double chains = use_512 ? CHAINS : CHAINS_256;
    double flops = 2.0 * lanes * chains * (double)(ITERS / 16) * threads;
    return slowest > 0.0 ? flops / slowest * 1e-9 : 0.0;
}

/* The best of many short trials: on a shared machine a long run would measure the other
 * users' load (preemption), not the hardware. */
double fma_peak_gflops(int threads, int use_512)
{
    if (threads < 1 || threads > 256)
        return 0.0;
    double best = 0.0;
    for (int t = 0; t < TRIALS; t++) {
        double g = trial_gflops(threads, use_512);
        best = g > best ? g : best;
    }
    return best;
}

#else

double fma_peak_gflops(int threads, int use_512)
{
    (void)threads;
    (void)use_512;
    return 0.0;
}

#endif
