/*
 * graph.c - cuDNN backend API: graphs, heuristics, plans, execution (see graph.h).
 *
 * The backend API is descriptor objects set attribute by attribute and then finalized;
 * every helper here returns CONVFIND_ERR_BACKEND with cuDNN's own last message, which
 * names what it refused, and frees what it created.
 */
#include "cuda/graph.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "decision/decision.h"
#include "util/error.h"

#define UID_X 1
#define UID_W 2
#define UID_Y 3
#define UID_B 4
#define UID_Z 5
#define UID_VIRTUAL 10 /* the fused epilogue's intermediates: 10, 11, 12 */
#define MAX_ND (CF_SP + 2)

static convfind_status fail_cudnn(cudnnStatus_t s, const char *what)
{
    char detail[256];
    cudnnGetLastErrorString(detail, sizeof detail);
    return cf_fail(CONVFIND_ERR_BACKEND, "cuDNN %s: %s (%s)", what, cudnnGetErrorString(s),
                   detail);
}

#define CHECK(call, what)                                                                      \
    do {                                                                                       \
        cudnnStatus_t s_ = (call);                                                             \
        if (s_ != CUDNN_STATUS_SUCCESS) {                                                      \
            st = fail_cudnn(s_, what);                                                         \
            goto done;                                                                         \
        }                                                                                      \
    } while (0)

static void destroy(cudnnBackendDescriptor_t *d)
{
    if (*d)
        cudnnBackendDestroyDescriptor(*d);
    *d = NULL;
}

/* ------------------------------------------------------------------------- */
/* Names                                                                      */
/* ------------------------------------------------------------------------- */

/* ConvTranspose goes to cuDNN natively only with symmetric pads and no output padding.
 * cuDNN can express more (backward data whose forward view leaves a remainder), but on
 * the H200 an engine its heuristics list (50, f16 NHWC, pads 1,1/0,2, output padding
 * 0,1) computed wrong values there; the padded form's engine problem has no pads and no
 * remainder, the case every engine is exercised on. */
bool cf_cudnn_expressible(const cf_problem *p)
{
    for (int d = 0; d < p->nsp; d++) {
        if (p->pad_begin[d] < 0 || p->pad_end[d] < 0)
            return false;
        if (p->op == CONVFIND_OP_CONV_TRANSPOSE &&
            (p->out_pad[d] != 0 || p->pad_begin[d] != p->pad_end[d]))
            return false;
    }
    return true;
}

bool cf_cudnn_name_is_split(const char *name)
{
    cf_cudnn_config c;
    bool split = cf_cudnn_config_parse(name, &c) == CONVFIND_OK && c.split;
    cf_clear_error();
    return split;
}

bool cf_cudnn_splittable(const cf_problem *p)
{
    return p->op == CONVFIND_OP_CONV && p->dtype == CONVFIND_DTYPE_F32 &&
           p->math_mode == CONVFIND_MATH_ALLOW_SPLIT_TF32;
}

/* The split form's engine problem: three times the input channels of each group, TF32
 * tensor cores allowed. */
static void split_problem(cf_problem *q)
{
    q->c *= 3;
    q->math_mode = CONVFIND_MATH_ALLOW_TF32;
    q->x_elems *= 3;
    q->w_elems *= 3;
}

void cf_cudnn_engine_problem(const cf_problem *p, const cf_cudnn_config *c, cf_problem *q)
{
    *q = *p;
    if (c->split)
        split_problem(q);
    if (!c->padded)
        return;
    q->in_sp = q->out_sp = 1;
    for (int d = 0; d < CF_SP; d++) {
        if (d < p->nsp) {
            if (p->op == CONVFIND_OP_CONV_TRANSPOSE)
                q->out[d] = (p->in[d] - 1) * p->stride[d] + p->dil[d] * (p->k[d] - 1) + 1;
            else
                q->in[d] = p->in[d] + p->pad_begin[d] + p->pad_end[d];
        }
        q->pad_begin[d] = q->pad_end[d] = q->out_pad[d] = 0;
        q->in_sp *= q->in[d];
        q->out_sp *= q->out[d];
    }
    q->x_elems = (size_t)(q->n * q->c * q->in_sp);
    q->y_elems = (size_t)(q->n * q->m * q->out_sp);
}

static bool symmetric_pads(const cf_problem *p)
{
    for (int d = 0; d < p->nsp; d++)
        if (p->pad_begin[d] != p->pad_end[d])
            return false;
    return true;
}

bool cf_cudnn_config_name(const cf_cudnn_config *c, char *buf, size_t size)
{
    int n = snprintf(buf, size, "%s%s%s%s%s:e%" PRId64, CF_CUDNN_PREFIX,
                     c->layout == CONVFIND_LAYOUT_NHWC ? "nhwc" : "nchw",
                     c->padded ? "+pad" : "", c->split ? "+x3" : "", c->fused ? "+ep" : "",
                     c->engine);
    for (int i = 0; i < c->n_knobs && n >= 0 && (size_t)n < size; i++)
        n += snprintf(buf + n, size - (size_t)n, "%s%d=%" PRId64, i ? "," : ":k", c->knob_type[i],
                      c->knob_value[i]);
    return n >= 0 && (size_t)n < size;
}

static bool parse_i64(const char **s, int64_t *v)
{
    char *end;
    if (!(**s >= '0' && **s <= '9') && **s != '-')
        return false;
    long long x = strtoll(*s, &end, 10);
    *s = end;
    *v = (int64_t)x;
    return true;
}

convfind_status cf_cudnn_config_parse(const char *name, cf_cudnn_config *c)
{
    memset(c, 0, sizeof *c);
    const size_t plen = strlen(CF_CUDNN_PREFIX);
    const char *s = name;
    bool ok = strncmp(s, CF_CUDNN_PREFIX, plen) == 0;
    if (ok) {
        s += plen;
        if (strncmp(s, "nchw", 4) == 0 || strncmp(s, "nhwc", 4) == 0) {
            c->layout = s[1] == 'h' ? CONVFIND_LAYOUT_NHWC : CONVFIND_LAYOUT_NCHW;
            s += 4;
            c->padded = strncmp(s, "+pad", 4) == 0;
            s += c->padded ? 4 : 0;
            c->split = strncmp(s, "+x3", 3) == 0;
            s += c->split ? 3 : 0;
            c->fused = strncmp(s, "+ep", 3) == 0;
            s += c->fused ? 3 : 0;
            ok = strncmp(s, ":e", 2) == 0;
            s += ok ? 2 : 0;
            ok = ok && parse_i64(&s, &c->engine) && c->engine >= 0;
        } else {
            ok = false;
        }
    }
    if (ok && strncmp(s, ":k", 2) == 0) {
        s += 2;
        do {
            int64_t t, v;
            if (c->n_knobs == CF_CUDNN_MAX_KNOBS || !parse_i64(&s, &t) || t < 0 || t > 1000 ||
                *s++ != '=' || !parse_i64(&s, &v)) {
                ok = false;
                break;
            }
            c->knob_type[c->n_knobs] = (int)t;
            c->knob_value[c->n_knobs++] = v;
        } while (*s == ',' && s++);
    }
    char again[128];
    if (ok && (*s != '\0' || !cf_cudnn_config_name(c, again, sizeof again) ||
               strcmp(again, name) != 0))
        ok = false; /* only canonical spellings: one configuration, one name */
    return ok ? CONVFIND_OK
              : cf_fail(CONVFIND_ERR_NOT_FOUND, "\"%s\" is not a cuDNN configuration name", name);
}

