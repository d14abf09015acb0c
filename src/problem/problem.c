/*
 * problem.c - convfind_problem: validation of ONNX Conv / ConvTranspose attributes and
 * their resolution into the struct every other layer reads (problem.h).
 *
 * Validation runs in a fixed order (enums, ranks, dims, attribute lengths, attribute
 * values, channels, activation, per-axis shapes, element counts) so that each invalid
 * input is reported by the first rule it breaks, with a message naming the value.
 * The per-axis ONNX formulas live in shape.c.
 */
#include "problem/problem.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "problem/shape.h"
#include "util/error.h"

void convfind_conv_desc_init(convfind_conv_desc *desc)
{
    cf_clear_error();
    if (desc == NULL) {
        cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_conv_desc_init: desc is NULL");
        return;
    }
    memset(desc, 0, sizeof *desc);
    desc->op = CONVFIND_OP_CONV;
    desc->dtype = CONVFIND_DTYPE_F32;
    desc->layout = CONVFIND_LAYOUT_NCHW;
    desc->math_mode = CONVFIND_MATH_STRICT;
    desc->group = 1;
    desc->auto_pad = CONVFIND_AUTO_PAD_NOTSET;
    desc->activation = CONVFIND_ACT_NONE;
}

/* ------------------------------------------------------------------------- */
/* Names shared by messages and convfind_problem_describe()                  */
/* ------------------------------------------------------------------------- */

static const char *op_name(convfind_op op)
{
    return op == CONVFIND_OP_CONV ? "conv" : "conv_transpose";
}

static const char *dtype_name(convfind_dtype dt)
{
    switch (dt) {
    case CONVFIND_DTYPE_F32: return "f32";
    case CONVFIND_DTYPE_F16: return "f16";
    case CONVFIND_DTYPE_BF16: return "bf16";
    }
    return "?";
}

static const char *auto_pad_name(convfind_auto_pad ap)
{
    switch (ap) {
    case CONVFIND_AUTO_PAD_NOTSET: return "NOTSET";
    case CONVFIND_AUTO_PAD_SAME_UPPER: return "SAME_UPPER";
    case CONVFIND_AUTO_PAD_SAME_LOWER: return "SAME_LOWER";
    case CONVFIND_AUTO_PAD_VALID: return "VALID";
    }
    return "?";
}

static const char *act_name(convfind_activation act)
{
    switch (act) {
    case CONVFIND_ACT_NONE: return "none";
    case CONVFIND_ACT_RELU: return "relu";
    case CONVFIND_ACT_LEAKY_RELU: return "leaky_relu";
    case CONVFIND_ACT_CLIP: return "clip";
    case CONVFIND_ACT_SIGMOID: return "sigmoid";
    case CONVFIND_ACT_TANH: return "tanh";
    case CONVFIND_ACT_HARD_SIGMOID: return "hard_sigmoid";
    }
    return "?";
}

/* Activation parameters that the activation actually reads (0, 1 or 2). */
static int act_param_count(convfind_activation act)
{
    switch (act) {
    case CONVFIND_ACT_LEAKY_RELU: return 1;
    case CONVFIND_ACT_CLIP:
    case CONVFIND_ACT_HARD_SIGMOID: return 2;
    default: return 0;
    }
}

/* ------------------------------------------------------------------------- */
/* Validation steps                                                          */
/* ------------------------------------------------------------------------- */

/* Enums are read as int: a caller (or a model file) may store any value in them. */
static convfind_status check_enum(const char *field, int value, int max)
{
    if (value < 0 || value > max)
        return cf_fail(CONVFIND_ERR_INVALID_ENUM, "%s = %d is not a known value (0..%d)", field,
                       value, max);
    return CONVFIND_OK;
}

