/*
 * plan.c - convfind.Plan: a problem bound to a context and an algorithm, with its
 * constant weights (if given at plan time) handed to the library's plan, which copies
 * and packs them once and keys its decision by that usage.  Plan.execute is the
 * per-call path: arguments parsed by hand (vectorcall), buffers borrowed without
 * copies, the GIL released around convfind_execute, so that many Python threads run
 * plans of one context at once.  A plan keeps its context alive: convfind requires
 * every plan to be destroyed before its context.
 */
#include "cfpy.h"

#include <string.h>

typedef struct cfpy_plan {
    PyObject_HEAD
    cfpy_context *owner;
    convfind_problem *problem;
    convfind_plan *plan;
    int w_const;       /* the weights were given at plan time (the plan holds them) */
    PyObject *b_const; /* bytes: the bias given at plan time, or NULL */
    convfind_dtype dtype;
    int has_bias, has_residual;
    int rank;
    int64_t x_shape[CONVFIND_MAX_RANK]; /* physical (layout order) */
    int64_t w_shape[CONVFIND_MAX_RANK]; /* ONNX order, whatever the layout */
    int64_t y_shape[CONVFIND_MAX_RANK]; /* physical */
    int64_t b_len;
    PyObject *y_shape_obj; /* tuple, for allocating outputs */
} cfpy_plan;

static PyObject *aligned_empty; /* convfind._alloc.empty, imported on the first allocation */
static PyObject *dlpack_default_stream; /* 1: CUDA's legacy default stream in DLPack */

static PyObject *int_tuple(int n, const int64_t *v)
{
    PyObject *t = PyTuple_New(n);
    for (int i = 0; t != NULL && i < n; i++) {
        PyObject *item = PyLong_FromLongLong(v[i]);
        if (item == NULL) {
            Py_CLEAR(t);
            break;
        }
        PyTuple_SET_ITEM(t, i, item);
    }
    return t;
}

