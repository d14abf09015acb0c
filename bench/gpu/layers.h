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

/* What a layer computes after its convolution, as the network does (inference with
 * batch norm folded into the convolution, hence a bias everywhere):
 *   ResNet: ReLU; the last 1x1 of a bottleneck (k = 4c, "conv3") adds the shortcut first
 *   (the residual Z), the downsampling 1x1 ("down") has no activation.  The CSV merges
 *   layers of one shape: res2's 64->256 row counts the three bottleneck ends and the
 *   downsampling layer, all run as bottleneck ends.
 *   MobileNetV2: ReLU6 (clip to 0..6), except the linear projections ("project"), which
 *   add the block's input where the block keeps its width (c = 6k: expansion 6).
 *   Anything else: ReLU. */
typedef struct bl_epilogue {
    int residual;
    convfind_activation act; /* NONE, RELU or CLIP (ReLU6) */
} bl_epilogue;

static inline bl_epilogue bl_epilogue_of(const bl_layer *l)
{
    bl_epilogue e = {0, CONVFIND_ACT_RELU};
    if (strstr(l->name, "project")) {
        e.act = CONVFIND_ACT_NONE;
        e.residual = l->c == 6 * l->k;
    } else if (strstr(l->name, "mnv2")) {
        e.act = CONVFIND_ACT_CLIP;
    } else if (strstr(l->name, "down")) {
        e.act = CONVFIND_ACT_NONE;
    } else if (strstr(l->name, "conv3") || (l->r == 1 && l->k == 4 * l->c)) {
        e.residual = 1;
    }
    return e;
}

/* bl_desc with the layer's epilogue (bl_epilogue_of): bias, residual, activation. */
static inline void bl_desc_fused(const bl_layer *l, int n, convfind_dtype dt,
                                 convfind_math_mode mm, convfind_layout layout,
                                 convfind_conv_desc *d)
{
    bl_desc(l, n, dt, mm, layout, d);
    const bl_epilogue e = bl_epilogue_of(l);
    d->has_bias = 1;
    d->has_residual = e.residual;
    d->activation = e.act;
    if (e.act == CONVFIND_ACT_CLIP) {
        d->alpha = 0.0f;
        d->beta = 6.0f;
    }
}

/* A precision's name on the command line: its dtype and math mode; -1 if unknown. */
static inline int bl_precision(const char *name, convfind_dtype *dt, convfind_math_mode *mm)
{
    static const struct {
        const char *name;
        convfind_dtype dt;
        convfind_math_mode mm;
    } table[] = {
        {"fp32", CONVFIND_DTYPE_F32, CONVFIND_MATH_STRICT},
        {"split", CONVFIND_DTYPE_F32, CONVFIND_MATH_ALLOW_SPLIT_TF32},
        {"tf32", CONVFIND_DTYPE_F32, CONVFIND_MATH_ALLOW_TF32},
        {"fp16", CONVFIND_DTYPE_F16, CONVFIND_MATH_STRICT},
        {"bf16", CONVFIND_DTYPE_BF16, CONVFIND_MATH_STRICT},
    };
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(name, table[i].name) == 0) {
            *dt = table[i].dt;
            *mm = table[i].mm;
            return 0;
        }
    return -1;
}

#endif /* CONVFIND_BENCH_GPU_LAYERS_H */
