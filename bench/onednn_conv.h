/*
 * onednn_conv.h - times one forward convolution layer with oneDNN (the CPU peer).
 */
#ifndef CONVFIND_BENCH_ONEDNN_CONV_H
#define CONVFIND_BENCH_ONEDNN_CONV_H

#include <stddef.h>
#include <stdint.h>

/* One 2-D layer as in ../shared/bench CSVs (symmetric pads). */
typedef struct bench_layer {
    char name[96];
    int count;
    int64_t n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, group;
} bench_layer;

/* Median milliseconds of one execution of `layer` with oneDNN fp32, in the layouts
 * oneDNN picks itself (format_tag any: its best case; reorders are not timed), with
 * the convolution algorithm `winograd_allowed` ? auto : direct.  The implementation
 * name oneDNN chose is written to impl.  Returns a negative value when oneDNN cannot
 * create the primitive.  Threads: oneDNN's OpenMP runtime (OMP_NUM_THREADS). */
double onednn_time_ms(const bench_layer *layer, int winograd_allowed, int min_reps,
                      double min_seconds, char *impl, size_t impl_size);

#endif /* CONVFIND_BENCH_ONEDNN_CONV_H */