static void plan_dealloc(cfpy_plan *self)
{
    convfind_plan_destroy(self->plan);
    convfind_problem_destroy(self->problem);
    Py_XDECREF(self->b_const);
    Py_XDECREF(self->y_shape_obj);
    Py_XDECREF((PyObject *)self->owner);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

/* Copies a constant host tensor (the bias) of the expected shape into bytes. */
static PyObject *copy_constant(PyObject *obj, const char *name, convfind_dtype dtype, int ndim,
                               const int64_t *shape)
{
    cfpy_placement where = {CONVFIND_DEVICE_CPU, 0, Py_None};
    cfpy_tensor t;
    if (cfpy_tensor_get(obj, name, 0, &where, &t) < 0)
        return NULL;
    PyObject *copy = NULL;
    if (cfpy_tensor_expect(&t, name, dtype, ndim, shape) == 0) {
        size_t bytes = dtype == CONVFIND_DTYPE_F32 ? 4 : 2;
        for (int i = 0; i < ndim; i++)
            bytes *= (size_t)shape[i];
        copy = PyBytes_FromStringAndSize(t.data, (Py_ssize_t)bytes);
    }
    cfpy_tensor_release(&t);
    return copy;
}

/* A plan's constant bias, copied; the library has no constant bias. */
static int bind_bias(cfpy_plan *p, PyObject *b)
{
    if (b == Py_None)
        return 0;
    if (!p->has_bias) {
        PyErr_SetString(PyExc_ValueError, "b given to a problem without bias");
        return -1;
    }
    p->b_const = copy_constant(b, "b", p->dtype, 1, &p->b_len);
    return p->b_const == NULL ? -1 : 0;
}

/* The library's plan, with the constant weights `w` (a host array, or None for weights
 * given per call), which the library copies and packs.  -1 with a Python error set. */
static int make_plan(cfpy_plan *p, PyObject *w, const char *algo)
{
    convfind_plan_options o;
    convfind_plan_options_init(&o);
    o.algorithm = algo;
    cfpy_placement where = {CONVFIND_DEVICE_CPU, 0, Py_None};
    cfpy_tensor t;
    if (w != Py_None) {
        if (cfpy_tensor_get(w, "w", 0, &where, &t) < 0)
            return -1;
        if (cfpy_tensor_expect(&t, "w", p->dtype, p->rank, p->w_shape) < 0) {
            cfpy_tensor_release(&t);
            return -1;
        }
        o.weights = t.data;
        p->w_const = 1;
    }
    convfind_status st;
    Py_BEGIN_ALLOW_THREADS
    st = convfind_plan_create_ex(p->owner->ctx, p->problem, &o, &p->plan);
    Py_END_ALLOW_THREADS
    if (w != Py_None)
        cfpy_tensor_release(&t);
    if (st != CONVFIND_OK) {
        cfpy_raise_status(st);
        return -1;
    }
    return 0;
}

PyObject *cfpy_plan_create(cfpy_context *owner, const convfind_conv_desc *desc, PyObject *w,
                           PyObject *b, const char *algo)
{
    cfpy_plan *p = PyObject_New(cfpy_plan, &cfpy_plan_type);
    if (p == NULL)
        return NULL;
    p->owner = owner;
    Py_INCREF(owner);
    p->problem = NULL;
    p->plan = NULL;
    p->w_const = 0;
    p->b_const = p->y_shape_obj = NULL;
    p->dtype = desc->dtype;
    p->has_bias = desc->has_bias;
    p->has_residual = desc->has_residual;
    p->rank = desc->x_rank;

    if ((w != Py_None || b != Py_None) && owner->device != CONVFIND_DEVICE_CPU) {
        cfpy_raise_fmt(CONVFIND_ERR_UNSUPPORTED,
                       "constant weights are host arrays: on a CUDA context pass w and b "
                       "to execute()");
        goto fail;
    }
    convfind_status st = convfind_problem_create(desc, &p->problem);
    if (st != CONVFIND_OK)
        goto fail_status;
    int64_t y_logical[CONVFIND_MAX_RANK];
    int y_rank;
    st = convfind_problem_output_dims(p->problem, &y_rank, y_logical);
    if (st != CONVFIND_OK)
        goto fail_status;
    cfpy_physical_dims(desc->layout, p->rank, desc->x_dims, p->x_shape);
    cfpy_physical_dims(desc->layout, y_rank, y_logical, p->y_shape);
    memcpy(p->w_shape, desc->w_dims, sizeof p->w_shape);
    p->b_len = y_logical[1];
    p->y_shape_obj = int_tuple(y_rank, p->y_shape);
    if (p->y_shape_obj == NULL || make_plan(p, w, algo) < 0 || bind_bias(p, b) < 0)
        goto fail;
    return (PyObject *)p;

fail_status:
    cfpy_raise_status(st);
fail:
    Py_DECREF(p);
    return NULL;
}

/* ---- execute --------------------------------------------------------------------- */

enum { ARG_X, ARG_W, ARG_B, ARG_Z, ARG_OUT, ARG_STREAM, N_ARGS };
static const char *const arg_names[N_ARGS] = {"x", "w", "b", "z", "out", "stream"};

static int parse_execute_args(PyObject *const *args, Py_ssize_t nargs, PyObject *kwnames,
                              PyObject **a)
{
    for (int i = 0; i < N_ARGS; i++)
        a[i] = Py_None;
    if (nargs > N_ARGS) {
        PyErr_Format(PyExc_TypeError, "execute() takes at most %d arguments", N_ARGS);
        return -1;
    }
    for (Py_ssize_t i = 0; i < nargs; i++)
        a[i] = args[i];
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE(kwnames) : 0;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *key = PyTuple_GET_ITEM(kwnames, k);
        int found = -1;
        for (int i = 0; i < N_ARGS && found < 0; i++)
            if (PyUnicode_CompareWithASCIIString(key, arg_names[i]) == 0)
                found = i;
        if (found < 0) {
            PyErr_Format(PyExc_TypeError, "execute() got an unexpected keyword argument '%U'",
                         key);
            return -1;
        }
        if (found < nargs) {
            PyErr_Format(PyExc_TypeError, "execute() got multiple values for '%s'",
                         arg_names[found]);
            return -1;
        }
        a[found] = args[nargs + k];
    }
    if (a[ARG_X] == Py_None) {
        PyErr_SetString(PyExc_TypeError, "execute() needs x");
        return -1;
    }
    return 0;
}

