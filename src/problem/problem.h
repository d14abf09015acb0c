/*
 * problem.h - the resolved form of a convolution problem, shared by every layer.
 *
 * convfind_problem_create() (problem.c) turns the caller's ONNX attributes into this
 * struct once; everything downstream (keys, algorithms, reference kernels) reads only
 * these resolved fields and never re-derives ONNX defaults.  Spatial arrays are always
 * three long: entries at index >= nsp hold the neutral values (size 1, stride 1,
 * dilation 1, pads 0) so that kernels can loop over three spatial axes for 1-D, 2-D
 * and 3-D problems alike.  Entry 0 is the outermost real spatial axis (D for 3-D,
 * H for 2-D, W for 1-D), i.e. index i means ONNX spatial axis i.
 */
#ifndef CONVFIND_PROBLEM_H
#define CONVFIND_PROBLEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#define CF_SP CONVFIND_MAX_SPATIAL

struct convfind_problem {
    convfind_op op;
    convfind_dtype dtype;
    convfind_layout layout;
    convfind_math_mode math_mode;
    int nsp;              /* spatial rank, 1..3 */

    int64_t n;            /* batch */
    int64_t c;            /* channels of X */
    int64_t m;            /* channels of Y */
    int64_t group;
    int64_t in[CF_SP];    /* spatial dims of X */
    int64_t out[CF_SP];   /* spatial dims of Y */
    int64_t k[CF_SP];     /* kernel spatial dims */
    int64_t stride[CF_SP];
    int64_t dil[CF_SP];
    int64_t pad_begin[CF_SP]; /* may be negative for ConvTranspose via output_shape */
    int64_t pad_end[CF_SP];
    int64_t out_pad[CF_SP];   /* ConvTranspose output_padding (already folded into out) */

    bool has_bias;
    bool has_residual;
    convfind_activation act;
    float alpha, beta;

    /* Derived counts, checked for overflow at creation. */
    size_t x_elems, w_elems, y_elems;
    int64_t in_sp, out_sp, k_sp;  /* products of the spatial dims */
};

typedef struct convfind_problem cf_problem;

/* Channels of X per group and of Y per group. */
static inline int64_t cf_cin_per_group(const cf_problem *p) { return p->c / p->group; }
static inline int64_t cf_cout_per_group(const cf_problem *p) { return p->m / p->group; }

/* Element size of the problem's data type in bytes (0 for an unknown type).  Inline:
 * the CUDA module uses it without the rest of problem.c. */
static inline size_t cf_dtype_size(convfind_dtype dtype)
{
    switch (dtype) {
    case CONVFIND_DTYPE_F32: return 4;
    case CONVFIND_DTYPE_F16: return 2;
    case CONVFIND_DTYPE_BF16: return 2;
    }
    return 0;
}

#endif /* CONVFIND_PROBLEM_H */
