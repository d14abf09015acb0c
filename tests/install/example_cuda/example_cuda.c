/*
 * example_cuda.c - the GPU side of an installed convfind, built by the install test
 * against find_package(convfind COMPONENTS cuda).
 *
 * It checks that the module the package names exists, then asks for a CUDA context.
 * Where the backend cannot run (no GPU, no driver, the CUDA libraries missing) the
 * context must fail with CONVFIND_ERR_UNAVAILABLE and a reason, which it prints as
 * "SKIP: ..." before exiting 0: an honest skip.  With a GPU it runs one convolution on
 * device buffers (a 1x1x3x3 input, a 2x2 kernel of ones: each output is the sum of a 2x2
 * window) and checks the result.  Exit status 0 only if everything it could check was
 * right.
 */
#include <convfind.h>

#include <stdio.h>
#include <string.h>

#ifdef EXAMPLE_HAVE_CUDART
#include <cuda_runtime_api.h>
#endif

static int check(convfind_status st, const char *what)
{
    if (st != CONVFIND_OK) {
        fprintf(stderr, "example_cuda: %s failed: %s: %s\n", what, convfind_status_name(st),
                convfind_last_error());
        return 1;
    }
    return 0;
}

#ifdef EXAMPLE_HAVE_CUDART
/* The 2x2 box filter over 1..9 on the device; 0 when Y is right. */
static int run_convolution(convfind_context *ctx)
{
    convfind_conv_desc d;
    convfind_conv_desc_init(&d);
    d.x_rank = d.w_rank = 4;
    const int64_t x_dims[4] = {1, 1, 3, 3}, w_dims[4] = {1, 1, 2, 2};
    memcpy(d.x_dims, x_dims, sizeof x_dims);
    memcpy(d.w_dims, w_dims, sizeof w_dims);
    const float x[9] = {1, 2, 3, 4, 5, 6, 7, 8, 9}, w[4] = {1, 1, 1, 1};
    const float expected[4] = {12, 16, 24, 28};
    float y[4] = {0};
    void *dx = NULL, *dw = NULL, *dy = NULL;
    convfind_problem *p = NULL;
    convfind_plan *plan = NULL;
    int bad = cudaMalloc(&dx, sizeof x) != cudaSuccess || cudaMalloc(&dw, sizeof w) != cudaSuccess ||
              cudaMalloc(&dy, sizeof y) != cudaSuccess ||
              cudaMemcpy(dx, x, sizeof x, cudaMemcpyHostToDevice) != cudaSuccess ||
              cudaMemcpy(dw, w, sizeof w, cudaMemcpyHostToDevice) != cudaSuccess;
    if (bad)
        fprintf(stderr, "example_cuda: cannot set up device buffers\n");
    bad = bad || check(convfind_problem_create(&d, &p), "convfind_problem_create") ||
          check(convfind_plan_create(ctx, p, &plan), "convfind_plan_create");
    if (!bad) {
        convfind_tensors t = {.x = dx, .w = dw, .y = dy};
        bad = check(convfind_execute(plan, &t), "convfind_execute") ||
              cudaMemcpy(y, dy, sizeof y, cudaMemcpyDeviceToHost) != cudaSuccess;
    }
    for (int i = 0; !bad && i < 4; i++)
        if (y[i] != expected[i]) {
            fprintf(stderr, "example_cuda: y[%d] = %g, expected %g\n", i, y[i], expected[i]);
            bad = 1;
        }
    if (!bad)
        printf("ran %s on the GPU: y = %g %g %g %g\n", convfind_plan_algorithm(plan), y[0], y[1],
               y[2], y[3]);
    convfind_plan_destroy(plan);
    convfind_problem_destroy(p);
    cudaFree(dx);
    cudaFree(dw);
    cudaFree(dy);
    return bad;
}
#endif

int main(void)
{
    FILE *f = fopen(EXAMPLE_CUDA_MODULE, "rb");
    if (!f) {
        fprintf(stderr, "example_cuda: the package names %s, which is not there\n",
                EXAMPLE_CUDA_MODULE);
        return 1;
    }
    fclose(f);
    printf("module: %s\n", EXAMPLE_CUDA_MODULE);
    convfind_context_options o;
    convfind_context_options_init(&o);
    o.device = CONVFIND_DEVICE_CUDA;
    o.db_path = ":memory:";
    o.find_policy = CONVFIND_FIND_HEURISTIC;
    convfind_context *ctx = NULL;
    convfind_status st = convfind_context_create(&o, &ctx);
    if (st == CONVFIND_ERR_UNAVAILABLE && convfind_last_error()[0]) {
        printf("SKIP: %s: %s\n", convfind_status_name(st), convfind_last_error());
        return 0;
    }
    if (check(st, "convfind_context_create (CUDA)"))
        return 1;
    int bad = 0;
#ifdef EXAMPLE_HAVE_CUDART
    bad = run_convolution(ctx);
#else
    printf("CUDA context created; built without the CUDA runtime, so no device buffers\n");
#endif
    convfind_context_destroy(ctx);
    return bad;
}
