"""ONNX-style keyword arguments -> the spec tuple the C extension takes.

The one place where attribute names, enum spellings and defaults of the Python API are
turned into convfind_conv_desc values (python/ext/desc.c reads the tuple in the order
of ``spec()`` below).  Spellings are accepted in the lower-case form of the problem-list
format (``same_upper``, ``leaky_relu``) and in ONNX's own (``SAME_UPPER``, ``LeakyRelu``).
"""

import math as _math
import re

OPS = {"conv": 0, "conv_transpose": 1}
DTYPES = {"float32": 0, "float16": 1, "bfloat16": 2}
DTYPE_ALIASES = {"f32": "float32", "f16": "float16", "bf16": "bfloat16", "half": "float16"}
LAYOUTS = {"nchw": 0, "nhwc": 1}
MATH = {"strict": 0, "tf32": 1, "split_tf32": 2}
AUTO_PADS = {"notset": 0, "same_upper": 1, "same_lower": 2, "valid": 3}
ACTIVATIONS = {
    "none": 0,
    "relu": 1,
    "leaky_relu": 2,
    "clip": 3,
    "sigmoid": 4,
    "tanh": 5,
    "hard_sigmoid": 6,
}
POLICIES = {"default": 0, "heuristic": 1, "exhaustive": 2, "hybrid": 3, "replay": 4,
            "deferred": 5}
DB_ENV_POLICIES = {"retune": 0, "ignore": 1}
WEIGHTS = {"per_call": False, "constant": True}
DEVICES = {"cpu": 0, "cuda": 1}

FLT_MAX = 3.4028234663852886e38

# ONNX's defaults for the activation parameters (alpha, beta), as FusedConv uses them.
ACTIVATION_DEFAULTS = {
    "leaky_relu": (0.01, 0.0),
    "clip": (-FLT_MAX, FLT_MAX),
    "hard_sigmoid": (0.2, 0.5),
}


def snake(name):
    """'LeakyRelu' -> 'leaky_relu', 'SAME_UPPER' -> 'same_upper', 'ConvTranspose' -> ..."""
    if name.isupper() or "_" in name:
        return name.lower()
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def choice(table, value, what):
    """The enum value of `value` in `table`, or a ValueError listing the choices."""
    key = snake(value) if isinstance(value, str) else value
    if key in table:
        return table[key]
    raise ValueError(f"{what}={value!r}: expected one of {', '.join(map(repr, table))}")


def constant_weights(w, weights):
    """Whether plans of this usage hold their weights: `weights` ('constant' or
    'per_call'), else whether w is an array rather than a shape, as Context.plan reads it."""
    if weights is None:
        return not isinstance(w, (tuple, list))
    return choice(WEIGHTS, weights, "weights")


def dtype_name(value):
    """Canonical dtype name of a numpy/torch dtype, a string, or None (float32)."""
    if value is None:
        return "float32"
    text = str(value).lower().replace("torch.", "")
    text = DTYPE_ALIASES.get(text, text)
    if text not in DTYPES:
        raise TypeError(f"dtype {value!r}: convfind takes float32, float16 or bfloat16")
    return text


def device(value):
    """'cpu', 'cuda' or 'cuda:N' -> (device code, index)."""
    name, _, index = str(value).partition(":")
    code = choice(DEVICES, name, "device")
    if index and not index.isdigit():
        raise ValueError(f"device={value!r}: expected 'cpu', 'cuda' or 'cuda:N'")
    return code, int(index or 0)


def ints(value, what):
    """An attribute list as a tuple of ints; None or () means absent."""
    if value is None:
        return ()
    if isinstance(value, int):
        raise TypeError(f"{what} must be a sequence of integers, not {value!r}")
    return tuple(int(v) for v in value)


def shape_of(obj, what):
    """The shape of an array, or a shape given as a tuple/list of ints."""
    if isinstance(obj, (tuple, list)):
        return tuple(int(d) for d in obj)
    shape = getattr(obj, "shape", None)
    if shape is None:
        raise TypeError(f"{what} must be an array or a shape, not {type(obj).__name__}")
    return tuple(int(d) for d in shape)


def activation_params(activation, alpha, beta):
    """(code, alpha, beta) with ONNX's defaults filled in."""
    name = "none" if activation is None else snake(activation)
    code = choice(ACTIVATIONS, name, "activation")
    default_alpha, default_beta = ACTIVATION_DEFAULTS.get(name, (0.0, 0.0))
    alpha = default_alpha if alpha is None else float(alpha)
    beta = default_beta if beta is None else float(beta)
    if _math.isnan(alpha) or _math.isnan(beta):
        raise ValueError("alpha and beta must not be NaN")
    return code, alpha, beta


def spec(x_shape, w_shape, *, dtype, bias, residual, op="conv", pads=None, strides=None,
         dilations=None, group=1, auto_pad="notset", kernel_shape=None, output_padding=None,
         output_shape=None, activation=None, alpha=None, beta=None, layout="nchw",
         math="strict"):
    """The spec tuple of one problem.  x_shape is in `layout` order; w_shape in ONNX's."""
    layout_code = choice(LAYOUTS, layout, "layout")
    x = tuple(x_shape)
    if layout_code == 1 and len(x) >= 2:
        x = (x[0], x[-1]) + x[1:-1]
    act, alpha, beta = activation_params(activation, alpha, beta)
    return (
        choice(OPS, op, "op"),
        DTYPES[dtype_name(dtype)],
        layout_code,
        choice(MATH, math, "math"),
        x,
        tuple(w_shape),
        1 if bias else 0,
        1 if residual else 0,
        int(group),
        choice(AUTO_PADS, auto_pad, "auto_pad"),
        ints(kernel_shape, "kernel_shape"),
        ints(strides, "strides"),
        ints(dilations, "dilations"),
        ints(pads, "pads"),
        ints(output_padding, "output_padding"),
        ints(output_shape, "output_shape"),
        act,
        alpha,
        beta,
    )
