"""The convfind custom operators as ONNX Runtime calls them (through onnxruntime-extensions'
Python custom ops), and the per-node state they keep.

Two kinds of operator.  A portable model (rewrite()) has one operator per convolution,
carrying its ONNX attributes as strings (PyOp passes only string attributes) and a
unique `node` id; the first call of a node parses them once.  A session's model
(InferenceSession) has segment operators instead: each runs a run of consecutive
convolutions whose weights live in the process, passing the activations between them as
arrays, because every operator boundary costs a copy of each input into a new array and
of the output back into ONNX Runtime's tensor (docs/python.md has what they cost).

In both, each distinct input shape of a convolution gets one convfind Plan, whose
constant weights are copied and packed once, so a steady-state call is a dict lookup
and Plan.execute (GIL released).  onnxruntime-extensions' default dispatcher returns
outputs as Python lists; the dispatcher installed here returns the arrays themselves and
hands every other PyOp to the previous dispatcher.
"""

import threading

import onnxruntime_extensions
from onnxruntime_extensions import PyCustomOpDef
from onnxruntime_extensions import _ocos

import convfind
from convfind import _alloc

DOMAIN = "ai.onnx.contrib"  # the domain PyOp registers its operators in

# Operator type of a portable model -> the roles of its inputs.
OP_INPUTS = {
    "ConvfindConv": ("x", "w"),
    "ConvfindConvB": ("x", "w", "b"),
    "ConvfindConvZ": ("x", "w", "z"),
    "ConvfindConvBZ": ("x", "w", "b", "z"),
}

ATTRS = ("node", "op", "group", "pads", "strides", "dilations", "kernel_shape", "auto_pad",
         "output_padding", "output_shape", "activation", "alpha", "beta", "weights")

_LIST_ATTRS = ("pads", "strides", "dilations", "kernel_shape", "output_padding",
               "output_shape")
_MAX_NODES = 4096       # node states kept for portable (rewrite()) models
_MAX_SHAPES = 64        # plans kept per node, one per input shape


class NodeState:
    """What one rewritten node needs between calls: attributes, context, weights."""

    def __init__(self, attrs, context, w=None, b=None, bias=False):
        self.context = context
        self.kwargs = {"op": attrs["op"], "group": int(attrs["group"] or 1),
                       "auto_pad": attrs["auto_pad"] or "notset",
                       "activation": attrs["activation"] or "none",
                       "alpha": float(attrs["alpha"] or 0.0),
                       "beta": float(attrs["beta"] or 0.0)}
        for key in _LIST_ATTRS:
            if attrs[key]:
                self.kwargs[key] = tuple(int(v) for v in attrs[key].split(","))
        self.const = attrs["weights"] == "const"
        self.w, self.b, self.bias = w, b, bias
        self.plans = {}

    def plan(self, x, w, b, has_z):
        """The plan for x's shape; weights given here are constant when `const`."""
        key = x.shape
        plan = self.plans.get(key)
        if plan is None:
            w = self.w if self.w is not None else w
            b = self.b if self.b is not None else b
            plan = self.context.plan(x.shape, w if self.const else w.shape,
                                     b if (self.const and b is not None) else (b is not None),
                                     True if has_z else None, dtype=x.dtype, **self.kwargs)
            if len(self.plans) >= _MAX_SHAPES:
                self.plans.pop(next(iter(self.plans)), None)
            self.plans[key] = plan
        return plan


class Segment:
    """Consecutive convolutions of a session's model run as one operator: `steps` are
    (NodeState with constant weights, x name, z name or None, output name) in order;
    `inputs` and `outputs` name the operator's inputs and outputs.  An array is dropped
    after its last use, so a call holds only the activations still needed.

    The values that stay inside the segment are written into arrays kept per thread and
    step (one per input shape), not new ones per call: a fresh array of a few MB costs
    its page faults on every call (about 40 MB of them a run of ResNet-50 at N=1).
    Per thread, because sessions may run one segment from several threads at once; the
    segment's own outputs are always new arrays, handed to ONNX Runtime.  A step whose
    residual is such an array, used for the last time there, adds it in place: its output
    goes into the residual's array, whose lines the convolution reads just before it
    writes them (ResNet-50 at N=1: about 3% less time than a separate array)."""

    def __init__(self, steps, inputs, outputs):
        self.steps, self.inputs, self.outputs = steps, tuple(inputs), tuple(outputs)
        last = {}
        for i, (_, x, z, _) in enumerate(steps):
            for name in (x, z):
                if name is not None:
                    last[name] = i
        keep = set(self.outputs)
        self.drops = [tuple(n for n, i in last.items() if i == k and n not in keep)
                      for k in range(len(steps))]
        self.internal = [out not in keep for _, _, _, out in steps]
        self.local = threading.local()

    def plans(self):
        """Every plan its convolutions have made so far."""
        return [plan for state, *_ in self.steps for plan in state.plans.values()]

    def _output(self, k, plan, values, owned):
        """The array step k writes into (None: a new one), given the values so far and
        the names of those in this thread's arrays (`owned`, which it updates)."""
        _, x_name, z_name, out = self.steps[k]
        if not self.internal[k]:
            return None
        owned.add(out)
        if z_name in owned and z_name in self.drops[k] and z_name != x_name:
            return values[z_name]
        buffers = getattr(self.local, "buffers", None)
        if buffers is None:
            buffers = self.local.buffers = [{} for _ in self.steps]
        x = values[x_name]
        y = buffers[k].get(x.shape)
        if y is None:
            if len(buffers[k]) >= _MAX_SHAPES:
                buffers[k].pop(next(iter(buffers[k])), None)
            y = buffers[k][x.shape] = _alloc.empty(plan.output_shape, x.dtype)
        return y

    def run(self, feed, execute=None):
        """The outputs for `feed`.  execute(k, plan, x, z, y), when given, runs step k in
        place of plan.execute(x, z=z, out=y) and returns its output (benchmarks and
        tests look at each step through it)."""
        values = dict(zip(self.inputs, feed))
        owned = set()
        for k, ((state, x_name, z_name, out), drops) in enumerate(zip(self.steps, self.drops)):
            x = values[x_name]
            z = values[z_name] if z_name is not None else None
            plan = state.plan(x, None, None, z is not None)
            y = self._output(k, plan, values, owned)
            values[out] = (execute(k, plan, x, z, y) if execute is not None
                           else plan.execute(x, z=z, out=y))
            for name in drops:
                del values[name]
        return [values[name] for name in self.outputs]


