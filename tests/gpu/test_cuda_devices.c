/*
 * test_cuda_devices.c - the two context options the other GPU tests leave at their
 * defaults: a caller's device allocator and a device other than 0.
 *
 * Allocator: an NHWC problem forced onto an NCHW cuDNN configuration (whose X and Y
 * transposes need workspace) runs on a context whose workspace comes from a counting,
 * stream-ordered allocator (cudaMallocAsync / cudaFreeAsync).  The result must be right,
 * the allocator must have been called, with the context's user pointer, and every block
 * it gave must have come back by the time the context is destroyed.
 *
 * Devices: on every visible device, a context with that device_index, inputs allocated
 * there, Find under EXHAUSTIVE and the result checked against the CPU reference.  With
 * one GPU the loop covers device 0 only and says so; an index past the last device must
 * fail with a message.  Exits 77 (skip) without a GPU.
 */
#include <cuda_runtime.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "gpu_util.h"

static int failures;

static void expect(int ok, const char *what)
{
    if (!ok) {
        printf("FAIL: %s\n", what);
        failures++;
    }
}

/* A 3x3 Conv with bias and ReLU, 2x16x12x10 -> 2x24x12x10, in `layout`. */
static void conv_desc(convfind_conv_desc *d, convfind_layout layout)
{
    convfind_conv_desc_init(d);
    d->layout = layout;
    d->x_rank = d->w_rank = 4;
    const int64_t x[4] = {2, 16, 12, 10}, w[4] = {24, 16, 3, 3};
    memcpy(d->x_dims, x, sizeof x);
    memcpy(d->w_dims, w, sizeof w);
    d->pads.count = 4;
    for (int i = 0; i < 4; i++)
        d->pads.v[i] = 1;
    d->has_bias = 1;
    d->activation = CONVFIND_ACT_RELU;
}

static convfind_context *context(int device, const convfind_device_allocator *alloc)
{
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.device = CONVFIND_DEVICE_CUDA;
    o.device_index = device;
    o.find_policy = CONVFIND_FIND_EXHAUSTIVE;
    o.find_time_budget_s = 0.05;
    o.db_path = ":memory:";
    if (alloc)
        o.device_allocator = *alloc;
    convfind_context *ctx;
    gu_check(convfind_context_create(&o, &ctx), "CUDA context");
    return ctx;
}

typedef struct counter {
    atomic_int allocs, frees, wrong_user;
} counter;

static counter the_counter;

static void *count_alloc(void *user, size_t bytes, void *stream)
{
    counter *c = &the_counter;
    if (user != c)
        atomic_fetch_add(&c->wrong_user, 1);
    void *p = NULL;
    if (cudaMallocAsync(&p, bytes, (cudaStream_t)stream) != cudaSuccess)
        return NULL;
    atomic_fetch_add(&c->allocs, 1);
    return p;
}

static void count_free(void *user, void *ptr, void *stream)
{
    counter *c = &the_counter;
    if (user != c)
        atomic_fetch_add(&c->wrong_user, 1);
    cudaFreeAsync(ptr, (cudaStream_t)stream);
    atomic_fetch_add(&c->frees, 1);
}

