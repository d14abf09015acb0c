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

from ..onnx._graph import _subgraph_references, convolutions
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


def _segments(nodes, bound, graph_outputs):
    """Replaces each run of consecutive nodes in `bound` ({id(node): (NodeState, node)})
    by one segment operator.  Consecutive in the (topologically sorted) node list, a
    run's inputs are all produced before it and its outputs consumed after it, so the
    graph stays acyclic.  Returns (new node list, {segment id: Segment}, [[conv name,
    ...] per segment])."""
    used_from = {}   # value name -> index of the last node that reads it
    for i, n in enumerate(nodes):
        for name in list(n.input) + list(_subgraph_references(n)):
            used_from[name] = i
    out, segments, names, i = [], {}, [], 0
    uid = uuid.uuid4().hex[:12]
    while i < len(nodes):
        if id(nodes[i]) not in bound:
            out.append(nodes[i])
            i += 1
            continue
        j = i
        while j < len(nodes) and id(nodes[j]) in bound:
            j += 1
        steps, inputs, produced = [], [], set()
        for n in nodes[i:j]:
            state = bound[id(n)][0]
            for name in n.input:
                if name not in produced and name not in inputs:
                    inputs.append(name)
            steps.append((state, n.input[0], n.input[1] if len(n.input) > 1 else None,
                          n.output[0]))
            produced.add(n.output[0])
        # A run whose values nothing reads still needs an output to be an operator.
        outputs = [s[3] for s in steps
                   if used_from.get(s[3], -1) >= j or s[3] in graph_outputs] or [steps[-1][3]]
        seg_id = f"{uid}:{len(segments)}"
        segments[seg_id] = _kernel.Segment(steps, inputs, outputs)
        names.append([bound[id(n)][1] for n in nodes[i:j]])
        out.append(onnx.helper.make_node(
            _kernel.segment_op(len(inputs), len(outputs)), inputs, outputs,
            name=f"convfind_segment{len(segments) - 1}", domain=DOMAIN, node=seg_id))
        i = j
    return out, segments, names


def _rewrite(model, bind_context=None):
    """(the rewritten model, {segment id: Segment}, [[conv name, ...] per segment]).
    With bind_context, the convolutions whose weights are constant keep them in the
    process and run in segment operators; without, every convolution becomes one
    portable operator and the weights stay initializers."""
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
        state = None
        if bind_context is not None and const:
            # A placeholder for its place and values; _segments() replaces it.
            state = _kernel.NodeState(_node_attrs(c, node_id, True), bind_context,
                                      w=c.w_value, b=c.b_value, bias=c.has_bias)
            op_type = "ConvfindSegmentStep"
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
        if state is not None:
            new = onnx.helper.make_node(op_type, inputs, [c.output])
            bound[id(new)] = (state, c.name)
        else:
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
    out, segments, names = _segments(out, bound, {o.name for o in graph.output})
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
    return model, segments, names


def rewrite(model):
    """A copy of `model` (path, bytes or ModelProto) in which every float32 Conv and
    ConvTranspose, with the BatchNormalization / Add / Mul / activation nodes ONNX Runtime
    fuses into it, is one convfind operator (domain ai.onnx.contrib) carrying the same
    attributes.  Weights and bias stay initializers (folded ones are new initializers),
    so the model is self-contained: run it in a session made with session_options()."""
    return _rewrite(model)[0]


_SPINNING = "session.intra_op.allow_spinning"


def session_options(options=None):
    """`options` (or new SessionOptions) with the convfind operators registered, and
    with ONNX Runtime's intra-op threads told not to spin (unless `options` says
    otherwise).  During a run those threads spin whenever they are idle, so they would
    take cores from convfind's own threads for as long as convfind computes
    (docs/python.md has the measurement)."""
    options = options if options is not None else _ort.SessionOptions()
    options.register_custom_ops_library(_kernel.register())
    try:
        options.get_session_config_entry(_SPINNING)
    except RuntimeError:  # not set by the caller
        options.add_session_config_entry(_SPINNING, "0")
    return options


class InferenceSession:
    """An onnxruntime.InferenceSession of `model` with its convolutions run by convfind.

    model        path, bytes or ModelProto of the original model (rewritten here)
    sess_options onnxruntime.SessionOptions (the convfind operators are registered in it)
    providers    ONNX Runtime providers (default: CPUExecutionProvider)
    context      the convfind.Context the convolutions use (default: the one shared by
                 every session, convfind.default_context())

    The weights are kept in the process rather than in the graph, packed once per input
    shape, and each run of consecutive convolutions is one operator (a segment) that
    passes activations from one convolution to the next itself: ONNX Runtime copies only
    a segment's inputs and outputs.  `segments` lists, per segment, the names of the
    convolutions it runs; `model` is the rewritten model.  Every other attribute and
    method is the wrapped session's (run, get_inputs, ...)."""

    def __init__(self, model, sess_options=None, providers=None, *, context=None, **kwargs):
        self.context = context if context is not None else convfind.default_context()
        rewritten, segments, self.segments = _rewrite(model, bind_context=self.context)
        for segment_id, segment in segments.items():
            _kernel.bind(segment_id, segment)
        self._finalizer = weakref.finalize(self, _kernel.forget, list(segments))
        self.model = rewritten
        self._session = _ort.InferenceSession(
            rewritten.SerializeToString(), session_options(sess_options),
            providers=providers or ["CPUExecutionProvider"], **kwargs)

    def run(self, output_names, input_feed, run_options=None):
        return self._session.run(output_names, input_feed, run_options)

    def __getattr__(self, name):
        return getattr(self._session, name)
