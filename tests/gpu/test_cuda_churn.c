/*
 * test_cuda_churn.c - 8 host threads, each on its own CUDA stream, share one CUDA
 * context and churn through a set of shapes in different orders: every result must be
 * right, Find must run once per shape (single-flight across threads), and no thread
 * may ever use a plan finalized on another thread's handle (each thread's cuDNN state
 * is its own by construction; a violation would show up as a cuDNN error or a wrong
 * result here).  Exits 77 (skip) without a GPU.
 */
#include <cuda_runtime.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "gpu_util.h"

#define THREADS 8
#define SHAPES 6
#define ROUNDS 12

static convfind_context *ctx;
static convfind_problem *problems[SHAPES];
static gu_data data[SHAPES];
static int failures[THREADS];

static void shape(convfind_conv_desc *d, int s)
{
    static const int64_t dims[SHAPES][6] = {
        /* n, c, hw, m, k, stride */
        {2, 16, 14, 32, 3, 1}, {1, 32, 7, 64, 1, 1}, {4, 8, 16, 8, 3, 2},
        {2, 24, 9, 24, 5, 1},  {3, 16, 12, 48, 1, 2}, {1, 64, 6, 32, 3, 1},
    };
    convfind_conv_desc_init(d);
    d->layout = s % 2 ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
    d->x_rank = d->w_rank = 4;
    d->x_dims[0] = dims[s][0];
    d->x_dims[1] = dims[s][1];
    d->x_dims[2] = d->x_dims[3] = dims[s][2];
    d->w_dims[0] = dims[s][3];
    d->w_dims[1] = dims[s][1];
    d->w_dims[2] = d->w_dims[3] = dims[s][4];
    d->strides.count = 2;
    d->strides.v[0] = d->strides.v[1] = dims[s][5];
    d->pads.count = 4;
    for (int i = 0; i < 4; i++)
        d->pads.v[i] = dims[s][4] / 2;
    d->has_bias = 1;
    d->activation = CONVFIND_ACT_RELU;
}

static void *worker(void *arg)
{
    const int id = (int)(intptr_t)arg;
    cudaStream_t stream;
    if (cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking) != cudaSuccess) {
        failures[id]++;
        return NULL;
    }
    size_t max_y = 0;
    for (int s = 0; s < SHAPES; s++)
        max_y = data[s].ny > max_y ? data[s].ny : max_y;
    void *y;
    float *host = malloc(max_y * sizeof *host);
    if (!host || cudaMalloc(&y, max_y * sizeof(float)) != cudaSuccess) {
        failures[id]++;
        return NULL;
    }
    for (int r = 0; r < ROUNDS; r++) {
        const int s = (r * (id + 1) + id) % SHAPES;
        convfind_plan *plan;
        if (convfind_plan_create(ctx, problems[s], &plan) != CONVFIND_OK) {
            printf("thread %d: plan: %s\n", id, convfind_last_error());
            failures[id]++;
            continue;
        }
        convfind_tensors t = gu_tensors(&data[s]);
        t.y = y; /* each thread its own output */
        cudaMemsetAsync(y, 0xff, data[s].ny * sizeof(float), stream);
        convfind_status st = convfind_execute_on_stream(plan, &t, stream);
        cudaMemcpyAsync(host, y, data[s].ny * sizeof(float), cudaMemcpyDeviceToHost, stream);
        cudaStreamSynchronize(stream);
        double num = 0, den = 0;
        for (size_t i = 0; i < data[s].ny; i++) {
            double e = (double)host[i] - data[s].expect[i];
            num += e != e ? 1e30 : e * e;
            den += (double)data[s].expect[i] * data[s].expect[i];
        }
        if (st != CONVFIND_OK || num > 1e-8 * den) {
            printf("thread %d round %d shape %d (%s): status %s, error^2 %.3g\n", id, r, s,
                   convfind_plan_algorithm(plan), convfind_status_name(st), num / den);
            failures[id]++;
        }
        convfind_plan_destroy(plan);
    }
    cudaFree(y);
    cudaStreamDestroy(stream);
    free(host);
    return NULL;
}

int main(void)
{
    gu_require_gpu();
    ctx = gu_context(CONVFIND_FIND_HYBRID, NULL);
    for (int s = 0; s < SHAPES; s++) {
        convfind_conv_desc d;
        shape(&d, s);
        problems[s] = gu_problem(&d);
        gu_data_init(&data[s], &d, problems[s], (unsigned)s + 7);
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        if (pthread_create(&th[i], NULL, worker, (void *)(intptr_t)i) != 0) {
            printf("FAIL: pthread_create\n");
            return 1;
        }
    int total = 0;
    for (int i = 0; i < THREADS; i++) {
        pthread_join(th[i], NULL);
        total += failures[i];
    }
    convfind_context_stats st = {.struct_size = sizeof st};
    gu_check(convfind_context_stats_get(ctx, &st), "stats");
    printf("%d threads x %d rounds over %d shapes: %d failures; finds %llu, hits %llu, "
           "waits %llu, fallbacks %llu\n",
           THREADS, ROUNDS, SHAPES, total, (unsigned long long)st.finds,
           (unsigned long long)st.hits, (unsigned long long)st.waits,
           (unsigned long long)st.fallbacks);
    if (st.finds != SHAPES) {
        printf("FAIL: expected one Find per shape (%d), got %llu\n", SHAPES,
               (unsigned long long)st.finds);
        total++;
    }
    for (int s = 0; s < SHAPES; s++) {
        gu_data_free(&data[s]);
        convfind_problem_destroy(problems[s]);
    }
    convfind_context_destroy(ctx);
    return total ? 1 : 0;
}
