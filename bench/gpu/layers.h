/*
 * layers.h - the layer table of the GPU benchmarks: one row of a network's
 * convolutions CSV (name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,
 * group; see data/resnet50_convs.csv) and its descriptor, shared by the GPU benchmarks.
 */
#ifndef CONVFIND_BENCH_GPU_LAYERS_H
#define CONVFIND_BENCH_GPU_LAYERS_H

#include <stdio.h>
#include <string.h>

#include "convfind.h"

#define BL_MAX_LAYERS 256

typedef struct bl_layer {
    char name[64];
    int count, n, c, h, w, k, r, s, pad_h, pad_w, stride_h, stride_w, dil_h, dil_w, group;
} bl_layer;

/* Reads up to BL_MAX_LAYERS rows after the header; returns the count, -1 on error. */
static inline int bl_read(const char *path, bl_layer *out)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return -1;
    char line[512];
    int n = 0;
    if (!fgets(line, sizeof line, f)) {
        fclose(f);
        return -1;
    }
    while (n < BL_MAX_LAYERS && fgets(line, sizeof line, f)) {
        bl_layer *l = &out[n];
        if (sscanf(line, "%63[^,],%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d,%d", l->name,
                   &l->count, &l->n, &l->c, &l->h, &l->w, &l->k, &l->r, &l->s, &l->pad_h,
                   &l->pad_w, &l->stride_h, &l->stride_w, &l->dil_h, &l->dil_w, &l->group) == 16)
            n++;
    }
    fclose(f);
    return n;
}

/* A benchmark's command line: the layers of the CSV in argv[1] into out.  Prints the
 * usage (`args` after the program's name) when there are fewer than min_argc arguments,
 * or why the file gave no layers, and returns -1 then; else the number of layers. */
static inline int bl_args(int argc, char **argv, int min_argc, const char *args,
                          bl_layer *out)
{
    if (argc < min_argc) {
        fprintf(stderr, "usage: %s %s\n", argv[0], args);
        return -1;
    }
    int n = bl_read(argv[1], out);
    if (n <= 0)
        fprintf(stderr, "cannot read layers from %s\n", argv[1]);
    return n > 0 ? n : -1;
}

/* The descriptor of layer l at batch n (pads symmetric, as the CSV gives them). */
static inline void bl_desc(const bl_layer *l, int n, convfind_dtype dt, convfind_math_mode mm,
                           convfind_layout layout, convfind_conv_desc *d)
{
    convfind_conv_desc_init(d);
    d->dtype = dt;
    d->math_mode = mm;
    d->layout = layout;
    d->x_rank = d->w_rank = 4;
    int64_t xd[4] = {n, l->c, l->h, l->w}, wd[4] = {l->k, l->c / l->group, l->r, l->s};
    memcpy(d->x_dims, xd, sizeof xd);
    memcpy(d->w_dims, wd, sizeof wd);
    d->group = l->group;
    d->strides.count = d->dilations.count = 2;
    d->strides.v[0] = l->stride_h;
    d->strides.v[1] = l->stride_w;
    d->dilations.v[0] = l->dil_h;
    d->dilations.v[1] = l->dil_w;
    d->pads.count = 4;
    d->pads.v[0] = d->pads.v[2] = l->pad_h;
    d->pads.v[1] = d->pads.v[3] = l->pad_w;
}

#endif /* CONVFIND_BENCH_GPU_LAYERS_H */
