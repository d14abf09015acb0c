"""test_differential.py - convfind against onnxruntime (and onnx.reference) on random
valid problems, plus a few invalid ones.

Each case draws one Conv or ConvTranspose problem from a seeded generator (a fifth of
them shaped like real 2-D layers, for the specialised algorithms) that covers every
attribute: 1-D/2-D/3-D, N 1..3, groups (plain, grouped, depthwise with channel
multipliers), strides, dilations, explicit begin != end pads, all four auto_pad values
(odd SAME totals included), kernel_shape given or not, output_padding (also with
dilations, and at or above the stride where the dilation allows it), output_shape (also
with auto_pad and with negative total padding), bias, residual Z with every activation,
NCHW and NHWC.  A tenth of the cases take attributes near the int64 limits that still
leave a few outputs (issue 16): strides up to 2^63 - 1 on short axes, pads of up to 2^61
cropped by strides of the same size so that the outputs lie far apart, dilations of up
to 2^60 whose taps straddle such pads, and ConvTranspose strides and dilations cropped
by pads.  The expected output is computed by an oracle:

  onnxruntime       the CPU provider running a one-node model with the same attributes;
                    bias goes into the node, Z and the activation are applied in numpy
                    (FusedConv semantics: y = act(conv + b + z)).
  onnx.reference    where onnxruntime refuses or deviates from the specification:
                    Conv with dilations under SAME_*; ConvTranspose SAME_* whose kernel
                    extent + output_padding is below the stride (onnxruntime's output is
                    shorter than input * stride); ConvTranspose SAME_* + output_shape
                    with a negative begin pad (onnxruntime clamps it to 0) or asking for
                    stride or more outputs past stride * (in - 1) + kernel extent
                    (onnxruntime refuses it).  Its grouped
                    ConvTranspose is broken, so groups are run one at a time.
  onnxruntime-window  ConvTranspose with output_padding >= stride (allowed while below
                    the dilation), which both refuse: onnxruntime computes the unpadded
                    transposed convolution, and the specification's output is the window
                    [pad_begin, pad_begin + out) of it, zero outside.

Expected shapes come from an independent implementation of the ONNX shape formulas
below, checked against every oracle's output shape.  Tolerance per element:
|got - exp| <= 1e-4 * (1 + |exp|) * max(1, L / 64), L = C/group * prod(kernel) terms.

Two fifths of the layer-shaped cases allow reduced precision (math mode tf32), the only
problems cpu.winograd_f6x3 takes.  They are held to the same tolerance: F(6x6,3x3)'s error,
about ten times direct convolution's on ResNet-50's layers (docs/winograd.md), stays within
it on problems of these sizes (at most 16 channels per group).

Every case runs with the default plan and with each registered algorithm forced (only
CONVFIND_ALGO when that is set); the oracle is computed once per case.  A forced
algorithm must be compared on at least MIN_FORCED cases of a full run (an algorithm whose
domain the generator misses tests nothing while looking green), and under CONVFIND_ISA
every plan's key must name that ISA level: the level its kernels ran at (a level above
the machine's would silently run the machine's; such a run is skipped, saying so).
Environment: CONVFIND_DIFF_SEED (default 20261129), CONVFIND_DIFF_CASES (default 2000),
CONVFIND_DIFF_CASE (run only that case index, to reproduce a failure), CONVFIND_ALGO,
CONVFIND_ISA.
"""

import collections
import os

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import convfind_ctypes as cf

SEED = int(os.environ.get("CONVFIND_DIFF_SEED", "20261129"))
COUNT = int(os.environ.get("CONVFIND_DIFF_CASES", "2000"))
ONLY = os.environ.get("CONVFIND_DIFF_CASE")
MIN_CASES = 1000
MIN_FORCED = 20  # compared cases per forced algorithm in a run of MIN_CASES or more
ISA = os.environ.get("CONVFIND_ISA") or None
OPSET = 22

ACTIVATIONS = ["none", "relu", "leaky_relu", "clip", "sigmoid", "tanh", "hard_sigmoid"]
SAME = ("SAME_UPPER", "SAME_LOWER")

ORT = "onnxruntime"
REF = "onnx.reference"
WINDOW = "onnxruntime-window"


# --------------------------------------------------------------------------- shapes