static PyObject *allocate_output(cfpy_plan *self)
{
    if (self->owner->device != CONVFIND_DEVICE_CPU) {
        PyErr_SetString(PyExc_ValueError,
                        "out= is required on a CUDA context: the extension allocates host "
                        "memory only");
        return NULL;
    }
    /* numpy.empty's large arrays start 16 bytes past a page: the kernels' vector loads
     * and stores of their rows would each span two cache lines (_alloc.py). */
    if (aligned_empty == NULL) {
        PyObject *mod = PyImport_ImportModule("convfind._alloc");
        if (mod == NULL)
            return NULL;
        aligned_empty = PyObject_GetAttrString(mod, "empty");
        Py_DECREF(mod);
        if (aligned_empty == NULL)
            return NULL;
    }
    return PyObject_CallFunction(aligned_empty, "Os", self->y_shape_obj,
                                 cfpy_dtype_name(self->dtype));
}

/* The tensors of one call, indexed by ARG_*; `used` says which must be released. */
typedef struct call_tensors {
    cfpy_tensor t[ARG_OUT + 1];
    int used[ARG_OUT + 1];
} call_tensors;

static void release_all(call_tensors *c)
{
    for (int i = 0; i <= ARG_OUT; i++)
        if (c->used[i])
            cfpy_tensor_release(&c->t[i]);
}

static int get_input(call_tensors *c, int slot, PyObject *obj, const char *name,
                     const cfpy_placement *where, convfind_dtype dtype, int ndim,
                     const int64_t *shape, const void **data)
{
    if (cfpy_tensor_get(obj, name, slot == ARG_OUT, where, &c->t[slot]) < 0)
        return -1;
    c->used[slot] = 1;
    if (cfpy_tensor_expect(&c->t[slot], name, dtype, ndim, shape) < 0)
        return -1;
    *data = c->t[slot].data;
    return 0;
}

static PyObject *plan_execute(cfpy_plan *self, PyObject *const *args, Py_ssize_t nargs,
                              PyObject *kwnames)
{
    PyObject *a[N_ARGS];
    if (parse_execute_args(args, nargs, kwnames, a) < 0)
        return NULL;
    cfpy_placement where = {self->owner->device, self->owner->device_index, Py_None};
    void *stream = NULL;
    if (a[ARG_STREAM] != Py_None) {
        if (where.device == CONVFIND_DEVICE_CPU) {
            PyErr_SetString(PyExc_ValueError, "stream= is for CUDA contexts; a CPU call has none");
            return NULL;
        }
        stream = PyLong_AsVoidPtr(a[ARG_STREAM]);
        if (stream == NULL && PyErr_Occurred())
            return NULL;
        /* A cudaStream_t of 0 is the legacy default stream, which DLPack numbers 1 (it
         * forbids 0 as ambiguous, and PyTorch refuses it: a torch stream's cuda_stream
         * is 0 for the default stream); 1 and 2 (legacy, per-thread) mean the same in
         * both, and any other value is the stream's handle. */
        where.dlpack_stream = stream == NULL ? dlpack_default_stream : a[ARG_STREAM];
    } else if (where.device != CONVFIND_DEVICE_CPU) {
        where.dlpack_stream = dlpack_default_stream;
    }

    int64_t b_shape[1] = {self->b_len};
    call_tensors c = {.used = {0}};
    convfind_tensors tensors = {.x = NULL};
    const void *y_data = NULL;
    PyObject *out = a[ARG_OUT];
    int allocated = 0;

    if (get_input(&c, ARG_X, a[ARG_X], "x", &where, self->dtype, self->rank, self->x_shape,
                  &tensors.x) < 0)
        goto fail;
    if (a[ARG_W] != Py_None) {
        if (self->w_const) {
            PyErr_SetString(PyExc_ValueError, "w given to a plan with constant weights: the "
                            "plan was made for them (make another plan for other weights)");
            goto fail;
        }
        if (get_input(&c, ARG_W, a[ARG_W], "w", &where, self->dtype, self->rank,
                      self->w_shape, &tensors.w) < 0)
            goto fail;
    } else if (!self->w_const) {
        PyErr_SetString(PyExc_TypeError, "execute() needs w: the plan has no constant weights");
        goto fail;
    }
    if (a[ARG_B] != Py_None) {
        if (!self->has_bias) {
            PyErr_SetString(PyExc_ValueError, "b given to a plan without bias");
            goto fail;
        }
        if (get_input(&c, ARG_B, a[ARG_B], "b", &where, self->dtype, 1, b_shape, &tensors.b) < 0)
            goto fail;
    } else if (self->has_bias) {
        if (self->b_const == NULL) {
            PyErr_SetString(PyExc_TypeError, "execute() needs b: the plan has a bias");
            goto fail;
        }
        tensors.b = PyBytes_AS_STRING(self->b_const);
    }
    if ((a[ARG_Z] != Py_None) != self->has_residual) {
        PyErr_SetString(PyExc_ValueError, self->has_residual
                                              ? "execute() needs z: the plan has a residual"
                                              : "z given to a plan without residual");
        goto fail;
    }
    if (self->has_residual && get_input(&c, ARG_Z, a[ARG_Z], "z", &where, self->dtype,
                                        self->rank, self->y_shape, &tensors.z) < 0)
        goto fail;
    if (out == Py_None) {
        out = allocate_output(self);
        if (out == NULL)
            goto fail;
        allocated = 1;
    }
    if (get_input(&c, ARG_OUT, out, "out", &where, self->dtype, self->rank, self->y_shape,
                  &y_data) < 0)
        goto fail;
    tensors.y = (void *)y_data;

    convfind_status st;
    Py_BEGIN_ALLOW_THREADS
    st = stream ? convfind_execute_on_stream(self->plan, &tensors, stream)
                : convfind_execute(self->plan, &tensors);
    Py_END_ALLOW_THREADS
    release_all(&c);
    if (st != CONVFIND_OK) {
        if (allocated)
            Py_DECREF(out);
        return cfpy_raise_status(st);
    }
    if (!allocated)
        Py_INCREF(out);
    return out;

fail:
    release_all(&c);
    if (allocated)
        Py_DECREF(out);
    return NULL;
}

