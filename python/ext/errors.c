/*
 * errors.c - convfind.Error and one subclass per convfind_status.  Each class carries
 * the status as class attributes `status` (the enum value) and `status_name`
 * ("CONVFIND_ERR_INVALID_SHAPE"); the message is the library's own
 * (convfind_last_error()), read on the thread that made the failing call.  Classes for
 * invalid arguments also derive from ValueError, the allocation failure from
 * MemoryError and so on, so that generic Python handlers catch them too.
 */
#include "cfpy.h"

#include <stdarg.h>

typedef struct error_class {
    convfind_status status;
    const char *name;
    PyObject **builtin; /* an extra base class, or NULL */
} error_class;

static const error_class error_classes[] = {
    {CONVFIND_ERR_NULL_POINTER, "NullPointerError", &PyExc_ValueError},
    {CONVFIND_ERR_INVALID_ENUM, "InvalidEnumError", &PyExc_ValueError},
    {CONVFIND_ERR_INVALID_RANK, "InvalidRankError", &PyExc_ValueError},
    {CONVFIND_ERR_INVALID_SHAPE, "InvalidShapeError", &PyExc_ValueError},
    {CONVFIND_ERR_INVALID_ATTRIBUTE, "InvalidAttributeError", &PyExc_ValueError},
    {CONVFIND_ERR_OVERFLOW, "SizeOverflowError", &PyExc_OverflowError},
    {CONVFIND_ERR_UNSUPPORTED, "UnsupportedError", NULL},
    {CONVFIND_ERR_OUT_OF_MEMORY, "OutOfMemoryError", &PyExc_MemoryError},
    {CONVFIND_ERR_NOT_FOUND, "NotFoundError", &PyExc_LookupError},
    {CONVFIND_ERR_BACKEND, "BackendError", NULL},
    {CONVFIND_ERR_IO, "FileIOError", &PyExc_OSError},
    {CONVFIND_ERR_UNAVAILABLE, "UnavailableError", NULL},
};
#define N_CLASSES (sizeof error_classes / sizeof error_classes[0])

static PyObject *base_error;
static PyObject *classes[N_CLASSES];

static int set_status_attrs(PyObject *cls, convfind_status status)
{
    PyObject *value = PyLong_FromLong((long)status);
    if (value == NULL || PyObject_SetAttrString(cls, "status", value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_DECREF(value);
    value = PyUnicode_FromString(convfind_status_name(status));
    if (value == NULL || PyObject_SetAttrString(cls, "status_name", value) < 0) {
        Py_XDECREF(value);
        return -1;
    }
    Py_DECREF(value);
    return 0;
}

int cfpy_errors_init(PyObject *module)
{
    base_error = PyErr_NewExceptionWithDoc(
        "convfind.Error",
        "Base class of every error convfind reports.  `status` is the convfind_status "
        "value and `status_name` its name; the message is the library's.",
        PyExc_Exception, NULL);
    if (base_error == NULL || PyModule_AddObjectRef(module, "Error", base_error) < 0)
        return -1;
    for (size_t i = 0; i < N_CLASSES; i++) {
        const error_class *e = &error_classes[i];
        char qualified[64];
        PyObject *bases = e->builtin ? PyTuple_Pack(2, base_error, *e->builtin)
                                     : PyTuple_Pack(1, base_error);
        if (bases == NULL)
            return -1;
        snprintf(qualified, sizeof qualified, "convfind.%s", e->name);
        classes[i] = PyErr_NewException(qualified, bases, NULL);
        Py_DECREF(bases);
        if (classes[i] == NULL || set_status_attrs(classes[i], e->status) < 0 ||
            PyModule_AddObjectRef(module, e->name, classes[i]) < 0)
            return -1;
    }
    return 0;
}

static PyObject *class_of(convfind_status status)
{
    for (size_t i = 0; i < N_CLASSES; i++)
        if (error_classes[i].status == status)
            return classes[i];
    return base_error;
}

PyObject *cfpy_raise_status(convfind_status status)
{
    const char *msg = convfind_last_error();
    PyErr_SetString(class_of(status), msg[0] ? msg : convfind_status_name(status));
    return NULL;
}

PyObject *cfpy_raise_fmt(convfind_status status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    PyObject *msg = PyUnicode_FromFormatV(fmt, ap);
    va_end(ap);
    if (msg != NULL) {
        PyErr_SetObject(class_of(status), msg);
        Py_DECREF(msg);
    }
    return NULL;
}
