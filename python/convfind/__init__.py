"""convfind: ONNX Conv / ConvTranspose that finds, and remembers, the fastest algorithm.

    import numpy as np, convfind
    ctx = convfind.Context(threads=2, policy="hybrid")
    y = ctx.conv(x, w, b, pads=[1, 1, 1, 1], activation="relu")
    plan = ctx.plan(x.shape, w, b, pads=[1, 1, 1, 1])   # weights packed once
    y = plan.execute(x)

Attributes take ONNX's names and meanings (docs/onnx-semantics.md).  Every error the
library reports is a subclass of convfind.Error, one per status, carrying the library's
message.  Execution and Find release the GIL; a Context may be shared by any number of
threads.  docs/python.md describes the package.
"""

import os
import threading

from . import _attrs
from ._convfind import (
    BackendError,
    ContextBase,
    Error,
    FileIOError,
    FindResult,
    InvalidAttributeError,
    InvalidEnumError,
    InvalidRankError,
    InvalidShapeError,
    NotFoundError,
    NullPointerError,
    OutOfMemoryError,
    Plan,
    SizeOverflowError,
    UnavailableError,
    UnsupportedError,
    algorithms,
    cuda_available,
    version,
)

__version__ = version()

__all__ = [
    "BackendError",
    "Context",
    "Error",
    "FileIOError",
    "FindResult",
    "InvalidAttributeError",
    "InvalidEnumError",
    "InvalidRankError",
    "InvalidShapeError",
    "NotFoundError",
    "NullPointerError",
    "OutOfMemoryError",
    "Plan",
    "SizeOverflowError",
    "UnavailableError",
    "UnsupportedError",
    "algorithms",
    "conv",
    "cuda_available",
    "default_context",
    "version",
]


