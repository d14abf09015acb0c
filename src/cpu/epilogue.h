/*
 * epilogue.h - the fused epilogue every CPU algorithm applies to its outputs:
 * y = act(conv + bias + z), as ONNX Runtime's FusedConv defines it.
 *
 * All algorithms go through these functions so that they round and saturate the
 * epilogue identically; differences between algorithms can then only come from the
 * convolution sums themselves.  Bias and residual are added in float, in that order,
 * before the activation (FusedConv's order).
 */
#ifndef CONVFIND_CPU_EPILOGUE_H
#define CONVFIND_CPU_EPILOGUE_H

#include <math.h>
#include <stddef.h>

#include "problem/problem.h"

/* The activation of convfind_activation with its parameters (alpha, beta as documented
 * in convfind.h).  Unknown values return v unchanged; problem validation rejects them
 * before any algorithm runs.  Pure and thread-safe. */
static inline float cf_activate(float v, convfind_activation act, float alpha, float beta)
{
    switch (act) {
    case CONVFIND_ACT_RELU:
        return v > 0.0f ? v : 0.0f;
    case CONVFIND_ACT_LEAKY_RELU:
        return v >= 0.0f ? v : alpha * v;
    case CONVFIND_ACT_CLIP:
        return v < alpha ? alpha : (v > beta ? beta : v);
    case CONVFIND_ACT_SIGMOID:
        return 1.0f / (1.0f + expf(-v));
    case CONVFIND_ACT_TANH:
        return tanhf(v);
    case CONVFIND_ACT_HARD_SIGMOID: {
        float h = alpha * v + beta;
        return h < 0.0f ? 0.0f : (h > 1.0f ? 1.0f : h);
    }
    case CONVFIND_ACT_NONE:
    default:
        return v;
    }
}

/* One output value: act(acc + bias + z).  `z` is the residual value (0 when the
 * problem has none) so that callers need no branch per element. */
static inline float cf_epilogue_value(const cf_problem *p, float acc, float bias, float z)
{
    return cf_activate(acc + bias + z, p->act, p->alpha, p->beta);
}

/* Applies the epilogue in place to `count` contiguous outputs y[0..count) of one output
 * channel (NCHW rows).  `bias` is that channel's bias (0 when the problem has none);
 * `z` points at the matching residual values, or is NULL when there is no residual.
 * Thread-safe on disjoint y. */
void cf_epilogue_channel_run(const cf_problem *p, float *y, size_t count, float bias,
                             const float *z);

/* Applies the epilogue in place to `count` contiguous channels y[0..count) of one output
 * pixel (NHWC rows).  `bias` points at the bias of the first of those channels, or is
 * NULL; `z` points at the matching residual values, or is NULL.  Thread-safe on
 * disjoint y. */
void cf_epilogue_pixel_run(const cf_problem *p, float *y, size_t count, const float *bias,
                           const float *z);

#endif /* CONVFIND_CPU_EPILOGUE_H */
