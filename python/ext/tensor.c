/*
 * tensor.c - reads the memory of caller arrays.  Host arrays come through the buffer
 * protocol (numpy, array.array, memoryview, ...: no copy, no numpy C API); arrays that
 * only speak DLPack, and every array on a CUDA context, come through `__dlpack__`, with
 * the stream convfind will use passed to the producer so that its pending work is
 * ordered before ours (the DLPack stream contract).  Only dense C-ordered tensors are
 * accepted: convfind's tensors are dense, and a silent copy would hide a cost.
 */
#include "cfpy.h"
#include "dlpack_abi.h"

#include <string.h>

enum { RELEASE_NONE, RELEASE_BUFFER, RELEASE_DLPACK, RELEASE_DLPACK_VERSIONED };

const char *cfpy_dtype_name(convfind_dtype dtype)
{
    switch (dtype) {
    case CONVFIND_DTYPE_F16:
        return "float16";
    case CONVFIND_DTYPE_BF16:
        return "bfloat16";
    default:
        return "float32";
    }
}

static int rank_ok(int ndim, const char *name)
{
    if (ndim >= 1 && ndim <= CONVFIND_MAX_RANK)
        return 0;
    cfpy_raise_fmt(CONVFIND_ERR_INVALID_RANK, "%s has %d dimensions; convfind takes 3 to %d",
                   name, ndim, CONVFIND_MAX_RANK);
    return -1;
}

/* Buffer format -> dtype: "f" (float32) and "e" (float16) in native byte order. */
static int format_dtype(const Py_buffer *v, const char *name, convfind_dtype *dtype)
{
    const char *f = v->format ? v->format : "B";
    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    if (strcmp(f, "f") == 0 && v->itemsize == 4) {
        *dtype = CONVFIND_DTYPE_F32;
        return 0;
    }
    if (strcmp(f, "e") == 0 && v->itemsize == 2) {
        *dtype = CONVFIND_DTYPE_F16;
        return 0;
    }
    PyErr_Format(PyExc_TypeError,
                 "%s has element format '%s'; convfind takes float32 ('f') or float16 ('e')",
                 name, v->format ? v->format : "B");
    return -1;
}

static int from_buffer(PyObject *obj, const char *name, int writable, cfpy_tensor *t)
{
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj, &t->view, flags) < 0) {
        PyObject *type, *value, *tb;
        PyErr_Fetch(&type, &value, &tb);
        PyErr_Format(PyExc_ValueError, "%s must be a %sC-contiguous array: %S", name,
                     writable ? "writable " : "", value ? value : Py_None);
        Py_XDECREF(type);
        Py_XDECREF(value);
        Py_XDECREF(tb);
        return -1;
    }
    t->release = RELEASE_BUFFER;
    if (format_dtype(&t->view, name, &t->dtype) < 0 || rank_ok(t->view.ndim, name) < 0) {
        cfpy_tensor_release(t);
        return -1;
    }
    t->data = t->view.buf;
    t->ndim = t->view.ndim;
    for (int i = 0; i < t->ndim; i++)
        t->shape[i] = (int64_t)t->view.shape[i];
    return 0;
}

static int device_accepted(const cfpy_placement *where, long type, long id)
{
    if (where->device == CONVFIND_DEVICE_CPU)
        return type == CFDL_CPU || type == CFDL_CUDA_HOST;
    return (type == CFDL_CUDA || type == CFDL_CUDA_MANAGED) && id == where->device_index;
}

