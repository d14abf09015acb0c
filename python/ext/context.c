/*
 * context.c - convfind.Context's C base: options, the convfind_context, Find, keys and
 * statistics.  The Python class convfind.Context (convfind/__init__.py) derives from it
 * and turns ONNX keyword arguments into the spec tuples taken here.  A context may be
 * shared by any number of Python threads; plan creation and Find release the GIL,
 * because a miss under an exhaustive policy measures for up to the Find budget.
 */
#include "cfpy.h"

#include <string.h>

static PyTypeObject *find_result_type;

static PyStructSequence_Field find_result_fields[] = {
    {"algorithm", "stable algorithm name"},
    {"status", "'ok', 'failed', 'not_applicable' or 'abandoned'"},
    {"median_ms", "median of the timed runs, in milliseconds"},
    {"min_ms", "fastest timed run, in milliseconds"},
    {"spread", "(p90 - p10) / median of the timed runs"},
    {"repeats", "number of timed runs"},
    {"workspace_bytes", "workspace the algorithm needs"},
    {"validated", "True when its output matched the reference"},
    {NULL, NULL}};

static PyStructSequence_Desc find_result_desc = {
    "convfind.FindResult", "One measured candidate of Context.find(), best first.",
    find_result_fields, 8};

static void context_dealloc(cfpy_context *self)
{
    convfind_context_destroy(self->ctx);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int context_init(cfpy_context *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"threads", "policy", "db", "system_db", "db_env_policy",
                            "workspace_limit", "cache_bytes", "find_time_budget",
                            "find_validate", "device", "device_index", NULL};
    convfind_context_options o;
    convfind_context_options_init(&o);
    int policy = (int)o.find_policy, env = (int)o.db_env_policy, device = 0, validate = 1;
    Py_ssize_t workspace = 0, cache = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "|$iizziindpii", names, &o.num_threads,
                                     &policy, &o.db_path, &o.system_db_path, &env, &workspace,
                                     &cache, &o.find_time_budget_s, &validate, &device,
                                     &o.device_index))
        return -1;
    o.find_skip_validation = !validate;
    if (self->ctx != NULL) {
        PyErr_SetString(PyExc_RuntimeError, "Context.__init__ called twice");
        return -1;
    }
    if (workspace < 0 || cache < 0) {
        PyErr_SetString(PyExc_ValueError, "workspace_limit and cache_bytes must be >= 0");
        return -1;
    }
    o.find_policy = (convfind_find_policy)policy;
    o.db_env_policy = (convfind_db_env_policy)env;
    o.workspace_limit = (size_t)workspace;
    o.cache_bytes = (size_t)cache;
    o.device = (convfind_device)device;
    convfind_status st;
    Py_BEGIN_ALLOW_THREADS
    st = convfind_context_create(&o, &self->ctx);
    Py_END_ALLOW_THREADS
    if (st != CONVFIND_OK) {
        cfpy_raise_status(st);
        return -1;
    }
    self->device = o.device;
    self->device_index = o.device_index;
    return 0;
}

static int ready(cfpy_context *self)
{
    if (self->ctx != NULL)
        return 0;
    PyErr_SetString(PyExc_RuntimeError, "the context was not initialised");
    return -1;
}

static PyObject *context_plan(cfpy_context *self, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"spec", "w", "b", "algorithm", NULL};
    PyObject *spec, *w = Py_None, *b = Py_None;
    const char *algo = NULL;
    convfind_conv_desc d;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "O|OOz", names, &spec, &w, &b, &algo) ||
        ready(self) < 0 || cfpy_desc_from_spec(spec, &d) < 0)
        return NULL;
    return cfpy_plan_create(self, &d, w, b, algo);
}

static const char *const candidate_status[] = {"ok", "failed", "not_applicable", "abandoned"};