/* ------------------------------------------------------------------------- */
/* Graph                                                                      */
/* ------------------------------------------------------------------------- */

static cudnnDataType_t data_type(convfind_dtype d)
{
    return d == CONVFIND_DTYPE_F16    ? CUDNN_DATA_HALF
           : d == CONVFIND_DTYPE_BF16 ? CUDNN_DATA_BFLOAT16
                                      : CUDNN_DATA_FLOAT;
}

/* cuDNN's spatial view of p: at least two axes, a 1-D problem gets a leading 1. */
typedef struct spatial {
    int nsp;
    int64_t in[CF_SP], out[CF_SP], k[CF_SP], stride[CF_SP], dil[CF_SP], pre[CF_SP], post[CF_SP];
} spatial;

static void spatial_of(const cf_problem *p, spatial *s)
{
    const int lead = p->nsp == 1 ? 1 : 0;
    s->nsp = p->nsp + lead;
    for (int d = 0; d < s->nsp; d++) {
        int src = d - lead;
        bool dummy = src < 0;
        s->in[d] = dummy ? 1 : p->in[src];
        s->out[d] = dummy ? 1 : p->out[src];
        s->k[d] = dummy ? 1 : p->k[src];
        s->stride[d] = dummy ? 1 : p->stride[src];
        s->dil[d] = dummy ? 1 : p->dil[src];
        s->pre[d] = dummy ? 0 : p->pad_begin[src];
        s->post[d] = dummy ? 0 : p->pad_end[src];
    }
}

/* Dims (N, C, spatial...) and strides of a packed tensor in `layout`. */
static int tensor_shape(int64_t n, int64_t c, int nsp, const int64_t *sp, convfind_layout layout,
                        int64_t *dims, int64_t *strides)
{
    const int nd = nsp + 2;
    dims[0] = n;
    dims[1] = c;
    for (int d = 0; d < nsp; d++)
        dims[2 + d] = sp[d];
    if (layout == CONVFIND_LAYOUT_NHWC) {
        int64_t acc = c;
        strides[1] = 1;
        for (int d = nd - 1; d >= 2; d--) {
            strides[d] = acc;
            acc *= dims[d];
        }
        strides[0] = acc;
    } else {
        int64_t acc = 1;
        for (int d = nd - 1; d >= 0; d--) {
            strides[d] = acc;
            acc *= dims[d];
        }
    }
    return nd;
}

static convfind_status tensor(cudnnDataType_t dt, int nd, const int64_t *dims,
                              const int64_t *strides, int64_t uid, bool is_virtual,
                              cudnnBackendDescriptor_t *out)
{
    convfind_status st = CONVFIND_OK;
    const int64_t align = 16;
    cudnnBackendDescriptor_t t = NULL;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_TENSOR_DESCRIPTOR, &t), "tensor");
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DATA_TYPE, CUDNN_TYPE_DATA_TYPE, 1, &dt),
          "tensor data type");
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_DIMENSIONS, CUDNN_TYPE_INT64, nd, dims),
          "tensor dims");
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_STRIDES, CUDNN_TYPE_INT64, nd, strides),
          "tensor strides");
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_UNIQUE_ID, CUDNN_TYPE_INT64, 1, &uid),
          "tensor uid");
    CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_BYTE_ALIGNMENT, CUDNN_TYPE_INT64, 1,
                                   &align),
          "tensor alignment");
    if (is_virtual)
        CHECK(cudnnBackendSetAttribute(t, CUDNN_ATTR_TENSOR_IS_VIRTUAL, CUDNN_TYPE_BOOLEAN, 1,
                                       &is_virtual), "tensor virtual");
    CHECK(cudnnBackendFinalize(t), "tensor finalize");
done:
    if (st != CONVFIND_OK)
        destroy(&t);
    *out = t;
    return st;
}

static convfind_status make_tensor(cudnnDataType_t dt, int nd, const int64_t *dims,
                                   const int64_t *strides, int64_t uid,
                                   cudnnBackendDescriptor_t *out)
{
    return tensor(dt, nd, dims, strides, uid, false, out);
}

/* The finalized operation graph of p in `layout`: one convolution node and, for a fused
 * configuration, the epilogue's pointwise nodes after it (graph.h). */
#define EP_MAX 3
typedef struct graph {
    cudnnBackendDescriptor_t x, w, y, conv, op, graph;
    cudnnBackendDescriptor_t conv_y, b, z, mid[EP_MAX], pw[EP_MAX], pw_op[EP_MAX];
    int n_ep; /* epilogue nodes */
} graph;

static void graph_free(graph *g)
{
    destroy(&g->graph);
    for (int i = 0; i < EP_MAX; i++) {
        destroy(&g->pw_op[i]);
        destroy(&g->pw[i]);
        destroy(&g->mid[i]);
    }
    destroy(&g->z);
    destroy(&g->b);
    destroy(&g->conv_y);
    destroy(&g->op);
    destroy(&g->conv);
    destroy(&g->y);
    destroy(&g->w);
    destroy(&g->x);
}

bool cf_cudnn_fusable(const cf_problem *p)
{
    const bool act_ok = p->act == CONVFIND_ACT_NONE || p->act == CONVFIND_ACT_RELU ||
                        p->act == CONVFIND_ACT_LEAKY_RELU || p->act == CONVFIND_ACT_CLIP ||
                        p->act == CONVFIND_ACT_SIGMOID || p->act == CONVFIND_ACT_TANH;
    return p->op == CONVFIND_OP_CONV && act_ok &&
           (p->has_bias || p->has_residual || p->act != CONVFIND_ACT_NONE) &&
           cf_cudnn_expressible(p);
}

/* One pointwise node y = mode(x[, b]) in f32, for a fused epilogue; `relu` holds the
 * lower clip, upper clip and lower slope of a RELU_FWD node. */
