/*
 * bench_problem.h - one convolution as the benchmark driver sends it to a worker process:
 * the "wire" line of bench/suite_format.py (Layer.wire), parsed once into plain numbers
 * that every contender (convfind, oneDNN 2.x and 3.x) turns into its own descriptor.
 */
#ifndef CONVFIND_BENCH_PROBLEM_H
#define CONVFIND_BENCH_PROBLEM_H

#include <stddef.h>
#include <stdint.h>

/* The activations of the format, in convfind_activation's order. */
typedef enum bench_act {
    BENCH_ACT_NONE, BENCH_ACT_RELU, BENCH_ACT_LEAKY_RELU, BENCH_ACT_CLIP, BENCH_ACT_SIGMOID,
    BENCH_ACT_TANH, BENCH_ACT_HARD_SIGMOID
} bench_act;

/* ONNX semantics; per-dim arrays hold `dims` values, outermost spatial dim first. */
typedef struct bench_problem {
    int transpose;            /* 0: Conv, 1: ConvTranspose */
    int dims;                 /* spatial rank, 1 to 3 */
    int64_t n, c, k, group;   /* k: output channels (ONNX M) */
    int64_t x[3], kern[3], stride[3], dil[3];
    int64_t pads[6];          /* all begins, then all ends */
    int64_t opad[3];          /* ConvTranspose output_padding */
    int bias;
    bench_act act;
    float alpha, beta;
    char algo[64];            /* convfind only: the algorithm to force ("" = Find's) */
} bench_problem;

/* Parses a wire line ("op=conv dims=2 n=1 ..."); 0 on success, else -1 with a message
 * naming the bad token in err. */
int bench_problem_parse(const char *text, bench_problem *p, char *err, size_t err_size);

/* Output spatial sizes (dims values). */
void bench_problem_out(const bench_problem *p, int64_t out[3]);

/* Element counts of X, W (ONNX shape) and Y. */
size_t bench_problem_x_elems(const bench_problem *p);
size_t bench_problem_w_elems(const bench_problem *p);
size_t bench_problem_y_elems(const bench_problem *p);

#endif /* CONVFIND_BENCH_PROBLEM_H */
