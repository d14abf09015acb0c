/*
 * ref_conv.c - "cpu.reference": the direct, obviously-correct Conv and ConvTranspose.
 *
 * This algorithm defines correctness for every other one and is the always-valid
 * fallback, so it handles every problem convfind can describe in f32 and favours
 * clarity over speed.  Each output value is a gather: for every kernel tap, find the
 * input position that feeds it (or none), multiply, and accumulate in double so that
 * the result carries essentially no rounding error of its own.
 *
 * Conv and ConvTranspose share the loop; they differ only in which input position a
 * (output position, kernel tap) pair reads and in how W is laid out:
 *   Conv:          i = o * stride - pad_begin + k * dil                    W: M x C/g x k
 *   ConvTranspose: o = i * stride - pad_begin + k * dil, so
 *                  i = (o + pad_begin - k * dil) / stride when that divides W: C x M/g x k
 * Negative ConvTranspose pads need no special case: they only move which output
 * positions receive contributions, and positions receiving none hold just the epilogue.
 *
 * Work is split over (image, output channel) pairs; each pair writes a disjoint set of
 * outputs, so the result does not depend on the thread count.
 */
#include <stdint.h>

#include "algo/algo.h"
#include "cpu/epilogue.h"

/* Element strides of a tensor with `ch` channels and spatial dims `sp`, stored in
 * `layout`: of the batch index, the channel index and each spatial axis. */
typedef struct ref_strides {
    int64_t n, c, sp[CF_SP];
} ref_strides;

static ref_strides ref_strides_of(convfind_layout layout, int64_t ch, const int64_t sp[CF_SP])
{
    ref_strides s;
    int64_t inner = 1; /* elements of one spatial position's trailing axes */
    int64_t per_pixel = layout == CONVFIND_LAYOUT_NHWC ? ch : 1;
    for (int a = CF_SP - 1; a >= 0; a--) {
        s.sp[a] = inner * per_pixel;
        inner *= sp[a];
    }
    s.c = layout == CONVFIND_LAYOUT_NHWC ? 1 : inner;
    s.n = inner * ch;
    return s;
}

/* The input position along axis `a` that kernel tap `k` reads for output position `o`,
 * or -1 when it reads padding (Conv) or no input feeds it (ConvTranspose).  Nothing here
 * overflows for any problem validation accepts, however large its attributes: a Conv
 * window lies inside the padded input (o * stride + k * dil < in + pads), and a
 * ConvTranspose's o + pad_begin is below its unpadded output. */
static int64_t ref_source(const cf_problem *p, int a, int64_t o, int64_t k)
{
    if (p->op == CONVFIND_OP_CONV) {
        int64_t i = o * p->stride[a] - p->pad_begin[a] + k * p->dil[a];
        return i >= 0 && i < p->in[a] ? i : -1;
    }
    int64_t t = o + p->pad_begin[a] - k * p->dil[a];
    if (t < 0 || t % p->stride[a] != 0)
        return -1;
    t /= p->stride[a];
    return t < p->in[a] ? t : -1;
}

typedef struct ref_job {
    const cf_problem *p;
    const cf_exec_args *a;
    ref_strides xs, ys;
} ref_job;

/* Computes every output of image `index / m`, channel `index % m`. */
static void ref_task(void *arg, size_t index)
{
    const ref_job *job = arg;
    const cf_problem *p = job->p;
    const float *x = job->a->x;
    const float *w = job->a->w;
    const float *b = job->a->b;
    const float *z = job->a->z;
    float *y = job->a->y;

    int64_t n = (int64_t)index / p->m;
    int64_t m = (int64_t)index % p->m;
    int64_t cg = cf_cin_per_group(p);
    int64_t mg = cf_cout_per_group(p);
    int64_t g = m / mg;

    /* W offset of (this output channel, first input channel of the group) and the step
     * from one input channel to the next; kernel taps are contiguous after that. */
    int64_t w_base, w_step;
    if (p->op == CONVFIND_OP_CONV) {
        w_base = m * cg * p->k_sp;
        w_step = p->k_sp;
    } else {
        w_base = ((g * cg) * mg + (m - g * mg)) * p->k_sp;
        w_step = mg * p->k_sp;
    }
    const float *xg = x + n * job->xs.n + g * cg * job->xs.c;
    float bias = b ? b[m] : 0.0f;
    int64_t y_base = n * job->ys.n + m * job->ys.c;

    for (int64_t o0 = 0; o0 < p->out[0]; o0++)
    for (int64_t o1 = 0; o1 < p->out[1]; o1++)
    for (int64_t o2 = 0; o2 < p->out[2]; o2++) {
        double acc = 0.0;
        for (int64_t k0 = 0; k0 < p->k[0]; k0++) {
            int64_t i0 = ref_source(p, 0, o0, k0);
            if (i0 < 0)
                continue;
            for (int64_t k1 = 0; k1 < p->k[1]; k1++) {
                int64_t i1 = ref_source(p, 1, o1, k1);
                if (i1 < 0)
                    continue;
                for (int64_t k2 = 0; k2 < p->k[2]; k2++) {
                    int64_t i2 = ref_source(p, 2, o2, k2);
                    if (i2 < 0)
                        continue;
                    const float *xp = xg + i0 * job->xs.sp[0] + i1 * job->xs.sp[1] +
                                      i2 * job->xs.sp[2];
                    const float *wp = w + w_base + (k0 * p->k[1] + k1) * p->k[2] + k2;
                    for (int64_t ci = 0; ci < cg; ci++)
                        acc += (double)xp[ci * job->xs.c] * (double)wp[ci * w_step];
                }
            }
        }
        int64_t yi = y_base + o0 * job->ys.sp[0] + o1 * job->ys.sp[1] + o2 * job->ys.sp[2];
        y[yi] = cf_epilogue_value(p, (float)acc, bias, z ? z[yi] : 0.0f);
    }
}

static bool ref_applicable(const cf_problem *p) { return p->dtype == CONVFIND_DTYPE_F32; }

static convfind_status ref_workspace(const cf_problem *p, size_t *bytes)
{
    (void)p;
    *bytes = 0;
    return CONVFIND_OK;
}

static convfind_status ref_execute(const cf_problem *p, const void *state, const cf_exec_args *a)
{
    (void)state;
    ref_job job = {
        .p = p,
        .a = a,
        .xs = ref_strides_of(p->layout, p->c, p->in),
        .ys = ref_strides_of(p->layout, p->m, p->out),
    };
    cf_parallel_for(a->pool, (size_t)(p->n * p->m), ref_task, &job);
    return CONVFIND_OK;
}

const cf_algo cf_algo_cpu_reference = {
    .name = "cpu.reference",
    .family = "reference",
    .applicable = ref_applicable,
    .workspace = ref_workspace,
    .prepare = NULL,
    .release = NULL,
    .execute = ref_execute,
};