static convfind_status pointwise(cudnnPointwiseMode_t mode, const double *relu,
                                 cudnnBackendDescriptor_t x, cudnnBackendDescriptor_t b,
                                 cudnnBackendDescriptor_t y, cudnnBackendDescriptor_t *pw,
                                 cudnnBackendDescriptor_t *op)
{
    convfind_status st = CONVFIND_OK;
    const cudnnDataType_t prec = CUDNN_DATA_FLOAT;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_POINTWISE_DESCRIPTOR, pw), "pointwise");
    CHECK(cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MODE, CUDNN_TYPE_POINTWISE_MODE, 1,
                                   &mode), "pointwise mode");
    CHECK(cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_MATH_PREC, CUDNN_TYPE_DATA_TYPE, 1,
                                   &prec), "pointwise precision");
    if (relu) {
        CHECK(cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP,
                                       CUDNN_TYPE_DOUBLE, 1, &relu[0]), "relu lower clip");
        CHECK(cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_RELU_UPPER_CLIP,
                                       CUDNN_TYPE_DOUBLE, 1, &relu[1]), "relu upper clip");
        CHECK(cudnnBackendSetAttribute(*pw, CUDNN_ATTR_POINTWISE_RELU_LOWER_CLIP_SLOPE,
                                       CUDNN_TYPE_DOUBLE, 1, &relu[2]), "relu slope");
    }
    CHECK(cudnnBackendFinalize(*pw), "pointwise finalize");
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_POINTWISE_DESCRIPTOR, op),
          "pointwise op");
    CHECK(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_PW_DESCRIPTOR,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, pw), "pointwise op mode");
    CHECK(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_XDESC,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &x), "pointwise op x");
    if (b)
        CHECK(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_BDESC,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &b), "pointwise op b");
    CHECK(cudnnBackendSetAttribute(*op, CUDNN_ATTR_OPERATION_POINTWISE_YDESC,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &y), "pointwise op y");
    CHECK(cudnnBackendFinalize(*op), "pointwise op finalize");
done:
    return st;
}

/* The epilogue of p as pointwise nodes after the convolution, whose output `conv_y` is
 * then virtual: + B (one value per channel), + Z, the activation; the last node writes
 * the real Y (uid UID_Y), the others virtual f32 tensors.  Fills g->b, z, mid, pw,
 * pw_op and returns the number of nodes in *count. */
static convfind_status epilogue_nodes(const cf_problem *p, convfind_layout layout, int nd,
                                      const int64_t *y_dims, const int64_t *y_strides,
                                      cudnnBackendDescriptor_t conv_y, graph *g, int *count)
{
    const cudnnDataType_t dt = data_type(p->dtype);
    convfind_status st = CONVFIND_OK;
    int64_t b_dims[MAX_ND], b_strides[MAX_ND], ones[CF_SP + 1];
    for (int d = 0; d < nd - 2; d++)
        ones[d] = 1;
    tensor_shape(1, p->m, nd - 2, ones, layout, b_dims, b_strides);
    cudnnPointwiseMode_t modes[EP_MAX];
    cudnnBackendDescriptor_t operands[EP_MAX];
    double relu[3] = {0.0, 3.4e38, 0.0};
    int n = 0;
    if (p->has_bias) {
        if ((st = make_tensor(dt, nd, b_dims, b_strides, UID_B, &g->b)) != CONVFIND_OK)
            return st;
        modes[n] = CUDNN_POINTWISE_ADD;
        operands[n++] = g->b;
    }
    if (p->has_residual) {
        if ((st = make_tensor(dt, nd, y_dims, y_strides, UID_Z, &g->z)) != CONVFIND_OK)
            return st;
        modes[n] = CUDNN_POINTWISE_ADD;
        operands[n++] = g->z;
    }
    if (p->act != CONVFIND_ACT_NONE) {
        modes[n] = p->act == CONVFIND_ACT_SIGMOID ? CUDNN_POINTWISE_SIGMOID_FWD
                   : p->act == CONVFIND_ACT_TANH  ? CUDNN_POINTWISE_TANH_FWD
                                                  : CUDNN_POINTWISE_RELU_FWD;
        if (p->act == CONVFIND_ACT_LEAKY_RELU)
            relu[2] = p->alpha;
        if (p->act == CONVFIND_ACT_CLIP) {
            relu[0] = p->alpha;
            relu[1] = p->beta;
        }
        operands[n++] = NULL;
    }
    cudnnBackendDescriptor_t in = conv_y;
    for (int i = 0; i < n; i++) {
        const bool last = i == n - 1;
        if (last)
            g->mid[i] = NULL;
        else if ((st = tensor(CUDNN_DATA_FLOAT, nd, y_dims, y_strides, UID_VIRTUAL + 1 + i, true,
                              &g->mid[i])) != CONVFIND_OK)
            return st;
        if ((st = pointwise(modes[i], modes[i] == CUDNN_POINTWISE_RELU_FWD ? relu : NULL, in,
                            operands[i], last ? g->y : g->mid[i], &g->pw[i], &g->pw_op[i])) !=
            CONVFIND_OK)
            return st;
        in = g->mid[i];
    }
    *count = n;
    return CONVFIND_OK;
}