_nodes = {}
_nodes_lock = threading.Lock()
_context = None


def set_context(context):
    """Makes `context` the one that rewritten models' operators use (default:
    convfind.default_context()).  Nodes already run keep the context they started with."""
    global _context
    _context = context


def context():
    return _context if _context is not None else convfind.default_context()


def bind(node_id, state):
    """Registers a Segment (its operator's `node` attribute is node_id)."""
    with _nodes_lock:
        _nodes[node_id] = state


def forget(node_ids):
    with _nodes_lock:
        for n in node_ids:
            _nodes.pop(n, None)


def _state(attrs, roles):
    state = _nodes.get(attrs["node"])
    if state is None:
        state = NodeState(attrs, context(), bias="b" in roles)
        with _nodes_lock:
            if len(_nodes) >= _MAX_NODES:
                _nodes.pop(next(iter(_nodes)), None)
            state = _nodes.setdefault(attrs["node"], state)
    return state


def run(roles, feed, attrs):
    """One call of a convfind operator: feed holds the inputs in `roles` order."""
    inputs = dict(zip(roles, feed))
    state = _state(attrs, roles)
    x, z = inputs["x"], inputs.get("z")
    w, b = inputs.get("w"), inputs.get("b")
    plan = state.plan(x, w, b, z is not None)
    if plan.constant_weights:
        return plan.execute(x, z=z)
    return plan.execute(x, w, b, z)


def run_segment(feed, attrs):
    return _nodes[attrs["node"]].run(feed)


_op_ids = {}          # id of an operator definition -> fn(feed, attrs) -> [outputs]
_segment_ops = {}     # (inputs, outputs) -> operator type
_registered = False
_register_lock = threading.Lock()


def _define(op_type, n_in, n_out, attrs, fn):
    opdef = onnxruntime_extensions.Opdef.create(
        lambda *feed, **kw: fn(feed, kw), op_type=op_type,
        inputs=[PyCustomOpDef.dt_float] * n_in, outputs=[PyCustomOpDef.dt_float] * n_out,
        attrs={a: PyCustomOpDef.dt_string for a in attrs})
    _op_ids[id(opdef)] = fn


def segment_op(n_in, n_out):
    """The operator type of a segment with n_in inputs and n_out outputs, declared to
    onnxruntime-extensions on first use (sessions registered later see it)."""
    with _register_lock:
        op_type = _segment_ops.get((n_in, n_out))
        if op_type is None:
            op_type = f"ConvfindSegment_{n_in}_{n_out}"
            _define(op_type, n_in, n_out, ("node",), run_segment)
            _segment_ops[(n_in, n_out)] = op_type
        return op_type


def register():
    """Declares the portable operators to onnxruntime-extensions (once per process) and
    installs the dispatcher.  Returns the custom-op library path to register with a
    session."""
    global _registered
    with _register_lock:
        if not _registered:
            for op_type, roles in OP_INPUTS.items():
                _define(op_type, len(roles), 1, ATTRS,
                        (lambda r: lambda feed, attrs: [run(r, feed, attrs)])(roles))
            previous = _ocos._on_pyop_invocation

            def dispatch(op_id, feed, attrs):
                fn = _op_ids.get(op_id)
                if fn is None:
                    return previous(op_id, feed, attrs)
                out = [op_id]
                for y in fn(feed, attrs):
                    out += (y.shape, y)
                return tuple(out)

            PyCustomOpDef.install_hooker(dispatch)
            _registered = True
    return onnxruntime_extensions.get_library_path()