/* Asks the producer for a capsule, preferring the versioned (DLPack 1.x) form. */
static PyObject *call_dlpack(PyObject *obj, const cfpy_placement *where)
{
    PyObject *method = PyObject_GetAttrString(obj, "__dlpack__");
    if (method == NULL)
        return NULL;
    PyObject *kwargs = Py_BuildValue("{s:O,s:(ii)}", "stream", where->dlpack_stream,
                                     "max_version", 1, 0);
    PyObject *empty = PyTuple_New(0);
    PyObject *capsule = NULL;
    if (kwargs != NULL && empty != NULL) {
        capsule = PyObject_Call(method, empty, kwargs);
        if (capsule == NULL && PyErr_ExceptionMatches(PyExc_TypeError)) {
            /* A producer older than DLPack 1.0 has no max_version keyword. */
            PyErr_Clear();
            PyDict_DelItemString(kwargs, "max_version");
            capsule = PyObject_Call(method, empty, kwargs);
        }
    }
    Py_XDECREF(kwargs);
    Py_XDECREF(empty);
    Py_DECREF(method);
    return capsule;
}

static int dlpack_dtype(cfdl_dtype dt, const char *name, convfind_dtype *dtype)
{
    if (dt.lanes == 1 && dt.code == CFDL_FLOAT && dt.bits == 32)
        *dtype = CONVFIND_DTYPE_F32;
    else if (dt.lanes == 1 && dt.code == CFDL_FLOAT && dt.bits == 16)
        *dtype = CONVFIND_DTYPE_F16;
    else if (dt.lanes == 1 && dt.code == CFDL_BFLOAT && dt.bits == 16)
        *dtype = CONVFIND_DTYPE_BF16;
    else {
        PyErr_Format(PyExc_TypeError,
                     "%s has DLPack dtype (code %d, %d bits, %d lanes); convfind takes "
                     "float32, float16 or bfloat16",
                     name, dt.code, dt.bits, dt.lanes);
        return -1;
    }
    return 0;
}

static int dlpack_dense(const cfdl_tensor *dl)
{
    if (dl->strides == NULL)
        return 1;
    int64_t expect = 1;
    for (int i = dl->ndim - 1; i >= 0; i--) {
        if (dl->shape[i] != 1 && dl->strides[i] != expect)
            return 0;
        expect *= dl->shape[i];
    }
    return 1;
}

static int from_dlpack(PyObject *obj, const char *name, int writable,
                       const cfpy_placement *where, cfpy_tensor *t)
{
    long type = 0, id = 0;
    PyObject *dev = PyObject_CallMethod(obj, "__dlpack_device__", NULL);
    if (dev == NULL)
        return -1;
    int parsed = PyArg_ParseTuple(dev, "ll", &type, &id);
    Py_DECREF(dev);
    if (!parsed)
        return -1;
    if (!device_accepted(where, type, id)) {
        PyErr_Format(PyExc_ValueError,
                     "%s lives on DLPack device (%ld, %ld); this context runs on %s device %d",
                     name, type, id, where->device == CONVFIND_DEVICE_CPU ? "the CPU" : "CUDA",
                     where->device_index);
        return -1;
    }
    PyObject *capsule = call_dlpack(obj, where);
    if (capsule == NULL)
        return -1;
    cfdl_tensor *dl;
    int readonly = 0;
    if (PyCapsule_IsValid(capsule, "dltensor_versioned")) {
        cfdl_managed_versioned *m = PyCapsule_GetPointer(capsule, "dltensor_versioned");
        if (m->version.major != 1) {
            Py_DECREF(capsule);
            PyErr_Format(PyExc_TypeError, "%s: DLPack version %u is not supported", name,
                         m->version.major);
            return -1;
        }
        PyCapsule_SetName(capsule, "used_dltensor_versioned");
        t->managed = m;
        t->release = RELEASE_DLPACK_VERSIONED;
        dl = &m->dl_tensor;
        readonly = (m->flags & CFDL_FLAG_READ_ONLY) != 0;
    } else if (PyCapsule_IsValid(capsule, "dltensor")) {
        cfdl_managed *m = PyCapsule_GetPointer(capsule, "dltensor");
        PyCapsule_SetName(capsule, "used_dltensor");
        t->managed = m;
        t->release = RELEASE_DLPACK;
        dl = &m->dl_tensor;
    } else {
        Py_DECREF(capsule);
        PyErr_Format(PyExc_TypeError, "%s.__dlpack__() did not return a DLPack capsule", name);
        return -1;
    }
    Py_DECREF(capsule); /* the renamed capsule no longer owns the tensor: we do */
    if (writable && readonly) {
        cfpy_tensor_release(t);
        PyErr_Format(PyExc_ValueError, "%s is read-only", name);
        return -1;
    }
    if (dlpack_dtype(dl->dtype, name, &t->dtype) < 0 || rank_ok(dl->ndim, name) < 0) {
        cfpy_tensor_release(t);
        return -1;
    }
    if (!dlpack_dense(dl)) {
        cfpy_tensor_release(t);
        PyErr_Format(PyExc_ValueError, "%s must be a C-contiguous array", name);
        return -1;
    }
    t->ndim = dl->ndim;
    for (int i = 0; i < t->ndim; i++)
        t->shape[i] = dl->shape[i];
    t->data = (char *)dl->data + dl->byte_offset;
    return 0;
}