static convfind_status check_enums(const convfind_conv_desc *d)
{
    convfind_status st;
    if ((st = check_enum("op", (int)d->op, CONVFIND_OP_CONV_TRANSPOSE)) != CONVFIND_OK ||
        (st = check_enum("dtype", (int)d->dtype, CONVFIND_DTYPE_BF16)) != CONVFIND_OK ||
        (st = check_enum("layout", (int)d->layout, CONVFIND_LAYOUT_NHWC)) != CONVFIND_OK ||
        (st = check_enum("math_mode", (int)d->math_mode, CONVFIND_MATH_ALLOW_SPLIT_TF32)) !=
            CONVFIND_OK ||
        (st = check_enum("auto_pad", (int)d->auto_pad, CONVFIND_AUTO_PAD_VALID)) !=
            CONVFIND_OK ||
        (st = check_enum("activation", (int)d->activation, CONVFIND_ACT_HARD_SIGMOID)) !=
            CONVFIND_OK)
        return st;
    return CONVFIND_OK;
}

static convfind_status check_ranks_and_dims(const convfind_conv_desc *d)
{
    if (d->x_rank < 3 || d->x_rank > CONVFIND_MAX_RANK)
        return cf_fail(CONVFIND_ERR_INVALID_RANK,
                       "x_rank = %d: X must have rank 3, 4 or 5 (N, C and 1-3 spatial dims)",
                       d->x_rank);
    if (d->w_rank != d->x_rank)
        return cf_fail(CONVFIND_ERR_INVALID_RANK, "w_rank = %d must equal x_rank = %d",
                       d->w_rank, d->x_rank);
    for (int i = 0; i < d->x_rank; i++)
        if (d->x_dims[i] <= 0)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "x_dims[%d] = %" PRId64 " must be positive",
                           i, d->x_dims[i]);
    for (int i = 0; i < d->w_rank; i++)
        if (d->w_dims[i] <= 0)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE, "w_dims[%d] = %" PRId64 " must be positive",
                           i, d->w_dims[i]);
    return CONVFIND_OK;
}

/* An attribute list is absent (count 0) or has `per_axis` values per spatial axis. */
static convfind_status check_count(const char *name, const convfind_ints *v, int per_axis,
                                   int nsp)
{
    const int cap = (int)(sizeof v->v / sizeof v->v[0]);
    if (v->count < 0 || v->count > cap)
        return cf_fail(CONVFIND_ERR_INVALID_RANK, "%s.count = %d is outside 0..%d", name,
                       v->count, cap);
    if (v->count != 0 && v->count != per_axis * nsp)
        return cf_fail(CONVFIND_ERR_INVALID_RANK,
                       "%s has %d values, expected %d for a %d-D convolution", name, v->count,
                       per_axis * nsp, nsp);
    return CONVFIND_OK;
}

static convfind_status check_counts(const convfind_conv_desc *d, int nsp)
{
    convfind_status st;
    if ((st = check_count("kernel_shape", &d->kernel_shape, 1, nsp)) != CONVFIND_OK ||
        (st = check_count("strides", &d->strides, 1, nsp)) != CONVFIND_OK ||
        (st = check_count("dilations", &d->dilations, 1, nsp)) != CONVFIND_OK ||
        (st = check_count("pads", &d->pads, 2, nsp)) != CONVFIND_OK ||
        (st = check_count("output_padding", &d->output_padding, 1, nsp)) != CONVFIND_OK ||
        (st = check_count("output_shape", &d->output_shape, 1, nsp)) != CONVFIND_OK)
        return st;
    return CONVFIND_OK;
}

/* Every value of a present list must be >= `min`. */
static convfind_status check_min(const char *name, const convfind_ints *v, int64_t min,
                                 const char *why)
{
    for (int i = 0; i < v->count; i++)
        if (v->v[i] < min)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "%s[%d] = %" PRId64 " %s", name, i,
                           v->v[i], why);
    return CONVFIND_OK;
}

static int64_t attr_or(const convfind_ints *v, int i, int64_t dflt)
{
    return v->count ? v->v[i] : dflt;
}

