/*
 * shape.h - ONNX output-shape and padding formulas for one spatial axis.
 *
 * problem.c validates the attributes and then resolves each spatial axis through one of
 * the two functions below.  They are kept apart from validation because they are the
 * part that must match the ONNX specification and its reference implementation to the
 * last rounding rule (docs/onnx-semantics.md derives every line).  All arithmetic is
 * checked: huge attribute values give CONVFIND_ERR_OVERFLOW, never a wrapped result.
 */
#ifndef CONVFIND_SHAPE_H
#define CONVFIND_SHAPE_H

#include <stdint.h>

#include "convfind.h"

/* One spatial axis.  Inputs are already validated (in, k, stride, dil >= 1; explicit
 * pads >= 0; out_pad >= 0).  `out_shape` is the requested ConvTranspose output size, or
 * 0 when output_shape is absent.  `pad_begin` / `pad_end` hold the explicit pads on
 * entry and the resolved pads on return; `out` receives the output size (>= 1). */
typedef struct cf_axis {
    int index;            /* ONNX spatial axis, for messages */
    int64_t in, k, stride, dil;
    int64_t out_pad;      /* ConvTranspose only */
    int64_t out_shape;    /* ConvTranspose only; 0: absent */
    int64_t pad_begin, pad_end;
    int64_t out;
} cf_axis;

/* Conv: resolves pads from auto_pad and computes the output size.  Fails with
 * CONVFIND_ERR_INVALID_SHAPE when the output would be empty. */
convfind_status cf_axis_conv(convfind_auto_pad auto_pad, cf_axis *a);

/* ConvTranspose: resolves pads from auto_pad / output_shape and computes the output
 * size.  Fails with CONVFIND_ERR_INVALID_SHAPE when the output would be empty and with
 * CONVFIND_ERR_INVALID_ATTRIBUTE when output_shape cannot be produced by this input. */
convfind_status cf_axis_conv_transpose(convfind_auto_pad auto_pad, cf_axis *a);

/* floor(a / b) for b > 0; C's `/` truncates toward zero, which differs for a < 0. */
int64_t cf_floor_div(int64_t a, int64_t b);

#endif /* CONVFIND_SHAPE_H */