def resolve(op, ins, ks, attrs):
    """Output spatial dims and resolved pads by the ONNX formulas, or None when the
    problem is invalid.  Where the text of the specification is ambiguous this follows
    onnx.reference: ConvTranspose with output_shape beyond the unpadded output and no
    auto_pad keeps pad_begin 0 (and is valid only up to stride - 1 beyond it)."""
    nsp = len(ins)
    if not _fits_int64(op, ins, ks, attrs):
        return None
    s = attrs.get("strides", [1] * nsp)
    d = attrs.get("dilations", [1] * nsp)
    ap = attrs.get("auto_pad", "NOTSET")
    pads = attrs.get("pads", [0] * 2 * nsp)
    opad = attrs.get("output_padding", [0] * nsp)
    oshape = attrs.get("output_shape")
    out, pb, pe = [], [], []
    for a in range(nsp):
        ext = (ks[a] - 1) * d[a] + 1
        if op == "Conv":
            if ap in SAME:
                o = -(-ins[a] // s[a])
                total = max(0, (o - 1) * s[a] + ext - ins[a])
                b = total // 2 if ap == "SAME_UPPER" else total - total // 2
                e = total - b
            else:
                b, e = (0, 0) if ap == "VALID" else (pads[a], pads[a + nsp])
                o = (ins[a] + b + e - ext) // s[a] + 1 if ins[a] + b + e >= ext else 0
        else:
            if opad[a] >= s[a] and opad[a] >= d[a]:
                return None
            full = s[a] * (ins[a] - 1) + opad[a] + ext
            target = oshape[a] if oshape else (ins[a] * s[a] if ap in SAME else None)
            if target is None:
                b, e = (0, 0) if ap == "VALID" else (pads[a], pads[a + nsp])
                o = full - b - e
            else:
                total = full - target
                if ap in SAME:
                    b = total // 2 if ap == "SAME_UPPER" else total - total // 2
                    e = total - b
                elif total >= 0:
                    b, e = total - total // 2, total // 2
                else:
                    if target - (full - opad[a]) >= s[a]:
                        return None
                    b, e = 0, total
                o = target
        if o < 1:
            return None
        out.append(o)
        pb.append(b)
        pe.append(e)
    return out, pb, pe


INT64_MAX = 2**63 - 1


def _fits_int64(op, ins, ks, attrs):
    """Whether the sizes resolve() goes through fit int64, as convfind computes
    them (it reports CONVFIND_ERR_OVERFLOW otherwise): the kernel extent, and Conv's
    padded input or ConvTranspose's unpadded output and SAME output."""
    nsp = len(ins)
    s = attrs.get("strides", [1] * nsp)
    d = attrs.get("dilations", [1] * nsp)
    pads = attrs.get("pads", [0] * 2 * nsp)
    opad = attrs.get("output_padding", [0] * nsp)
    same = attrs.get("auto_pad", "NOTSET") in SAME and "output_shape" not in attrs
    for a in range(nsp):
        ext = (ks[a] - 1) * d[a] + 1
        if op == "Conv":
            sizes = [ext, ins[a] + pads[a] + pads[a + nsp]]
        else:
            sizes = [ext, s[a] * (ins[a] - 1) + ext + opad[a], ins[a] * s[a] if same else 0]
        if max(sizes) > INT64_MAX:
            return False
    return True


# --------------------------------------------------------------------------- generator

def _pick(rng, choices, p=None):
    return choices[rng.choice(len(choices), p=p)]


def _ints(rng, lo, hi, n):
    return [int(v) for v in rng.integers(lo, hi + 1, n)]


def draw_case(index):
    """Case `index` of the seeded sequence; redrawn until valid."""
    rng = np.random.default_rng([SEED, index])
    while True:
        case = _draw(rng)
        res = resolve(case["op"], case["in"], case["k"], case["attrs"])
        if res is not None:
            case["out"], case["pb"], case["pe"] = res
            return case, rng


def _draw(rng):
    u = rng.random()
    geometry = _layer_geometry if u < 0.2 else _extreme_geometry if u < 0.3 else _any_geometry
    case = geometry(rng)
    case.setdefault("math", "strict")
    case.update({
        "n": int(rng.integers(1, 4)), "layout": _pick(rng, ["NCHW", "NHWC"]),
        "bias": bool(rng.random() < 0.5), "residual": bool(rng.random() < 0.35),
        "act": _pick(rng, ACTIVATIONS), "alpha": 0.0, "beta": 0.0,
    })
    if case["act"] == "leaky_relu":
        case["alpha"] = float(np.float32(rng.uniform(0.01, 0.5)))
    elif case["act"] == "clip":
        lo = rng.uniform(-1.0, 0.2)
        case["alpha"] = float(np.float32(lo))
        case["beta"] = float(np.float32(lo + rng.uniform(0.0, 1.5)))
    elif case["act"] == "hard_sigmoid":
        case["alpha"] = float(np.float32(rng.uniform(0.1, 0.5)))
        case["beta"] = float(np.float32(rng.uniform(0.2, 0.8)))
    return case


def _layer_geometry(rng):
    """A 2-D layer shaped like those of real networks (1x1 or 3x3, stride 1 or 2, more
    channels), so that the specialised fast algorithms meet enough problems too."""
    op = _pick(rng, ["Conv", "ConvTranspose"], [0.75, 0.25])
    k = _pick(rng, [1, 3], [0.35, 0.65])
    s = _pick(rng, [1, 2], [0.75, 0.25])
    kind = _pick(rng, ["plain", "depthwise"], [0.7, 0.3])
    g = 1 if kind == "plain" else int(rng.integers(2, 9))
    cg = int(rng.integers(1, 17)) if kind == "plain" else 1
    mg = int(rng.integers(1, 17)) if kind == "plain" else 1
    attrs = {"kernel_shape": [k, k]}
    if g > 1:
        attrs["group"] = g
    if s > 1:
        attrs["strides"] = [s, s]
    if k == 3:
        if rng.random() < 0.3:
            attrs["auto_pad"] = "SAME_UPPER"
        else:
            attrs["pads"] = [1, 1, 1, 1]
    return {"op": op, "nsp": 2, "g": g, "c": g * cg, "m": g * mg, "kind": kind,
            "in": _ints(rng, 4, 12, 2), "k": [k, k], "ext": [k, k], "attrs": attrs,
            "math": _pick(rng, ["strict", "tf32"], [0.6, 0.4])}


def _channels(rng):
    """Kind of grouping, groups, and input and output channels per group."""
    kind = _pick(rng, ["plain", "grouped", "depthwise"], [0.5, 0.25, 0.25])
    if kind == "plain":
        return kind, 1, int(rng.integers(1, 5)), int(rng.integers(1, 5))
    if kind == "grouped":
        return kind, int(rng.integers(2, 4)), int(rng.integers(1, 4)), int(rng.integers(1, 4))
    return kind, int(rng.integers(2, 5)), 1, int(rng.integers(1, 4))


def _any_geometry(rng):
    op = _pick(rng, ["Conv", "ConvTranspose"])
    nsp = _pick(rng, [1, 2, 3], [0.3, 0.45, 0.25])
    kind, g, cg, mg = _channels(rng)
    ins = _ints(rng, 1, {1: 12, 2: 7, 3: 5}[nsp], nsp)
    ks = _ints(rng, 1, {1: 5, 2: 4, 3: 3}[nsp], nsp)
    s = _ints(rng, 1, 3, nsp) if rng.random() < 0.6 else [1] * nsp
    d = _ints(rng, 1, 3, nsp) if rng.random() < 0.4 else [1] * nsp
    ext = [(k - 1) * dd + 1 for k, dd in zip(ks, d)]
    attrs = {}
    if g > 1 or rng.random() < 0.2:
        attrs["group"] = g
    if s != [1] * nsp or rng.random() < 0.3:
        attrs["strides"] = s
    if d != [1] * nsp or rng.random() < 0.3:
        attrs["dilations"] = d
    if rng.random() < 0.5:
        attrs["kernel_shape"] = ks
    ap = _pick(rng, ["NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"], [0.55, 0.15, 0.15, 0.15])
    if ap != "NOTSET" or rng.random() < 0.1:
        attrs["auto_pad"] = ap
    explicit_pads = ap == "NOTSET" and rng.random() < 0.75
    if op == "ConvTranspose":
        if rng.random() < 0.35:
            attrs["output_padding"] = [int(rng.integers(0, max(ss, dd))) for ss, dd in zip(s, d)]
        if rng.random() < 0.3:
            explicit_pads = False
            opad = attrs.get("output_padding", [0] * nsp)
            full = [ss * (i - 1) + o + e for ss, i, o, e in zip(s, ins, opad, ext)]
            lo = [-(ss + 2) if ap in SAME else -(ss - 1) for ss in s]
            attrs["output_shape"] = [f - int(rng.integers(l, e)) for f, l, e in zip(full, lo, ext)]
    if explicit_pads:
        attrs["pads"] = [int(rng.integers(0, e + 1)) for e in ext + ext]
    return {"op": op, "nsp": nsp, "g": g, "c": g * cg, "m": g * mg, "kind": kind,
            "in": ins, "k": ks, "ext": ext, "attrs": attrs}


def _huge(rng, lo, hi):
    """A value from 2^lo to 2^hi: a power of two, the int64 maximum (when hi is 63), or
    anything between."""
    e = int(rng.integers(lo, hi + 1))
    r = rng.random()
    if r < 0.3:
        return min(2**e, INT64_MAX)
    if r < 0.4 and hi == 63:
        return INT64_MAX
    return 2**(e - 1) + int(rng.integers(0, 2**(e - 1)))


def _extreme_conv_axis(rng, mode):
    """(in, k, stride, dilation, pad_begin, pad_end) of one Conv axis in `mode`; each
    leaves a few outputs, some of whose windows reach the input."""
    k, d = int(rng.integers(1, 4)), int(rng.integers(1, 3))
    ins = int(rng.integers(1, 7))
    ext = (k - 1) * d + 1
    if mode == "stride":  # one output, whatever the stride
        pb = int(rng.integers(0, ext))
        pe = int(rng.integers(0, ext))
        return max(ins, ext - pb - pe), k, _huge(rng, 31, 63), d, pb, pe
    if mode == "pads":  # outputs 2^33..2^59 apart, one window over the input's start
        s, n = _huge(rng, 33, 59), int(rng.integers(1, 5))
        hit = int(rng.integers(0, n))
        pb = hit * s + int(rng.integers(0, ext))
        pe = (n - 1 - hit) * s + int(rng.integers(0, ext))
        return max(ins, ext - pb - pe), k, s, d, pb, pe
    # "dilation": taps 2^31..2^60 apart, one of them over the input, the rest padding
    k = int(rng.integers(2, 4))
    d = _huge(rng, 31, 60)
    ext = (k - 1) * d + 1
    pb = max(0, int(rng.integers(0, k)) * d - int(rng.integers(0, ins)))
    pe = max(0, ext - ins - pb) + int(rng.integers(0, 3))
    s = _pick(rng, [1, 2, _huge(rng, 31, 62)])
    return ins, k, s, d, pb, pe


def _extreme_convt_axis(rng, mode):
    """(in, k, stride, dilation, pad_begin, pad_end, output_padding) of one ConvTranspose
    axis in `mode`, cropped by its pads to a few outputs; output_padding stays below the
    stride (above it the window oracle would need the uncropped output)."""
    k = int(rng.integers(1, 4))
    if mode == "stride":  # one input pixel, so the stride multiplies only 0
        s, d = _huge(rng, 31, 63), int(rng.integers(1, 3))
        opad = int(rng.integers(0, 4))
        full = (k - 1) * d + 1 + opad
        pb = int(rng.integers(0, full))
        return 1, k, s, d, pb, int(rng.integers(0, full - pb)), opad
    if mode == "pads":  # 2 or 3 inputs 2^31..2^61 apart, pads keep a few outputs
        ins, s, d = int(rng.integers(2, 4)), _huge(rng, 31, 61), 1
        opad = int(rng.integers(0, 3))
        pb = max(0, int(rng.integers(0, ins)) * s - int(rng.integers(0, 3)))
    else:  # "dilation": taps 2^31..2^60 apart, pads keep a few outputs near one of them
        ins, s, d = int(rng.integers(1, 3)), int(rng.integers(1, 3)), _huge(rng, 31, 60)
        opad = int(rng.integers(0, s))
        pb = max(0, int(rng.integers(0, k)) * d - int(rng.integers(0, 2)))
    full = s * (ins - 1) + (k - 1) * d + 1 + opad
    pb = min(pb, full - 1)
    pe = max(0, full - pb - int(rng.integers(1, 6)))
    return ins, k, s, d, pb, pe, opad


def _extreme_geometry(rng):
    """Attributes near the int64 limits on some axes (the modes above), small ones on the
    others; explicit pads, or auto_pad where no axis needs large pads."""
    op = _pick(rng, ["Conv", "ConvTranspose"], [0.65, 0.35])
    nsp = _pick(rng, [1, 2, 3], [0.35, 0.5, 0.15])
    kind, g, cg, mg = _channels(rng)
    modes = [_pick(rng, ["normal", "stride", "pads", "dilation"], [0.3, 0.3, 0.2, 0.2])
             for _ in range(nsp)]
    if modes.count("normal") == nsp:
        modes[int(rng.integers(0, nsp))] = "stride"
    axes = []
    for mode in modes:
        if mode == "normal":
            k, ins, s = int(rng.integers(1, 4)), int(rng.integers(3, 7)), int(rng.integers(1, 3))
            axes.append((ins, k, s, 1, int(rng.integers(0, k)), int(rng.integers(0, k)),
                         int(rng.integers(0, s))))
        elif op == "Conv":
            axes.append(_extreme_conv_axis(rng, mode) + (0,))
        else:
            axes.append(_extreme_convt_axis(rng, mode))
    ins, ks, s, d, pb, pe, opad = (list(v) for v in zip(*axes))
    attrs = {"strides": s, "dilations": d, "pads": pb + pe}
    if g > 1:
        attrs["group"] = g
    if op == "ConvTranspose" and any(opad):
        attrs["output_padding"] = opad
    if op == "Conv" and "pads" not in modes and "dilation" not in modes and \
            rng.random() < 0.3:
        del attrs["pads"]
        attrs["auto_pad"] = _pick(rng, ["SAME_UPPER", "SAME_LOWER", "VALID"])
    ext = [(k - 1) * dd + 1 for k, dd in zip(ks, d)]
    return {"op": op, "nsp": nsp, "g": g, "c": g * cg, "m": g * mg, "kind": kind,
            "in": ins, "k": ks, "ext": ext, "attrs": attrs}


def draw_data(case, rng):
    n, c, m, g = case["n"], case["c"], case["m"], case["g"]
    wshape = (m, c // g, *case["k"]) if case["op"] == "Conv" else (c, m // g, *case["k"])

    def u(*shape):
        return rng.uniform(-1.0, 1.0, shape).astype(np.float32)

    return {
        "X": u(n, c, *case["in"]),
        "W": u(*wshape),
        "B": u(m) if case["bias"] else None,
        "Z": u(n, m, *case["out"]) if case["residual"] else None,
    }


# --------------------------------------------------------------------------- oracles

def oracle_kind(case):
    op, attrs, nsp = case["op"], case["attrs"], case["nsp"]
    ap = attrs.get("auto_pad", "NOTSET")
    s = attrs.get("strides", [1] * nsp)
    d = attrs.get("dilations", [1] * nsp)
    opad = attrs.get("output_padding", [0] * nsp)
    if op == "Conv":
        if ap in SAME and any(v > 1 for v in d):
            return REF, "Conv dilations with SAME_*"
        return ORT, ""
    if any(o >= ss for o, ss in zip(opad, s)):
        return WINDOW, "ConvTranspose output_padding >= stride"
    if ap in SAME and "output_shape" not in attrs and \
            any(o + e < ss for o, e, ss in zip(opad, case["ext"], s)):
        return REF, "ConvTranspose SAME_* with extent + output_padding < stride"
    if ap in SAME and "output_shape" in attrs:
        if min(case["pb"]) < 0:
            return REF, "ConvTranspose SAME_* + output_shape, negative begin pad"
        if any(o - (b + e) >= ss for o, b, e, ss in zip(opad, case["pb"], case["pe"], s)):
            return REF, "ConvTranspose SAME_* + output_shape >= stride past the unpadded output"
    return ORT, ""


def _model(op, attrs, inputs):
    node = helper.make_node(op, [name for name, _ in inputs], ["Y"], **attrs)
    graph = helper.make_graph(
        [node], "case",
        [helper.make_tensor_value_info(name, TensorProto.FLOAT, a.shape) for name, a in inputs],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    model.ir_version = 10
    return model


_ORT_OPTIONS = ort.SessionOptions()
_ORT_OPTIONS.intra_op_num_threads = 1
_ORT_OPTIONS.log_severity_level = 4


def _ort(op, attrs, x, w, b):
    inputs = [("X", x), ("W", w)] + ([("B", b)] if b is not None else [])
    sess = ort.InferenceSession(_model(op, attrs, inputs).SerializeToString(), _ORT_OPTIONS,
                                providers=["CPUExecutionProvider"])
    return sess.run(None, dict(inputs))[0].astype(np.float64)


def _reference(case, x, w):
    """onnx.reference without bias; ConvTranspose one group at a time."""
    op, g = case["op"], case["g"]
    if op == "Conv" or g == 1:
        return ReferenceEvaluator(_model(op, case["attrs"], [("X", x), ("W", w)])).run(
            None, {"X": x, "W": w})[0].astype(np.float64)
    attrs = dict(case["attrs"], group=1)
    cg = case["c"] // g
    parts = []
    for gi in range(g):
        xg = np.ascontiguousarray(x[:, gi * cg:(gi + 1) * cg])
        wg = np.ascontiguousarray(w[gi * cg:(gi + 1) * cg])
        parts.append(ReferenceEvaluator(_model(op, attrs, [("X", xg), ("W", wg)])).run(
            None, {"X": xg, "W": wg})[0])
    return np.concatenate(parts, axis=1).astype(np.float64)


def _window(case, x, w):
    """ConvTranspose as the window [pb, pb + out) of the unpadded transposed conv."""
    nsp = case["nsp"]
    attrs = {k: v for k, v in case["attrs"].items()
             if k in ("group", "strides", "dilations", "kernel_shape")}
    full = _ort("ConvTranspose", attrs, x, w, None)
    y = np.zeros(full.shape[:2] + tuple(case["out"]))
    src, dst = [slice(None)] * 2, [slice(None)] * 2
    for a in range(nsp):
        lo = max(case["pb"][a], 0)
        hi = min(case["pb"][a] + case["out"][a], full.shape[2 + a])
        src.append(slice(lo, hi))
        dst.append(slice(lo - case["pb"][a], hi - case["pb"][a]))
    y[tuple(dst)] = full[tuple(src)]
    return y


def activate(v, act, alpha, beta):
    if act == "relu":
        return np.maximum(v, 0.0)
    if act == "leaky_relu":
        return np.where(v >= 0.0, v, alpha * v)
    if act == "clip":
        return np.minimum(np.maximum(v, alpha), beta)
    if act == "sigmoid":
        return 1.0 / (1.0 + np.exp(-v))
    if act == "tanh":
        return np.tanh(v)
    if act == "hard_sigmoid":
        return np.clip(alpha * v + beta, 0.0, 1.0)
    return v


def expected_output(case, data, kind):
    x, w, b = data["X"], data["W"], data["B"]
    if kind == ORT:
        y = _ort(case["op"], case["attrs"], x, w, b)
    else:
        y = _reference(case, x, w) if kind == REF else _window(case, x, w)
        if b is not None:
            y = y + b.astype(np.float64).reshape((1, -1) + (1,) * case["nsp"])
    if data["Z"] is not None:
        y = y + data["Z"]
    return activate(y, case["act"], case["alpha"], case["beta"])


# --------------------------------------------------------------------------- convfind

def to_layout(a, layout):
    return a if layout == "NCHW" else np.ascontiguousarray(np.moveaxis(a, 1, -1))


def from_layout(a, layout):
    return a if layout == "NCHW" else np.moveaxis(a, -1, 1)


def run_convfind(lib, ctx, case, data, algo):
    layout = case["layout"]
    z = None if data["Z"] is None else to_layout(data["Z"], layout)
    y, used, key = lib.conv(ctx, case["op"], to_layout(data["X"], layout), data["W"],
                            data["B"], z, attrs=case["attrs"], layout=layout,
                            activation=case["act"], alpha=case["alpha"], beta=case["beta"],
                            algo=algo, math=case["math"])
    return from_layout(y, layout).astype(np.float64), used, key


def tags(case, kind, why):
    """Categories this case counts in, for the summary and the coverage check."""
    a, nsp = case["attrs"], case["nsp"]
    ap = a.get("auto_pad", "NOTSET")
    t = [f"oracle={kind}" + (f" ({why})" if why else ""), f"{case['op']} {nsp}-D",
         f"{case['op']} auto_pad={ap}", f"layout={case['layout']}", f"group={case['kind']}",
         f"N={case['n']}", f"activation={case['act']}", f"math={case['math']}"]
    if case["kind"] == "depthwise" and case["m"] > case["c"]:
        t.append("channel multiplier")
    if case["residual"]:
        t.append(f"residual + {case['act']}")
    if case["bias"]:
        t.append("bias")
    if "kernel_shape" in a:
        t.append("kernel_shape given")
    if any(v > 1 for v in a.get("strides", [])):
        t.append("strides > 1")
    if any(v > 1 for v in a.get("dilations", [])):
        t.append("dilations > 1")
    if "pads" in a and any(a["pads"][i] != a["pads"][i + nsp] for i in range(nsp)):
        t.append("explicit pads begin != end")
    if ap in SAME and any(b != e for b, e in zip(case["pb"], case["pe"])):
        t.append(f"{ap} odd total")
    if any(v > 0 for v in a.get("output_padding", [])):
        t.append("output_padding")
        if any(v > 1 for v in a.get("dilations", [])):
            t.append("dilated ConvTranspose + output_padding")
    if "output_shape" in a:
        t.append(f"output_shape with auto_pad={ap}")
    if min(case["pb"] + case["pe"]) < 0:
        t.append("negative pads")
    for name, values in (("stride", a.get("strides", [])), ("dilation", a.get("dilations", [])),
                         ("pad", case["pb"] + case["pe"])):
        if max(values, default=0) >= 2**31:
            t.append(f"{case['op']} {name} >= 2^31")
    return t


REQUIRED_TAGS = [
    "oracle=onnxruntime", "Conv 1-D", "Conv 2-D", "Conv 3-D", "ConvTranspose 1-D",
    "ConvTranspose 2-D", "ConvTranspose 3-D", "layout=NCHW", "layout=NHWC", "group=plain",
    "group=grouped", "group=depthwise", "channel multiplier", "N=1", "N=2", "N=3", "bias",
    "kernel_shape given", "strides > 1", "dilations > 1", "explicit pads begin != end",
    "SAME_UPPER odd total", "SAME_LOWER odd total", "output_padding",
    "dilated ConvTranspose + output_padding", "output_shape with auto_pad=NOTSET",
    "output_shape with auto_pad=SAME_UPPER", "output_shape with auto_pad=SAME_LOWER",
    "output_shape with auto_pad=VALID", "negative pads", "math=tf32",
] + [f"{op} auto_pad={ap}" for op in ("Conv", "ConvTranspose")
     for ap in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID")] \
  + [f"residual + {act}" for act in ACTIVATIONS] \
  + [f"{op} {name} >= 2^31" for op in ("Conv", "ConvTranspose")
     for name in ("stride", "dilation", "pad")]


def describe(index, case):
    keys = ("op", "n", "c", "m", "g", "in", "k", "attrs", "out", "pb", "pe", "layout", "bias",
            "residual", "act", "alpha", "beta", "math")
    return f"case {index} (CONVFIND_DIFF_SEED={SEED} CONVFIND_DIFF_CASE={index}): " + \
        ", ".join(f"{k}={case[k]}" for k in keys)


def mismatch(case, exp, got):
    """None when got matches exp within the tolerance, else what is wrong."""
    want = (case["n"], case["m"], *case["out"])
    if got.shape != want:
        return f"shape {got.shape}, expected {want}"
    terms = case["c"] // case["g"] * int(np.prod(case["k"]))
    tol = 1e-4 * (1.0 + np.abs(exp)) * max(1.0, terms / 64.0)
    err = np.abs(got - exp)
    if (err <= tol).all():
        return None
    worst = np.unravel_index(np.argmax(err - tol), err.shape)
    return (f"{int((err > tol).sum())} of {err.size} values off; worst at {worst}: "
            f"got {got[worst]:.7g}, expected {exp[worst]:.7g}")


ISA_FLAGS = {"portable": set(), "avx2": {"avx2", "fma"},
             "avx512": {"avx512f", "avx512bw", "avx512dq", "avx512vl", "fma"}}


def machine_runs(isa):
    """Whether this CPU has what convfind needs for `isa` (src/cpu/isa.c), from the flags
    of /proc/cpuinfo; True where they cannot be read."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f
                          if line.startswith("flags")), None)
    except OSError:
        return True
    return flags is None or ISA_FLAGS.get(isa, set()) <= set(flags)


def key_isa(key):
    """The ISA level a plan's key names: its last field is be=cpu:NAME:ISA:tTHREADS."""
    return key.rsplit(":", 2)[-2]


def test_random_problems_match_oracles(lib, ctx, algorithms, summary):
    if ISA is not None and not machine_runs(ISA):
        pytest.skip(f"CONVFIND_ISA={ISA}: this machine's CPU lacks {sorted(ISA_FLAGS[ISA])}, "
                    f"so convfind would run a lower level; nothing to test at {ISA}")
    indices = [int(ONLY)] if ONLY is not None else range(COUNT)
    names = {a: a or "default plan" for a in algorithms}
    counts = collections.Counter()
    per_plan = {a: collections.Counter() for a in algorithms}
    failures = []
    print(f"differential: seed {SEED}, {len(indices)} cases, plans: "
          f"{', '.join(names.values())}")
    for index in indices:
        case, rng = draw_case(index)
        data = draw_data(case, rng)
        kind, why = oracle_kind(case)
        try:
            exp = expected_output(case, data, kind)
        except Exception as e:  # an oracle refusing a case routed to it is a test bug
            failures.append(f"{describe(index, case)}: oracle {kind} failed: {e}")
            continue
        want = (case["n"], case["m"], *case["out"])
        if exp.shape != want:
            failures.append(f"{describe(index, case)}: oracle {kind} gave shape {exp.shape}, "
                            f"the specification {want}")
            continue
        for algo in algorithms:
            try:
                got, used, key = run_convfind(lib, ctx, case, data, algo)
            except cf.ConvfindError as e:
                if algo is not None and e.status_name == "CONVFIND_ERR_UNSUPPORTED":
                    per_plan[algo]["unsupported"] += 1
                    continue
                failures.append(f"{describe(index, case)}: {names[algo]} failed: {e}")
                continue
            if ISA is not None and key_isa(key) != ISA:
                failures.append(f"{describe(index, case)}: {names[algo]} ran at ISA level "
                                f"{key_isa(key)}, not CONVFIND_ISA={ISA} (key {key})")
                continue
            wrong = mismatch(case, exp, got)
            if wrong:
                failures.append(f"{describe(index, case)}: {names[algo]} ({used}) vs oracle "
                                f"{kind}: {wrong}")
                continue
            per_plan[algo]["compared"] += 1
            if algo is None:
                counts[f"default plan chose {used}"] += 1
        counts.update(tags(case, kind, why))

    line = (f"differential seed={SEED}: {len(indices)} cases, {len(failures)} mismatches; " +
            "; ".join(f"{names[a]}: {per_plan[a]['compared']} compared, "
                      f"{per_plan[a]['unsupported']} unsupported" for a in algorithms))
    summary.append(line)
    summary.extend(f"  {k}: {v}" for k, v in sorted(counts.items()))
    print(line)
    assert not failures, f"{len(failures)} mismatches:\n" + "\n".join(failures[:20])
    for a in algorithms:
        assert per_plan[a]["compared"] + per_plan[a]["unsupported"] == len(indices)
    if ONLY is None:
        if None in algorithms:
            assert per_plan[None]["compared"] >= min(MIN_CASES, COUNT)
        if COUNT >= MIN_CASES:
            few = [f"{a}: {per_plan[a]['compared']}" for a in algorithms
                   if a is not None and per_plan[a]["compared"] < MIN_FORCED]
            assert not few, (f"forced algorithms compared on fewer than {MIN_FORCED} of "
                             f"{COUNT} cases (the generator misses their domain): {few}")
        if COUNT >= MIN_CASES:
            missing = [t for t in REQUIRED_TAGS if counts[t] == 0]
            assert not missing, f"seed {SEED} left categories uncovered: {missing}"


# --------------------------------------------------------------------------- invalid

INVALID = [
    ("group does not divide C", "Conv", (1, 6, 5, 5), (4, 3, 3, 3), {"group": 4},
     "CONVFIND_ERR_INVALID_SHAPE"),
    ("W channels != C / group", "Conv", (1, 6, 5, 5), (4, 2, 3, 3), {"group": 2},
     "CONVFIND_ERR_INVALID_SHAPE"),
    ("stride 0", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"strides": [1, 0]},
     "CONVFIND_ERR_INVALID_ATTRIBUTE"),
    ("negative pad", "Conv", (1, 2, 5, 5), (2, 2, 3, 3), {"pads": [0, 0, -1, 0]},
     "CONVFIND_ERR_INVALID_ATTRIBUTE"),
    ("empty output", "Conv", (1, 2, 2, 5), (2, 2, 3, 3), {}, "CONVFIND_ERR_INVALID_SHAPE"),
    ("rank 2", "Conv", (2, 5), (2, 5), {}, "CONVFIND_ERR_INVALID_RANK"),
    ("output_padding >= stride and dilation", "ConvTranspose", (1, 1, 4), (1, 1, 3),
     {"strides": [2], "output_padding": [2]}, "CONVFIND_ERR_INVALID_ATTRIBUTE"),
    ("unreachable output_shape", "ConvTranspose", (1, 1, 4), (1, 1, 3),
     {"strides": [2], "output_shape": [11]}, "CONVFIND_ERR_INVALID_ATTRIBUTE"),
]


@pytest.mark.parametrize("name,op,x_dims,w_dims,attrs,status", INVALID,
                         ids=[c[0] for c in INVALID])
def test_invalid_problem_is_rejected(lib, name, op, x_dims, w_dims, attrs, status):
    with pytest.raises(cf.ConvfindError) as info:
        lib.problem(cf.make_desc(op, x_dims, w_dims, attrs))
    assert info.value.status_name == status, str(info.value)
    assert info.value.message, "a rejected problem must come with a message"


def test_invalid_enum_and_null_are_rejected(lib):
    with pytest.raises(cf.ConvfindError) as info:
        lib.problem(cf.make_desc("Conv", (1, 1, 4), (1, 1, 2), activation=99))
    assert info.value.status_name == "CONVFIND_ERR_INVALID_ENUM"
    assert "99" in info.value.message
    out = cf.ctypes.c_void_p()
    st = lib.dll.convfind_problem_create(None, cf.ctypes.byref(out))
    assert cf.STATUS_NAMES[st] == "CONVFIND_ERR_NULL_POINTER" and not out


def test_execute_without_required_bias_fails(lib, ctx):
    desc = cf.make_desc("Conv", (1, 1, 4), (1, 1, 2), has_bias=True)
    x = np.ones((1, 1, 4), np.float32)
    w = np.ones((1, 1, 2), np.float32)
    y = np.full((1, 1, 3), 7.0, np.float32)
    with lib.problem(desc) as p, ctx.plan(p) as plan:
        with pytest.raises(cf.ConvfindError) as info:
            plan.execute(x, w, None, None, y)
    assert info.value.status_name == "CONVFIND_ERR_NULL_POINTER"
