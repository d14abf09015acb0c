"""ONNX models as input: the convolution problems of a model, and the problem-list text.

    import convfind.onnx
    probs = convfind.onnx.problems("model.onnx", {"input": (1, 3, 224, 224)})
    convfind.onnx.write_problem_list(probs, sys.stdout)

or, from a shell (what `convfind tune model.onnx` runs):

    python -m convfind.onnx model.onnx --input-shape input=1,3,224,224 > list.txt

problems() lists every Conv and ConvTranspose with resolved shapes and with the fusions
ONNX Runtime applies to them (see convfind/onnx/_graph.py), so that tuning the list
decides exactly the problems that a session rewritten by convfind.onnxruntime plans.
The problem-list format (docs/python.md) is one problem per line of whitespace-separated
key=value tokens; '#' starts a comment; absent keys take ONNX's defaults.
"""

import dataclasses
from dataclasses import dataclass

import numpy as np

from ._graph import ModelError, convolutions

__all__ = ["ModelError", "Problem", "format_problem", "problems", "write_problem_list"]

_FLT_MAX = 3.4028234663852886e38


@dataclass(frozen=True)
class Problem:
    """One convolution problem, with the keys of the problem-list format."""

    name: str
    op: str                          # "conv" or "conv_transpose"
    x: tuple                         # N, C, spatial... (ONNX order)
    w: tuple                         # ONNX W dims
    dtype: str = "f32"               # "f32", "f16" or "bf16"
    count: int = 1
    group: int = 1
    pads: tuple = None               # all begins, then all ends; None: absent
    strides: tuple = None
    dilations: tuple = None
    kernel_shape: tuple = None
    auto_pad: str = "notset"
    output_padding: tuple = None
    output_shape: tuple = None
    bias: bool = False
    residual: bool = False
    act: str = "none"
    alpha: float = 0.0
    beta: float = 0.0
    layout: str = "nchw"
    math: str = "strict"
    weights: str = "const"           # "const" (an initializer) or "var"

    def attributes(self):
        """Keyword arguments of Context.key() and .find() for this problem (with x and w
        given as the shapes self.x and self.w; Context.plan() takes all but weights)."""
        kwargs = dict(op=self.op, group=self.group, auto_pad=self.auto_pad,
                      layout=self.layout, math=self.math, dtype=self.dtype,
                      b=True if self.bias else None, z=True if self.residual else None,
                      weights="constant" if self.weights == "const" else "per_call")
        for key in ("pads", "strides", "dilations", "kernel_shape", "output_padding",
                    "output_shape"):
            if getattr(self, key) is not None:
                kwargs[key] = getattr(self, key)
        if self.act != "none":
            kwargs.update(activation=self.act, alpha=self.alpha, beta=self.beta)
        return kwargs

    def same_problem(self, other):
        """Equal in everything but name and count."""
        strip = dict(name="", count=1)
        return dataclasses.replace(self, **strip) == dataclasses.replace(other, **strip)


def _ints(value):
    return None if value is None else tuple(int(v) for v in value)


def _problem(c, math):
    a = c.attrs
    auto_pad = str(a.get("auto_pad", "NOTSET")).lower()
    return Problem(
        name="".join(ch if ch.isprintable() and not ch.isspace() else "_" for ch in c.name)
        or "conv",
        op=c.op, x=c.x_shape, w=c.w_shape, dtype=c.dtype, group=int(a.get("group", 1)),
        pads=_ints(a.get("pads")), strides=_ints(a.get("strides")),
        dilations=_ints(a.get("dilations")), kernel_shape=_ints(a.get("kernel_shape")),
        auto_pad=auto_pad, output_padding=_ints(a.get("output_padding")),
        output_shape=_ints(a.get("output_shape")), bias=c.has_bias, residual=c.z is not None,
        act=c.activation, alpha=float(np.float32(c.alpha)), beta=float(np.float32(c.beta)),
        math=math, weights="const" if c.w_value is not None else "var")


def problems(model, input_shapes=None, *, math="strict"):
    """Every Conv and ConvTranspose of `model`, in node order, as Problem records.

    model         a path, the serialized bytes, or an onnx.ModelProto (external data is
                  read from next to the model file)
    input_shapes  {input name: shape} binding the model's symbolic dimensions
    math          the math mode recorded in each problem ('strict' or 'tf32')

    Shapes come from ONNX shape inference; a convolution whose shapes stay unknown, a
    file that is not a valid model, or an unknown input name raise ModelError naming
    it.  Convolutions of element types convfind does not run (double, integers) are
    left out with a warning."""
    import warnings

    _, convs, notes = convolutions(model, input_shapes)
    for note in notes:
        warnings.warn(note, stacklevel=2)
    return [_problem(c, math) for c in convs]


def _join(values):
    return ",".join(str(int(v)) for v in values)


def _float(value):
    if abs(value) >= _FLT_MAX:
        return "-3.40282347e+38" if value < 0 else "3.40282347e+38"
    return format(float(np.float32(value)), ".9g")


_PARAMS = {"leaky_relu": ("alpha",), "clip": ("alpha", "beta"),
           "hard_sigmoid": ("alpha", "beta")}


def format_problem(p):
    """One line of the problem-list format (no newline)."""
    tokens = [f"name={p.name}", f"count={p.count}", f"op={p.op}", f"x={_join(p.x)}",
              f"w={_join(p.w)}"]
    if p.group != 1:
        tokens.append(f"group={p.group}")
    for key in ("pads", "strides", "dilations", "kernel_shape", "output_padding",
                "output_shape"):
        value = getattr(p, key)
        if value is not None:
            tokens.append(f"{key}={_join(value)}")
    if p.auto_pad != "notset":
        tokens.append(f"auto_pad={p.auto_pad}")
    tokens += [f"bias={int(p.bias)}", f"residual={int(p.residual)}"]
    if p.act != "none":
        tokens.append(f"act={p.act}")
        for key in _PARAMS.get(p.act, ()):
            tokens.append(f"{key}={_float(getattr(p, key))}")
    if p.layout != "nchw":
        tokens.append(f"layout={p.layout}")
    tokens.append(f"dtype={p.dtype}")
    if p.math != "strict":
        tokens.append(f"math={p.math}")
    tokens.append(f"weights={p.weights}")
    return " ".join(tokens)


def merge(problem_list):
    """Identical problems folded into one entry (the first one's name), counts added."""
    merged = []
    for p in problem_list:
        for i, q in enumerate(merged):
            if q.same_problem(p):
                merged[i] = dataclasses.replace(q, count=q.count + p.count)
                break
        else:
            merged.append(p)
    return merged


def write_problem_list(problem_list, out, *, source=None):
    """Writes the problems, identical ones merged (count=), to the text stream `out`."""
    merged = merge(problem_list)
    if source is not None:
        out.write(f"# {source}\n")
    out.write(f"# {sum(p.count for p in merged)} convolutions, {len(merged)} distinct "
              f"problems (convfind.onnx)\n")
    for p in merged:
        out.write(format_problem(p) + "\n")
