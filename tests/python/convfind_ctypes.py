"""convfind_ctypes - a ctypes binding of include/convfind.h for the Python tests.

The structures below mirror the C declarations field for field (ctypes applies the same
alignment rules as the C compiler), so any change to a public struct in convfind.h must
be made here too; test_binding.py compares the field names with the header, because a
struct shorter than the library's lets C write past the Python buffer.  On top of the raw functions sit a few small classes that own the C
objects (Library, Context, Problem, Plan) and one helper, Library.conv(), that runs a
convolution on numpy arrays.  Reusable by any test or script:

    lib = Library(os.environ["CONVFIND_LIB"])
    with lib.context(num_threads=1) as ctx:
        y, algorithm, key = lib.conv(ctx, "Conv", x, w, attrs={"pads": [1, 1, 1, 1]})
"""

import ctypes
import os

import numpy as np

MAX_SPATIAL = 3
MAX_RANK = MAX_SPATIAL + 2

STATUS_NAMES = [
    "CONVFIND_OK",
    "CONVFIND_ERR_NULL_POINTER",
    "CONVFIND_ERR_INVALID_ENUM",
    "CONVFIND_ERR_INVALID_RANK",
    "CONVFIND_ERR_INVALID_SHAPE",
    "CONVFIND_ERR_INVALID_ATTRIBUTE",
    "CONVFIND_ERR_OVERFLOW",
    "CONVFIND_ERR_UNSUPPORTED",
    "CONVFIND_ERR_OUT_OF_MEMORY",
    "CONVFIND_ERR_NOT_FOUND",
    "CONVFIND_ERR_BACKEND",
    "CONVFIND_ERR_IO",
    "CONVFIND_ERR_UNAVAILABLE",
]
STATUS = {name: value for value, name in enumerate(STATUS_NAMES)}
OK = STATUS["CONVFIND_OK"]

OPS = {"Conv": 0, "ConvTranspose": 1}
DTYPES = {"f32": 0, "f16": 1, "bf16": 2}
LAYOUTS = {"NCHW": 0, "NHWC": 1}
AUTO_PADS = {"NOTSET": 0, "SAME_UPPER": 1, "SAME_LOWER": 2, "VALID": 3}
ACTIVATIONS = {
    "none": 0,
    "relu": 1,
    "leaky_relu": 2,
    "clip": 3,
    "sigmoid": 4,
    "tanh": 5,
    "hard_sigmoid": 6,
}
FIND_POLICIES = {"default": 0, "heuristic": 1, "exhaustive": 2, "hybrid": 3, "replay": 4,
                 "deferred": 5}
MATHS = {"strict": 0, "tf32": 1, "split_tf32": 2}


class Ints(ctypes.Structure):
    """convfind_ints"""

    _fields_ = [("count", ctypes.c_int), ("v", ctypes.c_int64 * (2 * MAX_SPATIAL))]


class ConvDesc(ctypes.Structure):
    """convfind_conv_desc"""

    _fields_ = [
        ("op", ctypes.c_int),
        ("dtype", ctypes.c_int),
        ("layout", ctypes.c_int),
        ("math_mode", ctypes.c_int),
        ("x_rank", ctypes.c_int),
        ("x_dims", ctypes.c_int64 * MAX_RANK),
        ("w_rank", ctypes.c_int),
        ("w_dims", ctypes.c_int64 * MAX_RANK),
        ("has_bias", ctypes.c_int),
        ("has_residual", ctypes.c_int),
        ("group", ctypes.c_int64),
        ("auto_pad", ctypes.c_int),
        ("kernel_shape", Ints),
        ("strides", Ints),
        ("dilations", Ints),
        ("pads", Ints),
        ("output_padding", Ints),
        ("output_shape", Ints),
        ("activation", ctypes.c_int),
        ("alpha", ctypes.c_float),
        ("beta", ctypes.c_float),
    ]


class DeviceAllocator(ctypes.Structure):
    """convfind_device_allocator (function pointers kept opaque: the tests never set them)"""

    _fields_ = [("alloc", ctypes.c_void_p), ("free", ctypes.c_void_p), ("user", ctypes.c_void_p)]