static convfind_status graph_build(cudnnHandle_t handle, const cf_problem *p,
                                   convfind_layout layout, bool fused, graph *g)
{
    memset(g, 0, sizeof *g);
    spatial s;
    spatial_of(p, &s);
    const bool bwd = p->op == CONVFIND_OP_CONV_TRANSPOSE;
    const cudnnDataType_t dt = data_type(p->dtype), comp = CUDNN_DATA_FLOAT;
    /* The forward view: "input" of channels ci over `in`, "output" of co over `out`. */
    const int64_t ci = bwd ? p->m : p->c, co = bwd ? p->c : p->m;
    const int64_t *in_sp = bwd ? s.out : s.in, *out_sp = bwd ? s.in : s.out;
    int64_t dims[MAX_ND], strides[MAX_ND];
    convfind_status st;
    int nd = tensor_shape(p->n, ci, s.nsp, in_sp, layout, dims, strides);
    if ((st = make_tensor(dt, nd, dims, strides, bwd ? UID_Y : UID_X, &g->x)) != CONVFIND_OK)
        goto done;
    nd = tensor_shape(co, ci / p->group, s.nsp, s.k, layout, dims, strides);
    if ((st = make_tensor(dt, nd, dims, strides, UID_W, &g->w)) != CONVFIND_OK)
        goto done;
    nd = tensor_shape(p->n, co, s.nsp, out_sp, layout, dims, strides);
    if ((st = make_tensor(dt, nd, dims, strides, bwd ? UID_X : UID_Y, &g->y)) != CONVFIND_OK)
        goto done;
    /* Fused: the convolution writes a virtual f32 tensor, the epilogue's last node Y. */
    cudnnBackendDescriptor_t conv_y = g->y;
    if (fused) {
        if ((st = tensor(CUDNN_DATA_FLOAT, nd, dims, strides, UID_VIRTUAL, true, &g->conv_y)) !=
                CONVFIND_OK ||
            (st = epilogue_nodes(p, layout, nd, dims, strides, g->conv_y, g, &g->n_ep)) !=
                CONVFIND_OK)
            goto done;
        conv_y = g->conv_y;
    }

    const int64_t nsp = s.nsp;
    const cudnnConvolutionMode_t mode = CUDNN_CROSS_CORRELATION;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_CONVOLUTION_DESCRIPTOR, &g->conv), "conv");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_COMP_TYPE, CUDNN_TYPE_DATA_TYPE,
                                   1, &comp), "conv comp type");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_CONV_MODE,
                                   CUDNN_TYPE_CONVOLUTION_MODE, 1, &mode), "conv mode");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_SPATIAL_DIMS, CUDNN_TYPE_INT64,
                                   1, &nsp), "conv spatial dims");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_PRE_PADDINGS, CUDNN_TYPE_INT64,
                                   nsp, s.pre), "conv pre-paddings");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_POST_PADDINGS, CUDNN_TYPE_INT64,
                                   nsp, s.post), "conv post-paddings");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_DILATIONS, CUDNN_TYPE_INT64,
                                   nsp, s.dil), "conv dilations");
    CHECK(cudnnBackendSetAttribute(g->conv, CUDNN_ATTR_CONVOLUTION_FILTER_STRIDES,
                                   CUDNN_TYPE_INT64, nsp, s.stride), "conv strides");
    CHECK(cudnnBackendFinalize(g->conv), "conv finalize");

    const float alpha = 1.0f, beta = 0.0f;
    if (!bwd) {
        CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATION_CONVOLUTION_FORWARD_DESCRIPTOR,
                                           &g->op), "forward op");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_X,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->x), "op x");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_W,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->w), "op w");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_Y,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &conv_y), "op y");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_CONV_DESC,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv), "op conv");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_ALPHA,
                                       CUDNN_TYPE_FLOAT, 1, &alpha), "op alpha");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_FORWARD_BETA,
                                       CUDNN_TYPE_FLOAT, 1, &beta), "op beta");
    } else {
        CHECK(cudnnBackendCreateDescriptor(
                  CUDNN_BACKEND_OPERATION_CONVOLUTION_BACKWARD_DATA_DESCRIPTOR, &g->op),
              "backward-data op");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DX,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->x), "op dx");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_W,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->w), "op w");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_DY,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->y), "op dy");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_CONV_DESC,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g->conv), "op conv");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_ALPHA,
                                       CUDNN_TYPE_FLOAT, 1, &alpha), "op alpha");
        CHECK(cudnnBackendSetAttribute(g->op, CUDNN_ATTR_OPERATION_CONVOLUTION_BWD_DATA_BETA,
                                       CUDNN_TYPE_FLOAT, 1, &beta), "op beta");
    }
    CHECK(cudnnBackendFinalize(g->op), "op finalize");
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_OPERATIONGRAPH_DESCRIPTOR, &g->graph),
          "graph");
    cudnnBackendDescriptor_t ops[1 + EP_MAX] = {g->op};
    for (int i = 0; i < g->n_ep; i++)
        ops[1 + i] = g->pw_op[i];
    CHECK(cudnnBackendSetAttribute(g->graph, CUDNN_ATTR_OPERATIONGRAPH_OPS,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1 + g->n_ep, ops), "graph ops");
    CHECK(cudnnBackendSetAttribute(g->graph, CUDNN_ATTR_OPERATIONGRAPH_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                   &handle), "graph handle");
    CHECK(cudnnBackendFinalize(g->graph), "graph finalize");
done:
    if (st != CONVFIND_OK)
        graph_free(g);
    return st;
}

/* ------------------------------------------------------------------------- */
/* Heuristics                                                                 */
/* ------------------------------------------------------------------------- */

static bool has_note(const cudnnBackendNumericalNote_t *notes, int64_t n,
                     cudnnBackendNumericalNote_t note)
{
    for (int64_t i = 0; i < n; i++)
        if (notes[i] == note)
            return true;
    return false;
}

/* Engines that compile kernels at run time (NVRTC) cost tens to hundreds of
 * milliseconds of compilation each in Find.  On the H200 they were the only fast
 * depthwise engines (about 18x faster than the best precompiled one at N=32,
 * docs/cuda.md) and won nothing else, so they are offered for grouped convolutions;
 * the context's CONVFIND_CUDNN_RUNTIME_COMPILED (limits->offer_compiled) =1 offers them
 * everywhere, =0 nowhere. */
static bool runtime_compiled_allowed(const cf_problem *p, cf_runtime_compiled offer)
{
    if (offer == CF_RUNTIME_COMPILED_NEVER)
        return false;
    return offer == CF_RUNTIME_COMPILED_ALWAYS || p->group > 1;
}

/* Whether read_config() admits a configuration, and if not, why. */
typedef enum admission {
    ADMITTED,
    NOT_OFFERED,       /* runtime-compiled where those are not offered, too many knobs */
    EXCLUDED_BY_MATH,  /* its numerics are not what the math mode or the form asks */
} admission;

/* Reads engine id and knobs of one heuristic result for engine problem p, as a
 * configuration of `form` (its layout, padded and split), and whether it is admitted:
 * not excluded by strict math or as runtime-compiled (unless form->runtime_compiled
 * admits them), and for the split form a tensor core engine that reduces in f32 (the
 * split exists to run on tensor cores; graph.h). */
static convfind_status read_config(cudnnBackendDescriptor_t cfg, const cf_problem *p,
                                   const cf_cudnn_config *form, cf_cudnn_config *c,
                                   admission *verdict)
{
    convfind_status st = CONVFIND_OK;
    cudnnBackendDescriptor_t engine = NULL, knobs[CF_CUDNN_MAX_KNOBS] = {0};
    int64_t n = 0, n_notes = 0;
    cudnnBackendNumericalNote_t notes[CUDNN_NUMERICAL_NOTE_TYPE_COUNT + 8];
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT + 8];
    int64_t n_behavior = 0;
    memset(c, 0, sizeof *c);
    c->layout = form->layout;
    c->padded = form->padded;
    c->split = form->split;
    c->fused = form->fused;
    *verdict = NOT_OFFERED;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine), "engine");
    CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE, CUDNN_TYPE_BACKEND_DESCRIPTOR,
                                   1, &n, &engine), "config engine");
    CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1, &n,
                                   &c->engine), "engine index");
    CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_NUMERICAL_NOTE,
                                   CUDNN_TYPE_NUMERICAL_NOTE,
                                   (int64_t)(sizeof notes / sizeof notes[0]), &n_notes, notes),
          "engine notes");
    for (int i = 0; i < CF_CUDNN_MAX_KNOBS; i++)
        CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &knobs[i]),
              "knob choice");
    CHECK(cudnnBackendGetAttribute(cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, CF_CUDNN_MAX_KNOBS, &n, knobs),
          "config knobs");
    if (n > CF_CUDNN_MAX_KNOBS) /* more knobs than a name can carry */
        goto done;
    c->n_knobs = (int)n;
    for (int i = 0; i < c->n_knobs; i++) {
        cudnnBackendKnobType_t type;
        int64_t got;
        CHECK(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                       CUDNN_TYPE_KNOB_TYPE, 1, &got, &type), "knob type");
        CHECK(cudnnBackendGetAttribute(knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                       CUDNN_TYPE_INT64, 1, &got, &c->knob_value[i]), "knob value");
        c->knob_type[i] = (int)type;
    }
    CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                   CUDNN_TYPE_BEHAVIOR_NOTE,
                                   (int64_t)(sizeof behavior / sizeof behavior[0]), &n_behavior,
                                   behavior), "engine behavior notes");
    for (int64_t i = 0; i < n_behavior; i++)
        c->runtime_compiled |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    if (c->runtime_compiled && !form->runtime_compiled)
        goto done;
    bool numerics_fit;
    if (form->split)
        numerics_fit = has_note(notes, n_notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE) &&
                       !has_note(notes, n_notes, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION);
    else
        numerics_fit =
            !(p->dtype == CONVFIND_DTYPE_F32 && p->math_mode != CONVFIND_MATH_ALLOW_TF32 &&
              (has_note(notes, n_notes, CUDNN_NUMERICAL_NOTE_TENSOR_CORE) ||
               has_note(notes, n_notes, CUDNN_NUMERICAL_NOTE_DOWN_CONVERT_INPUTS) ||
               has_note(notes, n_notes, CUDNN_NUMERICAL_NOTE_REDUCED_PRECISION_REDUCTION)));
    *verdict = numerics_fit ? ADMITTED : EXCLUDED_BY_MATH;