int cfpy_tensor_get(PyObject *obj, const char *name, int writable,
                    const cfpy_placement *where, cfpy_tensor *t)
{
    t->release = RELEASE_NONE;
    t->managed = NULL;
    if (where->device == CONVFIND_DEVICE_CPU && PyObject_CheckBuffer(obj))
        return from_buffer(obj, name, writable, t);
    if (PyObject_HasAttrString(obj, "__dlpack__"))
        return from_dlpack(obj, name, writable, where, t);
    if (PyObject_CheckBuffer(obj))
        PyErr_Format(PyExc_ValueError,
                     "%s is host memory; a CUDA context takes device arrays through DLPack",
                     name);
    else
        PyErr_Format(PyExc_TypeError,
                     "%s must be an array (buffer protocol or __dlpack__), not %.100s", name,
                     Py_TYPE(obj)->tp_name);
    return -1;
}

static PyObject *shape_tuple(int ndim, const int64_t *shape)
{
    PyObject *t = PyTuple_New(ndim);
    for (int i = 0; t != NULL && i < ndim; i++)
        PyTuple_SET_ITEM(t, i, PyLong_FromLongLong(shape[i]));
    return t;
}

int cfpy_tensor_expect(const cfpy_tensor *t, const char *name, convfind_dtype dtype, int ndim,
                       const int64_t *shape)
{
    if (t->dtype != dtype) {
        PyErr_Format(PyExc_TypeError, "%s is %s; the plan takes %s", name,
                     cfpy_dtype_name(t->dtype), cfpy_dtype_name(dtype));
        return -1;
    }
    int same = t->ndim == ndim;
    for (int i = 0; same && i < ndim; i++)
        same = t->shape[i] == shape[i];
    if (same)
        return 0;
    PyObject *got = shape_tuple(t->ndim, t->shape);
    PyObject *want = shape_tuple(ndim, shape);
    if (got != NULL && want != NULL)
        cfpy_raise_fmt(CONVFIND_ERR_INVALID_SHAPE, "%s has shape %R; the plan expects %R", name,
                       got, want);
    Py_XDECREF(got);
    Py_XDECREF(want);
    return -1;
}

void cfpy_tensor_release(cfpy_tensor *t)
{
    switch (t->release) {
    case RELEASE_BUFFER:
        PyBuffer_Release(&t->view);
        break;
    case RELEASE_DLPACK: {
        cfdl_managed *m = t->managed;
        if (m->deleter)
            m->deleter(m);
        break;
    }
    case RELEASE_DLPACK_VERSIONED: {
        cfdl_managed_versioned *m = t->managed;
        if (m->deleter)
            m->deleter(m);
        break;
    }
    default:
        break;
    }
    t->release = RELEASE_NONE;
    t->managed = NULL;
}