static convfind_status check_attributes(const convfind_conv_desc *d)
{
    convfind_status st;
    if (d->op == CONVFIND_OP_CONV) {
        if (d->output_padding.count)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                           "output_padding (%d values) is a ConvTranspose attribute; Conv has none",
                           d->output_padding.count);
        if (d->output_shape.count)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                           "output_shape (%d values) is a ConvTranspose attribute; Conv has none",
                           d->output_shape.count);
    }
    if (d->pads.count && d->auto_pad != CONVFIND_AUTO_PAD_NOTSET)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                       "pads given together with auto_pad = %s; ONNX allows only one of them",
                       auto_pad_name(d->auto_pad));
    if (d->group < 1)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "group = %" PRId64 " must be >= 1",
                       d->group);
    if ((st = check_min("strides", &d->strides, 1, "must be >= 1")) != CONVFIND_OK ||
        (st = check_min("dilations", &d->dilations, 1, "must be >= 1")) != CONVFIND_OK ||
        (st = check_min("pads", &d->pads, 0, "is negative")) != CONVFIND_OK ||
        (st = check_min("output_padding", &d->output_padding, 0, "is negative")) !=
            CONVFIND_OK ||
        (st = check_min("output_shape", &d->output_shape, 1, "must be positive")) !=
            CONVFIND_OK)
        return st;
    for (int i = 0; i < d->kernel_shape.count; i++)
        if (d->kernel_shape.v[i] != d->w_dims[2 + i])
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "kernel_shape[%d] = %" PRId64
                           " does not match W's w_dims[%d] = %" PRId64,
                           i, d->kernel_shape.v[i], 2 + i, d->w_dims[2 + i]);
    /* ONNX: each output_padding value must be smaller than the stride or the dilation
     * of its axis (onnxruntime checks max(stride, dilation) the same way). */
    for (int i = 0; i < d->output_padding.count; i++) {
        const int64_t s = attr_or(&d->strides, i, 1), dil = attr_or(&d->dilations, i, 1);
        if (d->output_padding.v[i] >= s && d->output_padding.v[i] >= dil)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                           "output_padding[%d] = %" PRId64 " must be smaller than stride %" PRId64
                           " or dilation %" PRId64,
                           i, d->output_padding.v[i], s, dil);
    }
    return CONVFIND_OK;
}

/* Channels: Conv W is M x C/group x k..., ConvTranspose W is C x M/group x k... */
static convfind_status resolve_channels(const convfind_conv_desc *d, cf_problem *p)
{
    p->c = d->x_dims[1];
    p->group = d->group;
    if (p->c % p->group != 0)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "X channels %" PRId64 " not divisible by group %" PRId64, p->c, p->group);
    if (d->op == CONVFIND_OP_CONV) {
        p->m = d->w_dims[0];
        if (p->m % p->group != 0)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "W output channels w_dims[0] = %" PRId64 " not divisible by group %"
                           PRId64, p->m, p->group);
        if (d->w_dims[1] != p->c / p->group)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "w_dims[1] = %" PRId64 " but X channels %" PRId64 " / group %" PRId64
                           " = %" PRId64 " expected",
                           d->w_dims[1], p->c, p->group, p->c / p->group);
        return CONVFIND_OK;
    }
    if (d->w_dims[0] != p->c)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "w_dims[0] = %" PRId64 " must equal X channels %" PRId64
                       " (ConvTranspose W is C x M/group x k...)",
                       d->w_dims[0], p->c);
    if (__builtin_mul_overflow(d->w_dims[1], p->group, &p->m))
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "output channels w_dims[1] %" PRId64 " * group %" PRId64 " overflow int64",
                       d->w_dims[1], p->group);
    return CONVFIND_OK;
}