done:
    for (int i = 0; i < CF_CUDNN_MAX_KNOBS; i++)
        destroy(&knobs[i]);
    destroy(&engine);
    return st;
}

static bool same_config(const cf_cudnn_config *a, const cf_cudnn_config *b)
{
    if (a->layout != b->layout || a->padded != b->padded || a->split != b->split ||
        a->fused != b->fused || a->engine != b->engine ||
        a->n_knobs != b->n_knobs)
        return false;
    for (int i = 0; i < a->n_knobs; i++)
        if (a->knob_type[i] != b->knob_type[i] || a->knob_value[i] != b->knob_value[i])
            return false;
    return true;
}

/* Appends the admitted, new results of one heuristic mode and returns how many of its
 * results the math mode or the form excluded.  A mode cuDNN cannot answer for this
 * graph adds nothing (the others may). */
static int add_mode(cudnnBackendDescriptor_t g, cudnnBackendHeurMode_t mode, const cf_problem *p,
                    const cf_cudnn_config *form, cf_cudnn_config *out, int cap, int *count)
{
    int excluded = 0;
    cudnnBackendDescriptor_t heur = NULL, *cfgs = NULL;
    int64_t n = 0;
    if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINEHEUR_DESCRIPTOR, &heur) != 0 ||
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_OPERATION_GRAPH,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g) != 0 ||
        cudnnBackendSetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_MODE, CUDNN_TYPE_HEUR_MODE, 1,
                                 &mode) != 0 ||
        cudnnBackendFinalize(heur) != 0 ||
        cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                 CUDNN_TYPE_BACKEND_DESCRIPTOR, 0, &n, NULL) != 0 ||
        n <= 0 || !(cfgs = calloc((size_t)n, sizeof *cfgs)))
        goto done;
    int64_t made = 0;
    while (made < n && cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR,
                                                    &cfgs[made]) == 0)
        made++;
    int64_t got = 0;
    if (made < n || cudnnBackendGetAttribute(heur, CUDNN_ATTR_ENGINEHEUR_RESULTS,
                                             CUDNN_TYPE_BACKEND_DESCRIPTOR, n, &got, cfgs) != 0)
        got = 0;
    for (int64_t i = 0; i < got && *count < cap; i++) {
        cf_cudnn_config c;
        admission verdict;
        bool dup = false;
        if (read_config(cfgs[i], p, form, &c, &verdict) != CONVFIND_OK)
            continue;
        excluded += verdict == EXCLUDED_BY_MATH;
        if (verdict != ADMITTED)
            continue;
        for (int j = 0; j < *count && !dup; j++)
            dup = same_config(&out[j], &c);
        char name[CF_ALGO_NAME_MAX];
        if (!dup && cf_cudnn_config_name(&c, name, sizeof name))
            out[(*count)++] = c;
    }
    for (int64_t i = 0; i < n && cfgs; i++)
        destroy(&cfgs[i]);
done:
    free(cfgs);
    destroy(&heur);
    cf_clear_error();
    return excluded;
}

/* Appends engines of the graph's global list that the heuristics did not name and that
 * are not hopeless (limits), with their default knobs, from the first UNLISTED_SCAN of
 * that list.  The heuristic modes rank only the engines they model: under strict f32
 * math on the H200 they never offered the engine behind the legacy API's non-fused
 * Winograd algorithm, which runs ResNet-50's 3x3 layers 2.5x faster than anything they
 * list (docs/cuda.md).  The engines that won
 * that way all had global indices below 8 (the legacy algorithms' engines); the list has
 * about a hundred, and asking each costs a finalization (about 1 ms), which was most of
 * Find's time for strict f32.  An engine that cannot run the graph usually refuses at
 * finalize and is skipped here, but not always: on the H200 engine 50 finalized for an
 * f16 problem and computed wrong results, hence only validating Finds ask for these. */
#define UNLISTED_SCAN 16

static bool hopeless(const cf_cudnn_limits *limits, int64_t engine)
{
    return engine >= 0 && engine < 256 && (limits->hopeless[engine / 64] >> (engine % 64) & 1);
}

static void add_global_engines(cudnnBackendDescriptor_t g, const cf_problem *p,
                               const cf_cudnn_config *form, const cf_cudnn_limits *limits,
                               cf_cudnn_config *out, int cap, int *count)
{
    int64_t total = 0, got = 0;
    if (cudnnBackendGetAttribute(g, CUDNN_ATTR_OPERATIONGRAPH_ENGINE_GLOBAL_COUNT,
                                 CUDNN_TYPE_INT64, 1, &got, &total) != 0)
        total = 0;
    for (int64_t id = 0; id < total && id < UNLISTED_SCAN && *count < cap; id++) {
        bool named = hopeless(limits, id);
        for (int j = 0; j < *count && !named; j++)
            named = out[j].engine == id;
        if (named)
            continue;
        cudnnBackendDescriptor_t engine = NULL, cfg = NULL;
        cf_cudnn_config c;
        admission verdict = NOT_OFFERED;
        char name[CF_ALGO_NAME_MAX];
        if (cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine) == 0 &&
            cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g) == 0 &&
            cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                     &id) == 0 &&
            cudnnBackendFinalize(engine) == 0 &&
            cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &cfg) == 0 &&
            cudnnBackendSetAttribute(cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                     CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &engine) == 0 &&
            cudnnBackendFinalize(cfg) == 0 &&
            read_config(cfg, p, form, &c, &verdict) == CONVFIND_OK && verdict == ADMITTED &&
            cf_cudnn_config_name(&c, name, sizeof name))
            out[(*count)++] = c;
        destroy(&cfg);
        destroy(&engine);
    }
    cf_clear_error();
}

