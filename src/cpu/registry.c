/*
 * registry.c - the CPU backend's algorithms.
 *
 * Adding an algorithm is one line here (and its own file).  Order matters only as the
 * heuristic's tie-break: earlier entries are preferred among applicable ones, so the
 * specialised fast paths come first and the reference, which is always applicable and
 * is everyone's last resort, comes last.
 */
#include "cpu/registry.h"

extern const cf_algo cf_algo_cpu_direct_blocked;
extern const cf_algo cf_algo_cpu_depthwise;
extern const cf_algo cf_algo_cpu_depthwise_3x3;
extern const cf_algo cf_algo_cpu_winograd_f6x3;
extern const cf_algo cf_algo_cpu_winograd_f4x3;
extern const cf_algo cf_algo_cpu_winograd_f2x3;
extern const cf_algo cf_algo_cpu_gemm_1x1;
extern const cf_algo cf_algo_cpu_direct_small_c;
extern const cf_algo cf_algo_cpu_im2col_gemm;
extern const cf_algo cf_algo_cpu_tap_gemm;
extern const cf_algo cf_algo_cpu_convtranspose_gemm;
extern const cf_algo cf_algo_cpu_convtranspose_subpixel;

static const cf_algo *const registry[] = {
    &cf_algo_cpu_gemm_1x1,
    /* Before cpu.depthwise and cpu.direct_blocked, which also take its layers (one input
     * channel, or up to 8 padded to 16): Find times candidates in this order, and on a
     * large first layer its budget ran out on those (R3D-18's stem at N = 8: 6.1x
     * oneDNN with cpu.direct_blocked, DeepSpeech2's first layer 7.1x with
     * cpu.depthwise) before cpu.direct_small_c was timed. */
    &cf_algo_cpu_direct_small_c,
    &cf_algo_cpu_depthwise_3x3, /* before cpu.depthwise: faster on nearly every 3x3 layer */
    &cf_algo_cpu_depthwise,
    &cf_algo_cpu_direct_blocked,
    &cf_algo_cpu_winograd_f4x3,
    &cf_algo_cpu_winograd_f2x3,
    &cf_algo_cpu_winograd_f6x3, /* reduced-precision problems only */
    &cf_algo_cpu_im2col_gemm,
    &cf_algo_cpu_tap_gemm,
    &cf_algo_cpu_convtranspose_subpixel,
    &cf_algo_cpu_convtranspose_gemm,
    &cf_algo_cpu_reference,
};

const cf_algo *const *cf_cpu_algorithms(int *count)
{
    *count = (int)(sizeof registry / sizeof registry[0]);
    return registry;
}