/* ---- attributes ------------------------------------------------------------------ */

static const char *const source_names[] = {"heuristic", "measured", "stored", "forced"};

static int plan_info(cfpy_plan *self, convfind_plan_info *info)
{
    convfind_status st = convfind_plan_get_info(self->plan, info);
    if (st != CONVFIND_OK) {
        cfpy_raise_status(st);
        return -1;
    }
    return 0;
}

static PyObject *get_algorithm(cfpy_plan *self, void *closure)
{
    (void)closure;
    convfind_plan_info info;
    return plan_info(self, &info) < 0 ? NULL : PyUnicode_FromString(info.algorithm);
}

static PyObject *get_source(cfpy_plan *self, void *closure)
{
    (void)closure;
    convfind_plan_info info;
    if (plan_info(self, &info) < 0)
        return NULL;
    unsigned s = (unsigned)info.source;
    return PyUnicode_FromString(s < 4 ? source_names[s] : "unknown");
}

static PyObject *get_key(cfpy_plan *self, void *closure)
{
    (void)closure;
    convfind_plan_info info;
    return plan_info(self, &info) < 0 ? NULL : PyUnicode_FromString(info.key);
}

static PyObject *get_key_hash(cfpy_plan *self, void *closure)
{
    (void)closure;
    convfind_plan_info info;
    return plan_info(self, &info) < 0 ? NULL : PyLong_FromUnsignedLongLong(info.key_hash);
}

static PyObject *get_provisional(cfpy_plan *self, void *closure)
{
    (void)closure;
    convfind_plan_info info;
    return plan_info(self, &info) < 0 ? NULL : PyBool_FromLong(info.provisional);
}

static PyObject *get_output_shape(cfpy_plan *self, void *closure)
{
    (void)closure;
    Py_INCREF(self->y_shape_obj);
    return self->y_shape_obj;
}

static PyObject *get_input_shape(cfpy_plan *self, void *closure)
{
    (void)closure;
    return int_tuple(self->rank, self->x_shape);
}

static PyObject *get_weight_shape(cfpy_plan *self, void *closure)
{
    (void)closure;
    return int_tuple(self->rank, self->w_shape);
}

static PyObject *get_dtype(cfpy_plan *self, void *closure)
{
    (void)closure;
    return PyUnicode_FromString(cfpy_dtype_name(self->dtype));
}

static PyObject *get_flops(cfpy_plan *self, void *closure)
{
    (void)closure;
    return PyFloat_FromDouble(convfind_problem_flops(self->problem));
}

static PyObject *get_has_bias(cfpy_plan *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->has_bias);
}

static PyObject *get_has_residual(cfpy_plan *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->has_residual);
}