/* Keeps the first `limits->listed` configurations of the heuristics' order, at most
 * `limits->per_engine` of any one engine: the heuristics rank what they list, and on
 * the H200 the fastest configuration of ResNet-50's and MobileNetV2's layers was among
 * the first few of its engine, where the tail of the lists (the fallback mode's generic
 * engines) never won and cost Find a plan finalization each.
 * A runtime-compiled configuration is kept only as the first of the list, where the
 * heuristics expect it to be the fastest: its compilation (100-300 ms on the H200, ten
 * thousand runs of a MobileNetV2 layer at N=1) costs more than the rest of the layer's
 * Find.  Placed lower it was never chosen there: 0 of 45 (MobileNetV2's depthwise
 * layers of NCHW callers in strict f32, TF32 and split, N=32 and N=1), whose compilation
 * took 1.1-1.9 s of each network's Finds; placed first, 134 of 155 were chosen
 * (bench/results/gpu_20261204/run2). */
static int prune_listed(cf_cudnn_config *c, int n, const cf_cudnn_limits *limits)
{
    int k = 0;
    for (int i = 0; i < n && k < limits->listed; i++) {
        int same = 0;
        for (int j = 0; j < k; j++)
            same += c[j].engine == c[i].engine;
        const bool compiled_ok = limits->runtime_compiled && i == 0;
        if (same >= limits->per_engine || (c[i].runtime_compiled && !compiled_ok))
            continue;
        c[k++] = c[i];
    }
    return k;
}

convfind_status cf_cudnn_enumerate(cudnnHandle_t handle, const cf_problem *p,
                                   convfind_layout layout, cf_cudnn_kind kind,
                                   const cf_cudnn_limits *limits, cf_cudnn_config *out, int cap,
                                   int *count)
{
    *count = 0;
    const bool split = kind == CF_CUDNN_SPLIT, fused = kind == CF_CUDNN_FUSED;
    if ((split && !cf_cudnn_splittable(p)) ||
        (fused && (!cf_cudnn_fusable(p) || layout != p->layout)))
        return CONVFIND_OK;
    const bool native = cf_cudnn_expressible(p);
    /* Every configuration the heuristics list, before pruning: the unlisted engines are
     * those none of these names. */
    enum { ALL = 256 };
    cf_cudnn_config *all = malloc(ALL * sizeof *all);
    if (!all)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %d configurations", ALL);
    /* Native first; padded only where native pads are impossible or no engine took the
     * asymmetric ones (symmetric pads are what every engine takes). */
    for (int padded = native ? 0 : 1; padded < 2 && *count == 0; padded++) {
        if (padded && (fused || (native && symmetric_pads(p))))
            break;
        const cf_cudnn_config form = {
            .layout = layout, .padded = padded, .split = split, .fused = fused,
            .runtime_compiled = runtime_compiled_allowed(p, limits->offer_compiled)};
        cf_problem q;
        cf_cudnn_engine_problem(p, &form, &q);
        graph g;
        convfind_status st = graph_build(handle, &q, layout, fused, &g);
        if (st != CONVFIND_OK) {
            free(all);
            return st;
        }
        /* Mode A ranks the engines for the problem as cuDNN models it: on the H200 mode
         * B added one winner in 700 Finds at 10 to 40 ms per Find, and the fallback
         * mode (about 9 ms per query) and the unlisted engines won only where the math
         * mode had excluded some of mode A's choices and it admitted fewer than the
         * list keeps: strict f32, whose tensor-core engines mode A ranks first
         * (bench/results/gpu_20261202/run5).  A list that is short for want of engines
         * (depthwise convolutions) gained only generic engines 50 to 1000 times slower
         * than its winner that way.  A widened list leaves out the engines that were
         * hopeless for its pattern (limits), mode A's among them: in these lists mode A
         * ranks what the math mode left of its choices, and on the H200 it ranked
         * engine 0 there in about half of ResNet-50's strict f32 Finds. */
        int listed = 0;
        const int excluded = add_mode(g.graph, CUDNN_HEUR_MODE_A, &q, &form, all, ALL, &listed);
        const bool widen = limits->widen && listed < limits->listed && excluded > 0;
        if (widen) {
            add_mode(g.graph, CUDNN_HEUR_MODE_FALLBACK, &q, &form, all, ALL, &listed);
            int kept = 0;
            for (int i = 0; i < listed; i++)
                if (!hopeless(limits, all[i].engine))
                    all[kept++] = all[i];
            listed = kept;
        }
        const int named = listed;
        if (widen && limits->unlisted > 0)
            add_global_engines(g.graph, &q, &form, limits, all,
                               named + limits->unlisted < ALL ? named + limits->unlisted : ALL,
                               &listed);
        const int kept = prune_listed(all, named, limits);
        for (int i = 0; i < kept && *count < cap; i++)
            out[(*count)++] = all[i];
        for (int i = named; i < listed && *count < cap; i++)
            out[(*count)++] = all[i];
        graph_free(&g);
    }
    free(all);
    return CONVFIND_OK;
}

/* The most values of one knob a neighbour search tries: knobs with longer ranges are
 * sizes or counts, not choices among a few kernels, and trying each is not worth its
 * Find time. */
#define KNOB_RANGE_MAX 16

/* `base` with knob `type` set to `value` (added when base has no such knob). */
static bool with_knob(const cf_cudnn_config *base, int type, int64_t value, cf_cudnn_config *c)
{
    *c = *base;
    for (int i = 0; i < c->n_knobs; i++)
        if (c->knob_type[i] == type) {
            c->knob_value[i] = value;
            return true;
        }
    if (c->n_knobs == CF_CUDNN_MAX_KNOBS)
        return false;
    c->knob_type[c->n_knobs] = type;
    c->knob_value[c->n_knobs++] = value;
    return true;
}

