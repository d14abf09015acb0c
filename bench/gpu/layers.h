/*
 * layers.h - the layer table of the GPU benchmarks: one row of a network's
 * convolutions CSV (name,count,n,c,h,w,k,r,s,pad_h,pad_w,stride_h,stride_w,dil_h,dil_w,
 * group; see data/resnet50_convs.csv), shared by bench_convfind.c and legacy_find.c.
 */
#ifndef CONVFIND_BENCH_GPU_LAYERS_H
#define CONVFIND_BENCH_GPU_LAYERS_H

#include <stdio.h>
#include <string.h>

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

#endif /* CONVFIND_BENCH_GPU_LAYERS_H */
