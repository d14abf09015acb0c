/*
 * tap_gemm.c - "cpu.tap_gemm": a Conv as a sum of one GEMM per kernel tap, each over only
 * the outputs whose input for that tap lies inside X (gemm/gemm_conv.c).
 *
 * im2col multiplies the taps that fall in the padding as zeros.  Where that is a large
 * part of the work, this skips it: dilated convolutions on small maps (DeepLabV3's 3x3
 * classifiers at rates 6, 12 and 18 on 33x33 maps put 23%, 43% and 59% of their
 * products in the padding), and 3x3 layers on 7x7 maps (18%).  Skipping is exact: per
 * tile of output rows and per tap, the GEMM runs over the box of outputs whose input for
 * that tap lies inside X (through a scratch C where the box is narrower than the rows).
 * Each tap's GEMM has K = input channels, so its patch panels are a strided copy of X and
 * a tile of pixels fits the caches with far more pixels than im2col's (K = channels x taps);
 * tiles hold at least 4 pixels per output channel, so that each tap's weights, read once
 * per tile, cost less than its patches (gemm_conv.c).
 * For the same reason it takes only groups of 8 input channels or more.
 */
#include "algo/algo.h"
#include "cpu/gemm/gemm_conv.h"
#include "cpu/geom3.h"
#include "problem/shape.h"

/* The share of (output, tap) products that read padding, worth a GEMM per tap from 1/16
 * on (3x3 on 14x14 maps: 9%; on 28x28: 5%, left to im2col).  Per axis, the valid
 * (output, tap) pairs are counted by interval ends, so any size is cheap. */
static bool pads_worth_skipping(const cf_problem *p)
{
    cf_geom3 g = cf_geom3_of(p);
    double valid = 1.0;
    for (int a = 0; a < 3; a++) {
        int64_t pairs = 0;
        for (int64_t t = 0; t < g.k[a]; t++) {
            int64_t shift = t * g.dil[a] - g.pad[a];
            int64_t lo = -cf_floor_div(shift, g.stride[a]);
            int64_t hi = cf_floor_div(g.in[a] - 1 - shift, g.stride[a]) + 1;
            lo = lo < 0 ? 0 : lo;
            hi = hi > g.out[a] ? g.out[a] : hi;
            pairs += hi > lo ? hi - lo : 0;
        }
        valid *= (double)pairs / ((double)g.out[a] * (double)g.k[a]);
    }
    return valid <= 15.0 / 16.0;
}

/* At least 8 input channels per group: each tap's GEMM has K = those channels, and one
 * GEMM per group, tap and tile cost depthwise layers (one channel per group) far more than
 * they skip; Find timing it on them doubled MobileNetV2's Find (0.46 -> 0.90 s at N=1) and
 * made EfficientNet-B0's 3.6x (0.60 -> 2.19 s) without winning a layer. */
static bool tap_gemm_applicable(const cf_problem *p)
{
    return cf_gemm_conv_applicable(p) && p->k_sp > 1 && cf_cin_per_group(p) >= 8 &&
           pads_worth_skipping(p);
}

const cf_algo cf_algo_cpu_tap_gemm = {
    .name = "cpu.tap_gemm",
    .family = "gemm",
    .applicable = tap_gemm_applicable,
    .workspace = cf_gemm_taps_workspace,
    .pack_weights = cf_gemm_taps_pack_weights,
    .free_packed = cf_gemm_free_packed,
    .packed_extent = cf_gemm_packed_extent,
    .execute = cf_gemm_taps_execute,
};