int cf_cudnn_knob_neighbors(cudnnHandle_t handle, const cf_problem *p, const cf_cudnn_config *base,
                            cf_cudnn_config *out, int cap)
{
    convfind_status st = CONVFIND_OK;
    cudnnBackendDescriptor_t engine = NULL, info[CF_CUDNN_MAX_KNOBS] = {0};
    int count = 0;
    cf_problem q;
    cf_cudnn_engine_problem(p, base, &q);
    graph g;
    if (graph_build(handle, &q, base->layout, base->fused, &g) != CONVFIND_OK) {
        cf_clear_error();
        return 0;
    }
    int64_t n = 0;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &engine), "engine");
    CHECK(cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &g.graph), "engine graph");
    CHECK(cudnnBackendSetAttribute(engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                   &base->engine), "engine index");
    CHECK(cudnnBackendFinalize(engine), "engine finalize");
    for (int i = 0; i < CF_CUDNN_MAX_KNOBS; i++)
        CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_INFO_DESCRIPTOR, &info[i]),
              "knob info");
    CHECK(cudnnBackendGetAttribute(engine, CUDNN_ATTR_ENGINE_KNOB_INFO,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, CF_CUDNN_MAX_KNOBS, &n, info),
          "engine knobs");
    for (int64_t k = 0; k < n && k < CF_CUDNN_MAX_KNOBS; k++) {
        cudnnBackendKnobType_t type;
        int64_t lo, hi, step, got;
        CHECK(cudnnBackendGetAttribute(info[k], CUDNN_ATTR_KNOB_INFO_TYPE, CUDNN_TYPE_KNOB_TYPE, 1,
                                       &got, &type), "knob info type");
        CHECK(cudnnBackendGetAttribute(info[k], CUDNN_ATTR_KNOB_INFO_MINIMUM_VALUE,
                                       CUDNN_TYPE_INT64, 1, &got, &lo), "knob minimum");
        CHECK(cudnnBackendGetAttribute(info[k], CUDNN_ATTR_KNOB_INFO_MAXIMUM_VALUE,
                                       CUDNN_TYPE_INT64, 1, &got, &hi), "knob maximum");
        CHECK(cudnnBackendGetAttribute(info[k], CUDNN_ATTR_KNOB_INFO_STRIDE, CUDNN_TYPE_INT64, 1,
                                       &got, &step), "knob stride");
        if (step < 1 || hi < lo || (hi - lo) / step + 1 > KNOB_RANGE_MAX)
            continue;
        for (int64_t v = lo; v <= hi && count < cap; v += step) {
            cf_cudnn_config c;
            char name[CF_ALGO_NAME_MAX];
            if (with_knob(base, (int)type, v, &c) && !same_config(&c, base) &&
                cf_cudnn_config_name(&c, name, sizeof name))
                out[count++] = c;
        }
    }
done:
    /* A refusal (st) only ends the search: the neighbours found before it are offered,
     * and a Find without them is still a valid Find. */
    (void)st;
    for (int i = 0; i < CF_CUDNN_MAX_KNOBS; i++)
        destroy(&info[i]);
    destroy(&engine);
    graph_free(&g);
    cf_clear_error();
    return count;
}

/* ------------------------------------------------------------------------- */
/* Plans                                                                      */
/* ------------------------------------------------------------------------- */

struct cf_cudnn_plan {
    graph g;
    cudnnBackendDescriptor_t engine, cfg, plan;
    cudnnBackendDescriptor_t knobs[CF_CUDNN_MAX_KNOBS];
    size_t workspace;
    /* The variant pack of the last execution and its pointers (x, w, y, workspace):
     * making one costs about as much host time as a small layer's kernel, and a plan
     * usually runs on the same buffers again. */
    cudnnBackendDescriptor_t pack;
    void *pack_ptrs[6];
    int capturable; /* -1: not known yet; else whether a capture of it succeeded */
    bool runtime_compiled; /* its engine compiled its kernels when it was finalized */
};

int cf_cudnn_plan_capturable(const cf_cudnn_plan *plan)
{
    return plan->capturable;
}

void cf_cudnn_plan_set_capturable(cf_cudnn_plan *plan, bool capturable)
{
    plan->capturable = capturable;
}

void cf_cudnn_plan_destroy(void *ptr)
{
    cf_cudnn_plan *pl = ptr;
    if (!pl)
        return;
    destroy(&pl->pack);
    destroy(&pl->plan);
    destroy(&pl->cfg);
    for (int i = 0; i < CF_CUDNN_MAX_KNOBS; i++)
        destroy(&pl->knobs[i]);
    destroy(&pl->engine);
    graph_free(&pl->g);
    free(pl);
}

/* A plan holding the operation graph of `c` for `p`, for its execution plan to be made
 * (by finalizing an engine configuration, or from a serialized plan). */
static convfind_status plan_graph(cudnnHandle_t handle, const cf_problem *p,
                                  const cf_cudnn_config *c, cf_cudnn_plan **out)
{
    *out = NULL;
    cf_cudnn_plan *pl = calloc(1, sizeof *pl);
    if (!pl)
        return cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate a cuDNN plan");
    pl->capturable = -1;
    cf_problem q;
    cf_cudnn_engine_problem(p, c, &q);
    convfind_status st = graph_build(handle, &q, c->layout, c->fused, &pl->g);
    if (st != CONVFIND_OK) {
        free(pl);
        return st;
    }
    *out = pl;
    return CONVFIND_OK;
}

/* Ends making `pl`'s execution plan with status `st`: its workspace, or `pl` destroyed. */
static convfind_status plan_finish(cf_cudnn_plan *pl, convfind_status st, cf_cudnn_plan **out)
{
    int64_t ws = 0, got = 0;
    if (st == CONVFIND_OK)
        CHECK(cudnnBackendGetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_WORKSPACE_SIZE,
                                       CUDNN_TYPE_INT64, 1, &got, &ws), "plan workspace");
    pl->workspace = ws > 0 ? (size_t)ws : 0;
done:
    if (st != CONVFIND_OK) {
        cf_cudnn_plan_destroy(pl);
        return st;
    }
    *out = pl;
    return CONVFIND_OK;
}

