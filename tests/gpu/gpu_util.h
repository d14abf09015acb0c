/*
 * gpu_util.h - helpers of the GPU tests (tests/gpu): skipping without a GPU, problems,
 * host data in every dtype, device buffers, and the CPU reference to compare with.
 *
 * Every GPU test exits with GU_SKIP (77, ctest's SKIP_RETURN_CODE) after printing
 * "SKIP: <reason>" when this machine has no usable CUDA device, so CI without a GPU
 * reports them as skipped rather than passed.
 */
#ifndef CONVFIND_TEST_GPU_UTIL_H
#define CONVFIND_TEST_GPU_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "convfind.h"

#define GU_SKIP 77

/* Exits with GU_SKIP, saying why, unless CUDA device 0 can be used. */
void gu_require_gpu(void);

/* Aborts the test with `what` and the library's last error when st != OK. */
void gu_check(convfind_status st, const char *what);

/* Records what the test is about to do (printf format); a failure of gu_check or of a
 * CUDA call in these helpers prints it, so an error that surfaces later (a sticky CUDA
 * error at the next synchronization) still names the configuration that ran. */
void gu_doing(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* A problem from a descriptor; aborts on failure. */
convfind_problem *gu_problem(const convfind_conv_desc *desc);

/* Host and device buffers of one problem.  Host values are floats already rounded to
 * the problem's dtype, so the f32 CPU reference sees exactly what the GPU sees. */
typedef struct gu_data {
    const convfind_problem *p;
    convfind_dtype dtype;
    size_t nx, nw, nb, ny;
    float *x, *w, *b, *z, *expect, *got;     /* host */
    void *dx, *dw, *db, *dz, *dy;            /* device, in dtype */
} gu_data;

/* Fills from `seed`, uploads, and computes `expect` with the CPU reference (cpu.reference
 * on an f32 copy of the problem).  `desc` must be the problem's descriptor. */
void gu_data_init(gu_data *d, const convfind_conv_desc *desc, const convfind_problem *p,
                  unsigned seed);
void gu_data_free(gu_data *d);
convfind_tensors gu_tensors(const gu_data *d);

/* Downloads Y (after synchronizing the device) into d->got and returns the normwise
 * relative error ||got - expect|| / ||expect|| (NaN anywhere gives +inf). */
double gu_error(gu_data *d);

/* The error a correct result must stay under for the problem's dtype and math mode. */
double gu_tolerance(const convfind_conv_desc *desc);

/* Poisons device Y with NaNs, so an output that is not written fails the check. */
void gu_poison(gu_data *d);

/* A CUDA context on device 0 with `policy`, a short Find budget and an in-memory
 * database unless `db_path` is given. */
convfind_context *gu_context(convfind_find_policy policy, const char *db_path);

#endif /* CONVFIND_TEST_GPU_UTIL_H */
