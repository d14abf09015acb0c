"""Reads an ONNX model the way ONNX Runtime's CPU provider will run its convolutions.

Both convfind.onnx.problems() (what to tune) and convfind.onnxruntime.rewrite() (what to
run) start from convolutions(): every Conv and ConvTranspose with resolved shapes and
with the fusions ONNX Runtime applies to them, so that the problems tuned are exactly
the problems a rewritten session plans.  The fusions and their conditions follow ONNX
Runtime's graph transformers (checked against ONNX Runtime itself in
python/tests/test_onnx_problems.py):

  level 1  ConvBNFusion, ConvAddFusion, ConvMulFusion: a BatchNormalization, or an Add or
           Mul of a per-channel constant, after a Conv with constant weights folds into
           the Conv's weights and bias (computed here in float32, as ONNX Runtime does);
  level 2  ConvActivationFusion: Conv + Relu / LeakyRelu / Clip (constant bounds) /
           Sigmoid / Tanh / HardSigmoid -> FusedConv with that activation;
  CPU      ConvAddActivationFusion: Conv with bias + Add of a same-shape 4-D tensor
           (+ one of those activations) -> FusedConv with Z.

On x86-64, ONNX Runtime's default level also rewrites convolutions into its blocked
NCHWc kernels (NchwcTransformer); that is a kernel choice of its own and is not
modelled: the fusions above are what its FusedConv, and convfind's epilogue, compute.
"""

import os
from collections import defaultdict
from dataclasses import dataclass, field

import numpy as np
import onnx
from onnx import numpy_helper

from .._attrs import FLT_MAX


class ModelError(ValueError):
    """The model cannot be read, is not valid ONNX, or has a shape that cannot be
    resolved.  The message says which, naming the node or input."""


DTYPES = {
    onnx.TensorProto.FLOAT: "f32",
    onnx.TensorProto.FLOAT16: "f16",
    onnx.TensorProto.BFLOAT16: "bf16",
}

# ONNX activation op -> convfind activation name, as ConvActivationFusion accepts them.
ACTIVATIONS = {
    "Relu": "relu",
    "LeakyRelu": "leaky_relu",
    "Clip": "clip",
    "Sigmoid": "sigmoid",
    "Tanh": "tanh",
    "HardSigmoid": "hard_sigmoid",
}


@dataclass
class Convolution:
    """One convolution as ONNX Runtime runs it, after its fusions."""

    node: onnx.NodeProto          # the Conv or ConvTranspose node
    op: str                       # "conv" or "conv_transpose"
    dtype: str                    # "f32", "f16" or "bf16"
    x: str                        # input value names
    w: str
    x_shape: tuple
    w_shape: tuple
    attrs: dict                   # the node's ONNX attributes (pads, strides, ...)
    output: str                   # the value the fused node produces
    fused: list = field(default_factory=list)  # nodes folded or fused into it
    w_value: np.ndarray = None    # constant weights, after level-1 folding
    b: str = None                 # a bias input that is not constant
    b_value: np.ndarray = None    # constant bias, after level-1 folding
    z: str = None                 # the residual added before the activation
    activation: str = "none"
    alpha: float = 0.0
    beta: float = 0.0

    @property
    def has_bias(self):
        return self.b is not None or self.b_value is not None

    @property
    def name(self):
        return self.node.name or self.node.output[0]


def load(model):
    """A ModelProto from a path, bytes or a ModelProto (copied), external data loaded."""
    try:
        if isinstance(model, onnx.ModelProto):
            copy = onnx.ModelProto()
            copy.CopyFrom(model)
            return copy
        if isinstance(model, (bytes, bytearray)):
            return onnx.load_from_string(bytes(model))
        path = os.fspath(model)
        if not os.path.isfile(path):
            raise ModelError(f"{path}: no such file")
        return onnx.load(path, load_external_data=True)
    except ModelError:
        raise
    except Exception as e:  # onnx raises DecodeError, OSError, ValueError ...
        raise ModelError(f"cannot read the model: {e}") from e


