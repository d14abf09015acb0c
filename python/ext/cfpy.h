/*
 * cfpy.h - declarations shared by the files of convfind's CPython extension
 * (convfind._convfind).  The extension is a thin layer over include/convfind.h: every
 * concept of the C API is used in exactly one file here (problems: desc.c; tensors:
 * tensor.c; contexts, Find, statistics: context.c; plans, packed weights, execution:
 * plan.c; statuses: errors.c), so that a change of the C API touches one place.
 *
 * Argument spelling (ONNX attribute names, enum names) is parsed in Python
 * (convfind/_attrs.py), which hands the C side a fixed-layout "spec" tuple; only the
 * per-call path (Plan.execute) is parsed in C, because it must stay within a few
 * microseconds.
 */
#ifndef CFPY_H
#define CFPY_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "convfind.h"

/* ---- errors.c: one exception class per convfind_status ---------------------------- */

/* Creates convfind.Error and its subclasses and adds them to `module`. */
int cfpy_errors_init(PyObject *module);
/* Raises the class of `status` with convfind_last_error() as its message; returns NULL. */
PyObject *cfpy_raise_status(convfind_status status);
/* Raises the class of `status` with a message of the binding's own; returns NULL. */
PyObject *cfpy_raise_fmt(convfind_status status, const char *fmt, ...);

/* ---- desc.c: the spec tuple built by convfind/_attrs.py ----------------------------- */

/* Fills `desc` from the spec tuple; on a malformed spec raises TypeError, returns -1. */
int cfpy_desc_from_spec(PyObject *spec, convfind_conv_desc *desc);
/* Physical dims of a tensor stored in `layout`, from its logical (ONNX order) dims. */
void cfpy_physical_dims(convfind_layout layout, int rank, const int64_t *logical,
                        int64_t *physical);

/* ---- tensor.c: arrays through the buffer protocol or DLPack -------------------------- */

typedef struct cfpy_tensor {
    void *data;
    convfind_dtype dtype;
    int ndim;
    int64_t shape[CONVFIND_MAX_RANK];
    int release;  /* how to give it back: 0 nothing, 1 Py_buffer, 2/3 DLPack capsule */
    Py_buffer view;
    void *managed; /* the DLPack managed tensor whose deleter we call */
} cfpy_tensor;

/* Where tensors of a call must live and on which stream they are used. */
typedef struct cfpy_placement {
    convfind_device device;
    int device_index;
    PyObject *dlpack_stream; /* passed to __dlpack__(stream=): None on the CPU */
} cfpy_placement;

/* Gets the memory of `obj` (named `name` in messages) as a dense C-ordered tensor on
 * `where`; `writable` for outputs.  Raises and returns -1 on failure, leaving nothing
 * to release. */
int cfpy_tensor_get(PyObject *obj, const char *name, int writable,
                    const cfpy_placement *where, cfpy_tensor *t);
/* Checks dtype and shape; raises InvalidShapeError naming the difference. */
int cfpy_tensor_expect(const cfpy_tensor *t, const char *name, convfind_dtype dtype, int ndim,
                       const int64_t *shape);
void cfpy_tensor_release(cfpy_tensor *t);
/* "float32", "float16" or "bfloat16". */
const char *cfpy_dtype_name(convfind_dtype dtype);

/* ---- context.c ---------------------------------------------------------------------- */

typedef struct cfpy_context {
    PyObject_HEAD
    convfind_context *ctx;
    convfind_device device;
    int device_index;
} cfpy_context;

extern PyTypeObject cfpy_context_type;

/* ---- plan.c ------------------------------------------------------------------------- */

extern PyTypeObject cfpy_plan_type;

/* A plan of `desc` on `owner`; w and b are None or constant host arrays, copied and
 * (w) packed once; algo NULL lets the find policy choose. */
PyObject *cfpy_plan_create(cfpy_context *owner, const convfind_conv_desc *desc, PyObject *w,
                           PyObject *b, const char *algo);
/* Readies convfind.Plan and adds it to `module`. */
int cfpy_plan_types_init(PyObject *module);
/* Readies convfind.Context (and FindResult) and adds them to `module`. */
int cfpy_context_types_init(PyObject *module);

#endif /* CFPY_H */
