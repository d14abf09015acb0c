/*
 * shape.c - ONNX Conv / ConvTranspose output sizes and pads for one spatial axis.
 *
 * The formulas are the ONNX specification's as onnx.reference computes them (opsets
 * 11-22); docs/onnx-semantics.md states them and where onnxruntime differs.  Every
 * intermediate is computed with overflow checks because attributes come straight from
 * model files and may hold any int64.
 */
#include "problem/shape.h"

#include <inttypes.h>

#include "util/error.h"

int64_t cf_floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    if (a % b != 0 && a < 0)
        q--;
    return q;
}

static convfind_status overflow(const cf_axis *a, const char *what)
{
    return cf_fail(CONVFIND_ERR_OVERFLOW, "spatial axis %d: %s overflows int64 (input %" PRId64
                   ", kernel %" PRId64 ", stride %" PRId64 ", dilation %" PRId64 ")",
                   a->index, what, a->in, a->k, a->stride, a->dil);
}

/* (k - 1) * dilation + 1: the span the dilated kernel covers. */
static convfind_status kernel_extent(const cf_axis *a, int64_t *ext)
{
    if (__builtin_mul_overflow(a->k - 1, a->dil, ext) || __builtin_add_overflow(*ext, 1, ext))
        return overflow(a, "dilated kernel extent (k - 1) * dilation + 1");
    return CONVFIND_OK;
}

convfind_status cf_axis_conv(convfind_auto_pad auto_pad, cf_axis *a)
{
    int64_t ext;
    convfind_status st = kernel_extent(a, &ext);
    if (st != CONVFIND_OK)
        return st;

    if (auto_pad == CONVFIND_AUTO_PAD_SAME_UPPER || auto_pad == CONVFIND_AUTO_PAD_SAME_LOWER) {
        /* out = ceil(in / stride); the padding is whatever makes that true, with the
         * dilated kernel extent (the spec and onnx.reference; onnxruntime refuses
         * dilations here). */
        int64_t out = a->in / a->stride + (a->in % a->stride != 0);
        int64_t need;
        if (__builtin_mul_overflow(out - 1, a->stride, &need) ||
            __builtin_add_overflow(need, ext, &need))
            return overflow(a, "SAME padding (out - 1) * stride + kernel extent");
        need -= a->in;
        if (need < 0)
            need = 0;
        /* An odd total puts the extra pixel at the end for SAME_UPPER and at the
         * beginning for SAME_LOWER. */
        a->pad_begin = auto_pad == CONVFIND_AUTO_PAD_SAME_UPPER ? need / 2 : need - need / 2;
        a->pad_end = need - a->pad_begin;
        a->out = out;
        return CONVFIND_OK;
    }
    if (auto_pad == CONVFIND_AUTO_PAD_VALID) {
        a->pad_begin = 0;
        a->pad_end = 0;
    }
    int64_t span;
    if (__builtin_add_overflow(a->in, a->pad_begin, &span) ||
        __builtin_add_overflow(span, a->pad_end, &span))
        return overflow(a, "padded input size in + pads");
    if (span < ext)
        return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                       "spatial axis %d: output size would be 0: padded input %" PRId64
                       " (input %" PRId64 " + pads %" PRId64 ",%" PRId64
                       ") is smaller than the dilated kernel extent %" PRId64,
                       a->index, span, a->in, a->pad_begin, a->pad_end, ext);
    a->out = (span - ext) / a->stride + 1;
    return CONVFIND_OK;
}

convfind_status cf_axis_conv_transpose(convfind_auto_pad auto_pad, cf_axis *a)
{
    int64_t ext, full;
    convfind_status st = kernel_extent(a, &ext);
    if (st != CONVFIND_OK)
        return st;
    /* full = stride * (in - 1) + output_padding + kernel extent: the output before pads. */
    if (__builtin_mul_overflow(a->in - 1, a->stride, &full) ||
        __builtin_add_overflow(full, ext, &full) ||
        __builtin_add_overflow(full, a->out_pad, &full))
        return overflow(a, "stride * (in - 1) + output_padding + kernel extent");

    const int same = auto_pad == CONVFIND_AUTO_PAD_SAME_UPPER ||
                     auto_pad == CONVFIND_AUTO_PAD_SAME_LOWER;
    int64_t target = a->out_shape;
    if (target == 0 && same && __builtin_mul_overflow(a->in, a->stride, &target))
        return overflow(a, "SAME output size in * stride");

    if (target == 0) {
        if (auto_pad == CONVFIND_AUTO_PAD_VALID) {
            a->pad_begin = 0;
            a->pad_end = 0;
        }
        /* Compared before subtracting: two huge pads would overflow the difference. */
        if (a->pad_begin >= full || a->pad_end >= full - a->pad_begin)
            return cf_fail(CONVFIND_ERR_INVALID_SHAPE,
                           "spatial axis %d: output size would be <= 0: unpadded output %"
                           PRId64 " minus pads %" PRId64 ",%" PRId64,
                           a->index, full, a->pad_begin, a->pad_end);
        a->out = full - a->pad_begin - a->pad_end;
        return CONVFIND_OK;
    }

    /* Both operands are positive, so the difference fits. */
    const int64_t total = full - target;
    if (same) {
        /* Floor division: for a negative total C's truncation would move the odd
         * pixel to the wrong side. */
        const int64_t half = cf_floor_div(total, 2);
        a->pad_begin = auto_pad == CONVFIND_AUTO_PAD_SAME_UPPER ? half : total - half;
        a->pad_end = total - a->pad_begin;
    } else if (total >= 0) {
        /* The specification's "else" branch: the extra pixel goes to the beginning. */
        a->pad_begin = total - total / 2;
        a->pad_end = total / 2;
    } else {
        /* output_shape beyond the unpadded output without auto_pad: onnx.reference and
         * onnxruntime both keep pad_begin 0 and extend the end, which acts as extra
         * output padding and, like output padding, must stay below the stride. */
        const int64_t extra = target - (full - a->out_pad);
        if (extra >= a->stride)
            return cf_fail(CONVFIND_ERR_INVALID_ATTRIBUTE,
                           "output_shape[%d] = %" PRId64 " cannot be produced by input size %"
                           PRId64 ": without auto_pad the output may exceed stride * (in - 1) +"
                           " kernel extent = %" PRId64 " by at most stride - 1 = %" PRId64,
                           a->index, target, a->in, full - a->out_pad, a->stride - 1);
        a->pad_begin = 0;
        a->pad_end = total;
    }
    a->out = target;
    return CONVFIND_OK;
}
