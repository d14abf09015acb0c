/*
 * onednn_conv.c - oneDNN (2.x C API) as the benchmark's CPU peer: one forward-inference
 * convolution primitive per layer, memory in the layouts oneDNN chooses (format_tag any,
 * its best case), filled with random values in those layouts so no reorder is timed.
 */
#include "onednn_conv.h"

#include <stdio.h>
#include <string.h>

#include <dnnl.h>

#include "bench_timing.h"

typedef struct dnnl_run {
    dnnl_primitive_t prim;
    dnnl_stream_t stream;
    dnnl_exec_arg_t args[3];
} dnnl_run;

static int run_once(void *arg)
{
    dnnl_run *r = arg;
    if (dnnl_primitive_execute(r->prim, r->stream, 3, r->args) != dnnl_success)
        return 1;
    return dnnl_stream_wait(r->stream) != dnnl_success;
}

/* Memory for `md`, filled with values in [-1, 1) (padding lanes included). */
static dnnl_memory_t random_memory(const dnnl_memory_desc_t *md, dnnl_engine_t eng,
                                   unsigned *seed)
{
    dnnl_memory_t mem = NULL;
    if (dnnl_memory_create(&mem, md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success)
        return NULL;
    void *h = NULL;
    dnnl_memory_get_data_handle(mem, &h);
    float *f = h;
    size_t count = dnnl_memory_desc_get_size(md) / sizeof(float);
    for (size_t i = 0; i < count; i++) {
        *seed = *seed * 1664525u + 1013904223u;
        f[i] = (float)(*seed >> 8) / 8388608.0f - 1.0f;
    }
    return mem;
}

double onednn_time_ms(const bench_layer *L, int winograd_allowed, int min_reps,
                      double min_seconds, char *impl, size_t impl_size)
{
    double ms = -1.0;
    if (impl_size)
        impl[0] = '\0';
    dnnl_engine_t eng = NULL;
    dnnl_stream_t stream = NULL;
    dnnl_primitive_desc_t pd = NULL;
    dnnl_primitive_t prim = NULL;
    dnnl_memory_t msrc = NULL, mwei = NULL, mdst = NULL;
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success)
        return -1.0;
    if (dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) != dnnl_success)
        goto done;

    int64_t oh = (L->h + 2 * L->pad_h - ((L->r - 1) * L->dil_h + 1)) / L->stride_h + 1;
    int64_t ow = (L->w + 2 * L->pad_w - ((L->s - 1) * L->dil_w + 1)) / L->stride_w + 1;
    dnnl_dims_t src = {L->n, L->c, L->h, L->w}, dst = {L->n, L->k, oh, ow};
    dnnl_dims_t wei = {L->k, L->c, L->r, L->s};
    int wnd = 4;
    if (L->group > 1) {
        wnd = 5;
        wei[0] = L->group;
        wei[1] = L->k / L->group;
        wei[2] = L->c / L->group;
        wei[3] = L->r;
        wei[4] = L->s;
    }
    dnnl_memory_desc_t smd, wmd, dmd;
    dnnl_memory_desc_init_by_tag(&smd, 4, src, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wmd, wnd, wei, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dmd, 4, dst, dnnl_f32, dnnl_format_tag_any);
    dnnl_dims_t strides = {L->stride_h, L->stride_w}, dil = {L->dil_h - 1, L->dil_w - 1};
    dnnl_dims_t pad = {L->pad_h, L->pad_w};
    dnnl_convolution_desc_t cd;
    dnnl_alg_kind_t alg = winograd_allowed ? dnnl_convolution_auto : dnnl_convolution_direct;
    if (dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &smd, &wmd,
                                                   NULL, &dmd, strides, dil, pad, pad) !=
        dnnl_success)
        goto done;
    if (dnnl_primitive_desc_create(&pd, &cd, NULL, eng, NULL) != dnnl_success)
        goto done;
    const char *name = NULL;
    if (dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &name) == dnnl_success &&
        name && impl_size)
        snprintf(impl, impl_size, "%s", name);
    unsigned seed = 12345u;
    msrc = random_memory(dnnl_primitive_desc_query_md(pd, dnnl_query_src_md, 0), eng, &seed);
    mwei = random_memory(dnnl_primitive_desc_query_md(pd, dnnl_query_weights_md, 0), eng, &seed);
    mdst = random_memory(dnnl_primitive_desc_query_md(pd, dnnl_query_dst_md, 0), eng, &seed);
    if (!msrc || !mwei || !mdst || dnnl_primitive_create(&prim, pd) != dnnl_success)
        goto done;
    dnnl_run run = {prim, stream,
                    {{DNNL_ARG_SRC, msrc}, {DNNL_ARG_WEIGHTS, mwei}, {DNNL_ARG_DST, mdst}}};
    ms = bench_median_ms(run_once, &run, min_reps, min_seconds);
done:
    if (prim)
        dnnl_primitive_destroy(prim);
    if (msrc)
        dnnl_memory_destroy(msrc);
    if (mwei)
        dnnl_memory_destroy(mwei);
    if (mdst)
        dnnl_memory_destroy(mdst);
    if (pd)
        dnnl_primitive_desc_destroy(pd);
    if (stream)
        dnnl_stream_destroy(stream);
    dnnl_engine_destroy(eng);
    return ms;
}
