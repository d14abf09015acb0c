"""convfind inside ONNX Runtime sessions.

    import convfind.onnxruntime as cfort
    sess = cfort.InferenceSession("model.onnx")          # Conv/ConvTranspose -> convfind
    y = sess.run(None, {"input": x})

rewrite() replaces every float32 Conv and ConvTranspose of a model, with the nodes ONNX
Runtime would fuse into it (convfind/onnx/_graph.py), by a convfind custom operator that
carries the same attributes; convolutions of other element types stay ONNX Runtime's
own nodes.  The operators run through onnxruntime-extensions' Python custom operators
(ONNX Runtime's C custom-op and plugin-provider headers are in no PyPI package: see
docs/python.md).  InferenceSession builds a session of a rewritten model with the
operators registered and the weights kept in the process, packed once; every session
shares one convfind context (and its decisions and find database) unless given another.
"""

import uuid
import weakref

import onnx
import onnxruntime as _ort

import convfind

from ..onnx._graph import convolutions
from . import _kernel
from ._kernel import DOMAIN, set_context

__all__ = ["DOMAIN", "InferenceSession", "rewrite", "session_options", "set_context"]


def _fmt_ints(value):
    return "" if value is None else ",".join(str(int(v)) for v in value)


def _node_attrs(c, node_id, const):
    a = c.attrs
    auto_pad = a.get("auto_pad", "NOTSET")
    return {
        "node": node_id, "op": c.op, "group": str(int(a.get("group", 1))),
        "pads": _fmt_ints(a.get("pads")), "strides": _fmt_ints(a.get("strides")),
        "dilations": _fmt_ints(a.get("dilations")),
        "kernel_shape": _fmt_ints(a.get("kernel_shape")),
        "auto_pad": str(auto_pad).lower(),
        "output_padding": _fmt_ints(a.get("output_padding")),
        "output_shape": _fmt_ints(a.get("output_shape")), "activation": c.activation,
        "alpha": repr(float(c.alpha)), "beta": repr(float(c.beta)),
        "weights": "const" if const else "var",
    }


def _rewrite(model, bind_context=None):
    """The rewritten model and {node id: NodeState} of the weights kept in the process
    (bind_context not None) or {} (weights stay initializers: a portable model)."""
    model, convs, _ = convolutions(model, resolve=False)
    graph = model.graph
    nodes = list(graph.node)
    position = {id(n): i for i, n in enumerate(nodes)}
    replaced, inserted, new_inits, bound = set(), {}, [], {}
    uid = uuid.uuid4().hex[:12]
    for i, c in enumerate(convs):
        if c.dtype != "f32":
            continue
        node_id = f"{uid}:{i}"
        const = c.w_value is not None and c.b is None
        inputs = [c.x]
        if bind_context is not None and const:
            bound[node_id] = _kernel.NodeState(
                _node_attrs(c, node_id, True), bind_context, w=c.w_value, b=c.b_value,
                bias=c.has_bias)
            op_type = "ConvfindConvBound"
        else:
            op_type = "ConvfindConv"
            if const:
                w_name = f"{c.name}__convfind_w"
                new_inits.append(onnx.numpy_helper.from_array(c.w_value, w_name))
                inputs.append(w_name)
                if c.b_value is not None:
                    b_name = f"{c.name}__convfind_b"
                    new_inits.append(onnx.numpy_helper.from_array(c.b_value, b_name))
                    inputs.append(b_name)
                    op_type += "B"
            else:
                inputs.append(c.w)
                if c.b is not None:
                    inputs.append(c.b)
                    op_type += "B"
        if c.z is not None:
            inputs.append(c.z)
            op_type += "Z"
        new = onnx.helper.make_node(op_type, inputs, [c.output], name=f"convfind_{c.name}",
                                    domain=DOMAIN, **_node_attrs(c, node_id, const))
        group = [c.node] + c.fused
        replaced.update(id(n) for n in group)
        # The last node of the group is where every input (also Z) is available.
        inserted[max(position[id(n)] for n in group)] = new
    out = []
    for i, n in enumerate(nodes):
        if i in inserted:
            out.append(inserted[i])
        elif id(n) not in replaced:
            out.append(n)
    del graph.node[:]
    graph.node.extend(out)
    graph.initializer.extend(new_inits)
    used = {name for n in graph.node for name in n.input} | {o.name for o in graph.output}
    kept = [t for t in graph.initializer if t.name in used]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    del graph.value_info[:]
    if not any(o.domain == DOMAIN for o in model.opset_import):
        model.opset_import.append(onnx.helper.make_opsetid(DOMAIN, 1))
    return model, bound


def rewrite(model):
    """A copy of `model` (path, bytes or ModelProto) in which every float32 Conv and
    ConvTranspose, with the BatchNormalization / Add / Mul / activation nodes ONNX Runtime
    fuses into it, is one convfind operator (domain ai.onnx.contrib) carrying the same
    attributes.  Weights and bias stay initializers (folded ones are new initializers),
    so the model is self-contained: run it in a session made with session_options()."""
    return _rewrite(model)[0]


def session_options(options=None):
    """`options` (or new SessionOptions) with the convfind operators registered."""
    options = options if options is not None else _ort.SessionOptions()
    options.register_custom_ops_library(_kernel.register())
    return options


class InferenceSession:
    """An onnxruntime.InferenceSession of `model` with its convolutions run by convfind.

    model        path, bytes or ModelProto of the original model (rewritten here)
    sess_options onnxruntime.SessionOptions (the convfind operators are registered in it)
    providers    ONNX Runtime providers (default: CPUExecutionProvider)
    context      the convfind.Context the convolutions use (default: the one shared by
                 every session, convfind.default_context())

    The weights are kept in the process rather than in the graph, so ONNX Runtime copies
    nothing but activations into the operators; they are packed once per input shape.
    Every other attribute and method is the wrapped session's (run, get_inputs, ...)."""

    def __init__(self, model, sess_options=None, providers=None, *, context=None, **kwargs):
        self.context = context if context is not None else convfind.default_context()
        rewritten, bound = _rewrite(model, bind_context=self.context)
        for node_id, state in bound.items():
            _kernel.bind(node_id, state)
        self._finalizer = weakref.finalize(self, _kernel.forget, list(bound))
        self.model = rewritten
        self._session = _ort.InferenceSession(
            rewritten.SerializeToString(), session_options(sess_options),
            providers=providers or ["CPUExecutionProvider"], **kwargs)

    def run(self, output_names, input_feed, run_options=None):
        return self._session.run(output_names, input_feed, run_options)

    def __getattr__(self, name):
        return getattr(self._session, name)