static convfind_status resolve_activation(const convfind_conv_desc *d, cf_problem *p)
{
    const int used = act_param_count(d->activation);
    p->act = d->activation;
    /* Parameters an activation does not read are zeroed, and -0 becomes +0 (adding
     * +0.0f does that), so that equal activations never split the decision key. */
    p->alpha = used >= 1 ? d->alpha + 0.0f : 0.0f;
    p->beta = used >= 2 ? d->beta + 0.0f : 0.0f;
    if (used >= 1 && isnan(d->alpha))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "activation %s: alpha is NaN",
                       act_name(d->activation));
    if (used >= 2 && isnan(d->beta))
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "activation %s: beta is NaN",
                       act_name(d->activation));
    if (d->activation == CONVFIND_ACT_CLIP && d->alpha > d->beta)
        return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE, "clip: min (alpha) %g > max (beta) %g",
                       (double)d->alpha, (double)d->beta);
    return CONVFIND_OK;
}

static convfind_status resolve_axes(const convfind_conv_desc *d, cf_problem *p)
{
    for (int i = 0; i < CF_SP; i++) {
        p->in[i] = p->out[i] = p->k[i] = p->stride[i] = p->dil[i] = 1;
        p->pad_begin[i] = p->pad_end[i] = p->out_pad[i] = 0;
    }
    for (int i = 0; i < p->nsp; i++) {
        cf_axis a = {
            .index = i,
            .in = d->x_dims[2 + i],
            .k = d->w_dims[2 + i],
            .stride = attr_or(&d->strides, i, 1),
            .dil = attr_or(&d->dilations, i, 1),
            .out_pad = attr_or(&d->output_padding, i, 0),
            .out_shape = attr_or(&d->output_shape, i, 0),
            .pad_begin = attr_or(&d->pads, i, 0),
            .pad_end = attr_or(&d->pads, p->nsp + i, 0),
        };
        convfind_status st = d->op == CONVFIND_OP_CONV ? cf_axis_conv(d->auto_pad, &a)
                                                       : cf_axis_conv_transpose(d->auto_pad, &a);
        if (st != CONVFIND_OK)
            return st;
        p->in[i] = a.in;
        p->out[i] = a.out;
        p->k[i] = a.k;
        p->stride[i] = a.stride;
        p->dil[i] = a.dil;
        p->pad_begin[i] = a.pad_begin;
        p->pad_end[i] = a.pad_end;
        p->out_pad[i] = a.out_pad;
    }
    return CONVFIND_OK;
}

/* Product of `n` positive factors; false on int64 overflow. */
static int product(const int64_t *v, int n, int64_t *out)
{
    int64_t r = 1;
    for (int i = 0; i < n; i++)
        if (__builtin_mul_overflow(r, v[i], &r))
            return 0;
    *out = r;
    return 1;
}

/* elems = a * b * sp, and elems * dtype bytes must fit both int64 and size_t. */
static convfind_status tensor_count(const char *name, int64_t a, int64_t b, int64_t sp,
                                    size_t dsize, size_t *elems)
{
    int64_t n, bytes;
    if (__builtin_mul_overflow(a, b, &n) || __builtin_mul_overflow(n, sp, &n) ||
        __builtin_mul_overflow(n, (int64_t)dsize, &bytes) || (uint64_t)bytes > SIZE_MAX)
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "%s size %" PRId64 " x %" PRId64 " x %" PRId64 " elements of %zu bytes "
                       "overflows", name, a, b, sp, dsize);
    *elems = (size_t)n;
    return CONVFIND_OK;
}