def bind_and_infer(model, input_shapes):
    """Fixes the named graph inputs to the given shapes and runs ONNX shape inference."""
    try:
        onnx.checker.check_model(model)
    except Exception as e:
        raise ModelError(f"not a valid ONNX model: {e}") from e
    graph = model.graph
    initializers = {t.name for t in graph.initializer}
    inputs = {i.name: i for i in graph.input if i.name not in initializers}
    for name, shape in (input_shapes or {}).items():
        if name not in inputs:
            raise ModelError(f"input_shapes names '{name}', which is not a graph input "
                             f"(inputs: {', '.join(inputs) or 'none'})")
        dims = inputs[name].type.tensor_type.shape.dim
        shape = [int(d) for d in shape]
        if len(dims) and len(dims) != len(shape):
            raise ModelError(f"input '{name}' has rank {len(dims)}, input_shapes gives "
                             f"{len(shape)} dimensions")
        del dims[:]
        for d in shape:
            dims.add().dim_value = d
    try:
        return onnx.shape_inference.infer_shapes(model, check_type=True, strict_mode=True,
                                                 data_prop=True)
    except Exception as e:
        raise ModelError(f"shape inference failed: {e}") from e


class _Index:
    """Producers, consumer edges, constants and inferred types of one graph."""

    def __init__(self, model):
        g = model.graph
        # One list of node objects used everywhere: protobuf hands out a new wrapper on
        # every access, so identity only holds for objects taken once.
        self.nodes = list(g.node)
        self.order = {id(n): i for i, n in enumerate(self.nodes)}
        graph_inputs = {i.name for i in g.input}
        # An initializer that is also a graph input can be overridden at run time, so
        # ONNX Runtime does not treat it as constant (IR version 4 and later).
        self.const = {t.name: t for t in g.initializer
                      if model.ir_version < 4 or t.name not in graph_inputs}
        for n in self.nodes:
            if n.op_type == "Constant" and n.domain in ("", "ai.onnx"):
                for a in n.attribute:
                    if a.name == "value":
                        self.const[n.output[0]] = a.t
        self.edges = defaultdict(list)
        for n in self.nodes:
            for name in n.input:
                if name:
                    self.edges[name].append(n)
            for name in _subgraph_references(n):
                self.edges[name].append(n)
        self.graph_outputs = {o.name for o in g.output}
        self.types = {}
        for vi in list(g.input) + list(g.value_info) + list(g.output):
            self.types[vi.name] = vi.type.tensor_type
        self._arrays = {}

    def array(self, name):
        if name not in self._arrays:
            try:
                self._arrays[name] = numpy_helper.to_array(self.const[name])
            except Exception as e:
                raise ModelError(f"cannot read initializer '{name}': {e}") from e
        return self._arrays[name]

    def lone_consumer(self, value):
        """The node consuming `value` through exactly one edge, if `value` is not also a
        graph output (ONNX Runtime's CheckOutputEdges)."""
        users = self.edges.get(value, [])
        if len(users) != 1 or value in self.graph_outputs:
            return None
        return users[0]

    def elem_type(self, name):
        if name in self.const:
            return self.const[name].data_type
        t = self.types.get(name)
        return t.elem_type if t is not None else 0

    def dims(self, name):
        """Dims as a tuple of int (known) or str (symbolic) or None (unknown); None
        when the rank is unknown."""
        if name in self.const:
            return tuple(self.const[name].dims)
        t = self.types.get(name)
        if t is None or not t.HasField("shape"):
            return None
        return tuple(d.dim_value if d.HasField("dim_value") else
                     (d.dim_param or None) for d in t.shape.dim)


def _subgraph_references(node):
    for a in node.attribute:
        graphs = [a.g] if a.HasField("g") else list(a.graphs)
        for sub in graphs:
            for n in sub.node:
                yield from (name for name in n.input if name)
                yield from _subgraph_references(n)


def _attr(node, name, default=None):
    for a in node.attribute:
        if a.name == name:
            return onnx.helper.get_attribute_value(a)
    return default


def _node_attrs(node):
    out = {}
    for a in node.attribute:
        value = onnx.helper.get_attribute_value(a)
        out[a.name] = value.decode() if isinstance(value, bytes) else value
    return out


# ---- level 1: folds into the weights and bias ------------------------------------------

def _fold_input(idx, node, position):
    """The constant array at input `position` of node, or None."""
    if len(node.input) <= position or node.input[position] not in idx.const:
        return None
    return idx.array(node.input[position])


