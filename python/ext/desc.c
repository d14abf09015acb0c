/*
 * desc.c - the one place that fills a convfind_conv_desc.  convfind/_attrs.py turns
 * ONNX-style keyword arguments into a "spec" tuple of plain integers and tuples, in
 * the order of SPEC_* below; this file copies it into the C structure.  Values are not
 * judged here: convfind_problem_create() validates them and names what is wrong.
 */
#include "cfpy.h"

enum {
    SPEC_OP, SPEC_DTYPE, SPEC_LAYOUT, SPEC_MATH, SPEC_X, SPEC_W, SPEC_BIAS, SPEC_RESIDUAL,
    SPEC_GROUP, SPEC_AUTO_PAD, SPEC_KERNEL_SHAPE, SPEC_STRIDES, SPEC_DILATIONS, SPEC_PADS,
    SPEC_OUTPUT_PADDING, SPEC_OUTPUT_SHAPE, SPEC_ACTIVATION, SPEC_ALPHA, SPEC_BETA,
    SPEC_LEN
};

static const char *const spec_names[SPEC_LEN] = {
    "op", "dtype", "layout", "math", "x", "w", "bias", "residual", "group", "auto_pad",
    "kernel_shape", "strides", "dilations", "pads", "output_padding", "output_shape",
    "activation", "alpha", "beta"};

/* Copies a tuple of integers into `dst` (at most `cap` values); -1 with an error. */
static int int_tuple(PyObject *spec, int index, int64_t *dst, int cap, int *count)
{
    PyObject *t = PyTuple_GET_ITEM(spec, index);
    if (!PyTuple_Check(t)) {
        PyErr_Format(PyExc_TypeError, "spec field %s must be a tuple", spec_names[index]);
        return -1;
    }
    Py_ssize_t n = PyTuple_GET_SIZE(t);
    if (n > cap) {
        cfpy_raise_fmt(CONVFIND_ERR_INVALID_RANK, "%s has %zd values; at most %d are possible",
                       spec_names[index], n, cap);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        long long v = PyLong_AsLongLong(PyTuple_GET_ITEM(t, i));
        if (v == -1 && PyErr_Occurred())
            return -1;
        dst[i] = (int64_t)v;
    }
    *count = (int)n;
    return 0;
}

static int int_field(PyObject *spec, int index, long long *out)
{
    *out = PyLong_AsLongLong(PyTuple_GET_ITEM(spec, index));
    return (*out == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int ints_attr(PyObject *spec, int index, convfind_ints *out)
{
    return int_tuple(spec, index, out->v, 2 * CONVFIND_MAX_SPATIAL, &out->count);
}

int cfpy_desc_from_spec(PyObject *spec, convfind_conv_desc *d)
{
    if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != SPEC_LEN) {
        PyErr_Format(PyExc_TypeError, "spec must be a tuple of %d fields", SPEC_LEN);
        return -1;
    }
    convfind_conv_desc_init(d);
    long long op, dtype, layout, math, bias, residual, group, auto_pad, act;
    if (int_field(spec, SPEC_OP, &op) < 0 || int_field(spec, SPEC_DTYPE, &dtype) < 0 ||
        int_field(spec, SPEC_LAYOUT, &layout) < 0 || int_field(spec, SPEC_MATH, &math) < 0 ||
        int_field(spec, SPEC_BIAS, &bias) < 0 || int_field(spec, SPEC_RESIDUAL, &residual) < 0 ||
        int_field(spec, SPEC_GROUP, &group) < 0 ||
        int_field(spec, SPEC_AUTO_PAD, &auto_pad) < 0 ||
        int_field(spec, SPEC_ACTIVATION, &act) < 0)
        return -1;
    d->op = (convfind_op)op;
    d->dtype = (convfind_dtype)dtype;
    d->layout = (convfind_layout)layout;
    d->math_mode = (convfind_math_mode)math;
    d->has_bias = bias != 0;
    d->has_residual = residual != 0;
    d->group = (int64_t)group;
    d->auto_pad = (convfind_auto_pad)auto_pad;
    d->activation = (convfind_activation)act;
    if (int_tuple(spec, SPEC_X, d->x_dims, CONVFIND_MAX_RANK, &d->x_rank) < 0 ||
        int_tuple(spec, SPEC_W, d->w_dims, CONVFIND_MAX_RANK, &d->w_rank) < 0 ||
        ints_attr(spec, SPEC_KERNEL_SHAPE, &d->kernel_shape) < 0 ||
        ints_attr(spec, SPEC_STRIDES, &d->strides) < 0 ||
        ints_attr(spec, SPEC_DILATIONS, &d->dilations) < 0 ||
        ints_attr(spec, SPEC_PADS, &d->pads) < 0 ||
        ints_attr(spec, SPEC_OUTPUT_PADDING, &d->output_padding) < 0 ||
        ints_attr(spec, SPEC_OUTPUT_SHAPE, &d->output_shape) < 0)
        return -1;
    double alpha = PyFloat_AsDouble(PyTuple_GET_ITEM(spec, SPEC_ALPHA));
    double beta = PyFloat_AsDouble(PyTuple_GET_ITEM(spec, SPEC_BETA));
    if (PyErr_Occurred())
        return -1;
    d->alpha = (float)alpha;
    d->beta = (float)beta;
    return 0;
}

void cfpy_physical_dims(convfind_layout layout, int rank, const int64_t *logical,
                        int64_t *physical)
{
    if (layout != CONVFIND_LAYOUT_NHWC || rank < 2) {
        for (int i = 0; i < rank; i++)
            physical[i] = logical[i];
        return;
    }
    physical[0] = logical[0];
    for (int i = 2; i < rank; i++)
        physical[i - 1] = logical[i];
    physical[rank - 1] = logical[1];
}