convfind_status cf_cudnn_plan_create(cudnnHandle_t handle, const cf_problem *p,
                                     const cf_cudnn_config *c, cf_cudnn_plan **out)
{
    *out = NULL;
    if (!c->padded && !cf_cudnn_expressible(p))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED, "cuDNN cannot express this problem's pads");
    if (c->split && !cf_cudnn_splittable(p))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "the split form is for f32 Conv under CONVFIND_MATH_ALLOW_SPLIT_TF32");
    if (c->fused && (!cf_cudnn_fusable(p) || c->layout != p->layout || c->padded || c->split))
        return cf_fail(CONVFIND_ERR_UNSUPPORTED,
                       "a fused epilogue is for a Conv with one, in the caller's layout");
    cf_cudnn_plan *pl;
    convfind_status st = plan_graph(handle, p, c, &pl);
    if (st != CONVFIND_OK)
        return st;
    cudnnBackendBehaviorNote_t behavior[CUDNN_BEHAVIOR_NOTE_TYPE_COUNT + 8];
    int64_t n_behavior = 0;
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINE_DESCRIPTOR, &pl->engine), "engine");
    CHECK(cudnnBackendSetAttribute(pl->engine, CUDNN_ATTR_ENGINE_OPERATION_GRAPH,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pl->g.graph), "engine graph");
    CHECK(cudnnBackendSetAttribute(pl->engine, CUDNN_ATTR_ENGINE_GLOBAL_INDEX, CUDNN_TYPE_INT64, 1,
                                   &c->engine), "engine index");
    CHECK(cudnnBackendFinalize(pl->engine), "engine finalize");
    CHECK(cudnnBackendGetAttribute(pl->engine, CUDNN_ATTR_ENGINE_BEHAVIOR_NOTE,
                                   CUDNN_TYPE_BEHAVIOR_NOTE,
                                   (int64_t)(sizeof behavior / sizeof behavior[0]), &n_behavior,
                                   behavior), "engine behavior notes");
    for (int64_t i = 0; i < n_behavior; i++)
        pl->runtime_compiled |= behavior[i] == CUDNN_BEHAVIOR_NOTE_RUNTIME_COMPILATION;
    for (int i = 0; i < c->n_knobs; i++) {
        cudnnBackendKnobType_t type = (cudnnBackendKnobType_t)c->knob_type[i];
        CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_KNOB_CHOICE_DESCRIPTOR, &pl->knobs[i]),
              "knob");
        CHECK(cudnnBackendSetAttribute(pl->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_TYPE,
                                       CUDNN_TYPE_KNOB_TYPE, 1, &type), "knob type");
        CHECK(cudnnBackendSetAttribute(pl->knobs[i], CUDNN_ATTR_KNOB_CHOICE_KNOB_VALUE,
                                       CUDNN_TYPE_INT64, 1, &c->knob_value[i]), "knob value");
        CHECK(cudnnBackendFinalize(pl->knobs[i]), "knob finalize");
    }
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_ENGINECFG_DESCRIPTOR, &pl->cfg), "config");
    CHECK(cudnnBackendSetAttribute(pl->cfg, CUDNN_ATTR_ENGINECFG_ENGINE,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pl->engine), "config engine");
    if (c->n_knobs)
        CHECK(cudnnBackendSetAttribute(pl->cfg, CUDNN_ATTR_ENGINECFG_KNOB_CHOICES,
                                       CUDNN_TYPE_BACKEND_DESCRIPTOR, c->n_knobs, pl->knobs),
              "config knobs");
    CHECK(cudnnBackendFinalize(pl->cfg), "config finalize");
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &pl->plan), "plan");
    CHECK(cudnnBackendSetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                   &handle), "plan handle");
    CHECK(cudnnBackendSetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_ENGINE_CONFIG,
                                   CUDNN_TYPE_BACKEND_DESCRIPTOR, 1, &pl->cfg), "plan config");
    CHECK(cudnnBackendFinalize(pl->plan), "plan finalize");
done:
    return plan_finish(pl, st, out);
}

convfind_status cf_cudnn_plan_load(cudnnHandle_t handle, const cf_problem *p,
                                   const cf_cudnn_config *c, const void *blob, size_t size,
                                   cf_cudnn_plan **out)
{
    *out = NULL;
    cf_cudnn_plan *pl;
    convfind_status st = plan_graph(handle, p, c, &pl);
    if (st != CONVFIND_OK)
        return st;
    pl->runtime_compiled = true; /* only such plans are serialized */
    CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_EXECUTION_PLAN_DESCRIPTOR, &pl->plan), "plan");
    CHECK(cudnnBackendSetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_HANDLE, CUDNN_TYPE_HANDLE, 1,
                                   &handle), "plan handle");
    CHECK(cudnnBackendSetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                   CUDNN_TYPE_CHAR, (int64_t)size, blob), "plan from its blob");
    CHECK(cudnnBackendFinalize(pl->plan), "plan finalize from its blob");
done:
    return plan_finish(pl, st, out);
}

convfind_status cf_cudnn_plan_serialize(const cf_cudnn_plan *pl, void **blob, size_t *size)
{
    *blob = NULL;
    *size = 0;
    if (!pl->runtime_compiled)
        return CONVFIND_OK;
    convfind_status st = CONVFIND_OK;
    int64_t n = 0;
    char *buf = NULL;
    CHECK(cudnnBackendGetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                   CUDNN_TYPE_CHAR, 0, &n, NULL), "plan serialized size");
    if (n <= 0 || !(buf = malloc((size_t)n)))
        return n <= 0 ? CONVFIND_OK
                      : cf_fail(CONVFIND_ERR_OUT_OF_MEMORY, "cannot allocate %lld bytes for a "
                                "serialized plan", (long long)n);
    CHECK(cudnnBackendGetAttribute(pl->plan, CUDNN_ATTR_EXECUTION_PLAN_JSON_REPRESENTATION,
                                   CUDNN_TYPE_CHAR, n, &n, buf), "plan serialization");
    *blob = buf;
    *size = (size_t)n;
    buf = NULL;
done:
    free(buf);
    return st;
}

size_t cf_cudnn_plan_workspace(const cf_cudnn_plan *plan)
{
    return plan->workspace;
}

convfind_status cf_cudnn_plan_execute(cudnnHandle_t handle, cf_cudnn_plan *plan, const void *x,
                                      const void *w, void *y, const void *b, const void *z,
                                      void *ws)
{
    convfind_status st = CONVFIND_OK;
    void *ptrs[6] = {(void *)x, (void *)w, y, ws, (void *)b, (void *)z};
    if (!plan->pack || memcmp(ptrs, plan->pack_ptrs, sizeof ptrs) != 0) {
        destroy(&plan->pack);
        int64_t uids[5] = {UID_X, UID_W, UID_Y};
        void *data[5] = {ptrs[0], ptrs[1], ptrs[2]};
        int64_t n = 3;
        if (plan->g.b) {
            uids[n] = UID_B;
            data[n++] = (void *)b;
        }
        if (plan->g.z) {
            uids[n] = UID_Z;
            data[n++] = (void *)z;
        }
        CHECK(cudnnBackendCreateDescriptor(CUDNN_BACKEND_VARIANT_PACK_DESCRIPTOR, &plan->pack),
              "variant pack");
        CHECK(cudnnBackendSetAttribute(plan->pack, CUDNN_ATTR_VARIANT_PACK_UNIQUE_IDS,
                                       CUDNN_TYPE_INT64, n, uids), "pack uids");
        CHECK(cudnnBackendSetAttribute(plan->pack, CUDNN_ATTR_VARIANT_PACK_DATA_POINTERS,
                                       CUDNN_TYPE_VOID_PTR, n, data), "pack pointers");
        CHECK(cudnnBackendSetAttribute(plan->pack, CUDNN_ATTR_VARIANT_PACK_WORKSPACE,
                                       CUDNN_TYPE_VOID_PTR, 1, &ws), "pack workspace");
        CHECK(cudnnBackendFinalize(plan->pack), "pack finalize");
        memcpy(plan->pack_ptrs, ptrs, sizeof ptrs);
    }
    CHECK(cudnnBackendExecute(handle, plan->plan, plan->pack), "execute");
done:
    if (st != CONVFIND_OK)
        destroy(&plan->pack);
    return st;
}