static convfind_status resolve_counts(const convfind_conv_desc *d, cf_problem *p)
{
    if (!product(p->in, CF_SP, &p->in_sp) || !product(p->k, CF_SP, &p->k_sp))
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "product of the input or kernel spatial dims overflows int64");
    if (!product(p->out, CF_SP, &p->out_sp))
        return cf_fail(CONVFIND_ERR_OVERFLOW,
                       "output spatial size %" PRId64 " x %" PRId64 " x %" PRId64
                       " overflows int64", p->out[0], p->out[1], p->out[2]);
    const size_t ds = cf_dtype_size(p->dtype);
    convfind_status st;
    if ((st = tensor_count("X", p->n, p->c, p->in_sp, ds, &p->x_elems)) != CONVFIND_OK ||
        (st = tensor_count("W", d->w_dims[0], d->w_dims[1], p->k_sp, ds, &p->w_elems)) !=
            CONVFIND_OK ||
        (st = tensor_count("Y", p->n, p->m, p->out_sp, ds, &p->y_elems)) != CONVFIND_OK)
        return st;
    return CONVFIND_OK;
}

/* ------------------------------------------------------------------------- */
/* Public API                                                                */
/* ------------------------------------------------------------------------- */

convfind_status convfind_problem_create(const convfind_conv_desc *desc, convfind_problem **out)
{
    cf_clear_error();
    if (out == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_create: out is NULL");
    *out = NULL;
    if (desc == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_create: desc is NULL");

    convfind_status st;
    if ((st = check_enums(desc)) != CONVFIND_OK || (st = check_ranks_and_dims(desc)) != CONVFIND_OK)
        return st;
    const int nsp = desc->x_rank - 2;
    if ((st = check_counts(desc, nsp)) != CONVFIND_OK ||
        (st = check_attributes(desc)) != CONVFIND_OK)
        return st;

    cf_problem p;
    memset(&p, 0, sizeof p);
    p.op = desc->op;
    p.dtype = desc->dtype;
    p.layout = desc->layout;
    p.math_mode = desc->math_mode;
    p.nsp = nsp;
    p.n = desc->x_dims[0];
    p.has_bias = desc->has_bias != 0;
    p.has_residual = desc->has_residual != 0;
    if ((st = resolve_channels(desc, &p)) != CONVFIND_OK ||
        (st = resolve_activation(desc, &p)) != CONVFIND_OK ||
        (st = resolve_axes(desc, &p)) != CONVFIND_OK ||
        (st = resolve_counts(desc, &p)) != CONVFIND_OK)
        return st;

    cf_problem *heap = malloc(sizeof *heap);
    if (heap == NULL)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "convfind_problem_create: out of memory");
    *heap = p;
    *out = heap;
    return CONVFIND_OK;
}

void convfind_problem_destroy(convfind_problem *problem)
{
    cf_clear_error();
    free(problem);
}

convfind_status convfind_problem_output_dims(const convfind_problem *problem, int *rank,
                                             int64_t *dims)
{
    cf_clear_error();
    if (problem == NULL || rank == NULL || dims == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_output_dims: %s is NULL",
                       problem == NULL ? "problem" : rank == NULL ? "rank" : "dims");
    *rank = problem->nsp + 2;
    dims[0] = problem->n;
    dims[1] = problem->m;
    for (int i = 0; i < problem->nsp; i++)
        dims[2 + i] = problem->out[i];
    return CONVFIND_OK;
}

convfind_status convfind_problem_resolved_pads(const convfind_problem *problem, int64_t *pads)
{
    cf_clear_error();
    if (problem == NULL || pads == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_resolved_pads: %s is NULL",
                       problem == NULL ? "problem" : "pads");
    for (int i = 0; i < problem->nsp; i++) {
        pads[i] = problem->pad_begin[i];
        pads[problem->nsp + i] = problem->pad_end[i];
    }
    return CONVFIND_OK;
}

convfind_status convfind_problem_sizes(const convfind_problem *problem, size_t *x_elems,
                                       size_t *w_elems, size_t *y_elems, size_t *b_elems)
{
    cf_clear_error();
    if (problem == NULL)
        return cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_sizes: problem is NULL");
    if (x_elems)
        *x_elems = problem->x_elems;
    if (w_elems)
        *w_elems = problem->w_elems;
    if (y_elems)
        *y_elems = problem->y_elems;
    if (b_elems)
        *b_elems = problem->has_bias ? (size_t)problem->m : 0;
    return CONVFIND_OK;
}

double convfind_problem_flops(const convfind_problem *problem)
{
    cf_clear_error();
    if (problem == NULL) {
        cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_flops: problem is NULL");
        return 0.0;
    }
    /* Each multiply-add pairs one X element of a group with one W element of it:
     * Conv walks Y positions, ConvTranspose walks X positions. */
    const cf_problem *p = problem;
    const double positions = p->op == CONVFIND_OP_CONV ? (double)p->m * (double)p->out_sp
                                                       : (double)p->c * (double)p->in_sp;
    const double per_position = p->op == CONVFIND_OP_CONV ? (double)cf_cin_per_group(p)
                                                          : (double)cf_cout_per_group(p);
    return 2.0 * (double)p->n * positions * per_position * (double)p->k_sp;
}

/* snprintf into a bounded buffer that keeps counting past its end. */
typedef struct text {
    char *buf;
    size_t size, len;
} text;

static void put(text *t, const char *fmt, ...) CF_PRINTF(2, 3);
static void put(text *t, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *dst = t->len < t->size ? t->buf + t->len : NULL;
    int n = vsnprintf(dst, dst ? t->size - t->len : 0, fmt, ap);
    va_end(ap);
    if (n > 0)
        t->len += (size_t)n;
}

/* " label=3x3" for one spatial array. */
static void put_dims(text *t, const char *label, const int64_t *v, int n)
{
    put(t, " %s=", label);
    for (int i = 0; i < n; i++)
        put(t, "%s%" PRId64, i ? "x" : "", v[i]);
}

size_t convfind_problem_describe(const convfind_problem *problem, char *buf, size_t size)
{
    cf_clear_error();
    if (buf != NULL && size > 0)
        buf[0] = '\0';
    if (problem == NULL) {
        cf_fail(CONVFIND_ERR_NULL_POINTER, "convfind_problem_describe: problem is NULL");
        return 0;
    }
    const cf_problem *p = problem;
    text t = {buf, buf ? size : 0, 0};
    put(&t, "%s %s %s N=%" PRId64 " C=%" PRId64, op_name(p->op), dtype_name(p->dtype),
        p->layout == CONVFIND_LAYOUT_NCHW ? "nchw" : "nhwc", p->n, p->c);
    put_dims(&t, "in", p->in, p->nsp);
    put(&t, " M=%" PRId64, p->m);
    put_dims(&t, "k", p->k, p->nsp);
    put_dims(&t, "s", p->stride, p->nsp);
    put_dims(&t, "d", p->dil, p->nsp);
    put(&t, " pads=");
    for (int i = 0; i < 2 * p->nsp; i++)
        put(&t, "%s%" PRId64, i ? "," : "", i < p->nsp ? p->pad_begin[i] : p->pad_end[i - p->nsp]);
    if (p->op == CONVFIND_OP_CONV_TRANSPOSE)
        put_dims(&t, "outpad", p->out_pad, p->nsp);
    put(&t, " g=%" PRId64, p->group);
    put_dims(&t, "out", p->out, p->nsp);
    if (p->has_bias)
        put(&t, " bias");
    if (p->has_residual)
        put(&t, " residual");
    if (p->act != CONVFIND_ACT_NONE) {
        put(&t, " act=%s", act_name(p->act));
        if (act_param_count(p->act) == 1)
            put(&t, ":%g", (double)p->alpha);
        else if (act_param_count(p->act) == 2)
            put(&t, ":%g,%g", (double)p->alpha, (double)p->beta);
    }
    if (p->math_mode == CONVFIND_MATH_ALLOW_TF32)
        put(&t, " tf32");
    else if (p->math_mode == CONVFIND_MATH_ALLOW_SPLIT_TF32)
        put(&t, " split_tf32");
    return t.len;
}