class ContextOptions(ctypes.Structure):
    """convfind_context_options (callbacks kept opaque: the tests never set them).  Its
    struct_size is this mirror's size, as convfind_context_options_init (inline in the
    header) sets the caller's."""

    _fields_ = [
        ("struct_size", ctypes.c_size_t),
        ("num_threads", ctypes.c_int),
        ("find_policy", ctypes.c_int),
        ("workspace_limit", ctypes.c_size_t),
        ("db_path", ctypes.c_char_p),
        ("system_db_path", ctypes.c_char_p),
        ("db_env_policy", ctypes.c_int),
        ("cache_bytes", ctypes.c_size_t),
        ("find_time_budget_s", ctypes.c_double),
        ("find_skip_validation", ctypes.c_int),
        ("device", ctypes.c_int),
        ("device_index", ctypes.c_int),
        ("device_allocator", DeviceAllocator),
        ("log_fn", ctypes.c_void_p),
        ("log_user", ctypes.c_void_p),
        ("log_level", ctypes.c_int),
        ("parallel_for", ctypes.c_void_p),
        ("parallel_for_user", ctypes.c_void_p),
        ("fleet_db", ctypes.c_char_p),
    ]

    def __init__(self):
        super().__init__()
        self.struct_size = ctypes.sizeof(self)


class Tensors(ctypes.Structure):
    """convfind_tensors"""

    _fields_ = [
        ("x", ctypes.c_void_p),
        ("w", ctypes.c_void_p),
        ("b", ctypes.c_void_p),
        ("z", ctypes.c_void_p),
        ("y", ctypes.c_void_p),
    ]


class PlanInfo(ctypes.Structure):
    """convfind_plan_info"""

    _fields_ = [
        ("algorithm", ctypes.c_char_p),
        ("key", ctypes.c_char_p),
        ("key_hash", ctypes.c_uint64),
        ("source", ctypes.c_int),
        ("provisional", ctypes.c_int),
    ]


# Every mirrored struct: C name -> ctypes class (checked against the header by tests).
MIRRORED = {
    "convfind_plan_info": PlanInfo,
    "convfind_ints": Ints,
    "convfind_conv_desc": ConvDesc,
    "convfind_context_options": ContextOptions,
    "convfind_device_allocator": DeviceAllocator,
    "convfind_tensors": Tensors,
}


class ConvfindError(Exception):
    """A convfind call returned a status other than CONVFIND_OK."""

    def __init__(self, call, status, message):
        self.call = call
        self.status = status
        self.status_name = STATUS_NAMES[status] if 0 <= status < len(STATUS_NAMES) else str(status)
        self.message = message
        super().__init__(f"{call}: {self.status_name}: {message}")


def _ints(values):
    values = [] if values is None else [int(v) for v in values]
    if len(values) > 2 * MAX_SPATIAL:
        raise ValueError(f"attribute with {len(values)} values does not fit convfind_ints")
    out = Ints()
    out.count = len(values)
    for i, v in enumerate(values):
        out.v[i] = v
    return out


def make_desc(op, x_dims, w_dims, attrs=None, layout="NCHW", has_bias=False,
              has_residual=False, activation="none", alpha=0.0, beta=0.0, dtype="f32",
              math="strict"):
    """A ConvDesc from ONNX-style arguments.

    x_dims and w_dims are logical ONNX dims (N, C, spatial...) whatever the layout.
    attrs holds ONNX attribute names and values: group, auto_pad (a string),
    kernel_shape, strides, dilations, pads, output_padding, output_shape; absent ones
    keep the ONNX defaults.  Enum arguments may be given as names or raw integers (the
    latter lets tests pass invalid values)."""
    attrs = dict(attrs or {})
    d = ConvDesc()
    d.op = OPS.get(op, op)
    d.dtype = DTYPES.get(dtype, dtype)
    d.layout = LAYOUTS.get(layout, layout)
    d.math_mode = MATHS.get(math, math)
    d.x_rank = len(x_dims)
    for i, v in enumerate(x_dims):
        d.x_dims[i] = int(v)
    d.w_rank = len(w_dims)
    for i, v in enumerate(w_dims):
        d.w_dims[i] = int(v)
    d.has_bias = int(bool(has_bias))
    d.has_residual = int(bool(has_residual))
    d.group = int(attrs.pop("group", 1))
    auto_pad = attrs.pop("auto_pad", "NOTSET")
    d.auto_pad = AUTO_PADS.get(auto_pad, auto_pad)
    for name in ("kernel_shape", "strides", "dilations", "pads", "output_padding",
                 "output_shape"):
        setattr(d, name, _ints(attrs.pop(name, None)))
    if attrs:
        raise ValueError(f"unknown attributes {sorted(attrs)}")
    d.activation = ACTIVATIONS.get(activation, activation)
    d.alpha = alpha
    d.beta = beta
    return d


