"""The convfind custom operators as ONNX Runtime calls them (through onnxruntime-extensions'
Python custom ops), and the per-node state they keep.

Each rewritten node carries its ONNX attributes as strings (PyOp passes only string
attributes) and a unique `node` id.  The first call of a node parses them once; each
distinct input shape gets one convfind Plan, whose constant weights are copied and
packed once, so a steady-state call is a dict lookup and Plan.execute (GIL released).
onnxruntime-extensions' default dispatcher returns outputs as Python lists; the
dispatcher installed here returns the array itself and hands every other PyOp to the
previous dispatcher.
"""

import threading

import onnxruntime_extensions
from onnxruntime_extensions import PyCustomOpDef
from onnxruntime_extensions import _ocos

import convfind

DOMAIN = "ai.onnx.contrib"  # the domain PyOp registers its operators in

# Operator type -> the roles of its inputs.  A "Bound" operator's weights live in the
# process (convfind.onnxruntime.InferenceSession), not in the graph.
OP_INPUTS = {
    "ConvfindConv": ("x", "w"),
    "ConvfindConvB": ("x", "w", "b"),
    "ConvfindConvZ": ("x", "w", "z"),
    "ConvfindConvBZ": ("x", "w", "b", "z"),
    "ConvfindConvBound": ("x",),
    "ConvfindConvBoundZ": ("x", "z"),
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
    """Registers the state of a node whose weights live in the process."""
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


_op_ids = {}
_registered = False
_register_lock = threading.Lock()


def register():
    """Declares the operators to onnxruntime-extensions (once per process) and installs
    the dispatcher.  Returns the custom-op library path to register with a session."""
    global _registered
    with _register_lock:
        if not _registered:
            string = PyCustomOpDef.dt_string
            for op_type, roles in OP_INPUTS.items():
                opdef = onnxruntime_extensions.Opdef.create(
                    (lambda r: lambda *feed, **attrs: run(r, feed, attrs))(roles),
                    op_type=op_type, inputs=[PyCustomOpDef.dt_float] * len(roles),
                    outputs=[PyCustomOpDef.dt_float], attrs={a: string for a in ATTRS})
                _op_ids[id(opdef)] = roles
            previous = _ocos._on_pyop_invocation

            def dispatch(op_id, feed, attrs):
                roles = _op_ids.get(op_id)
                if roles is None:
                    return previous(op_id, feed, attrs)
                y = run(roles, feed, attrs)
                return op_id, y.shape, y

            PyCustomOpDef.install_hooker(dispatch)
            _registered = True
    return onnxruntime_extensions.get_library_path()