class Context(ContextBase):
    """Options and everything shared between calls: the decision cache, the thread pool,
    the find database.  Any number of threads may use one context at once.

    threads           worker threads per execution; 0: all online cores
    policy            'default' ($CONVFIND_FIND_POLICY if set, else 'hybrid'), 'hybrid'
                      (database, else measure), 'exhaustive', 'heuristic', 'replay' or
                      'deferred' (heuristic now, measure in the background)
    db                find-database path; ':memory:' for none; None: the default location
                      ($CONVFIND_DB_PATH, then $XDG_CACHE_HOME/convfind, ~/.cache/convfind)
    device            'cpu', 'cuda' or 'cuda:N'
    math              default math mode of this context's problems: 'strict' (f32
                      arithmetic only), 'tf32' (TF32 tensor cores on a GPU, Winograd
                      F(6x6,3x3) on a CPU) or 'split_tf32' (strict plus 3xTF32 split
                      products on a GPU; a CPU computes it as strict); part of the key
    system_db         read-only system tier; None: $CONVFIND_SYSTEM_DB
    db_env_policy     records of another environment: 'retune' or 'ignore'
    workspace_limit   bytes an algorithm may use as workspace; 0: unlimited
    cache_bytes       decision cache budget; 0: the library's default
    find_time_budget  Find time per problem in seconds; 0: the library's default
    find_validate     check every candidate against the reference during Find
    """

    def __init__(self, threads=0, policy="default", db=None, device="cpu", math="strict", *,
                 system_db=None, db_env_policy="retune", workspace_limit=0, cache_bytes=0,
                 find_time_budget=0.0, find_validate=True):
        code, index = _attrs.device(device)
        _attrs.choice(_attrs.MATH, math, "math")
        super().__init__(
            threads=int(threads),
            policy=_attrs.choice(_attrs.POLICIES, policy, "policy"),
            db=None if db is None else os.fspath(db),
            system_db=None if system_db is None else os.fspath(system_db),
            db_env_policy=_attrs.choice(_attrs.DB_ENV_POLICIES, db_env_policy, "db_env_policy"),
            workspace_limit=int(workspace_limit),
            cache_bytes=int(cache_bytes),
            find_time_budget=float(find_time_budget),
            find_validate=bool(find_validate),
            device=code,
            device_index=index,
        )
        self.threads = int(threads)
        self.policy = _attrs.snake(policy)
        self.device = "cpu" if code == 0 else f"cuda:{index}"
        self.math = _attrs.snake(math)

    def __repr__(self):
        return (f"convfind.Context(threads={self.threads}, policy={self.policy!r}, "
                f"device={self.device!r}, math={self.math!r})")

    def _spec(self, x, w, bias, residual, dtype, attrs):
        attrs.setdefault("math", self.math)
        if dtype is None and not isinstance(x, (tuple, list)):
            dtype = getattr(x, "dtype", None)
        return _attrs.spec(_attrs.shape_of(x, "x"), _attrs.shape_of(w, "w"), dtype=dtype,
                           bias=bias, residual=residual, **attrs)

    def conv(self, x, w, b=None, z=None, *, out=None, stream=None, **attrs):
        """Y = act(conv(x, w) + b + z) with ONNX attributes; returns Y (or `out`).

        Keyword attributes: op ('conv' or 'conv_transpose'), pads, strides, dilations,
        group, auto_pad, kernel_shape, output_padding, output_shape, activation
        ('relu', 'leaky_relu', 'clip', 'sigmoid', 'tanh', 'hard_sigmoid'), alpha, beta,
        layout ('nchw' or 'nhwc': how x, z and Y are stored; w is always ONNX order),
        math.  The decision comes from the context's cache (found on a miss by its
        policy); for repeated calls a Plan avoids the per-call planning."""
        spec = self._spec(x, w, b is not None, z is not None, None, attrs)
        return self._plan(spec).execute(x, w, b, z, out, stream=stream)

    def plan(self, x, w, b=None, z=None, *, algorithm=None, dtype=None, **attrs):
        """A Plan for the problem of x and w, with the conv() attributes.

        x is an array or a shape (in the layout's order); w is an array, whose values
        become the plan's constant weights (copied and packed once, so execute() may omit
        w), or a shape (weights passed to every execute()).  b is None (no bias), True
        (bias passed to execute()) or an array (constant bias); z is None or True (or an
        array) for a residual.  dtype is needed only when x is a shape and not float32;
        algorithm forces a named algorithm (convfind.algorithms())."""
        spec = self._spec(x, w, b is not None and b is not False,
                          z is not None and z is not False, dtype, attrs)
        w_const = None if isinstance(w, (tuple, list)) else w
        b_const = None if b is None or isinstance(b, bool) else b
        return self._plan(spec, w_const, b_const, algorithm)

    def find(self, x, w, b=None, z=None, *, dtype=None, weights=None, **attrs):
        """Measures every candidate for the problem now (unless the context holds a
        measured decision already) and returns the ranked FindResult list, best first;
        the best becomes the context's decision.  Arguments as plan(); only shapes
        matter, and weights ('constant' or 'per_call'; None: 'constant' when w is an
        array, as plan() makes it) says which plans the measurement is for."""
        spec = self._spec(x, w, b is not None and b is not False,
                          z is not None and z is not False, dtype, attrs)
        return self._find(spec, _attrs.constant_weights(w, weights))

    def key(self, x, w, b=None, z=None, *, dtype=None, weights=None, **attrs):
        """The canonical decision key of the problem on this context (docs/key.md) for
        plans whose weights are as find() says."""
        spec = self._spec(x, w, b is not None and b is not False,
                          z is not None and z is not False, dtype, attrs)
        return self._key(spec, _attrs.constant_weights(w, weights))


_default = None
_default_lock = threading.Lock()


def default_context():
    """The process's shared Context with default options, created on first use."""
    global _default
    with _default_lock:
        if _default is None:
            _default = Context()
        return _default


def conv(x, w, b=None, z=None, **kwargs):
    """Context.conv() on default_context()."""
    return default_context().conv(x, w, b, z, **kwargs)
