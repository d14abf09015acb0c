/*
 * contender_onednn.c - oneDNN as a benchmark peer, built twice: against oneDNN 2.x
 * (Debian libdnnl-dev) and against oneDNN 3.x (PyPI onednn-cpu-gomp), as two executables.
 * Only the primitive-descriptor calls differ between the two C APIs (make_pd below).
 *
 * oneDNN at its fastest: fp32 forward inference, every tensor in the layout oneDNN picks
 * (format_tag any: its blocked layouts), filled with values in those layouts so that no
 * reorder is timed; the convolution algorithm is direct or auto (which may choose
 * Winograd), deconvolution direct or winograd, whichever is faster for the layer
 * (worker_main.c times both).  Bias and activation are the primitive's own (bias
 * argument, eltwise post-op).  Threads: its OpenMP runtime (OMP_NUM_THREADS, set by the
 * driver with the wait policy and spin count, docs/benchmarks.md).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dnnl.h>

#include "contender.h"
#include "bench_tensor.h"

#if DNNL_VERSION_MAJOR >= 3
typedef const_dnnl_memory_desc_t md_ref;
#else
typedef const dnnl_memory_desc_t *md_ref;
#endif

static dnnl_engine_t eng;
static dnnl_stream_t stream;

typedef struct dn_state {
    dnnl_primitive_t prim;
    dnnl_memory_t mem[4]; /* src, weights, dst, bias */
    dnnl_exec_arg_t args[4];
    int nargs;
} dn_state;

const char *contender_name(void)
{
    static char name[32];
    const dnnl_version_t *v = dnnl_version();
    snprintf(name, sizeof name, "onednn-%d.%d", v->major, v->minor);
    return name;
}

int contender_init(const contender_options *opt, char *settings, size_t size)
{
    if (dnnl_engine_create(&eng, dnnl_cpu, 0) != dnnl_success ||
        dnnl_stream_create(&stream, eng, dnnl_stream_default_flags) != dnnl_success) {
        snprintf(settings, size, "no CPU engine");
        return -1;
    }
    const dnnl_version_t *v = dnnl_version();
    const char *omp = getenv("OMP_NUM_THREADS"), *wait = getenv("OMP_WAIT_POLICY"),
               *spin = getenv("GOMP_SPINCOUNT"), *isa = getenv("ONEDNN_MAX_CPU_ISA");
    if (!omp || atoi(omp) != opt->threads) {
        snprintf(settings, size, "OMP_NUM_THREADS=%s, not the %d threads asked for",
                 omp ? omp : "(unset)", opt->threads);
        return -1;
    }
    snprintf(settings, size,
             "oneDNN %d.%d.%d (%s), fp32 forward_inference, format_tag any (its own layouts; "
             "reorders not timed), faster of direct and auto/winograd per layer, bias and "
             "activation fused, %s OpenMP threads, OMP_WAIT_POLICY=%s GOMP_SPINCOUNT=%s, "
             "max ISA %s",
             v->major, v->minor, v->patch, v->hash, omp, wait ? wait : "(default)",
             spin ? spin : "(default)", isa ? isa : "(all)");
    return 0;
}

int contender_variants(void)
{
    return 2;
}

/* The eltwise post-op of the activation; 0 when oneDNN has none. */
static int eltwise_of(const bench_problem *p, dnnl_alg_kind_t *alg, float *alpha, float *beta)
{
    *alpha = 0.0f;
    *beta = 0.0f;
    switch (p->act) {
    case BENCH_ACT_RELU: *alg = dnnl_eltwise_relu; return 1;
    case BENCH_ACT_LEAKY_RELU: *alg = dnnl_eltwise_relu; *alpha = p->alpha; return 1;
    case BENCH_ACT_CLIP: *alg = dnnl_eltwise_clip; *alpha = p->alpha; *beta = p->beta; return 1;
    case BENCH_ACT_SIGMOID: *alg = dnnl_eltwise_logistic; return 1;
    case BENCH_ACT_TANH: *alg = dnnl_eltwise_tanh; return 1;
#if DNNL_VERSION_MAJOR >= 3
    case BENCH_ACT_HARD_SIGMOID:
        *alg = dnnl_eltwise_hardsigmoid;
        *alpha = p->alpha;
        *beta = p->beta;
        return 1;
#endif
    default: return 0;
    }
}

typedef struct geometry {
    int nd;
    dnnl_dims_t src, wei, dst, bias, strides, dil, pad_l, pad_r;
    int wnd;
} geometry;