def _channel_vector(arr, w_rank, m):
    """A per-output-channel constant of an Add/Mul (shape [M,1,..] or [1,M,1,..]) as a
    vector, under ConvAddFusion's conditions; else None."""
    if arr is None or arr.dtype.kind != "f" or w_rank < 4:
        return None
    if arr.ndim == w_rank:
        axis = 1
    elif arr.ndim == w_rank - 1:
        axis = 0
    else:
        return None
    if arr.shape[axis] != m or any(d != 1 for i, d in enumerate(arr.shape) if i != axis):
        return None
    return arr.reshape(m).astype(np.float32)


def _fold_level1(idx, c):
    """Folds BatchNormalization / Add / Mul consumers into c, as ONNX Runtime's level 1."""
    while c.op == "conv" and c.w_value is not None and c.b is None:
        nxt = c.output not in idx.graph_outputs and idx.edges.get(c.output, [])
        if not nxt or len(nxt) != 1:
            return
        nxt = nxt[0]
        m = c.w_value.shape[0]
        if nxt.op_type == "BatchNormalization" and nxt.domain in ("", "ai.onnx"):
            params = [_fold_input(idx, nxt, i) for i in range(1, 5)]
            if (any(p is None or p.ndim != 1 or p.shape[0] != m for p in params)
                    or any(o for o in nxt.output[1:]) or _attr(nxt, "training_mode", 0)):
                return
            scale, bias, mean, var = (p.astype(np.float32) for p in params)
            scale = scale / np.sqrt(var + np.float32(_attr(nxt, "epsilon", 1e-5)))
            c.w_value = c.w_value * scale.reshape((m,) + (1,) * (c.w_value.ndim - 1))
            b = c.b_value if c.b_value is not None else np.zeros(m, np.float32)
            c.b_value = ((b - mean) * scale + bias).astype(np.float32)
        elif nxt.op_type in ("Add", "Mul") and nxt.domain in ("", "ai.onnx"):
            if len(nxt.input) != 2 or nxt.input[0] != c.output:
                return
            vec = _channel_vector(_fold_input(idx, nxt, 1), c.w_value.ndim, m)
            if vec is None:
                return
            if nxt.op_type == "Add":
                c.b_value = vec if c.b_value is None else (c.b_value + vec).astype(np.float32)
            else:
                c.w_value = c.w_value * vec.reshape((m,) + (1,) * (c.w_value.ndim - 1))
                if c.b_value is not None:
                    c.b_value = (c.b_value * vec).astype(np.float32)
        else:
            return
        c.fused.append(nxt)
        c.output = nxt.output[0]


# ---- level 2 and CPU: activations and the residual Add ------------------------------

def _activation(idx, node):
    """(name, alpha, beta) when `node` is an activation FusedConv takes, else None."""
    if node is None or node.domain not in ("", "ai.onnx") or node.op_type not in ACTIVATIONS:
        return None
    name = ACTIVATIONS[node.op_type]
    if name == "leaky_relu":
        return name, float(_attr(node, "alpha", 0.01)), 0.0
    if name == "hard_sigmoid":
        return name, float(_attr(node, "alpha", 0.2)), float(_attr(node, "beta", 0.5))
    if name == "clip":
        if _attr(node, "min") is not None or _attr(node, "max") is not None:  # opset < 11
            return name, float(_attr(node, "min", -FLT_MAX)), float(_attr(node, "max", FLT_MAX))
        bounds = []
        for i, default in ((1, -FLT_MAX), (2, FLT_MAX)):
            if len(node.input) <= i or not node.input[i]:
                bounds.append(default)
            elif node.input[i] in idx.const:
                bounds.append(float(idx.array(node.input[i]).reshape(-1)[0]))
            else:
                return None  # a bound computed at run time: ONNX Runtime does not fuse
        return name, bounds[0], bounds[1]
    return name, 0.0, 0.0


def _fuse_activation(idx, c, act_node):
    act = _activation(idx, act_node)
    if act is None:
        return False
    c.activation, c.alpha, c.beta = act
    c.fused.append(act_node)
    c.output = act_node.output[0]
    return True


def _same_4d_shapes(idx, a, b):
    da, db = idx.dims(a), idx.dims(b)
    if da is None or db is None or len(da) != 4 or len(db) != 4:
        return False
    return all(x is not None and x != 0 and x == y for x, y in zip(da, db))