static PyObject *find_result(const convfind_find_result *r)
{
    PyObject *o = PyStructSequence_New(find_result_type);
    if (o == NULL)
        return NULL;
    unsigned s = (unsigned)r->status;
    PyObject *items[8] = {
        PyUnicode_FromString(r->algorithm),
        PyUnicode_FromString(s < 4 ? candidate_status[s] : "unknown"),
        PyFloat_FromDouble(r->median_ms),
        PyFloat_FromDouble(r->min_ms),
        PyFloat_FromDouble(r->spread),
        PyLong_FromLong(r->repeats),
        PyLong_FromSize_t(r->workspace_bytes),
        PyBool_FromLong(r->validated)};
    for (int i = 0; i < 8; i++) {
        if (items[i] == NULL) {
            for (int j = i; j < 8; j++)
                Py_XDECREF(items[j]);
            Py_DECREF(o);
            return NULL;
        }
        PyStructSequence_SetItem(o, i, items[i]);
    }
    return o;
}

/* The spec tuple and the weights usage (a bool: constant) of _find and _key. */
static int usage_args(PyObject *args, convfind_conv_desc *d, convfind_weights *weights)
{
    PyObject *spec;
    int constant;
    if (!PyArg_ParseTuple(args, "Op", &spec, &constant) || cfpy_desc_from_spec(spec, d) < 0)
        return -1;
    *weights = constant ? CONVFIND_WEIGHTS_CONSTANT : CONVFIND_WEIGHTS_PER_CALL;
    return 0;
}

static PyObject *context_find(cfpy_context *self, PyObject *args)
{
    convfind_conv_desc d;
    convfind_weights weights;
    convfind_problem *problem = NULL;
    if (ready(self) < 0 || usage_args(args, &d, &weights) < 0)
        return NULL;
    convfind_status st = convfind_problem_create(&d, &problem);
    if (st != CONVFIND_OK)
        return cfpy_raise_status(st);
    int capacity = 64, count = 0;
    convfind_find_result *results = NULL;
    for (;;) {
        results = PyMem_Calloc((size_t)capacity, sizeof *results);
        if (results == NULL) {
            convfind_problem_destroy(problem);
            return PyErr_NoMemory();
        }
        Py_BEGIN_ALLOW_THREADS
        st = convfind_find(self->ctx, problem, weights, results, capacity, &count);
        Py_END_ALLOW_THREADS
        if (st != CONVFIND_OK || count <= capacity)
            break;
        /* The decision is now cached: the second call returns it without measuring. */
        PyMem_Free(results);
        capacity = count;
    }
    convfind_problem_destroy(problem);
    PyObject *list = st == CONVFIND_OK ? PyList_New(count) : cfpy_raise_status(st);
    for (int i = 0; list != NULL && i < count; i++) {
        PyObject *r = find_result(&results[i]);
        if (r == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, r);
    }
    PyMem_Free(results);
    return list;
}

static PyObject *context_key(cfpy_context *self, PyObject *args)
{
    convfind_conv_desc d;
    convfind_weights weights;
    convfind_problem *problem = NULL;
    if (ready(self) < 0 || usage_args(args, &d, &weights) < 0)
        return NULL;
    convfind_status st = convfind_problem_create(&d, &problem);
    if (st != CONVFIND_OK)
        return cfpy_raise_status(st);
    size_t n = convfind_problem_key(self->ctx, problem, weights, NULL, 0);
    char *buf = PyMem_Malloc(n + 1);
    PyObject *key = NULL;
    if (buf == NULL) {
        PyErr_NoMemory();
    } else {
        convfind_problem_key(self->ctx, problem, weights, buf, n + 1);
        key = PyUnicode_FromStringAndSize(buf, (Py_ssize_t)n);
        PyMem_Free(buf);
    }
    convfind_problem_destroy(problem);
    return key;
}