static PyObject *get_constant_weights(cfpy_plan *self, void *closure)
{
    (void)closure;
    return PyBool_FromLong(self->w_const);
}

static PyObject *plan_describe(cfpy_plan *self, PyObject *unused)
{
    (void)unused;
    char buf[512];
    size_t n = convfind_problem_describe(self->problem, buf, sizeof buf);
    if (n < sizeof buf)
        return PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
    char *big = PyMem_Malloc(n + 1);
    if (big == NULL)
        return PyErr_NoMemory();
    convfind_problem_describe(self->problem, big, n + 1);
    PyObject *s = PyUnicode_FromStringAndSize(big, (Py_ssize_t)n);
    PyMem_Free(big);
    return s;
}

static PyObject *plan_repr(cfpy_plan *self)
{
    PyObject *desc = plan_describe(self, NULL);
    if (desc == NULL)
        return NULL;
    convfind_plan_info info;
    PyObject *r = NULL;
    if (plan_info(self, &info) == 0)
        r = PyUnicode_FromFormat("<convfind.Plan %U algorithm=%s source=%s>", desc,
                                 info.algorithm, source_names[(unsigned)info.source & 3u]);
    Py_DECREF(desc);
    return r;
}

static PyGetSetDef plan_getset[] = {
    {"algorithm", (getter)get_algorithm, NULL,
     "Stable name of the algorithm the next execution tries first.", NULL},
    {"source", (getter)get_source, NULL,
     "Where the decision came from: 'heuristic', 'measured', 'stored' or 'forced'.", NULL},
    {"key", (getter)get_key, NULL, "The canonical decision key (docs/key.md).", NULL},
    {"key_hash", (getter)get_key_hash, NULL, "The 64-bit hash of the key.", NULL},
    {"provisional", (getter)get_provisional, NULL,
     "True while a DEFERRED decision awaits the background tuner.", NULL},
    {"output_shape", (getter)get_output_shape, NULL, "Shape of Y, in the plan's layout.", NULL},
    {"input_shape", (getter)get_input_shape, NULL, "Shape of X, in the plan's layout.", NULL},
    {"weight_shape", (getter)get_weight_shape, NULL, "Shape of W (always ONNX order).", NULL},
    {"dtype", (getter)get_dtype, NULL, "Element type: 'float32', 'float16' or 'bfloat16'.", NULL},
    {"flops", (getter)get_flops, NULL, "Floating-point operations of one execution.", NULL},
    {"has_bias", (getter)get_has_bias, NULL, "Whether the problem has a bias B.", NULL},
    {"has_residual", (getter)get_has_residual, NULL, "Whether the problem adds a residual Z.",
     NULL},
    {"constant_weights", (getter)get_constant_weights, NULL,
     "True when W was given at plan time (copied and packed once).", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

static PyMethodDef plan_methods[] = {
    {"execute", (PyCFunction)(void (*)(void))plan_execute, METH_FASTCALL | METH_KEYWORDS,
     "execute(x, w=None, b=None, z=None, out=None, stream=None)\n--\n\n"
     "Computes Y for x and returns it (out, when given).  w and b default to the\n"
     "constant weights and bias given at plan time; z is required iff the plan has a\n"
     "residual.  On a CUDA context every array is a DLPack device array, out is required\n"
     "and stream (a cudaStream_t as an int; None: the default stream) is where the work\n"
     "is queued.  The GIL is released while convfind computes."},
    {"describe", (PyCFunction)plan_describe, METH_NOARGS,
     "describe()\n--\n\nA one-line description of the problem."},
    {NULL, NULL, 0, NULL}};

PyTypeObject cfpy_plan_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "convfind.Plan",
    .tp_basicsize = sizeof(cfpy_plan),
    .tp_dealloc = (destructor)plan_dealloc,
    .tp_repr = (reprfunc)plan_repr,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "A convolution problem bound to a context and to the algorithm chosen for it.\n"
              "Made by Context.plan(); any number of threads may execute one plan at once.",
    .tp_methods = plan_methods,
    .tp_getset = plan_getset,
};

int cfpy_plan_types_init(PyObject *module)
{
    dlpack_default_stream = PyLong_FromLong(1);
    if (dlpack_default_stream == NULL || PyType_Ready(&cfpy_plan_type) < 0)
        return -1;
    return PyModule_AddObjectRef(module, "Plan", (PyObject *)&cfpy_plan_type);
}
