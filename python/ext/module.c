/*
 * module.c - the convfind._convfind extension module: its functions that need no
 * context (version, algorithms, CUDA availability) and its initialisation.  The public
 * Python API is convfind/__init__.py, which re-exports what is defined here.
 */
#include "cfpy.h"

static PyObject *mod_version(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    return PyUnicode_FromString(convfind_version_string());
}

static PyObject *mod_algorithms(PyObject *self, PyObject *unused)
{
    (void)self;
    (void)unused;
    int n = convfind_algorithm_count();
    PyObject *list = PyList_New(n);
    for (int i = 0; list != NULL && i < n; i++) {
        PyObject *name = PyUnicode_FromString(convfind_algorithm_name(i));
        if (name == NULL)
            Py_CLEAR(list);
        else
            PyList_SET_ITEM(list, i, name);
    }
    return list;
}

static PyObject *mod_cuda_available(PyObject *self, PyObject *args)
{
    (void)self;
    int index = 0;
    if (!PyArg_ParseTuple(args, "|i", &index))
        return NULL;
    char why[512] = "";
    int ok;
    Py_BEGIN_ALLOW_THREADS
    ok = convfind_cuda_available(index, why, sizeof why);
    Py_END_ALLOW_THREADS
    return Py_BuildValue("(Ns)", PyBool_FromLong(ok), why);
}

static PyMethodDef module_methods[] = {
    {"version", mod_version, METH_NOARGS,
     "version()\n--\n\nThe C library's version, \"MAJOR.MINOR.PATCH\"."},
    {"algorithms", mod_algorithms, METH_NOARGS,
     "algorithms()\n--\n\nStable names of every algorithm compiled into this build."},
    {"cuda_available", mod_cuda_available, METH_VARARGS,
     "cuda_available(index=0)\n--\n\n(True, '') when CUDA device `index` can be used,\n"
     "else (False, reason)."},
    {NULL, NULL, 0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT,
    .m_name = "convfind._convfind",
    .m_doc = "C extension of convfind: the public API is the convfind package.",
    .m_size = -1,
    .m_methods = module_methods,
};

PyMODINIT_FUNC PyInit__convfind(void)
{
    PyObject *m = PyModule_Create(&module_def);
    if (m == NULL)
        return NULL;
    if (cfpy_errors_init(m) < 0 || cfpy_context_types_init(m) < 0 ||
        cfpy_plan_types_init(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