static void test_allocator(void)
{
    const convfind_device_allocator alloc = {count_alloc, count_free, &the_counter};
    convfind_context *ctx = context(0, &alloc);
    convfind_conv_desc desc;
    conv_desc(&desc, CONVFIND_LAYOUT_NHWC);
    convfind_problem *p = gu_problem(&desc);
    gu_data d;
    gu_data_init(&d, &desc, p, 7);
    convfind_tensors t = gu_tensors(&d);

    /* An NCHW configuration for this NHWC caller: X and Y go through the workspace. */
    enum { CAP = 256 };
    static convfind_find_result r[CAP];
    int n = 0;
    gu_check(convfind_find(ctx, p, CONVFIND_WEIGHTS_PER_CALL, r, CAP, &n), "find");
    const char *name = NULL;
    for (int i = 0; i < n && i < CAP && !name; i++)
        if (r[i].status == CONVFIND_CANDIDATE_OK && strncmp(r[i].algorithm, "cuda.cudnn:nchw", 15) == 0)
            name = r[i].algorithm;
    expect(name != NULL, "Find measured an NCHW configuration for the NHWC caller");
    if (name) {
        convfind_plan *plan;
        gu_check(convfind_plan_create_with_algorithm(ctx, p, name, &plan), name);
        const int before = atomic_load(&the_counter.allocs);
        gu_poison(&d);
        gu_check(convfind_execute(plan, &t), "execute with the caller's allocator");
        const double err = gu_error(&d);
        printf("allocator: %s, error %.3g, allocs during the execution %d\n", name, err,
               atomic_load(&the_counter.allocs) - before);
        expect(err <= gu_tolerance(&desc), "result with the caller's allocator");
        expect(atomic_load(&the_counter.allocs) > before, "the execution used the allocator");
        convfind_plan_destroy(plan);
    }
    gu_data_free(&d);
    convfind_problem_destroy(p);
    convfind_context_destroy(ctx);
    cudaDeviceSynchronize();
    printf("allocator: %d allocs, %d frees, %d calls with a wrong user pointer\n",
           atomic_load(&the_counter.allocs), atomic_load(&the_counter.frees),
           atomic_load(&the_counter.wrong_user));
    expect(atomic_load(&the_counter.allocs) == atomic_load(&the_counter.frees),
           "every block the allocator gave came back");
    expect(atomic_load(&the_counter.wrong_user) == 0, "the allocator got its user pointer");
}

static void test_devices(void)
{
    int count = 0;
    if (cudaGetDeviceCount(&count) != cudaSuccess)
        count = 0;
    for (int dev = 0; dev < count; dev++) {
        char why[256];
        if (!convfind_cuda_available(dev, why, sizeof why)) {
            printf("FAIL: device %d of %d is not usable: %s\n", dev, count, why);
            failures++;
            continue;
        }
        cudaSetDevice(dev); /* gu_data_init allocates on the current device */
        convfind_context *ctx = context(dev, NULL);
        convfind_conv_desc desc;
        conv_desc(&desc, CONVFIND_LAYOUT_NCHW);
        convfind_problem *p = gu_problem(&desc);
        gu_data d;
        gu_data_init(&d, &desc, p, 11 + (unsigned)dev);
        struct cudaPointerAttributes attr;
        expect(cudaPointerGetAttributes(&attr, d.dy) == cudaSuccess && attr.device == dev,
               "the test's Y lives on the device under test");
        convfind_tensors t = gu_tensors(&d);
        convfind_plan *plan;
        gu_check(convfind_plan_create(ctx, p, &plan), "plan (Find)");
        gu_poison(&d);
        gu_check(convfind_execute(plan, &t), "execute");
        const double err = gu_error(&d);
        printf("device %d of %d: %s, error %.3g\n", dev, count, convfind_plan_algorithm(plan),
               err);
        expect(err <= gu_tolerance(&desc), "result on this device");
        convfind_plan_destroy(plan);
        gu_data_free(&d);
        convfind_problem_destroy(p);
        convfind_context_destroy(ctx);
    }
    cudaSetDevice(0);
    if (count == 1)
        printf("devices: this machine has one GPU, so only device 0 was exercised\n");
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.device = CONVFIND_DEVICE_CUDA;
    o.device_index = count;
    convfind_context *ctx = NULL;
    expect(convfind_context_create(&o, &ctx) != CONVFIND_OK && ctx == NULL &&
               convfind_last_error()[0] != '\0',
           "a device index past the last device fails with a message");
}

int main(void)
{
    gu_require_gpu();
    test_allocator();
    test_devices();
    printf("%d failures\n", failures);
    return failures ? 1 : 0;
}
