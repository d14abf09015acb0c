/*
 * dlpack_abi.h - the DLPack data structures the extension reads, declared from the
 * DLPack specification (ABI 0.8 "dltensor" capsules and 1.x "dltensor_versioned"
 * capsules).  Declared here rather than included because no system package ships
 * dlpack.h and the ABI is all the extension needs: it never produces DLPack tensors,
 * only consumes them (tensor.c).
 */
#ifndef CFPY_DLPACK_ABI_H
#define CFPY_DLPACK_ABI_H

#include <stdint.h>

enum {
    CFDL_CPU = 1,
    CFDL_CUDA = 2,
    CFDL_CUDA_HOST = 3,
    CFDL_CUDA_MANAGED = 13
};

enum { CFDL_FLOAT = 2, CFDL_BFLOAT = 4 };

/* A versioned tensor with this flag must not be written (an `out` buffer). */
#define CFDL_FLAG_READ_ONLY UINT64_C(1)

typedef struct cfdl_device {
    int32_t device_type;
    int32_t device_id;
} cfdl_device;

typedef struct cfdl_dtype {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
} cfdl_dtype;

typedef struct cfdl_tensor {
    void *data;
    cfdl_device device;
    int32_t ndim;
    cfdl_dtype dtype;
    int64_t *shape;
    int64_t *strides; /* in elements; NULL means compact row-major */
    uint64_t byte_offset;
} cfdl_tensor;

typedef struct cfdl_managed {
    cfdl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter)(struct cfdl_managed *self);
} cfdl_managed;

typedef struct cfdl_version {
    uint32_t major;
    uint32_t minor;
} cfdl_version;

typedef struct cfdl_managed_versioned {
    cfdl_version version;
    void *manager_ctx;
    void (*deleter)(struct cfdl_managed_versioned *self);
    uint64_t flags;
    cfdl_tensor dl_tensor;
} cfdl_managed_versioned;

#endif /* CFPY_DLPACK_ABI_H */