def _ptr(a):
    return None if a is None else a.ctypes.data_as(ctypes.c_void_p)


class Library:
    """The loaded shared library and its function prototypes."""

    def __init__(self, path):
        self.path = path
        self.dll = ctypes.CDLL(path)
        c = self.dll
        vp, st = ctypes.c_void_p, ctypes.c_int
        protos = {
            "convfind_status_name": (ctypes.c_char_p, [st]),
            "convfind_last_error": (ctypes.c_char_p, []),
            "convfind_version_string": (ctypes.c_char_p, []),
            "convfind_conv_desc_init": (None, [ctypes.POINTER(ConvDesc)]),
            "convfind_problem_create": (st, [ctypes.POINTER(ConvDesc), ctypes.POINTER(vp)]),
            "convfind_problem_destroy": (None, [vp]),
            "convfind_problem_output_dims": (st, [vp, ctypes.POINTER(ctypes.c_int),
                                                  ctypes.POINTER(ctypes.c_int64)]),
            "convfind_problem_resolved_pads": (st, [vp, ctypes.POINTER(ctypes.c_int64)]),
            "convfind_problem_describe": (ctypes.c_size_t, [vp, ctypes.c_char_p,
                                                            ctypes.c_size_t]),
            "convfind_context_create": (st, [ctypes.POINTER(ContextOptions),
                                             ctypes.POINTER(vp)]),
            "convfind_context_destroy": (None, [vp]),
            "convfind_plan_create": (st, [vp, vp, ctypes.POINTER(vp)]),
            "convfind_plan_create_with_algorithm": (st, [vp, vp, ctypes.c_char_p,
                                                         ctypes.POINTER(vp)]),
            "convfind_plan_destroy": (None, [vp]),
            "convfind_plan_get_info": (st, [vp, ctypes.POINTER(PlanInfo)]),
            "convfind_execute": (st, [vp, ctypes.POINTER(Tensors)]),
            "convfind_algorithm_count": (ctypes.c_int, []),
            "convfind_algorithm_name": (ctypes.c_char_p, [ctypes.c_int]),
        }
        for name, (res, args) in protos.items():
            fn = getattr(c, name)
            fn.restype = res
            fn.argtypes = args

    def last_error(self):
        return self.dll.convfind_last_error().decode()

    def check(self, call, status):
        if status != OK:
            raise ConvfindError(call, status, self.last_error())

    def algorithms(self):
        return [self.dll.convfind_algorithm_name(i).decode()
                for i in range(self.dll.convfind_algorithm_count())]

    def context(self, num_threads=1, find_policy="heuristic", db_path=None):
        return Context(self, num_threads, find_policy, db_path)

    def problem(self, desc):
        """A Problem from a ConvDesc; raises ConvfindError on invalid input."""
        return Problem(self, desc)

    def conv(self, ctx, op, x, w, b=None, z=None, attrs=None, layout="NCHW",
             activation="none", alpha=0.0, beta=0.0, algo=None, math="strict"):
        """Runs one convolution and returns (y, algorithm name, the plan's key text: its
        last field names the ISA level the CPU kernels ran at).

        x, z and the returned y are stored in `layout` (for NHWC: N, spatial..., C);
        w is in ONNX layout; b is 1-D.  Raises ConvfindError on any failure, including
        CONVFIND_ERR_UNSUPPORTED when `algo` cannot run the problem."""
        x = np.ascontiguousarray(x, dtype=np.float32)
        w = np.ascontiguousarray(w, dtype=np.float32)
        x_dims = x.shape if layout == "NCHW" else (x.shape[0], x.shape[-1], *x.shape[1:-1])
        desc = make_desc(op, x_dims, w.shape, attrs, layout, b is not None, z is not None,
                         activation, alpha, beta, math=math)
        with self.problem(desc) as p, ctx.plan(p, algo) as plan:
            dims = p.output_dims()
            shape = dims if layout == "NCHW" else (dims[0], *dims[2:], dims[1])
            if b is not None:
                b = np.ascontiguousarray(b, dtype=np.float32)
                if b.shape != (dims[1],):
                    raise ValueError(f"bias shape {b.shape}, expected ({dims[1]},)")
            if z is not None:
                z = np.ascontiguousarray(z, dtype=np.float32)
                if z.shape != shape:
                    raise ValueError(f"residual shape {z.shape}, expected {shape}")
            y = np.empty(shape, dtype=np.float32)
            plan.execute(x, w, b, z, y)
            return y, plan.algorithm, plan.key