static void geometry_of(const bench_problem *p, geometry *g)
{
    int64_t out[3];
    bench_problem_out(p, out);
    g->nd = p->dims + 2;
    g->src[0] = g->dst[0] = p->n;
    g->src[1] = p->c;
    g->dst[1] = p->k;
    g->bias[0] = p->k;
    /* oneDNN's weights are (groups,) output channels, input channels, kernel, for both
     * convolution and deconvolution. */
    int off = p->group > 1;
    g->wnd = g->nd + off;
    g->wei[0] = p->group;
    g->wei[off] = p->k / p->group;
    g->wei[off + 1] = p->c / p->group;
    for (int i = 0; i < p->dims; i++) {
        g->src[2 + i] = p->x[i];
        g->dst[2 + i] = out[i];
        g->wei[off + 2 + i] = p->kern[i];
        g->strides[i] = p->stride[i];
        g->dil[i] = p->dil[i] - 1;
        g->pad_l[i] = p->pads[i];
        /* ONNX's output_padding adds rows at the end, as a smaller end pad does. */
        g->pad_r[i] = p->pads[p->dims + i] - (p->transpose ? p->opad[i] : 0);
    }
}

/* The primitive descriptor of p with algorithm variant v; NULL when oneDNN has none. */
static dnnl_primitive_desc_t make_pd(const bench_problem *p, int v, const geometry *g,
                                     const_dnnl_primitive_attr_t attr)
{
    dnnl_alg_kind_t alg = p->transpose ? (v ? dnnl_deconvolution_winograd
                                            : dnnl_deconvolution_direct)
                                       : (v ? dnnl_convolution_auto : dnnl_convolution_direct);
    dnnl_primitive_desc_t pd = NULL;
#if DNNL_VERSION_MAJOR >= 3
    dnnl_memory_desc_t smd = NULL, wmd = NULL, dmd = NULL, bmd = NULL;
    dnnl_memory_desc_create_with_tag(&smd, g->nd, g->src, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_create_with_tag(&wmd, g->wnd, g->wei, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_create_with_tag(&dmd, g->nd, g->dst, dnnl_f32, dnnl_format_tag_any);
    if (p->bias)
        dnnl_memory_desc_create_with_tag(&bmd, 1, g->bias, dnnl_f32, dnnl_format_tag_any);
    dnnl_status_t st =
        p->transpose
            ? dnnl_deconvolution_forward_primitive_desc_create(
                  &pd, eng, dnnl_forward_inference, alg, smd, wmd, bmd, dmd, g->strides, g->dil,
                  g->pad_l, g->pad_r, attr)
            : dnnl_convolution_forward_primitive_desc_create(
                  &pd, eng, dnnl_forward_inference, alg, smd, wmd, bmd, dmd, g->strides, g->dil,
                  g->pad_l, g->pad_r, attr);
    dnnl_memory_desc_destroy(smd);
    dnnl_memory_desc_destroy(wmd);
    dnnl_memory_desc_destroy(dmd);
    dnnl_memory_desc_destroy(bmd);
#else
    dnnl_memory_desc_t smd, wmd, dmd, bmd;
    dnnl_memory_desc_init_by_tag(&smd, g->nd, g->src, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&wmd, g->wnd, g->wei, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&dmd, g->nd, g->dst, dnnl_f32, dnnl_format_tag_any);
    dnnl_memory_desc_init_by_tag(&bmd, 1, g->bias, dnnl_f32, dnnl_format_tag_any);
    const dnnl_memory_desc_t *bias = p->bias ? &bmd : NULL;
    dnnl_status_t st;
    if (p->transpose) {
        dnnl_deconvolution_desc_t dd;
        st = dnnl_dilated_deconvolution_forward_desc_init(&dd, dnnl_forward_inference, alg, &smd,
                                                          &wmd, bias, &dmd, g->strides, g->dil,
                                                          g->pad_l, g->pad_r);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&pd, &dd, attr, eng, NULL);
    } else {
        dnnl_convolution_desc_t cd;
        st = dnnl_dilated_convolution_forward_desc_init(&cd, dnnl_forward_inference, alg, &smd,
                                                        &wmd, bias, &dmd, g->strides, g->dil,
                                                        g->pad_l, g->pad_r);
        if (st == dnnl_success)
            st = dnnl_primitive_desc_create(&pd, &cd, attr, eng, NULL);
    }
#endif
    return st == dnnl_success ? pd : NULL;
}

/* The attribute carrying the activation as a post-op; -1 when oneDNN has no such one. */
static int make_attr(const bench_problem *p, dnnl_primitive_attr_t *attr)
{
    *attr = NULL;
    if (p->act == BENCH_ACT_NONE)
        return 0;
    dnnl_alg_kind_t alg;
    float alpha, beta;
    if (!eltwise_of(p, &alg, &alpha, &beta))
        return -1;
    dnnl_post_ops_t po = NULL;
    dnnl_primitive_attr_create(attr);
    dnnl_post_ops_create(&po);
#if DNNL_VERSION_MAJOR >= 3
    dnnl_post_ops_append_eltwise(po, alg, alpha, beta);
#else
    dnnl_post_ops_append_eltwise(po, 1.0f, alg, alpha, beta);
#endif
    dnnl_primitive_attr_set_post_ops(*attr, po);
    dnnl_post_ops_destroy(po);
    return 0;
}

void contender_release(void *state)
{
    dn_state *s = state;
    if (!s)
        return;
    if (s->prim)
        dnnl_primitive_destroy(s->prim);
    for (int i = 0; i < 4; i++)
        if (s->mem[i])
            dnnl_memory_destroy(s->mem[i]);
    free(s);
}

/* Memory for md, filled with values in [-1, 1) (padding lanes included). */
static dnnl_memory_t random_memory(md_ref md, unsigned *seed)
{
    dnnl_memory_t mem = NULL;
    void *h = NULL;
    if (!md || dnnl_memory_create(&mem, md, eng, DNNL_MEMORY_ALLOCATE) != dnnl_success)
        return NULL;
    dnnl_memory_get_data_handle(mem, &h);
    bench_tensor_fill(h, dnnl_memory_desc_get_size(md) / sizeof(float), seed);
    return mem;
}

void *contender_prepare(const bench_problem *p, int variant, char *info, size_t size)
{
    const char *vname = p->transpose ? (variant ? "winograd" : "direct")
                                     : (variant ? "auto" : "direct");
    if (p->algo[0]) {
        snprintf(info, size, "a forced convfind algorithm is not a oneDNN setting");
        return NULL;
    }
    dnnl_primitive_attr_t attr;
    if (make_attr(p, &attr) != 0) {
        snprintf(info, size, "no eltwise post-op for this activation in this oneDNN");
        return NULL;
    }
    geometry g;
    geometry_of(p, &g);
    dnnl_primitive_desc_t pd = make_pd(p, variant, &g, attr);
    if (attr)
        dnnl_primitive_attr_destroy(attr);
    if (!pd) {
        snprintf(info, size, "%s: no implementation", vname);
        return NULL;
    }
    dn_state *s = calloc(1, sizeof *s);
    const char *impl = "?";
    dnnl_primitive_desc_query(pd, dnnl_query_impl_info_str, 0, &impl);
    snprintf(info, size, "%s:%s", vname, impl);
    static const int arg_of[4] = {DNNL_ARG_SRC, DNNL_ARG_WEIGHTS, DNNL_ARG_DST, DNNL_ARG_BIAS};
    const dnnl_query_t query[4] = {dnnl_query_src_md, dnnl_query_weights_md, dnnl_query_dst_md,
                                   dnnl_query_weights_md};
    unsigned seed = 12345u;
    int ok = s != NULL;
    for (int i = 0; ok && i < 3 + p->bias; i++) {
        s->mem[i] = random_memory(dnnl_primitive_desc_query_md(pd, query[i], i == 3), &seed);
        s->args[i] = (dnnl_exec_arg_t){arg_of[i], s->mem[i]};
        ok = s->mem[i] != NULL;
    }
    if (ok) {
        s->nargs = 3 + p->bias;
        ok = dnnl_primitive_create(&s->prim, pd) == dnnl_success;
    }
    dnnl_primitive_desc_destroy(pd);
    if (!ok) {
        snprintf(info, size, "%s: cannot create memory or primitive", vname);
        contender_release(s);
        return NULL;
    }
    return s;
}

int contender_run(void *state)
{
    dn_state *s = state;
    if (dnnl_primitive_execute(s->prim, stream, s->nargs, s->args) != dnnl_success)
        return 1;
    return dnnl_stream_wait(stream) != dnnl_success;
}

int contender_command(const char *verb, const char *args, FILE *out)
{
    (void)verb;
    (void)args;
    (void)out;
    return 0;
}