def _fuse_add(idx, convs_by_output, trigger, taken):
    """ConvAddActivationFusion for a Conv whose lone consumer is an Add."""
    add = idx.lone_consumer(trigger.output)
    if (add is None or id(add) in taken or add.op_type != "Add"
            or add.domain not in ("", "ai.onnx") or len(add.input) != 2
            or not _same_4d_shapes(idx, add.input[0], add.input[1])):
        return
    # ONNX Runtime takes the first qualifying producer in node order, which need not be
    # the Conv that triggered the match.
    candidates = []
    for i, name in enumerate(add.input):
        c = convs_by_output.get(name)
        if (c is not None and c.op == "conv" and c.dtype == "f32" and c.has_bias
                and c.activation == "none" and c.z is None
                and len(idx.edges.get(c.output, [])) == 1):
            candidates.append((idx.order[id(c.node)], i, c))
    if not candidates:
        return
    _, position, conv = min(candidates, key=lambda t: (t[0], t[1]))
    conv.z = add.input[1 - position]
    conv.fused.append(add)
    conv.output = add.output[0]
    taken.add(id(add))
    _fuse_activation(idx, conv, idx.lone_consumer(add.output[0]))


# ---- the convolutions -----------------------------------------------------------------

def _known_dims(idx, node, name, what, conv_name):
    dims = idx.dims(name)
    if dims is None or any(not isinstance(d, int) or d <= 0 for d in dims):
        shown = "unknown rank" if dims is None else \
            "(" + ", ".join(str(d) if d else "?" for d in dims) + ")"
        raise ModelError(f"{node.op_type} '{conv_name}': the shape of {what} '{name}' is not "
                         f"known: {shown}; bind the model's symbolic input dimensions with "
                         f"input_shapes (--input-shape NAME=1,3,224,224)")
    return tuple(dims)


def convolutions(model, input_shapes=None, *, resolve=True):
    """(model with inferred shapes, [Convolution, ...] in node order, [skipped notes]).

    With resolve, every convolution's X and W shapes must be known (ModelError
    otherwise); without, they may hold None or symbolic names (a rewrite needs no
    shapes).  A convolution of an element type convfind does not describe (double,
    integer) is left out, with a note saying so."""
    model = bind_and_infer(load(model), input_shapes)
    idx = _Index(model)
    convs, notes = [], []
    for node in idx.nodes:
        if node.op_type not in ("Conv", "ConvTranspose") or node.domain not in ("", "ai.onnx"):
            continue
        conv_name = node.name or node.output[0]
        elem = idx.elem_type(node.input[0])
        if elem not in DTYPES:
            notes.append(f"{node.op_type} '{conv_name}': element type "
                         f"{onnx.TensorProto.DataType.Name(elem) if elem else 'unknown'} "
                         f"is not one convfind runs; left to ONNX Runtime")
            continue
        dims = (lambda name, what: _known_dims(idx, node, name, what, conv_name)) if resolve \
            else (lambda name, what: idx.dims(name))
        c = Convolution(
            node=node, op="conv" if node.op_type == "Conv" else "conv_transpose",
            dtype=DTYPES[elem], x=node.input[0], w=node.input[1],
            x_shape=dims(node.input[0], "input X"), w_shape=dims(node.input[1], "weights W"),
            attrs=_node_attrs(node), output=node.output[0])
        if c.w in idx.const:
            c.w_value = idx.array(c.w)
        if len(node.input) > 2 and node.input[2]:
            if node.input[2] in idx.const:
                c.b_value = idx.array(node.input[2])
            else:
                c.b = node.input[2]
        if c.dtype == "f32":
            _fold_level1(idx, c)
        convs.append(c)
    # Level 2 (ConvActivationFusion), then the CPU provider's Conv + Add (+ activation).
    for c in convs:
        if c.op == "conv" and c.dtype == "f32":
            _fuse_activation(idx, c, idx.lone_consumer(c.output))
    by_output = {c.output: c for c in convs}
    taken = set()
    for c in convs:
        if c.op == "conv" and c.dtype == "f32" and c.activation == "none" and c.z is None:
            _fuse_add(idx, by_output, c, taken)
    return model, convs, notes