class Context:
    """A convfind_context; use as a context manager or call close()."""

    def __init__(self, lib, num_threads, find_policy, db_path):
        self.lib = lib
        opts = ContextOptions()
        opts.num_threads = num_threads
        opts.find_policy = FIND_POLICIES[find_policy]
        if db_path is not None:
            opts.db_path = os.fsencode(db_path)
        self.handle = ctypes.c_void_p()
        lib.check("convfind_context_create",
                  lib.dll.convfind_context_create(ctypes.byref(opts), ctypes.byref(self.handle)))

    def plan(self, problem, algo=None):
        return Plan(self, problem, algo)

    def close(self):
        if self.handle:
            self.lib.dll.convfind_context_destroy(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Problem:
    """A convfind_problem."""

    def __init__(self, lib, desc):
        self.lib = lib
        self.handle = ctypes.c_void_p()
        lib.check("convfind_problem_create",
                  lib.dll.convfind_problem_create(ctypes.byref(desc), ctypes.byref(self.handle)))

    def output_dims(self):
        rank = ctypes.c_int()
        dims = (ctypes.c_int64 * MAX_RANK)()
        self.lib.check("convfind_problem_output_dims",
                       self.lib.dll.convfind_problem_output_dims(self.handle, ctypes.byref(rank),
                                                                 dims))
        return tuple(dims[i] for i in range(rank.value))

    def resolved_pads(self):
        pads = (ctypes.c_int64 * (2 * MAX_SPATIAL))()
        self.lib.check("convfind_problem_resolved_pads",
                       self.lib.dll.convfind_problem_resolved_pads(self.handle, pads))
        nsp = len(self.output_dims()) - 2
        return tuple(pads[i] for i in range(2 * nsp))

    def describe(self):
        buf = ctypes.create_string_buffer(512)
        self.lib.dll.convfind_problem_describe(self.handle, buf, len(buf))
        return buf.value.decode()

    def close(self):
        if self.handle:
            self.lib.dll.convfind_problem_destroy(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class Plan:
    """A convfind_plan; `algo` forces an algorithm by name."""

    def __init__(self, ctx, problem, algo=None):
        self.lib = ctx.lib
        self.handle = ctypes.c_void_p()
        dll = self.lib.dll
        if algo is None:
            st = dll.convfind_plan_create(ctx.handle, problem.handle, ctypes.byref(self.handle))
            self.lib.check("convfind_plan_create", st)
        else:
            st = dll.convfind_plan_create_with_algorithm(ctx.handle, problem.handle,
                                                         algo.encode(), ctypes.byref(self.handle))
            self.lib.check("convfind_plan_create_with_algorithm", st)
        info = PlanInfo()
        self.lib.check("convfind_plan_get_info",
                       dll.convfind_plan_get_info(self.handle, ctypes.byref(info)))
        self.algorithm = info.algorithm.decode()
        self.key = info.key.decode()

    def execute(self, x, w, b, z, y):
        """Runs the plan; every array must be C-contiguous float32 of the right size."""
        for a in (x, w, b, z, y):
            if a is not None and (a.dtype != np.float32 or not a.flags.c_contiguous):
                raise ValueError("tensors must be C-contiguous float32 arrays")
        t = Tensors(_ptr(x), _ptr(w), _ptr(b), _ptr(z), _ptr(y))
        self.lib.check("convfind_execute", self.lib.dll.convfind_execute(self.handle,
                                                                         ctypes.byref(t)))

    def close(self):
        if self.handle:
            self.lib.dll.convfind_plan_destroy(self.handle)
            self.handle = ctypes.c_void_p()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