static PyObject *context_stats(cfpy_context *self, PyObject *unused)
{
    (void)unused;
    convfind_context_stats s = {.struct_size = sizeof s};
    if (ready(self) < 0)
        return NULL;
    convfind_status st = convfind_context_stats_get(self->ctx, &s);
    if (st != CONVFIND_OK)
        return cfpy_raise_status(st);
    return Py_BuildValue(
        "{s:K,s:K,s:K,s:K,s:d,s:K,s:K,s:K,s:n,s:n,s:n,s:n,s:K,s:K,s:K,s:K,s:K,s:K,s:K,s:O,s:K,s:K}",
        "hits",
        (unsigned long long)s.hits, "misses", (unsigned long long)s.misses, "waits",
        (unsigned long long)s.waits, "finds", (unsigned long long)s.finds, "find_seconds",
        s.find_seconds, "evictions", (unsigned long long)s.evictions, "fallbacks",
        (unsigned long long)s.fallbacks, "deferred_updates",
        (unsigned long long)s.deferred_updates, "cache_entries", (Py_ssize_t)s.cache_entries,
        "cache_bytes", (Py_ssize_t)s.cache_bytes, "cache_peak_bytes",
        (Py_ssize_t)s.cache_peak_bytes, "cache_budget", (Py_ssize_t)s.cache_budget, "stored",
        (unsigned long long)s.stored, "store_failures", (unsigned long long)s.store_failures,
        "seeded", (unsigned long long)s.seeded, "retimed_low_confidence",
        (unsigned long long)s.retimed_low_confidence, "fleet_hits",
        (unsigned long long)s.fleet_hits, "fleet_pushed", (unsigned long long)s.fleet_pushed,
        "fleet_faults", (unsigned long long)s.fleet_faults, "fleet_connected",
        s.fleet_connected ? Py_True : Py_False, "compiled_stored",
        (unsigned long long)s.compiled_stored, "compiled_loaded",
        (unsigned long long)s.compiled_loaded);
}

static PyObject *get_device_code(cfpy_context *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong((long)self->device);
}

static PyObject *get_device_index(cfpy_context *self, void *closure)
{
    (void)closure;
    return PyLong_FromLong(self->device_index);
}

static PyMethodDef context_methods[] = {
    {"_plan", (PyCFunction)(void (*)(void))context_plan, METH_VARARGS | METH_KEYWORDS,
     "_plan(spec, w=None, b=None, algorithm=None): a Plan of a spec tuple."},
    {"_find", (PyCFunction)context_find, METH_VARARGS,
     "_find(spec, constant): the ranked candidates of a spec tuple for plans with constant\n"
     "or per-call weights, measuring them if needed."},
    {"_key", (PyCFunction)context_key, METH_VARARGS,
     "_key(spec, constant): the decision key of a spec tuple for plans with constant or\n"
     "per-call weights."},
    {"stats", (PyCFunction)context_stats, METH_NOARGS,
     "stats()\n--\n\nA snapshot of the context's counters as a dict: hits, misses, waits,\n"
     "finds, find_seconds, evictions, fallbacks, deferred_updates, cache_entries,\n"
     "cache_bytes, cache_peak_bytes, cache_budget, stored, store_failures, seeded,\n"
     "retimed_low_confidence, fleet_hits, fleet_pushed, fleet_faults, fleet_connected,\n"
     "compiled_stored, compiled_loaded."},
    {NULL, NULL, 0, NULL}};

static PyGetSetDef context_getset[] = {
    {"_device_code", (getter)get_device_code, NULL, "convfind_device value", NULL},
    {"device_index", (getter)get_device_index, NULL, "CUDA device ordinal", NULL},
    {NULL, NULL, NULL, NULL, NULL}};

PyTypeObject cfpy_context_type = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "convfind._convfind.ContextBase",
    .tp_basicsize = sizeof(cfpy_context),
    .tp_dealloc = (destructor)context_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .tp_doc = "C base of convfind.Context: owns one convfind_context.",
    .tp_methods = context_methods,
    .tp_getset = context_getset,
    .tp_init = (initproc)context_init,
    .tp_new = PyType_GenericNew,
};

int cfpy_context_types_init(PyObject *module)
{
    find_result_type = PyStructSequence_NewType(&find_result_desc);
    if (find_result_type == NULL || PyType_Ready(&cfpy_context_type) < 0 ||
        PyModule_AddObjectRef(module, "ContextBase", (PyObject *)&cfpy_context_type) < 0 ||
        PyModule_AddObjectRef(module, "FindResult", (PyObject *)find_result_type) < 0)
        return -1;
    return 0;
}
